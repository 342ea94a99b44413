package plan

// splitJoinKeys (rule join_keys) puts the larger input of an inner join on
// the left (hash joins build their right input) when bySize, and splits
// each join condition into equality keys, one side's columns against the
// other's, and a residual.
func splitJoinKeys(n Node, bySize bool) Node {
	// Swapping a join's inputs and splitting its condition leave every
	// estimate as it was, so one estimator serves the whole pass.
	return splitKeys(n, bySize, estimator{})
}

func splitKeys(n Node, bySize bool, est estimator) Node {
	for i, in := range n.Inputs() {
		setInput(n, i, splitKeys(in, bySize, est))
	}
	j, ok := n.(*JoinNode)
	if !ok {
		return n
	}
	if bySize && j.Kind == InnerJoin && !j.Temporal && j.Cond != nil && est.rows(j.Right) > est.rows(j.Left)*2 {
		j.Left, j.Right = j.Right, j.Left
	}
	lc, rc := j.Left.Columns(), j.Right.Columns()
	j.LeftKeys, j.RightKeys, j.Residual = nil, nil, nil
	var residual []Expr
	for _, c := range conjuncts(j.Cond) {
		if call, ok := c.(*Call); ok && call.Fn == "equal" {
			a, b := call.Args[0], call.Args[1]
			ca, cb := colsOf(a), colsOf(b)
			// NOT IN needs its equality as a key even when one side is a
			// constant (DATE '2021-02-01' NOT IN (SELECT dt ...)).
			if len(ca) > 0 && len(cb) > 0 || j.Kind == AntiNullAwareJoin {
				if subset(ca, lc) && subset(cb, rc) {
					j.LeftKeys, j.RightKeys = append(j.LeftKeys, a), append(j.RightKeys, b)
					continue
				}
				if subset(ca, rc) && subset(cb, lc) {
					j.LeftKeys, j.RightKeys = append(j.LeftKeys, b), append(j.RightKeys, a)
					continue
				}
			}
		}
		residual = append(residual, c)
	}
	j.Residual = andAll(residual)
	return j
}
