package exec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// TestFlinkAggregatesRandom checks ARRAY_AGG (NULLs kept, ignored,
// DISTINCT), LISTAGG(DISTINCT s, sep), COLLECT, JSON_ARRAYAGG and
// PERCENTILE against models on random groups with NULLs, through hash
// aggregation in memory and spilling to disk (DISTINCT sets too), parallel
// hash aggregation, and sort aggregation (its DISTINCT sets spilling). Element order is left to the engine, so
// elements are compared as multisets.
func TestFlinkAggregatesRandom(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 20))
	for round := range 6 {
		n := 1 + rng.IntN(3000)
		// Odd rounds have about a row or two per group: past the budget
		// most groups go to disk. Even rounds have few groups, which
		// collect more than the spill modes' budget allows in memory
		// (refused: TestSpillUnavoidableListagg), so they run in memory
		// only.
		groups := 1 + rng.IntN(300)
		if round%2 == 1 {
			groups = n/2 + 1 + rng.IntN(n)
		}
		tb := exectest.NewTable(t, "g:int32, x:int64, s:string")
		type model struct {
			xs   []string // "NULL" for NULL
			ss   map[string]bool
			nums []float64
		}
		want := map[int32]*model{}
		for range n {
			g := int32(rng.IntN(groups))
			m := want[g]
			if m == nil {
				m = &model{ss: map[string]bool{}}
				want[g] = m
			}
			x, s := "NULL", "NULL"
			if rng.IntN(5) > 0 {
				v := rng.IntN(40)
				x = fmt.Sprint(v)
				m.nums = append(m.nums, float64(v))
			}
			if rng.IntN(5) > 0 {
				s = fmt.Sprintf("s%d", rng.IntN(30))
				m.ss[s] = true
			}
			m.xs = append(m.xs, x)
			tb.Rows = append(tb.Rows, []string{fmt.Sprint(g), x, s})
		}
		s := tb.Schema
		aggs := []exec.AggregateSpec{
			{Func: "array_agg", Args: []exec.Expr{col(s, "x")}},
			{Func: "array_agg_ignore_nulls", Args: []exec.Expr{col(s, "x")}},
			{Func: "array_agg", Args: []exec.Expr{col(s, "x")}, Distinct: true},
			{Func: "listagg", Args: []exec.Expr{col(s, "s"), lit("|")}, Distinct: true},
			{Func: "collect", Args: []exec.Expr{col(s, "x")}},
			{Func: "json_arrayagg", Args: []exec.Expr{col(s, "x")}},
			{Func: "percentile", Args: []exec.Expr{col(s, "x"), lit(0.3)}},
		}
		// Sort aggregation reads its input clustered by the group.
		sorted := tb
		sorted.Rows = slices.Clone(tb.Rows)
		slices.SortStableFunc(sorted.Rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
		modes := []string{"hash", "parallel", "sort"}
		if round%2 == 1 {
			modes = append(modes, "spill", "sort-spill")
		}
		for _, mode := range modes {
			limit := int64(0)
			// A batch of 100 rows of these seven aggregates holds about
			// 40 KB: the budget must take one.
			if strings.HasSuffix(mode, "spill") {
				limit = 64 << 10
			}
			ec, mem, checked := spillContext(limit, t.TempDir())
			ec.Parallelism = 1 + round%3
			input := tb
			if strings.HasPrefix(mode, "sort") {
				input = sorted
			}
			var bs []arrow.RecordBatch
			for lo := 0; lo < len(input.Rows); lo += 100 {
				b, err := input.Batch(mem, lo, min(lo+100, len(input.Rows)), 1)
				if err != nil {
					t.Fatal(err)
				}
				bs = append(bs, b)
			}
			src := exectest.Source(ec, s, bs)
			keys := []exec.Expr{col(s, "g")}
			var op exec.Operator
			var err error
			switch mode {
			case "parallel":
				op, err = exec.NewParallelHashAggregate(ec, src, keys, nil, aggs, nil)
			case "sort", "sort-spill":
				op, err = exec.NewSortAggregate(ec, src, keys, nil, aggs, nil)
			default:
				op, err = exec.NewHashAggregate(ec, src, keys, nil, aggs, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Collect(context.Background(), op)
			if err != nil {
				t.Fatalf("seed %d round %d %s: %v", seed, round, mode, err)
			}
			if mode == "spill" && ec.SpilledRows() == 0 && n > 2000 {
				t.Errorf("seed %d round %d: %d rows under a 64 KiB budget did not spill", seed, round, n)
			}
			seen := 0
			for _, b := range out {
				for r := range int(b.NumRows()) {
					seen++
					g := vectorized.Values[int32](b.Column(0))[r]
					m := want[g]
					where := fmt.Sprintf("seed %d round %d %s group %d", seed, round, mode, g)
					var nonNull []string
					for _, x := range m.xs {
						if x != "NULL" {
							nonNull = append(nonNull, x)
						}
					}
					check := func(what string, got, want []string) {
						t.Helper()
						slices.Sort(got)
						slices.Sort(want)
						if !slices.Equal(got, want) {
							t.Errorf("%s: %s: got %q, want %q", where, what, got, want)
						}
					}
					check("ARRAY_AGG", listElems(b.Column(1), r), slices.Clone(m.xs))
					if len(nonNull) == 0 {
						if b.Column(2).IsValid(r) {
							t.Errorf("%s: ARRAY_AGG IGNORE NULLS of only NULLs is not NULL", where)
						}
					} else {
						check("ARRAY_AGG IGNORE NULLS", listElems(b.Column(2), r), slices.Clone(nonNull))
					}
					check("ARRAY_AGG DISTINCT", listElems(b.Column(3), r), slices.Compact(slices.Sorted(slices.Values(m.xs))))
					if len(m.ss) == 0 {
						if b.Column(4).IsValid(r) {
							t.Errorf("%s: LISTAGG of only NULLs is not NULL", where)
						}
					} else {
						check("LISTAGG DISTINCT", strings.Split(vectorized.StringAt(b.Column(4), r), "|"), slices.Collect(maps.Keys(m.ss)))
					}
					counts := map[string]int{}
					for _, x := range nonNull {
						counts[x]++
					}
					var wantEntries []string
					for k, c := range counts {
						wantEntries = append(wantEntries, fmt.Sprintf("%s=%d", k, c))
					}
					check("COLLECT", mapEntries(b.Column(5), r), wantEntries)
					var js []json.Number
					if err := json.Unmarshal([]byte(vectorized.StringAt(b.Column(6), r)), &js); err != nil {
						t.Fatalf("%s: JSON_ARRAYAGG: %v", where, err)
					}
					var jsText []string
					for _, v := range js {
						jsText = append(jsText, v.String())
					}
					check("JSON_ARRAYAGG", jsText, slices.Clone(nonNull))
					p := b.Column(7)
					if len(m.nums) == 0 {
						if p.IsValid(r) {
							t.Errorf("%s: PERCENTILE of no values is not NULL", where)
						}
					} else if got, w := vectorized.Values[float64](p)[r], percentileModel(m.nums, 0.3); math.Abs(got-w) > 1e-9 {
						t.Errorf("%s: PERCENTILE: got %v, want %v", where, got, w)
					}
				}
				b.Release()
			}
			if seen != len(want) {
				t.Errorf("seed %d round %d %s: %d groups, want %d", seed, round, mode, seen, len(want))
			}
			if mem.CurrentAlloc() != 0 {
				t.Fatalf("seed %d: %d bytes still allocated", seed, mem.CurrentAlloc())
			}
			noSpillFilesLeft(t, ec)
			checked.AssertSize(t, 0)
		}
	}
}

// listElems renders row r of a list array's elements ("NULL" for NULL).
func listElems(a arrow.Array, r int) []string {
	l := a.(*array.List)
	lo, hi := l.ValueOffsets(r)
	var out []string
	for j := lo; j < hi; j++ {
		if l.ListValues().IsNull(int(j)) {
			out = append(out, "NULL")
		} else {
			out = append(out, vectorized.FormatValue(l.ListValues(), int(j)))
		}
	}
	return out
}

// mapEntries renders row r of a map array as key=value entries.
func mapEntries(a arrow.Array, r int) []string {
	m := a.(*array.Map)
	lo, hi := m.ValueOffsets(r)
	var out []string
	for j := lo; j < hi; j++ {
		out = append(out, vectorized.FormatValue(m.Keys(), int(j))+"="+vectorized.FormatValue(m.Items(), int(j)))
	}
	return out
}

// percentileModel is the value at q * (n - 1) of the sorted values,
// interpolated.
func percentileModel(vals []float64, q float64) float64 {
	v := slices.Sorted(slices.Values(vals))
	pos := q * float64(len(v)-1)
	lo, hi := int(math.Floor(pos)), int(math.Ceil(pos))
	return v[lo] + (pos-float64(lo))*(v[hi]-v[lo])
}

// TestPercentileFrequencies: PERCENTILE(x, p, f) equals PERCENTILE over x
// repeated f times (rows with f below 1 not counted), for random values,
// frequencies and percentages.
func TestPercentileFrequencies(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 21))
	for round := range 50 {
		tb := exectest.NewTable(t, "x:float64, f:int64")
		var expanded []float64
		for range 1 + rng.IntN(40) {
			x, f := float64(rng.IntN(1000))/10, rng.IntN(5)-1
			tb.Rows = append(tb.Rows, []string{fmt.Sprint(x), fmt.Sprint(f)})
			for range f {
				expanded = append(expanded, x)
			}
		}
		q := rng.Float64()
		rows, _, err := runWith(t, []exectest.Table{tb}, 0, 1024, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			s := tb.Schema
			return exec.NewHashAggregate(ec, ops[0], nil, nil, []exec.AggregateSpec{{Func: "percentile", Args: []exec.Expr{col(s, "x"), lit(q), col(s, "f")}}}, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		want := "NULL"
		if len(expanded) > 0 {
			want = fmt.Sprintf("%.6f", percentileModel(expanded, q))
		}
		got := rows[0]
		if got != "NULL" {
			var v float64
			fmt.Sscan(got, &v)
			got = fmt.Sprintf("%.6f", v)
		}
		if got != want {
			t.Fatalf("seed %d round %d: PERCENTILE at %v of %v: got %s, want %s", seed, round, q, tb.Rows, got, want)
		}
	}
}

// TestFlinkAggregatesWindowSpill: ARRAY_AGG, COLLECT, JSON_ARRAYAGG and
// PERCENTILE over running frames and whole partitions give the same rows
// when the window operator spills (one partition larger than the budget,
// computed chunk by chunk with carried state) as in memory.
func TestFlinkAggregatesWindowSpill(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 25))
	in := bigTable(t, rng, 3000, 800)
	s := in.Schema
	running := &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.CurrentRow}}
	whole := &exec.Frame{Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.UnboundedFollowing}}
	ctor := func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		few := exec.NewFilter(ec, ops[0], call(t, "less", col(s, "k"), lit(int64(200))))
		return exec.NewWindow(ec, few, nil, []exec.SortKey{{Expr: col(s, "v")}, {Expr: col(s, "k")}, {Expr: col(s, "s")}}, []exec.WindowFunc{
			{Func: "array_agg", Args: []exec.Expr{col(s, "k")}, Frame: running},
			{Func: "collect", Args: []exec.Expr{col(s, "s")}, Frame: running},
			{Func: "json_arrayagg", Args: []exec.Expr{col(s, "v")}, Frame: running},
			{Func: "percentile", Args: []exec.Expr{col(s, "v"), lit(0.5)}, Frame: running},
			{Func: "percentile", Args: []exec.Expr{col(s, "k"), lit(0.9)}, Frame: whole},
		})
	}
	want, spilled, err := runWith(t, []exectest.Table{in}, 0, 64, ctor)
	if err != nil || spilled != 0 {
		t.Fatalf("seed %d: in memory: %v, %d rows spilled", seed, err, spilled)
	}
	got, spilled, err := runWith(t, []exectest.Table{in}, 16<<10, 64, ctor)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if spilled == 0 {
		t.Fatalf("seed %d: a 16 KiB limit did not spill", seed)
	}
	if !exectest.Ordered(got, want) || len(got) == 0 {
		t.Fatalf("seed %d: spilled run differs: %d rows vs %d", seed, len(got), len(want))
	}
}
