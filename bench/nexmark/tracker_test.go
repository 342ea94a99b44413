package nexmark

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
	fsql "github.com/flightd/flightd/flightsql"
)

func num(v int64) tpcds.Value { return tpcds.Value{Kind: tpcds.KNum, Num: big.NewRat(v, 1)} }

func changes(t *testing.T, mem memory.Allocator, kinds []string, vals []int64) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "_row_kind", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil))
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(kinds, nil)
	b.Field(1).(*array.Int64Builder).AppendValues(vals, nil)
	return b.NewRecordBatch()
}

// TestTrackerApply checks the applied changelog against batch answers: an
// equal one, and ones that differ by a row or by a retraction too many.
func TestTrackerApply(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	applied, err := newSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer applied.remove()
	tr := newTracker([]string{"bid"}, applied)
	b := changes(t, mem, []string{"+I", "+I", "+I", "-U", "+U", "-D"}, []int64{1, 2, 2, 2, 3, 1})
	defer b.Release()
	if err := tr.apply(b); err != nil {
		t.Fatal(err)
	}
	want := func(counts map[int64]int) *answer {
		a := &answer{rows: newTestSpool(t)}
		for v, n := range counts {
			for range n {
				if err := a.rows.add([]tpcds.Value{num(v)}, 1); err != nil {
					t.Fatal(err)
				}
			}
		}
		return a
	}
	diff := func(a *answer) string {
		t.Helper()
		o, err := tr.compare(a, tr.result())
		if err != nil {
			t.Fatal(err)
		}
		return o.diff
	}
	if d := diff(want(map[int64]int{2: 1, 3: 1})); d != "" || tr.result().sum.rows != 2 || tr.changes != 6 {
		t.Fatalf("diff %q, rows %d, changes %d", d, tr.result().sum.rows, tr.changes)
	}
	if d := diff(want(map[int64]int{2: 2, 3: 1})); !strings.Contains(d, "streamed 1 fewer than batch: 2") {
		t.Errorf("a missing duplicate gave %q", d)
	}
	if d := diff(want(map[int64]int{2: 1, 3: 1, 4: 1})); !strings.Contains(d, "streamed 1 fewer than batch: 4") {
		t.Errorf("a missing row gave %q", d)
	}
	extra := changes(t, mem, []string{"-D"}, []int64{9})
	defer extra.Release()
	if err := tr.apply(extra); err != nil {
		t.Fatal(err)
	}
	if d := diff(want(map[int64]int{2: 1, 3: 1})); !strings.Contains(d, "retracted 1 more times than inserted: 9") {
		t.Errorf("a retraction of a row never inserted gave %q", d)
	}
	bad := changes(t, mem, []string{"+X"}, []int64{1})
	defer bad.Release()
	if err := tr.apply(bad); err == nil || !strings.Contains(err.Error(), `"+X"`) {
		t.Errorf("unknown row kind: %v", err)
	}
}

// TestTrackerProgress checks that a commit counts as delivered only once
// the stream has passed every table's snapshot of it.
func TestTrackerProgress(t *testing.T) {
	tr := newTracker([]string{"auction", "bid"}, nil)
	tr.committed(commitDone{began: time.Now(), snapshots: map[string]int64{"auction": 3, "bid": 5}})
	tr.finish()
	steps := []struct {
		p    fsql.ChangeProgress
		done bool
	}{
		{fsql.ChangeProgress{Snapshot: 5, Snapshots: map[string]int64{"default.auction AS A": 3, "default.bid AS B": 5}}, false}, // 5 still being sent
		{fsql.ChangeProgress{Snapshot: 4, CaughtUp: true, Snapshots: map[string]int64{"default.auction AS A": 2, "default.bid AS B": 4}}, false},
		// A self join: the second, unaliased read of bid is labelled #2 and is at 5.
		{fsql.ChangeProgress{Snapshot: 6, Snapshots: map[string]int64{"default.auction AS A": 4, "default.bid AS B": 6, "default.bid#2": 5}}, false},
		// Rows past every commit, but the result is compared at a marker only.
		{fsql.ChangeProgress{Snapshot: 6, Snapshots: map[string]int64{"default.auction AS A": 4, "default.bid AS B": 6, "default.bid#2": 6}}, false},
		{fsql.ChangeProgress{Snapshot: 6, CaughtUp: true, Watermark: "2015-07-15T00:00:01.5Z", Snapshots: map[string]int64{"default.auction AS A": 4, "default.bid AS B": 6, "default.bid#2": 6}}, true},
	}
	for i, s := range steps {
		if err := tr.progress(s.p); err != nil {
			t.Fatal(err)
		}
		if got := tr.isDone(); got != s.done {
			t.Fatalf("step %d: done %v, want %v (%s)", i, got, s.done, tr.position())
		}
	}
	if wm := tr.finalWatermark(); !wm.Equal(time.Date(2015, 7, 15, 0, 0, 1, 5e8, time.UTC)) {
		t.Errorf("final watermark %v", wm)
	}
	if err := tr.progress(fsql.ChangeProgress{CaughtUp: true, Watermark: "yesterday"}); err == nil {
		t.Error("a watermark that is not RFC 3339 was taken")
	}
	if p50, p99 := tr.latencies(); p50 <= 0 || p99 != p50 {
		t.Errorf("one commit's latency: p50 %v p99 %v", p50, p99)
	}
	ctx := context.Background()
	seen := tr.markerCount()
	if tr.awaitCaughtUp(ctx, seen, 50*time.Millisecond) {
		t.Error("awaitCaughtUp saw a marker none sent")
	}
	go func() { _ = tr.progress(fsql.ChangeProgress{Snapshot: 7, CaughtUp: true}) }()
	if !tr.awaitCaughtUp(ctx, seen, time.Minute) {
		t.Error("awaitCaughtUp missed a marker")
	}
}
