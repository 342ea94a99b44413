package tablestore

import (
	"context"
	"testing"
	"time"
)

// TestLiveNodes: a node is live while its last heartbeat is within the
// window, gone after it, and its record is removed once silent for ten
// windows; a node that leaves is gone at once.
func TestLiveNodes(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_000_000)
	dir := t.TempDir()
	s, err := Open(ctx, NewLocalFS(), dir, Options{Mem: newMem(t), Now: func() time.Time { return now }})
	must(t, err)
	defer s.Close()
	const window = 15 * time.Second
	live := func() []string {
		t.Helper()
		nodes, err := s.LiveNodes(ctx, window)
		must(t, err)
		var out []string
		for _, n := range nodes {
			out = append(out, n.ID+"@"+n.Location)
		}
		return out
	}
	must(t, s.Heartbeat(ctx, "a", "grpc+tcp://a:1"))
	must(t, s.Heartbeat(ctx, "b", "grpc+tcp://b:1"))
	eqRows(t, live(), "a@grpc+tcp://a:1", "b@grpc+tcp://b:1")
	now = now.Add(window)
	must(t, s.Heartbeat(ctx, "b", "grpc+tcp://b:1"))
	eqRows(t, live(), "a@grpc+tcp://a:1", "b@grpc+tcp://b:1")
	now = now.Add(time.Millisecond)
	eqRows(t, live(), "b@grpc+tcp://b:1") // a is a window and 1 ms silent
	if n := countFilesIn(t, s.fs, joinPath(dir, nodeDirName), "a"); n != 1 {
		t.Fatalf("%d records of a, want 1 until it is silent for ten windows", n)
	}
	now = now.Add(9 * window)
	must(t, s.Heartbeat(ctx, "b", "grpc+tcp://b:1"))
	eqRows(t, live(), "b@grpc+tcp://b:1")
	if n := countFilesIn(t, s.fs, joinPath(dir, nodeDirName), "a"); n != 0 {
		t.Fatalf("%d records of a after ten silent windows, want 0", n)
	}
	must(t, s.LeaveNodes(ctx, "b"))
	eqRows(t, live())
}
