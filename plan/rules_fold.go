package plan

import (
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// foldConstants (rule fold_constants) evaluates constant subexpressions
// once and simplifies AND/OR with a TRUE or FALSE side; in a batch query a
// filter left FALSE then empties what it reads.
func foldConstants(b *binder, root Node) Node {
	root = b.foldNode(root)
	if b.streamPos == nil { // a stream runs even when nothing passes
		root = pruneFalse(root)
	}
	return root
}

// pruneFalse replaces a filter that folded to FALSE or NULL, with all it
// reads, by an empty relation of its columns.
func pruneFalse(n Node) Node {
	for i, in := range n.Inputs() {
		setInput(n, i, pruneFalse(in))
	}
	var pred Expr
	switch x := n.(type) {
	case *FilterNode:
		pred = x.Pred
	case *ScanNode:
		pred = x.Filter
	}
	if c, ok := pred.(*Const); ok {
		if v, isBool := c.Value.(*scalar.Boolean); !c.Value.IsValid() || isBool && !v.Value {
			return &ValuesNode{Cols: n.Columns()}
		}
	}
	return n
}

func (b *binder) foldNode(n Node) Node {
	fold := func(e Expr) Expr {
		if e == nil {
			return nil
		}
		f, err := foldExpr(b.ctx, e, &b.folded)
		if err != nil {
			// Leave it to fail at run time with the executor's message
			// (e.g. division by zero in a branch never taken).
			return e
		}
		return f
	}
	foldAll := func(es []Expr) {
		for i := range es {
			es[i] = fold(es[i])
		}
	}
	for _, in := range n.Inputs() {
		_ = b.foldNode(in)
	}
	switch n := n.(type) {
	case *ScanNode:
		n.Filter = fold(n.Filter)
	case *ValuesNode:
		for _, r := range n.Values {
			foldAll(r)
		}
	case *FilterNode:
		n.Pred = fold(n.Pred)
	case *ProjectNode:
		foldAll(n.Exprs)
	case *JoinNode:
		n.Cond = fold(n.Cond)
	case *AggNode:
		foldAll(n.Groups)
		for i := range n.Aggs {
			foldAll(n.Aggs[i].Args)
			n.Aggs[i].Filter = fold(n.Aggs[i].Filter)
		}
	case *SortNode:
		for i := range n.Keys {
			n.Keys[i].Expr = fold(n.Keys[i].Expr)
		}
	}
	return n
}
