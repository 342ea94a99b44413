package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
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

// TestOverEqualsBatch is the invariant of OVER aggregations: a random
// OVER aggregation (sum, count, min, max, avg, bool_or, var_samp; per key
// or over all rows;
// ROWS or RANGE frames from n or UNBOUNDED PRECEDING, or the default)
// streams an append table under random inserts of out-of-order event
// times (NULL ones too), one snapshot each. A model computes the
// watermark after each snapshot and which rows are late (event time NULL
// or at or before the previous snapshot's watermark), and mirrors the
// other rows in a table. Then the rows the stream emits at each snapshot,
// all inserts, are exactly the batch OVER query over the mirror for the
// rows whose event time that snapshot's watermark passed (the rows after
// them do not change their frames), and the late count and watermark the
// stream reports are the model's. ROWS frames run over distinct event
// times (which of two peers comes first in a batch sort is not defined);
// RANGE frames over times on a quarter-second grid, so peers are common.
// Replay with -seed.
func TestOverEqualsBatch(t *testing.T) {
	seed := testSeed(t)
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			runOverInvariant(t, rand.New(rand.NewSource(seed+int64(i))))
		})
	}
}

// randomOverFrame draws a frame: ROWS ones only when rows may (event
// times are distinct).
func randomOverFrame(rng *rand.Rand, rows bool) string {
	switch r := rng.Intn(6); {
	case rows && r == 0:
		return fmt.Sprintf(" ROWS BETWEEN %d PRECEDING AND CURRENT ROW", rng.Intn(4))
	case rows && r == 1:
		return " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
	case r == 2 || r == 3:
		return fmt.Sprintf(" RANGE BETWEEN INTERVAL '%d' MILLISECOND PRECEDING AND CURRENT ROW", 250*rng.Intn(9))
	case r == 4:
		return " RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
	}
	return ""
}

func runOverInvariant(t *testing.T, rng *rand.Rand) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng, sess, run := invariantEngine(t, ctx, rng, 0)
	delay := int64(rng.Intn(3)) // seconds
	run(fmt.Sprintf("CREATE TABLE t0 (id INT NOT NULL, k INT, v BIGINT, ts TIMESTAMP(6), WATERMARK FOR ts AS ts - INTERVAL '%d' SECOND) WITH ('write-only' = 'true')", delay))
	run("CREATE TABLE m (id INT NOT NULL, k INT, v BIGINT, ts TIMESTAMP(6))")
	ev, err := eng.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "t0"})
	if err != nil {
		t.Fatal(err)
	}
	mirror, err := eng.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "m"})
	if err != nil {
		t.Fatal(err)
	}
	distinct := rng.Intn(2) == 0
	part := ""
	if rng.Intn(3) != 0 {
		part = "PARTITION BY k "
	}
	var aggs []string
	for i := range 1 + rng.Intn(3) {
		fns := []string{"sum(v)", "count(*)", "count(v)", "max(v)", "min(v)", "avg(v)", "bool_or(v > 50)", "var_samp(v)"}
		fn := fns[rng.Intn(len(fns))]
		aggs = append(aggs, fmt.Sprintf("%s OVER (%sORDER BY ts%s) AS a%d", fn, part, randomOverFrame(rng, distinct), i))
	}
	where := ""
	if rng.Intn(3) == 0 {
		// A filter below (still insert-only) that skips no data in the
		// reader: the sources' watermark is that of the rows read.
		where = " WHERE v IS NULL OR v % 7 <> 3"
	}
	query := func(table string) string {
		return fmt.Sprintf("SELECT id, k, v, ts, %s FROM %s%s", strings.Join(aggs, ", "), table, where)
	}
	text := query("t0 /*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms', 'continuous.discovery-interval'='20ms') */")
	t.Logf("%s (delay %ds, distinct times %v)", text, delay, distinct)
	st, err := sess.Prepare(ctx, text, nil)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	if plan := explain(t, ctx, sess, text); !strings.Contains(plan, "OverAggregate") {
		t.Fatalf("not an OVER aggregation:\n%s", plan)
	}
	w := startWindowRun(t, ctx, st, text, 0)
	defer w.close()

	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	now := base
	var nextID int
	var maxTS, lateModel, mirrorSnap int64
	seen := false
	wm := func() int64 { return maxTS - delay*1e6 }
	type step struct {
		snapshot, mirror int64
		from, to         int64
		fromValid, valid bool
	}
	var steps []step
	tsSQL := func(us int64) string {
		return "TIMESTAMP '" + time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.000000") + "'"
	}
	for range 20 + rng.Intn(30) {
		prevSeen, prevWM := seen, wm()
		var vals, kept []string
		for range 1 + rng.Intn(6) {
			nextID++
			ts := (now + int64(rng.Intn(5_000_000)) - 4_000_000) / 250_000 * 250_000
			if distinct {
				ts += int64(nextID) // a microsecond each: never a peer
			}
			n := rng.Intn(100)
			v := fmt.Sprint(n)
			filtered := where != "" && n%7 == 3 // the filter drops it first
			if !filtered && rng.Intn(8) == 0 {
				v = "NULL"
			}
			tsv := tsSQL(ts)
			isNull := rng.Intn(20) == 0
			if isNull {
				tsv = "NULL"
			}
			row := fmt.Sprintf("(%d, %d, %s, %s)", nextID, rng.Intn(3), v, tsv)
			vals = append(vals, row)
			if !isNull && (!seen || ts > maxTS) {
				maxTS, seen = ts, true
			}
			if filtered {
				continue
			}
			if isNull || prevSeen && ts <= prevWM {
				lateModel++
				continue
			}
			kept = append(kept, row)
		}
		run("INSERT INTO t0 VALUES " + strings.Join(vals, ", "))
		snap, err := ev.LatestSnapshotID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(kept) > 0 {
			run("INSERT INTO m VALUES " + strings.Join(kept, ", "))
			if mirrorSnap, err = mirror.LatestSnapshotID(ctx); err != nil {
				t.Fatal(err)
			}
		}
		steps = append(steps, step{snapshot: snap, mirror: mirrorSnap, from: prevWM, fromValid: prevSeen, to: wm(), valid: seen})
		now += int64(rng.Intn(1_500_000))
	}
	snaps := make([]int64, len(steps))
	for i, s := range steps {
		snaps[i] = s.snapshot
	}
	byStep := w.insertsByStep(t, snaps, "an OVER aggregation")
	checked := 0
	for i, s := range steps {
		want := []string{}
		if s.valid && s.mirror > 0 && (!s.fromValid || s.to > s.from) {
			cond := "ts <= " + tsSQL(s.to)
			if s.fromValid {
				cond += " AND ts > " + tsSQL(s.from)
			}
			q := fmt.Sprintf("SELECT * FROM (%s) x WHERE %s", query(fmt.Sprintf("m /*+ OPTIONS('scan.snapshot-id'='%d') */", s.mirror)), cond)
			want = queryRows(t, ctx, sess, q)
		}
		g := byStep[i]
		slices.Sort(g)
		slices.Sort(want)
		if !slices.Equal(g, want) {
			t.Fatalf("at snapshot %d (watermark %s) the stream emitted\n%q\nthe batch query over the rows that were not late, for the rows the watermark passed there, is\n%q", s.snapshot, time.UnixMicro(s.to).UTC(), g, want)
		}
		checked += len(g)
	}
	if n := w.late.Load(); n != lateModel {
		t.Fatalf("the stream reports %d late rows, the model %d", n, lateModel)
	}
	if got, want := w.watermark.Load(), wm(); got != want {
		t.Fatalf("the stream's watermark is %s, the model's %s", time.UnixMicro(got).UTC(), time.UnixMicro(want).UTC())
	}
	t.Logf("%d snapshots, %d rows checked, %d late rows", len(steps), checked, lateModel)
}

// TestOverRefused: OVER aggregations a stream cannot maintain as Flink
// does are refused at planning, with the reason.
func TestOverRefused(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01')")
	for _, q := range []string{
		"CREATE TABLE keyed (auction INT NOT NULL, price BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts, PRIMARY KEY (auction) NOT ENFORCED)",
	} {
		st, err := sess.Prepare(ctx, q, nil)
		if err == nil {
			_, err = st.Exec(ctx, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	const hint = "/*+ OPTIONS('scan.mode'='latest-full') */"
	for q, want := range map[string]string{
		"SELECT sum(price) OVER (PARTITION BY auction ORDER BY ts DESC) FROM bid %s":                                           "ordered by its table's WATERMARK column (event time) ascending",
		"SELECT sum(price) OVER (PARTITION BY auction ORDER BY price) FROM bid %s":                                             "not by price",
		"SELECT sum(price) OVER (ORDER BY ts, price) FROM bid %s":                                                              "ordered by one column",
		"SELECT sum(price) OVER (PARTITION BY auction) FROM bid %s":                                                            "ordered by one column",
		"SELECT sum(price) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM bid %s":                            "ends its frames at CURRENT ROW",
		"SELECT sum(price) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND UNBOUNDED FOLLOWING) FROM bid %s": "ends its frames at CURRENT ROW",
		"SELECT lag(price) OVER (ORDER BY ts) FROM bid %s":                                                                     "lag OVER (...) is not supported yet",
		"SELECT ROW_NUMBER() OVER (ORDER BY ts) FROM bid %s":                                                                   "row_number OVER (...) is not supported yet",
		"SELECT sum(price) OVER (ORDER BY ts) FROM keyed %s":                                                                   "needs an input that only inserts",
		"SELECT sum(price) OVER (ORDER BY ts) FROM bid /*+ OPTIONS('scan.mode'='latest') */":                                   "needs the content of default.bid first",
		"SELECT * FROM (SELECT auction, sum(price) OVER (ORDER BY ts) AS s FROM bid %s) x ORDER BY s LIMIT 2":                  "",
		"SELECT var_pop(CAST(price AS DOUBLE)) OVER (ORDER BY ts) FROM bid %s":                                                 "not over DOUBLE yet",
	} {
		text := strings.ReplaceAll(q, "%s", hint)
		_, err := sess.Prepare(ctx, text, nil)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", text, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, plan.ErrNotImplemented) {
			t.Errorf("%s: got %v, want a not-implemented error containing %q", text, err, want)
		}
	}
}
