package plan

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// scopeCol is a name visible to expressions.
type scopeCol struct {
	qual   string
	name   string
	col    Column
	hidden bool // the right side of USING: only reachable qualified
}

// scope resolves column names; parent is the enclosing query's scope for
// correlated subqueries.
type scope struct {
	cols   []scopeCol
	parent *scope
}

func newScope(cols []Column, qual string) *scope {
	s := &scope{}
	for _, c := range cols {
		s.cols = append(s.cols, scopeCol{qual: qual, name: c.Name, col: c})
	}
	return s
}

func (s *scope) ids() map[ColumnID]bool {
	out := map[ColumnID]bool{}
	for p := s; p != nil; p = p.parent {
		for _, c := range p.cols {
			out[c.col.ID] = true
		}
	}
	return out
}

// lookup resolves a column reference in s and then in enclosing scopes.
func (b *binder) lookup(s *scope, id *sql.Ident) *ColRef {
	parts := id.Parts
	if len(parts) > 3 {
		b.fail(id.Pos, "column reference %s has too many parts", sql.Format(id))
	}
	name := parts[len(parts)-1]
	qual := ""
	if len(parts) >= 2 {
		qual = parts[len(parts)-2]
	}
	// Unquoted names are lowercased, so a column with capitals
	// (Nexmark's dateTime) is found case-insensitively when no name
	// matches exactly and only one column does.
	for sc := s; sc != nil; sc = sc.parent {
		for _, same := range []func(string) bool{
			func(n string) bool { return n == name },
			func(n string) bool { return strings.EqualFold(n, name) },
		} {
			var found *scopeCol
			for i := range sc.cols {
				c := &sc.cols[i]
				if !same(c.name) || qual != "" && c.qual != qual || qual == "" && c.hidden {
					continue
				}
				if found != nil && found.col.ID != c.col.ID {
					b.fail(id.Pos, "column reference %q is ambiguous (in %s and %s)", name, orDerived(found.qual), orDerived(c.qual))
				}
				found = c
			}
			if found != nil {
				return &ColRef{ID: found.col.ID, Name: found.name, Typ: found.col.Type}
			}
		}
	}
	var names []string
	for sc := s; sc != nil; sc = sc.parent {
		for _, c := range sc.cols {
			if !c.hidden && (qual == "" || c.qual == qual) {
				names = append(names, c.name)
			}
		}
	}
	hint := didYouMean(name, names)
	if qual != "" {
		if !s.hasQual(qual) {
			b.fail(id.Pos, "column %s: table %q not found in FROM", sql.Format(id), qual)
		}
		b.fail(id.Pos, "column %q not found in table %s%s", name, qual, hint)
	}
	if q := s.singleQual(); q != "" {
		b.fail(id.Pos, "column %q not found in table %s%s", name, q, hint)
	}
	b.fail(id.Pos, "column %q not found%s", name, hint)
	return nil
}

// didYouMean suggests the closest candidate within a small edit distance.
func didYouMean(name string, candidates []string) string {
	best, bestD := "", len(name)/3+2
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestD && c != name {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func orDerived(q string) string {
	if q == "" {
		return "a derived table"
	}
	return q
}

func (s *scope) hasQual(q string) bool {
	for sc := s; sc != nil; sc = sc.parent {
		for _, c := range sc.cols {
			if c.qual == q {
				return true
			}
		}
	}
	return false
}

func (s *scope) singleQual() string {
	q := ""
	for _, c := range s.cols {
		if q != "" && c.qual != q {
			return ""
		}
		q = c.qual
	}
	return q
}

// ---- queries

// bindQuery binds a query. outer is the scope of an enclosing query (for
// correlated and LATERAL subqueries); hints are expected column types
// (INSERT targets) that decide parameter and NULL types.
func (b *binder) bindQuery(q *sql.Query, outer *scope, hints []arrow.DataType) (Node, *corrResult) {
	if q.Recursive {
		b.notImplemented(q.Pos, "WITH RECURSIVE")
	}
	if len(q.With) > 0 {
		level := map[string]*cteDef{}
		b.ctes = append(b.ctes, level)
		defer func() { b.ctes = b.ctes[:len(b.ctes)-1] }()
		for _, c := range q.With {
			if level[c.Name] != nil {
				b.fail(c.Pos, "WITH query %q defined twice", c.Name)
			}
			// A CTE body sees the enclosing CTEs and those before it in
			// this WITH, not itself (no recursive CTEs).
			env := append(slices.Clone(b.ctes[:len(b.ctes)-1]), maps.Clone(level))
			level[c.Name] = &cteDef{cte: c, env: env}
		}
	}
	var node Node
	var corr *corrResult
	if sel, ok := q.Body.(*sql.Select); ok {
		node, corr = b.bindSelect(sel, outer, q.OrderBy, hints, outer != nil)
	} else if pq, ok := q.Body.(*sql.ParenQuery); ok && len(q.OrderBy) == 0 {
		// ((SELECT ...)): the same query, correlation included.
		node, corr = b.bindQuery(pq.Query, outer, hints)
	} else {
		node = b.bindSetExpr(q.Body, outer, hints)
		if len(q.OrderBy) > 0 {
			node = b.orderByOutputs(node, q.OrderBy)
		}
	}
	if q.Limit != nil || q.Offset != nil {
		ln := &LimitNode{Input: node}
		if q.Limit != nil {
			ln.Count = b.limitValue(q.Limit, "LIMIT")
		}
		if q.Offset != nil {
			ln.Offset = b.limitValue(q.Offset, "OFFSET")
		}
		if corr != nil && len(corr.pulled) > 0 {
			b.notImplemented(q.Limit.Position(), "LIMIT in a correlated subquery")
		}
		node = ln
	}
	return node, corr
}

// intParam binds a parameter whose value must be an integer: a BIGINT,
// unless another use gave it a type first.
func (b *binder) intParam(e *sql.Param) Expr {
	p := b.param(e)
	if p.slot.typ == nil {
		p.slot.typ = arrow.PrimitiveTypes.Int64
	}
	if p.slot.typ.ID() != arrow.INT64 {
		return &Cast{X: p, Typ: arrow.PrimitiveTypes.Int64}
	}
	return p
}

func (b *binder) limitValue(e sql.Expr, what string) Expr {
	if p, ok := e.(*sql.Param); ok {
		return b.intParam(p)
	}
	c := b.constExpr(e, arrow.PrimitiveTypes.Int64)
	if v, ok := constInt(c); !ok || v < 0 {
		b.fail(e.Position(), "%s must be a non-negative integer", what)
	}
	return c
}

func (b *binder) bindSetExpr(e sql.SetExpr, outer *scope, hints []arrow.DataType) Node {
	switch e := e.(type) {
	case *sql.Select:
		n, corr := b.bindSelect(e, outer, nil, hints, false)
		_ = corr
		return n
	case *sql.Values:
		return b.bindValues(e, hints)
	case *sql.ParenQuery:
		n, _ := b.bindQuery(e.Query, outer, hints)
		return n
	case *sql.SetOp:
		return b.bindSetOp(e, outer, hints)
	}
	b.fail(e.Position(), "unsupported query %T", e)
	return nil
}

func (b *binder) bindSetOp(e *sql.SetOp, outer *scope, hints []arrow.DataType) Node {
	l := b.bindSetExpr(e.Left, outer, hints)
	r := b.bindSetExpr(e.Right, outer, hints)
	lc, rc := l.Columns(), r.Columns()
	if len(lc) != len(rc) {
		b.fail(e.Pos, "each %s query must have the same number of columns: %d versus %d", e.Op, len(lc), len(rc))
	}
	types := make([]arrow.DataType, len(lc))
	for i := range lc {
		t, ok := commonType(lc[i].Type, rc[i].Type)
		if !ok {
			b.fail(e.Pos, "%s column %d (%s) has types %s and %s with no common type", e.Op, i+1, lc[i].Name, SQLTypeName(lc[i].Type), SQLTypeName(rc[i].Type))
		}
		types[i] = t
	}
	cols := make([]Column, len(lc))
	for i := range lc {
		cols[i] = b.newCol(lc[i].Name, types[i], lc[i].Nullable || rc[i].Nullable)
	}
	kind := map[string]SetOpKind{"UNION": Union, "INTERSECT": Intersect, "EXCEPT": Except}[e.Op]
	var n Node = &SetOpNode{Kind: kind, All: e.All, Left: b.castCols(l, types, e.Pos), Right: b.castCols(r, types, e.Pos), Cols: cols}
	return n
}

// castCols projects n to the given column types (no-op when they match).
func (b *binder) castCols(n Node, types []arrow.DataType, pos sql.Pos) Node {
	cols := n.Columns()
	same := true
	for i, c := range cols {
		same = same && arrow.TypeEqual(c.Type, types[i])
	}
	if same {
		return n
	}
	exprs := make([]Expr, len(cols))
	out := make([]Column, len(cols))
	for i, c := range cols {
		exprs[i] = b.castTo(colRef(c), types[i], pos)
		out[i] = b.newCol(c.Name, types[i], c.Nullable)
	}
	return &ProjectNode{Input: n, Exprs: exprs, Cols: out}
}

// checkColumnCount refuses a select list or VALUES row of more than
// tablestore.MaxColumns columns, as soon as it passes the bound.
func (b *binder) checkColumnCount(pos sql.Pos, what string, n int) {
	if err := tablestore.CheckColumnCount(what, n); err != nil {
		b.failState(stateTooManyColumns, pos, "%v", err)
	}
}

func (b *binder) bindValues(v *sql.Values, hints []arrow.DataType) Node {
	width := len(v.Rows[0])
	b.checkColumnCount(v.Pos, "a VALUES row", width)
	rows := make([][]Expr, len(v.Rows))
	sc := &scope{}
	for i, r := range v.Rows {
		if len(r) != width {
			b.fail(r[0].Position(), "VALUES rows must have the same length: row 1 has %d values, row %d has %d", width, i+1, len(r))
		}
		rows[i] = make([]Expr, width)
		for j, e := range r {
			var hint arrow.DataType
			if j < len(hints) {
				hint = hints[j]
			}
			var dummy Node = &ValuesNode{}
			x := b.settle(b.bindScalar(e, sc, &dummy, withHint(hint)))
			if dummy.(*ValuesNode).Cols != nil {
				b.notImplemented(e.Position(), "a subquery in VALUES")
			}
			rows[i][j] = x
		}
	}
	cols := make([]Column, width)
	for j := 0; j < width; j++ {
		var t arrow.DataType
		for i := range rows {
			et := rows[i][j].Type()
			if t == nil {
				t = et
				continue
			}
			ct, ok := commonType(t, et)
			if !ok {
				b.fail(v.Rows[i][j].Position(), "VALUES column %d mixes types %s and %s", j+1, SQLTypeName(t), SQLTypeName(et))
			}
			t = ct
		}
		if t.ID() == arrow.NULL {
			if j < len(hints) && hints[j] != nil {
				t = hints[j]
			} else {
				t = arrow.BinaryTypes.String
			}
		}
		for i := range rows {
			rows[i][j] = b.castTo(rows[i][j], t, v.Rows[i][j].Position())
		}
		// Any expression may yield NULL (nullif, casts): always nullable.
		cols[j] = b.newCol(fmt.Sprintf("column%d", j+1), t, true)
	}
	return &ValuesNode{Values: rows, Cols: cols}
}

// ---- SELECT

// corrResult describes a correlated subquery: the predicates pulled out of
// its WHERE (over its columns and the outer query's) and the inner columns
// those need, appended to its output.
type corrResult struct {
	pulled []Expr
	inner  []Column
	agg    bool
	// scalarAgg: aggregates without GROUP BY, which yield exactly one row
	// for every outer row (having: filtered by HAVING).
	scalarAgg, having bool
	// apply: a scalar aggregate whose correlation is not inner_column =
	// outer_expression; it is not grouped by inner columns (inner is
	// empty) and only a scalar subquery can decorrelate it
	// (applyAggs).
	apply bool
}

// existsConst decides EXISTS over a correlated aggregate without GROUP BY:
// it always has one row, so EXISTS is TRUE. ok is false when it cannot be
// decided this way.
func (b *binder) existsConst(corr *corrResult, pos sql.Pos) (value, ok bool) {
	if !corr.agg || !corr.scalarAgg {
		return false, false
	}
	if corr.having {
		b.notImplemented(pos, "EXISTS over a correlated aggregate with HAVING and no GROUP BY")
	}
	return true, true
}

// selectBinding carries the state of binding one SELECT.
type selectBinding struct {
	sel      *sql.Select
	input    Node   // FROM + WHERE
	sc       *scope // FROM scope
	post     Node   // above aggregation / windows: where select items are computed
	grouping *groupInfo
	aggKeys  map[string]Column
	winKeys  map[string]Column
}

type groupInfo struct {
	keys  map[string]Column // exprKey of group expression -> output column
	exprs []Expr
	gid   *Column
	// position of each group expression in the grouping id bits
	index map[string]int
}

func (b *binder) bindSelect(sel *sql.Select, outer *scope, orderBy []*sql.OrderItem, hints []arrow.DataType, correlated bool) (Node, *corrResult) {
	checkCtx(b.ctx)
	sel = b.rewriteGroupWindow(sel)
	sb := &selectBinding{sel: sel}
	var node Node
	sc := &scope{parent: outer}
	if len(sel.From) == 0 {
		c := b.newCol("dummy", arrow.FixedWidthTypes.Boolean, false)
		node = &ValuesNode{Values: [][]Expr{{&Const{Value: boolScalar(true)}}}, Cols: []Column{c}}
	} else {
		for i, f := range sel.From {
			if u, ok := f.(*sql.Unnest); ok && i > 0 {
				var s *scope
				node, s = b.bindUnnest(u, node, sc, false)
				sc.cols = append(sc.cols, s.cols...)
				continue
			}
			n, s := b.bindFrom(f, outer, sc)
			conds := b.takeLateral()
			if i == 0 {
				if len(conds) > 0 {
					b.fail(f.Position(), "LATERAL needs a FROM item to its left")
				}
				node = n
			} else {
				node = &JoinNode{Kind: InnerJoin, Left: node, Right: n, Cond: andAll(conds)}
			}
			sc.cols = append(sc.cols, s.cols...)
		}
	}
	var corr *corrResult
	if correlated {
		corr = &corrResult{}
	}
	if sel.Where != nil {
		node = b.bindWhere(sel.Where, sc, node, corr)
	}
	sb.input, sb.sc = node, sc

	// Aggregation.
	aggCalls := collectCalls(sel, orderBy, true)
	hasAgg := len(sel.GroupBy) > 0 || len(aggCalls) > 0 || sel.Having != nil
	sb.post = node
	if hasAgg {
		b.bindAggregation(sb, aggCalls, corr)
	} else if corr != nil {
		corr.inner = innerCols(corr.pulled, sc)
	}
	// Window functions.
	if wins := collectCalls(sel, orderBy, false); len(wins) > 0 {
		b.bindWindows(sb, wins)
	}
	if sel.Having != nil {
		pred := b.bindPost(sb, sel.Having, nil, "HAVING")
		if pred.Type().ID() != arrow.BOOL {
			b.fail(sel.Having.Position(), "HAVING must be boolean, got %s", SQLTypeName(pred.Type()))
		}
		sb.post = &FilterNode{Input: sb.post, Pred: pred}
	}

	// Select list.
	var exprs []Expr
	var cols []Column
	for i, it := range sel.Items {
		if st, ok := it.Expr.(*sql.Star); ok {
			n := 0
			for _, c := range sc.cols {
				if c.hidden || st.Qualifier != nil && c.qual != st.Qualifier[len(st.Qualifier)-1] {
					continue
				}
				var e Expr = &ColRef{ID: c.col.ID, Name: c.name, Typ: c.col.Type}
				nullable := c.col.Nullable
				if hasAgg {
					// As in Calcite and Postgres: allowed when every column is grouped.
					e, nullable = b.rewriteGrouped(sb, e, st), true
				}
				exprs = append(exprs, e)
				cols = append(cols, b.newCol(c.name, e.Type(), nullable))
				n++
			}
			if n == 0 {
				b.fail(st.Pos, "%s matches no columns", sql.Format(st))
			}
			b.checkColumnCount(st.Pos, "the select list", len(exprs))
			continue
		}
		b.checkColumnCount(it.Expr.Position(), "the select list", len(exprs)+1)
		var hint arrow.DataType
		if i < len(hints) {
			hint = hints[i]
		}
		e := b.settle(b.bindPost(sb, it.Expr, hint, ""))
		name := it.Alias
		if name == "" {
			name = deriveName(it.Expr, i)
		}
		exprs = append(exprs, e)
		cols = append(cols, b.newCol(name, e.Type(), true))
	}
	visible := len(exprs)
	// ORDER BY keys: output ordinal, output alias, or an expression
	// (appended as a hidden output when not already selected).
	var keys []SortKey
	for _, o := range orderBy {
		idx := -1
		if lit, ok := o.Expr.(*sql.Literal); ok && lit.Kind == sql.LitNumber {
			n, err := parseOrdinal(lit.Value)
			if err != nil || n < 1 || n > visible {
				b.fail(lit.Pos, "ORDER BY position %s is not in the select list (1..%d)", lit.Value, visible)
			}
			idx = n - 1
		} else if id, ok := o.Expr.(*sql.Ident); ok && len(id.Parts) == 1 {
			for i := 0; i < visible; i++ {
				if cols[i].Name == id.Parts[0] {
					if idx >= 0 && exprKey(exprs[idx]) != exprKey(exprs[i]) {
						b.fail(id.Pos, "ORDER BY %q is ambiguous", id.Parts[0])
					}
					if idx < 0 {
						idx = i
					}
				}
			}
		}
		if idx < 0 {
			e := b.settle(b.bindPost(sb, o.Expr, nil, ""))
			k := exprKey(e)
			for i, x := range exprs {
				if exprKey(x) == k {
					idx = i
					break
				}
			}
			if idx < 0 {
				if sel.Distinct {
					b.fail(o.Pos, "for SELECT DISTINCT, ORDER BY expressions must appear in the select list")
				}
				exprs = append(exprs, e)
				cols = append(cols, b.newCol(fmt.Sprintf("_order%d", len(exprs)), e.Type(), true))
				idx = len(exprs) - 1
			}
		}
		keys = append(keys, sortKey(o, colRef(cols[idx])))
	}
	// Correlated inner columns ride along so the outer join can use them.
	if corr != nil {
		for _, c := range corr.inner {
			exprs = append(exprs, colRef(c))
			cols = append(cols, c)
		}
	}
	var out Node = &ProjectNode{Input: sb.post, Exprs: exprs, Cols: cols}
	if sel.Distinct {
		if corr != nil && len(corr.pulled) > 0 {
			b.notImplemented(sel.Pos, "DISTINCT in a correlated subquery")
		}
		out = &DistinctNode{Input: out}
	}
	if len(keys) > 0 {
		out = &SortNode{Input: out, Keys: keys}
	}
	if len(exprs) > visible && (corr == nil || len(exprs) > visible+len(corr.inner)) {
		keep := cols[:visible:visible]
		if corr != nil {
			keep = append(keep, corr.inner...)
		}
		out = b.project(out, keep)
	}
	return out, corr
}

func parseOrdinal(s string) (int, error) {
	var n int
	_, err := fmt.Sscanf(s, "%d", &n)
	if err == nil && fmt.Sprint(n) != s {
		err = fmt.Errorf("not an integer")
	}
	return n, err
}

func sortKey(o *sql.OrderItem, e Expr) SortKey {
	k := SortKey{Expr: e, Desc: o.Desc, NullsFirst: defaultNullsFirst(o.Desc)}
	if o.NullsFirst != nil {
		k.NullsFirst = *o.NullsFirst
	}
	return k
}

// defaultNullsFirst is Flink's default NULL order: NULLs sort as the
// smallest value, first ascending and last descending (PostgreSQL's is
// the opposite).
func defaultNullsFirst(desc bool) bool { return !desc }

// orderByOutputs sorts a set operation's result by output ordinal or name.
func (b *binder) orderByOutputs(n Node, items []*sql.OrderItem) Node {
	cols := n.Columns()
	sc := newScope(cols, "")
	var keys []SortKey
	for _, o := range items {
		var e Expr
		if lit, ok := o.Expr.(*sql.Literal); ok && lit.Kind == sql.LitNumber {
			i, err := parseOrdinal(lit.Value)
			if err != nil || i < 1 || i > len(cols) {
				b.fail(lit.Pos, "ORDER BY position %s is not in the select list (1..%d)", lit.Value, len(cols))
			}
			c := cols[i-1]
			e = colRef(c)
		} else {
			var dummy Node = n
			e = b.settle(b.bindScalar(o.Expr, sc, &dummy, exprOpts{noAgg: "ORDER BY of a set operation"}))
			if dummy != n {
				b.notImplemented(o.Pos, "a subquery in ORDER BY of a set operation")
			}
		}
		keys = append(keys, sortKey(o, e))
	}
	return &SortNode{Input: n, Keys: keys}
}

func deriveName(e sql.Expr, i int) string {
	switch e := e.(type) {
	case *sql.Ident:
		return e.Parts[len(e.Parts)-1]
	case *sql.FuncCall:
		return e.Name
	case *sql.Cast:
		return deriveName(e.X, i)
	}
	return fmt.Sprintf("EXPR$%d", i)
}

// keyCorrelated reports whether every condition is inner_column =
// outer_expression (either way round, the column possibly cast). Grouping or
// DISTINCT on those inner columns then leaves at most one match per outer
// row, which decorrelation into joins relies on.
func keyCorrelated(conds []Expr, outer map[ColumnID]bool) bool {
	for _, p := range conds {
		c, ok := p.(*Call)
		if !ok || c.Fn != "equal" {
			return false
		}
		if !innerKeyVsOuter(c.Args[0], c.Args[1], outer) && !innerKeyVsOuter(c.Args[1], c.Args[0], outer) {
			return false
		}
	}
	return true
}

func innerKeyVsOuter(inner, other Expr, outer map[ColumnID]bool) bool {
	if c, ok := inner.(*Cast); ok {
		inner = c.X
	}
	ref, ok := inner.(*ColRef)
	if !ok || outer[ref.ID] {
		return false
	}
	for id := range colsOf(other) {
		if !outer[id] {
			return false
		}
	}
	return true
}

// innerCols lists the columns of sc that pulled predicates read.
func innerCols(pulled []Expr, sc *scope) []Column {
	var out []Column
	seen := map[ColumnID]bool{}
	for _, p := range pulled {
		for id := range colsOf(p) {
			for _, c := range sc.cols {
				if c.col.ID == id && !seen[id] {
					seen[id] = true
					out = append(out, c.col)
				}
			}
		}
	}
	return out
}

// bindWhere binds a WHERE clause. Top-level [NOT] EXISTS and [NOT] IN
// subqueries become semi and anti joins; with corr set, conjuncts that read
// the outer query are pulled out for decorrelation.
func (b *binder) bindWhere(where sql.Expr, sc *scope, node Node, corr *corrResult) Node {
	var filters []Expr
	var outerIDs map[ColumnID]bool
	if corr != nil {
		outerIDs = sc.parent.ids()
	}
	for _, c := range splitAnd(where) {
		if n, ok := b.trySemiJoin(c, sc, node); ok {
			node = n
			continue
		}
		for _, e := range factorOr(b.bindPredicate(c, sc, &node, "WHERE")) {
			if corr != nil {
				outer := false
				for id := range colsOf(e) {
					outer = outer || outerIDs[id]
				}
				if outer {
					corr.pulled = append(corr.pulled, e)
					continue
				}
			}
			filters = append(filters, e)
		}
	}
	if len(filters) > 0 {
		node = &FilterNode{Input: node, Pred: andAll(filters)}
	}
	return node
}

// factorOr rewrites (A AND X) OR (A AND Y) as A AND (X OR Y), returning
// the conjuncts. Join and correlation conditions repeated in every branch
// (TPC-DS q13, q41, q48) then become join keys.
func factorOr(e Expr) []Expr {
	c, ok := e.(*Call)
	if !ok || c.Fn != "or" {
		return []Expr{e}
	}
	var branches [][]Expr
	var split func(x Expr)
	split = func(x Expr) {
		if c, ok := x.(*Call); ok && c.Fn == "or" {
			split(c.Args[0])
			split(c.Args[1])
			return
		}
		branches = append(branches, conjuncts(x))
	}
	split(e)
	var common []Expr
	for _, cand := range branches[0] {
		k := exprKey(cand)
		inAll := true
		for _, br := range branches[1:] {
			found := false
			for _, x := range br {
				found = found || exprKey(x) == k
			}
			inAll = inAll && found
		}
		if inAll {
			common = append(common, cand)
		}
	}
	if len(common) == 0 {
		return []Expr{e}
	}
	isCommon := map[string]bool{}
	for _, x := range common {
		isCommon[exprKey(x)] = true
	}
	var rest Expr
	for _, br := range branches {
		var keep []Expr
		for _, x := range br {
			if !isCommon[exprKey(x)] {
				keep = append(keep, x)
			}
		}
		if len(keep) == 0 {
			// One branch is just the common part: the OR adds nothing.
			return common
		}
		if rest == nil {
			rest = andAll(keep)
		} else {
			rest = &Call{Fn: "or", Args: []Expr{rest, andAll(keep)}, Typ: boolType}
		}
	}
	return append(common, rest)
}

func splitAnd(e sql.Expr) []sql.Expr {
	if bin, ok := e.(*sql.Binary); ok && bin.Op == "AND" {
		return append(splitAnd(bin.Left), splitAnd(bin.Right)...)
	}
	return []sql.Expr{e}
}

// trySemiJoin turns [NOT] EXISTS (q) and x [NOT] IN (q) into a join.
func (b *binder) trySemiJoin(e sql.Expr, sc *scope, node Node) (Node, bool) {
	// NOT EXISTS / NOT IN written as NOT (...).
	if u, ok := e.(*sql.Unary); ok && u.Op == "NOT" {
		switch x := u.X.(type) {
		case *sql.Exists:
			c := *x
			c.Not = !c.Not
			e = &c
		case *sql.InSubquery:
			c := *x
			c.Not = !c.Not
			e = &c
		}
	}
	switch e := e.(type) {
	case *sql.Exists:
		sub, corr := b.bindSubquery(e.Query, sc)
		if v, ok := b.existsConst(corr, e.Pos); ok {
			return &FilterNode{Input: node, Pred: &Const{Value: boolScalar(v != e.Not)}}, true
		}
		kind := SemiJoin
		if e.Not {
			kind = AntiJoin
		}
		return &JoinNode{Kind: kind, Left: node, Right: sub, Cond: andAll(corr.pulled)}, true
	case *sql.InSubquery:
		var dummy = node
		x := b.bindScalar(e.X, sc, &dummy, exprOpts{noAgg: "WHERE"})
		if dummy != node {
			return nil, false
		}
		sub, corr := b.bindSubquery(e.Query, sc)
		if corr.apply {
			// Only the expression form decorrelates it.
			return nil, false
		}
		y := b.subqueryValue(sub, corr, e.Query.Pos)
		eq := b.compare("equal", x, y, e.Pos)
		kind := SemiJoin
		if e.Not {
			if len(corr.pulled) > 0 {
				// NULLs are judged per correlated group: the expression
				// form computes them.
				return nil, false
			}
			kind = AntiNullAwareJoin
		}
		return &JoinNode{Kind: kind, Left: node, Right: sub, Cond: andAll(append([]Expr{eq}, corr.pulled...))}, true
	}
	return nil, false
}

// bindSubquery binds a subquery that may read the enclosing scope.
func (b *binder) bindSubquery(q *sql.Query, outer *scope) (Node, *corrResult) {
	n, corr := b.bindQuery(q, outer, nil)
	if corr == nil {
		corr = &corrResult{}
	}
	// Any outer reference not pulled out would need per-row evaluation.
	checkNoOuterRefs(b, n, outer.ids(), q.Pos)
	return n, corr
}

// subqueryValue is the single value column of a subquery.
func (b *binder) subqueryValue(sub Node, corr *corrResult, pos sql.Pos) *ColRef {
	cols := sub.Columns()
	if len(cols)-len(corr.inner) != 1 {
		b.fail(pos, "subquery must return one column, it returns %d", len(cols)-len(corr.inner))
	}
	return colRef(cols[0])
}

func checkNoOuterRefs(b *binder, n Node, outer map[ColumnID]bool, pos sql.Pos) {
	for _, e := range nodeExprs(n) {
		for id := range colsOf(e) {
			if outer[id] {
				b.notImplemented(pos, "this correlated subquery (outer columns are supported only in WHERE conjuncts)")
			}
		}
	}
	for _, c := range n.Inputs() {
		checkNoOuterRefs(b, c, outer, pos)
	}
}

// nodeExprs lists the expressions a node evaluates.
func nodeExprs(n Node) []Expr {
	switch n := n.(type) {
	case *UnnestNode:
		return []Expr{n.Arr}
	case *ScanNode:
		if n.Filter != nil {
			return []Expr{n.Filter}
		}
	case *ValuesNode:
		var out []Expr
		for _, r := range n.Values {
			out = append(out, r...)
		}
		return out
	case *FilterNode:
		return []Expr{n.Pred}
	case *ProjectNode:
		return n.Exprs
	case *JoinNode:
		out := append(append([]Expr{}, n.LeftKeys...), n.RightKeys...)
		if n.Cond != nil {
			out = append(out, n.Cond)
		}
		if n.Residual != nil {
			out = append(out, n.Residual)
		}
		if n.AsOf != nil {
			out = append(out, n.AsOf, n.VersionTime)
		}
		return out
	case *AggNode:
		out := append([]Expr{}, n.Groups...)
		for _, a := range n.Aggs {
			out = append(out, a.Args...)
			if a.Filter != nil {
				out = append(out, a.Filter)
			}
		}
		return out
	case *SortNode:
		var out []Expr
		for _, k := range n.Keys {
			out = append(out, k.Expr)
		}
		return out
	case *WindowNode:
		out := append([]Expr{}, n.PartitionBy...)
		for _, k := range n.OrderBy {
			out = append(out, k.Expr)
		}
		for _, f := range n.Funcs {
			out = append(out, f.Args...)
		}
		return out
	}
	return nil
}

// ---- FROM

// scanNode reads table t at snapshot snap, named at pos as label.
func (b *binder) scanNode(pos sql.Pos, t *tablestore.Table, snap int64, label string) *ScanNode {
	id := t.Ident()
	s := &ScanNode{Table: t, Snapshot: snap, Label: id.String()}
	if label != id.Table {
		s.Label += " AS " + label
	}
	for _, f := range t.Schema().Fields() {
		// A table another engine (or an older flightd) stored with MAPs
		// nested deeper than flightd creates would cost 2^depth to read.
		if d := vectorized.MapNesting(f.Type); d > vectorized.MaxMapNesting {
			panic(bindFail{sql.StateErrorf(sql.StateTooComplex, pos, "table %s: column %s nests MAP types %d deep, over the limit of %d, and cannot be read", id, f.Name, d, vectorized.MaxMapNesting)})
		}
		s.Cols = append(s.Cols, b.newCol(f.Name, f.Type, f.Nullable))
		s.Names = append(s.Names, f.Name)
	}
	if st, err := t.ColumnStats(b.ctx, snap); err == nil {
		s.TableRows, s.Stats = float64(st.Rows), st
	}
	return s
}

func (b *binder) findCTE(name string) *cteDef {
	for i := len(b.ctes) - 1; i >= 0; i-- {
		if d := b.ctes[i][name]; d != nil {
			return d
		}
	}
	return nil
}

// bindFrom binds one FROM item; lateral is the scope of the items to its
// left (for LATERAL subqueries).
func (b *binder) bindFrom(f sql.TableRef, outer *scope, left *scope) (Node, *scope) {
	checkCtx(b.ctx)
	switch f := f.(type) {
	case *sql.TableName:
		if len(f.Name.Parts) == 1 && f.SystemTime == nil {
			if d := b.findCTE(f.Name.Parts[0]); d != nil {
				n := b.cteReference(d)
				qual := f.Name.Parts[0]
				if f.Alias != "" {
					qual = f.Alias
				}
				aliases := d.cte.Columns
				if f.ColAliases != nil {
					aliases = f.ColAliases
				}
				return n, b.aliasScope(n, qual, aliases, f.Pos)
			}
		}
		if n, sc, ok := b.bindInformationSchema(f); ok {
			return n, sc
		}
		if n, sc, ok := b.bindSystemTable(f); ok {
			return n, sc
		}
		if n, sc, ok := b.bindTableSystemTable(f); ok {
			return n, sc
		}
		if n, sc, ok := b.bindView(f); ok {
			return n, sc
		}
		t, snap := b.table(f.Name)
		t, snap, tag, stream := b.tableHints(f, t, snap)
		qual := t.Ident().Table
		if f.Alias != "" {
			qual = f.Alias
		}
		n := b.scanNode(f.Name.Pos, t, snap, qual)
		n.Tag = tag
		if stream != nil {
			n.Stream = stream
			kind := b.newCol(tablestore.RowKindColumn, arrow.BinaryTypes.String, false)
			n.Cols = append([]Column{kind}, n.Cols...)
			n.Names = append([]string{tablestore.RowKindColumn}, n.Names...)
		}
		c := b.computedScope(n)
		return c, b.aliasScope(c, qual, f.ColAliases, f.Pos)
	case *sql.DerivedTable:
		if f.Lateral {
			return b.bindLateral(f, outer, left)
		}
		n := b.derivedTable(f)
		return n, b.aliasScope(n, f.Alias, f.ColAliases, f.Pos)
	case *sql.ParenTableRef:
		return b.bindFrom(f.Inner, outer, left)
	case *sql.TableFunc:
		if n := f.Call.Name; n == "read_parquet" || n == "read_csv" {
			return b.bindReadFile(f)
		}
		if isSeriesFunc(f.Call.Name) {
			return b.bindSeries(f)
		}
		return b.bindWindowTVF(f, outer, left)
	case *sql.Unnest: // of values that use no column
		one := &ValuesNode{Values: [][]Expr{{&Const{Value: boolScalar(true)}}}, Cols: []Column{b.newCol("dummy", arrow.FixedWidthTypes.Boolean, false)}}
		return b.bindUnnest(f, one, &scope{}, false)
	case *sql.Join:
		return b.bindJoin(f, outer, left)
	}
	b.fail(f.Position(), "unsupported FROM item %T", f)
	return nil, nil
}

// bindLateral binds LATERAL (subquery): its references to the FROM items on
// its left are pulled out of its WHERE (like a correlated subquery) and
// become the condition of the join that the caller builds
// (b.lateralConds).
func (b *binder) bindLateral(f *sql.DerivedTable, outer, left *scope) (Node, *scope) {
	o := &scope{cols: left.cols, parent: outer}
	n, corr := b.bindQuery(f.Query, o, nil)
	if corr == nil {
		corr = &corrResult{}
	}
	if corr.agg {
		// An aggregate yields one row even when nothing matches, which a
		// join on the grouped key cannot reproduce.
		b.notImplemented(f.Pos, "LATERAL subqueries with aggregates correlated to the left side")
	}
	checkNoOuterRefs(b, n, o.ids(), f.Pos)
	b.lateralConds = append(b.lateralConds, corr.pulled...)
	cols := n.Columns()
	visible := len(cols) - len(corr.inner)
	if f.ColAliases != nil && len(f.ColAliases) != visible {
		b.fail(f.Pos, "%s has %d columns but %d aliases", f.Alias, visible, len(f.ColAliases))
	}
	s := &scope{}
	for i, c := range cols {
		name, hidden := c.Name, i >= visible
		if !hidden && f.ColAliases != nil {
			name = f.ColAliases[i]
		}
		s.cols = append(s.cols, scopeCol{qual: f.Alias, name: name, col: c, hidden: hidden})
	}
	return n, s
}

// takeLateral returns and clears the pending LATERAL join conditions.
func (b *binder) takeLateral() []Expr {
	c := b.lateralConds
	b.lateralConds = nil
	return c
}

func (b *binder) aliasScope(n Node, qual string, aliases []string, pos sql.Pos) *scope {
	cols := n.Columns()
	if aliases != nil && len(aliases) != len(cols) {
		b.fail(pos, "%s has %d columns but %d aliases", qual, len(cols), len(aliases))
	}
	s := &scope{}
	for i, c := range cols {
		name := c.Name
		if aliases != nil {
			name = aliases[i]
		}
		s.cols = append(s.cols, scopeCol{qual: qual, name: name, col: c})
	}
	return s
}

// tableHints applies OPTIONS hints and FOR SYSTEM_TIME AS OF; a scan.mode
// option makes the scan a stream. Time travel returns the table as of its
// snapshot, with the schema that snapshot was written with.
func (b *binder) tableHints(f *sql.TableName, t *tablestore.Table, snap int64) (*tablestore.Table, int64, string, *tablestore.StreamSpec) {
	snap, tag, stream, travel := b.tableOptions(f, t, snap)
	if !travel {
		return t, snap, tag, stream
	}
	at, err := t.AsOf(b.ctx, snap, tag)
	if err != nil {
		b.failWrap(f.Pos, err, "%s: %v", t.Ident(), err)
	}
	return at, snap, tag, stream
}

// tableOptions reads tableHints' options; travel reports a snapshot named
// by a hint or FOR SYSTEM_TIME AS OF.
func (b *binder) tableOptions(f *sql.TableName, t *tablestore.Table, snap int64) (_ int64, tag string, _ *tablestore.StreamSpec, travel bool) {
	if b.viewStream != nil && len(f.Hints) == 0 && f.SystemTime == nil {
		g := *f
		g.Hints = b.viewStream
		f = &g
	}
	if b.opts.StreamAll && !b.lookupSide && len(f.Hints) == 0 && f.SystemTime == nil {
		spec := b.streamHint(t, []*sql.Property{{Pos: f.Pos, Key: "scan.mode", Value: "latest-full"}})
		if b.opts.StreamHeartbeat > 0 {
			spec.Heartbeat = b.opts.StreamHeartbeat
		}
		return snap, "", spec, false
	}
	for _, h := range f.Hints {
		if h.Name != "OPTIONS" {
			b.fail(h.Pos, "unknown table hint %s", h.Name)
		}
		if stream := b.streamHint(t, h.Options); stream != nil {
			if f.SystemTime != nil {
				b.fail(f.SystemTime.Position(), "FOR SYSTEM_TIME AS OF does not go with scan.mode: use scan.mode from-timestamp")
			}
			return snap, "", stream, false
		}
		var pinned *sql.Property
		for _, o := range h.Options {
			switch o.Key {
			case "scan.snapshot-id", "scan.tag-name":
				if pinned != nil {
					b.fail(o.Pos, "%s does not go with %s", o.Key, pinned.Key)
				}
				pinned, snap, travel = o, b.snapshotOption(t, o), true
				if o.Key == "scan.tag-name" {
					tag = o.Value
				}
			default:
				b.notImplemented(o.Pos, fmt.Sprintf("table option %q in a hint", o.Key))
			}
		}
	}
	if f.SystemTime != nil {
		if snap != 0 {
			b.fail(f.SystemTime.Position(), "FOR SYSTEM_TIME AS OF does not go with scan.snapshot-id or scan.tag-name")
		}
		c := b.constExpr(f.SystemTime, &arrow.TimestampType{Unit: arrow.Microsecond})
		ts, ok := timestampOf(c)
		if !ok {
			b.fail(f.SystemTime.Position(), "FOR SYSTEM_TIME AS OF needs a constant timestamp")
		}
		id, err := t.SnapshotAsOf(b.ctx, ts)
		if err != nil {
			b.failWrap(f.SystemTime.Position(), err, "FOR SYSTEM_TIME AS OF: %v", err)
		}
		snap, travel = id, true
	}
	return snap, tag, nil, travel
}

// snapshotOption is the snapshot a scan.snapshot-id or scan.tag-name
// option names (a tag's snapshot may have expired: the tag keeps it).
func (b *binder) snapshotOption(t *tablestore.Table, o *sql.Property) int64 {
	if o.Key == "scan.snapshot-id" {
		return b.positiveInt(o)
	}
	tags, err := t.Tags(b.ctx)
	if err != nil {
		b.failWrap(o.Pos, err, "tags of %s: %v", t.Ident(), err)
	}
	id, ok := tags[o.Value]
	if !ok {
		b.failWrap(o.Pos, tablestore.ErrSnapshotNotFound, "%s has no tag %q", t.Ident(), o.Value)
	}
	return id
}

func (b *binder) bindJoin(j *sql.Join, outer *scope, left *scope) (Node, *scope) {
	ln, ls := b.bindFrom(j.Left, outer, left)
	if len(b.lateralConds) > 0 {
		b.fail(j.Pos, "LATERAL needs a FROM item to its left")
	}
	if u, ok := j.Right.(*sql.Unnest); ok {
		return b.bindUnnestJoin(j, u, ln, ls, outer)
	}
	right := j.Right
	temporal := temporalTable(j)
	if temporal != nil {
		// The table is bound without the clause: read as of each row's
		// processing time, as a snapshot; by event time, as a changelog.
		plain := *temporal
		plain.SystemTime = nil
		right = &plain
		b.lookupSide = !b.eventTimeAsOf(temporal, ln, ls)
	}
	// What a LATERAL item on the right sees: ls's columns, shared unless
	// there are more (a copy at each join of a chain costs its square).
	lateralCols := slices.Clip(ls.cols)
	if len(left.cols) > 0 {
		lateralCols = append(slices.Clip(left.cols), ls.cols...)
	}
	rn, rs := b.bindFrom(right, outer, &scope{cols: lateralCols})
	b.lookupSide = false
	lateral := b.takeLateral()
	if len(lateral) > 0 && (j.Kind == "RIGHT" || j.Kind == "FULL") {
		b.fail(j.Pos, "LATERAL is not allowed on the right of a %s JOIN", j.Kind)
	}
	kind := map[string]JoinKind{"INNER": InnerJoin, "CROSS": InnerJoin, "LEFT": LeftJoin, "RIGHT": RightJoin, "FULL": FullJoin}[j.Kind]
	merged := &scope{parent: outer}
	merged.cols = append(append(merged.cols, ls.cols...), rs.cols...)
	jn := &JoinNode{Kind: kind, Left: ln, Right: rn}
	using := j.Using
	if j.Natural {
		for _, lc := range ls.cols {
			for _, rc := range rs.cols {
				if lc.name == rc.name && !lc.hidden && !rc.hidden {
					using = append(using, lc.name)
				}
			}
		}
	}
	if using != nil {
		var conds []Expr
		for _, name := range using {
			l := b.lookup(&scope{cols: ls.cols}, &sql.Ident{Pos: j.Pos, Parts: []string{name}})
			r := b.lookup(&scope{cols: rs.cols}, &sql.Ident{Pos: j.Pos, Parts: []string{name}})
			conds = append(conds, b.compare("equal", l, r, j.Pos))
			// The joined column is the left one (the right one for RIGHT
			// joins); the other stays reachable qualified.
			hide := r.ID
			if kind == RightJoin {
				hide = l.ID
			}
			for i := range merged.cols {
				if merged.cols[i].col.ID == hide {
					merged.cols[i].hidden = true
				}
			}
		}
		jn.Cond = andAll(conds)
	} else if j.On != nil {
		var n Node = jn
		cond := b.bindPredicate(j.On, merged, &n, "JOIN ON")
		if n != Node(jn) {
			b.notImplemented(j.On.Position(), "a subquery in JOIN ON")
		}
		jn.Cond = cond
	}
	if len(lateral) > 0 {
		jn.Cond = andAll(append(conjuncts(jn.Cond), lateral...))
	}
	if temporal != nil {
		b.checkTemporal(j, temporal, jn, ls)
	}
	return jn, merged
}

// ---- aggregation

// maxGroupingSets bounds the grouping sets of one GROUP BY (a CUBE of 12
// expressions alone makes 4096).
const maxGroupingSets = 4096

// collectCalls finds aggregate calls (aggs=true) or window calls in the
// select list, HAVING and ORDER BY, outside subqueries.
func collectCalls(sel *sql.Select, orderBy []*sql.OrderItem, aggs bool) []*sql.FuncCall {
	var out []*sql.FuncCall
	var visit func(n sql.Node) bool
	visit = func(n sql.Node) bool {
		switch x := n.(type) {
		case *sql.Subquery, *sql.Exists, *sql.InSubquery:
			if in, ok := x.(*sql.InSubquery); ok {
				sql.Walk(in.X, visit)
			}
			return false
		case *sql.FuncCall:
			if aggs && x.Over == nil && isAggregate(x.Name) {
				out = append(out, x)
				return false
			}
			if !aggs && x.Over != nil {
				out = append(out, x)
				return false
			}
		}
		return true
	}
	for _, it := range sel.Items {
		sql.Walk(it.Expr, visit)
	}
	if sel.Having != nil {
		sql.Walk(sel.Having, visit)
	}
	for _, o := range orderBy {
		sql.Walk(o.Expr, visit)
	}
	return out
}

var aggregateNames = map[string]string{
	"count": "count", "sum": "sum", "avg": "avg", "min": "min", "max": "max",
	"stddev": "stddev_samp", "stddev_samp": "stddev_samp", "stddev_pop": "stddev_pop",
	"variance": "var_samp", "var_samp": "var_samp", "var_pop": "var_pop",
	"bool_and": "bool_and", "every": "bool_and", "bool_or": "bool_or", "any_value": "any_value",
	"listagg": "listagg", "string_agg": "listagg", "group_concat": "listagg", "array_agg": "array_agg", "array_agg_ignore_nulls": "array_agg_ignore_nulls",
	"collect": "collect", "json_arrayagg": "json_arrayagg", "json_arrayagg_null_on_null": "json_arrayagg_null_on_null",
	"json_objectagg": "json_objectagg", "json_objectagg_absent_on_null": "json_objectagg_absent_on_null",
	"percentile": "percentile",
}

func isAggregate(name string) bool { _, ok := aggregateNames[name]; return ok }

func (b *binder) bindAggregation(sb *selectBinding, calls []*sql.FuncCall, corr *corrResult) {
	sel := sb.sel
	g := &groupInfo{keys: map[string]Column{}, index: map[string]int{}}
	var groupCols []Column
	var sets [][]int
	addBound := func(x Expr, name string) int {
		k := exprKey(x)
		if i, ok := g.index[k]; ok {
			return i
		}
		var col Column
		if c, ok := x.(*ColRef); ok {
			// A grouped column keeps its ID: references above the
			// aggregation then need no rewriting.
			col = Column{ID: c.ID, Name: c.Name, Type: c.Typ, Nullable: true}
		} else {
			col = b.newCol(name, x.Type(), true)
		}
		g.index[k] = len(g.exprs)
		g.keys[k] = col
		g.exprs = append(g.exprs, x)
		groupCols = append(groupCols, col)
		return len(g.exprs) - 1
	}
	addGroup := func(e sql.Expr) int {
		return addBound(b.bindGroupExpr(sb, e), deriveName(e, len(g.exprs)))
	}
	// Each GROUP BY item contributes a list of alternatives; the grouping
	// sets are their cross product.
	product := [][]int{{}}
	hasSets := false
	for _, item := range sel.GroupBy {
		var alts [][]int
		switch it := item.(type) {
		case *sql.Rollup:
			hasSets = true
			idx := make([]int, len(it.Exprs))
			for i, e := range it.Exprs {
				idx[i] = addGroup(e)
			}
			for n := len(idx); n >= 0; n-- {
				alts = append(alts, append([]int{}, idx[:n]...))
			}
		case *sql.Cube:
			hasSets = true
			idx := make([]int, len(it.Exprs))
			for i, e := range it.Exprs {
				idx[i] = addGroup(e)
			}
			if len(idx) > 12 {
				b.fail(it.Pos, "CUBE of more than 12 expressions")
			}
			for mask := (1 << len(idx)) - 1; mask >= 0; mask-- {
				var s []int
				for i := range idx {
					if mask&(1<<(len(idx)-1-i)) != 0 {
						s = append(s, idx[i])
					}
				}
				alts = append(alts, s)
			}
		case *sql.GroupingSets:
			hasSets = true
			for _, set := range it.Sets {
				var s []int
				for _, e := range set {
					s = append(s, addGroup(e))
				}
				alts = append(alts, s)
			}
		default:
			alts = [][]int{{addGroup(item)}}
		}
		if len(product)*len(alts) > maxGroupingSets {
			// Several ROLLUPs and CUBEs multiply: without a bound a short
			// GROUP BY plans billions of aggregations.
			panic(bindFail{sql.StateErrorf(sql.StateTooComplex, sel.Pos, "statement too complex: GROUP BY makes more than %d grouping sets", maxGroupingSets)})
		}
		if len(alts) == 1 {
			// One alternative extends each set in place (no two share an
			// array): copying the sets for every item cost the square of
			// the GROUP BY's length.
			for i := range product {
				product[i] = append(product[i], alts[0]...)
			}
			continue
		}
		var next [][]int
		for _, p := range product {
			for _, a := range alts {
				next = append(next, append(append([]int{}, p...), a...))
			}
		}
		product = next
	}
	if corr != nil && len(corr.pulled) > 0 {
		// Decorrelation: group by the inner columns of the pulled
		// equalities, and the outer join then matches on them.
		if hasSets {
			b.notImplemented(sel.Pos, "grouping sets in a correlated subquery")
		}
		corr.agg = true
		corr.scalarAgg, corr.having = len(sel.GroupBy) == 0, sel.Having != nil
		if !keyCorrelated(corr.pulled, sb.sc.parent.ids()) {
			if !corr.scalarAgg {
				b.notImplemented(sel.Pos, "a correlated subquery with GROUP BY whose correlation is not inner_column = outer_expression")
			}
			// Aggregated per outer row by the scalar subquery (apply).
			corr.apply = true
		} else {
			for _, c := range innerCols(corr.pulled, sb.sc) {
				i := addBound(colRef(c), c.Name)
				product[0] = append(product[0], i)
			}
		}
	}
	if hasSets {
		if len(g.exprs) > exec.MaxGroupingColumns {
			// Found here rather than when the aggregation is built, as the
			// query runs.
			panic(bindFail{sql.StateErrorf(sql.StateTooComplex, sel.Pos, "statement too complex: grouping sets over more than %d GROUP BY expressions", exec.MaxGroupingColumns)})
		}
		sets = make([][]int, len(product))
		for i, p := range product {
			sets[i] = dedupInts(p)
		}
	}
	agg := &AggNode{Input: sb.input, Groups: g.exprs, GroupCols: groupCols, Sets: sets}
	if hasSets {
		gid := b.newCol("_grouping_id", arrow.PrimitiveTypes.Int64, false)
		agg.GroupingID = &gid
		g.gid = &gid
	}
	sb.aggKeys = map[string]Column{}
	for _, c := range calls {
		k := sql.Format(c)
		if _, ok := sb.aggKeys[k]; ok {
			continue
		}
		ac := b.bindAggCall(sb, c)
		sb.aggKeys[k] = ac.Col
		agg.Aggs = append(agg.Aggs, ac)
	}
	if corr != nil && !corr.apply {
		corr.inner = innerCols(corr.pulled, sb.sc)
	}
	sb.grouping = g
	sb.post = agg
}

func dedupInts(s []int) []int {
	var out []int
	seen := map[int]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// bindGroupExpr binds a GROUP BY expression: an input expression, a
// select-list position, or a select-list alias.
func (b *binder) bindGroupExpr(sb *selectBinding, e sql.Expr) Expr {
	if lit, ok := e.(*sql.Literal); ok && lit.Kind == sql.LitNumber {
		n, err := parseOrdinal(lit.Value)
		if err != nil || n < 1 || n > len(sb.sel.Items) {
			b.fail(lit.Pos, "GROUP BY position %s is not in the select list (1..%d)", lit.Value, len(sb.sel.Items))
		}
		e = sb.sel.Items[n-1].Expr
	} else if id, ok := e.(*sql.Ident); ok && len(id.Parts) == 1 && !sb.sc.has(id.Parts[0]) {
		for _, it := range sb.sel.Items {
			if it.Alias == id.Parts[0] {
				e = it.Expr
				break
			}
		}
	}
	var n = sb.input
	x := b.settle(b.bindScalar(e, sb.sc, &n, exprOpts{noAgg: "GROUP BY"}))
	if n != sb.input {
		b.notImplemented(e.Position(), "a subquery in GROUP BY")
	}
	return x
}

func (s *scope) has(name string) bool {
	for _, c := range s.cols {
		if c.name == name && !c.hidden {
			return true
		}
	}
	return false
}

// countDistinctRows rewrites COUNT(DISTINCT a, b, ...) as Calcite defines
// it, the distinct tuples with no NULL in them: COUNT(DISTINCT CASE WHEN a
// IS NOT NULL AND b IS NOT NULL ... THEN ROW(a, b, ...) END).
func countDistinctRows(c *sql.FuncCall) *sql.FuncCall {
	var cond sql.Expr
	for _, a := range c.Args {
		var notNull sql.Expr = &sql.Is{Pos: a.Position(), Not: true, X: a, What: "NULL"}
		if cond != nil {
			notNull = &sql.Binary{Pos: c.Pos, Op: "AND", Left: cond, Right: notNull}
		}
		cond = notNull
	}
	row := &sql.FuncCall{Pos: c.Pos, Name: "row", Args: c.Args}
	out := *c
	out.Args = []sql.Expr{&sql.Case{Pos: c.Pos, Whens: []*sql.When{{Pos: c.Pos, Cond: cond, Then: row}}}}
	return &out
}

func (b *binder) bindAggCall(sb *selectBinding, c *sql.FuncCall) AggCall {
	fn := aggregateNames[c.Name]
	if fn == "count" && c.Distinct && len(c.Args) > 1 {
		c = countDistinctRows(c)
	}
	var args []Expr
	n := sb.input
	opts := exprOpts{noAgg: "an aggregate argument"}
	for _, a := range c.Args {
		args = append(args, b.settle(b.bindScalar(a, sb.sc, &n, opts)))
	}
	if c.Star {
		if fn != "count" {
			b.fail(c.Pos, "%s(*) is not allowed; only count(*)", c.Name)
		}
		fn = "count_star"
	} else if len(args) == 0 {
		b.fail(c.Pos, "%s needs an argument", c.Name)
	}
	if c.Distinct && len(args) > 1 && fn != "listagg" {
		b.fail(c.Pos, "%s(DISTINCT ...) takes one argument", c.Name)
	}
	if fn == "listagg" && len(args) == 2 {
		// Flink takes the separator as a literal only.
		if k, ok := args[1].(*Const); !ok || !k.Value.IsValid() {
			b.fail(c.Args[1].Position(), "LISTAGG's separator must be a string literal")
		}
	}
	var filter Expr
	if c.Filter != nil {
		filter = b.bindScalar(c.Filter, sb.sc, &n, opts)
	}
	if n != sb.input {
		b.notImplemented(c.Pos, "a subquery inside an aggregate")
	}
	typ, err := resolveAggregate(fn, typesOfExprs(args))
	if err != nil {
		b.fail(c.Pos, "%v", err)
	}
	col := b.newCol(sql.Format(c), typ, true)
	col.Name = c.Name
	return AggCall{Fn: fn, Args: args, Distinct: c.Distinct, Filter: filter, Col: col}
}

func typesOfExprs(es []Expr) []arrow.DataType {
	out := make([]arrow.DataType, len(es))
	for i, e := range es {
		out[i] = e.Type()
	}
	return out
}

// bindPost binds an expression of the select list, HAVING or ORDER BY:
// aggregate and window calls become their output columns, and with GROUP BY
// every remaining column reference must be grouped.
func (b *binder) bindPost(sb *selectBinding, e sql.Expr, hint arrow.DataType, clause string) Expr {
	opts := exprOpts{hint: hint, aggs: sb.aggKeys, wins: sb.winKeys, grouping: sb.grouping}
	if sb.grouping == nil {
		opts.noAgg = clause
		if clause == "" {
			opts.noAgg = "this context"
		}
		if sb.aggKeys == nil {
			opts.aggs = nil
		}
	}
	if clause == "HAVING" {
		opts.noAgg = ""
	}
	x := b.bindScalar(e, sb.sc, &sb.post, opts)
	if sb.grouping != nil {
		x = b.rewriteGrouped(sb, x, e)
	}
	return x
}

// rewriteGrouped replaces grouped expressions by the group output columns
// and rejects references to ungrouped input columns.
func (b *binder) rewriteGrouped(sb *selectBinding, x Expr, src sql.Expr) Expr {
	g := sb.grouping
	avail := map[ColumnID]bool{}
	for _, c := range sb.post.Columns() {
		avail[c.ID] = true
	}
	// A key has at least one character per node, so a larger subtree
	// matches none: skipping them keeps deep expressions from costing
	// cubic time (exprKey at every node of a 1000-deep sum took 5 s).
	longest := 0
	for k := range g.keys {
		longest = max(longest, len(k))
	}
	var rw func(e Expr) Expr
	rw = func(e Expr) Expr {
		if sizeAtMost(e, longest) {
			if c, ok := g.keys[exprKey(e)]; ok {
				return colRef(c)
			}
		}
		if y, ok := e.(*ColRef); ok && !avail[y.ID] {
			b.fail(src.Position(), "column %q must appear in GROUP BY or be used in an aggregate function", y.Name)
		}
		return rebuild(e, rw)
	}
	return rw(x)
}

// ---- window functions

var windowOnly = map[string]bool{
	"row_number": true, "rank": true, "dense_rank": true, "ntile": true, "lag": true, "lead": true,
	"first_value": true, "last_value": true, "percent_rank": true, "cume_dist": true,
}

func (b *binder) bindWindows(sb *selectBinding, calls []*sql.FuncCall) {
	named := map[string]*sql.WindowSpec{}
	for _, w := range sb.sel.Windows {
		named[w.Name] = w.Spec
	}
	sb.winKeys = map[string]Column{}
	// One WindowNode per distinct PARTITION BY / ORDER BY.
	nodes := map[string]*WindowNode{}
	var order []string
	for _, c := range calls {
		k := sql.Format(c)
		if _, ok := sb.winKeys[k]; ok {
			continue
		}
		spec := c.Over
		if spec.Ref != "" {
			base, ok := named[spec.Ref]
			if !ok {
				b.fail(spec.Pos, "window %q is not defined", spec.Ref)
			}
			merged := *base
			if spec.PartitionBy != nil || spec.OrderBy != nil || spec.Frame != nil {
				if spec.OrderBy != nil {
					merged.OrderBy = spec.OrderBy
				}
				if spec.Frame != nil {
					merged.Frame = spec.Frame
				}
			}
			spec = &merged
		}
		if !windowOnly[c.Name] && !isAggregate(c.Name) {
			b.fail(c.Pos, "%s is not a window or aggregate function", c.Name)
		}
		if c.Distinct {
			b.notImplemented(c.Pos, "DISTINCT in a window function")
		}
		post := sb.post
		bind := func(e sql.Expr) Expr {
			x := b.bindScalar(e, sb.sc, &post, exprOpts{aggs: sb.aggKeys, grouping: sb.grouping, noAgg: noAggIf(sb.grouping == nil, "a window function")})
			if sb.grouping != nil {
				x = b.rewriteGrouped(sb, x, e)
			}
			return b.settle(x)
		}
		var parts []Expr
		for _, p := range spec.PartitionBy {
			parts = append(parts, bind(p))
		}
		var keys []SortKey
		for _, o := range spec.OrderBy {
			keys = append(keys, sortKey(o, bind(o.Expr)))
		}
		var args []Expr
		for _, a := range c.Args {
			args = append(args, bind(a))
		}
		if post != sb.post {
			b.notImplemented(c.Pos, "a subquery inside a window function")
		}
		fn := c.Name
		if a, ok := aggregateNames[fn]; ok {
			fn = a
			if c.Star {
				fn = "count_star"
			}
		}
		if (fn == "lag" || fn == "lead") && len(args) == 3 {
			// The value and the default share one type:
			// lead(tinyint_col, 1, 0) is INT.
			if t, ok := commonType(args[0].Type(), args[2].Type()); ok && t.ID() != arrow.NULL {
				args[0] = b.castTo(args[0], t, c.Pos)
				args[2] = b.castTo(b.coerceLiteral(args[2], t), t, c.Pos)
			}
		}
		typ, err := resolveWindow(fn, typesOfExprs(args))
		if err != nil {
			b.fail(c.Pos, "%v", err)
		}
		wf := WindowFunc{Fn: fn, Args: args, Col: b.newCol(c.Name, typ, true)}
		if spec.Frame != nil {
			wf.Frame = b.bindFrame(spec.Frame, keys)
		}
		wkey := exprList(parts) + "|" + sortKeysString(keys)
		wn := nodes[wkey]
		if wn == nil {
			wn = &WindowNode{PartitionBy: parts, OrderBy: keys}
			nodes[wkey] = wn
			order = append(order, wkey)
		}
		wn.Funcs = append(wn.Funcs, wf)
		sb.winKeys[k] = wf.Col
	}
	for _, k := range order {
		wn := nodes[k]
		wn.Input = sb.post
		sb.post = wn
	}
}

// rangeOffset is the offset of a RANGE frame bound in the unit of the
// window's one ORDER BY key, rounded down: a non-negative number for an
// integer key, a day-time INTERVAL for a DATE (days) or TIMESTAMP key (units
// of its precision).
func (b *binder) rangeOffset(fb *sql.FrameBound, keys []SortKey) int64 {
	if len(keys) != 1 {
		b.fail(fb.Pos, "a RANGE frame with an offset needs exactly one ORDER BY key, got %d", len(keys))
	}
	t := keys[0].Expr.Type()
	c := b.constExpr(fb.Offset, nil)
	if !c.Value.IsValid() {
		b.fail(fb.Pos, "a RANGE frame offset must not be NULL")
	}
	if arrow.IsInteger(t.ID()) {
		// Keys are whole, so a fractional offset reaches as far as its
		// floor (Flink accepts one).
		v, ok := int64(-1), true
		switch ot := c.Type().ID(); {
		case arrow.IsInteger(ot):
			v, ok = constInt(b.constExpr(fb.Offset, arrow.PrimitiveTypes.Int64))
		case arrow.IsFloating(ot) || arrow.IsDecimal(ot):
			f := b.constExpr(fb.Offset, arrow.PrimitiveTypes.Float64).Value.(*scalar.Float64).Value
			v = int64(math.Floor(min(f, math.MaxInt64/2)))
			ok = f >= 0
		default:
			ok = false
		}
		if !ok || v < 0 {
			b.fail(fb.Pos, "a RANGE frame offset over a %s key must be a non-negative number, got %s", SQLTypeName(t), sql.Format(fb.Offset))
		}
		return v
	}
	var perUnit int64 // nanoseconds per unit of the key
	switch t := t.(type) {
	case *arrow.Date32Type:
		perUnit = 86400e9
	case *arrow.TimestampType:
		perUnit = int64(t.Unit.Multiplier())
	default:
		b.notImplemented(fb.Pos, "RANGE frames with offsets over a "+SQLTypeName(t)+" ORDER BY key")
	}
	offset, ok := c.Value.(*scalar.MonthDayNanoInterval)
	if !ok {
		b.fail(fb.Pos, "a RANGE frame offset over a %s key must be an INTERVAL, got %s", SQLTypeName(t), SQLTypeName(c.Type()))
	}
	iv := offset.Value
	const dayNanos = int64(86400e9)
	if iv.Months != 0 {
		b.fail(fb.Pos, "a RANGE frame offset must be a day-time INTERVAL: months and years vary in length")
	}
	if int64(iv.Days) > (math.MaxInt64-max(iv.Nanoseconds, 0))/dayNanos {
		return math.MaxInt64 / perUnit // past every key (the window saturates)
	}
	nanos := int64(iv.Days)*dayNanos + iv.Nanoseconds
	if nanos < 0 || iv.Days < 0 {
		b.fail(fb.Pos, "a RANGE frame offset must not be negative")
	}
	return nanos / perUnit // keys are whole units: a part of one reaches no further
}

func noAggIf(cond bool, what string) string {
	if cond {
		return what
	}
	return ""
}

func (b *binder) bindFrame(f *sql.Frame, keys []SortKey) *exec.Frame {
	fr := &exec.Frame{Rows: f.Unit == "ROWS"}
	bound := func(fb *sql.FrameBound) exec.FrameBound {
		switch fb.Kind {
		case "UNBOUNDED PRECEDING":
			return exec.FrameBound{Kind: exec.UnboundedPreceding}
		case "UNBOUNDED FOLLOWING":
			return exec.FrameBound{Kind: exec.UnboundedFollowing}
		case "CURRENT ROW":
			return exec.FrameBound{Kind: exec.CurrentRow}
		}
		var v int64
		if fr.Rows {
			c := b.constExpr(fb.Offset, arrow.PrimitiveTypes.Int64)
			var ok bool
			if v, ok = constInt(c); !ok || v < 0 {
				b.fail(fb.Pos, "window frame offset must be a non-negative integer")
			}
		} else {
			v = b.rangeOffset(fb, keys)
		}
		if fb.Kind == "PRECEDING" {
			return exec.FrameBound{Kind: exec.Preceding, Offset: v}
		}
		return exec.FrameBound{Kind: exec.Following, Offset: v}
	}
	fr.Start = bound(f.Start)
	fr.End = exec.FrameBound{Kind: exec.CurrentRow}
	if f.End != nil {
		fr.End = bound(f.End)
	}
	if fr.Start.Kind == exec.UnboundedFollowing || fr.End.Kind == exec.UnboundedPreceding {
		b.fail(f.Pos, "invalid window frame")
	}
	return fr
}
