package stream

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// A window aggregation whose open windows hold over 10x its budget spills
// groups to disk and reads them back when a change reaches them or their
// window closes: for TUMBLE, HOP and CUMULATE over random out-of-order
// events it emits exactly what it emits in memory; at every marker the
// state in memory is back under the budget; entries really went to disk;
// the spill directory holds no file (runs are unlinked); Close frees every
// byte accounted and the allocator.
func TestWindowAggregateSpills(t *testing.T) {
	testWindowSpills(t, 16<<10, 2_000, 20_000, func(ec *exec.Context, in Operator, ws Windows, b *Budget) (Operator, func() *spillStore, error) {
		w, err := NewWindowAggregate(ec, in, ws, exec.NewColumn(3, eventTS, "ts"), []exec.Expr{col(1, "k")}, []string{"k"}, benchAggs, b)
		return w, func() *spillStore {
			if w == nil {
				return nil
			}
			return w.store
		}, err
	})
}

// TestWindowRankSpills is TestWindowAggregateSpills for a window top-N
// straight over the TVF's rows (WindowAssign under WindowRank: the top 3
// by x of each window and key, numbered), whose partitions hold every row
// of their window: its spilled state is larger, and so are the indexes of
// its runs, which stay in memory (under 16 KB they alone would exceed it).
func TestWindowRankSpills(t *testing.T) {
	testWindowSpills(t, 64<<10, 2_000, 8_000, func(ec *exec.Context, in Operator, ws Windows, b *Budget) (Operator, func() *spillStore, error) {
		a, err := NewWindowAssign(ec, in, ws, 2)
		if err != nil {
			return nil, nil, err
		}
		spec := RankSpec{
			Partition: []exec.Expr{exec.NewColumn(3, eventTS, "window_start"), exec.NewColumn(4, eventTS, "window_end"), col(1, "k")},
			Order:     []exec.SortKey{{Expr: col(2, "x"), Descending: true}},
			Lo:        1, Hi: 3, Number: true,
		}
		w, err := NewWindowRank(ec, a, spec, 3, b)
		return w, func() *spillStore {
			if w == nil {
				return nil
			}
			return w.store
		}, err
	})
}

// TestWindowJoinSpills is TestWindowAggregateSpills for a full outer
// window join of the events with a second stream of them (fixed seed):
// a window's rows of a join key go to disk with both sides and come back
// on a change or when the window closes.
func TestWindowJoinSpills(t *testing.T) {
	testWindowSpills(t, 64<<10, 2_000, 6_000, func(ec *exec.Context, in Operator, ws Windows, b *Budget) (Operator, func() *spillStore, error) {
		s := WindowJoinSide{Keys: []exec.Expr{col(1, "k")}, Time: exec.NewColumn(3, eventTS, "ts"), Start: 2, Bounds: []WindowBound{WindowEnd}}
		right := newEvents(ec.Mem, 42, 256, 6_000, 2_000)
		j, err := NewWindowJoin(ec, exec.FullJoin, in, right, ws, [2]WindowJoinSide{s, s}, b)
		return j, func() *spillStore {
			if j == nil {
				return nil
			}
			return j.store
		}, err
	})
}

// TestIntervalJoinSpills is TestWindowAggregateSpills for a full outer
// interval join of the events with a second stream of them (fixed seed),
// within 1.5, 2 and 2.5 s either way for the helper's three runs: a join
// key's rows go to disk with both sides and come back on a change or when
// the watermark expires one of them. Which keys are on disk stays in
// memory (about 60 bytes each), so the test has 500 keys under 64 KB.
func TestIntervalJoinSpills(t *testing.T) {
	testWindowSpills(t, 64<<10, 500, 6_000, func(ec *exec.Context, in Operator, ws Windows, b *Budget) (Operator, func() *spillStore, error) {
		k, ts := []exec.Expr{col(1, "k")}, exec.NewColumn(3, eventTS, "ts")
		within := time.Duration(1500+500*int(ws.Kind)) * time.Millisecond
		spec := IntervalSpec{Kind: exec.FullJoin, LeftKeys: k, RightKeys: k, LeftTime: ts, RightTime: ts, Lower: -within, Upper: within}
		j, err := NewIntervalJoin(ec, in, newEvents(ec.Mem, 42, 256, 6_000, 500), spec, b)
		return j, func() *spillStore {
			if j == nil {
				return nil
			}
			return j.store
		}, err
	})
}

// TestSessionAggregateSpills is TestWindowAggregateSpills for SESSION
// windows per key (gaps of 0.6, 0.8 and 1 s for the helper's three runs:
// a key's events come 0.2 s apart on average, so sessions of tens of rows
// close all along): partitions go to disk whole and come back on a change
// or when their first session closes. Which partitions are on disk stays
// in memory (about 60 bytes each), so the test has 200 keys under 48 KB.
func TestSessionAggregateSpills(t *testing.T) {
	testWindowSpills(t, 48<<10, 200, 20_000, func(ec *exec.Context, in Operator, ws Windows, b *Budget) (Operator, func() *spillStore, error) {
		k := []exec.Expr{col(1, "k")}
		gap := time.Duration(600+200*int(ws.Kind)) * time.Millisecond
		s, err := NewSessionAggregate(ec, in, gap, exec.NewColumn(3, eventTS, "ts"), k, k, []string{"k"}, benchAggs, b)
		return s, func() *spillStore {
			if s == nil {
				return nil
			}
			return s.store
		}, err
	})
}

// testWindowSpills runs the operator build makes over the same events
// (events events by keys keys) under no budget and under one of budget
// bytes.
func testWindowSpills(t *testing.T, budget int64, keys, events int, build func(*exec.Context, Operator, Windows, *Budget) (Operator, func() *spillStore, error)) {
	rng := seeded(t)
	for _, ws := range []Windows{
		{Kind: Tumble, Size: 10 * time.Second, Step: 10 * time.Second},
		{Kind: Hop, Size: 6 * time.Second, Step: 2 * time.Second},
		{Kind: Cumulate, Size: 6 * time.Second, Step: 2 * time.Second},
	} {
		seed := rng.Int63()
		batch := 1 + rng.Intn(512)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		want, peak, _ := windowSpillRun(t, mem, ws, seed, batch, keys, events, 0, build)
		if peak < 10*budget {
			t.Fatalf("%v: the state peaks at %d bytes, not 10x the budget of %d", ws.Kind, peak, budget)
		}
		got, _, spilled := windowSpillRun(t, mem, ws, seed, batch, keys, events, budget, build)
		if spilled == 0 {
			t.Fatalf("%v: nothing spilled", ws.Kind)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%v: under a %d-byte budget %d rows differ from the %d in memory", ws.Kind, budget, len(got), len(want))
		}
		mem.AssertSize(t, 0)
		t.Logf("%v: %d window rows; state peaks at %d bytes in memory; %d entries spilled under %d bytes", ws.Kind, len(want), peak, spilled, budget)
	}
}

// windowSpillRun runs build's operator over events events over keys keys
// by ws under a budget of limit bytes (0: none) and returns the rows
// emitted (sorted), the peak state and the entries spilled.
func windowSpillRun(t *testing.T, mem memory.Allocator, ws Windows, seed int64, batch, keys, events int, limit int64, build func(*exec.Context, Operator, Windows, *Budget) (Operator, func() *spillStore, error)) ([]string, int64, int64) {
	t.Helper()
	ctx := context.Background()
	ec := exec.NewContext(mem)
	ec.TempDir = t.TempDir()
	ec.BatchSize = batch
	b := NewBudget(limit)
	in := newEvents(mem, seed, 256, events, keys)
	w, store, err := build(ec, in, ws, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []string
	var peak int64
	for {
		c, err := w.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Batch == nil {
			peak = max(peak, b.Used())
			// Markers before the first spill may be over: nothing moved
			// yet. After it, all but the spill store's index (which keys
			// are in which block of which run) is back under the budget.
			if st := store(); limit > 0 && st != nil && b.Used()-st.held > limit {
				t.Fatalf("at %v the state holds %d bytes (%d of them the spill index) over the %d budget", c.Pos, b.Used(), st.held, limit)
			}
			continue
		}
		for i := range int(c.Batch.NumRows()) {
			var r []string
			for col := range int(c.Batch.NumCols()) {
				r = append(r, c.Batch.Column(col).ValueStr(i))
			}
			rows = append(rows, strings.Join(r, "|"))
		}
	}
	if files, err := os.ReadDir(ec.TempDir); err != nil || len(files) > 0 {
		t.Fatalf("spill directory: %v, %d files", err, len(files))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b.Used() != 0 {
		t.Fatalf("after Close %d bytes are accounted", b.Used())
	}
	slices.Sort(rows)
	return rows, peak, ec.SpilledRows()
}
