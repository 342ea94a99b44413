package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

func TestConcurrentWritersOneBucket(t *testing.T) {
	ctx := context.Background()
	s, mem, dir := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)
	write := func(w *Write, k int, v string) {
		b := makeBatch(t, mem, kvSchema, [][]any{{k, v}})
		defer b.Release()
		must(t, w.Write(ctx, b, Insert))
	}
	// A numbers its row first, B commits first: A must not silently win or
	// lose, it fails cleanly and leaves no files.
	a, b := tbl.NewWrite(WriteOptions{}), tbl.NewWrite(WriteOptions{})
	write(a, 1, "a")
	write(b, 1, "b")
	_, err = b.Commit(ctx)
	must(t, err)
	before := countFiles(t, filepath.Join(dir, "db.db", "t"), "data-")
	if _, err := a.Commit(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("want ErrConflict, got %v", err)
	}
	if after := countFiles(t, filepath.Join(dir, "db.db", "t"), "data-"); after != before {
		t.Fatalf("conflicting commit left files: %d -> %d", before, after)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|b")
	// The other order: the earlier-numbered writer commits first, both land
	// and the later commit wins.
	a, b = tbl.NewWrite(WriteOptions{}), tbl.NewWrite(WriteOptions{})
	write(a, 1, "a2")
	write(b, 1, "b2")
	_, err = a.Commit(ctx)
	must(t, err)
	_, err = b.Commit(ctx)
	must(t, err)
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|b2")
	// Read-modify-write against a base snapshot conflicts with any write
	// to the bucket after it.
	base, _ := tbl.LatestSnapshotID(ctx)
	c := tbl.NewWrite(WriteOptions{BaseSnapshot: base})
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{2, "x"}})
	write(c, 1, "c")
	if _, err := c.Commit(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("want ErrConflict for stale read-modify-write, got %v", err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|b2", "2|x")
}

func TestOverwriteConflict(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	base, _ := tbl.LatestSnapshotID(ctx)
	ow := tbl.NewWrite(WriteOptions{Overwrite: true, BaseSnapshot: base})
	b := makeBatch(t, mem, kvSchema, [][]any{{2, "b"}})
	must(t, ow.Write(ctx, b, Insert))
	b.Release()
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "c"}})
	if _, err := ow.Commit(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("want ErrConflict, got %v", err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a", "3|c")
}

// TestConcurrentStores commits from several Stores (as separate processes
// would) on one warehouse at once; put-if-absent publication serializes
// them and no row is lost.
func TestConcurrentStores(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	s0 := openStore(t, NewLocalFS(), dir, mem)
	defer s0.Close()
	must(t, s0.CreateDatabase(ctx, "db", false))
	_, err := s0.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)
	const writers, commits = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*commits)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, NewLocalFS(), dir, Options{Mem: mem})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			tbl, err := s.Table(ctx, Ident{"db", "t"})
			if err != nil {
				errs <- err
				return
			}
			for c := range commits {
				b, err := buildBatch(mem, kvSchema, [][]any{{w*1000 + c, fmt.Sprint(w)}})
				if err != nil {
					errs <- err
					return
				}
				wr := tbl.NewWrite(WriteOptions{})
				err = wr.Write(ctx, b, Insert)
				b.Release()
				if err == nil {
					_, err = wr.Commit(ctx)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tbl, err := s0.Table(ctx, Ident{"db", "t"})
	must(t, err)
	if got := scanAll(t, tbl, ScanSpec{}); len(got) != writers*commits {
		t.Fatalf("%d rows, want %d", len(got), writers*commits)
	}
	if id, _ := tbl.LatestSnapshotID(ctx); id != writers*commits {
		t.Fatalf("latest snapshot %d, want %d", id, writers*commits)
	}
	// No temporary files are left behind.
	tmp, _ := filepath.Glob(filepath.Join(dir, "db.db", "t", "snapshot", ".tmp-*"))
	if len(tmp) > 0 {
		t.Fatalf("leftover temporary files: %v", tmp)
	}
	_ = os.Remove
}

// TestParallelSplits reads the splits of one scan concurrently while
// commits, compaction and expiry go on.
func TestParallelSplits(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"bucket": "4", "num-sorted-run.compaction-trigger": "2", "snapshot.num-retained.min": "1", "snapshot.time-retained": "1ms"}}, false)
	must(t, err)
	var want []string
	for c := range 5 {
		var rows [][]any
		for k := range 50 {
			rows = append(rows, []any{k, fmt.Sprint(c)})
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
	}
	for k := range 50 {
		want = append(want, fmt.Sprintf("%d|4", k))
	}
	sc, err := tbl.NewScan(ctx, ScanSpec{})
	must(t, err)
	defer sc.Close()
	// Churn: later commits, compaction and expiry must not disturb the scan.
	for c := range 5 {
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{c, "later"}})
	}
	must(t, tbl.Compact(ctx, true))
	_, err = tbl.ExpireSnapshots(ctx)
	must(t, err)
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	errs := make(chan error, len(sc.Splits()))
	for _, sp := range sc.Splits() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := sp.Open(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			for {
				b, err := r.Next(ctx)
				if err != nil {
					if !errors.Is(err, io.EOF) {
						errs <- err
					}
					return
				}
				mu.Lock()
				for i := range int(b.NumRows()) {
					got = append(got, fmt.Sprintf("%s|%s", cellString(b.Column(0), i), cellString(b.Column(1), i)))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(got)
	eqRows(t, got, want...)
}
