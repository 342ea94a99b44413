package exec_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

func TestGather(t *testing.T) {
	a := exectest.NewTable(t, "x:int64, y:string", "1 | a", "2 | b", "3 | NULL")
	b := exectest.NewTable(t, "x:int64, y:string", "4 | d", "5 | e")
	c := exectest.NewTable(t, "x:int64, y:string", "6 | f")
	ctor := func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		for i := range ops {
			ops[i] = exec.NewFilter(ec, ops[i], call(t, "greater", col(a.Schema, "x"), lit(int64(1))))
		}
		return exec.NewGather(ec, ops...)
	}
	exectest.Run(t, []exectest.Table{a, b, c}, []string{"2 | b", "3 | NULL", "4 | d", "5 | e", "6 | f"}, exectest.Unordered, ctor)
	exectest.RunNullInjection(t, []exectest.Table{a, b, c}, exectest.Unordered, ctor)
}

// TestGatherEarlyClose stops reading while producers are blocked: Close
// must stop them and release what they queued.
func TestGatherEarlyClose(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	s, bs := orderedBatches(mem, 50_000, 1)
	s2, bs2 := orderedBatches(mem, 50_000, 1)
	g, err := exec.NewGather(ec, exectest.Source(ec, s, bs), exectest.Source(ec, s2, bs2))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Next(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

func stringBatches(mem memory.Allocator, n int) (*arrow.Schema, []arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("row-%d-%x", i, i*7919))
		if b.Field(0).Len() == 1024 || i == n-1 {
			out = append(out, b.NewRecordBatch())
		}
	}
	return schema, out
}

// BenchmarkGather runs two CPU-heavy pipelines (a regexp filter over 100K
// strings each) one after the other (union) and in parallel (gather).
func BenchmarkGather(b *testing.B) {
	mem := memory.NewGoAllocator()
	s, bs := stringBatches(mem, 100_000)
	defer release(bs)
	for _, kind := range []string{"union", "gather"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				ec := exec.NewContext(mem)
				var pipes []exec.Operator
				for range 2 {
					pred, err := exec.NewCall("regexp_like", exec.NewColumn(0, arrow.BinaryTypes.String, "s"), lit("^row-[0-9]*7-.*a"))
					if err != nil {
						b.Fatal(err)
					}
					pipes = append(pipes, exec.NewFilter(ec, exectest.Source(ec, s, retained(bs)), pred))
				}
				var op exec.Operator
				var err error
				if kind == "gather" {
					op, err = exec.NewGather(ec, pipes...)
				} else {
					op, err = exec.NewUnionAll(ec, pipes...)
				}
				if err != nil {
					b.Fatal(err)
				}
				if _, err := exec.Drain(context.Background(), op); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
