package flightsql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/engine"
)

// TestPlannedAtDoGet: a query's DoGet runs the statement its GetFlightInfo
// planned (the plan kept for the ticket is taken), and what changed between
// the two calls is seen as if the query were planned again at DoGet: rows
// committed, a column added, the table dropped and created again, a view
// redefined. A ticket redeemed again is planned again.
func TestPlannedAtDoGet(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	eng, err := engine.Open(ctx, engine.Config{Mem: mem, Root: t.TempDir(), SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(eng, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := NewFlightServer(srv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := Listen("127.0.0.1:0", 0)
	if err != nil {
		t.Fatal(err)
	}
	fs.InitListener(lis)
	served := make(chan error, 1)
	go func() { served <- fs.Serve() }()
	cmem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cl, err := arrowflightsql.NewClient(lis.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	cl.Alloc = cmem
	t.Cleanup(func() {
		if err := cl.Close(); err != nil {
			t.Error(err)
		}
		fs.Shutdown()
		if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Error(err)
		}
		srv.Close()
		if err := eng.Close(); err != nil {
			t.Error(err)
		}
		cmem.AssertSize(t, 0)
		mem.AssertSize(t, 0)
	})

	exec := func(q string) {
		t.Helper()
		if _, err := cl.ExecuteUpdate(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	plan := func(q string) *flight.FlightInfo {
		t.Helper()
		info, err := cl.Execute(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return info
	}
	// read fetches the info's one endpoint: its column names, then its rows.
	read := func(info *flight.FlightInfo) []string {
		t.Helper()
		rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		var names []string
		for _, f := range rdr.Schema().Fields() {
			names = append(names, f.Name)
		}
		var rows []string
		for rdr.Next() {
			b := rdr.RecordBatch()
			for i := range int(b.NumRows()) {
				var cells []string
				for _, c := range b.Columns() {
					cells = append(cells, c.ValueStr(i))
				}
				rows = append(rows, strings.Join(cells, "|"))
			}
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(rows)
		return append([]string{strings.Join(names, ",")}, rows...)
	}
	want := func(what string, got []string, w ...string) {
		t.Helper()
		if !slices.Equal(got, w) {
			t.Fatalf("%s: got %q, want %q", what, got, w)
		}
	}
	kept := func(what string, n int) {
		t.Helper()
		if got := srv.planned.len(); got != n {
			t.Fatalf("%s: %d plans kept, want %d", what, got, n)
		}
	}

	exec("CREATE TABLE t (k INT, v STRING)")
	exec("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
	exec("CREATE VIEW w AS SELECT k FROM t WHERE k = 1")

	info := plan("SELECT * FROM t")
	kept("after GetFlightInfo", 1)
	want("unchanged", read(info), "k,v", "1|a", "2|b")
	kept("after DoGet", 0)
	want("the ticket again", read(info), "k,v", "1|a", "2|b")

	info = plan("SELECT * FROM t")
	exec("INSERT INTO t VALUES (3, 'c')")
	want("rows committed", read(info), "k,v", "1|a", "2|b", "3|c")

	info = plan("SELECT * FROM t")
	exec("ALTER TABLE t ADD COLUMN x INT")
	want("a column added", read(info), "k,v,x", "1|a|(null)", "2|b|(null)", "3|c|(null)")

	info = plan("SELECT * FROM w")
	exec("CREATE OR REPLACE VIEW w AS SELECT k FROM t WHERE k = 2")
	want("the view redefined", read(info), "k", "2")

	info = plan("SELECT * FROM t")
	exec("DROP VIEW w")
	exec("DROP TABLE t")
	exec("CREATE TABLE t (k INT, v STRING)")
	exec("INSERT INTO t VALUES (9, 'z')")
	want("the table dropped and created again", read(info), "k,v", "9|z")

	// Plans of tickets never fetched are not kept without bound.
	for i := range maxPlanned + 10 {
		plan(fmt.Sprintf("SELECT %d", i))
	}
	kept("after many unfetched", maxPlanned)
}
