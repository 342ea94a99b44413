package flightsql_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// testServer is a flightd on a loopback port over a fresh warehouse, with
// a checked allocator that must be back at zero when the test ends.
type testServer struct {
	URI string
	Mem *memory.CheckedAllocator
	Dir string
}

// startServer starts the server; configure adjusts the engine's settings.
func startServer(t testing.TB, opts flightsql.Options, configure ...func(*engine.Config)) *testServer {
	t.Helper()
	return startServerLimits(t, flightsql.Limits{}, 0, opts, configure...)
}

// startServerLimits starts a server with limits, accepting at most
// maxConns connections at once (0: unlimited).
func startServerLimits(t testing.TB, limits flightsql.Limits, maxConns int, opts flightsql.Options, configure ...func(*engine.Config)) *testServer {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	dir := t.TempDir()
	ctx := context.Background()
	cfg := engine.Config{Mem: mem, Root: dir, SpillDir: t.TempDir()}
	for _, f := range configure {
		f(&cfg)
	}
	eng, err := engine.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := flightsql.NewServer(eng, limits)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := flightsql.NewFlightServer(srv, opts)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := flightsql.Listen("127.0.0.1:0", maxConns)
	if err != nil {
		t.Fatal(err)
	}
	fs.InitListener(lis)
	done := make(chan error, 1)
	go func() { done <- fs.Serve() }()
	t.Cleanup(func() {
		fs.Shutdown()
		if err := <-done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
		srv.Close()
		if err := eng.Close(); err != nil {
			t.Errorf("close engine: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	scheme := "grpc://"
	if opts.TLSCertFile != "" {
		scheme = "grpc+tls://"
	}
	return &testServer{URI: scheme + lis.Addr().String(), Mem: mem, Dir: dir}
}

// connect opens an ADBC Flight SQL connection with its own checked
// allocator.
func (ts *testServer) connect(t testing.TB, opts map[string]string) adbc.Connection {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	all := map[string]string{adbc.OptionKeyURI: ts.URI}
	for k, v := range opts {
		all[k] = v
	}
	db, err := adbcflightsql.NewDriver(mem).NewDatabase(all)
	if err != nil {
		t.Fatal(err)
	}
	cnxn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cnxn.Close(); err != nil {
			t.Errorf("close connection: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("close database: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	return cnxn
}

// rawClient is an arrow-go Flight SQL client (below ADBC) with its own
// checked allocator; both are closed and checked when the test ends.
// opts add to the insecure transport.
func (ts *testServer) rawClient(t testing.TB, opts ...grpc.DialOption) (*arrowflightsql.Client, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cl, err := arrowflightsql.NewClient(strings.TrimPrefix(ts.URI, "grpc://"), nil, nil,
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	cl.Alloc = mem
	t.Cleanup(func() {
		if err := cl.Close(); err != nil {
			t.Errorf("close client: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	return cl, mem
}

func mustExec(t testing.TB, cnxn adbc.Connection, query string) int64 {
	t.Helper()
	n, err := tryExec(cnxn, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func tryExec(cnxn adbc.Connection, query string) (int64, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		return 0, err
	}
	return stmt.ExecuteUpdate(context.Background())
}

// query runs a query and renders its rows as strings, in result order.
func query(t testing.TB, cnxn adbc.Connection, q string) [][]string {
	t.Helper()
	rows, err := tryQuery(cnxn, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

func tryQuery(cnxn adbc.Connection, q string) ([][]string, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return nil, err
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return readRows(rdr)
}

func readRows(rdr array.RecordReader) ([][]string, error) {
	var out [][]string
	for rdr.Next() {
		out = append(out, batchRows(rdr.RecordBatch())...)
	}
	return out, rdr.Err()
}

func batchRows(b arrow.RecordBatch) [][]string {
	var out [][]string
	for r := 0; r < int(b.NumRows()); r++ {
		row := make([]string, b.NumCols())
		for c := range row {
			col := b.Column(c)
			if col.IsNull(r) {
				row[c] = "NULL"
			} else {
				row[c] = col.ValueStr(r)
			}
		}
		out = append(out, row)
	}
	return out
}

// prepare prepares q on cnxn; the caller closes the statement.
func prepare(t testing.TB, cnxn adbc.Connection, q string) adbc.Statement {
	t.Helper()
	st, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetSqlQuery(q); err != nil {
		st.Close()
		t.Fatal(err)
	}
	if err := st.Prepare(context.Background()); err != nil {
		st.Close()
		t.Fatalf("prepare %s: %v", q, err)
	}
	return st
}

// queryBound runs a prepared query with params bound (released here) and
// returns its rows.
func queryBound(t testing.TB, st adbc.Statement, params arrow.RecordBatch) [][]string {
	t.Helper()
	ctx := context.Background()
	err := st.Bind(ctx, params)
	params.Release()
	if err != nil {
		t.Fatal(err)
	}
	rdr, _, err := st.ExecuteQuery(ctx)
	if err != nil {
		t.Fatalf("%s: %v", params.Schema(), err)
	}
	defer rdr.Release()
	rows, err := readRows(rdr)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
