package substrait

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

// ErrInvalid marks a plan the consumer cannot read or refuses.
var ErrInvalid = errors.New("invalid Substrait plan")

// flightdURN names flightd's own functions, which the producer declares
// for functions without a standard Substrait name.
const flightdURN = "extension:io.flightd:functions"

// maxDepth bounds the nesting of relations and expressions: the consumer
// recurses, and a hostile plan must not exhaust the stack.
const maxDepth = 500

// Consume translates a serialized Substrait plan into the SQL statement it
// means. The plan's single root relation becomes one query whose output
// columns carry the root's names, or, for a write relation at the root, an
// INSERT or CREATE TABLE AS; the caller binds it like any SQL, so a plan
// gets the same type checks, grants and optimizer as SQL text. Dynamic
// parameter N becomes placeholder $N+1.
func Consume(b []byte) (sql.Statement, error) {
	st, _, err := ConsumeReads(b)
	return st, err
}

// NamedRead is a read of a named table and the schema the plan claims
// the table has (its base_schema): the caller, which knows the catalog,
// checks the claim before running the statement, since the SQL reads the
// columns by name and would otherwise give a plan built from stale
// metadata data of another type than it decodes.
type NamedRead struct {
	Path    string   // the ReadRel's path in the plan
	Table   []string // [database.]table, as in the SQL
	Columns []ClaimedColumn
}

// ClaimedColumn is one top-level column of a read's base_schema.
type ClaimedColumn struct {
	Name string
	Type *sql.TypeName // ROW for a struct, with its fields' names
}

// ConsumeReads is Consume that also returns the plan's reads of named
// tables with their claimed schemas, in plan order.
func ConsumeReads(b []byte) (sql.Statement, []NamedRead, error) {
	st, c, err := consume(b)
	if err != nil {
		return nil, nil, err
	}
	return st, c.reads, nil
}

func consume(b []byte) (sql.Statement, *consumer, error) {
	var p pb.Plan
	if err := (proto.UnmarshalOptions{RecursionLimit: maxDepth}).Unmarshal(b, &p); err != nil {
		return nil, nil, fmt.Errorf("%w: not a Substrait plan: %v", ErrInvalid, err)
	}
	c := &consumer{funcs: map[uint32]function{}}
	if err := c.extensions(&p); err != nil {
		return nil, nil, err
	}
	var root *pb.RelRoot
	for i, r := range p.GetRelations() {
		if r.GetRoot() == nil {
			continue // plain relations are only referenced by others
		}
		if root != nil {
			return nil, nil, fmt.Errorf("%w: relations[%d]: a second root relation (flightd runs one query per plan)", ErrInvalid, i)
		}
		root = r.GetRoot()
	}
	if root == nil {
		return nil, nil, fmt.Errorf("%w: the plan has no root relation", ErrInvalid)
	}
	c.plan = &p
	if w := root.GetInput().GetWrite(); w != nil {
		st, err := c.write(w, "root.input.write")
		return st, c, err
	}
	r, err := c.rel(root.GetInput(), "root.input")
	if err != nil {
		return nil, nil, err
	}
	names := root.GetNames()
	if len(names) > 0 && len(names) < len(r.cols) {
		return nil, nil, fmt.Errorf("%w: root.names: %d names for %d columns", ErrInvalid, len(names), len(r.cols))
	}
	q := r.query()
	items := q.Body.(*sql.Select).Items
	for i := range items {
		if i < len(names) {
			items[i].Alias = names[i] // struct columns list their fields' names after theirs; only top-level names count
		}
	}
	return q, c, nil
}

// function is an extension function a plan declares.
type function struct {
	urn, name string // name without its signature (add:i64_i64 -> add)
}

type consumer struct {
	plan    *pb.Plan
	funcs   map[uint32]function
	aliases int
	depth   int
	nodes   int
	reads   []NamedRead
	// outer holds the column expressions of the relations enclosing a
	// subquery, innermost last, for outer references.
	outer [][]sql.Expr
}

// rel is a relation being translated: a FROM item with a WHERE, and the
// expression of each output column in that FROM's scope. Grouping,
// ordering and limits stay open too, so that a Project above a Sort (as
// most producers emit) keeps the order; an operator that cannot be added
// to what is there wraps the relation into a derived table first.
type rel struct {
	from     sql.TableRef
	where    sql.Expr
	cols     []sql.Expr
	groupBy  []sql.Expr
	grouped  bool // an aggregate (with or without GROUP BY)
	having   sql.Expr
	windowed bool // cols hold window functions
	distinct bool
	orderBy  []*sql.OrderItem
	limit    sql.Expr
	offset   sql.Expr
}

func (r *rel) flat() bool {
	return !r.grouped && !r.windowed && !r.distinct && r.orderBy == nil && r.limit == nil && r.offset == nil
}

// query is the relation as a query with columns named c0, c1, ...
func (r *rel) query() *sql.Query {
	s := &sql.Select{From: []sql.TableRef{r.from}, Where: r.where, GroupBy: r.groupBy, Having: r.having, Distinct: r.distinct}
	if r.from == nil {
		s.From = nil
	}
	for i, e := range r.cols {
		s.Items = append(s.Items, &sql.SelectItem{Expr: e, Alias: colName(i)})
	}
	if r.grouped && len(r.groupBy) == 0 && len(r.cols) == 0 {
		s.Items = append(s.Items, &sql.SelectItem{Expr: &sql.Literal{Kind: sql.LitNumber, Value: "1"}})
	}
	return &sql.Query{Body: s, OrderBy: r.orderBy, Limit: r.limit, Offset: r.offset}
}

func colName(i int) string { return "c" + strconv.Itoa(i) }

// wrap makes r a derived table, so any operator can go on top of it.
func (c *consumer) wrap(r *rel) *rel {
	return c.derived(r.query(), len(r.cols))
}

func (c *consumer) derived(q *sql.Query, n int) *rel {
	alias := c.alias()
	out := &rel{from: &sql.DerivedTable{Query: q, Alias: alias, ColAliases: names(n)}}
	for i := range n {
		out.cols = append(out.cols, &sql.Ident{Parts: []string{alias, colName(i)}})
	}
	return out
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = colName(i)
	}
	return out
}

func (c *consumer) alias() string {
	c.aliases++
	return "s" + strconv.Itoa(c.aliases)
}

func errAt(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, path, fmt.Sprintf(format, args...))
}

// maxNodes bounds the relations and expressions translated: references
// to shared relations are expanded where used, and a plan whose references
// nest would otherwise expand exponentially.
const maxNodes = 200000

func (c *consumer) enter(path string) error {
	c.depth++
	c.nodes++
	if c.depth > maxDepth {
		return errAt(path, "nested more than %d levels deep", maxDepth)
	}
	if c.nodes > maxNodes {
		return errAt(path, "more than %d relations and expressions (shared relations count at each reference)", maxNodes)
	}
	return nil
}

// charge counts the nodes of SQL printed once more: a field reference
// prints its column's whole expression, and some joins print their right
// input more than once, so projections that each refer twice to the
// column before, or mark joins nested on the right, would print SQL
// exponential in the plan's size. The walk stops past the budget, so
// charging costs at most the budget in all.
func (c *consumer) charge(e sql.Node, path string) error {
	sql.Walk(e, func(sql.Node) bool {
		c.nodes++
		return c.nodes <= maxNodes
	})
	if c.nodes > maxNodes {
		return errAt(path, "more than %d relations and expressions (counting each copy the SQL prints)", maxNodes)
	}
	return nil
}

func (c *consumer) rel(x *pb.Rel, path string) (*rel, error) {
	if x == nil || x.GetRelType() == nil {
		return nil, errAt(path, "missing relation")
	}
	if err := c.enter(path); err != nil {
		return nil, err
	}
	defer func() { c.depth-- }()
	var (
		r   *rel
		err error
	)
	var common *pb.RelCommon
	switch t := x.GetRelType().(type) {
	case *pb.Rel_Read:
		r, err = c.read(t.Read, path+".read")
		common = t.Read.GetCommon()
	case *pb.Rel_Filter:
		r, err = c.filter(t.Filter, path+".filter")
		common = t.Filter.GetCommon()
	case *pb.Rel_Project:
		r, err = c.project(t.Project, path+".project")
		common = t.Project.GetCommon()
	case *pb.Rel_Aggregate:
		r, err = c.aggregate(t.Aggregate, path+".aggregate")
		common = t.Aggregate.GetCommon()
	case *pb.Rel_Join:
		r, err = c.join(t.Join, path+".join")
		common = t.Join.GetCommon()
	case *pb.Rel_Cross:
		r, err = c.cross(t.Cross, path+".cross")
		common = t.Cross.GetCommon()
	case *pb.Rel_Sort:
		r, err = c.sort(t.Sort, path+".sort")
		common = t.Sort.GetCommon()
	case *pb.Rel_Fetch:
		r, err = c.fetch(t.Fetch, path+".fetch")
		common = t.Fetch.GetCommon()
	case *pb.Rel_Set:
		r, err = c.set(t.Set, path+".set")
		common = t.Set.GetCommon()
	case *pb.Rel_Window:
		r, err = c.window(t.Window, path+".window")
		common = t.Window.GetCommon()
	case *pb.Rel_Reference:
		r, err = c.reference(t.Reference, path+".reference")
	default:
		return nil, errAt(path, "relation %s is not supported", relName(x))
	}
	if err != nil {
		return nil, err
	}
	return c.emit(r, common, path)
}

func relName(x *pb.Rel) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", x.GetRelType()), "*substraitpb.Rel_")
}

// emit applies a relation's output mapping (RelCommon.emit).
func (c *consumer) emit(r *rel, common *pb.RelCommon, path string) (*rel, error) {
	m := common.GetEmit()
	if m == nil {
		return r, nil
	}
	cols := make([]sql.Expr, len(m.GetOutputMapping()))
	seen := make([]bool, len(r.cols))
	for i, f := range m.GetOutputMapping() {
		if f < 0 || int(f) >= len(r.cols) {
			return nil, errAt(path+".common.emit", "output_mapping[%d] = %d is out of range (%d columns)", i, f, len(r.cols))
		}
		if seen[f] {
			// A repeated column prints its expression once more.
			if err := c.charge(r.cols[f], path+".common.emit"); err != nil {
				return nil, err
			}
		}
		seen[f] = true
		cols[i] = r.cols[f]
	}
	if r.distinct {
		// DISTINCT applies to the select list: dropping columns changes it.
		r = c.wrap(r)
		cols2 := make([]sql.Expr, len(cols))
		for i, f := range m.GetOutputMapping() {
			cols2[i] = r.cols[f]
		}
		cols = cols2
	}
	r.cols = cols
	return r, nil
}

func (c *consumer) reference(x *pb.ReferenceRel, path string) (*rel, error) {
	i := int(x.GetSubtreeOrdinal())
	rels := c.plan.GetRelations()
	if i < 0 || i >= len(rels) || rels[i].GetRel() == nil {
		return nil, errAt(path, "subtree_ordinal %d names no plain relation of the plan", i)
	}
	return c.rel(rels[i].GetRel(), fmt.Sprintf("relations[%d].rel", i))
}

func (c *consumer) read(x *pb.ReadRel, path string) (*rel, error) {
	schema := x.GetBaseSchema()
	cols, err := topNames(schema, path+".base_schema")
	if err != nil {
		return nil, err
	}
	var r *rel
	switch t := x.GetReadType().(type) {
	case *pb.ReadRel_NamedTable_:
		parts, err := tableName(t.NamedTable.GetNames(), path+".named_table")
		if err != nil {
			return nil, err
		}
		claimed, err := claimedColumns(schema, path+".base_schema")
		if err != nil {
			return nil, err
		}
		c.reads = append(c.reads, NamedRead{Path: path, Table: parts, Columns: claimed})
		alias := c.alias()
		r = &rel{from: &sql.TableName{Name: &sql.Name{Parts: parts}, Alias: alias}}
		for _, n := range cols {
			r.cols = append(r.cols, &sql.Ident{Parts: []string{alias, n}})
		}
	case *pb.ReadRel_VirtualTable_:
		if r, err = c.virtual(t.VirtualTable, schema, len(cols), path+".virtual_table"); err != nil {
			return nil, err
		}
	case nil:
		return nil, errAt(path, "read of nothing (no read_type)")
	default:
		return nil, errAt(path, "read type %s is not supported (named tables and virtual tables are)",
			strings.TrimPrefix(fmt.Sprintf("%T", t), "*substraitpb.ReadRel_"))
	}
	for _, f := range []struct {
		e    *pb.Expression
		name string
	}{{x.GetFilter(), "filter"}, {x.GetBestEffortFilter(), "best_effort_filter"}} {
		if f.e == nil {
			continue
		}
		e, err := c.expr(f.e, r.cols, path+"."+f.name)
		if err != nil {
			return nil, err
		}
		r.where = and(r.where, e)
	}
	if m := x.GetProjection(); m != nil {
		items := m.GetSelect().GetStructItems()
		cols := make([]sql.Expr, len(items))
		for i, it := range items {
			f := int(it.GetField())
			if f < 0 || f >= len(r.cols) || it.GetChild() != nil {
				return nil, errAt(path+".projection", "struct_items[%d]: field %d is not a top-level column of %d", i, f, len(r.cols))
			}
			cols[i] = r.cols[f]
		}
		r.cols = cols
	}
	return r, nil
}

// tableName is a named table's [database.]table: a catalog before them
// must be flightd's one, as for bulk ingest; reading or writing
// flightd's table for a plan that names another catalog would act on a
// table the client did not mean.
func tableName(parts []string, path string) ([]string, error) {
	if len(parts) == 0 || len(parts) > 3 {
		return nil, errAt(path, "a table name has 1 to 3 parts, not %d", len(parts))
	}
	if len(parts) == 3 {
		if parts[0] != "" && !strings.EqualFold(parts[0], plan.CatalogName) {
			return nil, errAt(path, "catalog %q does not exist (flightd serves %q)", parts[0], plan.CatalogName)
		}
		parts = parts[1:]
	}
	return parts, nil
}

// topNames are the names of a schema's top-level columns: NamedStruct
// lists the names of nested struct fields after their column's, depth
// first.
func topNames(s *pb.NamedStruct, path string) ([]string, error) {
	names := s.GetNames()
	types := s.GetStruct().GetTypes()
	var out []string
	i := 0
	var skip func(t *pb.Type) error
	skip = func(t *pb.Type) error {
		st := t.GetStruct()
		if st == nil {
			return nil
		}
		for _, f := range st.GetTypes() {
			if i >= len(names) {
				return errAt(path, "fewer names than (nested) fields")
			}
			i++
			if err := skip(f); err != nil {
				return err
			}
		}
		return nil
	}
	for _, t := range types {
		if i >= len(names) {
			return nil, errAt(path, "%d names for %d columns", len(names), len(types))
		}
		out = append(out, names[i])
		i++
		if err := skip(t); err != nil {
			return nil, err
		}
	}
	if len(types) == 0 {
		out = names
	}
	return out, nil
}

// claimedColumns are a named read's base_schema as SQL types: a struct
// becomes a ROW named by the names NamedStruct lists after its column's.
func claimedColumns(s *pb.NamedStruct, path string) ([]ClaimedColumn, error) {
	names := s.GetNames()
	i := 0
	next := func() (string, error) {
		if i >= len(names) {
			return "", errAt(path, "fewer names than (nested) fields")
		}
		i++
		return names[i-1], nil
	}
	var claim func(t *pb.Type, path string) (*sql.TypeName, error)
	claim = func(t *pb.Type, path string) (*sql.TypeName, error) {
		st := t.GetStruct()
		if st == nil {
			return typeName(t, path)
		}
		row := &sql.TypeName{Name: "ROW"}
		for j, f := range st.GetTypes() {
			n, err := next()
			if err != nil {
				return nil, err
			}
			ft, err := claim(f, fmt.Sprintf("%s.struct.types[%d]", path, j))
			if err != nil {
				return nil, err
			}
			row.Fields = append(row.Fields, &sql.ColumnDef{Name: n, Type: ft})
		}
		return row, nil
	}
	var out []ClaimedColumn
	for j, t := range s.GetStruct().GetTypes() {
		n, err := next()
		if err != nil {
			return nil, err
		}
		tn, err := claim(t, fmt.Sprintf("%s.struct.types[%d]", path, j))
		if err != nil {
			return nil, err
		}
		out = append(out, ClaimedColumn{Name: n, Type: tn})
	}
	return out, nil
}

func (c *consumer) virtual(v *pb.ReadRel_VirtualTable, schema *pb.NamedStruct, n int, path string) (*rel, error) {
	var rows [][]sql.Expr
	for i, s := range v.GetValues() {
		row := make([]sql.Expr, 0, len(s.GetFields()))
		for j, l := range s.GetFields() {
			e, err := c.literal(l, fmt.Sprintf("%s.values[%d].fields[%d]", path, i, j))
			if err != nil {
				return nil, err
			}
			row = append(row, e)
		}
		rows = append(rows, row)
	}
	for i, s := range v.GetExpressions() {
		row := make([]sql.Expr, 0, len(s.GetFields()))
		for j, x := range s.GetFields() {
			e, err := c.expr(x, nil, fmt.Sprintf("%s.expressions[%d].fields[%d]", path, i, j))
			if err != nil {
				return nil, err
			}
			row = append(row, e)
		}
		rows = append(rows, row)
	}
	for i, row := range rows {
		if len(row) != n {
			return nil, errAt(path, "row %d has %d values for %d columns", i, len(row), n)
		}
	}
	if len(rows) == 0 {
		// No rows: typed NULLs under a false filter keep the schema.
		r := &rel{where: &sql.Literal{Kind: sql.LitBool, Value: "FALSE"}}
		for i, t := range schema.GetStruct().GetTypes() {
			tn, err := typeName(t, fmt.Sprintf("%s.base_schema.struct.types[%d]", path, i))
			if err != nil {
				return nil, err
			}
			r.cols = append(r.cols, &sql.Cast{X: &sql.Literal{Kind: sql.LitNull, Value: "NULL"}, Type: tn})
		}
		return r, nil
	}
	return c.derived(&sql.Query{Body: &sql.Values{Rows: rows}}, n), nil
}

func (c *consumer) filter(x *pb.FilterRel, path string) (*rel, error) {
	r, err := c.rel(x.GetInput(), path+".input")
	if err != nil {
		return nil, err
	}
	if x.GetCondition() == nil {
		return nil, errAt(path+".condition", "missing")
	}
	if !r.flat() {
		r = c.wrap(r)
	}
	e, err := c.expr(x.GetCondition(), r.cols, path+".condition")
	if err != nil {
		return nil, err
	}
	r.where = and(r.where, e)
	return r, nil
}

func and(a, b sql.Expr) sql.Expr {
	if a == nil {
		return b
	}
	return &sql.Binary{Op: "AND", Left: a, Right: b}
}

func (c *consumer) project(x *pb.ProjectRel, path string) (*rel, error) {
	r, err := c.rel(x.GetInput(), path+".input")
	if err != nil {
		return nil, err
	}
	hasWindow := false
	for _, e := range x.GetExpressions() {
		hasWindow = hasWindow || containsWindow(e)
	}
	if r.distinct || (hasWindow && (r.limit != nil || r.offset != nil || r.windowed)) {
		r = c.wrap(r)
	}
	in := r.cols
	cols := append([]sql.Expr(nil), in...)
	for i, x := range x.GetExpressions() {
		e, err := c.expr(x, in, fmt.Sprintf("%s.expressions[%d]", path, i))
		if err != nil {
			return nil, err
		}
		cols = append(cols, e)
	}
	r.cols = cols
	r.windowed = r.windowed || hasWindow
	return r, nil
}

func containsWindow(e *pb.Expression) bool {
	found := false
	walkExprs(e, func(x *pb.Expression) {
		if x.GetWindowFunction() != nil {
			found = true
		}
	})
	return found
}

// walkExprs visits the scalar sub-expressions of e (not subqueries').
func walkExprs(e *pb.Expression, f func(*pb.Expression)) {
	if e == nil {
		return
	}
	f(e)
	args := func(l []*pb.FunctionArgument) {
		for _, a := range l {
			walkExprs(a.GetValue(), f)
		}
	}
	switch t := e.GetRexType().(type) {
	case *pb.Expression_ScalarFunction_:
		args(t.ScalarFunction.GetArguments())
	case *pb.Expression_Cast_:
		walkExprs(t.Cast.GetInput(), f)
	case *pb.Expression_IfThen_:
		for _, c := range t.IfThen.GetIfs() {
			walkExprs(c.GetIf(), f)
			walkExprs(c.GetThen(), f)
		}
		walkExprs(t.IfThen.GetElse(), f)
	case *pb.Expression_SwitchExpression_:
		walkExprs(t.SwitchExpression.GetMatch(), f)
		for _, c := range t.SwitchExpression.GetIfs() {
			walkExprs(c.GetThen(), f)
		}
		walkExprs(t.SwitchExpression.GetElse(), f)
	case *pb.Expression_SingularOrList_:
		walkExprs(t.SingularOrList.GetValue(), f)
		for _, o := range t.SingularOrList.GetOptions() {
			walkExprs(o, f)
		}
	}
}

// The Substrait versions this package reads (older plans' extension URIs
// are mapped to URNs) and writes.
const (
	MinVersion = "0.50.0"
	MaxVersion = "0.85.0"
)

// write translates a write relation: INSERT into a named table, or CREATE
// TABLE AS.
func (c *consumer) write(w *pb.WriteRel, path string) (sql.Statement, error) {
	parts, err := tableName(w.GetNamedTable().GetNames(), path+".named_table")
	if err != nil {
		return nil, err
	}
	cols, err := topNames(w.GetTableSchema(), path+".table_schema")
	if err != nil {
		return nil, err
	}
	r, err := c.rel(w.GetInput(), path+".input")
	if err != nil {
		return nil, err
	}
	if len(cols) != len(r.cols) {
		return nil, errAt(path+".table_schema", "%d columns for an input of %d", len(cols), len(r.cols))
	}
	q := r.query()
	switch w.GetOp() {
	case pb.WriteRel_WRITE_OP_INSERT:
		return &sql.Insert{Table: &sql.Name{Parts: parts}, Columns: cols, Source: q}, nil
	case pb.WriteRel_WRITE_OP_CTAS:
		for i, it := range q.Body.(*sql.Select).Items {
			it.Alias = cols[i]
		}
		return &sql.CreateTable{Name: &sql.Name{Parts: parts}, As: q}, nil
	}
	return nil, errAt(path+".op", "write operation %s is not supported (INSERT and CTAS are)", w.GetOp())
}
