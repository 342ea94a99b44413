package flightsql_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/flightd/flightd/flightsql"
)

// setOutputTypes sets every output_type field under m (scalar, aggregate
// and window functions' measures) to typ and returns how many it set.
func setOutputTypes(m protoreflect.Message, typ *pb.Type) int {
	n := 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap() || fd.Message() == nil:
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				n += setOutputTypes(l.Get(i).Message(), typ)
			}
		default:
			n += setOutputTypes(v.Message(), typ)
		}
		return true
	})
	if fd := m.Descriptor().Fields().ByName("output_type"); fd != nil && fd.Message() != nil {
		m.Set(fd, protoreflect.ValueOfMessage(proto.Clone(typ).ProtoReflect()))
		n++
	}
	return n
}

// TestSubstraitOutputTypeIgnored pins what a plan whose functions claim
// another output_type than flightd computes gets: flightd's answer, typed
// as flightd types it, the FlightInfo schema and the batches agreeing; no
// error, no cast, no mis-typed array. It is what DataFusion's consumer
// does (it reads output_type only for casts); the consumer translates a
// plan into SQL, whose binder types every expression, and flightd's typing
// rules (decimal precision of SUM, STRING for varchar) differ from the
// extension declarations' in places, so refusing a mismatch would refuse
// other producers' honest plans. Cast types, literal types and the
// ReadRels' base_schema are checked (TestSubstraitTypeRanges,
// TestSubstraitBaseSchema).
func TestSubstraitOutputTypeIgnored(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (a BIGINT, b STRING)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 'x'), (2, 'y')")
	cl, _ := ts.rawClient(t)
	for _, c := range []struct {
		q    string
		want string
		typ  arrow.DataType // of the first column
	}{
		{"SELECT a + 1 AS x, b FROM t WHERE a > 0", "[[2 x] [3 y]]", arrow.PrimitiveTypes.Int64},
		{"SELECT sum(a) AS s, count(*) AS c FROM t", "[[3 2]]", arrow.PrimitiveTypes.Int64},
		{"SELECT a, row_number() OVER (ORDER BY a) AS r FROM t", "[[1 1] [2 2]]", arrow.PrimitiveTypes.Int64},
	} {
		good := explainSubstrait(t, cnxn, c.q)
		for name, typ := range map[string]*pb.Type{
			"string":                 {Kind: &pb.Type_String_{String_: &pb.Type_String{}}},
			"precision_timestamp 12": {Kind: &pb.Type_PrecisionTimestamp_{PrecisionTimestamp: &pb.Type_PrecisionTimestamp{Precision: 12}}},
			"kind unset":             {},
		} {
			n := 0
			plan := editPlan(t, good, func(p *pb.Plan) { n = setOutputTypes(p.ProtoReflect(), typ) })
			if n == 0 {
				t.Fatalf("%s: the plan has no output_type", c.q)
			}
			rows, err := substraitRows(cnxn, plan)
			if err != nil || fmtRows(rows) != c.want {
				t.Errorf("%s, output_type %s: %v, %v, want %s", c.q, name, rows, err, c.want)
			}
			info, err := cl.ExecuteSubstrait(context.Background(), arrowflightsql.SubstraitPlan{Plan: plan})
			if err != nil {
				t.Fatal(err)
			}
			schema, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if got := schema.Field(0).Type; !arrow.TypeEqual(got, c.typ) {
				t.Errorf("%s, output_type %s: column of %s, want %s", c.q, name, got, c.typ)
			}
		}
	}
}
