package tablestore

import (
	"context"
	"slices"
	"testing"
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
