package flightsql_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// fetchAll runs a query through a raw client and counts its rows.
func fetchAll(ctx context.Context, cl *arrowflightsql.Client, info *flight.FlightInfo) (int64, error) {
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	return n, rdr.Err()
}

// One connection (a client, without authentication) filling its prepared
// statement and transaction quotas leaves another connection its own.
func TestPerClientLimits(t *testing.T) {
	ctx := context.Background()
	ts := startServerLimits(t, flightsql.Limits{MaxPreparedStatements: 20, MaxTransactions: 5}, 0, flightsql.Options{})
	greedy, _ := ts.rawClient(t)
	other, _ := ts.rawClient(t)

	var stmts []*arrowflightsql.PreparedStatement
	for range 20 {
		p, err := greedy.Prepare(ctx, "SELECT 1")
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, p)
	}
	_, err := greedy.Prepare(ctx, "SELECT 1")
	wantCode(t, "21st prepared statement", err, codes.ResourceExhausted)
	var txns []*arrowflightsql.Txn
	for range 5 {
		tx, err := greedy.BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		txns = append(txns, tx)
	}
	_, err = greedy.BeginTransaction(ctx)
	wantCode(t, "6th transaction", err, codes.ResourceExhausted)

	// The other client is not affected: plain queries, prepared statements
	// and transactions all work.
	info, err := other.Execute(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := fetchAll(ctx, other, info); err != nil || n != 1 {
		t.Fatalf("plain query of another client: %d rows, %v", n, err)
	}
	p, err := other.Prepare(ctx, "SELECT 1")
	if err != nil {
		t.Fatalf("prepare on another client: %v", err)
	}
	tx, err := other.BeginTransaction(ctx)
	if err != nil {
		t.Fatalf("begin on another client: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Closing frees the quota.
	if err := stmts[0].Close(ctx); err != nil {
		t.Fatal(err)
	}
	p, err = greedy.Prepare(ctx, "SELECT 1")
	if err != nil {
		t.Fatalf("prepare after closing one: %v", err)
	}
	stmts[0] = p
	if err := txns[0].Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if txns[0], err = greedy.BeginTransaction(ctx); err != nil {
		t.Fatalf("begin after committing one: %v", err)
	}
	for _, p := range stmts {
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, tx := range txns {
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Unused prepared statements close and unused transactions roll back
// after their idle time; ones in use stay.
func TestIdleStatementsAndTransactionsExpire(t *testing.T) {
	ctx := context.Background()
	const idle = time.Second
	ts := startServerLimits(t, flightsql.Limits{PreparedIdle: idle, TxnIdle: idle}, 0, flightsql.Options{})
	cl, _ := ts.rawClient(t)
	for _, q := range []string{"CREATE TABLE t (k BIGINT)", "INSERT INTO t VALUES (0)"} {
		if _, err := cl.ExecuteUpdate(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	abandoned, err := cl.Prepare(ctx, "SELECT k FROM t")
	if err != nil {
		t.Fatal(err)
	}
	used, err := cl.Prepare(ctx, "SELECT k FROM t")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := cl.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecuteUpdate(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	// Use one statement every idle/10 for 3 idle periods.
	for deadline := time.Now().Add(3 * idle); time.Now().Before(deadline); time.Sleep(idle / 10) {
		if _, err := used.Execute(ctx); err != nil {
			t.Fatalf("statement in use was closed: %v", err)
		}
	}
	_, err = abandoned.Execute(ctx)
	wantCode(t, "abandoned prepared statement", err, codes.NotFound)
	wantCode(t, "commit of abandoned transaction", tx.Commit(ctx), codes.NotFound)
	info, err := cl.Execute(ctx, "SELECT k FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := fetchAll(ctx, cl, info); err != nil || n != 1 {
		t.Fatalf("rolled-back insert: %d rows visible, %v", n, err)
	}
	if err := used.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// A connection that never completes its handshake is closed after the
// handshake timeout, an idle gRPC connection after MaxConnectionIdle.
func TestIdleConnectionsClose(t *testing.T) {
	ts := startServerLimits(t, flightsql.Limits{}, 0, flightsql.Options{
		HandshakeTimeout: 500 * time.Millisecond, MaxConnectionIdle: 500 * time.Millisecond,
	})
	addr := strings.TrimPrefix(ts.URI, "grpc://")

	// Silent raw TCP: closed by the server, so the read ends.
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, raw); err != nil {
		t.Fatalf("silent connection not closed by the server: %v", err)
	}

	// A gRPC connection that made one call and then idles gets a GOAWAY.
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stream, err := flight.NewFlightServiceClient(cc).ListActions(context.Background(), &flight.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for s := cc.GetState(); s != connectivity.Idle; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("idle gRPC connection still %v", s)
		}
	}

}

// Connections beyond the limit are closed at once, not queued.
func TestConnectionLimit(t *testing.T) {
	ts := startServerLimits(t, flightsql.Limits{}, 3, flightsql.Options{}) // handshake timeout: 10 s
	addr := strings.TrimPrefix(ts.URI, "grpc://")
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	// The server closes the fourth well before the others' handshake
	// timeout would free a slot.
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(flightsql.DefaultHandshakeTimeout / 2))
	if _, err := io.Copy(io.Discard, extra); err != nil {
		t.Fatalf("connection over the limit not closed: %v", err)
	}
}

// Bound parameters count against their client's byte budget: one client
// at its budget cannot bind more, another still can, and closing a
// statement gives its bytes back.
func TestParameterBytesPerClient(t *testing.T) {
	ctx := context.Background()
	ts := startServerLimits(t, flightsql.Limits{MaxParamBytes: 1 << 20}, 0, flightsql.Options{})
	a, memA := ts.rawClient(t)
	b, memB := ts.rawClient(t)
	if _, err := a.ExecuteUpdate(ctx, "CREATE TABLE t (s STRING)"); err != nil {
		t.Fatal(err)
	}
	// bind prepares a statement and binds one string of n bytes to it.
	bind := func(cl *arrowflightsql.Client, mem memory.Allocator, n int) (*arrowflightsql.PreparedStatement, error) {
		p, err := cl.Prepare(ctx, "SELECT * FROM t WHERE s = ?")
		if err != nil {
			t.Fatal(err)
		}
		bld := array.NewStringBuilder(mem)
		bld.Append(strings.Repeat("x", n))
		col := bld.NewArray()
		bld.Release()
		rec := array.NewRecordBatch(p.ParameterSchema(), []arrow.Array{col}, 1)
		col.Release()
		p.SetParameters(rec)
		rec.Release()
		_, err = p.Execute(ctx)
		return p, err
	}
	first, err := bind(a, memA, 600<<10)
	if err != nil {
		t.Fatal(err)
	}
	second, err := bind(a, memA, 600<<10)
	wantCode(t, "binding past the client's budget", err, codes.ResourceExhausted)
	other, err := bind(b, memB, 600<<10)
	if err != nil {
		t.Fatalf("another client binds: %v", err)
	}
	big, err := bind(b, memB, 2<<20)
	wantCode(t, "one DoPut past the budget", err, codes.ResourceExhausted)
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Execute(ctx); err != nil {
		t.Fatalf("binding after closing the first: %v", err)
	}
	for _, p := range []*arrowflightsql.PreparedStatement{second, other, big} {
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// createTable1024 creates table t of 1024 BIGINT rows.
func createTable1024(t *testing.T, cl *arrowflightsql.Client) {
	t.Helper()
	var vals []string
	for i := range 32 {
		vals = append(vals, fmt.Sprintf("(%d)", i))
	}
	v := "(VALUES " + strings.Join(vals, ",") + ")"
	for _, q := range []string{"CREATE TABLE t (k BIGINT)", "INSERT INTO t SELECT a.k * 32 + b.k FROM " + v + " AS a(k) CROSS JOIN " + v + " AS b(k)"} {
		if _, err := cl.ExecuteUpdate(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// endless is a query of 1024^3 rows over createTable1024's t: its stream
// blocks on flow control while nobody reads.
const endless = "SELECT a.k FROM t a CROSS JOIN t b CROSS JOIN t c"

// A client running its most queries at once is refused another, while
// other clients run theirs.
func TestRunningQueriesPerClient(t *testing.T) {
	ctx := context.Background()
	ts := startServerLimits(t, flightsql.Limits{MaxRunningQueries: 3}, 0, flightsql.Options{})
	greedy, _ := ts.rawClient(t)
	other, _ := ts.rawClient(t)
	createTable1024(t, greedy)
	info, err := greedy.Execute(ctx, endless)
	if err != nil {
		t.Fatal(err)
	}
	readCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var open []*flight.Reader
	for range 3 {
		rdr, err := greedy.DoGet(readCtx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		if !rdr.Next() {
			t.Fatalf("no first batch: %v", rdr.Err())
		}
		open = append(open, rdr)
	}
	_, err = fetchAll(ctx, greedy, info)
	wantCode(t, "4th running query", err, codes.ResourceExhausted)
	oinfo, err := other.Execute(ctx, "SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := fetchAll(ctx, other, oinfo); err != nil || n != 1 {
		t.Fatalf("another client's query: %d rows, %v", n, err)
	}
	cancel()
	for _, r := range open {
		r.Release()
	}
	// The cancelled streams end on the server soon after.
	sinfo, err := greedy.Execute(ctx, "SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := fetchAll(ctx, greedy, sinfo)
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("query after cancelling the others: %v", err)
		}
	}
}

// A call still running in a transaction keeps it open past its idle time:
// the janitor must not roll back under a running statement.
func TestRunningCallKeepsTransaction(t *testing.T) {
	ctx := context.Background()
	const idle = time.Second
	ts := startServerLimits(t, flightsql.Limits{TxnIdle: idle}, 0, flightsql.Options{})
	cl, _ := ts.rawClient(t)
	createTable1024(t, cl)
	tx, err := cl.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := tx.Execute(ctx, endless)
	if err != nil {
		t.Fatal(err)
	}
	readCtx, cancel := context.WithCancel(ctx)
	rdr, err := cl.DoGet(readCtx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	time.Sleep(3 * idle)
	if _, err := tx.ExecuteUpdate(ctx, "INSERT INTO t VALUES (-1)"); err != nil {
		t.Fatalf("transaction of a running stream was rolled back: %v", err)
	}
	cancel()
	rdr.Release()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestJobLimitOverFlight: a continuous job past engine.Config.MaxJobs
// (flightd -max-jobs) is ResourceExhausted with SQLSTATE 53400 and says
// which limit and flag.
func TestJobLimitOverFlight(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, flightsql.Options{}, func(c *engine.Config) { c.MaxJobs = 1 })
	cnxn := ts.connect(t, nil)
	for _, q := range []string{
		"CREATE TABLE s (k BIGINT NOT NULL, PRIMARY KEY (k) NOT ENFORCED)",
		"CREATE TABLE t1 (k BIGINT NOT NULL, PRIMARY KEY (k) NOT ENFORCED)",
		"CREATE TABLE t2 (k BIGINT NOT NULL, PRIMARY KEY (k) NOT ENFORCED)",
		"INSERT INTO t1 SELECT k FROM s /*+ OPTIONS('scan.mode'='latest-full') */",
	} {
		mustExec(t, cnxn, q)
	}
	cl, _ := ts.rawClient(t)
	_, err := cl.ExecuteUpdate(ctx, "INSERT INTO t2 SELECT k FROM s /*+ OPTIONS('scan.mode'='latest-full') */")
	wantCode(t, "a second job past -max-jobs 1", err, codes.ResourceExhausted)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "-max-jobs 1") || !strings.HasSuffix(msg, "[SQLSTATE 53400]") {
		t.Fatalf("refused job: %q, want the limit, its flag and SQLSTATE 53400", msg)
	}
}

// TestPreparedPlansBudget: what prepared statements hold counts their plans,
// estimated from their SQL, against the client's -max-param-bytes and the
// server's -max-prepared-memory (ResourceExhausted, SQLSTATE 53200, naming
// the limit). Before, only their number was bounded: 10 statements with a
// 200,000-item IN list each took a server from 192 to 907 MB.
func TestPreparedPlansBudget(t *testing.T) {
	ctx := context.Background()
	ts := startServerLimits(t, flightsql.Limits{MaxParamBytes: 64 << 20, MaxPreparedMemory: 100 << 20}, 0, flightsql.Options{})
	a, _ := ts.rawClient(t)
	b, _ := ts.rawClient(t)
	if _, err := a.ExecuteUpdate(ctx, "CREATE TABLE t (k BIGINT)"); err != nil {
		t.Fatal(err)
	}
	items := make([]string, 100_000)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	// About 30 MB each (200,000 tokens).
	q := func(i int) string {
		return fmt.Sprintf("SELECT k FROM t WHERE k IN (%s) AND k <> %d", strings.Join(items, ","), i)
	}
	tokens, err := engine.CheckSize(q(0), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if est := engine.PlanBytes(q(0), tokens); est < 25<<20 || est > 35<<20 {
		t.Fatalf("estimate %d bytes, want about 30 MB", est)
	}
	prepare := func(cl *arrowflightsql.Client, i int) *arrowflightsql.PreparedStatement {
		t.Helper()
		p, err := cl.Prepare(ctx, q(i))
		if err != nil {
			t.Fatalf("prepare %d: %v", i, err)
		}
		return p
	}
	refused := func(cl *arrowflightsql.Client, i int, limit string) {
		t.Helper()
		p, err := cl.Prepare(ctx, q(i))
		if err == nil {
			_ = p.Close(ctx)
		}
		wantCode(t, "prepare past "+limit, err, codes.ResourceExhausted)
		if msg := err.Error(); !strings.Contains(msg, "SQLSTATE 53200") || !strings.Contains(msg, limit) {
			t.Fatalf("prepare past %s: %v", limit, err)
		}
	}
	a1, a2 := prepare(a, 1), prepare(a, 2)
	refused(a, 3, "-max-param-bytes")
	b1 := prepare(b, 4) // 90 MB held in all
	refused(b, 5, "-max-prepared-memory")
	if err := a1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b2 := prepare(b, 6)
	// A refused statement held nothing: a's second slot is free again.
	if err := a2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	a3 := prepare(a, 7)
	for _, p := range []*arrowflightsql.PreparedStatement{a3, b1, b2} {
		if _, err := p.Execute(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
