package nexmark

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	fsql "github.com/flightd/flightd/flightsql"
)

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
	tr := newTracker([]string{"bid"})
	b := changes(t, mem, []string{"+I", "+I", "+I", "-U", "+U", "-D"}, []int64{1, 2, 2, 2, 3, 1})
	defer b.Release()
	if err := tr.apply(b); err != nil {
		t.Fatal(err)
	}
	if d := tr.diff(map[string]int{"2": 1, "3": 1}); d != "" || tr.rows() != 2 || tr.changes != 6 {
		t.Fatalf("diff %q, rows %d, changes %d", d, tr.rows(), tr.changes)
	}
	if d := tr.diff(map[string]int{"2": 2, "3": 1}); !strings.Contains(d, "streamed 1, batch 2: 2") {
		t.Errorf("a missing duplicate gave %q", d)
	}
	if d := tr.diff(map[string]int{"2": 1, "3": 1, "4": 1}); !strings.Contains(d, "streamed 0, batch 1: 4") {
		t.Errorf("a missing row gave %q", d)
	}
	extra := changes(t, mem, []string{"-D"}, []int64{9})
	defer extra.Release()
	if err := tr.apply(extra); err != nil {
		t.Fatal(err)
	}
	if d := tr.diff(map[string]int{"2": 1, "3": 1}); !strings.Contains(d, "retracted 1 more times than inserted: 9") {
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
	tr := newTracker([]string{"auction", "bid"})
	tr.committed(commitDone{began: time.Now(), snapshots: map[string]int64{"auction": 3, "bid": 5}})
	tr.finish()
	steps := []struct {
		p    fsql.ChangeProgress
		done bool
	}{
		{fsql.ChangeProgress{Snapshot: 5, Snapshots: map[string]int64{"default.auction AS A": 3, "default.bid AS B": 5}}, false}, // 5 still being sent
		{fsql.ChangeProgress{Snapshot: 4, CaughtUp: true, Snapshots: map[string]int64{"default.auction AS A": 2, "default.bid AS B": 4}}, false},
		{fsql.ChangeProgress{Snapshot: 6, Snapshots: map[string]int64{"default.auction AS A": 4, "default.bid AS B": 6, "default.bid": 5}}, false}, // self join: one read of bid at 5
		{fsql.ChangeProgress{Snapshot: 6, CaughtUp: true, Snapshots: map[string]int64{"default.auction AS A": 4, "default.bid AS B": 6, "default.bid": 6}}, true},
	}
	for i, s := range steps {
		tr.progress(s.p)
		if got := tr.isDone(); got != s.done {
			t.Fatalf("step %d: done %v, want %v (%s)", i, got, s.done, tr.position())
		}
	}
	if p50, p99 := tr.latencies(); p50 <= 0 || p99 != p50 {
		t.Errorf("one commit's latency: p50 %v p99 %v", p50, p99)
	}
	ctx := context.Background()
	seen := tr.markerCount()
	if tr.awaitCaughtUp(ctx, seen, 50*time.Millisecond) {
		t.Error("awaitCaughtUp saw a marker none sent")
	}
	go tr.progress(fsql.ChangeProgress{Snapshot: 7, CaughtUp: true})
	if !tr.awaitCaughtUp(ctx, seen, time.Minute) {
		t.Error("awaitCaughtUp missed a marker")
	}
}
