package exec_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// scrambled makes n rows (k = i % 100, v = i*7919 % distinct) in batches of
// 1024, in no useful order.
func scrambled(mem memory.Allocator, n, distinct int) (*arrow.Schema, []arrow.RecordBatch) {
	return kvBatches(mem, n, func(i int) (int64, int64) { return int64(i % 100), int64(i * 7919 % distinct) })
}

// benchSpill runs ctor over 500K scrambled rows without a budget (memory)
// and with a 4 MB one (spill).
func benchSpill(b *testing.B, ctor func(ec *exec.Context, in exec.Operator, s *arrow.Schema) (exec.Operator, error)) {
	mem := memory.NewGoAllocator()
	s, in := scrambled(mem, 500_000, 250_000)
	defer release(in)
	for _, limit := range []int64{0, 4 << 20} {
		name := "memory"
		if limit > 0 {
			name = "spill"
		}
		b.Run(name, func(b *testing.B) {
			// CPU time as well as wall time: the shared machine's load
			// swamps the latter.
			start := cpuTime()
			defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
			for b.Loop() {
				ec := exec.NewContext(mem)
				ec.MemoryLimit, ec.TempDir = limit, b.TempDir()
				op, err := ctor(ec, exectest.Source(ec, s, retained(in)), s)
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

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkCountDistinct is count(DISTINCT v) over 500K rows with 250K
// distinct values, globally and by k (100 groups).
func BenchmarkCountDistinct(b *testing.B) {
	for _, grouped := range []bool{false, true} {
		name := "global"
		if grouped {
			name = "grouped"
		}
		b.Run(name, func(b *testing.B) {
			benchSpill(b, func(ec *exec.Context, in exec.Operator, s *arrow.Schema) (exec.Operator, error) {
				var groups []exec.Expr
				if grouped {
					groups = []exec.Expr{exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "k")}
				}
				return exec.NewHashAggregate(ec, in, groups, nil, []exec.AggregateSpec{
					{Func: "count", Args: []exec.Expr{exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "v")}, Distinct: true}}, nil)
			})
		})
	}
}

// BenchmarkDistinct is SELECT DISTINCT k, v over 500K rows with 250K
// distinct values of v (each with two k).
func BenchmarkDistinct(b *testing.B) {
	benchSpill(b, func(ec *exec.Context, in exec.Operator, s *arrow.Schema) (exec.Operator, error) {
		return exec.NewDistinct(ec, in), nil
	})
}

// BenchmarkWindow is row_number() and a running sum OVER (ORDER BY v) over
// 500K rows: one partition.
func BenchmarkWindow(b *testing.B) {
	benchSpill(b, func(ec *exec.Context, in exec.Operator, s *arrow.Schema) (exec.Operator, error) {
		v := exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "v")
		return exec.NewWindow(ec, in, nil, []exec.SortKey{{Expr: v}}, []exec.WindowFunc{
			{Func: "row_number"}, {Func: "sum", Args: []exec.Expr{v}}})
	})
}
