package flightsql_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/flightsql"
)

// resources is what the process holds: open file descriptors, goroutines
// and resident memory.
type resources struct {
	fds, goroutines int
	rssKB           int64
	heap            uint64 // live heap after a collection
}

func measure(t *testing.T) resources {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	r := resources{fds: len(ents), goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d", &r.rssKB)
		}
	}
	return r
}

// session is one short client: connect, query, prepare, close.
func session(ctx context.Context, addr string) error {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cl, err := arrowflightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	cl.Alloc = mem
	err = func() error {
		info, err := cl.Execute(ctx, "SELECT k, count(*) FROM t GROUP BY k")
		if err != nil {
			return err
		}
		if n, err := fetchAll(ctx, cl, info); err != nil || n != 10 {
			return fmt.Errorf("query: %d rows, %w", n, err)
		}
		p, err := cl.Prepare(ctx, "SELECT * FROM t WHERE k = 3")
		if err != nil {
			return err
		}
		return p.Close(ctx)
	}()
	if cerr := cl.Close(); err == nil {
		err = cerr
	}
	if err == nil && mem.CurrentAlloc() != 0 {
		err = fmt.Errorf("client leaked %d bytes", mem.CurrentAlloc())
	}
	return err
}

// 200 concurrent clients, then 1,000 sequential connections, all served
// without errors; afterwards the process holds no more file descriptors or
// goroutines than before and little more memory.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	ctx := context.Background()
	ts := startServer(t, flightsql.Options{})
	addr := strings.TrimPrefix(ts.URI, "grpc://")
	setup, _ := ts.rawClient(t)
	for _, q := range []string{"CREATE TABLE t (k BIGINT, v STRING)",
		"INSERT INTO t SELECT a.k, 'v' FROM (VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)) AS a(k) CROSS JOIN (VALUES (0),(1),(2)) AS b(k)"} {
		if _, err := setup.ExecuteUpdate(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := session(ctx, addr); err != nil { // warm up: caches, lazily started goroutines
		t.Fatal(err)
	}
	before := measure(t)
	start := time.Now()

	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 200 {
		wg.Go(func() {
			if err := session(ctx, addr); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent client: %v", err)
	}
	concurrent := time.Since(start)
	sequential := 1000
	if raceEnabled {
		sequential = 100 // the race detector makes each connection about 7x slower
	}
	for i := range sequential {
		if err := session(ctx, addr); err != nil {
			t.Fatalf("sequential connection %d: %v", i, err)
		}
	}
	total := time.Since(start)

	// Closed connections take their server goroutines and descriptors with
	// them, asynchronously: wait (bounded) for them to go.
	var after resources
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		after = measure(t)
		if after.fds <= before.fds && after.goroutines <= before.goroutines+2 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("200 concurrent clients in %v, %d sequential in %v; fds %d -> %d, goroutines %d -> %d, RSS %d -> %d MB, heap %d -> %d MB",
		concurrent.Round(time.Millisecond), sequential, (total - concurrent).Round(time.Millisecond),
		before.fds, after.fds, before.goroutines, after.goroutines, before.rssKB>>10, after.rssKB>>10, before.heap>>20, after.heap>>20)
	if after.fds > before.fds {
		t.Errorf("file descriptors leaked: %d before, %d after", before.fds, after.fds)
	}
	if after.goroutines > before.goroutines+2 {
		t.Errorf("goroutines leaked: %d before, %d after", before.goroutines, after.goroutines)
	}
	if after.heap > before.heap+32<<20 {
		t.Errorf("live heap grew from %d to %d MB", before.heap>>20, after.heap>>20)
	}
	if grown := after.rssKB - before.rssKB; grown > 128<<10 && !raceEnabled {
		t.Errorf("RSS grew by %d MB", grown>>10)
	}
}

// Bearer tokens are not stored: thousands of handshakes leave the heap as
// it was (stored tokens cost about 650 bytes each).
func TestHandshakesHoldNoMemory(t *testing.T) {
	ts := startServer(t, flightsql.Options{Users: map[string]string{"alice": "pw"}})
	cl := ts.clientFrom(t, "127.0.0.1")
	handshake := func() {
		if _, err := cl.Client.AuthenticateBasicToken(context.Background(), "alice", "pw"); err != nil {
			t.Fatal(err)
		}
	}
	handshake()
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	const n = 5000
	for range n {
		handshake()
	}
	after := heap()
	t.Logf("%d handshakes: heap %d -> %d KB", n, before>>10, after>>10)
	if after > before+n*100 {
		t.Fatalf("heap grew by %d bytes over %d handshakes", after-before, n)
	}
}
