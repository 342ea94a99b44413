package flightsql_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/flightsql"
)

// TestChangeStreamRowtimeTemporal streams an event-time temporal join
// (LEFT) to a raw Flight SQL client over loopback while another client
// writes orders and rate versions, waiting after each write for the
// progress marker of its snapshot (so the join sees the writes in commit
// order): each order comes once, as an insert, when the watermark passes
// its time, with the rate version of its time (updated twice, deleted at
// or below the watermark, inserted again), NULL when there is none; the
// late order is dropped and counted on the markers, which carry the
// watermark. (An ADBC reader cannot wait for progress markers: its stream
// would see the writes interleaved as they come, which decides lateness.)
func TestChangeStreamRowtimeTemporal(t *testing.T) {
	_, cnxn, cl := streamServer(t,
		"CREATE TABLE orders (id BIGINT, cur STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE TABLE rates (cur STRING NOT NULL, rate BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts, PRIMARY KEY (cur) NOT ENFORCED)")
	const hint = "/*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms', 'continuous.discovery-interval'='20ms') */"
	const q = "SELECT o.id, r.rate FROM orders " + hint + " AS o LEFT JOIN rates " + hint + " FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline := time.AfterFunc(60*time.Second, cancel)
	defer deadline.Stop()
	raw := openQuery(ctx, t, cl, q)
	defer raw.Release()

	var got []string
	var last flightsql.ChangeProgress
	snaps := map[string]int64{}
	// follow reads the stream up to the progress marker of the tables'
	// snapshots so far.
	follow := func() {
		t.Helper()
		for raw.Next() {
			meta, err := flightsql.ParseChangeProgress(raw.LatestAppMetadata())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range batchRows(raw.RecordBatch()) {
				if r[0] != "+I" {
					t.Fatalf("the join emitted %q", r)
				}
				got = append(got, strings.Join(r[1:], "|"))
			}
			if meta.CaughtUp && meta.Snapshots["default.orders AS o"] >= snaps["orders"] && meta.Snapshots["default.rates AS r"] >= snaps["rates"] {
				last = meta
				return
			}
		}
		t.Fatalf("the stream ended: %v", raw.Err())
	}
	write := func(table, stmt string) {
		t.Helper()
		mustExec(t, cnxn, stmt)
		snaps[table]++
		follow()
	}
	write("rates", "INSERT INTO rates VALUES ('EUR', 10, TIMESTAMP '2024-01-01 00:00:00'), ('USD', 1, TIMESTAMP '2024-01-01 00:00:00')")
	write("orders", "INSERT INTO orders VALUES (1, 'EUR', TIMESTAMP '2024-01-01 00:00:03'), (2, 'USD', TIMESTAMP '2024-01-01 00:00:03')")
	write("rates", "INSERT INTO rates VALUES ('EUR', 11, TIMESTAMP '2024-01-01 00:00:02')") // watermark 00:00:02
	// Order 3 is late; order 4 waits.
	write("orders", "INSERT INTO orders VALUES (3, 'EUR', TIMESTAMP '2024-01-01 00:00:01.500'), (4, 'EUR', TIMESTAMP '2024-01-01 00:00:06')")
	// The delete's time (00:00:00) is below the watermark: USD has no row
	// after it.
	write("rates", "DELETE FROM rates WHERE cur = 'USD'")
	if len(got) != 0 || last.Watermark != "2024-01-01T00:00:02Z" || last.LateRows != 1 {
		t.Fatalf("before the watermark passed an order: rows %q, watermark %s, %d late rows", got, last.Watermark, last.LateRows)
	}
	write("rates", "INSERT INTO rates VALUES ('EUR', 12, TIMESTAMP '2024-01-01 00:00:05')") // watermark 00:00:05
	write("orders", "INSERT INTO orders VALUES (5, 'USD', TIMESTAMP '2024-01-01 00:00:08')")
	write("rates", "INSERT INTO rates VALUES ('USD', 2, TIMESTAMP '2024-01-01 00:00:07')") // watermark 00:00:07
	want := []string{"1|11", "2|NULL", "4|12"}
	slices.Sort(got)
	if !slices.Equal(got, want) || last.Watermark != "2024-01-01T00:00:07Z" || last.LateRows != 1 {
		t.Fatalf("the stream gave %q at watermark %s with %d late rows, want %q at 2024-01-01T00:00:07Z with 1", got, last.Watermark, last.LateRows, want)
	}

}
