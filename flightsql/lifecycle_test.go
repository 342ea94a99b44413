package flightsql_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
	fsql "github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/internal/flighttest"
)

// TestSessionOptions: the schema session option selects the database
// unqualified names resolve in; unknown options and databases are refused.
func TestSessionOptions(t *testing.T) {
	ts := startServer(t, fsql.Options{})
	cnxn := ts.connect(t, map[string]string{adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled})
	mustExec(t, cnxn, `CREATE DATABASE sales`)
	mustExec(t, cnxn, `CREATE TABLE sales.orders (id BIGINT)`)
	mustExec(t, cnxn, `INSERT INTO sales.orders VALUES (7)`)

	opts := cnxn.(adbc.PostInitOptions)
	// Repeated while the client loses the cookie: see
	// flighttest.SetSessionOption for the arrow-go client race.
	for i := 0; ; i++ {
		if err := opts.SetOption(adbc.OptionKeyCurrentDbSchema, "sales"); err != nil {
			t.Fatal(err)
		}
		got, err := cnxn.(adbc.GetSetOptions).GetOption(adbc.OptionKeyCurrentDbSchema)
		if err != nil {
			t.Fatal(err)
		}
		if got == "sales" {
			break
		}
		if i+1 == flighttest.CookieRetries {
			t.Fatalf("current schema = %q after %d tries; want sales", got, i+1)
		}
	}
	wantRows(t, query(t, cnxn, `SELECT id FROM orders`), "7")
	if err := opts.SetOption(adbc.OptionKeyCurrentDbSchema, "nope"); err == nil {
		t.Fatal("switching to a database that does not exist succeeded")
	}
	wantRows(t, query(t, cnxn, `SELECT id FROM orders`), "7")
}

// TestSessionCookieOnlyWhenChanged: a call that leaves its session alone
// gets no cookie; one that changes the session gets the new cookie in its
// header, never in a trailer. Trailer metadata is what
// arrow-go's Go client reads from a finalizer for streams its callers do not
// drain (ExecuteUpdate), a data race `go test -race` of any Go client shows.
// Under -race the loop of updates also shows that race if it comes back.
func TestSessionCookieOnlyWhenChanged(t *testing.T) {
	ts := startServer(t, fsql.Options{})
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	var hdr, trl metadata.MD
	if _, err := cl.Execute(ctx, `SELECT 1`, grpc.Header(&hdr), grpc.Trailer(&trl)); err != nil {
		t.Fatal(err)
	}
	if len(hdr.Get("set-cookie")) != 0 || len(trl.Get("set-cookie")) != 0 {
		t.Fatalf("unchanged session: header cookies %q, trailer cookies %q; want none", hdr.Get("set-cookie"), trl.Get("set-cookie"))
	}
	hdr, trl = nil, nil
	opts, err := flight.NewSessionOptionValues(map[string]any{"schema": "default"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: opts}, grpc.Header(&hdr), grpc.Trailer(&trl)); err != nil {
		t.Fatal(err)
	}
	if len(hdr.Get("set-cookie")) != 1 || len(trl.Get("set-cookie")) != 0 {
		t.Fatalf("changed session: header cookies %q, trailer cookies %q; want the new cookie in the header", hdr.Get("set-cookie"), trl.Get("set-cookie"))
	}
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, `CREATE TABLE t (a BIGINT)`)
	for i := range 100 {
		mustExec(t, cnxn, `INSERT INTO t VALUES (1)`)
		if i%5 == 0 {
			runtime.GC() // runs the finalizers of undrained streams
		}
	}
}

// TestCancelFlightInfo: a client that cancels its query stops the server's
// work, and a client that goes away mid-stream releases everything (the
// checked allocator of startServer verifies that at the end).
func TestCancelFlightInfo(t *testing.T) {
	ts := startServer(t, fsql.Options{})
	loadSequence(t, ts, "big", 300_000)

	cl, _ := ts.rawClient(t)
	ctx := context.Background()

	info, err := cl.Execute(ctx, `SELECT a.id FROM big a CROSS JOIN big b`)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	res, err := cl.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != flight.CancelStatusCancelled {
		t.Fatalf("cancel status %v, want cancelled", res.Status)
	}
	deadline := time.After(10 * time.Second)
	for rdr.Next() {
		select {
		case <-deadline:
			t.Fatal("stream still running 10s after cancel")
		default:
		}
	}
	if code := status.Code(rdr.Err()); code != codes.Canceled {
		t.Fatalf("stream ended with %v, want Canceled", rdr.Err())
	}
	rdr.Release()

	// A client that goes away: cancel its context mid-stream.
	gone, cancel := context.WithCancel(ctx)
	info2, err := cl.Execute(ctx, `SELECT a.id FROM big a CROSS JOIN big b`)
	if err != nil {
		t.Fatal(err)
	}
	rdr2, err := cl.DoGet(gone, info2.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	rdr2.Next()
	cancel()
	for rdr2.Next() {
	}
	if !errors.Is(rdr2.Err(), context.Canceled) && status.Code(rdr2.Err()) != codes.Canceled {
		t.Fatalf("stream after client went away ended with %v", rdr2.Err())
	}
	rdr2.Release()
	// Once the server has wound the query down, cancelling it again is
	// answered as not cancellable, not as an error.
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		res, err = cl.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status == flight.CancelStatusNotCancellable {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("query still running 10s after its client went away: %v", res.Status)
		}
	}
}

// TestMalformedSessionCookie: a cookie the session middleware cannot decode
// is refused as invalid; the server keeps serving.
func TestMalformedSessionCookie(t *testing.T) {
	ts := startServer(t, fsql.Options{})
	cl, _ := ts.rawClient(t)
	bad := metadata.AppendToOutgoingContext(context.Background(), "cookie", "arrow_flight_session=%%%not-base64")
	_, err := cl.Execute(bad, `SHOW DATABASES`)
	if code := status.Code(err); code != codes.InvalidArgument {
		t.Fatalf("malformed cookie: %v, want InvalidArgument", err)
	}
	if _, err := cl.Execute(context.Background(), `SHOW DATABASES`); err != nil {
		t.Fatalf("server stopped serving after a malformed cookie: %v", err)
	}
}

// TestOversizedMessage: an ingest batch over the message limit is refused
// as ResourceExhausted and the table is unchanged.
func TestOversizedMessage(t *testing.T) {
	ts := startServer(t, fsql.Options{MaxMessageBytes: 1 << 20})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, `CREATE TABLE small (s VARCHAR)`)
	mustExec(t, cnxn, `INSERT INTO small VALUES ('kept')`)

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewStringBuilder(mem)
	defer b.Release()
	big := strings.Repeat("x", 4<<20)
	b.Append(big)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil), []arrow.Array{col}, 1)
	defer rec.Release()
	_, err := tryIngest(cnxn, "small", adbc.OptionValueIngestModeAppend, rec)
	var ae adbc.Error
	if !errors.As(err, &ae) || ae.Code == adbc.StatusOK {
		t.Fatalf("oversized ingest: %v, want an error", err)
	}
	if !strings.Contains(strings.ToLower(ae.Msg), "larger than max") && !strings.Contains(ae.Msg, "ResourceExhausted") {
		t.Errorf("oversized ingest message %q does not say the message is too large", ae.Msg)
	}
	wantRows(t, query(t, cnxn, `SELECT s FROM small`), "kept")
}

// TestXdbcTypeInfo: GetXdbcTypeInfo lists flightd's SQL types, all of them
// or one by its JDBC type code.
func TestXdbcTypeInfo(t *testing.T) {
	ts := startServer(t, fsql.Options{})
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	names := func(dataType *int32) []string {
		info, err := cl.GetXdbcTypeInfo(ctx, dataType)
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		var out []string
		for rdr.Next() {
			col := rdr.RecordBatch().Column(0).(*array.String)
			for i := 0; i < col.Len(); i++ {
				out = append(out, col.Value(i))
			}
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if all := names(nil); len(all) < 10 || !strings.Contains(strings.Join(all, ","), "BIGINT") {
		t.Fatalf("type info: %v", all)
	}
	bigint := int32(-5)
	if one := names(&bigint); len(one) != 1 || one[0] != "BIGINT" {
		t.Fatalf("type info for -5: %v", one)
	}
}

// TestCompressedDoGet: with the compression header, result bodies on the
// wire are compressed (much smaller for repetitive data) and read back the
// same; an unknown codec is refused.
func TestCompressedDoGet(t *testing.T) {
	ts := startServer(t, fsql.Options{})
	loadSequence(t, ts, "seq", 200_000)
	cl, mem := ts.rawClient(t)
	// wireBytes fetches the result and sums the message body sizes as sent.
	wireBytes := func(codec string) (int, int64, error) {
		ctx := context.Background()
		if codec != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, fsql.CompressionHeader, codec)
		}
		info, err := cl.Execute(ctx, `SELECT CAST(id % 10 AS BIGINT) AS d FROM seq`)
		if err != nil {
			return 0, 0, err
		}
		stream, err := cl.Client.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return 0, 0, err
		}
		var body int
		var msgs []*flight.FlightData
		for {
			fd, err := stream.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return 0, 0, err
			}
			body += len(fd.DataBody)
			msgs = append(msgs, fd)
		}
		// Decode what was sent to check the values survive the codec.
		rdr, err := ipc.NewReaderFromMessageReader(&replay{msgs: msgs}, ipc.WithAllocator(mem))
		if err != nil {
			return 0, 0, err
		}
		defer rdr.Release()
		var sum int64
		for rdr.Next() {
			col := rdr.RecordBatch().Column(0).(*array.Int64)
			for i := 0; i < col.Len(); i++ {
				sum += col.Value(i)
			}
		}
		return body, sum, rdr.Err()
	}
	plain, plainSum, err := wireBytes("")
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []string{"zstd", "lz4"} {
		n, sum, err := wireBytes(codec)
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		if sum != plainSum {
			t.Fatalf("%s: sum %d, uncompressed %d", codec, sum, plainSum)
		}
		if n*4 > plain {
			t.Fatalf("%s: %d body bytes on the wire, uncompressed %d: not compressed", codec, n, plain)
		}
	}
	if _, _, err := wireBytes("snappy"); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown codec: %v, want InvalidArgument", err)
	}
}

// replay serves recorded FlightData to an IPC reader.
type replay struct {
	msgs []*flight.FlightData
	i    int
}

func (r *replay) Message() (*ipc.Message, error) {
	if r.i >= len(r.msgs) {
		return nil, io.EOF
	}
	fd := r.msgs[r.i]
	r.i++
	return ipc.NewMessage(memory.NewBufferBytes(fd.DataHeader), memory.NewBufferBytes(fd.DataBody)), nil
}

func (r *replay) Release() {}
func (r *replay) Retain()  {}

// TestQueriesSpillUnderMemoryBudget: with a 256 KiB budget per statement,
// a sort and an aggregation over 300,000 rows spill to disk and still give
// the right answer through Flight.
func TestQueriesSpillUnderMemoryBudget(t *testing.T) {
	spill := t.TempDir()
	ts := startServer(t, fsql.Options{}, func(c *engine.Config) {
		c.QueryMemory = 256 << 10
		c.SpillDir = spill
	})
	loadSequence(t, ts, "seq", 300_000)
	cnxn := ts.connect(t, nil)
	wantRows(t, query(t, cnxn, `SELECT id FROM (SELECT id FROM seq ORDER BY id DESC) s LIMIT 3`), "299999", "299998", "299997")
	wantRows(t, query(t, cnxn, `SELECT count(*), min(c), max(c) FROM (SELECT id % 100000 AS k, count(*) AS c FROM seq GROUP BY id % 100000) g`), "100000,3,3")
	plan := query(t, cnxn, `EXPLAIN ANALYZE SELECT id % 100000 AS k, count(*) AS c FROM seq GROUP BY id % 100000`)
	last := strings.Join(plan[len(plan)-1], "")
	if !strings.Contains(last, "rows=100000") || strings.Contains(last, "spilled_rows=0") {
		t.Fatalf("EXPLAIN ANALYZE: want 100000 rows and spilled rows, got %q", last)
	}
}

// TestConcurrentQueriesSpillOnlyPastBudget: four clients at once run a
// window over an aggregation of 100,000 groups, whose output of about 1.6 MB
// reaches the window's sort as about a hundred batch-sized slices. Under a
// 48 MiB budget per statement all four answer and none spills (counting
// each slice as the whole output, as flightd did, made it about 80 MB);
// under 256 KiB the same statement spills and answers the same.
func TestConcurrentQueriesSpillOnlyPastBudget(t *testing.T) {
	const (
		q       = `SELECT count(*), min(r), max(r), sum(c) FROM (SELECT c, rank() OVER (ORDER BY k DESC) AS r FROM (SELECT id % 100000 AS k, count(*) AS c FROM seq GROUP BY id % 100000) g) w`
		clients = 4
	)
	for _, tc := range []struct {
		budget int64
		spill  bool
	}{{48 << 20, false}, {256 << 10, true}} {
		spill := t.TempDir()
		ts := startServer(t, fsql.Options{}, func(c *engine.Config) {
			c.QueryMemory = tc.budget
			c.SpillDir = spill
		})
		loadSequence(t, ts, "seq", 300_000)
		cnxns := make([]adbc.Connection, clients)
		for i := range cnxns {
			cnxns[i] = ts.connect(t, nil)
		}
		errs := make(chan error, clients)
		for _, cnxn := range cnxns {
			go func() {
				plan, err := tryQuery(cnxn, "EXPLAIN ANALYZE "+q)
				if err != nil {
					errs <- err
					return
				}
				last := strings.Join(plan[len(plan)-1], "")
				if spilled := !strings.Contains(last, "spilled_rows=0"); spilled != tc.spill {
					errs <- fmt.Errorf("budget %d: spilled %v, want %v: %s", tc.budget, spilled, tc.spill, last)
					return
				}
				rows, err := tryQuery(cnxn, q)
				if err == nil && (len(rows) != 1 || strings.Join(rows[0], ",") != "100000,1,100000,300000") {
					err = fmt.Errorf("budget %d: got %v, want 100000,1,100000,300000", tc.budget, rows)
				}
				errs <- err
			}()
		}
		for range clients {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
}

// TestConcurrentUpdatesLoseNothing: two clients increment the same rows
// concurrently; each UPDATE either commits or fails with a conflict
// (Aborted), and the final values count exactly the committed updates.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	for _, table := range []string{
		`CREATE TABLE c (k BIGINT NOT NULL, n BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
		`CREATE TABLE c (k BIGINT NOT NULL, n BIGINT)`, // append table: rewrite
	} {
		ts := startServer(t, fsql.Options{})
		setup := ts.connect(t, nil)
		mustExec(t, setup, table)
		mustExec(t, setup, `INSERT INTO c VALUES (1, 0), (2, 0)`)
		var committed [2]int
		done := make(chan struct{}, 2)
		for w := range 2 {
			cnxn := ts.connect(t, nil)
			go func() {
				defer func() { done <- struct{}{} }()
				for range 15 {
					_, err := tryExec(cnxn, `UPDATE c SET n = n + 1`)
					var ae adbc.Error
					switch {
					case err == nil:
						committed[w]++
					case errors.As(err, &ae) && strings.Contains(ae.Msg, "conflict"):
					default:
						t.Errorf("update: %v", err)
						return
					}
				}
			}()
		}
		<-done
		<-done
		want := fmt.Sprint(committed[0] + committed[1])
		wantRows(t, query(t, setup, `SELECT k, n FROM c ORDER BY k`), "1,"+want, "2,"+want)
		t.Logf("%s: %d + %d updates committed", table, committed[0], committed[1])
	}
}

// TestPollFlightInfo: polling a query is complete on the first poll and
// its ticket streams the result.
func TestPollFlightInfo(t *testing.T) {
	ts := startServer(t, fsql.Options{})
	loadSequence(t, ts, "seq", 1000)
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	poll, err := cl.ExecutePoll(ctx, `SELECT count(*) FROM seq`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if poll.GetProgress() != 1 || poll.GetFlightDescriptor() != nil || poll.GetInfo() == nil {
		t.Fatalf("poll: progress %v, retry descriptor %v, info %v; want a complete answer", poll.GetProgress(), poll.GetFlightDescriptor(), poll.GetInfo())
	}
	rdr, err := cl.DoGet(ctx, poll.GetInfo().Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() || rdr.RecordBatch().Column(0).(*array.Int64).Value(0) != 1000 {
		t.Fatalf("count(*) through the polled ticket: %v", rdr.Err())
	}
}

// TestSessionOptionTypes: catalog and schema take strings; a value of
// another type is an invalid value. An integer or a list read as "" and
// was accepted, and the session silently stayed in the default database.
func TestSessionOptionTypes(t *testing.T) {
	ts := startServer(t, fsql.Options{})
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	set := func(name string, val any) pb.SetSessionOptionsResult_ErrorValue {
		t.Helper()
		v, err := flight.NewSessionOptionValue(val)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{name: &v}})
		if err != nil {
			t.Fatal(err)
		}
		return res.GetErrors()[name].GetValue()
	}
	for _, name := range []string{"catalog", "schema"} {
		for _, bad := range []any{int64(5), []string{"default"}, true, 1.5} {
			if got := set(name, bad); got != flight.SetSessionOptionsResultErrorInvalidValue {
				t.Errorf("%s = %#v: %v, want an invalid value", name, bad, got)
			}
		}
	}
	if got := set("catalog", "flightd"); got != flight.SetSessionOptionsResultErrorUnspecified {
		t.Errorf("catalog = flightd: %v", got)
	}
	if got := set("schema", "default"); got != flight.SetSessionOptionsResultErrorUnspecified {
		t.Errorf("schema = default: %v", got)
	}
}
