package exec_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// bigTable makes n rows of (k int64 with about groups distinct values, s
// string, v int64).
func bigTable(t *testing.T, rng *rand.Rand, n, groups int) exectest.Table {
	tb := exectest.NewTable(t, "k:int64, s:string, v:int64")
	for i := 0; i < n; i++ {
		k := rng.IntN(groups)
		v := "NULL"
		if rng.IntN(10) > 0 {
			v = fmt.Sprint(rng.IntN(1000))
		}
		ks := fmt.Sprint(k)
		if rng.IntN(50) == 0 {
			ks = "NULL"
		}
		tb.Rows = append(tb.Rows, []string{ks, fmt.Sprintf("s%d", k%7), v})
	}
	return tb
}

// spillContext returns a context with the memory limit spilling to dir,
// its accounting allocator and the checked allocator under it.
func spillContext(limit int64, dir string) (*exec.Context, *exec.AccountingAllocator, *memory.CheckedAllocator) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	mem := exec.NewAccountingAllocator(checked)
	ec := exec.NewContext(mem)
	ec.MemoryLimit, ec.TempDir = limit, dir
	return ec, mem, checked
}

// noSpillFilesLeft fails t if ec's TempDir holds anything.
func noSpillFilesLeft(t *testing.T, ec *exec.Context) {
	t.Helper()
	if left, _ := os.ReadDir(ec.TempDir); len(left) > 0 {
		t.Fatalf("%d spill files left behind", len(left))
	}
}

// runWith runs ctor over inputs with the given memory limit and returns the
// rows and how many rows were spilled, or the error; memory and spill files
// must be gone afterwards either way.
func runWith(t *testing.T, inputs []exectest.Table, limit int64, batch int, ctor exectest.Ctor) ([]string, int64, error) {
	t.Helper()
	ec, mem, checked := spillContext(limit, t.TempDir())
	defer checked.AssertSize(t, 0)
	ec.BatchSize = batch
	ops := make([]exec.Operator, len(inputs))
	for i, in := range inputs {
		var bs []arrow.RecordBatch
		for lo := 0; lo < len(in.Rows); lo += 100 {
			b, err := in.Batch(mem, lo, min(lo+100, len(in.Rows)), 1)
			if err != nil {
				t.Fatal(err)
			}
			bs = append(bs, b)
		}
		ops[i] = exectest.Source(ec, in.Schema, bs)
	}
	op, err := ctor(ec, ops)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := exec.Collect(context.Background(), op)
	rows := exectest.Rows(bs)
	for _, b := range bs {
		b.Release()
	}
	if mem.CurrentAlloc() != 0 || mem.PeakAlloc() == 0 {
		t.Fatalf("accounting: current %d, peak %d", mem.CurrentAlloc(), mem.PeakAlloc())
	}
	noSpillFilesLeft(t, ec)
	return rows, ec.SpilledRows(), err
}

// distinctAggs are DISTINCT aggregates over k (800 values) and v (1000).
func distinctAggs(s *arrow.Schema) []exec.AggregateSpec {
	return []exec.AggregateSpec{
		{Func: "count", Args: []exec.Expr{col(s, "k")}, Distinct: true}, {Func: "sum", Args: []exec.Expr{col(s, "v")}, Distinct: true},
		{Func: "avg", Args: []exec.Expr{col(s, "k")}, Distinct: true}, {Func: "count_star"},
		{Func: "max", Args: []exec.Expr{col(s, "s")}, Distinct: true},
	}
}

// streamedWindows are the window functions a partition larger than the
// budget can be computed with, chunk by chunk.
func streamedWindows(s *arrow.Schema) []exec.WindowFunc {
	running := &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.CurrentRow}}
	peers := &exec.Frame{Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.CurrentRow}}
	return []exec.WindowFunc{
		{Func: "row_number"}, {Func: "rank"}, {Func: "dense_rank"},
		{Func: "sum", Args: []exec.Expr{col(s, "v")}}, {Func: "count_star", Frame: running},
		{Func: "min", Args: []exec.Expr{col(s, "s")}, Frame: running}, {Func: "avg", Args: []exec.Expr{col(s, "k")}, Frame: peers},
		{Func: "max", Args: []exec.Expr{col(s, "v")}},
		{Func: "first_value", Args: []exec.Expr{col(s, "s")}}, {Func: "last_value", Args: []exec.Expr{col(s, "k")}},
		{Func: "first_value", Args: []exec.Expr{col(s, "v")}, Frame: running}, {Func: "last_value", Args: []exec.Expr{col(s, "v")}, Frame: running},
	}
}

// twoPassWindows need a partition's size or totals: a partition larger than
// the budget is written to disk first.
func twoPassWindows(s *arrow.Schema) []exec.WindowFunc {
	whole := &exec.Frame{Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.UnboundedFollowing}}
	return []exec.WindowFunc{
		{Func: "percent_rank"}, {Func: "cume_dist"}, {Func: "ntile", Args: []exec.Expr{lit(int64(3))}},
		{Func: "sum", Args: []exec.Expr{col(s, "v")}, Frame: whole}, {Func: "count_star", Frame: whole},
	}
}

// haloWindows look a constant number of rows back or ahead: chunks of a
// partition larger than the budget overlap by that much.
func haloWindows(s *arrow.Schema) []exec.WindowFunc {
	rows := func(start, end exec.FrameBound) *exec.Frame { return &exec.Frame{Rows: true, Start: start, End: end} }
	back := func(n int64) exec.FrameBound { return exec.FrameBound{Kind: exec.Preceding, Offset: n} }
	ahead := func(n int64) exec.FrameBound { return exec.FrameBound{Kind: exec.Following, Offset: n} }
	cur := exec.FrameBound{Kind: exec.CurrentRow}
	return []exec.WindowFunc{
		{Func: "lag", Args: []exec.Expr{col(s, "v")}}, {Func: "lead", Args: []exec.Expr{col(s, "s"), lit(int64(3)), lit("none")}},
		{Func: "lag", Args: []exec.Expr{col(s, "k"), lit(int64(-2))}},
		{Func: "sum", Args: []exec.Expr{col(s, "v")}, Frame: rows(back(1), ahead(1))},
		{Func: "avg", Args: []exec.Expr{col(s, "k")}, Frame: rows(cur, ahead(3))},
		{Func: "first_value", Args: []exec.Expr{col(s, "v")}, Frame: rows(back(2), back(1))},
		{Func: "nth_value", Args: []exec.Expr{col(s, "k"), lit(int64(2))}, Frame: rows(back(4), ahead(2))},
	}
}

// allWindows need a whole partition's rows at once.
func allWindows(s *arrow.Schema) []exec.WindowFunc {
	whole := &exec.Frame{Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.UnboundedFollowing}}
	return []exec.WindowFunc{
		{Func: "last_value", Args: []exec.Expr{col(s, "v")}, Frame: whole},
		{Func: "nth_value", Args: []exec.Expr{col(s, "v"), lit(int64(2))}},
		{Func: "count", Args: []exec.Expr{col(s, "v")}, Frame: &exec.Frame{Start: exec.FrameBound{Kind: exec.CurrentRow}, End: exec.FrameBound{Kind: exec.UnboundedFollowing}}},
		{Func: "lag", Args: []exec.Expr{col(s, "v"), col(s, "k")}},
	}
}

func TestSpill(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	in := bigTable(t, rng, 3000, 800)
	other := bigTable(t, rng, 1500, 800)
	cases := spillCases(t, in.Schema)
	inputs := spillInputs(in, other)
	for name, ctor := range cases {
		t.Run(name, func(t *testing.T) {
			inputs := inputs(name)
			want, spilled, err := runWith(t, inputs, 0, 256, ctor)
			if err != nil {
				t.Fatal(err)
			}
			if spilled != 0 {
				t.Fatalf("spilled %d rows without a limit", spilled)
			}
			got, spilled, err := runWith(t, inputs, 16<<10, 256, ctor)
			if err != nil {
				t.Fatal(err)
			}
			if name == "distinct-many-sort-aggregate" {
				if spilled != 0 {
					t.Fatalf("spilled %d rows: finished groups should have been emitted instead", spilled)
				}
			} else if spilled == 0 {
				t.Fatal("a 16 KiB limit did not spill")
			}
			if !spillVerify(name)(got, want) {
				t.Fatalf("spilled run differs: %d rows vs %d", len(got), len(want))
			}
			if len(got) == 0 && name != "hash-join-null-aware-anti" {
				t.Fatal("no rows")
			}
			t.Logf("%d rows, %d spilled", len(got), spilled)
		})
	}
}

// spillCases are operators with state that spills, over inputs of
// bigTable's schema s (see spillInputs).
func spillCases(t *testing.T, s *arrow.Schema) map[string]exectest.Ctor {
	cases := map[string]exectest.Ctor{
		"hash-aggregate": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "k"), col(s, "s")}, nil, []exec.AggregateSpec{
				{Func: "count_star"}, {Func: "sum", Args: []exec.Expr{col(s, "v")}}, {Func: "max", Args: []exec.Expr{col(s, "v")}},
				{Func: "count", Args: []exec.Expr{col(s, "v")}, Distinct: true},
			}, nil)
		},
		"hash-aggregate-int-key": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "k")}, nil, []exec.AggregateSpec{
				{Func: "sum", Args: []exec.Expr{col(s, "v")}}, {Func: "min", Args: []exec.Expr{col(s, "s")}},
			}, nil)
		},
		// Two integer keys pack into one int64 (agg_pack.go).
		"hash-aggregate-packed-keys": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "k"), col(s, "v")}, nil, []exec.AggregateSpec{
				{Func: "count_star"}, {Func: "min", Args: []exec.Expr{col(s, "s")}},
			}, nil)
		},
		"parallel-hash-aggregate-packed-keys": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewParallelHashAggregate(ec, ops[0], []exec.Expr{col(s, "v"), col(s, "k")}, nil, []exec.AggregateSpec{
				{Func: "count_star"}, {Func: "count", Args: []exec.Expr{col(s, "s")}, Distinct: true},
			}, nil)
		},
		"parallel-hash-aggregate": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewParallelHashAggregate(ec, ops[0], []exec.Expr{col(s, "k")}, nil, []exec.AggregateSpec{
				{Func: "sum", Args: []exec.Expr{col(s, "v")}}, {Func: "count", Args: []exec.Expr{col(s, "s")}, Distinct: true},
			}, nil)
		},
		"hash-aggregate-rollup": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "k"), col(s, "s")}, nil, []exec.AggregateSpec{
				{Func: "count_star"}, {Func: "sum", Args: []exec.Expr{col(s, "v")}}, {Func: "count", Args: []exec.Expr{col(s, "v")}, Distinct: true},
			}, [][]int{{0, 1}, {1, 0}, {0}, {}})
		},
		// The coarser sets are computed from (k, s)'s groups until the
		// first spill, then from the rows.
		"hash-aggregate-rollup-folded": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "k"), col(s, "s")}, nil, []exec.AggregateSpec{
				{Func: "count_star"}, {Func: "sum", Args: []exec.Expr{col(s, "v")}}, {Func: "avg", Args: []exec.Expr{col(s, "v")}},
				{Func: "max", Args: []exec.Expr{col(s, "s")}},
			}, [][]int{{0, 1}, {1, 0}, {1}, {0}, {}})
		},
		"distinct-global": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], nil, nil, distinctAggs(s), nil)
		},
		"distinct-few-groups": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "s")}, nil, distinctAggs(s), nil)
		},
		"distinct-grouping-sets": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "s")}, nil, distinctAggs(s), [][]int{{0}, {}})
		},
		"distinct-parallel": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			ec.Parallelism = 2
			return exec.NewParallelHashAggregate(ec, ops[0], []exec.Expr{col(s, "s")}, nil, distinctAggs(s), nil)
		},
		"distinct-sort-aggregate": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSortAggregate(ec, ops[0], []exec.Expr{col(s, "s")}, nil, distinctAggs(s), nil)
		},
		// Many small groups: over the budget, sort aggregation emits its
		// finished groups instead of spilling (checked below).
		"distinct-many-sort-aggregate": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSortAggregate(ec, ops[0], []exec.Expr{col(s, "s"), col(s, "k")}, nil, distinctAggs(s), nil)
		},
		"window-partitions": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "k")}, []exec.SortKey{{Expr: col(s, "v")}}, slices.Concat(streamedWindows(s), twoPassWindows(s), haloWindows(s), allWindows(s)))
		},
		"window-streamed": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "s")}, []exec.SortKey{{Expr: col(s, "v")}}, streamedWindows(s))
		},
		"window-two-pass": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "s")}, []exec.SortKey{{Expr: col(s, "v")}}, append(streamedWindows(s), twoPassWindows(s)...))
		},
		"window-halo": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "s")}, []exec.SortKey{{Expr: col(s, "v")}}, haloWindows(s))
		},
		// Nothing looks back: chunks do not overlap.
		"window-lookahead": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewWindow(ec, ops[0], nil, []exec.SortKey{{Expr: col(s, "v")}}, []exec.WindowFunc{{Func: "row_number"},
				{Func: "avg", Args: []exec.Expr{col(s, "k")}, Frame: &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.CurrentRow}, End: exec.FrameBound{Kind: exec.Following, Offset: 3}}},
				{Func: "sum", Args: []exec.Expr{col(s, "v")}}})
		},
		"window-halo-streamed": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewWindow(ec, ops[0], nil, []exec.SortKey{{Expr: col(s, "v"), Descending: true}}, slices.Concat(streamedWindows(s), twoPassWindows(s), haloWindows(s)))
		},
		"window-one-partition": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewWindow(ec, ops[0], nil, []exec.SortKey{{Expr: col(s, "v"), Descending: true}, {Expr: col(s, "k"), NullsFirst: true}}, streamedWindows(s))
		},
		"window-no-order": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewWindow(ec, ops[0], nil, nil, []exec.WindowFunc{{Func: "row_number"},
				{Func: "sum", Args: []exec.Expr{col(s, "v")}, Frame: &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.CurrentRow}}},
				{Func: "avg", Args: []exec.Expr{col(s, "v")}}, {Func: "ntile", Args: []exec.Expr{lit(int64(7))}}})
		},
		"sort-top-n": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewTopN(ec, ops[0], []exec.SortKey{{Expr: col(s, "v"), NullsFirst: true}, {Expr: col(s, "s"), Descending: true}}, 100, 2500), nil
		},
		"sort": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSort(ec, ops[0], []exec.SortKey{{Expr: col(s, "v"), Descending: true}, {Expr: col(s, "k"), NullsFirst: true}, {Expr: col(s, "s")}}), nil
		},
	}
	for _, typ := range []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.FullJoin, exec.AntiJoin} {
		cases["hash-join-"+typ.String()] = func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashJoin(ec, ops[0], ops[1], typ, []exec.Expr{col(s, "k")}, []exec.Expr{col(s, "k")},
				call(t, "less", exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "l.v"), exec.NewColumn(5, arrow.PrimitiveTypes.Int64, "r.v")))
		}
	}
	for _, typ := range []exec.JoinType{exec.InnerJoin, exec.RightJoin, exec.SemiJoin} {
		cases["hash-join-merge-"+typ.String()] = func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			byK := []exec.SortKey{{Expr: col(s, "k")}}
			return exec.NewMergeJoin(ec, exec.NewSort(ec, ops[0], byK), exec.NewSort(ec, ops[1], byK), typ, []exec.Expr{col(s, "k")}, []exec.Expr{col(s, "k")}, nil)
		}
	}
	// Nested-loop joins on k = k AND l.v < r.v, over an eighth of the left
	// rows (pairs are quadratic): the build side goes to disk and comes
	// back in blocks.
	for _, typ := range []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.RightJoin, exec.FullJoin, exec.SemiJoin, exec.AntiJoin} {
		cases["hash-join-nested-loop-"+typ.String()] = func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			i64 := arrow.PrimitiveTypes.Int64
			cond := call(t, "and", call(t, "equal", exec.NewColumn(0, i64, "l.k"), exec.NewColumn(3, i64, "r.k")),
				call(t, "less", exec.NewColumn(2, i64, "l.v"), exec.NewColumn(5, i64, "r.v")))
			left := exec.NewFilter(ec, ops[0], call(t, "less", col(s, "k"), lit(int64(100))))
			return exec.NewNestedLoopJoin(ec, left, ops[1], typ, cond)
		}
	}
	// Set operations over (k, s): about 800 distinct rows a side.
	ks := func(ec *exec.Context, op exec.Operator) exec.Operator {
		return exec.NewProject(ec, op, []exec.Expr{col(s, "k"), col(s, "s")}, []string{"k", "s"})
	}
	cases["distinct"] = func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewDistinct(ec, ks(ec, ops[0])), nil
	}
	for _, op := range []exec.SetOpKind{exec.Intersect, exec.Except} {
		for _, all := range []bool{false, true} {
			cases[fmt.Sprintf("two-setop-%s-all=%v", op, all)] = func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				return exec.NewSetOp(ec, ks(ec, ops[0]), ks(ec, ops[1]), op, all)
			}
		}
	}
	// A small right side: EXCEPT's emitted left keys pass the budget.
	cases["two-setop-except-small-right"] = func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		small := exec.NewFilter(ec, ops[1], call(t, "less", col(s, "k"), lit(int64(30))))
		return exec.NewSetOp(ec, ks(ec, ops[0]), ks(ec, small), exec.Except, false)
	}
	// NOT IN: the build side has NULL keys (no rows qualify) or not (probe
	// rows with NULL keys do not qualify).
	cases["hash-join-null-aware-anti"] = func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewHashJoin(ec, ops[0], ops[1], exec.NullAwareAntiJoin, []exec.Expr{col(s, "k")}, []exec.Expr{col(s, "k")}, nil)
	}
	cases["hash-join-null-aware-anti-no-null"] = func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		build := exec.NewFilter(ec, ops[1], call(t, "is_not_null", col(s, "k")))
		return exec.NewHashJoin(ec, ops[0], build, exec.NullAwareAntiJoin, []exec.Expr{col(s, "k")}, []exec.Expr{col(s, "k")}, nil)
	}
	return cases
}

// spillInputs returns the inputs of spillCases' case name: in, and other
// as the right side of joins and set operations. Sort aggregation needs
// input clustered by s; a few large groups keep DISTINCT sets open across
// batches.
func spillInputs(in, other exectest.Table) func(name string) []exectest.Table {
	sorted := in
	sorted.Rows = slices.Clone(in.Rows)
	slices.SortStableFunc(sorted.Rows, func(a, b []string) int {
		return cmp.Or(strings.Compare(a[1], b[1]), strings.Compare(a[0], b[0]))
	})
	return func(name string) []exectest.Table {
		inputs := []exectest.Table{in}
		if strings.HasSuffix(name, "sort-aggregate") {
			inputs = []exectest.Table{sorted}
		}
		if strings.HasPrefix(name, "hash-join") || strings.HasPrefix(name, "two-") {
			inputs = append(inputs, other)
		}
		return inputs
	}
}

// spillVerify compares a case's rows in order where its output is ordered.
func spillVerify(name string) func(got, want []string) bool {
	if strings.HasPrefix(name, "sort") || strings.HasPrefix(name, "window") {
		return exectest.Ordered
	}
	return exectest.Unordered
}

// TestSpillLongStrings checks that min/max strings count against the
// budget: 800 groups of 1 KB strings spill under a 256 KB budget that the
// fixed per-group estimate alone would not reach.
func TestSpillLongStrings(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 5))
	in := exectest.NewTable(t, "k:int64, s:string")
	for i := 0; i < 2400; i++ {
		in.Rows = append(in.Rows, []string{fmt.Sprint(rng.IntN(800)), strings.Repeat(fmt.Sprint(rng.IntN(10)), 1000)})
	}
	s := in.Schema
	ctor := func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "k")}, nil, []exec.AggregateSpec{{Func: "max", Args: []exec.Expr{col(s, "s")}}}, nil)
	}
	checkSpilled(t, in, 256<<10, ctor, exectest.Unordered)
}

// TestWindowSpillPartitionEnds checks chunks that end exactly where a
// partition does: partitions of 256 rows, read back in batches of 256,
// each past a quarter of the budget. The next partition must not carry
// the previous one's row numbers and sums.
func TestWindowSpillPartitionEnds(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 6))
	in := exectest.NewTable(t, "p:int64, v:int64, w:string")
	for i := 0; i < 2048; i++ {
		in.Rows = append(in.Rows, []string{fmt.Sprint(i / 256), fmt.Sprint(rng.IntN(1000)), fmt.Sprintf("w%d", rng.IntN(1000))})
	}
	s := in.Schema
	ctor := func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "p")}, []exec.SortKey{{Expr: col(s, "v")}}, []exec.WindowFunc{
			{Func: "row_number"}, {Func: "sum", Args: []exec.Expr{col(s, "v")}, Frame: &exec.Frame{Rows: true,
				Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.CurrentRow}}}})
	}
	checkSpilled(t, in, 16<<10, ctor, exectest.Ordered)
}

// checkSpilled runs ctor over in (batches of 256) without a memory limit
// and under limit: the limited run must spill and give the same rows, as
// same compares them.
func checkSpilled(t *testing.T, in exectest.Table, limit int64, ctor exectest.Ctor, same func(got, want []string) bool) {
	t.Helper()
	want, _, err := runWith(t, []exectest.Table{in}, 0, 256, ctor)
	if err != nil {
		t.Fatal(err)
	}
	got, spilled, err := runWith(t, []exectest.Table{in}, limit, 256, ctor)
	if err != nil || spilled == 0 || !same(got, want) {
		t.Fatalf("%d rows (want %d), %d spilled, %v", len(got), len(want), spilled, err)
	}
}

// TestTopNSmallLimit checks that a small LIMIT does not spill under a budget
// smaller than its input.
func TestTopNSmallLimit(t *testing.T) {
	seed := exectest.Seed(t)
	in := bigTable(t, rand.New(rand.NewPCG(seed, 4)), 3000, 800)
	s := in.Schema
	rows, spilled, err := runWith(t, []exectest.Table{in}, 16<<10, 256, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewTopN(ec, ops[0], []exec.SortKey{{Expr: col(s, "v")}}, 3, 5), nil
	})
	if err != nil || len(rows) != 5 || spilled != 0 {
		t.Fatalf("%d rows, %d spilled, %v", len(rows), spilled, err)
	}
}

// TestSpillUnavoidable checks that state that cannot spill fails with
// ErrMemoryLimit naming the budget past it: window functions that need a
// whole partition's rows (430 rows here).
func TestSpillUnavoidable(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	in := bigTable(t, rng, 3000, 800)
	s := in.Schema
	cases := map[string]exectest.Ctor{}
	for _, f := range allWindows(s) {
		cases["window-"+f.Func] = func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "s")}, []exec.SortKey{{Expr: col(s, "v")}}, []exec.WindowFunc{f})
		}
	}
	for name, ctor := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := runWith(t, []exectest.Table{in}, 16<<10, 256, ctor)
			if !errors.Is(err, exec.ErrMemoryLimit) || !strings.Contains(err.Error(), "16384 bytes") {
				t.Fatalf("with a 16 KiB budget: %v", err)
			}
		})
	}
}

// TestSpillUnavoidableListagg: the values a LISTAGG collects cannot spill,
// so when the groups in memory hold more than the budget it fails with
// ErrMemoryLimit (a global one grew until the kernel killed the server; a
// grouped one with few huge groups, or a sort aggregation's open group, grew
// unbounded). Many small groups run: new groups go to disk. A sort
// aggregation holds only its open groups: it counts those, not every group
// it has finished, and so finishes within the budget (each aggregate whose
// state grows with its values).
func TestSpillUnavoidableListagg(t *testing.T) {
	rng := rand.New(rand.NewPCG(exectest.Seed(t), 4))
	in := bigTable(t, rng, 20000, 800)
	s := in.Schema
	listagg := []exec.AggregateSpec{{Func: "listagg", Args: []exec.Expr{col(s, "s")}}}
	cases := []struct {
		name    string
		ctor    exectest.Ctor
		refused bool
	}{
		// Refused under 16 KiB; the others run under 256 KiB (the sort
		// aggregation's 256 open groups hold about 50 KB; before, it
		// counted the values of all 20,000 rows, about 4 MB).
		{"global", func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], nil, nil, listagg, nil)
		}, true},
		{"hash", func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "s")}, nil, listagg, nil)
		}, false},
		// Seven groups collect about 60 KB: new groups would go to disk,
		// but these are all in memory and only grow.
		{"hash, few huge groups", func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "s")}, nil, listagg, nil)
		}, true},
		{"parallel, few huge groups", func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			ec.Parallelism = 2
			return exec.NewParallelHashAggregate(ec, ops[0], []exec.Expr{col(s, "s")}, nil, listagg, nil)
		}, true},
		// One open group (a constant key) collects every value.
		{"sort, one open group", func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSortAggregate(ec, ops[0], []exec.Expr{exec.NewLiteral(scalar.NewInt64Scalar(1))}, nil, listagg, nil)
		}, true},
		{"sort", func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSortAggregate(ec, ops[0], []exec.Expr{col(s, "v")}, nil, []exec.AggregateSpec{
				{Func: "listagg", Args: []exec.Expr{col(s, "s")}}, {Func: "array_agg", Args: []exec.Expr{col(s, "s")}},
				{Func: "collect", Args: []exec.Expr{col(s, "s")}}, {Func: "json_arrayagg", Args: []exec.Expr{col(s, "s")}},
				{Func: "percentile", Args: []exec.Expr{col(s, "k"), exec.NewLiteral(scalar.NewFloat64Scalar(0.5))}},
			}, nil)
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, _, err := runWith(t, []exectest.Table{in}, 0, 256, c.ctor)
			if err != nil {
				t.Fatalf("without a budget: %v", err)
			}
			budget := int64(16 << 10)
			if !c.refused {
				budget = 256 << 10
			}
			got, _, err := runWith(t, []exectest.Table{in}, budget, 256, c.ctor)
			switch {
			case c.refused && (!errors.Is(err, exec.ErrMemoryLimit) || !strings.Contains(err.Error(), "16384 bytes")):
				t.Fatalf("with a 16 KiB budget: %v", err)
			case !c.refused && err != nil:
				t.Fatalf("with a %d-byte budget: %v", budget, err)
			case !c.refused && !slices.Equal(got, want):
				t.Fatalf("with a %d-byte budget: %d rows differ from the %d without", budget, len(got), len(want))
			}
		})
	}
}

// genSource lends n rows of one int64 column x = (i*7919) % distinct,
// generated batch by batch so that the input never sits in memory.
type genSource struct {
	mem      memory.Allocator
	schema   *arrow.Schema
	i, n     int
	distinct int
	cur      arrow.RecordBatch
}

func (g *genSource) Next(context.Context) (arrow.RecordBatch, error) {
	if g.cur != nil {
		g.cur.Release()
		g.cur = nil
	}
	if g.i >= g.n {
		return nil, io.EOF
	}
	b := array.NewInt64Builder(g.mem)
	defer b.Release()
	for ; g.i < g.n && b.Len() < 1024; g.i++ {
		b.Append(int64(g.i * 7919 % g.distinct))
	}
	x := b.NewArray()
	defer x.Release()
	g.cur = array.NewRecordBatch(g.schema, []arrow.Array{x}, int64(x.Len()))
	return g.cur, nil
}

func (g *genSource) Close() error {
	if g.cur != nil {
		g.cur.Release()
		g.cur = nil
	}
	return nil
}

// runGenerated runs op over n generated rows with a memory limit, passes
// each output batch to check, and requires the Arrow memory to stay within
// twice the limit; memory and spill files must be gone afterwards.
func runGenerated(t *testing.T, n, distinct int, limit int64, ctor func(ec *exec.Context, in exec.Operator) (exec.Operator, error), check func(b arrow.RecordBatch)) {
	t.Helper()
	ec, mem, checked := spillContext(limit, t.TempDir())
	defer checked.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src := exec.NewSource(ec, schema, func(context.Context) (exec.BatchSource, error) {
		return &genSource{mem: mem, schema: schema, n: n, distinct: distinct}, nil
	})
	op, err := ctor(ec, src)
	if err != nil {
		t.Fatal(err)
	}
	drainOp(t, op, check)
	if mem.PeakAlloc() > 2*int(limit) {
		t.Fatalf("Arrow peak %d bytes for a %d-byte budget", mem.PeakAlloc(), limit)
	}
	if ec.SpilledRows() == 0 {
		t.Fatal("nothing spilled")
	}
	noSpillFilesLeft(t, ec)
	t.Logf("%d rows spilled, Arrow peak %d bytes for a %d-byte budget", ec.SpilledRows(), mem.PeakAlloc(), limit)
}

// drainOp opens op, passes each batch to check and closes it; any error
// fails t.
func drainOp(t *testing.T, op exec.Operator, check func(b arrow.RecordBatch)) {
	t.Helper()
	ctx := context.Background()
	if err := op.Open(ctx); err != nil {
		op.Close()
		t.Fatal(err)
	}
	for {
		b, err := exec.Next(ctx, op)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			op.Close()
			t.Fatal(err)
		}
		check(b)
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSpillTenTimesBudget runs count(DISTINCT) and row_number() OVER (ORDER
// BY) over inputs whose state is about ten times the budget.
func TestSpillTenTimesBudget(t *testing.T) {
	const distinct = 100_000 // about 6 MB of DISTINCT set
	t.Run("count-distinct", func(t *testing.T) {
		runGenerated(t, 2*distinct, distinct, 600<<10, func(ec *exec.Context, in exec.Operator) (exec.Operator, error) {
			x := exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "x")
			return exec.NewHashAggregate(ec, in, nil, nil, []exec.AggregateSpec{
				{Func: "count", Args: []exec.Expr{x}, Distinct: true}, {Func: "sum", Args: []exec.Expr{x}, Distinct: true}}, nil)
		}, func(b arrow.RecordBatch) {
			want := fmt.Sprintf("%d | %d", distinct, distinct*(distinct-1)/2)
			if got := exectest.BatchRows(b); len(got) != 1 || got[0] != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	})
	t.Run("row-number", func(t *testing.T) {
		const n = 300_000 // 2.4 MB of input, as much again of results
		i := int64(0)
		runGenerated(t, n, n, 480<<10, func(ec *exec.Context, in exec.Operator) (exec.Operator, error) {
			x := exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "x")
			return exec.NewWindow(ec, in, nil, []exec.SortKey{{Expr: x}}, []exec.WindowFunc{{Func: "row_number"}})
		}, func(b arrow.RecordBatch) {
			x, rn := b.Column(0).(*array.Int64), b.Column(1).(*array.Int64)
			for r := 0; r < int(b.NumRows()); r++ {
				if x.Value(r) != i || rn.Value(r) != i+1 {
					t.Fatalf("row %d: x %d, row_number %d", i, x.Value(r), rn.Value(r))
				}
				i++
			}
		})
		if i != n {
			t.Fatalf("%d rows, want %d", i, n)
		}
	})
}

// TestSpillNullKeysSplit checks that rows whose key holds a NULL spread
// over the partitions like the others: DISTINCT over (NULL, v) rows spills
// each row about once, not once per re-partitioning level.
func TestSpillNullKeysSplit(t *testing.T) {
	in := exectest.NewTable(t, "k:int64, v:int64")
	for i := 0; i < 4000; i++ {
		in.Rows = append(in.Rows, []string{"NULL", fmt.Sprint(i)})
	}
	rows, spilled, err := runWith(t, []exectest.Table{in}, 16<<10, 256, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewDistinct(ec, ops[0]), nil
	})
	if err != nil || len(rows) != 4000 || spilled == 0 || spilled > 2*4000 {
		t.Fatalf("%d rows, %d spilled, %v", len(rows), spilled, err)
	}
}

// TestWindowRunningAggregates checks the running aggregates (frames from
// the partition start, folded row to row by mergeGroups) against the same
// frames started a billion rows (or values) back, which aggregate folds
// from scratch for every row: ROWS frames ending before, at and after the
// current row, the default RANGE frame with peers, and the whole partition;
// in memory and spilled (where a partition's state carries across chunks).
// ANY_VALUE, which does not fold, takes the per-row path in both.
func TestWindowRunningAggregates(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 8))
	in := exectest.NewTable(t, "id:int64, p:int64, o:int64, v:int64, d:decimal(7,2), f:float64")
	cell := func(s string) string {
		if rng.IntN(6) == 0 {
			return "NULL"
		}
		return s
	}
	for i := 0; i < 3000; i++ {
		in.Rows = append(in.Rows, []string{fmt.Sprint(i), fmt.Sprint(rng.IntN(5) * rng.IntN(3)), fmt.Sprint(rng.IntN(40)),
			cell(fmt.Sprint(rng.IntN(2000) - 700)), cell(fmt.Sprintf("%d.%02d", rng.IntN(900)-300, rng.IntN(100))),
			cell(fmt.Sprint(rng.IntN(64)) + ".5")})
	}
	s := in.Schema
	bound := func(k exec.FrameBoundKind, off int64) exec.FrameBound { return exec.FrameBound{Kind: k, Offset: off} }
	far := bound(exec.Preceding, 1e9)
	ends := []exec.FrameBound{bound(exec.Preceding, 1), bound(exec.CurrentRow, 0), bound(exec.Following, 2), bound(exec.UnboundedFollowing, 0)}
	for _, rows := range []bool{true, false} {
		for _, end := range ends {
			if !rows && end.Kind != exec.CurrentRow {
				continue // RANGE offsets: only the default frame is compared
			}
			// ROWS frames need an order without ties; a RANGE offset one
			// key.
			keys := []exec.SortKey{{Expr: col(s, "o")}}
			if rows {
				keys = append(keys, exec.SortKey{Expr: col(s, "id")})
			}
			frames := func(start exec.FrameBound) exectest.Ctor {
				fr := &exec.Frame{Rows: rows, Start: start, End: end}
				var funcs []exec.WindowFunc
				for _, fn := range []struct{ name, arg string }{{"sum", "v"}, {"count", "d"}, {"count_star", ""}, {"min", "d"},
					{"max", "v"}, {"avg", "d"}, {"sum", "f"}, {"avg", "v"}, {"max", "f"}, {"any_value", "v"}} {
					w := exec.WindowFunc{Func: fn.name, Frame: fr}
					if fn.arg != "" {
						w.Args = []exec.Expr{col(s, fn.arg)}
					}
					funcs = append(funcs, w)
				}
				// A frame three rows back: chunks then start with a halo
				// of earlier rows, which the running states skip.
				funcs = append(funcs, exec.WindowFunc{Func: "sum", Args: []exec.Expr{col(s, "v")},
					Frame: &exec.Frame{Rows: true, Start: bound(exec.Preceding, 3), End: bound(exec.CurrentRow, 0)}})
				return func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
					return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "p")}, keys, funcs)
				}
			}
			want, _, err := runWith(t, []exectest.Table{in}, 0, 256, frames(far))
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			// Spilled only with frames to the current row (the others
			// need the whole partition).
			for _, limit := range []int64{0, 16 << 10} {
				if limit > 0 && end.Kind != exec.CurrentRow {
					continue
				}
				got, spilled, err := runWith(t, []exectest.Table{in}, limit, 256, frames(bound(exec.UnboundedPreceding, 0)))
				if err != nil {
					t.Fatalf("rows %v, end %+v, limit %d: %v", rows, end, limit, err)
				}
				slices.Sort(got)
				if !slices.Equal(got, want) || limit > 0 && spilled == 0 {
					t.Fatalf("seed %d, rows %v, end %+v, limit %d (%d rows spilled): running aggregates differ", seed, rows, end, limit, spilled)
				}
			}
		}
	}
}
