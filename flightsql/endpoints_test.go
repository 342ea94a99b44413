package flightsql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/internal/flighttest"
)

// splitLimits let results of a few rows split: every byte counts.
var splitLimits = flightsql.Limits{MinEndpointBytes: 1}

// splitClient is a raw Flight SQL client (with its own checked allocator)
// whose session asks for up to n endpoints per result.
func (ts *testServer) splitClient(t testing.TB, ctx context.Context, n int) *arrowflightsql.Client {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cl, err := arrowflightsql.NewClient(strings.TrimPrefix(ts.URI, "grpc://"), nil,
		[]flight.ClientMiddleware{flight.NewClientCookieMiddleware()}, grpc.WithTransportCredentials(insecure.NewCredentials()))
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
	if err := flighttest.SetSessionOption(ctx, cl, "flightd.max_endpoints", int64(n)); err != nil {
		t.Fatal(err)
	}
	return cl
}

// readEndpoints reads every endpoint of info on its own goroutine, each
// through its own client from clients (round robin), and returns all rows
// sorted.
func readEndpoints(ctx context.Context, clients []*arrowflightsql.Client, info *flight.FlightInfo) ([]string, error) {
	var (
		mu   sync.Mutex
		rows []string
		errs = make([]error, len(info.Endpoint))
		wg   sync.WaitGroup
	)
	for i, ep := range info.Endpoint {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := readTicket(ctx, clients[i%len(clients)], ep.Ticket)
			if err != nil {
				errs[i] = fmt.Errorf("endpoint %d of %d: %w", i, len(info.Endpoint), err)
				return
			}
			mu.Lock()
			rows = append(rows, got...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(rows)
	return rows, nil
}

func readTicket(ctx context.Context, cl *arrowflightsql.Client, tkt *flight.Ticket) ([]string, error) {
	rdr, err := cl.DoGet(ctx, tkt)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		for _, r := range batchRows(rdr.RecordBatch()) {
			out = append(out, strings.Join(r, "|"))
		}
	}
	return out, rdr.Err()
}

// splitTables creates tables of many files at random: an append table, a
// partitioned append table, a bucketed primary-key table updated in
// several commits, and a small dimension table.
func splitTables(t *testing.T, ctx context.Context, cl *arrowflightsql.Client, rng *rand.Rand) {
	t.Helper()
	exec := func(q string) {
		t.Helper()
		if _, err := cl.ExecuteUpdate(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Written only: compaction would merge the small files into one.
	exec("CREATE TABLE f (a BIGINT, b INT, s STRING) WITH ('write-only'='true')")
	exec("CREATE TABLE p (a BIGINT, d INT, s STRING) PARTITIONED BY (d) WITH ('write-only'='true')")
	exec("CREATE TABLE k (id BIGINT NOT NULL, v INT, s STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket'='4')")
	exec("CREATE TABLE dim (b INT, name STRING)")
	exec("INSERT INTO dim VALUES (0, 'zero'), (1, 'one'), (2, 'two'), (3, NULL), (NULL, 'null')")
	val := func() string {
		if rng.IntN(8) == 0 {
			return "NULL"
		}
		return fmt.Sprint(rng.IntN(6))
	}
	for range 3 + rng.IntN(8) {
		var f, p, k []string
		for range 1 + rng.IntN(40) {
			f = append(f, fmt.Sprintf("(%d, %s, 's%d')", rng.Int64N(1000), val(), rng.IntN(20)))
			p = append(p, fmt.Sprintf("(%d, %d, 's%d')", rng.Int64N(1000), rng.IntN(3), rng.IntN(20)))
			k = append(k, fmt.Sprintf("(%d, %s, 's%d')", rng.Int64N(60), val(), rng.IntN(20)))
		}
		exec("INSERT INTO f VALUES " + strings.Join(f, ", "))
		exec("INSERT INTO p VALUES " + strings.Join(p, ", "))
		exec("INSERT INTO k VALUES " + strings.Join(dedupKeys(k), ", "))
	}
	exec("DELETE FROM k WHERE id % 7 = 0")
}

// dedupKeys keeps the last row of each key of k's rows (one INSERT may
// not write a key twice).
func dedupKeys(rows []string) []string {
	seen := map[string]int{}
	var out []string
	for _, r := range rows {
		key := strings.SplitN(r, ",", 2)[0]
		if i, ok := seen[key]; ok {
			out[i] = r
			continue
		}
		seen[key] = len(out)
		out = append(out, r)
	}
	return out
}

// splitQueries are queries of the shapes that split (filters and
// projections over a scan, the probe side of joins keeping left rows one
// by one) and of shapes that must not (true: may split).
func splitQueries(rng *rand.Rand) []struct {
	sql   string
	split bool
} {
	c := func() int { return rng.IntN(6) }
	return []struct {
		sql   string
		split bool
	}{
		{"SELECT * FROM f", true},
		{fmt.Sprintf("SELECT a + b, upper(s) FROM f WHERE b > %d OR s LIKE 's1%%'", c()), true},
		{fmt.Sprintf("SELECT a, s FROM p WHERE d = %d OR a > %d", rng.IntN(3), rng.IntN(1000)), true},
		{"SELECT * FROM k", true},
		{fmt.Sprintf("SELECT id, v * 2 FROM k WHERE v <> %d", c()), true},
		{"SELECT f.a, dim.name FROM f JOIN dim ON f.b = dim.b", true},
		{"SELECT f.a, dim.name FROM f LEFT JOIN dim ON f.b = dim.b", true},
		{"SELECT k.id FROM k WHERE v IN (SELECT b FROM dim WHERE name IS NOT NULL)", true},
		{"SELECT a FROM f WHERE b NOT IN (SELECT b FROM dim)", true},
		{"SELECT a FROM f WHERE NOT EXISTS (SELECT 1 FROM dim WHERE dim.b = f.b)", true},
		{fmt.Sprintf("SELECT k.id, f.a FROM f JOIN k ON f.b = k.v WHERE k.id < %d", 10+rng.IntN(50)), true},
		{"SELECT f.a, dim.name FROM dim RIGHT JOIN f ON f.b = dim.b", true},
		{"SELECT f.a, k.id FROM dim JOIN f ON f.b = dim.b JOIN k ON k.v = dim.b AND k.id > f.a % 50", true},
		{"SELECT b, count(*), sum(a) FROM f GROUP BY b", false},
		{"SELECT count(*) FROM k", false},
		{"SELECT a FROM f ORDER BY a, b, s", false},
		{"SELECT a, s FROM f LIMIT 100000", false},
		{"SELECT DISTINCT s FROM p", false},
		{"SELECT f.a, dim.name FROM f FULL JOIN dim ON f.b = dim.b", false},
		{"SELECT b FROM f UNION ALL SELECT v FROM k", false},
		{"SELECT id, row_number() OVER (PARTITION BY v ORDER BY id) FROM k", false},
	}
}

// A client reading all endpoints of a split result on parallel threads,
// through several clients, gets exactly the rows of the one-endpoint
// result, for seeded random tables of many files and queries of every
// shape; those that must stay whole (orders, aggregations, ...) are one
// endpoint, and the queries that split over tables of several splits do.
func TestSplitEndpointsRandom(t *testing.T) {
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	ts := startServerLimits(t, splitLimits, 0, flightsql.Options{})
	whole, _ := ts.rawClient(t)
	splitTables(t, ctx, whole, rng)
	split := ts.splitClient(t, ctx, 2+rng.IntN(6))
	readers := []*arrowflightsql.Client{whole, split}
	for range 3 {
		readers = append(readers, ts.splitClient(t, ctx, 1))
	}
	for _, q := range splitQueries(rng) {
		info, err := whole.Execute(ctx, q.sql)
		if err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
		if len(info.Endpoint) != 1 {
			t.Fatalf("%s: %d endpoints without asking for more", q.sql, len(info.Endpoint))
		}
		want, err := readEndpoints(ctx, readers[:1], info)
		if err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
		info, err = split.Execute(ctx, q.sql)
		if err != nil {
			t.Fatalf("%s (split): %v", q.sql, err)
		}
		if n := len(info.Endpoint); q.split != (n > 1) {
			t.Errorf("%s: %d endpoints, want split=%v", q.sql, n, q.split)
		}
		if len(info.Endpoint) > 1 && info.Endpoint[0].GetExpirationTime() == nil {
			t.Errorf("%s: split endpoints without an expiration time", q.sql)
		}
		got, err := readEndpoints(ctx, readers, info)
		if err != nil {
			t.Fatalf("%s (split): %v", q.sql, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d endpoints gave %d rows, one endpoint %d:\n%v\nwant\n%v", q.sql, len(info.Endpoint), len(got), len(want), got, want)
		}
		if info.TotalRecords >= 0 && info.TotalRecords != int64(len(want)) {
			t.Errorf("%s: total_records %d, read %d", q.sql, info.TotalRecords, len(want))
		}
		// Prepared without parameters, it splits alike (Python's DB-API
		// prepares every query).
		prep, err := split.Prepare(ctx, q.sql)
		if err != nil {
			t.Fatalf("prepare %s: %v", q.sql, err)
		}
		pinfo, err := prep.Execute(ctx)
		if err != nil {
			t.Fatalf("prepared %s: %v", q.sql, err)
		}
		if len(pinfo.Endpoint) != len(info.Endpoint) {
			t.Errorf("prepared %s: %d endpoints, as a statement %d", q.sql, len(pinfo.Endpoint), len(info.Endpoint))
		}
		if got, err = readEndpoints(ctx, readers, pinfo); err != nil || !slices.Equal(got, want) {
			t.Fatalf("prepared %s: %v, %d rows, want %d", q.sql, err, len(got), len(want))
		}
		if err := prep.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// The ADBC Go driver asks for endpoints with its session option, returns
// one partition per endpoint, and reads them concurrently on connections
// of their own (without the session) into the one-endpoint multiset; a
// Substrait plan of the query splits alike.
func TestSplitEndpointsADBC(t *testing.T) {
	ctx := context.Background()
	ts := startServerLimits(t, splitLimits, 0, flightsql.Options{})
	whole, _ := ts.rawClient(t)
	splitTables(t, ctx, whole, rand.New(rand.NewPCG(1, 2)))
	cnxn := ts.connect(t, map[string]string{adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled})
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbcflightsql.OptionSessionOptionPrefix+"flightd.max_endpoints", "3"); err != nil {
		t.Fatal(err)
	}
	const q = "SELECT id, v, s FROM k WHERE v IS NOT NULL"
	want := query(t, ts.connect(t, nil), q)
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
	if parts.NumPartitions != 3 {
		t.Fatalf("%d partitions, want 3", parts.NumPartitions)
	}
	var (
		mu  sync.Mutex
		got [][]string
		wg  sync.WaitGroup
	)
	for _, p := range parts.PartitionIDs {
		reader := ts.connect(t, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdr, err := reader.ReadPartition(ctx, p)
			if err != nil {
				t.Error(err)
				return
			}
			defer rdr.Release()
			rows, err := readRows(rdr)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, rows...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	key := func(r []string) string { return strings.Join(r, "|") }
	sortRows := func(rs [][]string) {
		slices.SortFunc(rs, func(a, b []string) int { return strings.Compare(key(a), key(b)) })
	}
	sortRows(got)
	sortRows(want)
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("partitions read %v, want %v", got, want)
	}

	// The query as a Substrait plan splits alike.
	plan := explainSubstrait(t, ts.connect(t, nil), q)
	split := ts.splitClient(t, ctx, 3)
	info, err := split.ExecuteSubstrait(ctx, arrowflightsql.SubstraitPlan{Plan: plan, Version: "0.85.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 3 {
		t.Fatalf("Substrait plan: %d endpoints, want 3", len(info.Endpoint))
	}
	rows, err := readEndpoints(ctx, []*arrowflightsql.Client{split, whole}, info)
	if err != nil {
		t.Fatal(err)
	}
	wantRows := make([]string, len(want))
	for i, r := range want {
		wantRows[i] = strings.Join(r, "|")
	}
	if !slices.Equal(rows, wantRows) {
		t.Fatalf("Substrait plan's endpoints read %v, want %v", rows, wantRows)
	}
}

// The endpoints of a split result read the snapshots GetFlightInfo planned
// on: appends, deletes, updates, overwrites, compaction and expiry down to
// one snapshot committed before the DoGets, and while they run, change
// nothing of the answer.
func TestSplitEndpointsSnapshotBound(t *testing.T) {
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	writes := []string{
		"INSERT INTO f VALUES (1, 1, 'new'), (2, 2, 'new')",
		"DELETE FROM f WHERE b = 1",
		"INSERT INTO k VALUES (1, 100, 'upd'), (999, 1, 'new')",
		"DELETE FROM k WHERE v = 2",
		"INSERT OVERWRITE dim VALUES (1, 'uno')",
		"INSERT INTO p VALUES (5, 1, 'new')",
		"CALL sys.compact('default.k')",
		"CALL sys.compact('default.f')",
		// Down to the latest snapshot: the pinned ones are held until
		// the tickets expire.
		"CALL sys.expire_snapshots('default.f', 1, 1)",
		"CALL sys.expire_snapshots('default.k', 1, 1)",
		"CALL sys.expire_snapshots('default.dim', 1, 1)",
		"CALL sys.expire_snapshots('default.p', 1, 1)",
	}
	for _, q := range []string{
		"SELECT * FROM f",
		"SELECT id, v, s FROM k",
		"SELECT f.a, dim.name FROM f LEFT JOIN dim ON f.b = dim.b",
		"SELECT a, s FROM p WHERE d < 2",
	} {
		// Fresh tables: a DELETE rewrites an append table as one file.
		ts := startServerLimits(t, splitLimits, 0, flightsql.Options{})
		whole, _ := ts.rawClient(t)
		splitTables(t, ctx, whole, rng)
		split := ts.splitClient(t, ctx, 4)
		info, err := split.Execute(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(info.Endpoint) < 2 {
			t.Fatalf("%s: %d endpoints", q, len(info.Endpoint))
		}
		// The answer at GetFlightInfo's snapshots: nothing was written since.
		want, err := readEndpoints(ctx, []*arrowflightsql.Client{whole}, info)
		if err != nil {
			t.Fatal(err)
		}
		rng.Shuffle(len(writes), func(i, j int) { writes[i], writes[j] = writes[j], writes[i] })
		done := make(chan error, 1)
		go func() {
			for _, w := range writes {
				if _, err := whole.ExecuteUpdate(ctx, w); err != nil {
					done <- fmt.Errorf("%s: %w", w, err)
					return
				}
			}
			done <- nil
		}()
		got, err := readEndpoints(ctx, []*arrowflightsql.Client{whole, split}, info)
		if err != nil {
			t.Fatalf("%s during writes: %v", q, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: read %d rows during writes, %d before", q, len(got), len(want))
		}
		// And after them all.
		if got, err = readEndpoints(ctx, []*arrowflightsql.Client{split}, info); err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: read %d rows after writes (%v), %d before", q, len(got), err, len(want))
		}
	}
}

// partHandle unwraps the statement handle of an endpoint's ticket.
func partHandle(t *testing.T, ep *flight.FlightEndpoint) []byte {
	t.Helper()
	return statementHandle(t, &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{ep}})
}

// The tickets of a split result are the planning user's, cannot be
// altered (another part, another snapshot, a later expiry), expire, and
// refuse to read a query whose tables or views were replaced since; a
// ticket read twice before it expires reads the same rows.
func TestSplitEndpointTickets(t *testing.T) {
	ts := startServerLimits(t, splitLimits, 0, flightsql.Options{
		Users:  map[string]string{"alice": "a", "bob": "b"},
		Grants: []flightsql.Grant{{User: "alice", Database: "*", Privilege: engine.Admin}, {User: "bob", Database: "*", Privilege: engine.Admin}},
	})
	alice, bob := basic("alice", "a"), basic("bob", "b")
	// Writes through a client of its own: a statement that changes the
	// session (its database) sends a cookie arrow-go's client may apply
	// after the next call started.
	writer, _ := ts.rawClient(t)
	cl := ts.splitClient(t, alice, 4)
	splitTables(t, alice, writer, rand.New(rand.NewPCG(3, 4)))
	if _, err := writer.ExecuteUpdate(alice, "CREATE VIEW v AS SELECT a, s FROM f"); err != nil {
		t.Fatal(err)
	}
	execute := func(q string) *flight.FlightInfo {
		t.Helper()
		info, err := cl.Execute(alice, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(info.Endpoint) < 2 {
			plan, _ := cl.Execute(alice, "EXPLAIN "+q)
			rows, _ := readTicket(alice, cl, plan.Endpoint[0].Ticket)
			t.Fatalf("%s: %d endpoints:\n%s", q, len(info.Endpoint), strings.Join(rows, "\n"))
		}
		return info
	}
	info := execute("SELECT * FROM v")
	ep := info.Endpoint[1]
	first, err := readTicket(alice, cl, ep.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	again, err := readTicket(alice, cl, ep.Ticket)
	slices.Sort(first)
	slices.Sort(again)
	if err != nil || !slices.Equal(first, again) {
		t.Fatalf("replayed ticket: %v, %d rows then %d", err, len(first), len(again))
	}
	_, err = readTicket(bob, cl, ep.Ticket)
	wantCode(t, "bob reads alice's part", err, codes.PermissionDenied)

	// Altered: each of these edits of the signed JSON is refused.
	handle := partHandle(t, ep)
	for _, edit := range [][2]string{{`"part":1`, `"part":2`}, {`"exp":`, `"exp":9`}, {`"s":`, `"s":1`}, {`"user":"alice"`, `"user":"bob"`}} {
		if !strings.Contains(string(handle), edit[0]) {
			t.Fatalf("ticket %q has no %s", handle, edit[0])
		}
		forged := []byte(strings.Replace(string(handle), edit[0], edit[1], 1))
		_, err := readTicket(alice, cl, ticketOf(t, &pb.TicketStatementQuery{StatementHandle: forged}))
		wantCode(t, "ticket edited "+edit[0]+" -> "+edit[1], err, codes.PermissionDenied)
	}

	// The view redefined: the parts would not add up to one result.
	for _, q := range []string{"DROP VIEW v", "CREATE VIEW v AS SELECT a, s FROM f WHERE b = 1"} {
		if _, err := writer.ExecuteUpdate(alice, q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = readTicket(alice, cl, ep.Ticket)
	wantCode(t, "a part of a redefined view", err, codes.Aborted)
	if !strings.Contains(err.Error(), "plan it again") {
		t.Errorf("redefined view: %v", err)
	}

	// The table dropped and created again (its snapshot ids start over).
	info = execute("SELECT a, s FROM f")
	for _, q := range []string{"DROP TABLE f", "CREATE TABLE f (a BIGINT, b INT, s STRING)"} {
		if _, err := writer.ExecuteUpdate(alice, q); err != nil {
			t.Fatal(err)
		}
	}
	for range 12 {
		if _, err := writer.ExecuteUpdate(alice, "INSERT INTO f VALUES (1, 1, 'x')"); err != nil {
			t.Fatal(err)
		}
	}
	_, err = readTicket(alice, cl, info.Endpoint[0].Ticket)
	wantCode(t, "a part of a replaced table", err, codes.Aborted)

}

// A part's ticket is refused once the endpoint's expiration time passed.
func TestSplitEndpointExpiry(t *testing.T) {
	ctx := context.Background()
	limits := splitLimits
	limits.EndpointLifetime = 500 * time.Millisecond
	ts := startServerLimits(t, limits, 0, flightsql.Options{})
	writer, _ := ts.rawClient(t)
	for _, q := range []string{"CREATE TABLE k (id BIGINT NOT NULL, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket'='2')", "INSERT INTO k VALUES (1), (2), (3), (4)"} {
		if _, err := writer.ExecuteUpdate(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	cl := ts.splitClient(t, ctx, 2)
	info, err := cl.Execute(ctx, "SELECT * FROM k")
	if err != nil || len(info.Endpoint) != 2 {
		t.Fatalf("%v, %v", info, err)
	}
	exp := info.Endpoint[0].GetExpirationTime().AsTime()
	if d := time.Until(exp); d > limits.EndpointLifetime {
		t.Fatalf("expiration time %v, %v from now", exp, d)
	}
	time.Sleep(time.Until(exp) + time.Millisecond)
	_, err = readTicket(ctx, cl, info.Endpoint[0].Ticket)
	wantCode(t, "an expired part", err, codes.InvalidArgument)
	if !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired part: %v", err)
	}
}

// EXPLAIN in a session that asks for endpoints says how the query splits,
// or why it does not; a bad flightd.max_endpoints is refused by name.
func TestSplitEndpointsExplain(t *testing.T) {
	ctx := context.Background()
	ts := startServerLimits(t, splitLimits, 0, flightsql.Options{})
	whole, _ := ts.rawClient(t)
	splitTables(t, ctx, whole, rand.New(rand.NewPCG(5, 6)))
	split := ts.splitClient(t, ctx, 3)
	explain := func(cl *arrowflightsql.Client, q string) string {
		t.Helper()
		info, err := cl.Execute(ctx, "EXPLAIN "+q)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := readTicket(ctx, cl, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(rows, "\n")
	}
	for q, want := range map[string]string{
		"SELECT a FROM f WHERE b = 1":              "Endpoints: 3 parts, part i reading splits i, i+3, ... of default.f, at snapshots default.f@",
		"SELECT a, name FROM f JOIN dim USING (b)": "of default.f, at snapshots default.dim@1, default.f@",
		"SELECT a FROM f ORDER BY a":               "Endpoints: 1 (ORDER BY: the result is ordered)",
		"SELECT b, count(*) FROM f GROUP BY b":     "Endpoints: 1 (HashAggregate needs all of its input in one place)",
		"SELECT * FROM information_schema.tables":  "Endpoints: 1 (constant rows are listed when the query is bound)",
		"SELECT a FROM f FULL JOIN dim USING (b)":  "Endpoints: 1 (a full join needs every row of both sides)",
	} {
		if got := explain(split, q); !strings.Contains(got, want) {
			t.Errorf("EXPLAIN %s:\n%s\nwant a line with %q", q, got, want)
		}
		if got := explain(whole, q); strings.Contains(got, "Endpoints") {
			t.Errorf("EXPLAIN %s without asking for endpoints:\n%s", q, got)
		}
	}
	for _, bad := range []string{"0", "-2", "two", "1.5"} {
		v, _ := flight.NewSessionOptionValue(bad)
		res, err := whole.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{"flightd.max_endpoints": &v}})
		if err != nil || res.GetErrors()["flightd.max_endpoints"].GetValue() != flight.SetSessionOptionsResultErrorInvalidValue {
			t.Errorf("flightd.max_endpoints=%s: %v %v, want an invalid value error", bad, res.GetErrors(), err)
		}
	}
}
