package exec_test

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

func TestEdgeCases(t *testing.T) {
	in := exectest.NewTable(t, "a:int64, s:string", "3 | c", "1 | a", "2 | b")
	s := in.Schema
	one := func(ctor func(ec *exec.Context, op exec.Operator) exec.Operator) exectest.Ctor {
		return func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) { return ctor(ec, ops[0]), nil }
	}
	key := []exec.SortKey{{Expr: col(s, "a")}}
	cases := []struct {
		name string
		want []string
		ctor exectest.Ctor
	}{
		{"limit 0", nil, one(func(ec *exec.Context, op exec.Operator) exec.Operator { return exec.NewLimit(ec, op, 0, 0) })},
		{"offset past end", nil, one(func(ec *exec.Context, op exec.Operator) exec.Operator { return exec.NewLimit(ec, op, 10, -1) })},
		{"offset only", []string{"2 | b"}, one(func(ec *exec.Context, op exec.Operator) exec.Operator { return exec.NewLimit(ec, op, 2, -1) })},
		{"topn past end", nil, one(func(ec *exec.Context, op exec.Operator) exec.Operator { return exec.NewTopN(ec, op, key, 5, 2) })},
		{"topn count 0", nil, one(func(ec *exec.Context, op exec.Operator) exec.Operator { return exec.NewTopN(ec, op, key, 0, 0) })},
		{"topn all", []string{"1 | a", "2 | b", "3 | c"}, one(func(ec *exec.Context, op exec.Operator) exec.Operator { return exec.NewTopN(ec, op, key, 0, 100) })},
		{"filter null predicate", nil, one(func(ec *exec.Context, op exec.Operator) exec.Operator {
			return exec.NewFilter(ec, op, call(t, "equal", col(s, "a"), exec.NewLiteral(nullOf(arrow.PrimitiveTypes.Int64))))
		})},
		{"filter error", []string{"error: division by zero"}, one(func(ec *exec.Context, op exec.Operator) exec.Operator {
			return exec.NewFilter(ec, op, call(t, "equal", call(t, "divide", col(s, "a"), lit(int64(0))), lit(int64(1))))
		})},
		{"values zero rows", nil, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			ops[0].Close()
			return exec.NewValues(ec, s, nil), nil
		}},
		{"values wrong width", []string{"error: VALUES row 1 has 1 values"}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			ops[0].Close()
			return exec.NewValues(ec, s, [][]exec.Expr{{lit(int64(1))}}), nil
		}},
		{"values bad cast", []string{"error: VALUES row 1 column 1"}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			ops[0].Close()
			return exec.NewValues(ec, s, [][]exec.Expr{{lit("x"), lit("y")}}), nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { exectest.Run(t, []exectest.Table{in}, c.want, exectest.Ordered, c.ctor) })
	}
}

// TestConstructorErrors checks that bad plans are rejected with ErrInvalid
// (or ErrNotImplemented) at construction, before any work.
func TestConstructorErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	a := exectest.NewTable(t, "a:int64, s:string").Schema
	b := exectest.NewTable(t, "a:string").Schema
	src := func(s *arrow.Schema) exec.Operator { return exectest.Source(ec, s, nil) }
	ia := col(a, "a")
	sb := exec.NewColumn(0, arrow.BinaryTypes.String, "a")
	checks := map[string]error{}
	_, checks["union width"] = exec.NewUnionAll(ec, src(a), src(b))
	_, checks["setop types"] = exec.NewSetOp(ec, src(a), src(b), exec.Except, false)
	_, checks["join key count"] = exec.NewHashJoin(ec, src(a), src(b), exec.InnerJoin, []exec.Expr{ia}, nil, nil)
	_, checks["join key types"] = exec.NewHashJoin(ec, src(a), src(b), exec.InnerJoin, []exec.Expr{ia}, []exec.Expr{sb}, nil)
	_, checks["join no keys"] = exec.NewHashJoin(ec, src(a), src(b), exec.InnerJoin, nil, nil, nil)
	_, checks["join bad residual"] = exec.NewNestedLoopJoin(ec, src(a), src(b), exec.InnerJoin, ia)
	_, checks["nl null-aware"] = exec.NewNestedLoopJoin(ec, src(a), src(b), exec.NullAwareAntiJoin, nil)
	_, checks["agg unknown"] = exec.NewHashAggregate(ec, src(a), nil, nil, []exec.AggregateSpec{{Func: "median", Args: []exec.Expr{ia}}}, nil)
	_, checks["agg bad set"] = exec.NewHashAggregate(ec, src(a), []exec.Expr{ia}, nil, nil, [][]int{{3}})
	_, checks["sortagg sets"] = exec.NewSortAggregate(ec, src(a), []exec.Expr{ia}, nil, nil, [][]int{{0}})
	_, checks["window frame"] = exec.NewWindow(ec, src(a), nil, nil, []exec.WindowFunc{{Func: "sum", Args: []exec.Expr{ia},
		Frame: &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.UnboundedFollowing}, End: exec.FrameBound{Kind: exec.CurrentRow}}}})
	_, checks["gather types"] = exec.NewGather(ec, src(a), src(b))
	_, checks["case no when"] = exec.NewCase(nil, nil)
	_, checks["in empty"] = exec.NewIn(ia, nil)
	_, checks["cast"] = exec.NewCast(exec.NewColumn(0, arrow.FixedWidthTypes.Date32, "d"), arrow.PrimitiveTypes.Int64)
	for name, err := range checks {
		if !errors.Is(err, exec.ErrInvalid) && !errors.Is(err, exec.ErrNotImplemented) {
			t.Errorf("%s: want ErrInvalid or ErrNotImplemented, got %v", name, err)
		}
	}
}

func nullOf(dt arrow.DataType) scalar.Scalar { return scalar.MakeNullScalar(dt) }
