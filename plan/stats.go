package plan

import (
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore"
)

// Estimates from the table store's statistics (tablestore.ColumnStats:
// ranges, null counts, NDV per column of a snapshot). A column's statistics
// are those of the scan that produces it, found by following column
// references down the plan; filters above that scan are accounted for by
// capping NDVs at the estimated rows. Where nothing is known the fixed
// guesses below apply.
const (
	defaultEqSel    = 0.1
	defaultRangeSel = 0.33
)

// estimator memoizes row estimates of the nodes of a plan that does not
// change while it is used: a node's Rows estimates its whole subtree again,
// so a pass asking for the rows of each join of a chain of n joins cost
// n^3.
type estimator map[Node]float64

// rows is n.Rows(), estimated from the memoized rows of n's inputs where n
// is a join or a filter (the nodes of join trees).
func (m estimator) rows(n Node) float64 {
	if r, ok := m[n]; ok {
		return r
	}
	var r float64
	switch x := n.(type) {
	case *JoinNode:
		r = x.rowsFrom(m.rows(x.Left), m.rows(x.Right))
	case *FilterNode:
		r = x.rowsFrom(m.rows(x.Input))
	default:
		r = n.Rows()
	}
	m[n] = r
	return r
}

// colStat is what is known about one column: its table's statistics.
type colStat struct {
	tablestore.ColumnStats
	tableRows float64
}

// nullFrac is the fraction of the table's rows that are NULL in the column.
func (c *colStat) nullFrac() float64 {
	if c.NullCount <= 0 || c.tableRows <= 0 {
		return 0
	}
	return min(1, float64(c.NullCount)/c.tableRows)
}

// findStat returns the statistics of column id as produced by n, or nil.
func findStat(n Node, id ColumnID) *colStat {
	switch x := n.(type) {
	case *ScanNode:
		if x.Stats == nil {
			return nil
		}
		for i, c := range x.Cols {
			if c.ID != id {
				continue
			}
			j := x.Table.Schema().FieldIndices(x.Names[i])
			if len(j) == 0 || j[0] >= len(x.Stats.Columns) {
				return nil
			}
			return &colStat{ColumnStats: x.Stats.Columns[j[0]], tableRows: float64(x.Stats.Rows)}
		}
		return nil
	case *ProjectNode:
		return findStatThrough(x.Input, x.Cols, x.Exprs, id)
	case *AggNode:
		return findStatThrough(x.Input, x.GroupCols, x.Groups, id)
	case *CTEScanNode:
		body := x.Shared.Root.Columns()
		for i, c := range x.Cols {
			if c.ID == id && i < len(body) {
				return findStat(x.Shared.Root, body[i].ID)
			}
		}
		return nil
	case *SetOpNode, *ValuesNode:
		// Their columns are new or constants: nothing to follow.
		return nil
	}
	for _, in := range n.Inputs() {
		if s := findStat(in, id); s != nil {
			return s
		}
	}
	return nil
}

// findStatThrough follows column id, computed as exprs[i] for cols[i], to
// the statistics of input when it is a plain column reference.
func findStatThrough(input Node, cols []Column, exprs []Expr, id ColumnID) *colStat {
	for i, c := range cols {
		if c.ID == id {
			if r, ok := exprs[i].(*ColRef); ok {
				return findStat(input, r.ID)
			}
			return nil
		}
	}
	return nil
}

// ndv estimates the distinct non-null values of e in n's output, capped at
// rows (n's estimated rows); 0 when unknown.
func ndv(n Node, e Expr, rows float64) float64 {
	r, ok := e.(*ColRef)
	if !ok {
		return 0
	}
	s := findStat(n, r.ID)
	if s == nil || s.NDV <= 0 {
		return 0
	}
	return max(1, min(s.NDV, rows))
}

// selectivity estimates the fraction of in's rows that pred keeps.
func selectivity(pred Expr, in Node) float64 {
	s := 1.0
	// Ranges on one column (a BETWEEN, or a >= and a <) are estimated
	// together: their product would count the column twice.
	type bounds struct {
		st     *colStat
		lo, hi float64
	}
	ranges := map[ColumnID]*bounds{}
	var order []ColumnID
	// Other conjuncts on one and the same column count once, the most
	// selective: q74's d_year IN (2001, 2002) and the (d_year = 2001 OR
	// d_year = 2002) pushed down beside it say the same thing, and their
	// product estimated 7 of date_dim's 730 rows.
	oneCol := map[ColumnID]float64{}
	var oneOrder []ColumnID
	for _, c := range conjuncts(pred) {
		if id, st, op, v, ok := numericCompare(c, in); ok && op != "equal" && op != "not_equal" {
			b := ranges[id]
			if b == nil {
				b = &bounds{st: st, lo: st.MinNum, hi: st.MaxNum}
				ranges[id] = b
				order = append(order, id)
			}
			lo, hi := bound(st, op, v)
			b.lo, b.hi = max(b.lo, lo), min(b.hi, hi)
			continue
		}
		if cols := colsOf(c); len(cols) == 1 {
			for id := range cols {
				f, seen := oneCol[id]
				if !seen {
					f = 1
					oneOrder = append(oneOrder, id)
				}
				oneCol[id] = min(f, sel1(c, in))
			}
			continue
		}
		s *= sel1(c, in)
	}
	for _, id := range order {
		b := ranges[id]
		s *= (1 - b.st.nullFrac()) * rangeFrac(b.st, b.lo, b.hi)
	}
	for _, id := range oneOrder {
		s *= oneCol[id]
	}
	return s
}

// bound is the range [lo, hi] of values that satisfy col <op> v; strict
// bounds on integer-like columns move to the next value.
func bound(st *colStat, op string, v float64) (lo, hi float64) {
	lo, hi = st.MinNum, st.MaxNum
	step := 0.0
	if st.NDV > 0 && v == math.Trunc(v) {
		step = 1
	}
	switch op {
	case "less":
		hi = v - step
	case "less_equal":
		hi = v
	case "greater":
		lo = v + step
	default:
		lo = v
	}
	return lo, hi
}

// rangeFrac is the fraction of a column's non-null values in [lo, hi],
// assuming uniformly spread values.
func rangeFrac(st *colStat, lo, hi float64) float64 {
	if hi < lo {
		return 0
	}
	width := st.MaxNum - st.MinNum
	if st.NDV > 0 {
		// Integer-like: [lo, hi] holds hi-lo+1 of the width+1 values.
		return clamp01((hi - lo + 1) / (width + 1))
	}
	if width <= 0 {
		return 1
	}
	return clamp01((hi - lo) / width)
}

func clamp01(f float64) float64 { return max(0, min(1, f)) }

// numericCompare matches column <op> constant (either way round) on a
// column with a numeric range; v is the constant in the column's unit.
func numericCompare(e Expr, in Node) (id ColumnID, st *colStat, op string, v float64, ok bool) {
	call, isCall := e.(*Call)
	if !isCall {
		return 0, nil, "", 0, false
	}
	if _, isCmp := cmpOps[call.Fn]; !isCmp {
		return 0, nil, "", 0, false
	}
	col, k, flipped := colAndConst(call.Args[0], call.Args[1])
	if col == nil {
		return 0, nil, "", 0, false
	}
	st = findStat(in, col.ID)
	if st == nil || st.Range != tablestore.NumericRange {
		return 0, nil, "", 0, false
	}
	cv, castOK := losslessCast(k.Value, col.Typ)
	if !castOK {
		return 0, nil, "", 0, false
	}
	v, ok = scalarNum(cv)
	if !ok {
		return 0, nil, "", 0, false
	}
	op = call.Fn
	if flipped {
		op = flipFn[op]
	}
	return col.ID, st, op, v, true
}

var flipFn = map[string]string{
	"equal": "equal", "not_equal": "not_equal", "less": "greater", "less_equal": "greater_equal",
	"greater": "less", "greater_equal": "less_equal",
}

// colAndConst returns the column and the valid constant of a comparison;
// flipped when the constant is on the left.
func colAndConst(a, b Expr) (*ColRef, *Const, bool) {
	if c, ok := a.(*ColRef); ok {
		if k, ok := b.(*Const); ok && k.Value.IsValid() {
			return c, k, false
		}
	}
	if c, ok := b.(*ColRef); ok {
		if k, ok := a.(*Const); ok && k.Value.IsValid() {
			return c, k, true
		}
	}
	return nil, nil, false
}

// scalarNum is a numeric scalar's value in its physical unit.
func scalarNum(s scalar.Scalar) (float64, bool) {
	switch s := s.(type) {
	case *scalar.Int8:
		return float64(s.Value), true
	case *scalar.Int16:
		return float64(s.Value), true
	case *scalar.Int32:
		return float64(s.Value), true
	case *scalar.Int64:
		return float64(s.Value), true
	case *scalar.Float32:
		return float64(s.Value), true
	case *scalar.Float64:
		return s.Value, true
	case *scalar.Date32:
		return float64(s.Value), true
	case *scalar.Timestamp:
		return float64(s.Value), true
	case *scalar.Boolean:
		if s.Value {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// sel1 estimates one conjunct.
func sel1(e Expr, in Node) float64 {
	switch x := e.(type) {
	case *Call:
		switch x.Fn {
		case "and":
			return selectivity(x, in)
		case "or":
			a, b := sel1(x.Args[0], in), sel1(x.Args[1], in)
			return a + b - a*b
		case "not":
			return clamp01(1 - sel1(x.Args[0], in))
		case "is_null", "is_not_null":
			r, ok := x.Args[0].(*ColRef)
			if !ok {
				break
			}
			st := findStat(in, r.ID)
			if st == nil || st.NullCount < 0 {
				break
			}
			if x.Fn == "is_null" {
				return st.nullFrac()
			}
			return 1 - st.nullFrac()
		case "equal", "not_equal":
			eq := eqSel(x, in)
			if x.Fn == "equal" {
				return eq
			}
			return clamp01(1 - eq)
		case "less", "less_equal", "greater", "greater_equal":
			if _, st, op, v, ok := numericCompare(x, in); ok {
				lo, hi := bound(st, op, v)
				return (1 - st.nullFrac()) * rangeFrac(st, lo, hi)
			}
		case "like", "not_like":
			if s, ok := likeSel(x, in); ok {
				if x.Fn == "like" {
					return s
				}
				return clamp01(1 - s)
			}
		}
	case *In:
		r, ok := x.X.(*ColRef)
		if !ok {
			break
		}
		st := findStat(in, r.ID)
		if st == nil || st.NDV <= 0 {
			break
		}
		return clamp01(float64(len(x.List)) / st.NDV * (1 - st.nullFrac()))
	}
	if c, ok := e.(*Call); ok && c.Fn == "equal" {
		return defaultEqSel
	}
	return defaultRangeSel
}

// eqSel estimates col = const (1/NDV, 0 outside the range) and
// col = col (1/max NDV).
func eqSel(x *Call, in Node) float64 {
	if _, st, _, v, ok := numericCompare(x, in); ok {
		if v < st.MinNum || v > st.MaxNum {
			return 0
		}
		if st.NDV > 0 {
			return (1 - st.nullFrac()) / st.NDV
		}
		return defaultEqSel
	}
	if col, _, _ := colAndConst(x.Args[0], x.Args[1]); col != nil {
		if st := findStat(in, col.ID); st != nil && st.NDV > 0 {
			return (1 - st.nullFrac()) / st.NDV
		}
		return defaultEqSel
	}
	// Uncapped: in may be the join whose rows are being estimated.
	a, b := ndv(in, x.Args[0], math.Inf(1)), ndv(in, x.Args[1], math.Inf(1))
	if a > 0 && b > 0 {
		return 1 / max(a, b)
	}
	return defaultEqSel
}

// likeSel estimates col LIKE 'prefix%' from the string range; ok is false
// without a literal prefix or statistics.
func likeSel(x *Call, in Node) (float64, bool) {
	if len(x.Args) != 2 {
		return 0, false
	}
	col, k, flipped := colAndConst(x.Args[0], x.Args[1])
	if col == nil || flipped {
		return 0, false
	}
	pat, ok := k.Value.(*scalar.String)
	if !ok {
		return 0, false
	}
	p := pat.String()
	i := strings.IndexAny(p, "%_\\")
	if i < 0 {
		return eqSel(&Call{Fn: "equal", Args: x.Args}, in), true
	}
	prefix := p[:i]
	st := findStat(in, col.ID)
	if prefix == "" || st == nil || st.Range != tablestore.StringRange {
		return 0, false
	}
	return (1 - st.nullFrac()) * prefixFrac(st.MinStr, st.MaxStr, prefix), true
}

// prefixFrac is the fraction of [lo, hi] that strings starting with prefix
// take, mapping strings to numbers by their bytes after the common prefix
// of lo and hi (as PostgreSQL's convert_string_to_scalar does).
func prefixFrac(lo, hi, prefix string) float64 {
	if prefix > hi || (prefix < lo && !strings.HasPrefix(lo, prefix)) {
		return 0
	}
	common := 0
	for common < len(lo) && common < len(hi) && lo[common] == hi[common] {
		common++
	}
	num := func(s string, pad byte) float64 {
		f, scale := 0.0, 1.0
		for i := common; i < common+8; i++ {
			c := pad
			if i < len(s) {
				c = s[i]
			}
			scale /= 256
			f += float64(c) * scale
		}
		return f
	}
	if len(prefix) <= common {
		return 1 // every value shares the prefix
	}
	l, h := num(lo, 0), num(hi, 0)
	if h <= l {
		return 1
	}
	from, to := max(l, num(prefix, 0)), min(h, num(prefix, 0xff))
	// At least one value when the prefix falls inside the range.
	return clamp01(max((to-from)/(h-l), 1e-4))
}

// joinRows estimates an inner equi-join: |L||R| / prod max(ndv(a), ndv(b))
// over the key pairs with statistics, a divisor capped at the larger input
// (keys that are jointly unique). Keys without statistics on either side
// count as one key/foreign-key join: the divisor is at least the smaller
// unfiltered input. left is n.Left's columns, nil to have them computed.
func joinRows(n *JoinNode, l, r float64, left []Column) float64 {
	div, known, unknown := 1.0, false, false
	for _, c := range conjuncts(n.Cond) {
		call, ok := c.(*Call)
		if !ok || call.Fn != "equal" {
			continue
		}
		if left == nil {
			left = n.Left.Columns()
		}
		a, b := call.Args[0], call.Args[1]
		if !subset(colsOf(a), left) {
			a, b = b, a
		}
		da, db := ndv(n.Left, a, l), ndv(n.Right, b, r)
		switch {
		case da > 0 && db > 0:
			div *= max(da, db)
			known = true
		case da > 0 || db > 0:
			// One side's values are unknown (a union, an expression):
			// take them as spread over the known side's whole domain, so
			// a filtered dimension keeps its fraction of the other side.
			div *= max(ndv(n.Left, a, math.Inf(1)), ndv(n.Right, b, math.Inf(1)))
			known = true
		default:
			unknown = true
		}
	}
	if unknown {
		div = max(div, min(sideBaseRows(n.Left, l), sideBaseRows(n.Right, r)))
	}
	if known {
		div = min(div, max(l, r, 1))
	}
	est := l * r / max(1, div)
	// Non-equality conjuncts.
	for _, c := range conjuncts(n.Cond) {
		if call, ok := c.(*Call); !ok || call.Fn != "equal" {
			est *= sel1(c, n)
		}
	}
	return est
}

// sideBaseRows is baseRows(n) reusing rows (n's estimate) where baseRows
// would estimate n again: that doubles the work per join level.
func sideBaseRows(n Node, rows float64) float64 {
	switch n.(type) {
	case *ScanNode, *FilterNode, *ProjectNode, *SortNode, *LimitNode:
		return baseRows(n)
	}
	return rows
}

// groupRows estimates the distinct combinations of groups over in's rows:
// the product of their NDVs, each reduced for the rows that remain
// (Cardenas: d(1-(1-n/N)^(N/d))), capped at rows; rows*fallback when a
// group has no statistics.
func groupRows(in Node, groups []Expr, rows, fallback float64) float64 {
	est := 1.0
	for _, g := range groups {
		r, ok := g.(*ColRef)
		if !ok {
			return max(1, rows*fallback)
		}
		st := findStat(in, r.ID)
		if st == nil || st.NDV <= 0 {
			return max(1, rows*fallback)
		}
		d := st.NDV
		if n, total := rows, st.tableRows; total > 0 && n < total {
			d *= 1 - math.Pow(1-n/total, total/d)
		}
		est *= max(1, d)
		if est >= rows {
			return max(1, rows)
		}
	}
	return max(1, est)
}

// semiSel estimates the fraction of left rows a semi join keeps (an anti
// join the rest): min(1, ndv(right key)/ndv(left key)) for one key with
// statistics, one half otherwise.
func semiSel(n *JoinNode, l, r float64) float64 {
	s := 0.5
	if keys := conjuncts(n.Cond); len(keys) == 1 {
		if call, ok := keys[0].(*Call); ok && call.Fn == "equal" {
			a, b := call.Args[0], call.Args[1]
			if !subset(colsOf(a), n.Left.Columns()) {
				a, b = b, a
			}
			if da, db := ndv(n.Left, a, l), ndv(n.Right, b, r); da > 0 && db > 0 {
				s = min(1, db/da)
			}
		}
	}
	if n.Kind != SemiJoin {
		// Keep a floor: an anti join estimated empty would be joined first.
		s = max(0.1, 1-s)
	}
	return s
}
