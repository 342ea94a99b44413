package exec_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// countedExpr is an expression that counts its evaluations.
type countedExpr struct {
	exec.Expr
	evals *atomic.Int64
}

func (c countedExpr) Eval(ctx context.Context, ec *exec.Context, b arrow.RecordBatch) (arrow.Array, error) {
	c.evals.Add(1)
	return c.Expr.Eval(ctx, ec, b)
}

// TestParallelAggregateKeysOnce: the workers of a parallel aggregation
// share each batch's group keys, evaluated (and encoded and hashed) once,
// not once per worker, and group as the serial aggregation does.
func TestParallelAggregateKeysOnce(t *testing.T) {
	tb := exectest.NewTable(t, "s:string, k:int64, v:int64")
	for i := range 1000 {
		s := fmt.Sprint("s", i%37)
		if i%11 == 0 {
			s = "NULL"
		}
		tb.Rows = append(tb.Rows, []string{s, fmt.Sprint(i % 5), fmt.Sprint(i)})
	}
	s := tb.Schema
	double, err := exec.NewCall("add", col(s, "v"), col(s, "v"))
	if err != nil {
		t.Fatal(err)
	}
	aggs := []exec.AggregateSpec{{Func: "count_star"}, {Func: "sum", Args: []exec.Expr{double}}}
	for _, keys := range [][]string{{"s", "k"}, {"k"}} {
		t.Run(fmt.Sprint(keys), func(t *testing.T) {
			var evals atomic.Int64
			groups := func(counted bool) []exec.Expr {
				var g []exec.Expr
				for _, k := range keys {
					e := col(s, k)
					if counted {
						e = countedExpr{Expr: e, evals: &evals}
					}
					g = append(g, e)
				}
				return g
			}
			want := reference(t, []exectest.Table{tb}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				return exec.NewHashAggregate(ec, ops[0], groups(false), nil, aggs, nil)
			})
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ec := exec.NewContext(mem)
			ec.Parallelism = 2
			var in []arrow.RecordBatch
			for lo := 0; lo < len(tb.Rows); lo += 100 {
				b, err := tb.Batch(mem, lo, lo+100, 0)
				if err != nil {
					t.Fatal(err)
				}
				in = append(in, b)
			}
			op, err := exec.NewParallelHashAggregate(ec, exectest.Source(ec, s, in), groups(true), nil, aggs, nil)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Collect(context.Background(), op)
			if err != nil {
				t.Fatal(err)
			}
			got := exectest.Rows(out)
			for _, b := range out {
				b.Release()
			}
			if err := op.Close(); err != nil {
				t.Fatal(err)
			}
			if !exectest.Unordered(got, want) {
				t.Fatalf("got  %q\nwant %q", got, want)
			}
			if n := evals.Load(); n != int64(len(keys)*len(in)) {
				t.Errorf("%d key evaluations for %d keys of %d batches on 2 workers, want one per key and batch", n, len(keys), len(in))
			}
		})
	}
}
