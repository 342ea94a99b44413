package plan

import (
	"fmt"
	"strings"

	"github.com/flightd/flightd/exec"
)

// SharedCTE is a common table expression referenced more than once: its
// plan is bound and optimized once, and each execution computes it once
// into an exec.Spool that every reference replays (rule shared_cte).
// Referenced once, it is inlined instead, so filters still push into it.
type SharedCTE struct {
	Name      string
	Root      Node
	refs      int
	optimized bool
}

// CTEScanNode reads a shared CTE. Its columns are its own (one set per
// reference, so a CTE can be joined with itself); column i is column i of
// Shared.Root.
type CTEScanNode struct {
	Shared *SharedCTE
	Cols   []Column
}

func (n *CTEScanNode) Columns() []Column { return n.Cols }
func (n *CTEScanNode) Inputs() []Node    { return nil }
func (n *CTEScanNode) Rows() float64     { return n.Shared.Root.Rows() }

// cteReference binds a reference to a CTE: a CTEScanNode over the CTE's
// plan, bound at the first reference; with the rule off, a fresh plan per
// reference.
func (b *binder) cteReference(d *cteDef) Node {
	bind := func() Node {
		saved := b.ctes
		b.ctes = d.env
		n, _ := b.bindQuery(d.cte.Query, nil, nil)
		b.ctes = saved
		return n
	}
	if !b.enabled(ruleSharedCTE) {
		return bind()
	}
	if d.shared == nil {
		d.shared = &SharedCTE{Name: d.cte.Name, Root: bind()}
	}
	d.shared.refs++
	body := d.shared.Root.Columns()
	cols := make([]Column, len(body))
	for i, c := range body {
		cols[i] = b.newCol(c.Name, c.Type, c.Nullable)
	}
	return &CTEScanNode{Shared: d.shared, Cols: cols}
}

// resolveCTEs inlines CTEs referenced once (a projection renames the
// plan's columns to the reference's) and optimizes each shared CTE's plan
// once, on its own: rules do not cross a CTEScanNode.
func (b *binder) resolveCTEs(n Node) Node {
	s, ok := n.(*CTEScanNode)
	if !ok {
		for i, in := range n.Inputs() {
			setInput(n, i, b.resolveCTEs(in))
		}
		return n
	}
	sh := s.Shared
	if sh.refs > 1 {
		if !sh.optimized {
			sh.optimized = true
			sh.Root = b.optimize(sh.Root)
		}
		return s
	}
	body := b.resolveCTEs(sh.Root)
	exprs := make([]Expr, len(s.Cols))
	for i, c := range body.Columns() {
		exprs[i] = &ColRef{ID: c.ID, Name: c.Name, Typ: c.Type}
	}
	return &ProjectNode{Input: body, Exprs: exprs, Cols: s.Cols}
}

// cteScan builds a reader of the CTE's spool, creating the spool (and the
// CTE's operators) at the first reference of this execution.
func (bd *builder) cteScan(n *CTEScanNode) (exec.Operator, error) {
	bd.spools.mu.Lock()
	sp := bd.spools.m[n.Shared]
	bd.spools.mu.Unlock()
	if sp == nil {
		// The CTE's plan is a query of its own: not a stripe of a
		// gathered pipeline, not one bucket of a bucket join. It is
		// built without the lock: it may read other shared CTEs.
		sub := *bd
		sub.stripe, sub.stripes, sub.bucket, sub.shared = 0, 0, -1, nil
		op, err := sub.build(n.Shared.Root)
		if err != nil {
			return nil, err
		}
		bd.spools.mu.Lock()
		if sp = bd.spools.m[n.Shared]; sp == nil {
			sp = exec.NewSpool(bd.ec, op)
			bd.spools.m[n.Shared] = sp
		} else {
			_ = op.Close() // built concurrently by another reference
		}
		bd.spools.mu.Unlock()
	}
	return sp.Reader(), nil
}

// explainShared renders each shared CTE's plan once, after the plan that
// reads it.
func explainShared(sb *strings.Builder, root Node, line func(sb *strings.Builder, n Node, depth int)) {
	seen := map[*SharedCTE]bool{}
	var order []*SharedCTE
	var walk func(n Node)
	walk = func(n Node) {
		if s, ok := n.(*CTEScanNode); ok && !seen[s.Shared] {
			seen[s.Shared] = true
			order = append(order, s.Shared)
			walk(s.Shared.Root)
		}
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	walk(root)
	for i, sh := range order {
		fmt.Fprintf(sb, "CTE %s (computed once, read %d times):\n", cteLabel(sh, order[:i]), sh.refs)
		line(sb, sh.Root, 1)
	}
}

// cteLabel names a shared CTE; names repeat when nested queries reuse one.
func cteLabel(sh *SharedCTE, before []*SharedCTE) string {
	n := 1
	for _, o := range before {
		if o.Name == sh.Name {
			n++
		}
	}
	if n > 1 {
		return fmt.Sprintf("%s#%d", sh.Name, n)
	}
	return sh.Name
}
