package flightsql

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
)

// TestAdvertiseNodes: two servers on one warehouse that advertise name
// each other in their endpoints within a few heartbeats (this one first),
// and stop naming a server that closed; a location that is not a Flight
// URI is refused.
func TestAdvertiseNodes(t *testing.T) {
	dir := t.TempDir()
	servers := make([]*Server, 2)
	for i := range servers {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		eng, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: dir, SpillDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(eng, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			srv.Close()
			if err := eng.Close(); err != nil {
				t.Error(err)
			}
			mem.AssertSize(t, 0)
		})
		servers[i] = srv
	}
	if err := servers[0].Advertise("node-a:1", 0); err == nil {
		t.Fatal("a location without a scheme was accepted")
	}
	locs := []string{"grpc+tcp://a:1", "grpc+tcp://b:1"}
	for i, srv := range servers {
		if err := srv.Advertise(locs[i], 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	named := func(s *Server) []string {
		var out []string
		for i := range 4 {
			out = append(out, s.nodes.location(i)[0].Uri)
		}
		return out
	}
	waitFor := func(s *Server, want []string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !slices.Equal(named(s), want) {
			if time.Now().After(deadline) {
				t.Fatalf("endpoints name %v, want %v", named(s), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(servers[0], []string{locs[0], locs[1], locs[0], locs[1]})
	waitFor(servers[1], []string{locs[1], locs[0], locs[1], locs[0]})
	servers[1].Close()
	waitFor(servers[0], []string{locs[0], locs[0], locs[0], locs[0]})
}
