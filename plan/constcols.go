package plan

import "github.com/apache/arrow-go/v18/arrow"

// constCols returns the columns of n's output that hold one known non-NULL
// value in every row, from `column = constant` filters below, through
// projections, group keys and inner-join equalities. pushJoin uses them to
// filter the other side of an equi-join: in q78 the store side's year is
// 2000 (a filter on date_dim under its aggregation), so the web and catalog
// sides it left-joins on the year need only aggregate the year 2000.
func constCols(n Node) map[ColumnID]*Const {
	out := map[ColumnID]*Const{}
	addEqualities := func(e Expr) { addConstants(out, conjuncts(e)) }
	switch x := n.(type) {
	case *ScanNode:
		addEqualities(x.Filter)
	case *FilterNode:
		out = constCols(x.Input)
		addEqualities(x.Pred)
	case *ProjectNode:
		in := constCols(x.Input)
		for i, e := range x.Exprs {
			switch e := e.(type) {
			case *ColRef:
				if k, ok := in[e.ID]; ok {
					out[x.Cols[i].ID] = k
				}
			case *Const:
				if e.Value.IsValid() {
					out[x.Cols[i].ID] = e
				}
			}
		}
	case *AggNode:
		if x.Sets != nil { // a grouping set makes its other keys NULL
			break
		}
		in := constCols(x.Input)
		for i, g := range x.Groups {
			if ref, ok := g.(*ColRef); ok {
				if k, ok := in[ref.ID]; ok {
					out[x.GroupCols[i].ID] = k
				}
			}
		}
	case *SortNode:
		out = constCols(x.Input)
	case *LimitNode:
		out = constCols(x.Input)
	case *DistinctNode:
		out = constCols(x.Input)
	case *JoinNode:
		switch x.Kind {
		case InnerJoin:
			out = constCols(x.Left)
			for id, k := range constCols(x.Right) {
				out[id] = k
			}
			addEqualities(x.Cond)
			for _, c := range conjuncts(x.Cond) {
				if a, b, ok := colEqualsCol(c); ok {
					if k, ok := out[a.ID]; ok {
						out[b.ID] = k
					} else if k, ok := out[b.ID]; ok {
						out[a.ID] = k
					}
				}
			}
		case LeftJoin, SemiJoin, AntiJoin, AntiNullAwareJoin:
			out = constCols(x.Left)
		case RightJoin:
			out = constCols(x.Right)
		}
	}
	return out
}

// addConstants records the `column = constant` among preds in consts.
func addConstants(consts map[ColumnID]*Const, preds []Expr) {
	for _, p := range preds {
		if ref, k, ok := colEqualsConst(p); ok {
			consts[ref.ID] = k
		}
	}
}

// colEqualsConst matches `column = constant` (either order) with a
// non-NULL constant, given in the column's type.
func colEqualsConst(e Expr) (*ColRef, *Const, bool) {
	call, ok := e.(*Call)
	if !ok || call.Fn != "equal" {
		return nil, nil, false
	}
	ref, k, _ := colAndConst(call.Args[0], call.Args[1])
	if ref == nil {
		return nil, nil, false
	}
	if !arrow.TypeEqual(ref.Type(), k.Type()) {
		v, ok := losslessCast(k.Value, ref.Type())
		if !ok {
			return nil, nil, false
		}
		k = &Const{Value: v}
	}
	return ref, k, true
}

// colEqualsCol matches `column = column` of one type.
func colEqualsCol(e Expr) (*ColRef, *ColRef, bool) {
	call, ok := e.(*Call)
	if !ok || call.Fn != "equal" {
		return nil, nil, false
	}
	a, ok1 := call.Args[0].(*ColRef)
	b, ok2 := call.Args[1].(*ColRef)
	if !ok1 || !ok2 || !arrow.TypeEqual(a.Type(), b.Type()) {
		return nil, nil, false
	}
	return a, b, true
}
