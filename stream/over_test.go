package stream_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestOverBoundedEnd: an OVER aggregation over a bounded stream emits
// every row once, as +I, with the batch query's aggregates: ROWS and
// RANGE frames, bounded and not, peers of one event time, NULL arguments.
func TestOverBoundedEnd(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01'), (1, 5, TIMESTAMP '2024-01-01 00:00:02'), (2, 7, TIMESTAMP '2024-01-01 00:00:02'), "+
		"(1, NULL, TIMESTAMP '2024-01-01 00:00:03'), (1, 4, TIMESTAMP '2024-01-01 00:00:05.5'), (2, 1, TIMESTAMP '2024-01-01 00:00:09'), (2, 2, TIMESTAMP '2024-01-01 00:00:09')")
	const q = "SELECT auction, price, ts, %s FROM bid %s"
	const bounded = "/*+ OPTIONS('scan.mode'='latest-full', 'scan.bounded.snapshot-id'='1') */"
	for _, aggs := range []string{
		"sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), count(*) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)",
		"max(price) OVER (PARTITION BY auction ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW), min(price) OVER (PARTITION BY auction ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)",
		"sum(price) OVER (ORDER BY ts), count(price) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW)",
		"avg(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
	} {
		want := sortedRows(t, ctx, sess, fmt.Sprintf(q, aggs, ""))
		var got []string
		for _, r := range sortedRows(t, ctx, sess, fmt.Sprintf(q, aggs, bounded)) {
			k, rest, _ := strings.Cut(r, "|")
			if k != "+I" {
				t.Fatalf("an OVER aggregation emitted %s", r)
			}
			got = append(got, rest)
		}
		if len(want) != 7 || !slices.Equal(got, want) {
			t.Fatalf("%s: the bounded stream gives\n%q\nthe batch query\n%q", aggs, got, want)
		}
	}
	t.Log(explain(t, ctx, sess, fmt.Sprintf(q, "sum(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)", bounded)))
}
