package stream_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCurrentWatermark: random snapshots of rows with out-of-order (and
// some NULL) event times, streamed bounded from the first; every row's
// CURRENT_WATERMARK(ts) is the watermark after the snapshots before its
// own (the largest event time so far less the delay; NULL before any),
// computed by a model, and Flink's late-row filter keeps exactly the rows
// after it. Replay with -seed.
func TestCurrentWatermark(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, sess, run := invariantEngine(t, ctx, rng, 0)
	delay := rng.Intn(3)
	run(fmt.Sprintf("CREATE TABLE ev (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '%d' SECOND)", delay))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var maxTS time.Time
	var all, kept []string
	snaps, id := 10+rng.Intn(20), 0
	for range snaps {
		wm := "NULL"
		if !maxTS.IsZero() {
			wm = maxTS.Add(-time.Duration(delay) * time.Second).Format("2006-01-02 15:04:05.999")
		}
		var vals []string
		var next time.Time
		for range 1 + rng.Intn(4) {
			id++
			if rng.Intn(8) == 0 {
				vals = append(vals, fmt.Sprintf("(%d, NULL)", id))
				all = append(all, fmt.Sprintf("+I|%d|%s", id, wm))
				if wm == "NULL" { // ts > NULL is NULL: only IS NULL keeps it
					kept = append(kept, fmt.Sprintf("+I|%d", id))
				}
				continue
			}
			ts := base.Add(time.Duration(id)*500*time.Millisecond - time.Duration(rng.Intn(4000))*time.Millisecond)
			vals = append(vals, fmt.Sprintf("(%d, TIMESTAMP '%s')", id, ts.Format("2006-01-02 15:04:05.000")))
			all = append(all, fmt.Sprintf("+I|%d|%s", id, wm))
			if wm == "NULL" || ts.After(maxTS.Add(-time.Duration(delay)*time.Second)) {
				kept = append(kept, fmt.Sprintf("+I|%d", id))
			}
			if ts.After(next) {
				next = ts
			}
		}
		if next.After(maxTS) {
			maxTS = next
		}
		run("INSERT INTO ev VALUES " + strings.Join(vals, ", "))
	}
	hint := fmt.Sprintf("/*+ OPTIONS('scan.mode'='from-snapshot-full', 'scan.snapshot-id'='1', 'scan.bounded.snapshot-id'='%d') */", snaps)
	slices.Sort(all)
	slices.Sort(kept)
	if got := sortedRows(t, ctx, sess, "SELECT id, CURRENT_WATERMARK(ts) FROM ev "+hint); !slices.Equal(got, all) {
		t.Fatalf("CURRENT_WATERMARK per row:\n%q\nthe model's\n%q", got, all)
	}
	if got := sortedRows(t, ctx, sess, "SELECT id FROM ev "+hint+" WHERE CURRENT_WATERMARK(ts) IS NULL OR ts > CURRENT_WATERMARK(ts)"); !slices.Equal(got, kept) {
		t.Fatalf("the rows that are not late:\n%q\nthe model's\n%q", got, kept)
	}
	if got := sortedRows(t, ctx, sess, "SELECT id, CURRENT_WATERMARK(ts) FROM ev WHERE CURRENT_WATERMARK(ts) IS NULL"); len(got) != id {
		t.Fatalf("the batch query gives %d rows with a NULL CURRENT_WATERMARK, not all %d", len(got), id)
	}
}

// TestWatermarkIgnoresPushedFilter: a stream's watermark comes from every
// row its source reads, as Flink's does from every event, whatever the
// query filters out: a filter pushed into the source must not skip the
// file whose rows moved it (by the file's statistics), or which rows are
// late would depend on how the rows were laid out in files.
func TestWatermarkIgnoresPushedFilter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, sess, run := invariantEngine(t, ctx, rand.New(rand.NewSource(1)), 0)
	run("CREATE TABLE ev (id INT, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('write-only' = 'true')")
	run("INSERT INTO ev VALUES (1, 1, TIMESTAMP '2024-01-01 00:01:40')")
	run("INSERT INTO ev VALUES (2, 2, TIMESTAMP '2024-01-01 00:00:10')")
	hint := "/*+ OPTIONS('scan.mode'='from-snapshot', 'scan.snapshot-id'='1', 'scan.bounded.snapshot-id'='2') */"
	want := []string{"+I|2|2024-01-01 00:01:40"}
	if got := sortedRows(t, ctx, sess, "SELECT id, CURRENT_WATERMARK(ts) FROM ev "+hint+" WHERE v = 2"); !slices.Equal(got, want) {
		t.Fatalf("filtered by a value: %q, want %q (the watermark of the row the filter drops)", got, want)
	}
}
