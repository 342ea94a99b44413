package plan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// binder turns one AST statement into a bound statement. Errors inside the
// recursive descent unwind through bindFail (recovered in Bind), which
// keeps every step free of error plumbing.
type binder struct {
	// streamPos is where the query's streaming hint is (nil: none).
	streamPos *sql.Pos
	// query: the statement is a query (streams cannot feed DML or DDL).
	query bool
	// insertSource: binding an INSERT's query, which may stream (a
	// continuous job).
	insertSource bool
	ctx          context.Context
	folded       int64 // bytes of the values folding put in the plan
	cat          Catalog
	opts         Options
	nextID       ColumnID
	params       map[int]*paramSlot
	ctes         []map[string]*cteDef
	maxParam     int
	// lateralConds are the pulled correlation conditions of the LATERAL
	// subquery just bound, for the join its caller builds.
	lateralConds []Expr
	// viewDB is the default database while binding a view's query (the
	// view's own); viewStack the views being expanded, innermost last.
	viewDB    string
	viewStack []tablestore.Ident
	// viewStream is the streaming hint (OPTIONS with scan.mode) of the
	// view reference being expanded: it streams the view's tables.
	viewStream []*sql.Hint
	// viewRefs and viewBytes count the view references expanded and their
	// text (view.go); firstView is where the statement names its first.
	viewRefs, viewBytes int
	firstView           sql.Pos
	// cteFilters collects the filters of shared CTEs' references;
	// cteDepth > 0 while optimizeShared plans them.
	cteFilters map[*SharedCTE]*cteFilter
	cteDepth   int
	// repeated holds the text of the derived tables the statement has
	// more than once, derived their definitions as CTEs (cte.go).
	repeated map[string]bool
	derived  map[derivedKey]*cteDef
	// scalars groups the scalar subqueries that can share one query,
	// mergedScalars those queries (scalar_merge.go).
	scalars       map[string]*scalarGroup
	mergedScalars map[derivedKey]*cteDef
	// streamTVFs counts the window TVFs bound over streams
	// (stream_window.go).
	streamTVFs int
	// lookupSide: binding the table a temporal join looks rows up in,
	// which is read as a snapshot, never as a stream.
	lookupSide bool
}

type cteDef struct {
	cte    *sql.CTE
	env    []map[string]*cteDef // the CTEs its body can see
	shared *SharedCTE           // bound at the first reference (rule shared_cte)
	// unshared: each reference binds its own plan (a streaming query reads
	// its streams once per reference).
	unshared bool
}

type bindFail struct{ err error }

func (b *binder) fail(pos sql.Pos, format string, args ...any) {
	panic(bindFail{sql.Errorf(pos, format, args...)})
}

// failWrap reports err at pos, keeping it matchable with errors.Is.
func (b *binder) failWrap(pos sql.Pos, err error, format string, args ...any) {
	e := sql.Errorf(pos, format, args...)
	panic(bindFail{&posError{pos: e, wrapped: err}})
}

// posError is a positioned error that also wraps a sentinel.
type posError struct {
	pos     *sql.Error
	wrapped error
}

func (e *posError) Error() string   { return e.pos.Error() }
func (e *posError) Unwrap() []error { return []error{e.pos, e.wrapped} }

// checkCtx stops planning once ctx is done, with ctx's error: a client that
// cancelled or went away must not keep a core planning for it. Planning
// loops whose work grows with the statement call it.
func checkCtx(ctx context.Context) {
	if err := ctx.Err(); err != nil {
		panic(bindFail{err})
	}
}

func (b *binder) notImplemented(pos sql.Pos, what string) {
	b.failWrap(pos, ErrNotImplemented, "%s is not implemented yet", what)
}

// Bind binds, optimizes and physically plans one statement.
func Bind(ctx context.Context, stmt sql.Statement, cat Catalog, opts Options) (bound Statement, err error) {
	b := &binder{ctx: ctx, cat: cat, opts: opts, params: map[int]*paramSlot{}}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(bindFail)
			if !ok {
				panic(r)
			}
			bound, err = nil, f.err
		}
	}()
	b.repeated = repeatedDerived(stmt)
	b.scalars = mergeableScalars(stmt)
	bound = b.bindStatement(stmt)
	if b.streamPos != nil {
		switch x := bound.(type) {
		case *Query:
		case *Explain:
			if x.Analyze {
				b.fail(*b.streamPos, "EXPLAIN ANALYZE of a streaming query would never end")
			}
		}
	}
	return bound, nil
}

func (b *binder) newCol(name string, typ arrow.DataType, nullable bool) Column {
	b.nextID++
	return Column{ID: b.nextID, Name: name, Type: typ, Nullable: nullable}
}

func (b *binder) param(p *sql.Param) *ParamRef {
	s, ok := b.params[p.Index]
	if !ok {
		s = &paramSlot{}
		b.params[p.Index] = s
	}
	b.maxParam = max(b.maxParam, p.Index)
	return &ParamRef{Index: p.Index, slot: s}
}

// finishQuery optimizes a bound plan and wraps it as a Query.
func (b *binder) finishQuery(root Node) *Query {
	if b.streamPos == nil {
		root = b.optimize(root)
		batch := b.planPhysical(root)
		params := b.paramSchema()
		return &Query{root: root, batch: batch, schema: schemaOf(root.Columns()), params: params, batchParams: params != nil && batchesParams(batch)}
	}
	b.passStreamKind(root)
	root = b.optimize(root)
	sp := b.planStream(root)
	return &Query{root: root, schema: sp.schema, params: b.paramSchema(), streaming: true, stream: sp}
}

func (b *binder) paramSchema() *arrow.Schema {
	if b.maxParam == 0 {
		return nil
	}
	fields := make([]arrow.Field, b.maxParam)
	for i := range fields {
		s := b.params[i+1]
		typ := arrow.DataType(arrow.BinaryTypes.String)
		if s != nil && s.typ != nil {
			typ = s.typ
		}
		fields[i] = arrow.Field{Name: "$" + strconv.Itoa(i+1), Type: typ, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// defaultParamTypes gives parameters whose type no context decided the
// string type, so that clients can still bind them.
func (b *binder) defaultParamTypes() {
	for _, s := range b.params {
		if s.typ == nil {
			s.typ = arrow.BinaryTypes.String
		}
	}
}

func (b *binder) bindStatement(stmt sql.Statement) Statement {
	switch s := stmt.(type) {
	case *sql.Query:
		b.query = true
		n, _ := b.bindQuery(s, nil, nil)
		b.defaultParamTypes()
		return b.finishQuery(n)
	case *sql.Insert:
		return b.bindInsert(s)
	case *sql.Delete:
		return b.bindDelete(s)
	case *sql.Merge:
		return b.bindMerge(s)
	case *sql.Copy:
		return b.bindCopy(s)
	case *sql.Update:
		return b.bindUpdate(s)
	case *sql.CreateTable:
		return b.bindCreateTable(s)
	case *sql.DropTable:
		if s.Materialized {
			return &DropMaterialized{Ident: b.ident(s.Name), IfExists: s.IfExists}
		}
		return &DropTable{Ident: b.ident(s.Name), IfExists: s.IfExists}
	case *sql.AlterTable:
		return b.bindAlter(s)
	case *sql.CreateDatabase:
		return &CreateDatabase{Name: s.Name, IfNotExists: s.IfNotExists, Options: b.databaseOptions(s.With)}
	case *sql.AlterDatabase:
		return &AlterDatabase{Name: s.Name, Options: b.databaseOptions(s.Set)}
	case *sql.DropDatabase:
		return &DropDatabase{Name: s.Name, IfExists: s.IfExists, Cascade: s.Cascade}
	case *sql.Use:
		return &UseDatabase{Name: s.Name}
	case *sql.StopJob:
		return &StopJob{ID: s.ID}
	case *sql.Call:
		return b.bindProcedure(s)
	case *sql.Explain:
		return &Explain{Target: b.bindStatement(s.Stmt), Analyze: s.Analyze, Format: s.Format}
	case *sql.Transaction:
		return &Transaction{Kind: TxnKind(s.Kind)}
	case *sql.Show:
		return b.bindShow(s)
	case *sql.Describe:
		if s.Extended {
			return b.bindDescribeExtended(s.Name)
		}
		return b.bindDescribe(s.Name)
	case *sql.CreateMaterializedTable:
		return b.bindCreateMaterialized(s)
	case *sql.AlterMaterializedTable:
		return b.bindAlterMaterialized(s)
	case *sql.SetStmt:
		b.notImplemented(s.Pos, "SET")
	case *sql.CreateView:
		return b.bindCreateView(s)
	case *sql.DropView:
		if s.Temporary {
			b.notImplemented(s.Pos, "temporary views")
		}
		return &DropView{Ident: b.ident(s.Name), IfExists: s.IfExists}
	case *sql.CreateFunction:
		b.notImplemented(s.Position(), "user-defined functions")
	}
	b.fail(stmt.Position(), "unsupported statement %T", stmt)
	return nil
}

func (b *binder) ident(n *sql.Name) tablestore.Ident {
	switch len(n.Parts) {
	case 1:
		db := b.cat.CurrentDatabase()
		if b.viewDB != "" {
			db = b.viewDB
		}
		return tablestore.Ident{Database: db, Table: n.Parts[0]}
	case 2:
		return tablestore.Ident{Database: n.Parts[0], Table: n.Parts[1]}
	}
	b.fail(n.Pos, "table name %s has too many parts (catalogs are not supported)", sql.Format(n))
	return tablestore.Ident{}
}

func (b *binder) table(n *sql.Name) (*tablestore.Table, int64) {
	id := b.ident(n)
	t, snap, err := b.cat.Table(b.ctx, id)
	if err != nil {
		if errors.Is(err, tablestore.ErrTableNotFound) || errors.Is(err, tablestore.ErrDatabaseNotFound) {
			if vc := b.views(); vc != nil {
				if _, verr := vc.View(b.ctx, id); verr == nil {
					// The name exists: the statement is wrong for it
					// (InvalidArgument), not a missing table's NotFound.
					b.fail(n.Pos, "%s is a view, not a table", id)
				}
			}
			b.failWrap(n.Pos, err, "table %s not found", id)
		}
		b.failWrap(n.Pos, err, "table %s: %v", id, err)
	}
	return t, snap
}

// ---- DML

func (b *binder) bindInsert(s *sql.Insert) Statement {
	t, _ := b.table(s.Table)
	b.refuseMaterializedWrite(s.Pos, t, "INSERT")
	schema := t.Schema()
	ins := &Insert{Table: t, Overwrite: s.Overwrite, DynamicOverwrite: t.DynamicPartitionOverwrite()}
	for _, h := range s.Hints {
		if h.Name != "OPTIONS" {
			b.fail(h.Pos, "unknown table hint %s", h.Name)
		}
		for _, o := range h.Options {
			if o.Key != "dynamic-partition-overwrite" {
				b.notImplemented(o.Pos, fmt.Sprintf("table option %q in an INSERT hint", o.Key))
			}
			v, err := strconv.ParseBool(o.Value)
			if err != nil {
				b.fail(o.Pos, "%s: want true or false, got %q", o.Key, o.Value)
			}
			ins.DynamicOverwrite = v
		}
	}
	static := map[string]*Const{}
	if len(s.Partition) > 0 {
		ins.Partition = map[string]string{}
		for _, pv := range s.Partition {
			idx := schema.FieldIndices(pv.Column)
			if len(idx) == 0 {
				b.fail(pv.Pos, "partition column %q not found in table %s", pv.Column, t.Ident())
			}
			if !slices.Contains(t.PartitionKeys(), pv.Column) {
				b.fail(pv.Pos, "column %q is not a partition key of table %s", pv.Column, t.Ident())
			}
			v := b.constExpr(pv.Value, schema.Field(idx[0]).Type)
			static[pv.Column] = v
			ins.Partition[pv.Column] = v.Value.String()
		}
	}
	// Target columns of the source, in source order.
	var targets []string
	if s.Columns != nil {
		seen := map[string]bool{}
		for _, c := range s.Columns {
			b.refuseComputedWrite(s.Pos, t, c)
			if len(schema.FieldIndices(c)) == 0 {
				b.fail(s.Pos, "column %q not found in table %s", c, t.Ident())
			}
			if seen[c] {
				b.fail(s.Pos, "column %q listed twice", c)
			}
			if static[c] != nil {
				b.fail(s.Pos, "column %q is given in PARTITION and in the column list", c)
			}
			seen[c] = true
			targets = append(targets, c)
		}
	} else {
		for _, f := range schema.Fields() {
			if static[f.Name] == nil {
				targets = append(targets, f.Name)
			}
		}
	}
	hints := make([]arrow.DataType, len(targets))
	for i, c := range targets {
		hints[i] = schema.Field(schema.FieldIndices(c)[0]).Type
	}
	b.insertSource = true
	src, _ := b.bindQuery(s.Source, nil, hints)
	// A streaming source's row kind (which SELECT * of a stream shows) is
	// how the job applies the row, not a value for a column.
	srcCols := slices.DeleteFunc(slices.Clone(src.Columns()), func(c Column) bool {
		return c.Name == tablestore.RowKindColumn && b.isStreamKind(src, c.ID)
	})
	if len(srcCols) != len(targets) {
		b.fail(s.Source.Pos, "INSERT into %s has %d target columns but the query produces %d", t.Ident(), len(targets), len(srcCols))
	}
	exprs := make([]Expr, len(schema.Fields()))
	cols := make([]Column, len(schema.Fields()))
	for i, f := range schema.Fields() {
		var e Expr
		if v := static[f.Name]; v != nil {
			e = v
		} else if j := slices.Index(targets, f.Name); j >= 0 {
			c := srcCols[j]
			e = b.assignCast(colRef(c), f.Type, s.Source.Pos, f.Name)
		} else {
			if !f.Nullable {
				b.failState(stateNotNull, s.Pos, "column %q of table %s is NOT NULL and has no value", f.Name, t.Ident())
			}
			e = nullOf(f.Type)
		}
		exprs[i] = e
		cols[i] = b.newCol(f.Name, f.Type, f.Nullable)
	}
	b.defaultParamTypes()
	ins.Source = b.finishQuery(&ProjectNode{Input: src, Exprs: exprs, Cols: cols})
	if ins.Source.Streaming() {
		b.checkJobSink(ins)
	}
	return ins
}

// tableScope scans a whole table for DELETE and UPDATE.
func (b *binder) tableScope(name *sql.Name, alias string) (*tablestore.Table, *ScanNode, *scope) {
	t, snap := b.table(name)
	qual := name.Parts[len(name.Parts)-1]
	if alias != "" {
		qual = alias
	}
	scan := b.scanNode(name.Pos, t, snap, qual)
	return t, scan, newScope(scan.Cols, qual)
}

func (b *binder) bindDelete(s *sql.Delete) Statement {
	t, scan, sc := b.tableScope(s.Table, s.Alias)
	b.refuseMaterializedWrite(s.Pos, t, "DELETE")
	if err := t.CheckRowLevel(false); err != nil {
		b.failWrap(s.Pos, err, "%v", err)
	}
	d := &Delete{Table: t}
	if s.Where == nil {
		// Everything goes: Kept is empty.
		d.Deleted = b.finishQuery(scan)
		_, scan2, _ := b.tableScope(s.Table, s.Alias)
		d.Kept = b.finishQuery(&FilterNode{Input: scan2, Pred: &Const{Value: boolScalar(false)}})
		return d
	}
	var node Node = scan
	pred := b.bindPredicate(s.Where, sc, &node, "WHERE")
	deleted := b.project(&FilterNode{Input: node, Pred: pred}, scan.Cols)
	_, scan2, sc2 := b.tableScope(s.Table, s.Alias)
	var node2 Node = scan2
	pred2 := b.bindPredicate(s.Where, sc2, &node2, "WHERE")
	kept := b.project(&FilterNode{Input: node2, Pred: notTrue(pred2)}, scan2.Cols)
	// Both queries share the parameters: settle their types first.
	b.defaultParamTypes()
	d.Deleted = b.finishQuery(deleted)
	d.Kept = b.finishQuery(kept)
	return d
}

func (b *binder) bindUpdate(s *sql.Update) Statement {
	t, scan, sc := b.tableScope(s.Table, s.Alias)
	b.refuseMaterializedWrite(s.Pos, t, "UPDATE")
	if err := t.CheckRowLevel(true); err != nil {
		b.failWrap(s.Pos, err, "%v", err)
	}
	schema := t.Schema()
	sets := map[string]*sql.Assignment{}
	for _, a := range s.Sets {
		b.refuseComputedWrite(a.Pos, t, a.Column)
		if len(schema.FieldIndices(a.Column)) == 0 {
			b.fail(a.Pos, "column %q not found in table %s", a.Column, t.Ident())
		}
		if slices.Contains(t.PrimaryKey(), a.Column) {
			b.fail(a.Pos, "cannot update primary key column %q", a.Column)
		}
		if slices.Contains(t.PartitionKeys(), a.Column) {
			b.fail(a.Pos, "cannot update partition column %q", a.Column)
		}
		if sets[a.Column] != nil {
			b.fail(a.Pos, "column %q assigned twice", a.Column)
		}
		sets[a.Column] = a
	}
	build := func(scan *ScanNode, sc *scope, all bool) Node {
		var node Node = scan
		var pred Expr
		if s.Where != nil {
			pred = b.bindPredicate(s.Where, sc, &node, "WHERE")
		}
		exprs := make([]Expr, len(scan.Cols))
		cols := make([]Column, len(scan.Cols))
		for i, c := range scan.Cols {
			old := colRef(c)
			var e Expr = old
			if a := sets[c.Name]; a != nil {
				v := b.bindScalar(a.Value, sc, &node, withHint(c.Type))
				e = b.assignCast(v, c.Type, a.Pos, c.Name)
				if all && pred != nil {
					e = &Case{Whens: []CaseWhen{{Cond: pred, Then: e}}, Else: old, Typ: c.Type}
				}
			}
			exprs[i] = e
			cols[i] = b.newCol(c.Name, c.Type, c.Nullable)
		}
		if !all && pred != nil {
			node = &FilterNode{Input: node, Pred: pred}
		}
		return &ProjectNode{Input: node, Exprs: exprs, Cols: cols}
	}
	u := &Update{Table: t}
	updated := build(scan, sc, false)
	_, scan2, sc2 := b.tableScope(s.Table, s.Alias)
	all := build(scan2, sc2, true)
	b.defaultParamTypes()
	u.Updated = b.finishQuery(updated)
	u.All = b.finishQuery(all)
	return u
}

// project keeps cols of n (dropping columns joins added).
func (b *binder) project(n Node, cols []Column) Node {
	exprs := make([]Expr, len(cols))
	for i, c := range cols {
		exprs[i] = colRef(c)
	}
	return &ProjectNode{Input: n, Exprs: exprs, Cols: cols}
}

// assignCast converts a value for storing into a column of type to;
// implicit conversions stay within a type family.
func (b *binder) assignCast(e Expr, to arrow.DataType, pos sql.Pos, col string) Expr {
	from := e.Type()
	if arrow.TypeEqual(from, to) {
		return e
	}
	if p, ok := e.(*ParamRef); ok && p.slot.typ == nil {
		p.slot.typ = to
		return e
	}
	_, isConst := e.(*Const)
	if from.ID() == arrow.NULL || family(from) == family(to) || isConst && family(from) == famString && family(to) == famTemporal {
		return b.castTo(e, to, pos)
	}
	b.fail(pos, "column %q has type %s, cannot assign a value of type %s", col, SQLTypeName(to), SQLTypeName(from))
	return nil
}

type typeFamily int

const (
	famOther typeFamily = iota
	famNumeric
	famString
	famBinary
	famTemporal
	famBool
)

func family(dt arrow.DataType) typeFamily {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32,
		arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128:
		return famNumeric
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return famString
	case arrow.BINARY, arrow.LARGE_BINARY:
		return famBinary
	case arrow.DATE32, arrow.TIMESTAMP, arrow.TIME64:
		return famTemporal
	case arrow.BOOL:
		return famBool
	}
	return famOther
}

// ---- DDL

func (b *binder) bindCreateTable(s *sql.CreateTable) Statement {
	ct := &CreateTable{Ident: b.ident(s.Name), IfNotExists: s.IfNotExists, OrReplace: s.OrReplace}
	b.checkNewName(s.Name, ct.Ident)
	var fields []arrow.Field
	if s.As != nil {
		if s.Columns != nil {
			b.fail(s.Pos, "CREATE TABLE AS takes its columns from the query; drop the column list")
		}
		n, _ := b.bindQuery(s.As, nil, nil)
		b.defaultParamTypes()
		if b.maxParam > 0 {
			b.fail(s.As.Pos, "CREATE TABLE AS cannot have parameters")
		}
		ct.As = b.finishQuery(n)
		for _, c := range n.Columns() {
			fields = append(fields, arrow.Field{Name: c.Name, Type: c.Type, Nullable: true})
		}
	}
	seen := map[string]bool{}
	for _, c := range s.Columns {
		if seen[c.Name] {
			b.fail(c.Pos, "column %q defined twice", c.Name)
		}
		seen[c.Name] = true
		if c.Computed != nil {
			continue
		}
		typ, err := ArrowType(c.Type)
		if err != nil {
			panic(bindFail{err})
		}
		md := arrow.Metadata{}
		if c.Comment != "" {
			md = arrow.NewMetadata([]string{"comment"}, []string{c.Comment})
		}
		fields = append(fields, arrow.Field{Name: c.Name, Type: typ, Nullable: !c.NotNull, Metadata: md})
	}
	names := map[string]int{}
	for i, f := range fields {
		if _, dup := names[f.Name]; dup {
			b.fail(s.Pos, "column %q appears twice", f.Name)
		}
		names[f.Name] = i
	}
	for _, k := range s.PrimaryKey {
		i, ok := names[k]
		if !ok {
			b.fail(s.PrimaryKeyPos, "primary key column %q is not a column of the table", k)
		}
		fields[i].Nullable = false
	}
	for _, k := range s.PartitionedBy {
		if _, ok := names[k]; !ok {
			b.fail(s.Pos, "partition column %q is not a column of the table", k)
		}
	}
	opts := map[string]string{}
	for _, p := range s.With {
		opts[p.Key] = p.Value
	}
	b.createComputed(s, fields, opts)
	ct.Def = tablestore.TableDef{
		Schema:        arrow.NewSchema(fields, nil),
		PrimaryKey:    s.PrimaryKey,
		PartitionKeys: s.PartitionedBy,
		Options:       opts,
		Comment:       s.Comment,
	}
	return ct
}

func (b *binder) bindAlter(s *sql.AlterTable) Statement {
	at := &AlterTable{Ident: b.ident(s.Name)}
	for _, a := range s.Actions {
		switch a := a.(type) {
		case *sql.AddColumn:
			if a.Column.NotNull {
				b.fail(a.Pos, "an added column must be nullable (existing rows read it as NULL)")
			}
			typ, err := ArrowType(a.Column.Type)
			if err != nil {
				panic(bindFail{err})
			}
			at.Changes = append(at.Changes, tablestore.AddColumn{Name: a.Column.Name, Type: typ, Comment: a.Column.Comment})
		case *sql.DropColumn:
			b.refuseComputedAlter(a.Pos, b.alterTarget(s.Name), "DROP COLUMN")
			at.Changes = append(at.Changes, tablestore.DropColumn{Name: a.Name})
		case *sql.RenameColumn:
			b.refuseComputedAlter(a.Pos, b.alterTarget(s.Name), "RENAME COLUMN")
			at.Changes = append(at.Changes, tablestore.RenameColumn{Old: a.Old, New: a.New})
		case *sql.AlterColumnType:
			b.refuseComputedAlter(a.Pos, b.alterTarget(s.Name), "changing a column type")
			typ, err := ArrowType(a.Type)
			if err != nil {
				panic(bindFail{err})
			}
			at.Changes = append(at.Changes, tablestore.UpdateColumnType{Name: a.Column, Type: typ})
		case *sql.SetOptions:
			for _, p := range a.Options {
				b.refuseSchemaOption(p.Pos, p.Key)
				at.Changes = append(at.Changes, tablestore.SetOption{Key: p.Key, Value: p.Value})
			}
		case *sql.ResetOptions:
			for _, k := range a.Keys {
				b.refuseSchemaOption(a.Pos, k)
				at.Changes = append(at.Changes, tablestore.RemoveOption{Key: k})
			}
		case *sql.RenameTable:
			b.notImplemented(a.Pos, "ALTER TABLE RENAME TO")
		}
	}
	return at
}

// ---- SHOW / DESCRIBE

func (b *binder) stringValues(names []string, rows [][]string) *Query {
	cols := make([]Column, len(names))
	for i, n := range names {
		cols[i] = b.newCol(n, arrow.BinaryTypes.String, false)
	}
	vals := make([][]Expr, len(rows))
	for i, r := range rows {
		vals[i] = make([]Expr, len(r))
		for j, v := range r {
			vals[i][j] = &Const{Value: stringScalar(v)}
		}
	}
	root := &ValuesNode{Values: vals, Cols: cols}
	return &Query{root: root, batch: b.planPhysical(root), schema: schemaOf(cols)}
}

func (b *binder) bindShow(s *sql.Show) Statement {
	var names []string
	var err error
	col := ""
	switch s.What {
	case "DATABASES":
		col = "database_name"
		names, err = b.cat.Databases(b.ctx)
	case "TABLES", "VIEWS":
		col = "table_name"
		db := b.cat.CurrentDatabase()
		if s.From != nil {
			if len(s.From.Parts) != 1 {
				b.fail(s.From.Pos, "expected a database name")
			}
			db = s.From.Parts[0]
		}
		if s.What == "TABLES" {
			names, err = b.cat.Tables(b.ctx, db)
		} else if vc := b.views(); vc != nil {
			col = "view_name"
			names, err = vc.Views(b.ctx, db)
		} else {
			b.notImplemented(s.Pos, "views in this catalog")
		}
	case "CURRENT DATABASE":
		return b.stringValues([]string{"database_name"}, [][]string{{b.cat.CurrentDatabase()}})
	case "COLUMNS":
		return b.bindDescribe(s.From)
	case "CREATE TABLE":
		t, _ := b.table(s.From)
		return b.stringValues([]string{"create_table"}, [][]string{{ShowCreateTable(t)}})
	case "CREATE VIEW":
		return b.showCreateView(s.From)
	case "JOBS":
		return b.showJobs(s)
	case "MATERIALIZED TABLES":
		return b.showMaterializedTables(s)
	case "CREATE MATERIALIZED TABLE":
		return b.showCreateMaterialized(s.From)
	}
	if err != nil {
		b.failWrap(s.Pos, err, "SHOW %s: %v", s.What, err)
	}
	if s.Like != "" {
		names = slices.DeleteFunc(names, func(n string) bool { return !likeMatch(s.Like, n) })
	}
	sort.Strings(names)
	rows := make([][]string, len(names))
	for i, n := range names {
		rows[i] = []string{n}
	}
	return b.stringValues([]string{col}, rows)
}

func (b *binder) bindDescribe(name *sql.Name) Statement {
	if q, ok := b.describeView(name); ok {
		return q
	}
	t, _ := b.table(name)
	return b.stringValues([]string{"name", "type", "null", "key"}, describeRows(t))
}

// describeRows are DESCRIBE's rows of a table: name, type, null, key
// (computed columns: "AS expr"; the watermark's column: its WATERMARK).
func describeRows(t *tablestore.Table) [][]string {
	var rows [][]string
	cc, wm := tableComputed(t.Options())
	fields := t.Schema().Fields()
	for pos := 0; len(fields) > 0 || len(cc) > 0; pos++ {
		if len(cc) > 0 && (cc[0].pos == pos || len(fields) == 0) {
			c := cc[0]
			cc = cc[1:]
			rows = append(rows, []string{c.name, c.typ, "YES", "AS " + c.expr})
			continue
		}
		f := fields[0]
		fields = fields[1:]
		key := ""
		if slices.Contains(t.PrimaryKey(), f.Name) {
			key = "PRI"
		}
		if slices.Contains(t.PartitionKeys(), f.Name) {
			key += "PART"
		}
		null := "YES"
		if !f.Nullable {
			null = "NO"
		}
		rows = append(rows, []string{f.Name, SQLTypeName(f.Type), null, key})
	}
	if wm != nil {
		for _, r := range rows {
			if r[0] == wm.rowtime {
				r[3] = strings.TrimSpace(r[3] + " WATERMARK AS " + wm.expr)
			}
		}
	}
	return rows
}

// ShowCreateTable renders the DDL of a table.
func ShowCreateTable(t *tablestore.Table) string {
	id := t.Ident()
	ct := &sql.CreateTable{Name: &sql.Name{Parts: []string{id.Database, id.Table}}, PrimaryKey: t.PrimaryKey(), PartitionedBy: t.PartitionKeys()}
	for _, f := range t.Schema().Fields() {
		ct.Columns = append(ct.Columns, &sql.ColumnDef{Name: f.Name, Type: typeNameOf(f.Type), NotNull: !f.Nullable})
	}
	cc, wm := tableComputed(t.Options())
	for _, c := range cc {
		// Stored text was formatted from a parsed expression: it parses.
		e, _ := parseStoredExpr(c.expr)
		def := &sql.ColumnDef{Name: c.name, Computed: e}
		ct.Columns = slices.Insert(ct.Columns, min(c.pos, len(ct.Columns)), def)
	}
	if wm != nil {
		e, _ := parseStoredExpr(wm.expr)
		ct.Watermark = &sql.Watermark{Column: wm.rowtime, Expr: e}
	}
	opts := userOptions(t.Options())
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		ct.With = append(ct.With, &sql.Property{Key: k, Value: opts[k]})
	}
	if len(ct.PrimaryKey) == 0 {
		ct.PrimaryKey = nil
	}
	if len(ct.PartitionedBy) == 0 {
		ct.PartitionedBy = nil
	}
	return sql.Format(ct)
}

// likeMatch implements SQL LIKE for SHOW ... LIKE (% and _).
func likeMatch(pattern, s string) bool {
	p, str := []rune(pattern), []rune(s)
	var m func(i, j int) bool
	m = func(i, j int) bool {
		for i < len(p) {
			switch p[i] {
			case '%':
				for k := j; k <= len(str); k++ {
					if m(i+1, k) {
						return true
					}
				}
				return false
			case '_':
				if j >= len(str) {
					return false
				}
			default:
				if j >= len(str) || str[j] != p[i] {
					return false
				}
			}
			i++
			j++
		}
		return j == len(str)
	}
	return m(0, 0)
}
