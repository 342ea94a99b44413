package tablestore

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// publishGateFS holds the publication of one snapshot file until released,
// as a writer that stalls between reading the latest snapshot and
// publishing its own does.
type publishGateFS struct {
	FS
	name    string // the snapshot file whose publication waits
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (f *publishGateFS) RenameNoReplace(oldname, newname string) error {
	if strings.HasSuffix(newname, "/"+f.name) {
		f.once.Do(func() { close(f.reached) })
		<-f.release
	}
	return f.FS.RenameNoReplace(oldname, newname)
}

// TestStaleCommitAfterExpiry: writer A reads snapshot 1 and stalls before
// publishing snapshot 2; meanwhile writer B commits snapshots 2 and 3 and
// expiry (one snapshot kept) removes 1 and 2, which frees the id A then
// publishes. A's commit must not be acknowledged as snapshot 2 below the
// newest (no reader would ever see it): it lands on top of 3, or fails.
func TestStaleCommitAfterExpiry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mem := newMem(t)
	gate := &publishGateFS{FS: NewLocalFS(), name: "snapshot-2", reached: make(chan struct{}), release: make(chan struct{})}
	sa := openStore(t, gate, dir, mem)
	defer sa.Close()
	must(t, sa.CreateDatabase(ctx, "db", false))
	ta, err := sa.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{
		"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "snapshot.time-retained": "1ms", "write-only": "true"}}, false)
	must(t, err)
	writeRows(t, ta, mem, WriteOptions{}, Insert, [][]any{{1, "first"}})

	sb := openStore(t, NewLocalFS(), dir, mem)
	defer sb.Close()
	tb, err := sb.Table(ctx, Ident{"db", "t"})
	must(t, err)

	type result struct {
		id  int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		id, err := commitRows(ta, mem, WriteOptions{}, Insert, [][]any{{2, "a"}})
		done <- result{id, err}
	}()
	<-gate.reached
	writeRows(t, tb, mem, WriteOptions{}, Insert, [][]any{{3, "b"}})
	writeRows(t, tb, mem, WriteOptions{}, Insert, [][]any{{4, "b"}})
	time.Sleep(5 * time.Millisecond) // past the time retained
	if _, err := tb.ExpireSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	r := <-done
	if r.err != nil {
		t.Logf("A's commit failed: %v", r.err)
		eqRows(t, scanAll(t, tb, ScanSpec{}), "1|first", "3|b", "4|b")
		return
	}
	if r.id <= 3 {
		t.Fatalf("A's commit was acknowledged as snapshot %d, below the newest (3)", r.id)
	}
	eqRows(t, scanAll(t, tb, ScanSpec{}), "1|first", "2|a", "3|b", "4|b")
}

// publishedHookFS runs after once the publication of one snapshot file
// succeeded, before the writer goes on.
type publishedHookFS struct {
	FS
	name  string
	after func()
	once  sync.Once
}

func (f *publishedHookFS) RenameNoReplace(oldname, newname string) error {
	err := f.FS.RenameNoReplace(oldname, newname)
	if err == nil && strings.HasSuffix(newname, "/"+f.name) {
		f.once.Do(f.after)
	}
	return err
}

// TestCommitBuiltOnAtOnce: writer B commits snapshot 3 on writer A's
// snapshot 2 right after A published it, before A checks for newer
// snapshots. A's commit is acknowledged as 2 and stays, with every file
// B's snapshot names (A took its snapshot back and removed its manifests,
// which B's named: "manifest ... is missing", 1 in 10 runs of
// TestConcurrentStores).
func TestCommitBuiltOnAtOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mem := newMem(t)
	var tb *Table
	hook := &publishedHookFS{FS: NewLocalFS(), name: "snapshot-2", after: func() {
		writeRows(t, tb, mem, WriteOptions{}, Insert, [][]any{{3, "b"}})
	}}
	sa := openStore(t, hook, dir, mem)
	defer sa.Close()
	must(t, sa.CreateDatabase(ctx, "db", false))
	ta, err := sa.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)
	writeRows(t, ta, mem, WriteOptions{}, Insert, [][]any{{1, "first"}})
	sb := openStore(t, NewLocalFS(), dir, mem)
	defer sb.Close()
	if tb, err = sb.Table(ctx, Ident{"db", "t"}); err != nil {
		t.Fatal(err)
	}
	id, err := commitRows(ta, mem, WriteOptions{}, Insert, [][]any{{2, "a"}})
	must(t, err)
	if id != 2 {
		t.Fatalf("A's commit was acknowledged as snapshot %d, want 2", id)
	}
	eqRows(t, scanAll(t, tb, ScanSpec{}), "1|first", "2|a", "3|b")
	writeRows(t, ta, mem, WriteOptions{}, Insert, [][]any{{4, "c"}})
	eqRows(t, scanAll(t, ta, ScanSpec{}), "1|first", "2|a", "3|b", "4|c")
}
