package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// starBatches makes n rows shaped like a TPC-DS fact or dimension table in
// batches of 1024: k = key(i), kh = k / 32, kl = k % 32 (int64), then a
// decimal(7,2) and a string column.
func starBatches(mem memory.Allocator, n int, key func(i int) int64) (*arrow.Schema, []arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "kh", Type: arrow.PrimitiveTypes.Int64},
		{Name: "kl", Type: arrow.PrimitiveTypes.Int64}, {Name: "d", Type: &arrow.Decimal128Type{Precision: 7, Scale: 2}},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		k := key(i)
		b.Field(0).(*array.Int64Builder).Append(k)
		b.Field(1).(*array.Int64Builder).Append(k / 32)
		b.Field(2).(*array.Int64Builder).Append(k % 32)
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i % 100_000)))
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", i%5000))
		if b.Field(0).Len() == 1024 || i == n-1 {
			out = append(out, b.NewRecordBatch())
		}
	}
	return schema, out
}

// BenchmarkHashJoin probes 1M rows (5 columns, batches of 1024) against a
// build side of 1000 rows that every probe row matches once ("dim"), or of
// 100K rows that 10% of the probe rows match ("big"), on the int64 key k or
// on the two int64 keys (kh, kl) ("2key"), as inner, semi and anti joins;
// "string" joins on the string column s instead (1000 distinct build keys,
// 5000 probe keys: 20% of the probe rows match).
//
// Before -> after the probe work (own gather loops, dense key array,
// vector key reads, reused scratch, coalesced output), benchstat of 6
// interleaved runs on the shared 2-core machine, all p=0.002: dim/inner
// 255 -> 87ms, dim/inner/2key 258 -> 74ms, dim/inner/string 112 -> 59ms,
// big/inner 200 -> 55ms, big/semi 119 -> 32ms, big/anti 197 -> 45ms;
// allocations down 77-83%. Slicing instead of gathering left rows that
// match as one run: dim/inner 59 -> 34ms, dim/inner/2key 56 -> 34ms
// (p=0.002), dim/inner/string 43 -> 38ms (p=0.041). Each case runs with
// the probe kept serial (KeepLeftOrder) and probing on two workers: 6
// interleaved runs at load 3.1-5.7, wall -19% in the geometric mean
// (big/* -20 to -32%, dim/inner/string -37%, dim/inner unchanged), CPU +6%.
func BenchmarkHashJoin(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(1, 2))
	s, dimProbe := starBatches(mem, 1_000_000, func(int) int64 { return rng.Int64N(1000) })
	defer release(dimProbe)
	_, bigProbe := starBatches(mem, 1_000_000, func(int) int64 { return rng.Int64N(1_000_000) })
	defer release(bigProbe)
	_, dim := starBatches(mem, 1000, func(i int) int64 { return int64(i) })
	defer release(dim)
	_, big := starBatches(mem, 100_000, func(i int) int64 { return int64(i) })
	defer release(big)
	k := []exec.Expr{col(s, "k")}
	k2 := []exec.Expr{col(s, "kh"), col(s, "kl")}
	for _, c := range []struct {
		name         string
		probe, build []arrow.RecordBatch
		typ          exec.JoinType
		keys         []exec.Expr
	}{
		{"dim/inner", dimProbe, dim, exec.InnerJoin, k},
		{"dim/inner/2key", dimProbe, dim, exec.InnerJoin, k2},
		{"dim/inner/string", dimProbe, dim, exec.InnerJoin, []exec.Expr{col(s, "s")}},
		{"big/inner", bigProbe, big, exec.InnerJoin, k},
		{"big/semi", bigProbe, big, exec.SemiJoin, k},
		{"big/anti", bigProbe, big, exec.AntiJoin, k},
	} {
		for _, serial := range []bool{true, false} {
			name := c.name + "/parallel"
			if serial {
				name = c.name + "/serial"
			}
			b.Run(name, func(b *testing.B) {
				cpu0 := cpuTime()
				for b.Loop() {
					ec := exec.NewContext(mem)
					ec.Parallelism = 2
					l := exectest.Source(ec, s, retained(c.probe))
					r := exectest.Source(ec, s, retained(c.build))
					op, err := exec.NewHashJoin(ec, l, r, c.typ, c.keys, c.keys, nil)
					if err != nil {
						b.Fatal(err)
					}
					if serial {
						op = exec.KeepLeftOrder(op)
					}
					if _, err := exec.Drain(context.Background(), op); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkHashAggregate groups 1M TPC-DS-shaped rows (starBatches) by the
// int64 key k (1000 groups), the two int64 keys (kh, kl) (encoded, 1000
// groups) or the string s (5000 groups), with count(*) and sum of the
// decimal column; "parallel" cases run on two workers, "rollup" over
// (kh, kl, s) and its coarser sets, "global" without groups. Vector key reads, reused scratch and
// BytesTable instead of a Go map cut allocated bytes 68-90% but no time
// measurably (int 21ms, 2int 81-91ms, string 86-88ms before and after,
// p=0.59). cpu-ns/op is the process's CPU time, which the machine's load
// moves less than wall time.
func BenchmarkHashAggregate(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(1, 2))
	s, in := starBatches(mem, 1_000_000, func(int) int64 { return rng.Int64N(1000) })
	defer release(in)
	// A small aggregation's cost is mostly its fixed cost (TPC-DS's small
	// queries run several).
	_, small := starBatches(mem, 2000, func(i int) int64 { return int64(i % 10) })
	defer release(small)
	// Many groups (about 630K of 1M rows): the hash table outgrows the
	// cache, so its lookups are cache misses (q23, q65, q97).
	_, many := starBatches(mem, 1_000_000, func(int) int64 { return rng.Int64N(1_000_000) })
	defer release(many)
	aggs := []exec.AggregateSpec{{Func: "count_star"}, {Func: "sum", Args: []exec.Expr{col(s, "d")}}}
	double, err := exec.NewCall("add", col(s, "d"), col(s, "d"))
	if err != nil {
		b.Fatal(err)
	}
	computed := []exec.AggregateSpec{{Func: "count_star"}, {Func: "sum", Args: []exec.Expr{double}}}
	// q59's pivot: seven sums of CASE WHEN kl = j THEN d END, each with
	// one row in 32 not NULL.
	var pivot []exec.AggregateSpec
	for j := range 7 {
		eq, err := exec.NewCall("equal", col(s, "kl"), lit(int64(j)))
		if err != nil {
			b.Fatal(err)
		}
		arm, err := exec.NewCase([]exec.When{{Cond: eq, Then: col(s, "d")}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		pivot = append(pivot, exec.AggregateSpec{Func: "sum", Args: []exec.Expr{arm}})
	}
	for _, c := range []struct {
		name     string
		groups   []exec.Expr
		parallel bool
		sets     [][]int
		aggs     []exec.AggregateSpec // nil: aggs
		in       []arrow.RecordBatch  // nil: in
	}{
		{name: "int", groups: []exec.Expr{col(s, "k")}},
		{name: "2int", groups: []exec.Expr{col(s, "kh"), col(s, "kl")}},
		{name: "string", groups: []exec.Expr{col(s, "s")}},
		{name: "parallel-2int", groups: []exec.Expr{col(s, "kh"), col(s, "kl")}, parallel: true},
		{name: "parallel-string", groups: []exec.Expr{col(s, "s")}, parallel: true},
		{name: "parallel-computed", groups: []exec.Expr{col(s, "kh"), col(s, "kl")}, parallel: true, aggs: computed},
		{name: "rollup", groups: []exec.Expr{col(s, "kh"), col(s, "kl"), col(s, "s")}, sets: [][]int{{0, 1, 2}, {0, 1}, {0}, {}}},
		{name: "many-int", groups: []exec.Expr{col(s, "k")}, in: many},
		{name: "many-2int", groups: []exec.Expr{col(s, "kh"), col(s, "kl")}, in: many},
		{name: "parallel-many-2int", groups: []exec.Expr{col(s, "kh"), col(s, "kl")}, parallel: true, in: many},
		{name: "global"},
		{name: "pivot", groups: []exec.Expr{col(s, "kh")}, aggs: pivot},
		{name: "small-int", groups: []exec.Expr{col(s, "k")}, in: small},
		{name: "small-string", groups: []exec.Expr{col(s, "s")}, in: small},
	} {
		b.Run(c.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				ec := exec.NewContext(mem)
				newAgg := exec.NewHashAggregate
				if c.parallel {
					ec.Parallelism = 2
					newAgg = exec.NewParallelHashAggregate
				}
				a := aggs
				if c.aggs != nil {
					a = c.aggs
				}
				src := in
				if c.in != nil {
					src = c.in
				}
				op, err := newAgg(ec, exectest.Source(ec, s, retained(src)), c.groups, nil, a, c.sets)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := exec.Drain(context.Background(), op); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
