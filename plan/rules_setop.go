package plan

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
			x.Left, x.Right = semiJoinSide(x.Left), semiJoinSide(x.Right)
		}
	case *DistinctNode:
		x.Input = semiJoinSide(x.Input)
	}
	return n
}

// semiJoinSide returns n, a projection of an inner join onto columns of
// one side, as a projection of that side semi-joined with the other, or n.
func semiJoinSide(n Node) Node {
	p, ok := n.(*ProjectNode)
	if !ok {
		return n
	}
	j, ok := p.Input.(*JoinNode)
	if !ok || j.Kind != InnerJoin || len(j.LeftKeys) == 0 || j.Residual != nil || j.Temporal || j.AsOf != nil {
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
