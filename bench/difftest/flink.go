package difftest

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/flink"
	"github.com/flightd/flightd/plan"
)

// LoadFlink writes each table's rows to a CSV file under dir and creates
// the tables in Flink over them (filesystem connector): Flink reads the
// same data as files.
func LoadFlink(oracle *flink.Oracle, dir string, tables []*Table) error {
	for _, t := range tables {
		path := filepath.Join(dir, t.Name+".csv")
		if err := writeCSV(path, t.Rows); err != nil {
			return err
		}
		var cols []string
		for _, c := range Columns {
			cols = append(cols, c.Name+" "+c.SQL)
		}
		if a, err := oracle.Run("DROP TABLE IF EXISTS " + t.Name); err != nil || a.Err != "" {
			return fmt.Errorf("flink: drop %s: %v%s", t.Name, err, a.Err)
		}
		ddl := fmt.Sprintf("CREATE TABLE %s (%s) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv', 'csv.null-literal' = '\\N')",
			t.Name, strings.Join(cols, ", "), path)
		a, err := oracle.Run(ddl)
		if err != nil {
			return err
		}
		if a.Err != "" {
			return fmt.Errorf("flink: create %s: %s", t.Name, a.Err)
		}
	}
	return nil
}

// writeCSV writes rows of SQL literals as CSV values: NULL as \N, strings
// unquoted from SQL and quoted for CSV, dates as yyyy-mm-dd.
func writeCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	for _, row := range rows {
		rec := make([]string, len(row))
		for i, lit := range row {
			switch {
			case lit == "NULL":
				rec[i] = `\N`
			case strings.HasPrefix(lit, "'"):
				rec[i] = strings.ReplaceAll(lit[1:len(lit)-1], "''", "'")
			case strings.HasPrefix(lit, "DATE '"):
				rec[i] = lit[len("DATE '") : len(lit)-1]
			default:
				rec[i] = lit
			}
		}
		if err := w.Write(rec); err != nil {
			f.Close()
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// flinkResult converts Flink's answer into a comparable result, by the
// columns' Flink types; names are flightd's (names are not under test).
func flinkResult(a flink.Answer, names []string) (*tpcds.Result, error) {
	res := &tpcds.Result{Columns: names}
	if len(names) != len(a.Types) {
		res.Columns = make([]string, len(a.Types))
		for i := range res.Columns {
			res.Columns[i] = fmt.Sprintf("c%d", i)
		}
	}
	for _, t := range a.Types {
		res.Types = append(res.Types, flinkTypeClass(t))
	}
	for _, r := range a.Rows {
		row := make([]tpcds.Value, len(r))
		for c, v := range r {
			var err error
			if row[c], err = flinkValue(v, a.Types[c]); err != nil {
				return nil, fmt.Errorf("column %d (%s): %w", c+1, a.Types[c], err)
			}
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

var decimalType = regexp.MustCompile(`^DECIMAL\((\d+), (\d+)\)`)

func flinkTypeClass(t string) string {
	switch base := strings.Fields(t)[0]; {
	case strings.HasPrefix(base, "TINYINT"), strings.HasPrefix(base, "SMALLINT"), strings.HasPrefix(base, "INT"),
		strings.HasPrefix(base, "BIGINT"), strings.HasPrefix(base, "DECIMAL"), strings.HasPrefix(base, "DOUBLE"), strings.HasPrefix(base, "FLOAT"):
		return tpcds.TypeNumber
	case strings.HasPrefix(base, "CHAR"), strings.HasPrefix(base, "VARCHAR"), base == "STRING":
		return tpcds.TypeString
	case base == "BOOLEAN":
		return tpcds.TypeBool
	case base == "DATE":
		return tpcds.TypeDate
	}
	return tpcds.TypeOther
}

// flinkValue reads one value Flink wrote (Java's String.valueOf) as its
// type says.
func flinkValue(v, typ string) (tpcds.Value, error) {
	if v == flink.Null {
		return tpcds.Value{Kind: tpcds.KNull}, nil
	}
	switch flinkTypeClass(typ) {
	case tpcds.TypeNumber:
		if strings.HasPrefix(typ, "DOUBLE") || strings.HasPrefix(typ, "FLOAT") {
			f, err := strconv.ParseFloat(v, 64)
			return tpcds.Value{Kind: tpcds.KFloat, F: f}, err
		}
		r, ok := new(big.Rat).SetString(v)
		if !ok {
			return tpcds.Value{}, fmt.Errorf("not a number: %q", v)
		}
		var scale int32
		if m := decimalType.FindStringSubmatch(typ); m != nil {
			s, _ := strconv.Atoi(m[2])
			scale = int32(s)
		}
		return tpcds.Value{Kind: tpcds.KNum, Num: r, Scale: scale}, nil
	case tpcds.TypeString:
		return tpcds.Value{Kind: tpcds.KString, S: v}, nil
	case tpcds.TypeBool:
		return tpcds.Value{Kind: tpcds.KBool, Bool: v == "true"}, nil
	case tpcds.TypeDate:
		d, err := time.Parse(time.DateOnly, v)
		return tpcds.Value{Kind: tpcds.KDate, I: d.Unix() / 86400}, err
	}
	return tpcds.Value{}, fmt.Errorf("unsupported Flink type %s", typ)
}

// flinkTypeName is Flink's type name without what flightd's types do not
// carry: nullability, and the length of a string type (flightd has one
// string type, Flink's STRING; CHAR(n) and VARCHAR(n) map to it).
// flightd's names are plan.SQLTypeName's, which spells Flink's types.
var stringType = regexp.MustCompile(`^(VAR)?CHAR\(\d+\)$`)

func flinkTypeName(t string) string {
	t = strings.TrimSuffix(t, " NOT NULL")
	if stringType.MatchString(t) {
		return "STRING"
	}
	return t
}

// FlinkClass is the verdict on one query against Flink, the reference for
// flightd's dialect.
type FlinkClass uint8

// Classes. Agree, BothFailed and Unsupported are as against DuckDB;
// Dialect and FlinkBug are disagreements a named rule (flinkRules)
// explains; Finding is one no rule explains: a flightd bug until shown
// otherwise.
const (
	FlinkAgree FlinkClass = iota
	FlinkBothFailed
	FlinkUnsupported
	// FlinkDialect is a documented difference of flightd from Flink.
	FlinkDialect
	// FlinkBug is Flink failing or answering wrong where flightd answers
	// as Flink documents.
	FlinkBug
	FlinkFinding
	// FlinkTimedOut is Flink not answering within the oracle's timeout
	// while still planning the query, where flightd and DuckDB agree.
	FlinkTimedOut
	numFlinkClasses
)

func (c FlinkClass) String() string {
	return [...]string{"agree", "both failed", "unsupported", "dialect difference", "Flink bug", "finding", "Flink timed out"}[c]
}

// flinkCase is one query's answers on flightd and Flink, as the rules see
// them.
type flinkCase struct {
	// sql is the Flink spelling, the text flightd and Flink ran.
	sql string
	// want is Flink's answer and got flightd's, when they gave one.
	want, got *tpcds.Result
	ferr      error
	kerr      string
	// flinkTypes are Flink's result types, as it names them.
	flinkTypes []string
	// diff is the values' difference, "" if they agree.
	diff string
	// duckAgrees is whether DuckDB (its spelling) gave flightd's answer.
	duckAgrees bool
	// flightd and flink answer another query, for the rules that check a
	// Flink bug by reproducing it (flinkbugs.go); nil where not given.
	flightd, flink func(sql string) (*tpcds.Result, error)
}

// flinkRule explains a disagreement with Flink.
type flinkRule struct {
	name  string
	class FlinkClass
	match func(c *flinkCase) bool
}

// flinkRules are the disagreements with Flink that are not flightd bugs,
// each named (the run counts them by name) and each a narrow match: a
// disagreement no rule explains is a finding.
var flinkRules = []flinkRule{
	{"integer overflow is an error (22003) in flightd; Flink wraps around", FlinkDialect, func(c *flinkCase) bool {
		return c.ferr != nil && c.kerr == "" && engine.SQLState(c.ferr) == "22003" && integerOverflow.MatchString(c.ferr.Error())
	}},
	{"a DECIMAL value beyond the precision of a CAST is an error (22003) in flightd; Flink gives NULL", FlinkDialect, func(c *flinkCase) bool {
		return c.ferr != nil && c.kerr == "" && engine.SQLState(c.ferr) == "22003" && decimalCastOverflow.MatchString(c.ferr.Error())
	}},
	{"Flink's planner fails with an internal error on valid SQL", FlinkBug, func(c *flinkCase) bool {
		return c.ferr == nil && flinkInternalError.MatchString(c.kerr)
	}},
	{"Flink's parser refuses FIRST_VALUE or LAST_VALUE of a parenthesized argument", FlinkBug, func(c *flinkCase) bool {
		return c.ferr == nil && strings.HasPrefix(c.kerr, "ParseException") && valueOfParens.MatchString(c.sql)
	}},
	{"Flink's parser refuses a parenthesized first argument of POSITION (a scalar subquery, (a || b))", FlinkBug, func(c *flinkCase) bool {
		return c.ferr == nil && strings.HasPrefix(c.kerr, "ParseException") && strings.Contains(c.sql, "POSITION((")
	}},
	{"Flink (Calcite) does not match a HAVING expression with the equal GROUP BY expression", FlinkBug, func(c *flinkCase) bool {
		m := notGrouped.FindStringSubmatch(c.kerr)
		return c.ferr == nil && m != nil && havingOnGroupKey(c.sql, m[1])
	}},
	{"Flink's LAG/LEAD with a default gives -1 where the value it reads is NULL", FlinkBug, lagDefaultNulls},
	{"Flink refuses a rank function ordered by constants only", FlinkBug, func(c *flinkCase) bool {
		return c.ferr == nil && strings.Contains(c.kerr, "requires order by clause with non-constant fields")
	}},
	{"Flink (Calcite) refuses ORDER BY ordinals of a SELECT DISTINCT whose items use unselected columns", FlinkBug, func(c *flinkCase) bool {
		return c.ferr == nil && strings.Contains(c.kerr, "is not in the select clause") && strings.Contains(c.sql, "SELECT DISTINCT")
	}},
	{"Flink gives no row for the empty grouping set (GROUPING SETS, ROLLUP, CUBE) over no input rows", FlinkBug, emulated(noEmptyGroupingSet)},
	{"Flink's [NOT] IN of a correlated subquery is NULL for a NULL operand also where the subquery is empty", FlinkBug, emulated(nullOperandIn)},
	{"Flink's uncorrelated EXISTS is TRUE, also of an empty subquery, in a query with a correlated subquery", FlinkBug, emulated(trueExists)},
	{"Flink (Calcite's decorrelator) drops GROUP BY keys that fold to constants, and answers a row over no input rows", FlinkBug, emulated(constantKeysGlobal)},
	{"Flink's correlated subquery sees no rows for an outer row whose correlated column is NULL", FlinkBug, emulated(nullOuterNoRows)},
	{"SUM of a TINYINT, SMALLINT or INT is BIGINT in flightd; Flink sums in the argument's type, wrapping around", FlinkDialect, wrappedSum},
	{"Flink (Calcite) folds a key named twice in ROLLUP or CUBE into one", FlinkBug, emulated(distinctKeys)},
	{"Flink's AVG of an INT over a window sums in INT, wrapping around on overflow", FlinkBug, emulated(wrappedWindowAvg)},
	{"Flink's constant folding drops the inner of two DECIMAL casts of a literal", FlinkBug, emulated(literalOuterCast)},
	{"Flink answers an INTERSECT ALL with rows missing from an input when the query sorts it", FlinkBug, intersectAllOrder},
	{"Flink aggregates each side of a join apart when one side is empty, so a global aggregate reads the other side's rows", FlinkBug, emptyJoinSide},
	{"Flink ignores a WHERE condition that holds a subquery inside CASE or NULLIF (in some plans)", FlinkBug, emulated(caseSubqueryWhere)},
	{"Flink repeats an outer row per matching inner row for a literal [NOT] IN a correlated subquery", FlinkBug, literalInOperand},
	{"Flink filters a derived table's rows by an outer WHERE on its column before the table's ORDER BY and LIMIT", FlinkBug, emulated(filterBelowLimit)},
}

// wrappedSum explains c when flightd's answer, with each column whose
// select item is a SUM that Flink types TINYINT, SMALLINT or INT wrapped
// around to that type, is Flink's: flightd's SUM of an integer type is
// BIGINT on purpose (docs/STATUS.md), Flink's wraps in the argument's type
// (two's complement addition wraps the same in any order).
func wrappedSum(c *flinkCase) bool {
	if c.diff == "" || c.want == nil || c.got == nil || len(c.flinkTypes) != len(c.got.Columns) {
		return false
	}
	bits := map[int]uint{}
	for col, typ := range c.flinkTypes {
		if w := integerWidth[flinkTypeName(typ)]; w > 0 && w < 8 && itemHas(c.sql, col, sumCall) {
			bits[col] = uint(8 * w)
		}
	}
	if len(bits) == 0 {
		return false
	}
	return answersAs(c, func(col int, v tpcds.Value) tpcds.Value {
		if b, ok := bits[col]; ok && v.Kind == tpcds.KNum && v.Num.IsInt() {
			v.Num = new(big.Rat).SetInt(wrapInt(v.Num.Num(), b))
		}
		return v
	})
}

// answersAs reports whether flightd's answer, with each value read through
// as, is Flink's.
func answersAs(c *flinkCase, as func(col int, v tpcds.Value) tpcds.Value) bool {
	read := *c.got
	read.Rows = make([][]tpcds.Value, len(c.got.Rows))
	for i, row := range c.got.Rows {
		read.Rows[i] = make([]tpcds.Value, len(row))
		for col, v := range row {
			read.Rows[i][col] = as(col, v)
		}
	}
	return tpcds.Compare(c.sql, c.want, &read) == ""
}

// wrapInt is x in a two's complement integer of the given bits.
func wrapInt(x *big.Int, bits uint) *big.Int {
	m := new(big.Int).Lsh(big.NewInt(1), bits)
	r := new(big.Int).Mod(x, m)
	if r.Cmp(new(big.Int).Rsh(m, 1)) >= 0 {
		r.Sub(r, m)
	}
	return r
}

// sumCall reports whether a select item is one SUM call (its alias aside).
func sumCall(item string) bool {
	item = itemAlias.ReplaceAllString(item, "")
	if !strings.HasPrefix(item, "sum(") {
		return false
	}
	end, err := tpcds.ClosingParen(item, len("sum"))
	return err == nil && end == len(item)-1
}

var itemAlias = regexp.MustCompile(` AS \w+$`)

// integerOverflow matches flightd's errors for integer arithmetic beyond
// its type (+, -, *, negation, ABS, SUM), not other overflows (decimals,
// casts, dates), which Flink does not wrap.
// ABS computed wider and cast back to its argument's type fails in the
// cast.
var integerOverflow = regexp.MustCompile(`numeric overflow: (-?\d+ [-+*] -?\d+ \(u?int\d+\)|-\(-?\d+\) \(u?int\d+\)|abs\(-?\d+\)|sum exceeds the int64 range)|abs: cannot cast int64 value "\d+" to int(8|16|32): numeric overflow$`)

// decimalCastOverflow matches flightd's error for a DECIMAL that does not
// fit the precision of the DECIMAL it is cast to.
var decimalCastOverflow = regexp.MustCompile(`cannot cast decimal\(\d+, \d+\) value "-?[\d.]+" to decimal\(\d+, \d+\): numeric overflow`)

// flinkInternalError matches Flink failures that are Java exceptions of
// its planner or runtime, not SQL errors.
var flinkInternalError = regexp.MustCompile(`^CodeGenException: Mismatch of function's argument data type|^IllegalArgumentException: (null$|Cannot compute compatible row type for arguments to set op)|^TableException: This must be a bug|^TableException: Join: Equality join predicate on incompatible types|^(IndexOutOfBoundsException|ArrayIndexOutOfBoundsException|NullPointerException|ClassCastException|AssertionError|IllegalStateException|CannotPlanException)|unexpected correlate variable`)

// lagDefaultNulls explains c when flightd's answer, with the NULLs of its
// columns that are LAG or LEAD calls with a default read as -1, is Flink's.
func lagDefaultNulls(c *flinkCase) bool {
	if c.diff == "" || c.want == nil || c.got == nil {
		return false
	}
	lag := map[int]bool{}
	for col := range c.got.Columns {
		if itemHas(c.sql, col, lagWithDefault) {
			lag[col] = true
		}
	}
	if len(lag) == 0 {
		return false
	}
	return answersAs(c, func(col int, v tpcds.Value) tpcds.Value {
		if lag[col] && v.Kind == tpcds.KNull {
			return tpcds.Value{Kind: tpcds.KNum, Num: big.NewRat(-1, 1)}
		}
		return v
	})
}

// notGrouped matches Flink's error naming a column neither grouped nor
// aggregated.
var notGrouped = regexp.MustCompile(`^SqlValidatorException: Expression '(\w+\.\w+)' is not being grouped`)

// havingOnGroupKey reports whether col is grouped in sql only inside a GROUP
// BY expression that its HAVING clause uses as written.
func havingOnGroupKey(sql, col string) bool {
	gb := strings.Index(sql, " GROUP BY ")
	hv := strings.Index(sql, " HAVING ")
	if gb < 0 || hv < gb {
		return false
	}
	for _, key := range groupKeys(sql[gb+len(" GROUP BY ") : hv]) {
		if key != col && strings.Contains(key, col) && strings.Contains(sql[hv:], key) {
			return true
		}
	}
	return false
}

// groupKeys returns the expressions a GROUP BY clause groups by, also
// inside ROLLUP, CUBE and GROUPING SETS.
func groupKeys(clause string) []string {
	var keys []string
	for _, k := range splitTop(clause) {
		for _, wrap := range []string{"ROLLUP (", "CUBE (", "GROUPING SETS (", "("} {
			if strings.HasPrefix(k, wrap) && strings.HasSuffix(k, ")") {
				if end, err := tpcds.ClosingParen(k, len(wrap)-1); err == nil && end == len(k)-1 {
					keys = append(keys, groupKeys(k[len(wrap):end])...)
					k = ""
					break
				}
			}
		}
		if k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

var valueOfParens = regexp.MustCompile(`(first|last)_value\(\(`)

// FlinkResult is the verdict on one query against Flink.
type FlinkResult struct {
	// SQL is the Flink spelling (flightd and Flink ran it), DuckDBSQL
	// DuckDB's of the same query.
	SQL, DuckDBSQL string
	Class          FlinkClass
	// Rule is the name of the rule that explained a disagreement.
	Rule   string
	Detail string
	// DuckDB is how DuckDB's answer compares with Flink's: "" if it
	// agrees (or both failed), else the difference.
	DuckDB string
	// TypeDiffs are the result columns whose flightd type is not Flink's
	// (names without nullability and string lengths).
	TypeDiffs []TypeDiff
	Category  string
	Rows      int
	// FlinkWait is the time spent waiting for Flink's answer after flightd
	// and DuckDB had theirs.
	FlinkWait time.Duration
}

// TypeDiff is a result column typed apart from Flink.
type TypeDiff struct {
	Column         int
	Flink, Flightd string
}

func (d TypeDiff) String() string {
	return fmt.Sprintf("column %d: Flink %s, flightd %s", d.Column+1, d.Flink, d.Flightd)
}

// categories name a query by its most telling feature, in this order.
var categories = []struct {
	name string
	re   *regexp.Regexp
}{
	{"window", regexp.MustCompile(`\) OVER \(`)},
	{"grouping sets", regexp.MustCompile(`GROUP BY (ROLLUP|CUBE|GROUPING SETS)`)},
	{"set operation", regexp.MustCompile(` (UNION|INTERSECT|EXCEPT) `)},
	{"subquery", regexp.MustCompile(`\(SELECT |EXISTS \(`)},
	{"aggregate", regexp.MustCompile(`GROUP BY|\b(count|sum|avg|min|max|MIN|MAX)\(`)},
	{"join", regexp.MustCompile(` JOIN `)},
}

func category(sql string) string {
	for _, c := range categories {
		if c.re.MatchString(sql) {
			return c.name
		}
	}
	return "scan"
}

// CheckFlink runs query i of the run on flightd and Flink (Flink's
// spelling) and on DuckDB (its own), and compares flightd's answer and
// result types with Flink's; DuckDB's is compared with Flink's for the
// record.
func (e *Env) CheckFlink(ctx context.Context, oracle *flink.Oracle, i int) (FlinkResult, error) {
	tables := e.TableNames()
	r := FlinkResult{SQL: NewFlinkGen(e.Seed, i, tables).Query(), DuckDBSQL: NewGen(e.Seed, i, tables).Query()}
	r.Category = category(r.SQL)
	// Flink runs the query while flightd and DuckDB do.
	if err := oracle.Send(r.SQL); err != nil {
		return r, err
	}
	got, schema, ferr := e.F.QueryTyped(ctx, r.SQL)
	dres, derr := e.D.Query(ctx, r.DuckDBSQL)
	waitFrom := time.Now()
	ans, err := oracle.Receive()
	r.FlinkWait = time.Since(waitFrom)
	if errors.Is(err, flink.ErrTimeout) {
		timedOut(&r, err, ferr == nil && derr == nil && tpcds.Compare(r.SQL, got, dres) == "")
		return r, err
	}
	if err != nil {
		return r, err
	}

	var names []string
	if got != nil {
		names = got.Columns
	}
	c := flinkCase{sql: r.SQL, ferr: ferr, kerr: ans.Err, got: got, flinkTypes: ans.Types,
		duckAgrees: got != nil && derr == nil && tpcds.Compare(r.SQL, got, dres) == "",
		flightd:    func(sql string) (*tpcds.Result, error) { return e.F.Query(ctx, sql) },
		flink: func(sql string) (*tpcds.Result, error) {
			a, err := oracle.Run(sql)
			if err == nil && a.Err != "" {
				err = errors.New(a.Err)
			}
			if err != nil {
				return nil, err
			}
			return flinkResult(a, names)
		}}
	var want *tpcds.Result
	if ans.Err == "" {
		if want, err = flinkResult(ans, names); err != nil {
			return r, fmt.Errorf("reading Flink's answer to %s: %w", r.SQL, err)
		}
		r.Rows = len(want.Rows)
		c.want = want
	}
	if want != nil && derr == nil {
		r.DuckDB = tpcds.Compare(r.SQL, want, dres)
	} else if (want == nil) != (derr != nil) {
		r.DuckDB = fmt.Sprintf("DuckDB: %v; Flink: %s", derr, ans.Err)
	}
	switch {
	case ferr != nil && ans.Err != "":
		r.Class, r.Detail = FlinkBothFailed, fmt.Sprintf("flightd: %v; Flink: %s", ferr, ans.Err)
		return r, nil
	case ferr != nil && errors.Is(ferr, engine.ErrNotSupported):
		r.Class, r.Detail = FlinkUnsupported, ferr.Error()
		return r, nil
	case ferr != nil:
		r.Detail = fmt.Sprintf("flightd failed: %v", ferr)
	case ans.Err != "":
		r.Detail = "Flink failed: " + ans.Err
	default:
		if schema != nil && len(schema.Fields()) == len(ans.Types) {
			for col, fd := range schema.Fields() {
				if ft, kt := plan.SQLTypeName(fd.Type), flinkTypeName(ans.Types[col]); ft != kt {
					r.TypeDiffs = append(r.TypeDiffs, TypeDiff{Column: col, Flink: kt, Flightd: ft})
				}
			}
		}
		c.diff = tpcds.Compare(r.SQL, want, got)
		r.Detail = c.diff
		if c.diff == "" {
			r.Class = FlinkAgree
			return r, nil
		}
	}
	r.Class = FlinkFinding
	for _, rule := range flinkRules {
		if rule.match(&c) {
			r.Class, r.Rule = rule.class, rule.name
			break
		}
	}
	return r, nil
}

// timedOut gives r, a query Flink did not answer in time (err), its
// verdict: Flink timed out, with the reason, where Flink was still
// planning it (its main thread under the planner's optimize) and flightd
// and DuckDB agree (duckAgrees); else a finding.
func timedOut(r *FlinkResult, err error, duckAgrees bool) {
	r.Class, r.Detail = FlinkFinding, err.Error()
	var te *flink.TimeoutError
	if !errors.As(err, &te) || !strings.Contains(te.MainStack, "PlannerBase.optimize") {
		r.Detail += "; Flink was not planning it"
		return
	}
	if !duckAgrees {
		r.Detail += "; flightd's answer is not DuckDB's"
		return
	}
	r.Class, r.Rule = FlinkTimedOut, "Flink's planner is still optimizing the query at the timeout"
	if m := plannerRule.FindStringSubmatch(te.MainStack); m != nil {
		r.Detail += "; Flink's main thread was in " + m[1]
	}
}

// plannerRule matches the innermost planner rule on a stack.
var plannerRule = regexp.MustCompile(`\.rules\.[\w.]*?(\w+)\.onMatch\(`)

// typeRules are the result types flightd gives apart from Flink on
// purpose, each named: a type difference no rule explains is a finding.
// Each applies only to a column whose select item calls the function it
// names (in some top-level SELECT of the query).
var typeRules = []struct {
	name  string
	match func(d TypeDiff, sql string) bool
}{
	{"SUM of integers is BIGINT in flightd, where an overflow is an error; Flink's is the argument's type (it wraps on overflow)", func(d TypeDiff, sql string) bool {
		return d.Flightd == "BIGINT" && smallInt[d.Flink] && itemSums(sql, d.Column)
	}},
	{"LAG/LEAD with a default has the common type of the value and the default in flightd; Flink's is the value's, the default cast to it", func(d TypeDiff, sql string) bool {
		return integerWidth[d.Flink] > 0 && integerWidth[d.Flink] < integerWidth[d.Flightd] && itemHas(sql, d.Column, lagWithDefault)
	}},
	{"SUM of integers is BIGINT in flightd; Flink's narrower type widens a DECIMAL it meets less", func(d TypeDiff, sql string) bool {
		fp, fs, fok := decimalOf(d.Flink)
		kp, ks, kok := decimalOf(d.Flightd)
		// The SUM in arithmetic: a SUM alone has its own rules.
		return fok && kok && fs == ks && kp > fp && kp-fp <= bigintOver &&
			itemHas(sql, d.Column, func(item string) bool { return !sumCall(item) && sums(sql, item, 0) })
	}},
	{"SUM of DECIMAL(p, s) is DECIMAL(p + 10, s) in flightd, leaving room for a later division; Flink's is DECIMAL(38, s)", func(d TypeDiff, sql string) bool {
		return strings.HasPrefix(d.Flightd, "DECIMAL(") && strings.HasPrefix(d.Flink, "DECIMAL(38,") && itemSums(sql, d.Column)
	}},
}

// itemSums reports whether the select item of output column col calls
// SUM, or reads a column of a derived table or WITH query whose item does
// (the SUM's type reaches the column through it).
func itemSums(sql string, col int) bool {
	return itemHas(sql, col, func(item string) bool { return sums(sql, item, 0) })
}

// sums reports whether item calls SUM or reads a column aN.cM of a derived
// table or WITH query of sql whose item M sums (depth bounds the chain).
func sums(sql, item string, depth int) bool {
	if strings.Contains(item, "sum(") {
		return true
	}
	if depth > 3 {
		return false
	}
	for _, m := range columnRef.FindAllStringSubmatch(item, -1) {
		col, _ := strconv.Atoi(m[2])
		for _, body := range derivedBodies(sql, m[1]) {
			for _, items := range topSelectItems(body) {
				if col < len(items) && sums(sql, stringLiteral.ReplaceAllString(items[col], "''"), depth+1) {
					return true
				}
			}
		}
	}
	return false
}

var columnRef = regexp.MustCompile(`\b(a\d+)\.c(\d+)\b`)

// derivedBodies returns the queries that the table alias names in sql: the
// derived table "(SELECT ...) AS alias" or the WITH query of "wN AS alias".
func derivedBodies(sql, alias string) []string {
	var out []string
	for _, m := range derivedAlias.FindAllStringSubmatchIndex(sql, -1) {
		if sql[m[2]:m[3]] != alias {
			continue
		}
		if open := enclosing(sql, m[0], m[0]+1); open >= 0 {
			out = append(out, sql[open+1:m[0]])
		}
	}
	for _, m := range withAlias.FindAllStringSubmatch(sql, -1) {
		if m[2] != alias {
			continue
		}
		if i := strings.Index(sql, m[1]+" AS ("); i >= 0 {
			open := i + len(m[1]+" AS ")
			if end, err := tpcds.ClosingParen(sql, open); err == nil {
				out = append(out, sql[open+1:end])
			}
		}
	}
	return out
}

// derivedAlias matches a derived table's alias, withAlias a WITH query's
// name and its alias.
var (
	derivedAlias = regexp.MustCompile(`\) AS (a\d+)\b`)
	withAlias    = regexp.MustCompile(`\b(w\d+) AS (a\d+)\b`)
)

// itemHas reports whether has holds for the select item of output column
// col, string literals emptied, in some top-level SELECT of sql.
func itemHas(sql string, col int, has func(item string) bool) bool {
	for _, items := range topSelectItems(sql) {
		if col < len(items) && has(stringLiteral.ReplaceAllString(items[col], "''")) {
			return true
		}
	}
	return false
}

// lagWithDefault reports whether item calls LAG or LEAD with a default,
// their third argument.
func lagWithDefault(item string) bool {
	for _, m := range lagCall.FindAllStringIndex(item, -1) {
		if end, err := tpcds.ClosingParen(item, m[1]-1); err == nil && len(splitTop(item[m[1]:end])) == 3 {
			return true
		}
	}
	return false
}

var lagCall = regexp.MustCompile(`\b(lag|lead)\(`)

// topSelectItems returns the select items of each SELECT of sql outside
// parentheses (WITH queries and subqueries are inside them).
func topSelectItems(sql string) [][]string {
	var out [][]string
	for _, m := range selectList.FindAllSubmatchIndex(topLevel(sql), -1) {
		out = append(out, splitTop(sql[m[2]:m[3]]))
	}
	return out
}

// splitTop splits s at its commas outside parentheses and quotes, each
// part trimmed.
func splitTop(s string) []string {
	top := topLevel(s)
	var parts []string
	start := 0
	for i := 0; i <= len(top); i++ {
		if i == len(top) || top[i] == ',' {
			parts = append(parts, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return parts
}

// topLevel is s with everything inside parentheses or quotes blanked.
func topLevel(s string) []byte {
	top, _ := blankNested(s)
	return top
}

// blankNested is topLevel, and where s has a ')' it did not open (len(s)
// if none): the end of the query s is inside of.
func blankNested(s string) ([]byte, int) {
	top := []byte(s)
	end := len(s)
	depth, quoted := 0, false
	for i, c := range top {
		switch {
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 && end == len(s) {
				end = i
			}
		default:
			if depth == 0 {
				continue
			}
		}
		top[i] = ' '
	}
	return top, end
}

var stringLiteral = regexp.MustCompile(`'(?:[^']|'')*'`)

// selectList matches a SELECT's items up to its FROM.
var selectList = regexp.MustCompile(`SELECT (?:DISTINCT )?(.*?) FROM `)

// decimalOf returns the precision and scale of a DECIMAL type name.
func decimalOf(t string) (precision, scale int, ok bool) {
	m := decimalType.FindStringSubmatch(t)
	if m == nil {
		return 0, 0, false
	}
	precision, _ = strconv.Atoi(m[1])
	scale, _ = strconv.Atoi(m[2])
	return precision, scale, true
}

// bigintOver is the most digits a BIGINT (19) has over the narrower
// integer Flink sums in (TINYINT's 3; INT's 10 and SMALLINT's 5 give 9 and
// 14): a DECIMAL's precision in arithmetic with the SUM grows by at most
// that, and by less where the DECIMAL's own integer digits are more than
// the narrower type's (DECIMAL(20, 2) + INT is DECIMAL(21, 2), + BIGINT
// DECIMAL(22, 2)).
const bigintOver = 19 - 3

var (
	smallInt     = map[string]bool{"TINYINT": true, "SMALLINT": true, "INT": true}
	integerWidth = map[string]int{"TINYINT": 1, "SMALLINT": 2, "INT": 4, "BIGINT": 8}
)

// typeRule returns the name of the rule explaining d, "" if none does.
func typeRule(d TypeDiff, sql string) string {
	for _, r := range typeRules {
		if r.match(d, sql) {
			return r.name
		}
	}
	return ""
}
