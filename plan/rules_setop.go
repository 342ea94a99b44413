package plan

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// semiJoinSetOps: INTERSECT and EXCEPT (without ALL) and DISTINCT compare
// rows as sets. An input that projects an inner join onto columns of one
// of its sides has the same set of rows as that side semi-joined with the
// other: q14's cross_items intersects (i_brand_id, i_class_id,
// i_category_id) of 1.66M store sales, 858K catalog and 432K web sales rows
// joined to item; semi-joined, each input is the 18K item rows with a
// sale. A volatile projection (random()) stays: per joined row it may give
// another value. So does a join estimated to give fewer rows than the semi
// join.
func semiJoinSetOps(n Node) Node {
	for i, in := range n.Inputs() {
		setInput(n, i, semiJoinSetOps(in))
	}
	switch x := n.(type) {
	case *SetOpNode:
		if !x.All && (x.Kind == Intersect || x.Kind == Except) {
			x.Left, x.Right = asSet(x.Left), asSet(x.Right)
		}
	case *DistinctNode:
		if !x.Partial {
			x.Input = asSet(x.Input)
		}
	}
	return n
}

// projectedEquiJoin returns n as a projection over an inner join on keys
// alone (no residual, not temporal), or nil.
func projectedEquiJoin(n Node) (*ProjectNode, *JoinNode) {
	p, ok := n.(*ProjectNode)
	if !ok {
		return nil, nil
	}
	j, ok := p.Input.(*JoinNode)
	if !ok || j.Kind != InnerJoin || len(j.LeftKeys) == 0 || j.Residual != nil || j.Temporal || j.AsOf != nil {
		return nil, nil
	}
	return p, j
}

// asSet rewrites n, whose rows count as a set, with a semi join
// (semiJoinSide) or else a distinct below its join (distinctBelowJoin).
func asSet(n Node) Node {
	if s := semiJoinSide(n); s != n {
		return s
	}
	return distinctBelowJoin(n)
}

// distinctBelowJoin returns n, a projection of an inner join whose rows
// count as a set, with the larger side (the fact side) first deduplicated
// on the columns the projection and the join keys read from it, or n. The
// join then carries the other side's strings to the distinct rows only:
// q38's 550K store sales rows by (customer, date) are 48K distinct pairs
// before customer's two names join them (the store branch 180 -> 105 ms).
// Correct for any multiplicity, as a set: a row repeated below the join
// gives only repeats above it. The sides' estimates cannot tell the
// reduction (sales of a ticket share customer and date), so the distinct
// is partial: it stops deduplicating when that does not pay
// (exec.NewPartialDistinct). Only where the other side gives a string:
// otherwise the join's output is as cheap as the distinct's.
func distinctBelowJoin(n Node) Node {
	p, j := projectedEquiJoin(n)
	if j == nil {
		return n
	}
	fact, factKeys, dim := j.Left, j.LeftKeys, j.Right
	if dim.Rows() > fact.Rows() {
		fact, factKeys, dim = j.Right, j.RightKeys, j.Left
	}
	if _, ok := fact.(*DistinctNode); ok || fact.Rows() < eagerMinRows {
		return n
	}
	dimCols := map[ColumnID]Column{}
	for _, c := range dim.Columns() {
		dimCols[c.ID] = c
	}
	need := map[ColumnID]bool{}
	wide := false
	for _, e := range append(slices.Clone(p.Exprs), factKeys...) {
		if callsVolatileExpr(e) {
			return n
		}
		for id := range colsOf(e) {
			c, ok := dimCols[id]
			if !ok {
				need[id] = true
				continue
			}
			_, fixed := c.Type.(arrow.FixedWidthDataType)
			wide = wide || !fixed
		}
	}
	if !wide {
		return n
	}
	pre := &ProjectNode{Input: fact}
	for _, c := range fact.Columns() {
		if need[c.ID] {
			pre.Exprs, pre.Cols = append(pre.Exprs, colRef(c)), append(pre.Cols, c)
		}
	}
	join := *j
	if fact == j.Left {
		join.Left = &DistinctNode{Input: pre, Partial: true}
	} else {
		join.Right = &DistinctNode{Input: pre, Partial: true}
	}
	return &ProjectNode{Input: &join, Exprs: p.Exprs, Cols: p.Cols}
}

// semiJoinSide returns n, a projection of an inner join onto columns of
// one side, as a projection of that side semi-joined with the other, or n.
func semiJoinSide(n Node) Node {
	p, j := projectedEquiJoin(n)
	if j == nil {
		return n
	}
	cols := map[ColumnID]bool{}
	for _, e := range p.Exprs {
		if callsVolatileExpr(e) {
			return n
		}
		for id := range colsOf(e) {
			cols[id] = true
		}
	}
	semi := &JoinNode{Kind: SemiJoin, Cond: j.Cond}
	switch {
	case subset(cols, j.Left.Columns()):
		semi.Left, semi.Right, semi.LeftKeys, semi.RightKeys = j.Left, j.Right, j.LeftKeys, j.RightKeys
	case subset(cols, j.Right.Columns()):
		semi.Left, semi.Right, semi.LeftKeys, semi.RightKeys = j.Right, j.Left, j.RightKeys, j.LeftKeys
	default:
		return n
	}
	if semi.Rows() > j.Rows() {
		// The estimates do not see the semi join pay (q54's customers
		// of 18 estimated sales rows would become 50K): the plan the
		// rules after this one choose from them stays.
		return n
	}
	return &ProjectNode{Input: semi, Exprs: p.Exprs, Cols: p.Cols}
}

// callsVolatileExpr reports whether e calls a volatile function.
func callsVolatileExpr(e Expr) bool {
	return anyExpr(e, func(x Expr) bool {
		c, ok := x.(*Call)
		return ok && volatile[c.Fn]
	})
}
