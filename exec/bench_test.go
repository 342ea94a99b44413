package exec_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// orderedBatches makes n rows (k = i / dup, v = i) in batches of 1024,
// ordered by k.
func orderedBatches(mem memory.Allocator, n, dup int) (*arrow.Schema, []arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i / dup))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		if b.Field(0).Len() == 1024 || i == n-1 {
			out = append(out, b.NewRecordBatch())
		}
	}
	return schema, out
}

func retained(bs []arrow.RecordBatch) []arrow.RecordBatch {
	for _, b := range bs {
		b.Retain()
	}
	return bs
}

func release(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}

// BenchmarkJoinOrdered compares the merge join with the hash join on inputs
// already ordered by the key (200K x 200K rows, 2 matches per key).
// Measured on the shared 2-core machine (benchstat, 6 runs, high noise):
// hash 38.5ms, merge 33.4ms: merge/hash = 0.87. Before the hash join's
// integer-key table the hash join took 140ms (merge/hash = 0.19).
func BenchmarkJoinOrdered(b *testing.B) {
	mem := memory.NewGoAllocator()
	ls, lb := orderedBatches(mem, 200_000, 1)
	rs, rb := orderedBatches(mem, 200_000, 2)
	defer release(lb)
	defer release(rb)
	for _, kind := range []string{"hash", "merge"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				ec := exec.NewContext(mem)
				l := exectest.Source(ec, ls, retained(lb))
				r := exectest.Source(ec, rs, retained(rb))
				lk := []exec.Expr{exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "k")}
				rk := []exec.Expr{exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "k")}
				ctor := exec.NewHashJoin
				if kind == "merge" {
					ctor = exec.NewMergeJoin
				}
				op, err := ctor(ec, l, r, exec.InnerJoin, lk, rk, nil)
				if err != nil {
					b.Fatal(err)
				}
				n, err := exec.Drain(context.Background(), op)
				if err != nil || n != 200_000 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// BenchmarkAggregateOrdered compares sort aggregation with hash aggregation
// on input ordered by the group key (1M rows, 100K groups). Measured: hash
// 61.6ms, sort 48.7ms (sort/hash = 0.79), parallel hash 69.9ms.
func BenchmarkAggregateOrdered(b *testing.B) {
	mem := memory.NewGoAllocator()
	s, bs := orderedBatches(mem, 1_000_000, 10)
	defer release(bs)
	aggs := []exec.AggregateSpec{{Func: "count_star"}, {Func: "sum", Args: []exec.Expr{exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "v")}}}
	groups := []exec.Expr{exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "k")}
	for _, kind := range []string{"hash", "sort", "parallel-hash"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				ec := exec.NewContext(mem)
				ctor := exec.NewHashAggregate
				switch kind {
				case "sort":
					ctor = exec.NewSortAggregate
				case "parallel-hash":
					ctor = exec.NewParallelHashAggregate
				}
				op, err := ctor(ec, exectest.Source(ec, s, retained(bs)), groups, nil, aggs, nil)
				if err != nil {
					b.Fatal(err)
				}
				n, err := exec.Drain(context.Background(), op)
				if err != nil || n != 100_000 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// BenchmarkSort sorts 1M rows by a random int64 key.
func BenchmarkSort(b *testing.B) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var bs []arrow.RecordBatch
	rb := array.NewRecordBuilder(mem, schema)
	x := uint64(1)
	for i := 0; i < 1_000_000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		rb.Field(0).(*array.Int64Builder).Append(int64(x >> 20))
		rb.Field(1).(*array.Int64Builder).Append(int64(i))
		if rb.Field(0).Len() == 1024 {
			bs = append(bs, rb.NewRecordBatch())
		}
	}
	bs = append(bs, rb.NewRecordBatch())
	rb.Release()
	defer release(bs)
	for b.Loop() {
		ec := exec.NewContext(mem)
		op := exec.NewSort(ec, exectest.Source(ec, schema, retained(bs)), []exec.SortKey{{Expr: exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "k")}})
		if n, err := exec.Drain(context.Background(), op); err != nil || n != 1_000_000 {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkPipeline is scan -> filter -> project -> hash aggregate over 1M
// rows (10K groups).
func BenchmarkPipeline(b *testing.B) {
	mem := memory.NewGoAllocator()
	s, bs := orderedBatches(mem, 1_000_000, 100)
	defer release(bs)
	k := exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "k")
	v := exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "v")
	pred, err := exec.NewCall("greater", v, lit(int64(1000)))
	if err != nil {
		b.Fatal(err)
	}
	dbl, err := exec.NewCall("multiply", v, lit(int64(2)))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ec := exec.NewContext(mem)
		f := exec.NewFilter(ec, exectest.Source(ec, s, retained(bs)), pred)
		p := exec.NewProject(ec, f, []exec.Expr{k, dbl}, []string{"k", "d"})
		agg, err := exec.NewHashAggregate(ec, p, []exec.Expr{exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "k")}, nil,
			[]exec.AggregateSpec{{Func: "sum", Args: []exec.Expr{exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "d")}}, {Func: "count_star"}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := exec.Drain(context.Background(), agg); err != nil {
			b.Fatal(err)
		}
	}
}
