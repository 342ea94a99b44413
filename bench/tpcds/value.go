package tpcds

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Kind is the comparison class of a result value.
type Kind uint8

// Value kinds. Integers and decimals are one exact kind (KNum).
const (
	KNull Kind = iota
	KBool
	KNum
	KFloat
	KString
	KDate // days since 1970-01-01
	KTime // microseconds since 1970-01-01 UTC
)

// Value is one cell of a result in an engine-independent form.
type Value struct {
	Kind Kind
	Bool bool
	Num  *big.Rat
	// Scale is the number of fractional digits a decimal was declared
	// with (0 for integers).
	Scale int32
	F     float64
	S     string
	I     int64 // KDate, KTime
}

// Result is a whole query result.
type Result struct {
	Columns []string
	// Types are the columns' type classes (TypeNumber, ...), nil when the
	// engine does not report them.
	Types []string
	Rows  [][]Value
	// Extended is the reference's answer with the query's outermost LIMIT
	// raised by beyondLimit rows, so that rows of a tie run the LIMIT cuts
	// can be checked against every row the tie could have put there. (Not
	// Rows plus the rows past it: a second run may order ties otherwise.)
	Extended [][]Value
}

// Column type classes. Exact and approximate numbers are one class: in
// Flink's dialect AVG of a DECIMAL is a DECIMAL where DuckDB's is a DOUBLE,
// and values of the two are compared with a tolerance anyway.
const (
	TypeNumber    = "number"
	TypeString    = "string"
	TypeBool      = "bool"
	TypeDate      = "date"
	TypeTimestamp = "timestamp"
	TypeTime      = "time"
	TypeOther     = "other"
)

func intValue(x int64) Value { return Value{Kind: KNum, Num: new(big.Rat).SetInt64(x)} }

func decValueBig(unscaled *big.Int, scale int32) Value {
	r := new(big.Rat).SetInt(unscaled)
	if scale > 0 {
		r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	}
	return Value{Kind: KNum, Num: r, Scale: max(scale, 0)}
}

func timeValue(t time.Time) Value {
	t = t.UTC()
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return Value{Kind: KDate, I: t.Unix() / 86400}
	}
	return Value{Kind: KTime, I: t.UnixMicro()}
}

// String renders a value for reports.
func (v Value) String() string {
	switch v.Kind {
	case KNull:
		return "NULL"
	case KBool:
		return fmt.Sprint(v.Bool)
	case KNum:
		if v.Num.IsInt() {
			return v.Num.Num().String()
		}
		s := v.Num.FloatString(10)
		return strings.TrimRight(strings.TrimRight(s, "0"), ".")
	case KFloat:
		return fmt.Sprint(v.F)
	case KString:
		return fmt.Sprintf("%q", v.S)
	case KDate:
		return time.Unix(v.I*86400, 0).UTC().Format("2006-01-02")
	case KTime:
		return time.UnixMicro(v.I).UTC().Format("2006-01-02 15:04:05.999999")
	}
	return "?"
}

func (v Value) numeric() bool { return v.Kind == KNum || v.Kind == KFloat }

func (v Value) float() float64 {
	if v.Kind == KFloat {
		return v.F
	}
	f, _ := v.Num.Float64()
	return f
}

// FloatTolerance is the relative tolerance for comparisons involving a
// floating-point value.
const FloatTolerance = 1e-9

// equal compares two values: exact numbers exactly, a float against any
// number to FloatTolerance, everything else exactly.
func equal(a, b Value) bool {
	switch {
	case a.Kind == KNum && b.Kind == KNum:
		return a.Num.Cmp(b.Num) == 0
	case a.numeric() && b.numeric():
		x, y := a.float(), b.float()
		if x == y || math.Abs(x-y) <= FloatTolerance*math.Max(math.Abs(x), math.Abs(y)) {
			return true
		}
		// A decimal against a float matches if the float rounds to it:
		// engines differ in the type of avg(decimal) and decimal division
		// (DuckDB: DOUBLE; Spark and Flink: DECIMAL(p+4, s+4)).
		d := a
		if d.Kind != KNum {
			d = b
		}
		if d.Scale == 0 {
			return false
		}
		return math.Abs(x-y) <= 0.5*math.Pow(10, -float64(d.Scale))*(1+FloatTolerance)
	case a.Kind != b.Kind:
		return false
	}
	switch a.Kind {
	case KNull:
		return true
	case KBool:
		return a.Bool == b.Bool
	case KString:
		return a.S == b.S
	}
	return a.I == b.I
}

// compare is a total order used to sort rows into multisets; NULL first.
func compare(a, b Value) int {
	if a.numeric() && b.numeric() {
		if a.Kind == KNum && b.Kind == KNum {
			return a.Num.Cmp(b.Num)
		}
		return cmp.Compare(a.float(), b.float())
	}
	if a.Kind != b.Kind {
		return cmp.Compare(a.Kind, b.Kind)
	}
	switch a.Kind {
	case KBool:
		if a.Bool == b.Bool {
			return 0
		}
		if !a.Bool {
			return -1
		}
		return 1
	case KString:
		return strings.Compare(a.S, b.S)
	case KDate, KTime:
		return cmp.Compare(a.I, b.I)
	}
	return 0
}

func compareRows(a, b []Value) int {
	for i := range a {
		if c := compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func equalRows(a, b []Value, cols []int) bool {
	if cols == nil {
		for i := range a {
			if !equal(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	for _, c := range cols {
		if !equal(a[c], b[c]) {
			return false
		}
	}
	return true
}

func formatRow(r []Value) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = v.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// multisetDiff compares two row sets ignoring order and returns "" when
// they are equal.
func multisetDiff(want, got [][]Value) string {
	w, g := slices.Clone(want), slices.Clone(got)
	slices.SortStableFunc(w, compareRows)
	slices.SortStableFunc(g, compareRows)
	for i := range w {
		if !equalRows(w[i], g[i], nil) {
			return "rows differ (as multisets): " + rowDiff(g[i], w[i])
		}
	}
	return ""
}

// rowDiff names the first differing column of two rows and shows both rows.
func rowDiff(got, want []Value) string {
	for c := range want {
		if !equal(want[c], got[c]) {
			return fmt.Sprintf("column %d: got %s, want %s; rows got %s, want %s", c+1, got[c], want[c], formatRow(got), formatRow(want))
		}
	}
	return fmt.Sprintf("got %s, want %s", formatRow(got), formatRow(want))
}

// Compare checks got against the reference want for query and returns ""
// when they agree, otherwise a short description of the first difference.
func Compare(query string, want, got *Result) string {
	if len(want.Columns) != len(got.Columns) {
		return fmt.Sprintf("%d columns, want %d", len(got.Columns), len(want.Columns))
	}
	if d := compareColumns(want, got); d != "" {
		return d
	}
	if len(want.Rows) != len(got.Rows) {
		return fmt.Sprintf("%d rows, want %d", len(got.Rows), len(want.Rows))
	}
	ob := parseOrderBy(query, want.Columns)
	switch {
	case !ob.present:
		return multisetDiff(want.Rows, got.Rows)
	case ob.keys == nil:
		// Sort keys are expressions: without them ties cannot be told apart,
		// so the order must match exactly.
		for i := range want.Rows {
			if !equalRows(want.Rows[i], got.Rows[i], nil) {
				if d := multisetDiff(want.Rows, got.Rows); d != "" {
					return d
				}
				return fmt.Sprintf("row %d: got %s, want %s (same rows, other order; ORDER BY keys are expressions)",
					i, formatRow(got.Rows[i]), formatRow(want.Rows[i]))
			}
		}
		return ""
	}
	// Ordered: walk runs of rows tied on the sort keys; inside a run any
	// order is right.
	cut := ob.limit > 0 && int64(len(want.Rows)) == ob.limit
	for i := 0; i < len(want.Rows); {
		j := i + 1
		for j < len(want.Rows) && equalRows(want.Rows[i], want.Rows[j], ob.keys) {
			j++
		}
		for k := i; k < j; k++ {
			if !equalRows(want.Rows[i], got.Rows[k], ob.keys) {
				return fmt.Sprintf("row %d (order or values): %s", k, rowDiff(got.Rows[k], want.Rows[k]))
			}
		}
		if cut && j == len(want.Rows) {
			// A run cut by LIMIT may hold any of the tied rows, including
			// ones the reference cut: they must come from that tie run.
			if d := cutRunDiff(want, got.Rows[i:j], i, ob.keys); d != "" {
				return fmt.Sprintf("rows %d..%d (cut by LIMIT %d): %s", i, j-1, ob.limit, d)
			}
		} else if d := multisetDiff(want.Rows[i:j], got.Rows[i:j]); d != "" {
			return fmt.Sprintf("rows %d..%d: %s", i, j-1, d)
		}
		i = j
	}
	return ""
}

// compareColumns checks the names the query gave its columns and the type
// classes. A reference name that is not a plain identifier is an
// expression's text, which each engine spells its own way, so it is not
// compared.
func compareColumns(want, got *Result) string {
	for c, name := range want.Columns {
		if plainName.MatchString(name) && !strings.EqualFold(name, got.Columns[c]) {
			return fmt.Sprintf("column %d is named %q, want %q", c+1, got.Columns[c], name)
		}
	}
	if want.Types == nil || got.Types == nil {
		return ""
	}
	for c := range want.Types {
		if want.Types[c] == TypeNumber && allNull(want.Rows, c) {
			// DuckDB reports an expression it folded to an untyped NULL
			// (NULL || s) as INTEGER: the class says nothing then.
			continue
		}
		if w, g := want.Types[c], got.Types[c]; w != g && w != TypeOther && g != TypeOther {
			return fmt.Sprintf("column %d (%s) is a %s, want a %s", c+1, want.Columns[c], g, w)
		}
	}
	return ""
}

func allNull(rows [][]Value, c int) bool {
	for _, r := range rows {
		if r[c].Kind != KNull {
			return false
		}
	}
	return true
}

var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// cutRunDiff checks the last tie run of got (starting at row start) against
// every reference row tied with it in want.Extended, or in want.Rows when
// the reference was not fetched again. It returns "" when got's rows are a
// sub-multiset of them.
func cutRunDiff(want *Result, got [][]Value, start int, keys []int) string {
	first, all := want.Rows[start], want.Extended
	if all == nil {
		all = want.Rows
	}
	var tied [][]Value
	for _, r := range all {
		if equalRows(first, r, keys) {
			tied = append(tied, r)
		}
	}
	if n := len(all); n-len(want.Rows) >= beyondLimit && equalRows(first, all[n-1], keys) {
		return fmt.Sprintf("the tie run goes on past the %d rows fetched beyond the limit: cannot check", beyondLimit)
	}
	return subMultisetDiff(tied, got)
}

// subMultisetDiff returns "" when every row of got matches a distinct row
// of pool.
func subMultisetDiff(pool, got [][]Value) string {
	p, g := slices.Clone(pool), slices.Clone(got)
	slices.SortStableFunc(p, compareRows)
	slices.SortStableFunc(g, compareRows)
	i := 0
	for _, r := range g {
		for i < len(p) && compareRows(p[i], r) < 0 && !equalRows(p[i], r, nil) {
			i++
		}
		if i == len(p) || !equalRows(p[i], r, nil) {
			return fmt.Sprintf("row %s is not among the %d rows tied with the reference's last", formatRow(r), len(pool))
		}
		i++
	}
	return ""
}
