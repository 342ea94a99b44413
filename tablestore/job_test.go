package tablestore

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"
)

// TestDeleteJobCheckpointsKeepsNewer: a cleanup keeping sink snapshot 5
// removes the checkpoints before it and what their writes left, and
// leaves the newer ones, written or being written: a node that took the
// job over wrote them while this one was stale.
func TestDeleteJobCheckpointsKeepsNewer(t *testing.T) {
	s, _, _ := newTestStore(t)
	ctx := context.Background()
	for _, snap := range []int64{3, 5, 7} {
		if err := s.PutJobCheckpoint(ctx, "j", snap, []byte("state")); err != nil {
			t.Fatal(err)
		}
	}
	dir := s.jobCheckpointDir("j")
	for _, n := range []string{".tmp-4-a", ".tmp-8-b", ".tmp-c", "x"} {
		if err := writeFileSync(s.fs, joinPath(dir, n), []byte("partial")); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []string {
		t.Helper()
		names, err := s.fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	if err := s.DeleteJobCheckpoints(ctx, "j", 5); err != nil {
		t.Fatal(err)
	}
	if got, want := list(), []string{".tmp-8-b", "5", "7"}; !slices.Equal(got, want) {
		t.Fatalf("after keeping 5: %q, want %q", got, want)
	}
	if err := s.DeleteJobCheckpoints(ctx, "j", 0); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("after deleting all: %q", got)
	}
}

// TestCommitEmpty: a write with CommitEmpty and nothing written publishes
// a snapshot holding its properties and no change: the rows stay, and a
// change stream reads nothing for it (a marker only). Without the option
// such a commit publishes nothing.
func TestCommitEmpty(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	w := tbl.NewWrite(WriteOptions{})
	if id, err := w.Commit(ctx); err != nil || id != 1 {
		t.Fatalf("commit of nothing: snapshot %d, %v; want the latest, 1", id, err)
	}
	w = tbl.NewWrite(WriteOptions{CommitEmpty: true, Properties: map[string]string{"p": "x"}})
	if id, err := w.Commit(ctx); err != nil || id != 2 {
		t.Fatalf("empty commit: snapshot %d, %v; want 2", id, err)
	}
	if id, _, props, err := tbl.LastProperties(ctx, "p"); err != nil || id != 2 || props["p"] != "x" {
		t.Fatalf("properties: snapshot %d %v %v", id, props, err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a")
	r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamFromSnapshot, SnapshotID: 2, EndSnapshot: 2, Poll: time.Hour})
	must(t, err)
	defer r.Close()
	for {
		ch, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		if ch.Batch != nil {
			t.Fatalf("the empty snapshot streamed %d rows", ch.Batch.NumRows())
		}
	}
}
