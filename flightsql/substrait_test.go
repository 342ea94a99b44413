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
	var p pb.Plan
	if err := proto.Unmarshal(query, &p); err != nil {
		t.Fatal(err)
	}
	root := p.Relations[len(p.Relations)-1].GetRoot()
	schema := &pb.NamedStruct{Names: cols, Struct: &pb.Type_Struct{}}
	for range cols {
		schema.Struct.Types = append(schema.Struct.Types, &pb.Type{Kind: &pb.Type_String_{String_: &pb.Type_String{}}})
	}
	root.Input = &pb.Rel{RelType: &pb.Rel_Write{Write: &pb.WriteRel{
		WriteType:   &pb.WriteRel_NamedTable{NamedTable: &pb.NamedObjectWrite{Names: []string{table}}},
		TableSchema: schema, Op: pb.WriteRel_WRITE_OP_INSERT, Input: root.Input}}}
	b, err := proto.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	return b
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
	outOfRange := func() []byte {
		var p pb.Plan
		if err := proto.Unmarshal(good, &p); err != nil {
			t.Fatal(err)
		}
		bad := &pb.Expression{RexType: &pb.Expression_Selection{Selection: &pb.Expression_FieldReference{
			ReferenceType: &pb.Expression_FieldReference_DirectReference{DirectReference: &pb.Expression_ReferenceSegment{
				ReferenceType: &pb.Expression_ReferenceSegment_StructField_{StructField: &pb.Expression_ReferenceSegment_StructField{Field: 7}}}}}}}
		in := p.Relations[0].GetRoot().Input.GetProject().Input
		if rd := in.GetRead(); rd != nil {
			rd.Filter = bad
		} else {
			in.GetFilter().Condition = bad
		}
		b, _ := proto.Marshal(&p)
		return b
	}()
	// Hostile plans: good's with functions of its own (anchors 1001 add,
	// 1002 extract) at its root.
	hostile := func(root func(in *pb.Rel) *pb.Rel) []byte {
		var p pb.Plan
		if err := proto.Unmarshal(good, &p); err != nil {
			t.Fatal(err)
		}
		for anchor, name := range map[uint32]string{1001: "add", 1002: "extract"} {
			p.Extensions = append(p.Extensions, &ext.SimpleExtensionDeclaration{MappingType: &ext.SimpleExtensionDeclaration_ExtensionFunction_{
				ExtensionFunction: &ext.SimpleExtensionDeclaration_ExtensionFunction{FunctionAnchor: anchor, Name: name}}})
		}
		r := p.Relations[0].GetRoot()
		r.Input = root(r.Input)
		b, _ := proto.Marshal(&p)
		return b
	}
	field0 := &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Value{Value: &pb.Expression{RexType: &pb.Expression_Selection{Selection: &pb.Expression_FieldReference{
		ReferenceType: &pb.Expression_FieldReference_DirectReference{DirectReference: &pb.Expression_ReferenceSegment{
			ReferenceType: &pb.Expression_ReferenceSegment_StructField_{StructField: &pb.Expression_ReferenceSegment_StructField{Field: 0}}}}}}}}}
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
