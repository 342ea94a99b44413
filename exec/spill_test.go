package exec_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

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

// runWith runs ctor over inputs with the given memory limit and returns the
// rows and how many rows were spilled; spill files must be gone afterwards.
func runWith(t *testing.T, inputs []exectest.Table, limit int64, batch int, ctor exectest.Ctor) ([]string, int64) {
	t.Helper()
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	mem := exec.NewAccountingAllocator(checked)
	ec := exec.NewContext(mem)
	ec.MemoryLimit = limit
	ec.TempDir = t.TempDir()
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
	if err != nil {
		t.Fatal(err)
	}
	rows := exectest.Rows(bs)
	for _, b := range bs {
		b.Release()
	}
	if mem.CurrentAlloc() != 0 || mem.PeakAlloc() == 0 {
		t.Fatalf("accounting: current %d, peak %d", mem.CurrentAlloc(), mem.PeakAlloc())
	}
	left, _ := os.ReadDir(ec.TempDir)
	if len(left) > 0 {
		t.Fatalf("%d spill files left behind", len(left))
	}
	return rows, ec.SpilledRows()
}

// distinctAggs are DISTINCT aggregates over k (800 values) and v (1000).
func distinctAggs(s *arrow.Schema) []exec.AggregateSpec {
	return []exec.AggregateSpec{
		{Func: "count", Args: []exec.Expr{col(s, "k")}, Distinct: true}, {Func: "sum", Args: []exec.Expr{col(s, "v")}, Distinct: true},
		{Func: "avg", Args: []exec.Expr{col(s, "k")}, Distinct: true}, {Func: "count_star"},
		{Func: "max", Args: []exec.Expr{col(s, "s")}, Distinct: true},
	}
}

func TestSpill(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	in := bigTable(t, rng, 3000, 800)
	other := bigTable(t, rng, 1500, 800)
	s := in.Schema
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
		"parallel-hash-aggregate": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewParallelHashAggregate(ec, ops[0], []exec.Expr{col(s, "k")}, nil, []exec.AggregateSpec{
				{Func: "sum", Args: []exec.Expr{col(s, "v")}}, {Func: "count", Args: []exec.Expr{col(s, "s")}, Distinct: true},
			}, nil)
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
		// Many groups: sort aggregation emits groups while the open one
		// has pairs on disk.
		"distinct-many-sort-aggregate": func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSortAggregate(ec, ops[0], []exec.Expr{col(s, "s"), col(s, "k")}, nil, distinctAggs(s), nil)
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
	// Sort aggregation needs input clustered by s; a few large groups keep
	// DISTINCT sets open across batches.
	sorted := in
	sorted.Rows = slices.Clone(in.Rows)
	slices.SortStableFunc(sorted.Rows, func(a, b []string) int {
		return cmp.Or(strings.Compare(a[1], b[1]), strings.Compare(a[0], b[0]))
	})
	for name, ctor := range cases {
		t.Run(name, func(t *testing.T) {
			inputs := []exectest.Table{in}
			if strings.HasSuffix(name, "sort-aggregate") {
				inputs = []exectest.Table{sorted}
			}
			if strings.HasPrefix(name, "hash-join") {
				inputs = append(inputs, other)
			}
			want, spilled := runWith(t, inputs, 0, 256, ctor)
			if spilled != 0 {
				t.Fatalf("spilled %d rows without a limit", spilled)
			}
			got, spilled := runWith(t, inputs, 16<<10, 256, ctor)
			if spilled == 0 {
				t.Fatal("a 16 KiB limit did not spill")
			}
			verify := exectest.Unordered
			if name == "sort" {
				verify = exectest.Ordered
			}
			if !verify(got, want) {
				t.Fatalf("spilled run differs: %d rows vs %d", len(got), len(want))
			}
			t.Logf("%d rows, %d spilled", len(got), spilled)
		})
	}
}
