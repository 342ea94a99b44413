package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/flightd/flightd/internal/flighttest"
)

// TestAdvertisedEndpoints runs two flightd processes with -advertise on one
// warehouse (and a third without). A result split over endpoints on one
// node names both nodes' locations; a client reading every endpoint at the
// node it names, on parallel goroutines, gets exactly the one-endpoint
// multiset, from either node. A single endpoint names its own node, the
// node without -advertise names none, and a node killed with SIGKILL drops
// out of the others' endpoints once its heartbeats stop.
func TestAdvertisedEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	bin, data := buildFlightd(t), t.TempDir()
	var nodes []*process
	var locs []string
	for range 2 {
		addr := freeAddr(t)
		nodes = append(nodes, start(t, bin, data, "-addr", addr, "-advertise", addr, "-min-endpoint-bytes", "1"))
		locs = append(locs, "grpc+tcp://"+addr)
	}
	plain := start(t, bin, data, "-min-endpoint-bytes", "1")
	whole := flightClient(t, nodes[0].addr, 0)
	if _, err := whole.ExecuteUpdate(ctx, `CREATE TABLE f (a BIGINT, s STRING) WITH ('write-only'='true')`); err != nil {
		t.Fatal(err)
	}
	for range 6 + rng.IntN(6) {
		var vals []string
		for range 1 + rng.IntN(50) {
			vals = append(vals, fmt.Sprintf("(%d, 's%d')", rng.IntN(100), rng.IntN(10)))
		}
		if _, err := whole.ExecuteUpdate(ctx, `INSERT INTO f VALUES `+strings.Join(vals, ", ")); err != nil {
			t.Fatal(err)
		}
	}
	const q = `SELECT a, s FROM f`
	info, err := whole.Execute(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 1 || info.Endpoint[0].Location[0].Uri != locs[0] {
		t.Fatalf("one endpoint naming %s expected: %v", locs[0], info.Endpoint)
	}
	want := readAt(t, ctx, info)
	allLocs := slices.Sorted(slices.Values(locs))
	for n := range nodes {
		split := flightClient(t, nodes[n].addr, 4)
		// The other node shows up at this one's next heartbeat.
		deadline := time.Now().Add(time.Minute)
		for {
			info, err := split.Execute(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			named := endpointLocations(info)
			if len(info.Endpoint) > 1 && slices.Equal(named, allLocs) {
				if info.Endpoint[0].Location[0].Uri != locs[n] {
					t.Fatalf("node %d: first endpoint at %v, want its own %s", n, info.Endpoint[0].Location, locs[n])
				}
				if got := readAt(t, ctx, info); !slices.Equal(got, want) {
					t.Fatalf("node %d: %d endpoints read %d rows, one endpoint %d", n, len(info.Endpoint), len(got), len(want))
				}
				t.Logf("node %d: %d endpoints over %v, %d rows", n, len(info.Endpoint), named, len(want))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: endpoints name %v, want %v", n, named, allLocs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	info, err = flightClient(t, plain.addr, 4).Execute(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if named := endpointLocations(info); len(info.Endpoint) < 2 || len(named) != 0 {
		t.Fatalf("node without -advertise: %d endpoints naming %v, want several naming none", len(info.Endpoint), named)
	}
	nodes[1].kill(t)
	_ = nodes[1].cmd.Wait()
	split := flightClient(t, nodes[0].addr, 4)
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := split.Execute(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if named := endpointLocations(info); slices.Equal(named, locs[:1]) {
			if got := readAt(t, ctx, info); !slices.Equal(got, want) {
				t.Fatalf("after the kill: %d rows, want %d", len(got), len(want))
			}
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("a minute after node 1 died, endpoints name %v", named)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, p := range []*process{nodes[0], plain} {
		if err := p.terminate(t); err != nil {
			t.Fatalf("flightd did not exit cleanly: %v", err)
		}
	}
}

// freeAddr is a loopback address with a port free at the time.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// flightClient is a raw Flight SQL client of addr (checked allocator,
// session cookies) whose session asks for up to n endpoints (0: unset).
func flightClient(t *testing.T, addr string, n int) *arrowflightsql.Client {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cl, err := arrowflightsql.NewClient(addr, nil, []flight.ClientMiddleware{flight.NewClientCookieMiddleware()},
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	cl.Alloc = mem
	t.Cleanup(func() {
		_ = cl.Close()
		mem.AssertSize(t, 0)
	})
	if n > 0 {
		if err := flighttest.SetSessionOption(context.Background(), cl, "flightd.max_endpoints", int64(n)); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// endpointLocations is the distinct locations info's endpoints name, sorted.
func endpointLocations(info *flight.FlightInfo) []string {
	var out []string
	for _, ep := range info.Endpoint {
		for _, l := range ep.Location {
			out = append(out, l.Uri)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// readAt reads every endpoint of info on its own goroutine, through a new
// client of the node its location names, and returns the rows sorted.
func readAt(t *testing.T, ctx context.Context, info *flight.FlightInfo) []string {
	t.Helper()
	var (
		mu   sync.Mutex
		rows []string
		wg   sync.WaitGroup
	)
	for i, ep := range info.Endpoint {
		if len(ep.Location) != 1 {
			t.Fatalf("endpoint %d names %d locations", i, len(ep.Location))
		}
		cl := flightClient(t, strings.TrimPrefix(ep.Location[0].Uri, "grpc+tcp://"), 0)
		wg.Go(func() {
			rdr, err := cl.DoGet(ctx, ep.Ticket)
			if err != nil {
				t.Errorf("endpoint %d at %s: %v", i, ep.Location[0].Uri, err)
				return
			}
			defer rdr.Release()
			for rdr.Next() {
				b := rdr.RecordBatch()
				for r := range int(b.NumRows()) {
					mu.Lock()
					rows = append(rows, b.Column(0).ValueStr(r)+"|"+b.Column(1).ValueStr(r))
					mu.Unlock()
				}
			}
			if err := rdr.Err(); err != nil {
				t.Errorf("endpoint %d at %s: %v", i, ep.Location[0].Uri, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	slices.Sort(rows)
	return rows
}

// TestADBCPartitionsAcrossNodes: two nodes advertising on one bucket; the
// ADBC driver's ExecutePartitions on node 0 returns partitions naming both
// nodes, and ReadPartition follows each to the node it names: with node 0
// killed, a connection opened to it still reads node 1's partitions, and
// every partition read while both lived gives the whole answer.
func TestADBCPartitionsAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ctx := context.Background()
	data, flags := s3Warehouse(t)
	bin := buildFlightd(t)
	var nodes []*process
	var locs []string
	for range 2 {
		addr := freeAddr(t)
		nodes = append(nodes, start(t, bin, data, append([]string{"-addr", addr, "-advertise", addr, "-min-endpoint-bytes", "1"}, flags...)...))
		locs = append(locs, "grpc+tcp://"+addr)
	}
	// Session options live in the session its cookie names.
	cnxn, closeConn := nodes[0].connectWith(t, map[string]string{adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled})
	defer closeConn()
	for _, q := range []string{
		`CREATE TABLE f (a BIGINT) WITH ('write-only'='true')`,
		`INSERT INTO f VALUES (1), (2), (3)`, `INSERT INTO f VALUES (4), (5)`,
		`INSERT INTO f VALUES (6)`, `INSERT INTO f VALUES (7), (8), (9), (10)`,
	} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const q = `SELECT a FROM f`
	want := rowsOf(t, cnxn, q, "")
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbcflightsql.OptionSessionOptionPrefix+"flightd.max_endpoints", "4"); err != nil {
		t.Fatal(err)
	}
	// The other node shows up at this one's next heartbeat.
	var parts map[string][][]byte // location -> partitions
	for deadline := time.Now().Add(time.Minute); len(parts) < 2; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("partitions name %d nodes, want 2", len(parts))
		}
		parts = partitionsByNode(t, ctx, cnxn, q)
	}
	read := func(reader adbc.Connection, part []byte) ([]string, error) {
		rdr, err := reader.ReadPartition(ctx, part)
		if err != nil {
			return nil, err
		}
		defer rdr.Release()
		var rows []string
		for rdr.Next() {
			col := rdr.RecordBatch().Column(0)
			for i := range col.Len() {
				rows = append(rows, col.ValueStr(i))
			}
		}
		return rows, rdr.Err()
	}
	t.Logf("%d partitions at node 0, %d at node 1", len(parts[locs[0]]), len(parts[locs[1]]))
	reader, closeReader := nodes[0].connect(t)
	defer closeReader()
	var got []string
	for _, loc := range locs {
		for _, p := range parts[loc] {
			rows, err := read(reader, p)
			if err != nil {
				t.Fatalf("partition at %s: %v", loc, err)
			}
			got = append(got, rows...)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("partitions read %v, want %v", got, want)
	}
	nodes[0].kill(t)
	_ = nodes[0].cmd.Wait()
	for _, p := range parts[locs[1]] {
		if _, err := read(reader, p); err != nil {
			t.Errorf("node 0 killed: node 1's partition through a connection to node 0: %v", err)
		}
	}
	if _, err := read(reader, parts[locs[0]][0]); err == nil {
		t.Error("node 0 killed: its partition still read")
	}
}

// partitionsByNode runs q with ExecutePartitions and groups the partitions
// by the location their endpoint names.
func partitionsByNode(t *testing.T, ctx context.Context, cnxn adbc.Connection, q string) map[string][][]byte {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		t.Fatal(err)
	}
	_, parts, _, err := stmt.ExecutePartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]byte{}
	for _, p := range parts.PartitionIDs {
		var info flight.FlightInfo
		if err := proto.Unmarshal(p, &info); err != nil || len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 1 {
			t.Fatalf("partition %x: %v (%v)", p, &info, err)
		}
		loc := info.Endpoint[0].Location[0].Uri
		out[loc] = append(out[loc], p)
	}
	return out
}
