package flightsql_test

import (
	"context"
	"github.com/apache/arrow-go/v18/arrow/array"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/flightsql"
)

// TestChangeStreamWindow streams a TUMBLE aggregation over a table with a
// WATERMARK and a computed column to two real clients over loopback: the
// ADBC driver reads each window once, as inserts, when the watermark passes
// its end, equal to the batch window TVF over the rows that were not late;
// a raw Flight SQL client sees the watermark and the late row count on the
// progress markers.
func TestChangeStreamWindow(t *testing.T) {
	_, cnxn, cl := streamServer(t,
		"CREATE TABLE bid (auction BIGINT, price BIGINT, dateTime TIMESTAMP(3), cents AS price * 100, WATERMARK FOR dateTime AS dateTime - INTERVAL '1' SECOND)")
	const q = "SELECT window_start, window_end, auction, count(*), sum(cents) FROM TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(dateTime), INTERVAL '5' SECOND)) %s GROUP BY window_start, window_end, auction"
	const hint = "/*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms', 'continuous.discovery-interval'='20ms') */"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// ADBC's Go reader (v1.12) races gRPC's stream finish when a stream is
	// cancelled, inside the driver: under -race only the raw client reads.
	var ardr array.RecordReader
	if !raceEnabled {
		stmt, err := cnxn.NewStatement()
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		if err := stmt.SetSqlQuery(strings.Replace(strings.Replace(q, "%s", hint, 1), "%s", "", 1)); err != nil {
			t.Fatal(err)
		}
		if ardr, _, err = stmt.ExecuteQuery(ctx); err != nil {
			t.Fatal(err)
		}
		defer ardr.Release()
		// The first batch (a progress marker of the empty table) says the
		// stream has started: what follows comes as changes.
		if !ardr.Next() {
			t.Fatalf("the stream ended: %v", ardr.Err())
		}
	}
	raw := openQuery(ctx, t, cl, strings.Replace(strings.Replace(q, "%s", hint, 1), "%s", "", 1))
	defer raw.Release()
	if !raw.Next() {
		t.Fatalf("the raw stream ended: %v", raw.Err())
	}

	for _, s := range []string{
		"INSERT INTO bid VALUES (1, 10, TIMESTAMP '2024-01-01 00:00:01'), (2, 5, TIMESTAMP '2024-01-01 00:00:03')",
		// Watermark 00:00:06: [00:00, 00:05) closes.
		"INSERT INTO bid VALUES (1, 7, TIMESTAMP '2024-01-01 00:00:07')",
		// Late: its window has closed; dropped and counted.
		"INSERT INTO bid VALUES (1, 1000, TIMESTAMP '2024-01-01 00:00:02')",
		"INSERT INTO bid VALUES (2, 3, TIMESTAMP '2024-01-01 00:00:08.500'), (3, 4, TIMESTAMP '2024-01-01 00:00:09.999')",
		// Watermark 00:00:11: [00:05, 00:10) closes.
		"INSERT INTO bid VALUES (1, 1, TIMESTAMP '2024-01-01 00:00:12')",
	} {
		mustExec(t, cnxn, s)
	}
	want := tableRows(t, query(t, cnxn, strings.Replace(strings.Replace(q, "%s", "", 1), "%s",
		"WHERE price < 1000 AND window_end <= TIMESTAMP '2024-01-01 00:00:10'", 1)))
	if len(want) != 5 {
		t.Fatalf("the batch query gives %q", want)
	}

	if ardr != nil {
		var got []string
		deadline := time.AfterFunc(30*time.Second, cancel)
		defer deadline.Stop()
		for len(got) < len(want) && ardr.Next() {
			for _, r := range batchRows(ardr.RecordBatch()) {
				if r[0] != "+I" {
					t.Fatalf("a window aggregation emitted %q", r)
				}
				got = append(got, strings.Join(r[1:], "|"))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("ADBC read the windows %q (%v), the batch query gives %q", got, ardr.Err(), want)
		}
	}

	// The raw client: rows of the same windows, then a progress marker at
	// the last snapshot with the watermark and one late row.
	var rows int
	for raw.Next() {
		meta, err := flightsql.ParseChangeProgress(raw.LatestAppMetadata())
		if err != nil {
			t.Fatal(err)
		}
		rows += int(raw.RecordBatch().NumRows())
		if meta.CaughtUp && meta.Watermark == "2024-01-01T00:00:11Z" {
			if meta.LateRows != 1 || rows != len(want) {
				t.Fatalf("at watermark %s: %d late rows and %d window rows, want 1 and %d", meta.Watermark, meta.LateRows, rows, len(want))
			}
			return
		}
	}
	t.Fatalf("no progress marker with watermark 2024-01-01T00:00:11Z: %v", raw.Err())
}
