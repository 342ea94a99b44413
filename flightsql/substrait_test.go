package flightsql_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	ext "github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flightd/flightd/flightsql"
)

// explainSubstrait returns the Substrait plan flightd's producer makes for q.
func explainSubstrait(t *testing.T, cnxn adbc.Connection, q string) []byte {
	t.Helper()
	st, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetSqlQuery("EXPLAIN (FORMAT SUBSTRAIT) " + q); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatalf("EXPLAIN (FORMAT SUBSTRAIT) %s: %v", q, err)
	}
	defer rdr.Release()
	var plan []byte
	for rdr.Next() {
		b := rdr.RecordBatch()
		if b.NumRows() != 1 || b.NumCols() != 1 {
			t.Fatalf("EXPLAIN (FORMAT SUBSTRAIT): %d rows, %d columns, want one binary value", b.NumRows(), b.NumCols())
		}
		plan = append([]byte(nil), b.Column(0).(*array.Binary).Value(0)...)
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}

func substraitRows(cnxn adbc.Connection, plan []byte) ([][]string, error) {
	st, err := cnxn.NewStatement()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.SetSubstraitPlan(plan); err != nil {
		return nil, err
	}
	rdr, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return readRows(rdr)
}

// TestSubstraitPlans sends the plans of EXPLAIN (FORMAT SUBSTRAIT) back as
// Substrait commands through the ADBC driver: each gives the SQL answer.
func TestSubstraitPlans(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE emp (id INT, dept INT, name STRING, salary DECIMAL(10, 2), hired DATE, PRIMARY KEY (id) NOT ENFORCED)")
	mustExec(t, cnxn, "CREATE TABLE dept (id INT, title STRING)")
	mustExec(t, cnxn, `INSERT INTO emp VALUES (1, 1, 'ann', 100.50, DATE '2020-01-02'), (2, 1, 'bob', 80, DATE '2021-03-04'),
		(3, 2, 'cy', NULL, DATE '2019-05-06'), (4, NULL, 'di', 120.25, NULL), (5, 2, 'ed', 95, DATE '2022-07-08')`)
	mustExec(t, cnxn, "INSERT INTO dept VALUES (1, 'eng'), (2, 'ops'), (3, 'hr')")
	queries := []struct {
		q       string
		ordered bool
	}{
		{"SELECT id, name FROM emp WHERE salary > 90 AND name <> 'x'", false},
		{"SELECT dept, count(*), sum(salary), avg(salary), min(name), max(hired) FROM emp GROUP BY dept", false},
		{"SELECT dept, name, count(*) FROM emp GROUP BY GROUPING SETS ((dept), (dept, name), ())", false},
		{"SELECT e.name, d.title FROM emp e LEFT JOIN dept d ON e.dept = d.id", false},
		{"SELECT d.title, e.name FROM emp e RIGHT JOIN dept d ON e.dept = d.id", false},
		{"SELECT e.name, d.title FROM emp e FULL JOIN dept d ON e.dept = d.id", false},
		{"SELECT e.name, d.title FROM emp e CROSS JOIN dept d", false},
		{"SELECT name FROM emp WHERE dept IN (SELECT id FROM dept WHERE title LIKE 'e%')", false},
		{"SELECT title FROM dept d WHERE NOT EXISTS (SELECT 1 FROM emp e WHERE e.dept = d.id)", false},
		{"SELECT name, (SELECT max(salary) FROM emp) - salary FROM emp", false},
		{"SELECT id, name FROM emp ORDER BY salary DESC NULLS LAST, id LIMIT 3 OFFSET 1", true},
		{"SELECT id, rank() OVER (PARTITION BY dept ORDER BY salary), sum(salary) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM emp", false},
		{"SELECT id FROM emp UNION SELECT id FROM dept", false},
		{"SELECT id FROM emp EXCEPT ALL SELECT id FROM dept", false},
		{"SELECT id FROM emp INTERSECT SELECT id FROM dept", false},
		{"SELECT CASE WHEN salary IS NULL THEN 'none' WHEN salary > 100 THEN 'high' ELSE 'low' END, CAST(id AS BIGINT) * 2, EXTRACT(YEAR FROM hired), hired + INTERVAL '1' DAY FROM emp", false},
		{"SELECT DISTINCT dept FROM emp", false},
		{"SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(x, y) WHERE x > 1", false},
		{"SELECT count(DISTINCT dept), count(*) FILTER (WHERE salary > 90) FROM emp", false},
	}
	for _, c := range queries {
		want := query(t, cnxn, c.q)
		got, err := substraitRows(cnxn, explainSubstrait(t, cnxn, c.q))
		if err != nil {
			t.Errorf("%s through Substrait: %v", c.q, err)
			continue
		}
		if !c.ordered {
			sortRows(want)
			sortRows(got)
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s through Substrait:\n got %v\nwant %v", c.q, got, want)
		}
	}

	// A prepared plan with a dynamic parameter, executed twice.
	plan := explainSubstrait(t, cnxn, "SELECT name FROM emp WHERE dept = ? ORDER BY name")
	st, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetSubstraitPlan(plan); err != nil {
		t.Fatal(err)
	}
	if err := st.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	for dept, want := range map[int32]string{1: "[[ann] [bob]]", 2: "[[cy] [ed]]"} {
		got := queryBound(t, st, int32Param(dept))
		if s := strings.Join(strings.Fields(strings.Trim(strings.ReplaceAll(fmtRows(got), "\n", " "), " ")), " "); s != want {
			t.Errorf("prepared plan with dept = %d: got %s, want %s", dept, s, want)
		}
	}

	// A write: INSERT ... SELECT as a Substrait plan, through DoPut.
	cl, _ := ts.rawClient(t)
	ins := insertPlan(t, explainSubstrait(t, cnxn, "SELECT id + 10, title FROM dept"), "dept", []string{"id", "title"})
	n, err := cl.ExecuteSubstraitUpdate(context.Background(), arrowflightsql.SubstraitPlan{Plan: ins, Version: "0.85.0"})
	if err != nil || n != 3 {
		t.Fatalf("INSERT as a Substrait plan: %d rows, %v", n, err)
	}
	if got := query(t, cnxn, "SELECT count(*) FROM dept WHERE id > 10"); got[0][0] != "3" {
		t.Fatalf("after the Substrait INSERT: %v rows above 10", got)
	}
}

// insertPlan makes a query plan's root a write of table's columns.
func insertPlan(t *testing.T, query []byte, table string, cols []string) []byte {
	t.Helper()
	return editPlan(t, query, func(p *pb.Plan) {
		root := p.Relations[len(p.Relations)-1].GetRoot()
		schema := &pb.NamedStruct{Names: cols, Struct: &pb.Type_Struct{}}
		for range cols {
			schema.Struct.Types = append(schema.Struct.Types, &pb.Type{Kind: &pb.Type_String_{String_: &pb.Type_String{}}})
		}
		root.Input = &pb.Rel{RelType: &pb.Rel_Write{Write: &pb.WriteRel{
			WriteType:   &pb.WriteRel_NamedTable{NamedTable: &pb.NamedObjectWrite{Names: []string{table}}},
			TableSchema: schema, Op: pb.WriteRel_WRITE_OP_INSERT, Input: root.Input}}}
	})
}

// editPlan is plan changed by edit.
func editPlan(t *testing.T, plan []byte, edit func(p *pb.Plan)) []byte {
	t.Helper()
	var p pb.Plan
	if err := proto.Unmarshal(plan, &p); err != nil {
		t.Fatal(err)
	}
	edit(&p)
	b, err := proto.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fieldRef is a reference to field i of the input.
func fieldRef(i int32) *pb.Expression {
	return &pb.Expression{RexType: &pb.Expression_Selection{Selection: &pb.Expression_FieldReference{
		ReferenceType: &pb.Expression_FieldReference_DirectReference{DirectReference: &pb.Expression_ReferenceSegment{
			ReferenceType: &pb.Expression_ReferenceSegment_StructField_{StructField: &pb.Expression_ReferenceSegment_StructField{Field: i}}}}}}}
}

func int32Param(v int32) arrow.RecordBatch {
	b := array.NewInt32Builder(memory.NewGoAllocator())
	defer b.Release()
	b.Append(v)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.PrimitiveTypes.Int32}}, nil), []arrow.Array{col}, 1)
}

func sortRows(rows [][]string) {
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(strings.Join(a, "\x00"), strings.Join(b, "\x00")) })
}

func fmtRows(rows [][]string) string {
	var sb strings.Builder
	sb.WriteString("[")
	for i, r := range rows {
		if i > 0 {
			sb.WriteString(" ")
		}
		sb.WriteString("[" + strings.Join(r, " ") + "]")
	}
	sb.WriteString("]")
	return sb.String()
}

// TestSubstraitBadPlans: garbage, truncated plans and plans referring to
// what is not there fail with InvalidArgument naming the problem, and the
// server keeps serving.
func TestSubstraitBadPlans(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (a INT, b STRING)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 'x')")
	good := explainSubstrait(t, cnxn, "SELECT a + 1, upper(b) FROM t WHERE a > 0")
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	outOfRange := editPlan(t, good, func(p *pb.Plan) {
		bad := fieldRef(7)
		in := p.Relations[0].GetRoot().Input.GetProject().Input
		if rd := in.GetRead(); rd != nil {
			rd.Filter = bad
		} else {
			in.GetFilter().Condition = bad
		}
	})
	// Hostile plans: good's with functions of its own (anchors 1001 add,
	// 1002 extract) at its root.
	hostile := func(root func(in *pb.Rel) *pb.Rel) []byte {
		return editPlan(t, good, func(p *pb.Plan) {
			for anchor, name := range map[uint32]string{1001: "add", 1002: "extract"} {
				p.Extensions = append(p.Extensions, &ext.SimpleExtensionDeclaration{MappingType: &ext.SimpleExtensionDeclaration_ExtensionFunction_{
					ExtensionFunction: &ext.SimpleExtensionDeclaration_ExtensionFunction{FunctionAnchor: anchor, Name: name}}})
			}
			r := p.Relations[0].GetRoot()
			r.Input = root(r.Input)
		})
	}
	field0 := &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Value{Value: fieldRef(0)}}
	project := func(in *pb.Rel, fn uint32, args ...*pb.FunctionArgument) *pb.Rel {
		e := &pb.Expression{RexType: &pb.Expression_ScalarFunction_{ScalarFunction: &pb.Expression_ScalarFunction{FunctionReference: fn, Arguments: args}}}
		return &pb.Rel{RelType: &pb.Rel_Project{Project: &pb.ProjectRel{Input: in, Expressions: []*pb.Expression{e},
			Common: &pb.RelCommon{EmitKind: &pb.RelCommon_Emit_{Emit: &pb.RelCommon_Emit{OutputMapping: []int32{2}}}}}}}
	}
	// A unit that would close EXTRACT( and make the filter OR TRUE.
	injected := hostile(func(in *pb.Rel) *pb.Rel {
		return project(in, 1002, &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Enum{Enum: "YEAR FROM a) = 1 OR TRUE OR EXTRACT(YEAR"}}, field0)
	})
	// 60 projections each adding the column before to itself: 2^60 nodes
	// of SQL if printed.
	doubling := hostile(func(in *pb.Rel) *pb.Rel {
		for i := range 60 {
			in = project(in, 1001, field0, field0)
			if i > 0 { // in has one column, not good's two
				in.GetProject().Common.GetEmit().OutputMapping = []int32{1}
			}
		}
		return in
	})
	cases := []struct {
		name string
		plan []byte
		msg  string
	}{
		{"garbage", []byte("\xff\xff\xff\xffnot a plan"), "not a Substrait plan"},
		{"truncated", good[:len(good)/2], ""},
		{"empty", nil, "no root relation"},
		{"field out of range", outOfRange, ".selection.direct_reference.struct_field: field 7 is out of range (2 columns)"},
		{"injected unit", injected, `unit "YEAR FROM A) = 1 OR TRUE OR EXTRACT(YEAR" is not a plain name`},
		{"doubling", doubling, "more than 200000 relations and expressions"},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(ctx, time.Minute) // the doubling plan printed forever
		_, err := cl.ExecuteSubstrait(ctx, arrowflightsql.SubstraitPlan{Plan: c.plan})
		cancel()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: want InvalidArgument with %q, got %v", c.name, c.msg, err)
		}
	}
	if got := query(t, cnxn, "SELECT a FROM t"); len(got) != 1 {
		t.Fatalf("after bad plans: %v", got)
	}

	// SqlInfo advertises Substrait and the versions.
	info, err := cl.GetSqlInfo(ctx, []arrowflightsql.SqlInfo{arrowflightsql.SqlInfoFlightSqlServerSubstrait,
		arrowflightsql.SqlInfoFlightSqlServerSubstraitMinVersion, arrowflightsql.SqlInfoFlightSqlServerSubstraitMaxVersion})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	seen := map[uint32]string{}
	for rdr.Next() {
		b := rdr.RecordBatch()
		names := b.Column(0).(*array.Uint32)
		vals := b.Column(1).(*array.DenseUnion)
		for i := range int(b.NumRows()) {
			child := vals.Field(vals.ChildID(i))
			seen[names.Value(i)] = child.ValueStr(int(vals.ValueOffset(i)))
		}
	}
	if seen[uint32(arrowflightsql.SqlInfoFlightSqlServerSubstrait)] != "true" || seen[uint32(arrowflightsql.SqlInfoFlightSqlServerSubstraitMaxVersion)] == "" {
		t.Fatalf("SqlInfo: %v", seen)
	}
}

// TestSubstraitOtherCatalog: a plan that names a table in another catalog
// is refused, reading or writing, and changes nothing; flightd's catalog
// (any case) or none names its tables. The consumer dropped the catalog,
// so an INSERT into othercat.default.t wrote into flightd's default.t.
func TestSubstraitOtherCatalog(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (a INT, b STRING)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 'x')")
	good := explainSubstrait(t, cnxn, "SELECT a, b FROM t")
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	named := func(write bool, names ...string) []byte {
		return editPlan(t, good, func(p *pb.Plan) {
			root := p.Relations[0].GetRoot()
			read := root.Input.GetProject().GetInput().GetRead()
			if read == nil {
				t.Fatalf("plan of SELECT a, b FROM t: %v", p)
			}
			read.GetNamedTable().Names = names
			if write {
				root.Input = &pb.Rel{RelType: &pb.Rel_Write{Write: &pb.WriteRel{Input: root.Input, Op: pb.WriteRel_WRITE_OP_INSERT,
					WriteType: &pb.WriteRel_NamedTable{NamedTable: &pb.NamedObjectWrite{Names: names}}, TableSchema: read.BaseSchema}}}
			}
		})
	}
	other := []string{"othercat", "default", "t"}
	if _, err := cl.ExecuteSubstrait(ctx, arrowflightsql.SubstraitPlan{Plan: named(false, other...)}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `catalog "othercat" does not exist`) {
		t.Errorf("read of othercat.default.t: %v, want InvalidArgument naming the catalog", err)
	}
	n, err := cl.ExecuteSubstraitUpdate(ctx, arrowflightsql.SubstraitPlan{Plan: named(true, other...)})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `catalog "othercat" does not exist`) {
		t.Errorf("insert into othercat.default.t: %d rows, %v, want InvalidArgument naming the catalog", n, err)
	}
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM t"), "1")

	for _, names := range [][]string{{"flightd", "default", "t"}, {"FLIGHTD", "default", "t"}, {"", "default", "t"}, {"default", "t"}, {"t"}} {
		if rows, err := substraitRows(cnxn, named(false, names...)); err != nil || len(rows) < 1 {
			t.Errorf("read of %q: %v, %v", names, rows, err)
		}
	}
	if n, err := cl.ExecuteSubstraitUpdate(ctx, arrowflightsql.SubstraitPlan{Plan: named(true, "flightd", "default", "t")}); err != nil || n != 1 {
		t.Fatalf("insert into flightd.default.t: %d, %v", n, err)
	}
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM t"), "2")
}

// TestSubstraitBaseSchema: a read's base_schema is the schema the plan
// was built for; one that does not match the table (a column's type or
// name, the number of columns) is refused naming the column, the claimed
// and the real type. The consumer read the columns by name and ignored
// the types, so a plan that said a was STRING got INT data back.
func TestSubstraitBaseSchema(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (a INT, b STRING)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 'x')")
	good := explainSubstrait(t, cnxn, "SELECT a, b FROM t")
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	str := &pb.Type{Kind: &pb.Type_String_{String_: &pb.Type_String{Nullability: pb.Type_NULLABILITY_NULLABLE}}}
	var proj *pb.Expression_MaskExpression // set to the read's projection when edit runs f
	edit := func(f func(s *pb.NamedStruct)) []byte {
		return editPlan(t, good, func(p *pb.Plan) {
			read := p.Relations[0].GetRoot().Input.GetProject().GetInput().GetRead()
			if read == nil || len(read.BaseSchema.GetStruct().GetTypes()) != 2 {
				t.Fatalf("plan of SELECT a, b FROM t: %v", p)
			}
			proj = read.Projection
			f(read.BaseSchema)
			read.Projection = proj
			if proj == nil {
				p.Relations[0].GetRoot().Input = &pb.Rel{RelType: &pb.Rel_Read{Read: read}}
			}
		})
	}
	cases := []struct {
		name string
		plan []byte
		msg  string
	}{
		{"a as STRING", edit(func(s *pb.NamedStruct) { s.Struct.Types[0] = str }), `base_schema: column "a" of table default.t is INT, not STRING as the plan says`},
		{"a as BIGINT", edit(func(s *pb.NamedStruct) {
			s.Struct.Types[0] = &pb.Type{Kind: &pb.Type_I64_{I64: &pb.Type_I64{}}}
		}), `column "a" of table default.t is INT, not BIGINT`},
		{"a column more", edit(func(s *pb.NamedStruct) {
			s.Names = append(s.Names, "c")
			s.Struct.Types = append(s.Struct.Types, str)
		}), "base_schema: 3 columns for table default.t, which has 2 (a, b)"},
		{"a column less", edit(func(s *pb.NamedStruct) {
			s.Names, s.Struct.Types = s.Names[:1], s.Struct.Types[:1]
			proj = nil // what the one column reads
		}), "base_schema: 1 columns for table default.t, which has 2 (a, b)"},
		{"another name", edit(func(s *pb.NamedStruct) { s.Names[1] = "c" }), `column 2 is "c", but table default.t's column 2 is "b"`},
	}
	for _, c := range cases {
		_, err := cl.ExecuteSubstrait(ctx, arrowflightsql.SubstraitPlan{Plan: c.plan})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: want InvalidArgument with %q, got %v", c.name, c.msg, err)
		}
		if _, err := cl.PrepareSubstrait(ctx, arrowflightsql.SubstraitPlan{Plan: c.plan}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s, prepared: want InvalidArgument with %q, got %v", c.name, c.msg, err)
		}
	}
	// Nullability claims are not checked; the plan's own schema reads.
	lenient := edit(func(s *pb.NamedStruct) {
		s.Struct.Types[1] = &pb.Type{Kind: &pb.Type_String_{String_: &pb.Type_String{Nullability: pb.Type_NULLABILITY_REQUIRED}}}
	})
	for _, p := range [][]byte{good, lenient} {
		if rows, err := substraitRows(cnxn, p); err != nil || fmtRows(rows) != fmtRows([][]string{{"1", "x"}}) {
			t.Errorf("good plan: %v, %v", rows, err)
		}
	}
}

// TestSubstraitTypeRanges: a type whose precision or length is out of
// the range SQL allows is refused with the path in the plan, not clamped
// (precision_timestamp 12 read as TIMESTAMP(9)) or let through (varchar
// of length -1).
func TestSubstraitTypeRanges(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (a BIGINT, b STRING)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, '2024-01-02 03:04:05')")
	good := explainSubstrait(t, cnxn, "SELECT a, b FROM t")
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	// cast puts CAST(b AS typ) at the root.
	cast := func(typ *pb.Type) []byte {
		return editPlan(t, good, func(p *pb.Plan) {
			root := p.Relations[0].GetRoot()
			e := &pb.Expression{RexType: &pb.Expression_Cast_{Cast: &pb.Expression_Cast{Type: typ, Input: fieldRef(1)}}}
			root.Input = &pb.Rel{RelType: &pb.Rel_Project{Project: &pb.ProjectRel{Input: root.Input, Expressions: []*pb.Expression{e},
				Common: &pb.RelCommon{EmitKind: &pb.RelCommon_Emit_{Emit: &pb.RelCommon_Emit{OutputMapping: []int32{2}}}}}}}
			root.Names = []string{"x"}
		})
	}
	cases := []struct {
		name string
		typ  *pb.Type
		msg  string
	}{
		{"precision_timestamp 12", &pb.Type{Kind: &pb.Type_PrecisionTimestamp_{PrecisionTimestamp: &pb.Type_PrecisionTimestamp{Precision: 12}}},
			"root.input.project.expressions[0].cast.type: precision_timestamp precision 12 is out of range (0 to 9"},
		{"precision_timestamp_tz -1", &pb.Type{Kind: &pb.Type_PrecisionTimestampTz{PrecisionTimestampTz: &pb.Type_PrecisionTimestampTZ{Precision: -1}}},
			"cast.type: precision_timestamp_tz precision -1 is out of range"},
		{"precision_time 10", &pb.Type{Kind: &pb.Type_PrecisionTime_{PrecisionTime: &pb.Type_PrecisionTime{Precision: 10}}},
			"cast.type: precision_time precision 10 is out of range"},
		{"varchar -1", &pb.Type{Kind: &pb.Type_Varchar{Varchar: &pb.Type_VarChar{Length: -1}}},
			"root.input.project.expressions[0].cast.type: varchar length -1 is out of range (0 or more)"},
		{"fixed_char -2", &pb.Type{Kind: &pb.Type_FixedChar_{FixedChar: &pb.Type_FixedChar{Length: -2}}},
			"cast.type: fixed_char length -2 is out of range"},
	}
	for _, c := range cases {
		_, err := cl.ExecuteSubstrait(ctx, arrowflightsql.SubstraitPlan{Plan: cast(c.typ)})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: want InvalidArgument with %q, got %v", c.name, c.msg, err)
		}
	}
	// In range, they read.
	for _, typ := range []*pb.Type{
		{Kind: &pb.Type_PrecisionTimestamp_{PrecisionTimestamp: &pb.Type_PrecisionTimestamp{Precision: 9}}},
		{Kind: &pb.Type_Varchar{Varchar: &pb.Type_VarChar{Length: 10}}},
	} {
		if _, err := substraitRows(cnxn, cast(typ)); err != nil {
			t.Errorf("cast to %v: %v", typ, err)
		}
	}
}
