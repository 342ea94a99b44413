package plan

// aggregateBeforeOneRow moves a grouped aggregation below a join with no
// condition whose other side gives exactly one row (a global aggregate:
// q23's best_ss_customer reads max_store_sales, one row, beside 2.75M
// store sales rows). The join repeated that row into every input row, and
// the aggregation took its MIN or MAX per group; aggregated first, the
// groups are joined to the one row instead. The aggregates that read the
// other side only must be MIN, MAX or ANY_VALUE without a FILTER: over the
// same value in every row of a group they are that value (the join gives
// no group without a row). With no groups or with grouping sets an empty
// input still gives a row, where MAX would be NULL: those stay.
func (b *binder) aggregateBeforeOneRow(a *AggNode) Node {
	j, ok := a.Input.(*JoinNode)
	if !ok || j.Kind != InnerJoin || len(j.LeftKeys) > 0 || j.Cond != nil || j.Residual != nil ||
		j.Temporal || j.AsOf != nil || len(a.Groups) == 0 || len(a.Sets) > 0 || a.GroupingID != nil {
		return nil
	}
	many, one := j.Left, j.Right
	if !oneRow(one) {
		many, one = j.Right, j.Left
		if !oneRow(one) {
			return nil
		}
	}
	manyCols, oneCols := many.Columns(), one.Columns()
	for _, g := range a.Groups {
		if !subset(colsOf(g), manyCols) {
			return nil
		}
	}
	inner := &AggNode{Input: many, Groups: a.Groups, GroupCols: a.GroupCols}
	exprs := make([]Expr, 0, len(a.Columns()))
	for _, c := range a.GroupCols {
		exprs = append(exprs, colRef(c))
	}
	for _, c := range a.Aggs {
		cols := colsOf(c.Filter)
		for _, e := range c.Args {
			for id := range colsOf(e) {
				cols[id] = true
			}
		}
		switch {
		case subset(cols, manyCols):
			inner.Aggs = append(inner.Aggs, c)
			exprs = append(exprs, colRef(c.Col))
		case len(c.Args) == 1 && c.Filter == nil && subset(cols, oneCols) &&
			(c.Fn == "min" || c.Fn == "max" || c.Fn == "any_value" || c.Fn == "arbitrary"):
			exprs = append(exprs, c.Args[0])
		default:
			return nil
		}
	}
	var first Node = inner
	if split := b.splitAggregate(inner); split != nil {
		first = split
	}
	join := &JoinNode{Kind: InnerJoin, Left: first, Right: one}
	if one == j.Left {
		join.Left, join.Right = one, first
	}
	return &ProjectNode{Input: join, Exprs: exprs, Cols: a.Columns()}
}
