package plan

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// Eager aggregation: an aggregation over an inner join whose aggregates
// read one side (the fact side) only and whose other side (the dimension)
// contributes group columns only is split in two: the fact side's rows are
// first aggregated by their join keys and own group columns, then joined,
// then the joined partial groups aggregated by the original groups. q04's
// sales rows each carried customer's seven strings through the join and
// into the group keys; aggregated first by (customer key, year) only the
// partial groups (one in sixteen rows) carry them.
//
// Correct for any join multiplicity: a dimension row matching a partial
// group stands for the same row matching every fact row of the group, and
// SUM, COUNT, MIN and MAX fold over partial results. Worth it only when the
// partial aggregation reduces the rows and the join keeps them: both are
// estimated. The product of the groups' NDVs bounds the partial groups from
// above, and sales rows come clustered (an order's lines share customer
// and date), so reductions run well above the estimate: q04's web sales,
// estimated 1.4x, reduce 13x; q23's 1.65M rows by item and date, estimated
// at no reduction, reduce 1.07x.
const eagerMinReduction = 1.25

// eagerMinRows: below it the fact side aggregates in a millisecond either
// way and the plan stays as written.
const eagerMinRows = 10000

func eagerAggregate(b *binder, n Node) Node {
	for i, in := range n.Inputs() {
		setInput(n, i, eagerAggregate(b, in))
	}
	if a, ok := n.(*AggNode); ok {
		if out := b.splitAggregate(a); out != nil {
			return out
		}
	}
	return n
}

// eagerFinal is the function folding partial results of each aggregate.
var eagerFinal = map[string]string{"sum": "sum", "count": "sum", "count_star": "sum", "min": "min", "max": "max"}

// splitAggregate returns a's eager form, or nil where it does not apply or
// is not estimated to pay.
func (b *binder) splitAggregate(a *AggNode) Node {
	j, ok := a.Input.(*JoinNode)
	if !ok || j.Kind != InnerJoin || j.Temporal || j.AsOf != nil || j.Residual != nil ||
		len(j.LeftKeys) == 0 || len(a.Sets) > 0 || a.GroupingID != nil || len(a.Groups) == 0 {
		return nil
	}
	aggCols := map[ColumnID]bool{}
	for _, c := range a.Aggs {
		if _, ok := eagerFinal[c.Fn]; !ok || c.Distinct {
			return nil
		}
		for _, e := range append(append([]Expr(nil), c.Args...), c.Filter) {
			for id := range colsOf(e) {
				aggCols[id] = true
			}
		}
	}
	fact, factKeys, dim := j.Left, j.LeftKeys, j.Right
	if !subset(aggCols, fact.Columns()) {
		fact, factKeys, dim = j.Right, j.RightKeys, j.Left
	}
	if len(aggCols) == 0 || !subset(aggCols, fact.Columns()) {
		return nil
	}
	factCols, dimCols := fact.Columns(), dim.Columns()
	var preGroups []Expr
	factGroup := make([]bool, len(a.Groups))
	wide := false
	for i, g := range a.Groups {
		cols := colsOf(g)
		switch {
		case len(cols) > 0 && subset(cols, factCols):
			factGroup[i] = true
			preGroups = append(preGroups, g)
		case subset(cols, dimCols):
			_, fixed := g.Type().(arrow.FixedWidthDataType)
			wide = wide || len(cols) > 0 && !fixed
		default:
			return nil
		}
	}
	if !wide || !b.eagerPays(j, fact, append(append([]Expr(nil), preGroups...), factKeys...)) {
		return nil
	}

	// The partial aggregation: the fact side's groups, its join keys, and
	// one partial result per aggregate.
	pre := &AggNode{Input: fact}
	refs := map[Expr]*ColRef{}
	group := func(e Expr) *ColRef {
		if r, ok := refs[e]; ok {
			return r
		}
		name := "eager_group"
		if r, ok := e.(*ColRef); ok {
			name = r.Name
		}
		c := b.newCol(name, e.Type(), true)
		pre.Groups, pre.GroupCols = append(pre.Groups, e), append(pre.GroupCols, c)
		refs[e] = colRef(c)
		return refs[e]
	}
	for _, g := range preGroups {
		group(g)
	}
	newKeys := make([]Expr, len(factKeys))
	for i, k := range factKeys {
		newKeys[i] = group(k)
	}
	final := &AggNode{GroupCols: a.GroupCols, Groups: make([]Expr, len(a.Groups))}
	outExprs := make([]Expr, 0, len(a.Columns()))
	for i, g := range a.Groups {
		final.Groups[i] = g
		if factGroup[i] {
			final.Groups[i] = group(g)
		}
		outExprs = append(outExprs, colRef(a.GroupCols[i]))
	}
	project := false
	for _, c := range a.Aggs {
		part := c
		part.Col = b.newCol("eager_"+c.Fn, c.Col.Type, true)
		pre.Aggs = append(pre.Aggs, part)
		fn := eagerFinal[c.Fn]
		typ, err := resolveAggregate(fn, []arrow.DataType{part.Col.Type})
		if err != nil {
			return nil
		}
		col := c.Col
		if !arrow.TypeEqual(typ, c.Col.Type) {
			// SUM widens a decimal: the final sum is cast back to the
			// type the original had (its value fits it as the original's
			// did).
			col = b.newCol(c.Col.Name, typ, true)
			project = true
		}
		final.Aggs = append(final.Aggs, AggCall{Fn: fn, Args: []Expr{colRef(part.Col)}, Col: col})
		if col.ID == c.Col.ID {
			outExprs = append(outExprs, colRef(col))
		} else {
			outExprs = append(outExprs, &Cast{X: colRef(col), Typ: c.Col.Type})
		}
	}

	join := &JoinNode{Kind: InnerJoin, Left: j.Left, Right: j.Right, LeftKeys: j.LeftKeys, RightKeys: j.RightKeys}
	if fact == j.Left {
		join.Left, join.LeftKeys = pre, newKeys
	} else {
		join.Right, join.RightKeys = pre, newKeys
	}
	conds := make([]Expr, len(newKeys))
	for i := range newKeys {
		conds[i] = &Call{Fn: "equal", Args: []Expr{join.LeftKeys[i], join.RightKeys[i]}, Typ: arrow.FixedWidthTypes.Boolean}
	}
	join.Cond = andAll(conds)
	final.Input = join
	if !project {
		return final
	}
	return &ProjectNode{Input: final, Exprs: outExprs, Cols: a.Columns()}
}

// eagerPays estimates whether aggregating fact by groups first reduces its
// rows eagerMinReduction-fold and the join keeps most of them (a join that
// drops most fact rows would be better run first).
func (b *binder) eagerPays(j *JoinNode, fact Node, groups []Expr) bool {
	rows := fact.Rows()
	if rows < eagerMinRows || j.Rows() < rows/2 {
		return false
	}
	est := 1.0
	for _, g := range groups {
		d := filteredNDV(fact, g, rows)
		if d <= 0 {
			return false
		}
		est *= d
	}
	return est*eagerMinReduction <= rows
}

// filteredNDV estimates the distinct values of e over rows of n: a column
// its scan filters keeps the filter's fraction of its values (d_year of the
// two years asked for), any other the values rows draws from its table
// (Cardenas); an expression has at most the product of its columns'. 0
// when unknown.
func filteredNDV(n Node, e Expr, rows float64) float64 {
	r, ok := e.(*ColRef)
	if !ok {
		d := 1.0
		for id := range colsOf(e) {
			d *= filteredNDV(n, &ColRef{ID: id}, rows)
		}
		return min(d, rows)
	}
	st := findStat(n, r.ID)
	if st == nil || st.NDV <= 0 {
		return 0
	}
	d := st.NDV
	if s := scanOf(n, r.ID); s != nil && s.Filter != nil && colsOf(s.Filter)[r.ID] {
		return max(1, d*min(1, s.Rows()/max(1, s.TableRows)))
	}
	if total := st.tableRows; total > 0 && rows < total {
		d *= 1 - math.Pow(1-rows/total, total/d)
	}
	return max(1, min(d, rows))
}

// scanOf returns the scan in n that outputs column id, or nil.
func scanOf(n Node, id ColumnID) *ScanNode {
	if s, ok := n.(*ScanNode); ok {
		for _, c := range s.Cols {
			if c.ID == id {
				return s
			}
		}
		return nil
	}
	for _, in := range n.Inputs() {
		if s := scanOf(in, id); s != nil {
			return s
		}
	}
	return nil
}
