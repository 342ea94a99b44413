package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/sql"
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
	// scans are its references; read marks the columns (by position)
	// that those whose plans pruned their columns read (noteRead).
	scans []*CTEScanNode
	read  map[*CTEScanNode][]bool
	// rows is Root's estimate once asked for (known), kept until a CTE's
	// plan changes (optimizeShared): a chain of CTEs each reading the one
	// before twice was estimated 2^n times over.
	rows  float64
	known bool
}

// noteRead records which of s's columns its plan needs.
func (sh *SharedCTE) noteRead(s *CTEScanNode, need map[ColumnID]bool) {
	if sh.read == nil {
		sh.read = map[*CTEScanNode][]bool{}
	}
	r := sh.read[s]
	if r == nil {
		r = make([]bool, len(s.Cols))
		sh.read[s] = r
	}
	for i, c := range s.Cols {
		r[i] = r[i] || need[c.ID]
	}
}

// pruneUnread drops the columns of the CTE that no reference reads, from
// its plan (a projection on top, which the CTE's own column pruning then
// pushes down) and from every reference: q95's ws_wh kept two warehouse
// columns of its 6.6M rows that neither reference reads. Only once every
// reference's plan has pruned its columns (rule prune_columns).
func (sh *SharedCTE) pruneUnread(root Node) Node {
	// The references noted must be exactly those bound: a reference not
	// pruned, or one not known, would keep the columns it has.
	if len(sh.read) != len(sh.scans) {
		return root
	}
	for _, s := range sh.scans {
		if sh.read[s] == nil {
			return root
		}
	}
	cols := root.Columns()
	keep := make([]bool, len(cols))
	n := 0
	for _, r := range sh.read {
		for i, ok := range r {
			if ok && !keep[i] {
				keep[i] = true
				n++
			}
		}
	}
	if n == len(cols) || n == 0 {
		return root
	}
	p := &ProjectNode{Input: root}
	exprs := make([]Expr, len(cols))
	for i, c := range cols {
		exprs[i] = colRef(c)
	}
	if q, ok := root.(*ProjectNode); ok {
		p.Input, exprs = q.Input, q.Exprs // narrowed, not stacked
	}
	for i, c := range cols {
		if keep[i] {
			p.Exprs, p.Cols = append(p.Exprs, exprs[i]), append(p.Cols, c)
		}
	}
	for _, s := range sh.scans {
		var kept []Column
		for i, c := range s.Cols {
			if keep[i] {
				kept = append(kept, c)
			}
		}
		s.Cols = kept
	}
	return p
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
func (n *CTEScanNode) Rows() float64 {
	if !n.Shared.known {
		n.Shared.rows, n.Shared.known = n.Shared.Root.Rows(), true
	}
	return n.Shared.rows
}

// cteReference binds a reference to a CTE: a CTEScanNode over the CTE's
// plan, bound at the first reference; with the rule off, a fresh plan per
// reference.
func (b *binder) cteReference(d *cteDef) Node {
	bind := func() Node {
		b.expand(d.cte.Pos, 0)
		saved := b.ctes
		b.ctes = d.env
		n, _ := b.bindQuery(d.cte.Query, nil, nil)
		b.ctes = saved
		return n
	}
	if !b.enabled(ruleSharedCTE) || d.unshared {
		return bind()
	}
	if d.shared == nil {
		root := bind()
		if b.streamPos != nil {
			d.unshared = true
			return root
		}
		d.shared = &SharedCTE{Name: d.cte.Name, Root: root}
	}
	d.shared.refs++
	body := d.shared.Root.Columns()
	cols := make([]Column, len(body))
	for i, c := range body {
		cols[i] = b.newCol(c.Name, c.Type, c.Nullable)
	}
	s := &CTEScanNode{Shared: d.shared, Cols: cols}
	d.shared.scans = append(d.shared.scans, s)
	return s
}

// resolveCTEs inlines CTEs referenced once (a projection renames the
// plan's columns to the reference's), so they are optimized with the
// query. Shared CTEs stay behind their CTEScanNodes: rules do not cross
// them, and optimizeShared plans each once.
func (b *binder) resolveCTEs(n Node) Node {
	s, ok := n.(*CTEScanNode)
	if !ok {
		for i, in := range n.Inputs() {
			setInput(n, i, b.resolveCTEs(in))
		}
		return n
	}
	if s.Shared.refs > 1 {
		return s
	}
	body := b.resolveCTEs(s.Shared.Root)
	exprs := make([]Expr, len(s.Cols))
	for i, c := range body.Columns() {
		exprs[i] = colRef(c)
	}
	return &ProjectNode{Input: body, Exprs: exprs, Cols: s.Cols}
}

// recordCTEFilters notes, for each CTEScanNode of a plan whose filters
// have been pushed down, the filter right above it (in the CTE's own
// columns), or that it has none. Every row a reference yields passes that
// filter, so the OR of all references' filters can filter the CTE itself.
func (b *binder) recordCTEFilters(n Node) {
	if f, ok := n.(*FilterNode); ok {
		if s, ok := f.Input.(*CTEScanNode); ok {
			b.addCTEFilter(s, f.Pred)
			return
		}
	}
	if s, ok := n.(*CTEScanNode); ok {
		b.addCTEFilter(s, nil)
		return
	}
	for _, in := range n.Inputs() {
		b.recordCTEFilters(in)
	}
}

func (b *binder) addCTEFilter(s *CTEScanNode, pred Expr) {
	sh := s.Shared
	if b.cteFilters == nil {
		b.cteFilters = map[*SharedCTE]*cteFilter{}
	}
	cf := b.cteFilters[sh]
	if cf == nil {
		cf = &cteFilter{}
		b.cteFilters[sh] = cf
	}
	cf.seen++
	if pred == nil {
		cf.unfiltered = true
		return
	}
	body := sh.Root.Columns()
	defs := map[ColumnID]Expr{}
	for i, c := range s.Cols {
		defs[c.ID] = colRef(body[i])
	}
	cf.preds = append(cf.preds, substitute(pred, defs))
}

// cteFilter collects the filters of a shared CTE's references.
type cteFilter struct {
	seen       int
	unfiltered bool // a reference reads every row
	preds      []Expr
}

// optimizeShared plans the shared CTEs of a statement once all their
// references are known: the OR of the references' filters goes on top of
// the CTE's plan first (so q31's three quarters of one year are computed,
// not every quarter of every year). Planning a CTE records the filters of
// the CTEs it reads, so this repeats until none is left.
func (b *binder) optimizeShared(root Node) {
	pending := sharedCTEs(root)
	for progress := true; progress; {
		progress = false
		for _, sh := range pending {
			if sh.optimized {
				continue
			}
			cf := b.cteFilters[sh]
			if cf == nil || cf.seen < sh.refs {
				continue // a reference inside a CTE not planned yet
			}
			b.planShared(sh, cf)
			forgetRows(pending)
			progress = true
		}
	}
	// References the walk could not see (another statement root): plan
	// without a filter.
	for _, sh := range pending {
		if !sh.optimized {
			b.planShared(sh, &cteFilter{unfiltered: true})
			forgetRows(pending)
		}
	}
}

// forgetRows drops the CTEs' estimates after one's plan changed: theirs
// may read it.
func forgetRows(ctes []*SharedCTE) {
	for _, sh := range ctes {
		sh.known = false
	}
}

func (b *binder) planShared(sh *SharedCTE, cf *cteFilter) {
	sh.optimized = true
	root := sh.Root
	if !cf.unfiltered && len(cf.preds) > 0 {
		root = &FilterNode{Input: root, Pred: orAll(cf.preds)}
	}
	sh.Root = b.optimize(sh.pruneUnread(root))
}

// cteScan builds a reader of the CTE's spool, creating the spool (and the
// CTE's operators) at the first reference of this execution.
func (bd *builder) cteScan(n *SpoolScan) (exec.Operator, error) {
	shared := n.Ref.Shared
	bd.spools.mu.Lock()
	sp := bd.spools.m[shared]
	bd.spools.mu.Unlock()
	if sp == nil {
		// The CTE's plan is a query of its own: not a stripe of a
		// gathered pipeline, not one bucket of a bucket join. It is
		// built without the lock: it may read other shared CTEs.
		sub := *bd
		sub.stripe, sub.stripes, sub.bucket, sub.shared = 0, 0, -1, nil
		op, err := sub.build(n.Body)
		if err != nil {
			return nil, err
		}
		bd.spools.mu.Lock()
		if sp = bd.spools.m[shared]; sp == nil {
			sp = exec.NewSpool(bd.ec, op)
			bd.spools.m[shared] = sp
		} else {
			_ = op.Close() // built concurrently by another reference
		}
		bd.spools.mu.Unlock()
	}
	return sp.Reader(), nil
}

// explainShared renders each shared CTE's logical plan once, after the
// plan that reads it.
func explainShared(sb *strings.Builder, root Node, line func(sb *strings.Builder, n Node, depth int)) {
	order := sharedCTEs(root)
	for i, sh := range order {
		fmt.Fprintf(sb, "CTE %s (computed once, read %d times):\n", cteLabel(sh, order[:i]), sh.refs)
		line(sb, sh.Root, 1)
	}
}

// explainSpools renders each shared CTE's physical plan once, after the
// plan that reads it.
func explainSpools(sb *strings.Builder, root PhysicalNode, line func(sb *strings.Builder, n PhysicalNode, depth int)) {
	var order []*SpoolScan
	seen := map[*SharedCTE]bool{}
	var walk func(n PhysicalNode)
	walk = func(n PhysicalNode) {
		if s, ok := n.(*SpoolScan); ok && !seen[s.Ref.Shared] {
			seen[s.Ref.Shared] = true
			order = append(order, s)
			walk(s.Body)
		}
		for _, in := range n.Children() {
			walk(in)
		}
	}
	walk(root)
	shared := make([]*SharedCTE, len(order))
	for i, s := range order {
		shared[i] = s.Ref.Shared
		fmt.Fprintf(sb, "CTE %s (computed once, read %d times):\n", cteLabel(s.Ref.Shared, shared[:i]), s.Ref.Shared.refs)
		line(sb, s.Body, 1)
	}
}

// sharedCTEs returns the shared CTEs root reads, directly or through other
// shared CTEs, each once, in the order a depth-first walk meets them.
func sharedCTEs(root Node) []*SharedCTE {
	seen := map[*SharedCTE]bool{}
	var out []*SharedCTE
	var walk func(n Node)
	walk = func(n Node) {
		if s, ok := n.(*CTEScanNode); ok && !seen[s.Shared] {
			seen[s.Shared] = true
			out = append(out, s.Shared)
			walk(s.Shared.Root)
		}
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	walk(root)
	return out
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

// derivedKey names a derived table by its text and the CTEs its names
// resolve against (the maps of b.ctes, innermost last).
type derivedKey struct{ text, env string }

// derivedTable binds a derived table (not LATERAL). One whose text the
// statement has again, in the same scope of CTEs, is read as a shared
// CTE, computed once for all its occurrences (rule shared_cte), as q65's
// two identical aggregations of store_sales: it reads no outer column
// (bindQuery gets no outer scope), so equal text gives equal rows. Those
// calling a volatile function (random()) are each computed, and so are
// those of a view's query (its names resolve in the view's database).
func (b *binder) derivedTable(f *sql.DerivedTable) Node {
	text := sql.Format(f.Query)
	if !b.repeated[text] || !b.enabled(ruleSharedCTE) || b.viewDB != "" || len(b.viewStack) > 0 {
		n, _ := b.bindQuery(f.Query, nil, nil)
		return n
	}
	d := b.scopedDef(&b.derived, text, func() *sql.CTE {
		name := f.Alias
		if name == "" {
			name = "(subquery)"
		}
		return &sql.CTE{Pos: f.Pos, Name: name, Query: f.Query}
	})
	return b.cteReference(d)
}

// scopedDef returns the definition *defs holds for text in the current
// scope of CTEs, made from cte() at the first ask.
func (b *binder) scopedDef(defs *map[derivedKey]*cteDef, text string, cte func() *sql.CTE) *cteDef {
	key := derivedKey{text: text}
	for _, m := range b.ctes {
		key.env += fmt.Sprintf("%p ", m)
	}
	d := (*defs)[key]
	if d == nil {
		if *defs == nil {
			*defs = map[derivedKey]*cteDef{}
		}
		d = &cteDef{cte: cte(), env: slices.Clone(b.ctes)}
		(*defs)[key] = d
	}
	return d
}

// repeatedDerived returns the text of the derived tables (not LATERAL, no
// volatile call) that stmt has more than once.
func repeatedDerived(stmt sql.Statement) map[string]bool {
	seen := map[string]int{}
	sql.Walk(stmt, func(n sql.Node) bool {
		if f, ok := n.(*sql.DerivedTable); ok && !f.Lateral && !callsVolatile(f.Query) {
			seen[sql.Format(f.Query)]++
		}
		return true
	})
	var out map[string]bool
	for text, n := range seen {
		if n > 1 {
			if out == nil {
				out = map[string]bool{}
			}
			out[text] = true
		}
	}
	return out
}

func callsVolatile(q *sql.Query) bool {
	found := false
	sql.Walk(q, func(n sql.Node) bool {
		if c, ok := n.(*sql.FuncCall); ok && volatile[c.Name] {
			found = true
		}
		return !found
	})
	return found
}
