package plan

import (
	"cmp"

	"github.com/flightd/flightd/sql"
)

// ruleMergeScalars switches a choice of the binder, as ruleSharedCTE: the
// uncorrelated scalar subqueries of a statement that differ only in their
// one aggregate (same FROM of tables, same WHERE) are answered by one query
// computing all their aggregates, read as a shared CTE. q09 has fifteen
// over store_sales, three per quantity range: each range's rows were
// scanned, filtered and copied three times (Spark's MergeScalarSubqueries
// does the same; DuckDB does not).
const ruleMergeScalars = "merge_scalar_subqueries"

// scalarGroup is the select items of the scalar subqueries of one shape.
type scalarGroup struct {
	n     int               // occurrences in the statement
	items []*sql.SelectItem // distinct by text, in statement order
	seen  map[string]bool   // item texts
	// inner is items without those that may name an outer query's column,
	// decided at the first use (innerItems); at is the position in inner
	// by item text.
	inner []*sql.SelectItem
	at    map[string]int
}

// mergeableScalars groups the statement's scalar subqueries of the shape
// scalarShape accepts by their FROM and WHERE text, keeping the groups of
// more than one occurrence.
func mergeableScalars(stmt sql.Statement) map[string]*scalarGroup {
	groups := map[string]*scalarGroup{}
	sql.Walk(stmt, func(n sql.Node) bool {
		x, ok := n.(*sql.Subquery)
		if !ok {
			return true
		}
		if sel, key, ok := scalarShape(x.Query); ok {
			g := groups[key]
			if g == nil {
				g = &scalarGroup{seen: map[string]bool{}}
				groups[key] = g
			}
			g.n++
			text := sql.Format(sel.Items[0].Expr)
			if !g.seen[text] {
				g.seen[text] = true
				g.items = append(g.items, &sql.SelectItem{Pos: sel.Items[0].Pos, Expr: sel.Items[0].Expr})
			}
		}
		return true
	})
	for key, g := range groups {
		if g.n < 2 {
			delete(groups, key)
		}
	}
	return groups
}

// scalarShape accepts SELECT agg FROM t1, t2 ... [WHERE ...]: one item
// with an aggregate and no window call, tables by name only (no hint, no
// AS OF), no GROUP BY, HAVING, DISTINCT, WITH, ORDER BY or LIMIT, no
// subquery and no volatile call. Its key is the text of its FROM and WHERE.
// A table a streaming query reads has a scan.mode hint, so none of these
// reads a stream (a streaming plan reads no shared CTE).
func scalarShape(q *sql.Query) (*sql.Select, string, bool) {
	sel, ok := q.Body.(*sql.Select)
	if !ok || q.With != nil || q.OrderBy != nil || q.Limit != nil || q.Offset != nil ||
		sel.Hints != nil || sel.Distinct || len(sel.Items) != 1 || len(sel.From) == 0 ||
		sel.GroupBy != nil || sel.Having != nil || sel.Windows != nil {
		return nil, "", false
	}
	if _, star := sel.Items[0].Expr.(*sql.Star); star {
		return nil, "", false
	}
	for _, f := range sel.From {
		t, ok := f.(*sql.TableName)
		if !ok || t.Hints != nil || t.SystemTime != nil {
			return nil, "", false
		}
	}
	nested := false
	sql.Walk(sel, func(n sql.Node) bool {
		switch n.(type) {
		case *sql.Subquery, *sql.Exists, *sql.InSubquery, *sql.DerivedTable:
			nested = true
		}
		return !nested
	})
	if nested || callsVolatile(q) || len(collectCalls(sel, nil, true)) == 0 || len(collectCalls(sel, nil, false)) > 0 {
		return nil, "", false
	}
	key := sql.Format(&sql.Query{Body: &sql.Select{Items: []*sql.SelectItem{{Expr: &sql.Star{}}}, From: sel.From, Where: sel.Where}})
	return sel, key, true
}

// mergedScalar returns the shared plan of q's group and the position of
// q's value among its columns, for an uncorrelated scalar subquery q just
// bound (so it names no outer column and reads no stream): its FROM and
// WHERE in the merged query mean what they mean in q. Not in a view's
// query (its names resolve in the view's database), and not where a FROM
// name is a CTE (q's own binding counted a reference to it).
func (b *binder) mergedScalar(q *sql.Query) (Node, int, bool) {
	if b.scalars == nil || b.streamPos != nil || !b.enabled(ruleSharedCTE) || !b.enabled(ruleMergeScalars) ||
		b.viewDB != "" || len(b.viewStack) > 0 {
		return nil, 0, false
	}
	sel, text, ok := scalarShape(q)
	if !ok {
		return nil, 0, false
	}
	g := b.scalars[text]
	if g == nil {
		return nil, 0, false
	}
	for _, f := range sel.From {
		if name := f.(*sql.TableName).Name.Parts; len(name) == 1 && b.findCTE(name[0]) != nil {
			return nil, 0, false
		}
	}
	b.innerItems(g, sel)
	i, ok := g.at[sql.Format(sel.Items[0].Expr)]
	if !ok {
		return nil, 0, false
	}
	d := b.scopedDef(&b.mergedScalars, text, func() *sql.CTE {
		body := &sql.Query{Pos: q.Pos, Body: &sql.Select{Pos: sel.Pos, Items: g.inner, From: sel.From, Where: sel.Where}}
		return &sql.CTE{Pos: q.Pos, Name: "(scalar subqueries)", Query: body}
	})
	return b.cteReference(d), i, true
}

// innerItems keeps in g.inner the items whose every column name resolves
// in sel's FROM tables, where it hides any outer column of that name: they
// mean the same in every occurrence. Another occurrence of the shape may
// be correlated, (SELECT max(o.x + a) FROM t) beside (SELECT max(a) FROM
// t), and its item cannot be computed without its outer row. None is kept
// when the WHERE may name an outer column.
func (b *binder) innerItems(g *scalarGroup, sel *sql.Select) {
	if g.at != nil {
		return
	}
	g.at = map[string]int{}
	quals, cols := map[string]bool{}, map[string]bool{}
	for _, f := range sel.From {
		tn := f.(*sql.TableName)
		t, _ := b.table(tn.Name)
		quals[cmp.Or(tn.Alias, tn.Name.Parts[len(tn.Name.Parts)-1])] = true
		for _, fd := range t.Schema().Fields() {
			cols[fd.Name] = true
		}
	}
	inner := func(e sql.Node) bool {
		ok := true
		sql.Walk(e, func(n sql.Node) bool {
			if id, isIdent := n.(*sql.Ident); isIdent {
				ok = ok && (cols[id.Parts[0]] || len(id.Parts) > 1 && quals[id.Parts[0]])
			}
			return ok
		})
		return ok
	}
	if sel.Where != nil && !inner(sel.Where) {
		return
	}
	for _, it := range g.items {
		if inner(it.Expr) {
			g.at[sql.Format(it.Expr)] = len(g.inner)
			g.inner = append(g.inner, it)
		}
	}
}
