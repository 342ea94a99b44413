package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/flightd/flightd/tablestore/meta"
)

// TestBlindWritesRebase: a blind write whose rows were numbered before a
// concurrent commit of the same key lands after it and wins, by getting
// new sequence numbers (its files rewritten), even when compaction moved
// the other commit's rows to a higher level meanwhile; with no shared key
// nothing is rewritten.
func TestBlindWritesRebase(t *testing.T) {
	ctx := context.Background()
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			s, mem, dir := newTestStore(t)
			tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}, false)
			must(t, err)
			write := func(w *Write, rows ...[]any) {
				b := makeBatch(t, mem, kvSchema, rows)
				defer b.Release()
				must(t, w.Write(ctx, b, Insert))
			}
			// A numbers its rows first, B commits first: A must land after B
			// and win key 1.
			a, b := tbl.NewWrite(WriteOptions{}), tbl.NewWrite(WriteOptions{})
			write(a, []any{1, "a"}, []any{3, "a"})
			write(b, []any{1, "b"}, []any{2, "b"})
			_, err = b.Commit(ctx)
			must(t, err)
			if compact {
				must(t, tbl.Compact(ctx, true))
			}
			before := countFiles(t, filepath.Join(dir, "db.db", "t"), "data-")
			_, err = a.Commit(ctx)
			must(t, err)
			eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a", "2|b", "3|a")
			if after := countFiles(t, filepath.Join(dir, "db.db", "t"), "data-"); after != before+1 {
				t.Fatalf("data files %d -> %d, want one more (the rewritten file replaces the original)", before, after)
			}
			// Overlapping key ranges without a shared key: A's file is
			// committed as written.
			a, b = tbl.NewWrite(WriteOptions{}), tbl.NewWrite(WriteOptions{})
			write(a, []any{10, "a"}, []any{12, "a"})
			write(b, []any{11, "b"})
			must(t, a.flush(ctx))
			name := a.pending[0].File.FileName
			_, err = b.Commit(ctx)
			must(t, err)
			_, err = a.Commit(ctx)
			must(t, err)
			sn, err := tbl.st.resolveSnapshot(0)
			must(t, err)
			live, err := tbl.st.liveFiles(sn)
			must(t, err)
			if !slices.ContainsFunc(live, func(e *meta.ManifestEntry) bool { return e.File.FileName == name }) {
				t.Fatal("a blind write sharing no key with a concurrent one was rewritten")
			}
			eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a", "10|a", "11|b", "12|a", "2|b", "3|a")
		})
	}
}

// TestReadModifyWriteKeyLevel: a read-modify-write fails only when a
// commit after its base wrote one of its keys (first committer wins),
// not for another key in the same bucket nor for compaction; the failure
// leaves no files.
func TestReadModifyWriteKeyLevel(t *testing.T) {
	ctx := context.Background()
	s, mem, dir := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "x"}, {5, "x"}})
	base, _ := tbl.LatestSnapshotID(ctx)
	rmw := func(k int, v string) error {
		w := tbl.NewWrite(WriteOptions{ReadModifyWrite: true, BaseSnapshot: base})
		b := makeBatch(t, mem, kvSchema, [][]any{{k, v}})
		defer b.Release()
		must(t, w.Write(ctx, b, UpdateAfter))
		_, err := w.Commit(ctx)
		return err
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{2, "other"}})
	must(t, tbl.Compact(ctx, true)) // rewrites key 1's file: no change of content
	must(t, rmw(1, "c"))            // key 2 is not ours
	before := countFiles(t, filepath.Join(dir, "db.db", "t"), "data-")
	if err := rmw(1, "d"); !errors.Is(err, ErrSerialization) || !errors.Is(err, ErrConflict) {
		t.Fatalf("second read-modify-write of key 1 from snapshot %d: %v, want ErrSerialization", base, err)
	}
	if after := countFiles(t, filepath.Join(dir, "db.db", "t"), "data-"); after != before {
		t.Fatalf("failed commit left files: %d -> %d", before, after)
	}
	// A delete is a write of its key too.
	w := tbl.NewWrite(WriteOptions{ReadModifyWrite: true, BaseSnapshot: base})
	b := makeBatch(t, mem, kvSchema, [][]any{{5, "x"}})
	must(t, w.Write(ctx, b, Delete))
	b.Release()
	_, err = w.Commit(ctx)
	must(t, err)
	if err := rmw(5, "e"); !errors.Is(err, ErrSerialization) {
		t.Fatalf("update of a key deleted concurrently: %v, want ErrSerialization", err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|c", "2|other")
}

// TestOverwriteConflict: an overwrite computed from a snapshot fails when
// rows were added to its scope since; a blind overwrite lands after them
// and replaces them.
func TestOverwriteConflict(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	base, _ := tbl.LatestSnapshotID(ctx)
	for _, read := range []bool{true, false} {
		ow := tbl.NewWrite(WriteOptions{Overwrite: true, ReadModifyWrite: read, BaseSnapshot: base})
		b := makeBatch(t, mem, kvSchema, [][]any{{2, "b"}})
		must(t, ow.Write(ctx, b, Insert))
		b.Release()
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "c"}})
		_, err := ow.Commit(ctx)
		if read {
			if !errors.Is(err, ErrSerialization) {
				t.Fatalf("want ErrSerialization, got %v", err)
			}
			eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a", "3|c")
			continue
		}
		must(t, err)
		eqRows(t, scanAll(t, tbl, ScanSpec{}), "2|b")
	}
}

// TestConcurrentStores commits from several Stores (as separate processes
// would) on one warehouse at once; put-if-absent publication serializes
// them and no row is lost.
func TestConcurrentStores(t *testing.T) { forEachWarehouse(t, testConcurrentStores) }

func testConcurrentStores(t *testing.T, wh warehouse) {
	ctx := context.Background()
	mem := newMem(t)
	dir := wh.root
	s0 := openStore(t, wh.fs, dir, mem)
	defer s0.Close()
	must(t, s0.CreateDatabase(ctx, "db", false))
	_, err := s0.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)
	writers, commits := 4, 10
	if wh.remote {
		writers, commits = 3, 4
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*commits)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, wh.fs, dir, Options{Mem: mem})
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
	if id, _ := tbl.LatestSnapshotID(ctx); id != int64(writers*commits) {
		t.Fatalf("latest snapshot %d, want %d", id, writers*commits)
	}
	// No temporary files are left behind but the stores' spare hint
	// files (writeHint).
	snaps := joinPath(dir, "db.db", "t", "snapshot")
	spares := countFilesIn(t, wh.fs, snaps, ".tmp-LATEST-spare-") + countFilesIn(t, wh.fs, snaps, ".tmp-EARLIEST-spare-")
	if n := countFilesIn(t, wh.fs, snaps, ".tmp-") - spares; n > 0 {
		t.Fatalf("%d leftover temporary files", n)
	}
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

// TestGroupCommit: appends queued while another commit holds the table
// publish in one snapshot, each as if committed alone in queue order: a
// later one wins a shared key although its rows were numbered first, and a
// read-modify-write that conflicts fails alone.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{2, "x"}})
	base, _ := tbl.LatestSnapshotID(ctx)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{2, "y"}})
	newWrite := func(opts WriteOptions, k int, v string) *Write {
		w := tbl.NewWrite(opts)
		b := makeBatch(t, mem, kvSchema, [][]any{{k, v}})
		defer b.Release()
		must(t, w.Write(ctx, b, Insert))
		return w
	}
	a := newWrite(WriteOptions{}, 1, "a") // numbered first, queued last
	b := newWrite(WriteOptions{}, 1, "b")
	rmw := newWrite(WriteOptions{ReadModifyWrite: true, BaseSnapshot: base}, 2, "z")
	st := tbl.st
	st.commitMu.Lock()
	type outcome struct {
		id  int64
		err error
	}
	res := make([]chan outcome, 3)
	for i, w := range []*Write{b, rmw, a} {
		res[i] = make(chan outcome, 1)
		go func() {
			id, err := w.Commit(ctx)
			res[i] <- outcome{id, err}
		}()
		for queued := 0; queued <= i; {
			runtime.Gosched()
			st.mu.Lock()
			queued = len(st.queue)
			st.mu.Unlock()
		}
	}
	st.commitMu.Unlock()
	ob, or, oa := <-res[0], <-res[1], <-res[2]
	must(t, ob.err)
	must(t, oa.err)
	if !errors.Is(or.err, ErrSerialization) {
		t.Fatalf("read-modify-write of a key written after its base: %v, want ErrSerialization", or.err)
	}
	if oa.id != ob.id || oa.id != base+2 {
		t.Fatalf("snapshots %d and %d, want both %d", ob.id, oa.id, base+2)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a", "2|y")
}

// TestCommitAll: writes to several tables publish together or not at all;
// a blind write rewritten while they were checked leaves no file behind
// when another one conflicts.
func TestCommitAll(t *testing.T) {
	ctx := context.Background()
	s, mem, dir := newTestStore(t)
	def := TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}
	t1, err := s.CreateTable(ctx, Ident{"db", "t1"}, def, false)
	must(t, err)
	t2, err := s.CreateTable(ctx, Ident{"db", "t2"}, def, false)
	must(t, err)
	writeRows(t, t2, mem, WriteOptions{}, Insert, [][]any{{1, "x"}})
	base, _ := t2.LatestSnapshotID(ctx)
	newWrite := func(tbl *Table, opts WriteOptions, v string) *Write {
		w := tbl.NewWrite(opts)
		b := makeBatch(t, mem, kvSchema, [][]any{{1, v}})
		defer b.Release()
		must(t, w.Write(ctx, b, Insert))
		return w
	}
	blind := newWrite(t1, WriteOptions{}, "mine")
	writeRows(t, t1, mem, WriteOptions{}, Insert, [][]any{{1, "theirs"}}) // numbered after blind's row
	rmw := newWrite(t2, WriteOptions{ReadModifyWrite: true, BaseSnapshot: base}, "mine")
	writeRows(t, t2, mem, WriteOptions{}, Insert, [][]any{{1, "theirs"}})
	before := countFiles(t, filepath.Join(dir, "db.db"), "data-")
	if _, err := CommitAll(ctx, []*Write{blind, rmw}); !errors.Is(err, ErrSerialization) {
		t.Fatalf("CommitAll with a conflicting write: %v, want ErrSerialization", err)
	}
	if after := countFiles(t, filepath.Join(dir, "db.db"), "data-"); after != before {
		t.Fatalf("data files %d -> %d, want no file of the failed commit left", before, after)
	}
	eqRows(t, scanAll(t, t1, ScanSpec{}), "1|theirs")
	eqRows(t, scanAll(t, t2, ScanSpec{}), "1|theirs")

	latest, _ := t2.LatestSnapshotID(ctx)
	blind = newWrite(t1, WriteOptions{}, "mine")
	writeRows(t, t1, mem, WriteOptions{}, Insert, [][]any{{1, "theirs"}})
	rmw = newWrite(t2, WriteOptions{ReadModifyWrite: true, BaseSnapshot: latest}, "mine")
	ids, err := CommitAll(ctx, []*Write{blind, rmw})
	must(t, err)
	if id1, _ := t1.LatestSnapshotID(ctx); ids[0] != id1 || ids[1] != latest+1 {
		t.Fatalf("snapshot ids %v, want [%d %d]", ids, id1, latest+1)
	}
	eqRows(t, scanAll(t, t1, ScanSpec{}), "1|mine")
	eqRows(t, scanAll(t, t2, ScanSpec{}), "1|mine")
}

// TestConcurrentStoresReadModifyWrite: writers on separate Stores (as
// separate processes) increment one counter by read-modify-writes; a
// commit that loses the publication race must still see that the winner
// wrote its key, so the counter equals the number of acknowledged
// increments (no lost update), whatever the retries.
func TestConcurrentStoresReadModifyWrite(t *testing.T) {
	forEachWarehouse(t, testConcurrentStoresReadModifyWrite)
}

func testConcurrentStoresReadModifyWrite(t *testing.T, wh warehouse) {
	ctx := context.Background()
	mem := newMem(t)
	dir := wh.root
	s0 := openStore(t, wh.fs, dir, mem)
	defer s0.Close()
	must(t, s0.CreateDatabase(ctx, "db", false))
	tbl0, err := s0.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)
	writeRows(t, tbl0, mem, WriteOptions{}, Insert, [][]any{{1, "0"}})
	writers, tries := 4, 20
	if wh.remote {
		writers, tries = 3, 5
	}
	var wg sync.WaitGroup
	acked := make([]int, writers)
	errs := make(chan error, writers*tries)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, wh.fs, dir, Options{Mem: mem})
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
			for range tries {
				base, err := tbl.LatestSnapshotID(ctx)
				if err != nil {
					errs <- err
					return
				}
				rows := scanAll(t, tbl, ScanSpec{SnapshotID: base})
				var v int
				if len(rows) != 1 {
					errs <- fmt.Errorf("rows at %d: %q", base, rows)
					return
				}
				fmt.Sscanf(rows[0], "1|%d", &v)
				b, err := buildBatch(mem, kvSchema, [][]any{{1, fmt.Sprint(v + 1)}})
				if err != nil {
					errs <- err
					return
				}
				wr := tbl.NewWrite(WriteOptions{ReadModifyWrite: true, BaseSnapshot: base})
				err = wr.Write(ctx, b, UpdateAfter)
				b.Release()
				if err == nil {
					_, err = wr.Commit(ctx)
				}
				switch {
				case err == nil:
					acked[w]++
				case !errors.Is(err, ErrSerialization):
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
	total := 0
	for _, n := range acked {
		total += n
	}
	if total == 0 {
		t.Fatal("no increment committed")
	}
	eqRows(t, scanAll(t, tbl0, ScanSpec{}), fmt.Sprintf("1|%d", total))
}
