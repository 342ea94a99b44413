package substrait

import (
	"errors"
	"flag"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	ext "github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

var seedFlag = flag.Uint64("seed", 0, "seed of TestMutatedPlans (0: from the clock)")

var (
	i32  = arrow.PrimitiveTypes.Int32
	i64  = arrow.PrimitiveTypes.Int64
	boo  = arrow.FixedWidthTypes.Boolean
	text = arrow.BinaryTypes.String
)

func col(id int, name string, t arrow.DataType) plan.Column {
	return plan.Column{ID: plan.ColumnID(id), Name: name, Type: t, Nullable: true}
}

func ref(c plan.Column) *plan.ColRef { return &plan.ColRef{ID: c.ID, Name: c.Name, Typ: c.Type} }

func call(fn string, t arrow.DataType, args ...plan.Expr) *plan.Call {
	return &plan.Call{Fn: fn, Args: args, Typ: t}
}

// seedPlans are plans of the producer over constant relations (no table
// needed): filter, project, aggregate with grouping sets, window, sort,
// limit, join, set operation, CASE, IN, casts and literals of many types.
func seedPlans(t testing.TB) [][]byte {
	a, b := col(1, "a", i32), col(2, "b", text)
	vals := &plan.ValuesNode{Cols: []plan.Column{a, b}, Values: [][]plan.Expr{
		{&plan.Const{Value: scalar.NewInt32Scalar(1)}, &plan.Const{Value: scalar.NewStringScalar("x")}},
		{&plan.Const{Value: scalar.NewInt32Scalar(2)}, &plan.Const{Value: scalar.MakeNullScalar(text)}},
	}}
	filter := &plan.FilterNode{Input: vals, Pred: call("greater", boo, ref(a), &plan.Const{Value: scalar.NewInt32Scalar(0)})}
	c3, c4 := col(3, "a1", i64), col(4, "u", text)
	proj := &plan.ProjectNode{Input: filter, Cols: []plan.Column{c3, c4}, Exprs: []plan.Expr{
		call("add", i64, &plan.Cast{X: ref(a), Typ: i64}, &plan.Const{Value: scalar.NewInt64Scalar(1)}),
		&plan.Case{Typ: text, Whens: []plan.CaseWhen{{Cond: &plan.In{X: ref(a), List: []plan.Expr{&plan.Const{Value: scalar.NewInt32Scalar(1)}}}, Then: call("upper", text, ref(b))}}},
	}}
	gid := col(7, "g", i64)
	agg := &plan.AggNode{Input: proj, Groups: []plan.Expr{ref(c4)}, GroupCols: []plan.Column{col(5, "u", text)},
		Aggs: []plan.AggCall{{Fn: "sum", Args: []plan.Expr{ref(c3)}, Col: col(6, "s", i64)}}, Sets: [][]int{{0}, {}}, GroupingID: &gid}
	sorted := &plan.SortNode{Input: agg, Keys: []plan.SortKey{{Expr: ref(col(6, "s", i64)), Desc: true}}}
	limit := &plan.LimitNode{Input: sorted, Count: &plan.Const{Value: scalar.NewInt64Scalar(10)}}
	join := &plan.JoinNode{Kind: plan.LeftJoin, Left: vals, Right: proj, Cond: call("equal", boo, &plan.Cast{X: ref(a), Typ: i64}, ref(c3))}
	set := &plan.SetOpNode{Kind: plan.Except, Left: vals, Right: vals, Cols: []plan.Column{col(8, "a", i32), col(9, "b", text)}}
	var out [][]byte
	for _, n := range []plan.Node{limit, join, set, &plan.DistinctNode{Input: vals}} {
		var names []string
		for _, c := range n.Columns() {
			names = append(names, c.Name)
		}
		b, err := Produce(n, names)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// consumeChecked consumes b; a plan it accepts must print as SQL that
// parses back to the same statement (nothing in the plan became SQL
// syntax), and a refusal must be ErrInvalid.
func consumeChecked(t testing.TB, b []byte) (sql.Statement, error) {
	st, err := Consume(b)
	if err != nil {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("error is not ErrInvalid: %v", err)
		}
		return nil, err
	}
	text := sql.Format(st)
	back, perr := sql.ParseOne(text)
	if perr != nil {
		t.Fatalf("the consumer's SQL does not parse: %v\n%s", perr, text)
	}
	if again := sql.Format(back); again != text {
		t.Fatalf("the consumer's SQL parses to another statement:\n%s\n%s", text, again)
	}
	return st, nil
}

func TestSeedPlansConsume(t *testing.T) {
	for i, b := range seedPlans(t) {
		st, err := consumeChecked(t, b)
		if err != nil {
			t.Fatalf("seed plan %d: %v", i, err)
		}
		t.Logf("seed plan %d: %s", i, sql.Format(st))
	}
}

func FuzzConsume(f *testing.F) {
	for _, b := range seedPlans(f) {
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	f.Add([]byte{})
	f.Add([]byte("\x1a\x02\x12\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = consumeChecked(t, b)
	})
}

// TestMutatedPlans: seeded random byte edits of valid plans never crash
// the consumer; every refusal is ErrInvalid and every acceptance prints as
// SQL that parses.
func TestMutatedPlans(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-seed to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	seeds := seedPlans(t)
	accepted := 0
	for range 3000 {
		b := append([]byte(nil), seeds[rng.IntN(len(seeds))]...)
		for range 1 + rng.IntN(4) {
			switch i := rng.IntN(len(b)); rng.IntN(3) {
			case 0:
				b[i] = byte(rng.UintN(256))
			case 1:
				b = b[:i]
			case 2:
				b = append(b[:i], append([]byte{byte(rng.UintN(256))}, b[i:]...)...)
			}
			if len(b) == 0 {
				break
			}
		}
		if _, err := consumeChecked(t, b); err == nil {
			accepted++
		}
	}
	t.Logf("%d of 3000 mutated plans accepted", accepted)
}

func filterOn(in *pb.Rel, cond *pb.Expression) *pb.Rel {
	return &pb.Rel{RelType: &pb.Rel_Filter{Filter: &pb.FilterRel{Input: in, Condition: cond}}}
}

func namedRead(names ...string) *pb.Rel {
	schema := &pb.NamedStruct{Names: names, Struct: &pb.Type_Struct{}}
	for range names {
		schema.Struct.Types = append(schema.Struct.Types, &pb.Type{Kind: &pb.Type_I32_{I32: &pb.Type_I32{}}})
	}
	return &pb.Rel{RelType: &pb.Rel_Read{Read: &pb.ReadRel{BaseSchema: schema,
		ReadType: &pb.ReadRel_NamedTable_{NamedTable: &pb.ReadRel_NamedTable{Names: []string{"db", "t"}}}}}}
}

func rootPlan(r *pb.Rel, decls ...*ext.SimpleExtensionDeclaration) *pb.Plan {
	return &pb.Plan{Extensions: decls, Relations: []*pb.PlanRel{{RelType: &pb.PlanRel_Root{Root: &pb.RelRoot{Input: r}}}}}
}

func fnDecl(urnRef, anchor uint32, name string) *ext.SimpleExtensionDeclaration {
	return &ext.SimpleExtensionDeclaration{MappingType: &ext.SimpleExtensionDeclaration_ExtensionFunction_{
		ExtensionFunction: &ext.SimpleExtensionDeclaration_ExtensionFunction{ExtensionUrnReference: urnRef, FunctionAnchor: anchor, Name: name}}}
}

func scalarFn(anchor uint32, args ...*pb.Expression) *pb.Expression {
	f := &pb.Expression_ScalarFunction{FunctionReference: anchor, OutputType: &pb.Type{Kind: &pb.Type_Bool{Bool: &pb.Type_Boolean{}}}}
	for _, a := range args {
		f.Arguments = append(f.Arguments, &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Value{Value: a}})
	}
	return &pb.Expression{RexType: &pb.Expression_ScalarFunction_{ScalarFunction: f}}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRefusals: what the consumer refuses, it names with the path to it.
func TestRefusals(t *testing.T) {
	truth := lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Boolean{Boolean: true}})
	urn := &ext.SimpleExtensionURN{ExtensionUrnAnchor: 1, Urn: "extension:com.example:odd"}
	odd := rootPlan(filterOn(namedRead("a"), scalarFn(1, field(0))), fnDecl(1, 1, "frobnicate:i32"))
	odd.ExtensionUrns = []*ext.SimpleExtensionURN{urn}
	cases := []struct {
		name string
		plan *pb.Plan
		want string
	}{
		{"unknown URN", odd, `root.input.filter.condition.scalar_function: function "frobnicate" of extension "extension:com.example:odd"`},
		{"undeclared function", rootPlan(filterOn(namedRead("a"), scalarFn(9, field(0)))), "root.input.filter.condition.scalar_function: function_reference 9 is not declared"},
		{"field out of range", rootPlan(filterOn(namedRead("a"), field(3))), "root.input.filter.condition.selection.direct_reference.struct_field: field 3 is out of range (1 columns)"},
		{"unsupported relation", rootPlan(&pb.Rel{RelType: &pb.Rel_Exchange{Exchange: &pb.ExchangeRel{}}}), "root.input: relation Exchange is not supported"},
		{"join type", rootPlan(&pb.Rel{RelType: &pb.Rel_Join{Join: &pb.JoinRel{Left: namedRead("a"), Right: namedRead("b"), Expression: truth, Type: pb.JoinRel_JOIN_TYPE_RIGHT_MARK}}}), "root.input.join: join type JOIN_TYPE_RIGHT_MARK is not supported"},
		{"emit out of range", rootPlan(&pb.Rel{RelType: &pb.Rel_Project{Project: &pb.ProjectRel{Input: namedRead("a"), Common: emit(1, 4)}}}), "root.input.common.emit: output_mapping[0] = 4 is out of range (1 columns)"},
		{"no root", &pb.Plan{}, "no root relation"},
	}
	for _, c := range cases {
		_, err := Consume(mustMarshal(t, c.plan))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want ErrInvalid with %q, got %v", c.name, c.want, err)
		}
	}
}

// TestDeepNesting: plans nested past the limit, in relations or in
// expressions, are refused rather than exhausting the stack.
func TestDeepNesting(t *testing.T) {
	r := namedRead("a")
	for range 5000 {
		r = filterOn(r, lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Boolean{Boolean: true}}))
	}
	e := field(0)
	for range 5000 {
		e = &pb.Expression{RexType: &pb.Expression_Cast_{Cast: &pb.Expression_Cast{Input: e, Type: &pb.Type{Kind: &pb.Type_I64_{I64: &pb.Type_I64{}}}}}}
	}
	for name, p := range map[string]*pb.Plan{"relations": rootPlan(r), "expressions": rootPlan(filterOn(namedRead("a"), e))} {
		b, err := proto.MarshalOptions{}.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Consume(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s nested 5000 deep: want ErrInvalid, got %v", name, err)
		}
	}
}

// TestLegacyURIs: a plan of an older producer declares its functions by
// extension URI (fields this protobuf no longer has); the standard
// extensions' URIs map to their URNs.
func TestLegacyURIs(t *testing.T) {
	p := rootPlan(filterOn(namedRead("a", "b"), scalarFn(1, field(0), field(1))), fnDecl(0, 1, "gt:any_any"))
	// ExtensionFunction.extension_uri_reference = 1 (field 1).
	f := p.Extensions[0].GetExtensionFunction()
	f.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1))
	// Plan.extension_uris = [{extension_uri_anchor: 1, uri: ...}] (field 1).
	var uri []byte
	uri = protowire.AppendVarint(protowire.AppendTag(uri, 1, protowire.VarintType), 1)
	uri = protowire.AppendString(protowire.AppendTag(uri, 2, protowire.BytesType), "https://github.com/substrait-io/substrait/blob/main/extensions/functions_comparison.yaml")
	p.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), uri))
	st, err := consumeChecked(t, mustMarshal(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if got := sql.Format(st); !strings.Contains(got, "(s1.a > s1.b)") {
		t.Fatalf("gt from functions_comparison.yaml: %s", got)
	}
	// An unknown URI stays unknown.
	p.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
		protowire.AppendString(protowire.AppendTag(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1), 2, protowire.BytesType), "file:///x/my_functions.yaml")))
	if _, err := Consume(mustMarshal(t, p)); err == nil || !strings.Contains(err.Error(), "my_functions.yaml") {
		t.Fatalf("unknown URI: %v", err)
	}
}

// TestReferenceBlowup: shared relations referring twice to the one before
// would expand to 2^60 relations; the consumer stops at its budget.
func TestReferenceBlowup(t *testing.T) {
	p := &pb.Plan{Relations: []*pb.PlanRel{{RelType: &pb.PlanRel_Rel{Rel: namedRead("a")}}}}
	for i := range 60 {
		refTo := func() *pb.Rel {
			return &pb.Rel{RelType: &pb.Rel_Reference{Reference: &pb.ReferenceRel{SubtreeOrdinal: int32(i)}}}
		}
		p.Relations = append(p.Relations, &pb.PlanRel{RelType: &pb.PlanRel_Rel{Rel: &pb.Rel{RelType: &pb.Rel_Cross{Cross: &pb.CrossRel{Left: refTo(), Right: refTo()}}}}})
	}
	p.Relations = append(p.Relations, &pb.PlanRel{RelType: &pb.PlanRel_Root{Root: &pb.RelRoot{Input: &pb.Rel{RelType: &pb.Rel_Reference{Reference: &pb.ReferenceRel{SubtreeOrdinal: 60}}}}}})
	if _, err := Consume(mustMarshal(t, p)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("want the node budget's error, got %v", err)
	}
}

// doubling is n projections over a read, each adding a column that is
// the column before added to itself: n relations whose SQL, with each
// reference printing its column's expression, has 2^n nodes.
func doubling(n int) *pb.Rel {
	r := namedRead("a")
	for range n {
		r = &pb.Rel{RelType: &pb.Rel_Project{Project: &pb.ProjectRel{Input: r, Common: emit(1, 1),
			Expressions: []*pb.Expression{scalarFn(1, field(0), field(0))}}}}
	}
	return r
}

// TestExpressionBlowup: a small plan whose field references would print
// exponentially large SQL (projections doubling the column before, or an
// emit repeating a large column) is refused by the node budget, not
// printed.
func TestExpressionBlowup(t *testing.T) {
	add := fnDecl(0, 1, "add")
	st, err := consumeChecked(t, mustMarshal(t, rootPlan(doubling(10), add)))
	if err != nil {
		t.Fatalf("10 doublings (1024 nodes) are within the budget: %v", err)
	}
	if n := strings.Count(sql.Format(st), "s1.a"); n != 1024 {
		t.Fatalf("10 doublings print s1.a %d times, want 1024", n)
	}
	if _, err := Consume(mustMarshal(t, rootPlan(doubling(60), add))); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("60 doublings: want the node budget's error, got %v", err)
	}
	// An emit with 300 copies of a 2^10-node column: 300k nodes from a
	// plan of a few hundred bytes.
	rep := &pb.RelCommon{EmitKind: &pb.RelCommon_Emit_{Emit: &pb.RelCommon_Emit{OutputMapping: make([]int32, 300)}}}
	p := rootPlan(&pb.Rel{RelType: &pb.Rel_Filter{Filter: &pb.FilterRel{Input: doubling(10), Common: rep,
		Condition: lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Boolean{Boolean: true}})}}}, add)
	// Plans that print a part many times over: mark and single joins
	// nested on the right (their right input printed in two or one
	// subquery per column), 20 window functions over a partition of 2^14
	// nodes, 20 grouping sets of such a key.
	truth := lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Boolean{Boolean: true}})
	nested := func(jt pb.JoinRel_JoinType) *pb.Plan {
		r := namedRead("a")
		for range 40 {
			r = &pb.Rel{RelType: &pb.Rel_Join{Join: &pb.JoinRel{Left: namedRead("a"), Right: r, Expression: truth, Type: jt}}}
		}
		return rootPlan(r)
	}
	win := &pb.ConsistentPartitionWindowRel{Input: doubling(14), PartitionExpressions: []*pb.Expression{field(0)}}
	agg := &pb.AggregateRel{Input: doubling(14), GroupingExpressions: []*pb.Expression{field(0)}}
	for range 20 {
		win.WindowFunctions = append(win.WindowFunctions, &pb.ConsistentPartitionWindowRel_WindowRelFunction{FunctionReference: 2})
		agg.Groupings = append(agg.Groupings, &pb.AggregateRel_Grouping{ExpressionReferences: []uint32{0}})
	}
	for name, p := range map[string]*pb.Plan{
		"mark joins":     nested(pb.JoinRel_JOIN_TYPE_LEFT_MARK),
		"single joins":   nested(pb.JoinRel_JOIN_TYPE_LEFT_SINGLE),
		"window":         rootPlan(&pb.Rel{RelType: &pb.Rel_Window{Window: win}}, add, fnDecl(0, 2, "rank")),
		"grouping sets":  rootPlan(&pb.Rel{RelType: &pb.Rel_Aggregate{Aggregate: agg}}, add),
		"emit repeating": p,
	} {
		if _, err := Consume(mustMarshal(t, p)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s: want the node budget's error, got %v", name, err)
		}
	}
}

// TestHostileNames: names and strings of a plan are data in the SQL the
// consumer prints, whatever quotes, backticks, comments or semicolons they
// hold: the printed SQL parses back to the plan's table, column, alias and
// string (or the plan is refused), never to other SQL.
func TestHostileNames(t *testing.T) {
	hostile := []string{"a'b", "a`b", "a\"b", "x; DROP TABLE t; --", "/* c */ x", "-- c\nx", "` OR TRUE OR `", "' OR '1'='1", "a\\", "YEAR FROM x) OR TRUE OR EXTRACT(YEAR"}
	for _, h := range hostile {
		str := lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_String_{String_: h}})
		read := namedRead(h)
		read.GetRead().ReadType = &pb.ReadRel_NamedTable_{NamedTable: &pb.ReadRel_NamedTable{Names: []string{h, h}}}
		unit := &pb.Expression_ScalarFunction{FunctionReference: 2, Arguments: []*pb.FunctionArgument{
			{ArgType: &pb.FunctionArgument_Enum{Enum: h}}, {ArgType: &pb.FunctionArgument_Value{Value: field(0)}}}}
		p := rootPlan(&pb.Rel{RelType: &pb.Rel_Project{Project: &pb.ProjectRel{Input: filterOn(read, scalarFn(1, field(0), str)),
			Expressions: []*pb.Expression{str}}}}, fnDecl(0, 1, "equal"), fnDecl(0, 2, "extract"))
		p.Relations[0].GetRoot().Names = []string{h, h}
		st, err := consumeChecked(t, mustMarshal(t, p))
		if err != nil {
			t.Fatalf("%q: %v", h, err)
		}
		text := sql.Format(st)
		back, err := sql.ParseOne(text)
		if err != nil {
			t.Fatalf("%q: %v\n%s", h, err, text)
		}
		var tables, idents, strs, aliases []string
		sql.Walk(back, func(n sql.Node) bool {
			switch n := n.(type) {
			case *sql.TableName:
				tables = append(tables, strings.Join(n.Name.Parts, "|"))
			case *sql.Ident:
				idents = append(idents, n.Parts[len(n.Parts)-1])
			case *sql.Literal:
				if n.Kind == sql.LitString {
					strs = append(strs, n.Value)
				}
			case *sql.SelectItem:
				aliases = append(aliases, n.Alias)
			}
			return true
		})
		want := func(what string, got []string, w ...string) {
			if strings.Join(got, "\x00") != strings.Join(w, "\x00") {
				t.Errorf("%q: %s %q, want %q\n%s", h, what, got, w, text)
			}
		}
		want("tables", tables, h+"|"+h)
		want("columns", idents, h, h)
		want("strings", strs, h, h)
		want("aliases", aliases, h, h)

		// A unit is a word: EXTRACT prints it bare, so any other is refused.
		p.Relations[0].GetRoot().GetInput().GetProject().Expressions = []*pb.Expression{{RexType: &pb.Expression_ScalarFunction_{ScalarFunction: unit}}}
		if _, err := consumeChecked(t, mustMarshal(t, p)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not a plain name") {
			t.Errorf("EXTRACT with the unit %q: want a refusal, got %v", h, err)
		}
	}
}

// TestMapNestingBounded: a type of the plan (here a cast's) nesting MAP
// types past plan.MaxMapNesting is refused with ErrInvalid at its place
// in the plan, as DDL, CAST and ingest refuse it; at the limit it is
// taken.
func TestMapNestingBounded(t *testing.T) {
	nested := func(depth int) *pb.Plan {
		typ := &pb.Type{Kind: &pb.Type_I64_{I64: &pb.Type_I64{}}}
		for range depth {
			typ = &pb.Type{Kind: &pb.Type_Map_{Map: &pb.Type_Map{Key: &pb.Type{Kind: &pb.Type_I32_{I32: &pb.Type_I32{}}}, Value: typ}}}
		}
		typ = &pb.Type{Kind: &pb.Type_List_{List: &pb.Type_List{Type: typ}}}
		cast := &pb.Expression{RexType: &pb.Expression_Cast_{Cast: &pb.Expression_Cast{Input: field(0), Type: typ}}}
		return rootPlan(filterOn(namedRead("a"), cast))
	}
	if _, err := consumeChecked(t, mustMarshal(t, nested(plan.MaxMapNesting))); err != nil {
		t.Fatalf("MAP types nested %d deep: %v", plan.MaxMapNesting, err)
	}
	_, err := Consume(mustMarshal(t, nested(plan.MaxMapNesting+1)))
	want := "root.input.filter.condition.cast.type.list.type" + strings.Repeat(".map.value", plan.MaxMapNesting) + ": MAP types nested more than 8 deep"
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("MAP types nested %d deep: want ErrInvalid with %q, got %v", plan.MaxMapNesting+1, want, err)
	}
}
