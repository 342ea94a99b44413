package stream

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

func seeded(t *testing.T) *rand.Rand {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("FLIGHTD_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (replay with FLIGHTD_SEED=%d)", seed, seed)
	return rand.New(rand.NewSource(seed))
}

// The ordered encoding compares as the values do (NULLs first or last in
// either direction) and decodes to the values, at random over every kind
// of value state holds.
func TestOrderedEncoding(t *testing.T) {
	rng := seeded(t)
	type kind struct {
		dt   arrow.DataType
		rand func() any
	}
	strs := []string{"", "a", "a\x00", "a\x00b", "a\x01", "ab", "\x00", "\xff", "b"}
	kinds := []kind{
		{arrow.PrimitiveTypes.Int64, func() any {
			return []int64{math.MinInt64, -1, 0, 1, math.MaxInt64, rng.Int63() - rng.Int63()}[rng.Intn(6)]
		}},
		{arrow.PrimitiveTypes.Uint64, func() any { return []uint64{0, 1, math.MaxUint64, rng.Uint64()}[rng.Intn(4)] }},
		{arrow.PrimitiveTypes.Float64, func() any {
			return []float64{math.Inf(-1), -1.5, 0, 2.25, math.Inf(1), math.NaN(), rng.NormFloat64()}[rng.Intn(7)]
		}},
		{arrow.FixedWidthTypes.Boolean, func() any { return rng.Intn(2) == 0 }},
		{arrow.BinaryTypes.String, func() any { return strs[rng.Intn(len(strs))] + strs[rng.Intn(len(strs))] }},
		{&arrow.Decimal128Type{Precision: 38, Scale: 2}, func() any { return decimal128.FromI64(rng.Int63n(2000) - 1000) }},
	}
	for _, k := range kinds {
		dec, err := orderedDecoderFor(k.dt)
		if err != nil {
			t.Fatal(err)
		}
		for range 2000 {
			desc, nullsFirst := rng.Intn(2) == 0, rng.Intn(2) == 0
			a, b := k.rand(), k.rand()
			if rng.Intn(8) == 0 {
				a = nil
			}
			if rng.Intn(8) == 0 {
				b = nil
			}
			want := 0
			switch {
			case a == nil && b == nil:
			case a == nil || b == nil:
				want = 1
				if (a == nil) == nullsFirst {
					want = -1
				}
			default:
				want = compareValues(a, b)
				if desc {
					want = -want
				}
			}
			ea, eb := appendOrdered(nil, a, desc, nullsFirst), appendOrdered(nil, b, desc, nullsFirst)
			if got := bytes.Compare(ea, eb); cmp.Compare(got, 0) != cmp.Compare(want, 0) {
				t.Fatalf("%s %v vs %v (desc %v, nulls first %v): bytes compare %d, values %d", k.dt, a, b, desc, nullsFirst, got, want)
			}
			v, rest, err := dec(ea, desc)
			if err != nil || len(rest) != 0 || !sameValue(mapKey(v), mapKey(a)) {
				t.Fatalf("%s %v (desc %v) decodes to %v, rest %x, %v", k.dt, a, desc, v, rest, err)
			}
		}
	}
}

// randomChangelog is snapshots of changes to rows (p, x, y), x NULL at
// times, that retract only rows added before.
func randomChangelog(rng *rand.Rand, snapshots, partitions int) [][]string {
	var snaps [][]string
	var live []string
	for range snapshots {
		var rows []string
		for range 1 + rng.Intn(60) {
			if len(live) > 0 && rng.Intn(10) < 3 {
				i := rng.Intn(len(live))
				rows = append(rows, "-D "+live[i])
				live = slices.Delete(live, i, i+1)
				continue
			}
			r := fmt.Sprintf("%d %d %d", rng.Intn(partitions), rng.Intn(40), rng.Intn(1000))
			if rng.Intn(10) == 0 {
				r = fmt.Sprintf("%d NULL %d", rng.Intn(partitions), rng.Intn(1000))
			}
			live = append(live, r)
			rows = append(rows, "+I "+r)
		}
		snaps = append(snaps, rows)
	}
	return snaps
}

// spillRun runs the operator newOp builds under a budget of limit bytes
// and returns its output, the peak state accounted and the entries
// spilled.
func spillRun(t *testing.T, mem memory.Allocator, limit int64, batchSize int, newOp func(ec *exec.Context, b *Budget) Operator) ([]string, int64, int64) {
	t.Helper()
	ec := exec.NewContext(mem)
	ec.TempDir = t.TempDir()
	ec.BatchSize = batchSize
	b := NewBudget(limit)
	op := newOp(ec, b)
	ctx := context.Background()
	if err := op.Open(ctx); err != nil {
		t.Fatal(err)
	}
	var out []string
	var peak int64
	for {
		c, err := op.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, b.Used())
		if c.Batch == nil {
			out = append(out, fmt.Sprintf("%v: marker", c.Pos))
			// At a marker the state in memory is back under the budget,
			// besides the spilled runs' indexes; the runs' files are
			// unlinked.
			if store := spillStoreOf(op); limit > 0 && store != nil && b.Used()-store.held > limit {
				t.Fatalf("at %v the state holds %d bytes (%d of them indexes), over the budget of %d", c.Pos, b.Used(), store.held, limit)
			}
			if files, err := os.ReadDir(ec.TempDir); err != nil || len(files) > 0 {
				t.Fatalf("spill directory holds %v (%v)", files, err)
			}
			continue
		}
		out = appendRowLines(out, c)
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
	if b.Used() != 0 {
		t.Fatalf("budget holds %d bytes after Close", b.Used())
	}
	return out, peak, ec.SpilledRows()
}

func spillStoreOf(op Operator) *spillStore {
	switch x := op.(type) {
	case *Rank:
		return x.store
	case *Aggregate:
		return x.store
	case *Normalize:
		return x.store
	}
	return nil
}

// expectSameSpilled runs newOp in memory and under a tiny budget: the
// state must peak at 10x the budget in memory, spill under it, and the
// output must be the same change for change.
func expectSameSpilled(t *testing.T, rng *rand.Rand, mem memory.Allocator, newOp func(ec *exec.Context, b *Budget) Operator) {
	t.Helper()
	const budget = 2 << 10
	batch := 1 + rng.Intn(64)
	want, peak, _ := spillRun(t, mem, 0, batch, newOp)
	if peak < 10*budget {
		t.Fatalf("the state peaks at %d bytes, not 10x the budget of %d", peak, budget)
	}
	got, _, spilled := spillRun(t, mem, budget, batch, newOp)
	if spilled == 0 {
		t.Fatal("nothing spilled")
	}
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("with a %d-byte budget change %d is %q, in memory %q", budget, i, got[i], want[i])
			}
		}
		t.Fatalf("with a %d-byte budget %d changes, in memory %d", budget, len(got), len(want))
	}
	t.Logf("state peaks at %d bytes in memory; %d entries spilled under a %d-byte budget", peak, spilled, budget)
}

// A top-N whose state is far over its budget spills partitions to disk and
// reads them back, emitting exactly what it emits in memory: the same
// changes at every marker, over a random changelog with retractions.
func TestRankSpillsPastBudget(t *testing.T) {
	rng := seeded(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	snaps := randomChangelog(rng, 80, 300)
	expectSameSpilled(t, rng, mem, func(ec *exec.Context, b *Budget) Operator {
		r, err := NewRank(ec, int64Changes(t, mem, []string{"p", "x", "y"}, 0, 1, snaps...), RankSpec{
			Partition: []exec.Expr{col(1, "p")},
			Order:     []exec.SortKey{{Expr: col(2, "x"), Descending: true}, {Expr: col(3, "y"), NullsFirst: true}},
			Lo:        1, Hi: 3, Number: true,
		}, b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
}

// An aggregation whose state is far over its budget spills groups,
// accumulators and all, and emits exactly what it emits in memory.
func TestAggregateSpillsPastBudget(t *testing.T) {
	rng := seeded(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	snaps := randomChangelog(rng, 80, 300)
	i64 := arrow.PrimitiveTypes.Int64
	expectSameSpilled(t, rng, mem, func(ec *exec.Context, b *Budget) Operator {
		agg, err := NewAggregate(ec, int64Changes(t, mem, []string{"p", "x", "y"}, 0, 1, snaps...), []exec.Expr{col(1, "p")}, []string{"p"}, []AggSpec{
			{Func: "count_star", Type: i64, Name: "c"},
			{Func: "count", Arg: col(2, "x"), Type: i64, Name: "cx"},
			{Func: "sum", Arg: col(2, "x"), Type: i64, Name: "s"},
			{Func: "avg", Arg: col(3, "y"), Type: i64, Name: "a"}, // AVG of BIGINT is BIGINT (Flink)
			{Func: "min", Arg: col(3, "y"), Type: i64, Name: "mn"},
			{Func: "max", Arg: col(2, "x"), Type: i64, Name: "mx"},
			{Func: "count", Arg: col(2, "x"), Distinct: true, Type: i64, Name: "dx"},
		}, b)
		if err != nil {
			t.Fatal(err)
		}
		return agg
	})
}

// A normalization whose state (the last row of every key) is far over its
// budget spills rows and emits exactly what it emits in memory.
func TestNormalizeSpillsPastBudget(t *testing.T) {
	rng := seeded(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	snaps := randomChangelog(rng, 80, 3000)
	expectSameSpilled(t, rng, mem, func(ec *exec.Context, b *Budget) Operator {
		n, err := NewNormalize(ec, int64Changes(t, mem, []string{"p", "x", "y"}, 0, 1, snaps...), []int{1}, b)
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// insertsOnly is a changelog of rows per partition inserts for each of
// partitions partitions, in random order, in snapshots of up to 100 rows,
// with copies of rows.
func insertsOnly(rng *rand.Rand, partitions, rows int) [][]string {
	var all []string
	for p := range partitions {
		for range rows {
			all = append(all, fmt.Sprintf("+I %d %d %d", p, rng.Intn(rows), rng.Intn(3)))
		}
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var snaps [][]string
	for len(all) > 0 {
		n := min(len(all), 1+rng.Intn(100))
		snaps, all = append(snaps, all[:n]), all[n:]
	}
	return snaps
}

// A top-N over an insert-only input emits the changes the top-N that
// keeps every row emits at each position (in another order of
// partitions: it does not touch a partition whose new rows stay out of
// the top), and its state does not grow with the rows of a
// partition: ten times the rows per partition peak at about the same
// state, where the other top-N's grows about tenfold.
func TestInsertOnlyRankStateBounded(t *testing.T) {
	rng := seeded(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	lo, hi := int64(1+rng.Intn(2)), int64(2+rng.Intn(3))
	number, batch := rng.Intn(2) == 0, 1+rng.Intn(64)
	run := func(snaps [][]string, insertOnly bool) ([]string, int64) {
		spec := RankSpec{
			Partition: []exec.Expr{col(1, "p")},
			Order:     []exec.SortKey{{Expr: col(2, "x"), Descending: true}},
			Lo:        lo, Hi: hi, Number: number,
		}
		if insertOnly {
			spec.InsertOnly = "t"
		}
		out, peak, _ := spillRun(t, mem, 0, batch, func(ec *exec.Context, b *Budget) Operator {
			r, err := NewRank(ec, int64Changes(t, mem, []string{"p", "x", "y"}, 0, 1, snaps...), spec, b)
			if err != nil {
				t.Fatal(err)
			}
			return r
		})
		return out, peak
	}
	var peaks [2][2]int64 // [rows 100, 1000][all rows, insert-only]
	for i, rows := range []int{100, 1000} {
		snaps := insertsOnly(rng, 20, rows)
		want, all := run(snaps, false)
		got, bounded := run(snaps, true)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%d rows per partition: the insert-only top-N emits %d changes, the top-N keeping every row %d, not the same ones", rows, len(got), len(want))
		}
		peaks[i] = [2]int64{all, bounded}
	}
	t.Logf("rows %d to %d (numbered %v); state peaks (all rows, insert-only): 100 rows per partition %v, 1000 %v", lo, hi, number, peaks[0], peaks[1])
	if peaks[1][1] > peaks[0][1]*3/2 {
		t.Fatalf("insert-only state grows with the rows per partition: %d bytes at 100, %d at 1000", peaks[0][1], peaks[1][1])
	}
	if peaks[1][0] < 5*peaks[0][0] {
		t.Fatalf("the premise fails: the top-N keeping every row peaks at %d bytes at 100 rows per partition, %d at 1000", peaks[0][0], peaks[1][0])
	}
}

// A top 1 by ROW_NUMBER() over an insert-only input (Rank.t1, which
// replaces a partition's one row in place) emits what the insert-only
// top-N's general path emits, change for change, over rows in rough
// order of the ORDER BY key with ties on it and copies of rows, several
// per partition in a snapshot; its state is what partBytes accounts, and
// it spills and reads partitions back as it does in memory.
func TestInsertOnlyTop1(t *testing.T) {
	rng := seeded(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	snaps, spec := top1Case(rng)
	t.Logf("ORDER BY %+v, numbered %v", spec.Order[0], spec.Number)
	newRank := func(ec *exec.Context, b *Budget) *Rank {
		r, err := NewRank(ec, int64Changes(t, mem, []string{"p", "x", "y"}, 0, 1, snaps...), spec, b)
		if err != nil {
			t.Fatal(err)
		}
		if r.t1 == nil {
			t.Fatal("not a top1 Rank")
		}
		return r
	}
	run := func(top1 bool) []string {
		r := newRank(exec.NewContext(mem), NewBudget(0))
		if !top1 {
			r.t1 = nil
		}
		ctx := context.Background()
		if err := r.Open(ctx); err != nil {
			t.Fatal(err)
		}
		var out []string
		for {
			c, err := r.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Batch == nil {
				if held := rankHeld(r); held != r.held {
					t.Fatalf("at %v the partitions hold %d bytes by partBytes, %d as accounted", c.Pos, held, r.held)
				}
				out = append(out, fmt.Sprintf("%v: marker", c.Pos))
				continue
			}
			out = appendRowLines(out, c)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got, want := run(true), run(false)
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("change %d is %q, by the general path %q", i, got[i], want[i])
			}
		}
		t.Fatalf("%d changes, by the general path %d", len(got), len(want))
	}
	expectSameSpilled(t, rng, mem, func(ec *exec.Context, b *Budget) Operator { return newRank(ec, b) })
}

// top1Case is a changelog for a top 1 over an insert-only input and
// its spec, ORDER BY x with random direction and nulls: rows in rough
// order of x with ties on it and copies of rows, several per partition
// in a snapshot.
func top1Case(rng *rand.Rand) ([][]string, RankSpec) {
	var snaps [][]string
	for s := range 60 {
		var rows []string
		for range 1 + rng.Intn(80) {
			x := fmt.Sprint(s + rng.Intn(3))
			if rng.Intn(10) == 0 {
				x = "NULL"
			}
			p := rng.Intn(400)
			if rng.Intn(2) == 0 {
				p = rng.Intn(10) // hot: many rows a snapshot
			}
			rows = append(rows, fmt.Sprintf("+I %d %s %d", p, x, rng.Intn(3)))
		}
		snaps = append(snaps, rows)
	}
	return snaps, RankSpec{
		Partition: []exec.Expr{col(1, "p")},
		Order:     []exec.SortKey{{Expr: col(2, "x"), Descending: rng.Intn(2) == 0, NullsFirst: rng.Intn(2) == 0}},
		Lo:        1, Hi: 1, Number: rng.Intn(2) == 0, InsertOnly: "t",
	}
}

// A top 1 over an insert-only input (Rank.t1) saved at random markers
// and restored into a new operator (under no budget or one it spills
// past, as the one saved) emits, from the restore on, what the general
// path emits in one run, change for change. Some runs take the general
// path: each restores what the other saved (the encoding is the same,
// so the checkpoints of flightd before Rank.t1 load).
func TestInsertOnlyTop1Restored(t *testing.T) {
	rng := seeded(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	snaps, spec := top1Case(rng)
	batch := 1 + rng.Intn(64)
	ctx := context.Background()
	// run runs snaps from state (none if nil) and returns the changes,
	// without their positions (each run numbers its snapshots from 1),
	// and the state saved at the end.
	run := func(snaps [][]string, top1 bool, limit int64, state []byte) ([]string, []byte) {
		ec := exec.NewContext(mem)
		ec.TempDir = t.TempDir()
		ec.BatchSize = batch
		r, err := NewRank(ec, int64Changes(t, mem, []string{"p", "x", "y"}, 0, 1, snaps...), spec, NewBudget(limit))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if !top1 {
			r.t1 = nil
		}
		if state != nil {
			rd, err := newSectionReader([][]byte{state})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.RestoreState(rd); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Open(ctx); err != nil {
			t.Fatal(err)
		}
		var out []string
		for {
			c, err := r.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Batch == nil {
				out = append(out, "marker")
				continue
			}
			out = appendRowLines(out, Chunk{Batch: c.Batch})
		}
		w := &StateWriter{}
		if err := r.SaveState(w); err != nil {
			t.Fatal(err)
		}
		return out, bytes.Join(w.pieces(), nil)
	}
	want, _ := run(snaps, false, 0, nil)
	var got []string
	var state []byte
	restores, spilled, general := 0, 0, 0
	for start := 0; start < len(snaps); restores++ {
		end := min(len(snaps), start+1+rng.Intn(12))
		limit := int64(0)
		if rng.Intn(2) == 0 {
			limit, spilled = 1<<10, spilled+1
		}
		top1 := rng.Intn(4) != 0
		if !top1 {
			general++
		}
		var out []string
		out, state = run(snaps[start:end], top1, limit, state)
		got = append(got, out...)
		start = end
	}
	t.Logf("ORDER BY %+v, numbered %v; %d runs, %d of them spilling, %d by the general path", spec.Order[0], spec.Number, restores, spilled, general)
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("change %d is %q, by the general path in one run %q", i, got[i], want[i])
			}
		}
		t.Fatalf("%d changes, by the general path in one run %d", len(got), len(want))
	}
}

// rankHeld is what r's partitions account by partBytes.
func rankHeld(r *Rank) int64 {
	var held int64
	for _, p := range r.parts {
		held += r.partBytes(p)
	}
	if t := r.t1; t != nil {
		for pi := range t.parts {
			if t.parts[pi].held {
				held += t.partBytes(uint32(pi))
			}
		}
	}
	return held
}

// appendRowLines appends a line per row of c's batch: its position and
// its values.
func appendRowLines(out []string, c Chunk) []string {
	for i := range int(c.Batch.NumRows()) {
		var f []string
		for j := range int(c.Batch.NumCols()) {
			f = append(f, c.Batch.Column(j).ValueStr(i))
		}
		out = append(out, fmt.Sprintf("%v: %s", c.Pos, strings.Join(f, " ")))
	}
	return out
}
