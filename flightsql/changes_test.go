package flightsql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/flightsql"
)

// change is one row of a change stream, or a progress marker (Kind "").
type change struct {
	Kind     string
	Row      []string // the columns after the row kind
	Snapshot int64
	CaughtUp bool
	Image    string // ChangeProgress.Image
}

// readChanges reads a change stream into a channel until it ends or
// fails (the error is sent last as a change with Kind "error").
func readChanges(t *testing.T, rdr *flight.Reader) <-chan change {
	out := make(chan change, 1024)
	go func() {
		defer close(out)
		defer rdr.Release()
		for rdr.Next() {
			meta, err := flightsql.ParseChangeProgress(rdr.LatestAppMetadata())
			if err != nil {
				out <- change{Kind: "error", Row: []string{err.Error()}}
				return
			}
			b := rdr.RecordBatch()
			if b.NumRows() == 0 {
				if !meta.CaughtUp && meta.Image != flightsql.ImageStart && meta.Image != flightsql.ImageEnd {
					out <- change{Kind: "error", Row: []string{"empty batch that is not a progress marker"}}
					return
				}
				out <- change{Snapshot: meta.Snapshot, CaughtUp: meta.CaughtUp, Image: meta.Image}
				continue
			}
			if meta.CaughtUp || meta.Snapshot < 1 || meta.Image != "" && meta.Image != flightsql.ImageRows {
				out <- change{Kind: "error", Row: []string{fmt.Sprintf("rows with metadata %+v", meta)}}
				return
			}
			for _, r := range batchRows(b) {
				out <- change{Kind: r[0], Row: r[1:], Snapshot: meta.Snapshot, Image: meta.Image}
			}
		}
		if err := rdr.Err(); err != nil {
			out <- change{Kind: "error", Row: []string{err.Error()}}
		}
	}()
	return out
}

// openQuery runs a streaming query and opens its result; a stream
// announces no record count.
func openQuery(ctx context.Context, t *testing.T, cl *arrowflightsql.Client, q string) *flight.Reader {
	t.Helper()
	info, err := cl.Execute(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.TotalRecords; got != -1 {
		t.Fatalf("a stream announces %d records", got)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	return rdr
}

// keyedImage applies upserts and retractions by the first column.
type keyedImage map[string]string

func (m keyedImage) apply(t *testing.T, c change) {
	t.Helper()
	switch c.Kind {
	case "+I", "+U":
		m[c.Row[0]] = strings.Join(c.Row, "|")
	case "-U", "-D":
		delete(m, c.Row[0])
	case "error":
		t.Fatalf("stream failed: %s", c.Row[0])
	default:
		t.Fatalf("row kind %q", c.Kind)
	}
}

func (m keyedImage) rows() []string {
	return slices.Sorted(maps.Values(m))
}

func tableRows(t *testing.T, rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join(r, "|"))
	}
	slices.Sort(out)
	return out
}

// waitFor applies changes until one has row key (or fails after a while).
func waitFor(t *testing.T, ch <-chan change, img keyedImage, key string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case c, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended while waiting for key %s", key)
			}
			if c.Kind == "" {
				continue
			}
			img.apply(t, c)
			if c.Row[0] == key {
				return
			}
		case <-deadline:
			t.Fatalf("no change of key %s within 30s", key)
		}
	}
}

// bagRows lists the rows of a multiset of rows (row -> count), sorted.
func bagRows(img map[string]int) []string {
	var out []string
	for r, n := range img {
		for range n {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// streamServer starts a server, runs stmts on an ADBC connection to it and
// returns the server, that connection and a raw Flight SQL client.
func streamServer(t *testing.T, stmts ...string) (*testServer, adbc.Connection, *arrowflightsql.Client) {
	t.Helper()
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	for _, q := range stmts {
		mustExec(t, cnxn, q)
	}
	cl, _ := ts.rawClient(t)
	return ts, cnxn, cl
}

// TestChangeStreamSQL: a streaming query over Flight SQL starts with the
// table's content and follows inserts, updates and deletes from another
// client, with snapshot metadata on every batch and keep-alive markers.
func TestChangeStreamSQL(t *testing.T) {
	_, cnxn, cl := streamServer(t,
		"CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
		"INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdr := openQuery(ctx, t, cl, "SELECT k, v FROM t /*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms') */ WHERE k < 1000")
	if got := rdr.Schema().Field(0).Name; got != "_row_kind" {
		t.Fatalf("first column %q", got)
	}
	ch := readChanges(t, rdr)
	img := keyedImage{}
	waitFor(t, ch, img, "3")
	mustExec(t, cnxn, "INSERT INTO t VALUES (4, 'd'), (1, 'a2')")
	mustExec(t, cnxn, "DELETE FROM t WHERE k = 2")
	mustExec(t, cnxn, "UPDATE t SET v = 'c2' WHERE k = 3")
	mustExec(t, cnxn, "INSERT INTO t VALUES (5000, 'filtered out'), (999, 'last')")
	waitFor(t, ch, img, "999")
	if got, want := img.rows(), tableRows(t, query(t, cnxn, "SELECT k, v FROM t WHERE k < 1000")); !slices.Equal(got, want) {
		t.Fatalf("applied stream %q, table %q", got, want)
	}
	// Idle: keep-alive markers keep coming.
	markers := 0
	for markers < 3 {
		select {
		case c := <-ch:
			if c.Kind != "" {
				t.Fatalf("unexpected change %+v", c)
			}
			markers++
		case <-time.After(10 * time.Second):
			t.Fatal("no keep-alive while idle")
		}
	}
	cancel()
	for range ch {
	}
}

// TestChangeStreamTicket: a plain Flight DoGet with a change ticket, a
// consumer that commits its position and resumes from it, and bad tickets
// with clear errors.
func TestChangeStreamTicket(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 'a')")
	cl, mem := ts.rawClient(t)
	open := func(ctx context.Context, tk flightsql.ChangesTicket) (<-chan change, error) {
		body, _ := json.Marshal(tk)
		body = append(body, " \n"...) // white space after the JSON (a json.Encoder's newline) is fine
		s, err := cl.Client.DoGet(ctx, &flight.Ticket{Ticket: append([]byte(flightsql.ChangesTicketPrefix), body...)})
		if err != nil {
			return nil, err
		}
		rdr, err := flight.NewRecordReader(s, ipc.WithAllocator(mem))
		if err != nil {
			return nil, err
		}
		return readChanges(t, rdr), nil
	}
	tk := flightsql.ChangesTicket{Table: "default.t", Mode: "latest", ConsumerID: "c1", HeartbeatMillis: 50}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := open(ctx, tk)
	if err != nil {
		t.Fatal(err)
	}
	first := <-ch // caught up before any change: the starting point
	if first.Kind != "" || !first.CaughtUp {
		t.Fatalf("first message %+v", first)
	}
	mustExec(t, cnxn, "INSERT INTO t VALUES (2, 'b')")
	img := keyedImage{}
	waitFor(t, ch, img, "2")
	var applied int64
	for c := range ch { // the marker after snapshot 2
		if c.CaughtUp {
			applied = c.Snapshot
			break
		}
	}
	cancel()
	for range ch {
	}
	actions, err := cl.Client.ListActions(context.Background(), &flight.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for {
		a, err := actions.Recv()
		if err != nil {
			break
		}
		listed = listed || a.GetType() == flightsql.CommitConsumerAction
	}
	if !listed {
		t.Errorf("ListActions does not list %s", flightsql.CommitConsumerAction)
	}
	body, _ := json.Marshal(flightsql.CommitConsumerRequest{Table: "t", ConsumerID: "c1", NextSnapshot: applied + 1})
	if _, err := cl.Client.DoAction(context.Background(), &flight.Action{Type: flightsql.CommitConsumerAction, Body: body}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, cnxn, "INSERT INTO t VALUES (3, 'c')")
	// Resume: the consumer position wins over the ticket's mode, so only
	// what came after the committed position arrives.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	tk.Mode = "latest-full"
	ch, err = open(ctx, tk)
	if err != nil {
		t.Fatal(err)
	}
	for c := range ch {
		if c.Kind == "" {
			continue
		}
		if c.Row[0] != "3" || c.Snapshot != applied+1 {
			t.Fatalf("resumed stream sent %+v, want only key 3 of snapshot %d", c, applied+1)
		}
		break
	}
	cancel()
	for range ch {
	}

	for _, bad := range []struct {
		body string
		code codes.Code
		msg  string
	}{
		{`{"table":"nope","consumer_id":"c1","next_snapshot":2}`, codes.NotFound, "nope"},
		{`{"table":"t","consumer_id":"c/1","next_snapshot":2}`, codes.InvalidArgument, "consumer"},
		{`{"table":"t","consumer_id":"c1","next_snapshot":0}`, codes.InvalidArgument, "next snapshot must be positive"},
		{`{"table":"t","consumer":"c1"}`, codes.InvalidArgument, "consumer"},
		// One JSON value and nothing after it, or the body is malformed.
		{`{"table":"t","consumer_id":"c1","next_snapshot":2}garbage`, codes.InvalidArgument, "unexpected data after the JSON value"},
	} {
		s, err := cl.Client.DoAction(context.Background(), &flight.Action{Type: flightsql.CommitConsumerAction, Body: []byte(bad.body)})
		for err == nil {
			_, err = s.Recv()
		}
		if st, _ := status.FromError(err); st.Code() != bad.code || !strings.Contains(st.Message(), bad.msg) {
			t.Errorf("commit %s: got %v, want %v mentioning %q", bad.body, err, bad.code, bad.msg)
		}
	}
	for _, bad := range []struct {
		ticket string
		code   codes.Code
		msg    string
	}{
		{`{"table":"nope"}`, codes.NotFound, "nope"},
		{`{"table":"t","mode":"sideways"}`, codes.InvalidArgument, "unknown scan.mode"},
		{`{"table":"t","colour":"red"}`, codes.InvalidArgument, "colour"},
		{`{"table":"t","mode":"from-snapshot"}`, codes.InvalidArgument, "needs scan.snapshot-id"},
		{`{"table":"t","columns":["nope"]}`, codes.InvalidArgument, "nope"},
		{`{"table":"t","mode":"from-snapshot","snapshot_id":99}`, codes.NotFound, "snapshot 99 does not exist"},
		{`{"table":"t","mode":"from-snapshot","tag":"v9"}`, codes.NotFound, `no tag "v9"`},
		// The filter is one expression, not text pasted into a WHERE clause.
		{`{"table":"t","filter":"k > 5) OR (k < 100"}`, codes.InvalidArgument, "filter: line 1:6: unexpected"},
		{`{"table":"t","columns":["k FROM t --"]}`, codes.InvalidArgument, "k FROM t --"},
		// A ticket is one JSON value: trailing bytes (another value, or
		// garbage) are refused, not ignored.
		{`{"table":"t"}garbage`, codes.InvalidArgument, "malformed change stream ticket: unexpected data after the JSON value, which ends at byte 13"},
		{`{"table":"t"} {"table":"nope"}`, codes.InvalidArgument, "unexpected data after the JSON value"},
		{`{"table":"t"}}`, codes.InvalidArgument, "unexpected data after the JSON value"},
	} {
		// A ticket wrongly accepted streams forever: the deadline ends it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := cl.Client.DoGet(ctx, &flight.Ticket{Ticket: []byte(flightsql.ChangesTicketPrefix + bad.ticket)})
		for err == nil {
			_, err = s.Recv()
		}
		cancel()
		if st, _ := status.FromError(err); st.Code() != bad.code || !strings.Contains(st.Message(), bad.msg) {
			t.Errorf("ticket %s: got %v, want %v mentioning %q", bad.ticket, err, bad.code, bad.msg)
		}
	}
}

// TestChangeStreamRefused: queries a stream cannot run are refused at
// planning with the reason.
func TestChangeStreamRefused(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, cnxn, "CREATE TABLE u (k BIGINT, v STRING)")
	hint := "/*+ OPTIONS('scan.mode'='latest') */"
	for _, c := range []struct{ sql, msg string }{
		{"SELECT k, row_number() OVER (ORDER BY k) FROM t " + hint, "row_number OVER (...) is not supported yet"},
		{"SELECT count(*) FROM t " + hint + " LIMIT 1", "LIMIT over an aggregation"},
		{"SELECT * FROM t " + hint + " JOIN u ON t.k = u.k", "read as a snapshot"},
		{"SELECT * FROM t " + hint + " ORDER BY k", "ORDER BY"},
		{"INSERT INTO u SELECT k, v FROM t " + hint, "needs a primary key"}, // a continuous job's target
		{"SELECT * FROM t /*+ OPTIONS('scan.mode'='latest', 'scan.snapshot-id'='1') */", "does not go with"},
		{"EXPLAIN ANALYZE SELECT * FROM t " + hint, "never end"},
	} {
		_, err := tryQuery(cnxn, c.sql)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error mentioning %q", c.sql, err, c.msg)
		}
	}
	rows := query(t, cnxn, "EXPLAIN SELECT v FROM t "+hint+" WHERE k = 1")
	if plan := fmt.Sprint(rows); !strings.Contains(plan, "Stream") || !strings.Contains(plan, "from latest") {
		t.Errorf("EXPLAIN does not show the stream:\n%s", plan)
	}
}

// TestChangeStreamBadConsumer: a change stream whose consumer id no
// consumer file can have (a '/', over 200 bytes) is InvalidArgument with
// the rule, from a ticket and from SQL, and records nothing. Before, once
// the table had a consumer, both were Internal (SQLSTATE XX000) with the
// server's path to the consumer file ("not a directory", "file name too
// long").
func TestChangeStreamBadConsumer(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 'a')")
	// Consumer x's file makes consumer-x/y a path under a file.
	mustExec(t, cnxn, "CALL sys.reset_consumer('t', 'x', 1)")
	cl, _ := ts.rawClient(t)
	const rule = "must be non-empty, at most 200 bytes"
	for _, id := range []string{"x/y", strings.Repeat("a", 300), "a\\b"} {
		body, _ := json.Marshal(flightsql.ChangesTicket{Table: "t", Mode: "latest", ConsumerID: id})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := cl.Client.DoGet(ctx, &flight.Ticket{Ticket: append([]byte(flightsql.ChangesTicketPrefix), body...)})
		for err == nil { // the schema may come first
			_, err = s.Recv()
		}
		cancel()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), rule) || strings.Contains(err.Error(), "consumer-") {
			t.Errorf("ticket with consumer %.20q: %v, want InvalidArgument naming the rule", id, err)
		}
		_, err = tryQuery(cnxn, "SELECT * FROM t /*+ OPTIONS('scan.mode'='latest', 'consumer-id'='"+id+"') */")
		if err == nil || !strings.Contains(err.Error(), rule) || !strings.Contains(err.Error(), "SQLSTATE 22023") {
			t.Errorf("SQL with consumer %.20q: %v, want SQLSTATE 22023 naming the rule", id, err)
		}
	}
	if rows := query(t, cnxn, "SELECT count(*) FROM `t$consumers`"); fmt.Sprint(rows) != "[[1]]" {
		t.Errorf("consumers recorded: %v", rows)
	}
}

// TestConsumerPastNextSnapshotRefused: a consumer may be moved to any
// snapshot up to the table's next one; past it (CALL sys.reset_consumer or
// the commit action) is InvalidArgument and changes nothing. Before, the
// position was recorded: a stream of the consumer reported itself caught
// up at snapshot 9223372036854775806 and never sent the commits that came.
func TestConsumerPastNextSnapshotRefused(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 'a')")
	latest := query(t, cnxn, "SELECT max(snapshot_id) FROM `t$snapshots`")[0][0]
	next, _ := strconv.ParseInt(latest, 10, 64)
	next++
	for _, n := range []int64{next + 1, math.MaxInt64} {
		_, err := tryExec(cnxn, fmt.Sprintf("CALL sys.reset_consumer('t', 'c1', %d)", n))
		if err == nil || !strings.Contains(err.Error(), "past the table's next one") || !strings.Contains(err.Error(), "SQLSTATE 22023") {
			t.Errorf("reset_consumer to %d: %v, want SQLSTATE 22023", n, err)
		}
	}
	cl, _ := ts.rawClient(t)
	body, _ := json.Marshal(flightsql.CommitConsumerRequest{Table: "t", ConsumerID: "c1", NextSnapshot: next + 1})
	s, err := cl.Client.DoAction(context.Background(), &flight.Action{Type: flightsql.CommitConsumerAction, Body: body})
	for err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "past the table's next one") {
		t.Errorf("commit past the next snapshot: %v, want InvalidArgument", err)
	}
	if rows := query(t, cnxn, "SELECT count(*) FROM `t$consumers`"); fmt.Sprint(rows) != "[[0]]" {
		t.Errorf("consumers recorded: %v", rows)
	}
	mustExec(t, cnxn, fmt.Sprintf("CALL sys.reset_consumer('t', 'c1', %d)", next))
	if rows := query(t, cnxn, "SELECT next_snapshot_id FROM `t$consumers`"); fmt.Sprint(rows) != fmt.Sprintf("[[%d]]", next) {
		t.Errorf("consumer at the next snapshot: %v", rows)
	}
}

// TestChangeStreamBackpressure: a client that stops reading holds the
// server to a few batches in memory, however much is committed meanwhile,
// and then receives everything.
func TestChangeStreamBackpressure(t *testing.T) {
	ts, cnxn, cl := streamServer(t,
		"CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)",
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdr := openQuery(ctx, t, cl, "SELECT * FROM t /*+ OPTIONS('scan.mode'='latest') */")
	defer rdr.Release()
	const commits, rows = 40, 5000
	pad := strings.Repeat("x", 200)
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	for c := range commits {
		b := array.NewRecordBuilder(mem, sc)
		for i := range rows {
			b.Field(0).(*array.Int64Builder).Append(int64(c*rows + i))
			b.Field(1).(*array.StringBuilder).Append(pad)
		}
		rec := b.NewRecordBatch()
		b.Release()
		ingest(t, cnxn, "t", adbc.OptionValueIngestModeAppend, rec)
		rec.Release()
	}
	// About 40 MB were committed; the stream may hold only what is in
	// flight (the pump's two batches and the one being read). Background
	// compaction of t holds more while it runs (level-0 files are lz4 and
	// rewritten as zstd): wait for it, as long as 20 s under -race.
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := ts.Mem.CurrentAlloc()
		if got <= 8<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server holds %d bytes for a client that does not read", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var n int
	for n < commits*rows && rdr.Next() {
		n += int(rdr.RecordBatch().NumRows())
	}
	if n != commits*rows {
		t.Fatalf("received %d rows, want %d: %v", n, commits*rows, rdr.Err())
	}
}

// TestChangeStreamRestartFromImage follows the README's client recipe for
// a consumer that restarts before it committed a position: the stream
// starts again with a full read of a later snapshot, and rows deleted
// while the client was away must not survive in its state. The recipe
// drops the state at the "image start" marker; skipping by snapshot alone
// keeps the deleted rows.
func TestChangeStreamRestartFromImage(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE r (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	var vals []string
	for k := range 1000 {
		vals = append(vals, fmt.Sprintf("(%d, 'v%d')", k, k))
	}
	mustExec(t, cnxn, "INSERT INTO r VALUES "+strings.Join(vals, ", "))
	cl, mem := ts.rawClient(t)
	tk := flightsql.ChangesTicket{Table: "default.r", Mode: "latest-full", ConsumerID: "c1", HeartbeatMillis: 50}
	body, _ := json.Marshal(tk)

	// The recipe: drop the state when a full read starts, skip batches of
	// snapshots already applied completely, count a snapshot complete at a
	// caught_up marker or the end of a full read.
	img := keyedImage{}
	var applied int64
	var images []string
	follow := func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := cl.Client.DoGet(ctx, &flight.Ticket{Ticket: append([]byte(flightsql.ChangesTicketPrefix), body...)})
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := flight.NewRecordReader(s, ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		ch := readChanges(t, rdr)
		for c := range ch {
			switch {
			case c.Image == flightsql.ImageStart:
				images = append(images, fmt.Sprint("start ", c.Snapshot))
				clear(img)
				applied = 0
			case c.Image == flightsql.ImageEnd:
				images = append(images, fmt.Sprint("end ", c.Snapshot))
				applied = c.Snapshot
			case c.CaughtUp:
				applied = c.Snapshot
				cancel()
			case c.Snapshot > applied:
				img.apply(t, c)
			}
		}
	}
	follow()
	if got := len(img); got != 1000 {
		t.Fatalf("first run: %d rows", got)
	}
	// Away, with no committed position: 500 rows go, one comes.
	mustExec(t, cnxn, "DELETE FROM r WHERE k < 500")
	mustExec(t, cnxn, "INSERT INTO r VALUES (5000, 'new')")
	follow()
	if want := tableRows(t, query(t, cnxn, "SELECT k, v FROM r")); !slices.Equal(img.rows(), want) {
		t.Fatalf("after the restart the client holds %d rows, the table %d (markers %v)", len(img), len(want), images)
	}
	if len(images) != 4 {
		t.Fatalf("image markers %v, want a start and an end per run", images)
	}
}

// TestChangeStreamAggregate: a GROUP BY over a change stream, read with the
// Flight SQL client, keeps the batch answer: at every progress marker the
// applied changelog equals the query at the marker's snapshot; rows come
// labelled with their snapshot; the ADBC driver reads the same stream.
func TestChangeStreamAggregate(t *testing.T) {
	_, cnxn, cl := streamServer(t,
		"CREATE TABLE t (k BIGINT, v STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
		"INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'a', 30)",
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const q = "SELECT v, count(*), sum(n), max(k) FROM t %s GROUP BY v HAVING sum(n) > 15"
	rdr := openQuery(ctx, t, cl, fmt.Sprintf(q, "/*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms') */"))
	ch := readChanges(t, rdr)
	img := map[string]int{}
	// follow applies changes up to a progress marker at or after snapshot
	// target and checks the result there.
	follow := func(target int64) {
		t.Helper()
		var label int64
		for {
			var c change
			select {
			case c = <-ch:
			case <-time.After(30 * time.Second):
				t.Fatalf("no progress to snapshot %d", target)
			}
			switch c.Kind {
			case "":
				want := tableRows(t, query(t, cnxn, fmt.Sprintf(q, fmt.Sprintf("/*+ OPTIONS('scan.snapshot-id'='%d') */", c.Snapshot))))
				got := bagRows(img)
				if !slices.Equal(got, want) {
					t.Fatalf("at snapshot %d the applied changes are %q, the query gives %q", c.Snapshot, got, want)
				}
				if c.Snapshot >= target {
					return
				}
				continue
			case "+I", "+U":
				img[strings.Join(c.Row, "|")]++
			case "-U", "-D":
				r := strings.Join(c.Row, "|")
				if img[r] == 0 {
					t.Fatalf("%s of %s, which is not there", c.Kind, r)
				}
				if img[r]--; img[r] == 0 {
					delete(img, r)
				}
			default:
				t.Fatalf("%+v", c)
			}
			if c.Snapshot < label {
				t.Fatalf("rows of snapshot %d after rows of %d", c.Snapshot, label)
			}
			label = c.Snapshot
		}
	}
	follow(1)
	for i, stmt := range []string{
		"INSERT INTO t VALUES (4, 'b', 1), (1, 'c', 100)",
		"DELETE FROM t WHERE k = 2",
		"UPDATE t SET n = n + 5 WHERE v = 'a'",
		"INSERT INTO t VALUES (5, 'a', -100)",
	} {
		mustExec(t, cnxn, stmt)
		follow(int64(i + 2))
	}
	if len(img) == 0 {
		t.Fatal("the stream ended empty")
	}
	cancel()
	for range ch {
	}

	// The ADBC driver reads the same stream (progress markers are empty
	// batches); the group of v = 'c' is there. Bounded at the latest
	// snapshot, the stream ends by itself: cancelling arrow-adbc v1.12's
	// reader mid-stream races in the driver (its goroutine reads the
	// trailer grpc writes on cancel), which -race reports.
	latest := tableRows(t, query(t, cnxn, "SELECT max(snapshot_id) FROM t$snapshots"))[0]
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(fmt.Sprintf(q, fmt.Sprintf("/*+ OPTIONS('scan.mode'='latest-full', 'scan.bounded.snapshot-id'='%s') */", latest))); err != nil {
		t.Fatal(err)
	}
	ardr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ardr.Release()
	var rows [][]string
	for ardr.Next() {
		rows = append(rows, batchRows(ardr.RecordBatch())...)
	}
	if err := ardr.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"+I", "c", "1", "100", "1"}; !slices.ContainsFunc(rows, func(r []string) bool { return slices.Equal(r, want) }) {
		t.Fatalf("ADBC read %q, want a row %q", rows, want)
	}
}

// TestChangeStreamJoin: a join of two streams labels its batches with the
// snapshot of each table ("snapshots"); at a progress marker the applied
// changes equal the join of the tables at those snapshots.
func TestChangeStreamJoin(t *testing.T) {
	_, cnxn, cl := streamServer(t,
		"CREATE TABLE l (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)",
		"CREATE TABLE r (k BIGINT, w STRING)",
		"INSERT INTO l VALUES (1, 'a'), (2, 'b')",
		"INSERT INTO r VALUES (1, 'x')",
		"INSERT INTO r VALUES (2, 'y'), (1, 'z')",
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const q = "SELECT l.k, v, w FROM l %s LEFT JOIN r %s ON l.k = r.k"
	hint := "/*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms') */"
	rdr := openQuery(ctx, t, cl, fmt.Sprintf(q, hint, hint))
	defer rdr.Release()
	img := map[string]int{}
	for rdr.Next() {
		meta, err := flightsql.ParseChangeProgress(rdr.LatestAppMetadata())
		if err != nil {
			t.Fatal(err)
		}
		if len(meta.Snapshots) != 2 {
			t.Fatalf("metadata %s does not give both tables' snapshots", rdr.LatestAppMetadata())
		}
		for _, row := range batchRows(rdr.RecordBatch()) {
			r := strings.Join(row[1:], "|")
			switch row[0] {
			case "+I", "+U":
				img[r]++
			default:
				if img[r]--; img[r] == 0 {
					delete(img, r)
				}
			}
		}
		if !meta.CaughtUp || meta.Snapshots["default.l"] != 1 || meta.Snapshots["default.r"] != 2 {
			continue
		}
		at := func(tbl string) string {
			return fmt.Sprintf("/*+ OPTIONS('scan.snapshot-id'='%d') */", meta.Snapshots[tbl])
		}
		want := tableRows(t, query(t, cnxn, fmt.Sprintf(q, at("default.l"), at("default.r"))))
		got := bagRows(img)
		if !slices.Equal(got, want) {
			t.Fatalf("at %v the applied changes are %q, the join gives %q", meta.Snapshots, got, want)
		}
		return
	}
	t.Fatalf("the stream ended: %v", rdr.Err())
}
