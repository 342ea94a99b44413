package plan

import "slices"

// aggregateSubexpressions computes once, in a projection below an
// aggregation, a subexpression its aggregates' arguments repeat: q62's
// five CASE sums of shipping delays compare ws_ship_date_sk -
// ws_sold_date_sk nine times a row, and the subtractions were a tenth of
// its CPU. Only an expression every row computes anyway is moved (one of
// its occurrences is evaluated for every row: not only under a CASE arm, a
// later AND or OR operand, or an argument of a FILTERed aggregate), so the
// projection raises no error the aggregation would not have raised.
// Volatile expressions stay where they are: each occurrence is its own
// value.
func aggregateSubexpressions(b *binder, n Node) Node {
	for i, in := range n.Inputs() {
		setInput(n, i, aggregateSubexpressions(b, in))
	}
	a, ok := n.(*AggNode)
	if !ok {
		return n
	}
	seen := map[string]int{}
	sure := map[string]bool{}
	for _, c := range a.Aggs {
		for _, e := range c.Args {
			countRepeatable(e, seen)
			if c.Filter == nil {
				everyRow(e, sure)
			}
		}
		if c.Filter != nil {
			countRepeatable(c.Filter, seen)
			everyRow(c.Filter, sure)
		}
	}
	chosen := func(x Expr) bool {
		if !sizeAtMost(x, maxCommonSize) {
			return false
		}
		k := exprKey(x)
		return seen[k] >= 2 && sure[k]
	}
	if !slices.ContainsFunc(a.Aggs, func(c AggCall) bool {
		return slices.ContainsFunc(c.Args, func(e Expr) bool { return anyExpr(e, chosen) }) ||
			c.Filter != nil && anyExpr(c.Filter, chosen)
	}) {
		return n
	}
	proj := &ProjectNode{Input: a.Input}
	for _, c := range a.Input.Columns() {
		proj.Exprs, proj.Cols = append(proj.Exprs, colRef(c)), append(proj.Cols, c)
	}
	computed := map[string]*ColRef{}
	var hoist func(Expr) Expr
	hoist = func(x Expr) Expr {
		if !chosen(x) {
			return rebuild(x, hoist)
		}
		k := exprKey(x)
		if computed[k] == nil {
			col := b.newCol("common", x.Type(), true)
			proj.Exprs, proj.Cols = append(proj.Exprs, x), append(proj.Cols, col)
			computed[k] = colRef(col)
		}
		return computed[k]
	}
	a.Aggs = slices.Clone(a.Aggs)
	for i := range a.Aggs {
		c := &a.Aggs[i]
		c.Args = slices.Clone(c.Args)
		for j, e := range c.Args {
			c.Args[j] = hoist(e)
		}
		if c.Filter != nil {
			c.Filter = hoist(c.Filter)
		}
	}
	a.Input = proj
	return a
}

// maxCommonSize bounds the subexpressions the rule keys (exprKey is as
// long as the subtree): keying every node of a deep expression would cost
// its size squared.
const maxCommonSize = 32

// countRepeatable counts by exprKey the subexpressions of e worth
// computing once: calls, casts and CASEs without a volatile call.
func countRepeatable(e Expr, seen map[string]int) {
	walkExpr(e, func(x Expr) {
		switch x.(type) {
		case *Call, *Cast, *Case:
			if sizeAtMost(x, maxCommonSize) && keyed(x) && !callsVolatileExpr(x) {
				seen[exprKey(x)]++
			}
		}
	})
}

// keyed reports whether exprKey tells e from every other expression: it
// names other kinds of node (a subquery's) by their type only.
func keyed(e Expr) bool {
	return !anyExpr(e, func(x Expr) bool {
		switch x.(type) {
		case *Call, *Cast, *Case, *In, *ColRef, *Const, *ParamRef:
			return false
		}
		return true
	})
}

// everyRow marks the subexpressions of e evaluated for every row e is:
// the arguments of functions that read them all (everyArgFns), an AND's or OR's first operand, a
// CASE's first condition.
func everyRow(e Expr, sure map[string]bool) {
	if sizeAtMost(e, maxCommonSize) {
		sure[exprKey(e)] = true
	}
	switch x := e.(type) {
	case *Call:
		switch {
		case x.Fn == "and" || x.Fn == "or":
			everyRow(x.Args[0], sure)
		case everyArgFns[x.Fn]:
			for _, arg := range x.Args {
				everyRow(arg, sure)
			}
		}
	case *Cast:
		everyRow(x.X, sure)
	case *Case:
		if len(x.Whens) > 0 {
			everyRow(x.Whens[0].Cond, sure)
		}
	}
}

// everyArgFns evaluate all their arguments for every row.
var everyArgFns = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "negate": true,
	"equal": true, "not_equal": true, "less": true, "less_equal": true, "greater": true, "greater_equal": true,
	"not": true, "is_null": true, "is_not_null": true,
}
