package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Computed columns and the watermark of a table are kept in its options
// under the keys Flink's catalog (and Paimon's Flink catalog) use, so the
// table's schema holds the physical columns only:
//
//	schema.N.name / schema.N.data-type / schema.N.expr   computed column at position N
//	schema.watermark.0.rowtime                           the event-time column
//	schema.watermark.0.strategy.expr                     its expression (col or col - INTERVAL)
//	schema.watermark.0.strategy.data-type                the column's type
const (
	schemaOptionPrefix = "schema."
	wmRowtimeOpt       = "schema.watermark.0.rowtime"
	wmExprOpt          = "schema.watermark.0.strategy.expr"
	wmTypeOpt          = "schema.watermark.0.strategy.data-type"
)

// computedCol is a computed column: its position among all the table's
// columns, name, type and SQL text.
type computedCol struct {
	pos  int
	name string
	typ  string
	expr string
}

// watermarkDef is a table's WATERMARK FOR rowtime AS expr.
type watermarkDef struct {
	rowtime string
	expr    string
	typ     string
}

// tableComputed reads the computed columns (by position) and watermark
// (nil: none) of a table's options.
func tableComputed(opts map[string]string) ([]computedCol, *watermarkDef) {
	var cols []computedCol
	for k, v := range opts {
		rest, ok := strings.CutPrefix(k, schemaOptionPrefix)
		if !ok {
			continue
		}
		n, ok := strings.CutSuffix(rest, ".expr")
		if !ok {
			continue
		}
		pos, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		p := schemaOptionPrefix + n
		cols = append(cols, computedCol{pos: pos, name: opts[p+".name"], typ: opts[p+".data-type"], expr: v})
	}
	slices.SortFunc(cols, func(a, b computedCol) int { return a.pos - b.pos })
	var wm *watermarkDef
	if r, ok := opts[wmRowtimeOpt]; ok {
		wm = &watermarkDef{rowtime: r, expr: opts[wmExprOpt], typ: opts[wmTypeOpt]}
	}
	return cols, wm
}

// userOptions are a table's options without the computed columns and the
// watermark (which SHOW CREATE TABLE renders as DDL).
func userOptions(opts map[string]string) map[string]string {
	out := maps.Clone(opts)
	maps.DeleteFunc(out, func(k, _ string) bool { return strings.HasPrefix(k, schemaOptionPrefix) })
	return out
}

// parseStoredExpr parses the SQL text of a stored expression.
func parseStoredExpr(text string) (sql.Expr, error) {
	st, err := sql.ParseOne("SELECT " + text)
	if err != nil {
		return nil, err
	}
	if q, ok := st.(*sql.Query); ok {
		if s, ok := q.Body.(*sql.Select); ok && len(s.Items) == 1 && s.From == nil {
			return s.Items[0].Expr, nil
		}
	}
	return nil, fmt.Errorf("%q is not one expression", text)
}

// bindComputedExpr binds a computed column's expression over the physical
// columns in sc: a scalar without aggregates, subqueries or parameters.
func (b *binder) bindComputedExpr(e sql.Expr, sc *scope, name string) Expr {
	var node Node = &ValuesNode{}
	before := node
	params := b.maxParam
	x := b.bindScalar(e, sc, &node, exprOpts{noAgg: "a computed column"})
	if node != before {
		b.fail(e.Position(), "computed column %q cannot contain a subquery", name)
	}
	if b.maxParam != params {
		b.fail(e.Position(), "computed column %q cannot contain a parameter", name)
	}
	return x
}

// createComputed validates the computed columns and watermark of CREATE
// TABLE and records them in opts. physical are the table's stored fields.
func (b *binder) createComputed(s *sql.CreateTable, physical []arrow.Field, opts map[string]string) {
	for _, p := range s.With {
		if strings.HasPrefix(p.Key, schemaOptionPrefix) {
			b.fail(p.Pos, "table option %q is reserved: computed columns and WATERMARK are declared in the column list", p.Key)
		}
	}
	var cols []Column
	for _, f := range physical {
		cols = append(cols, b.newCol(f.Name, f.Type, f.Nullable))
	}
	sc := newScope(cols, "")
	types := map[string]arrow.DataType{}
	for _, f := range physical {
		types[f.Name] = f.Type
	}
	for i, c := range s.Columns {
		if c.Computed == nil {
			continue
		}
		if s.As != nil {
			b.fail(c.Pos, "CREATE TABLE AS cannot declare computed columns")
		}
		e := b.bindComputedExpr(c.Computed, sc, c.Name)
		types[c.Name] = e.Type()
		p := fmt.Sprintf("%s%d.", schemaOptionPrefix, i)
		opts[p+"name"] = c.Name
		opts[p+"data-type"] = SQLTypeName(e.Type())
		opts[p+"expr"] = sql.Format(c.Computed)
	}
	w := s.Watermark
	if w == nil {
		return
	}
	typ, ok := types[w.Column]
	if !ok {
		b.fail(w.Pos, "WATERMARK FOR %q: no such column", w.Column)
	}
	if typ.ID() != arrow.TIMESTAMP {
		b.fail(w.Pos, "WATERMARK FOR %q: the column must be a TIMESTAMP, got %s", w.Column, SQLTypeName(typ))
	}
	b.watermarkDelay(w.Expr, w.Column)
	opts[wmRowtimeOpt] = w.Column
	opts[wmExprOpt] = sql.Format(w.Expr)
	opts[wmTypeOpt] = SQLTypeName(typ)
}

// watermarkDelay checks a watermark expression, col or col - INTERVAL
// (bounded out-of-orderness), and returns the delay in microseconds.
func (b *binder) watermarkDelay(e sql.Expr, col string) int64 {
	isCol := func(x sql.Expr) bool {
		id, ok := x.(*sql.Ident)
		return ok && len(id.Parts) == 1 && id.Parts[0] == col
	}
	if isCol(e) {
		return 0
	}
	bin, ok := e.(*sql.Binary)
	if ok && bin.Op == "-" && isCol(bin.Left) {
		if l, ok := bin.Right.(*sql.IntervalLiteral); ok {
			iv := b.intervalLiteral(l).(*Const).Value.(*scalar.MonthDayNanoInterval).Value
			if iv.Months != 0 {
				b.fail(l.Pos, "WATERMARK delay must be in days or smaller units, not months or years")
			}
			d, ok := intervalMicros(iv)
			if !ok {
				b.fail(l.Pos, "WATERMARK delay %s is too long", sql.Format(l))
			}
			if d < 0 {
				b.fail(l.Pos, "WATERMARK delay must not be negative")
			}
			return d
		}
	}
	b.notImplemented(e.Position(), fmt.Sprintf("WATERMARK expression %s (only %s or %s - INTERVAL '...' unit)", sql.Format(e), col, col))
	return 0
}

// computedScope wraps a scan of a table with computed columns in the
// projection that evaluates them, columns in declared order. Other nodes
// are returned as they are.
func (b *binder) computedScope(scan *ScanNode) Node {
	cc, _ := tableComputed(scan.Table.Options())
	if len(cc) == 0 {
		return scan
	}
	var phys []Column
	for i, c := range scan.Cols {
		if scan.Names[i] != tablestore.RowKindColumn {
			phys = append(phys, c)
		}
	}
	sc := newScope(phys, "")
	p := &ProjectNode{Input: scan}
	add := func(e Expr, name string, typ arrow.DataType, nullable bool) {
		p.Exprs = append(p.Exprs, e)
		p.Cols = append(p.Cols, b.newCol(name, typ, nullable))
	}
	if scan.Stream != nil {
		k := scan.Cols[0] // the stream's row kind comes first
		add(colRef(k), k.Name, k.Type, k.Nullable)
	}
	next := 0
	for pos := 0; pos < len(phys)+len(cc); pos++ {
		if len(cc) > 0 && cc[0].pos == pos {
			c := cc[0]
			cc = cc[1:]
			e := b.storedComputed(scan.Table, c.name, c.expr, sc)
			add(e, c.name, e.Type(), true)
			continue
		}
		if next < len(phys) {
			add(colRef(phys[next]), phys[next].Name, phys[next].Type, phys[next].Nullable)
			next++
		}
	}
	for _, c := range cc { // positions past the end (columns dropped since)
		e := b.storedComputed(scan.Table, c.name, c.expr, sc)
		add(e, c.name, e.Type(), true)
	}
	return p
}

// storedComputed binds a stored computed column of t over sc.
func (b *binder) storedComputed(t *tablestore.Table, name, text string, sc *scope) Expr {
	e, err := parseStoredExpr(text)
	if err != nil {
		b.fail(sql.Pos{}, "table %s: computed column %q: %v", t.Ident(), name, err)
	}
	return b.bindComputedExpr(e, sc, name)
}

// refuseComputedWrite fails when col is a computed column of t.
func (b *binder) refuseComputedWrite(pos sql.Pos, t *tablestore.Table, col string) {
	cc, _ := tableComputed(t.Options())
	for _, c := range cc {
		if c.name == col {
			b.fail(pos, "column %q of table %s is computed (AS %s): it cannot be written", col, t.Ident(), c.expr)
		}
	}
}

// refuseComputedAlter refuses schema changes of tables with computed
// columns or a watermark: their expressions name columns by name.
func (b *binder) refuseComputedAlter(pos sql.Pos, t *tablestore.Table, what string) {
	cc, wm := tableComputed(t.Options())
	if len(cc) > 0 || wm != nil {
		b.notImplemented(pos, fmt.Sprintf("%s of table %s with computed columns or a WATERMARK", what, t.Ident()))
	}
}

// alterTarget is the table an ALTER TABLE changes.
func (b *binder) alterTarget(name *sql.Name) *tablestore.Table {
	t, _ := b.table(name)
	return t
}

// refuseSchemaOption refuses ALTER TABLE SET/RESET of the options that
// hold computed columns and the watermark.
func (b *binder) refuseSchemaOption(pos sql.Pos, key string) {
	if strings.HasPrefix(key, schemaOptionPrefix) {
		b.fail(pos, "table option %q is reserved for computed columns and WATERMARK, which ALTER TABLE cannot change yet", key)
	}
}
