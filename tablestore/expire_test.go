package tablestore

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for snapshot times.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func countFiles(t *testing.T, root, prefix string) int {
	return countFilesIn(t, NewLocalFS(), root, prefix)
}

func TestTimeTravelTagsExpiry(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, err := Open(ctx, NewLocalFS(), dir, Options{Mem: mem, Now: clock.Now})
	must(t, err)
	defer s.Close()
	must(t, s.CreateDatabase(ctx, "db", false))
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{
		"write-only": "true", "snapshot.num-retained.min": "2", "snapshot.time-retained": "1h"}}, false)
	must(t, err)
	start := clock.Now()
	for i := range 6 {
		clock.advance(10 * time.Minute)
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, string(rune('a' + i))}, {i + 10, "x"}})
		must(t, tbl.Compact(ctx, true)) // each commit is followed by a compaction snapshot
	}
	// Snapshots 1..12 at 10-minute steps (odd: writes, even: compactions).
	id, err := tbl.SnapshotAsOf(ctx, start.Add(25*time.Minute))
	if err != nil || id != 4 {
		t.Fatalf("SnapshotAsOf: %d %v", id, err)
	}
	if _, err := tbl.SnapshotAsOf(ctx, start); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("want ErrSnapshotNotFound, got %v", err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{SnapshotID: id}), "1|b", "10|x", "11|x")
	must(t, tbl.CreateTag(ctx, "v2", 3))
	if err := tbl.CreateTag(ctx, "v2", 4); err == nil {
		t.Fatal("duplicate tag accepted")
	}
	held, err := tbl.NewScan(ctx, ScanSpec{SnapshotID: 5})
	must(t, err)
	must(t, tbl.SetConsumer(ctx, "c1", 7))

	// Background maintenance after the commits expires too: let it finish
	// before the clock moves, so the counts below are this test's.
	tbl.st.bgWG.Wait()
	clock.advance(2 * time.Hour)
	n, err := tbl.ExpireSnapshots(ctx)
	must(t, err)
	if n != 4 { // 1..4: snapshot 5 is leased by the open scan
		t.Fatalf("expired %d snapshots, want 4", n)
	}
	eqRows(t, readScan(t, held), "1|c", "10|x", "11|x", "12|x")
	held.Close()
	n, err = tbl.ExpireSnapshots(ctx)
	must(t, err)
	if n != 2 { // 5, 6: the consumer needs 7 on
		t.Fatalf("expired %d snapshots, want 2", n)
	}
	if _, err := tbl.NewScan(ctx, ScanSpec{SnapshotID: 3}); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("want ErrSnapshotNotFound for expired snapshot, got %v", err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{Tag: "v2"}), "1|b", "10|x", "11|x")
	must(t, tbl.DeleteConsumer(ctx, "c1"))
	n, err = tbl.ExpireSnapshots(ctx)
	must(t, err)
	if n != 4 { // keep the 2 newest
		t.Fatalf("expired %d snapshots, want 4", n)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|f", "10|x", "11|x", "12|x", "13|x", "14|x", "15|x")
	eqRows(t, scanAll(t, tbl, ScanSpec{Tag: "v2"}), "1|b", "10|x", "11|x")
	// Left: the latest snapshot's file, the two files of retained snapshot
	// 11, and the two of the tag.
	root := filepath.Join(dir, "db.db", "t")
	if got := countFiles(t, root, "data-"); got != 5 {
		t.Fatalf("%d data files remain, want 5", got)
	}
	must(t, tbl.DeleteTag(ctx, "v2"))
	if got := countFiles(t, root, "data-"); got != 3 {
		t.Fatalf("%d data files remain after deleting the tag, want 3", got)
	}
	if _, err := tbl.NewScan(ctx, ScanSpec{Tag: "v2"}); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("want ErrSnapshotNotFound for deleted tag, got %v", err)
	}
	clock.advance(10 * time.Minute)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "g"}})
	must(t, tbl.Compact(ctx, true))
	clock.advance(2 * time.Hour)
	_, err = tbl.ExpireSnapshots(ctx)
	must(t, err)
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|g", "10|x", "11|x", "12|x", "13|x", "14|x", "15|x")
	if got := countFiles(t, root, "snapshot-"); got != 2 {
		t.Fatalf("%d snapshots remain, want 2", got)
	}
	// Manifests left are exactly those of the two retained snapshots.
	_, keep, err := tbl.st.referenced([]int64{13})
	must(t, err)
	if got := countFiles(t, root, "manifest"); got != len(keep) {
		t.Fatalf("%d manifest files, %d referenced", got, len(keep))
	}
}
