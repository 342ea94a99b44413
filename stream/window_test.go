package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
)

// startWindowRun runs st (the streaming query text over tables, by
// their index) pulled on its own goroutine.
func startWindowRun(t *testing.T, ctx context.Context, st *engine.Statement, text string, tables ...int) *windowRun {
	t.Helper()
	w := &windowRun{streamRun: &streamRun{query: text, img: map[string]int{}, events: make(chan event, 4), tables: tables}}
	sctx, stop := context.WithCancel(plan.WithStreamObserver(ctx, w))
	op, err := st.Query(sctx, nil)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	w.stop = stop
	w.wg.Add(1)
	go w.pull(sctx, op)
	return w
}

// windowRun is a streamRun that also follows the query's event time.
type windowRun struct {
	*streamRun
	watermark atomic.Int64 // microseconds; 0: none
	late      atomic.Int64
}

var _ plan.EventTimeObserver = (*windowRun)(nil)

func (w *windowRun) EventTime(watermark time.Time, lateRows int64) {
	if !watermark.IsZero() {
		w.watermark.Store(watermark.UnixMicro())
	}
	w.late.Store(lateRows)
}

// windowShape is a random window TVF: its SQL and, independently of the
// code under test, the earliest end of the windows holding an event time.
type windowShape struct {
	tvf        string // "TUMBLE(TABLE %s, DESCRIPTOR(ts), ...)" with %s for the table
	step, size int64  // milliseconds
	session    bool   // SESSION, gap size
}

// randomWindow draws a window TVF whose sizes are whole seconds, or half
// or quarter seconds (Flink's windows are whole milliseconds).
func randomWindow(rng *rand.Rand) windowShape {
	unit := []int64{1000, 500, 250}[rng.Intn(3)]
	iv := func(n int64) string { return fmt.Sprintf("INTERVAL '%d' MILLISECOND", n*unit) }
	switch rng.Intn(4) {
	case 3:
		g := int64(1 + rng.Intn(3))
		return windowShape{tvf: fmt.Sprintf("SESSION(TABLE %%s, DESCRIPTOR(ts), %s)", iv(g)), size: g * unit, session: true}
	case 0:
		s := int64(1 + rng.Intn(4))
		return windowShape{fmt.Sprintf("TUMBLE(TABLE %%s, DESCRIPTOR(ts), %s)", iv(s)), s * unit, s * unit, false}
	case 1:
		st := int64(1 + rng.Intn(2))
		s := st * int64(2+rng.Intn(2))
		return windowShape{fmt.Sprintf("HOP(TABLE %%s, DESCRIPTOR(ts), %s, %s)", iv(st), iv(s)), st * unit, s * unit, false}
	default:
		st := int64(1 + rng.Intn(2))
		s := st * int64(2+rng.Intn(3))
		return windowShape{fmt.Sprintf("CUMULATE(TABLE %%s, DESCRIPTOR(ts), %s, %s)", iv(st), iv(s)), st * unit, s * unit, false}
	}
}

// firstEnd is the end (microseconds) of the earliest window holding t:
// windows are aligned to the epoch, and every window of TUMBLE, HOP and
// CUMULATE holding t ends at or after the next multiple of the step.
func (w windowShape) firstEnd(t int64) int64 {
	step := w.step * 1e3
	return t - ((t%step)+step)%step + step
}

// late reports whether a change at t is late after a snapshot of
// watermark wm: its earliest window has closed, or for sessions, t is at
// or before the watermark (a later row could bridge it to a session
// emitted already).
func (w windowShape) late(t, wm int64) bool {
	if w.session {
		return t <= wm
	}
	return w.firstEnd(t) <= wm
}

// TestWindowEqualsBatch is the event-time invariant: a random window TVF
// aggregation streams a table under random inserts, updates and deletes
// of out-of-order event times, one snapshot each. A model computes the
// watermark after each snapshot (largest event time so far minus the
// delay) and which changes are late (the earliest window of their event
// time has closed at the previous snapshot's watermark), and keeps the
// changes that are not late in a mirror table. Then the rows the stream
// emits at each snapshot are exactly the batch window TVF query over the
// mirror for the windows that snapshot's watermark closed, every output is
// an insert, the late count the stream reports equals the model's, and so
// does its watermark. Replay with -seed.
func TestWindowEqualsBatch(t *testing.T) {
	seed := testSeed(t)
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			runWindowInvariant(t, rand.New(rand.NewSource(seed+int64(i))), 0)
		})
	}
}

// TestWindowSpillEqualsBatch is TestWindowEqualsBatch for window and
// SESSION aggregations and window top-Ns (over them or over the TVF's
// rows) under a query budget of 1 KB, so that their state spills at
// almost every snapshot, retractions included. Replay with -seed.
func TestWindowSpillEqualsBatch(t *testing.T) {
	seed := testSeed(t)
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			runWindowInvariant(t, rand.New(rand.NewSource(seed+int64(i))), 1<<10)
		})
	}
}

// version is one version of a row of the streamed table.
type version struct {
	ver, k, v int64
	ts        int64 // event time, microseconds
}

// runWindowInvariant runs the invariant under a query budget (0: the
// default).
func runWindowInvariant(t *testing.T, rng *rand.Rand, budget int64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng, sess, run := invariantEngine(t, ctx, rng, budget)
	var err error
	delay := int64(rng.Intn(3)) // seconds
	// The event time is a column, or computed from one (half a second on).
	computed := rng.Intn(2) == 0
	timeCols, shift := "ts TIMESTAMP(3)", int64(0)
	if computed {
		timeCols, shift = "t0 TIMESTAMP(3), ts AS t0 + INTERVAL '0.5' SECOND", 500_000
	}
	run(fmt.Sprintf("CREATE TABLE t0 (id INT NOT NULL, ver BIGINT, k INT, v BIGINT, %s, WATERMARK FOR ts AS ts - INTERVAL '%d' SECOND, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2', 'write-only' = 'true')", timeCols, delay))
	run("CREATE TABLE m (ver BIGINT, k INT, v BIGINT, ts TIMESTAMP(3)) WITH ('bucket' = '-1')")
	ev, err := eng.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "t0"})
	if err != nil {
		t.Fatal(err)
	}
	mirror, err := eng.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "m"})
	if err != nil {
		t.Fatal(err)
	}

	shape := randomWindow(rng)
	keys := ""
	if rng.Intn(2) == 0 {
		keys = ", k"
	}
	// Sessions per k or over all rows, grouped by k or not: the groups of
	// a session aggregation need not be its partition.
	if shape.session && rng.Intn(2) == 0 {
		shape.tvf = strings.Replace(shape.tvf, "%s", "%s PARTITION BY k", 1)
	}
	// Half the runs rank the windows' rows: a window top-N, with or
	// without its row number, ordered totally (k is unique in a window).
	topN, numbered := rng.Intn(2) == 0, rng.Intn(2) == 0
	limit := 1 + rng.Intn(2)
	// A third of the other runs rank the TVF's rows themselves (no
	// aggregation), ordered totally (ver is unique).
	rows := !topN && !shape.session && rng.Intn(3) == 0
	query := func(table string) string {
		if rows {
			out := "window_start, window_end, ver, k, v"
			if numbered {
				out += ", rn"
			}
			return fmt.Sprintf("SELECT %s FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end%s ORDER BY v DESC, ver) AS rn FROM TABLE(%s) {WHERE}) WHERE rn <= %d", out, keys, fmt.Sprintf(shape.tvf, table), limit)
		}
		agg := fmt.Sprintf("SELECT window_start, window_end%s, count(*) AS c, sum(v) AS s, max(v) AS mx, min(v) AS mn FROM TABLE(%s) {WHERE} GROUP BY window_start, window_end%s", keys, fmt.Sprintf(shape.tvf, table), keys)
		if !topN {
			return agg
		}
		out := "window_start, window_end" + keys + ", c, s, mx, mn"
		if numbered {
			out += ", rn"
		}
		return fmt.Sprintf("SELECT %s FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY c DESC, s%s) AS rn FROM (%s)) WHERE rn <= %d", out, keys, agg, limit)
	}
	text := strings.Replace(query("t0 /*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms', 'continuous.discovery-interval'='20ms') */"), "{WHERE}", "", 1)
	t.Logf("%s (delay %ds)", text, delay)
	st, err := sess.Prepare(ctx, text, nil)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	if topN || rows {
		if plan := explain(t, ctx, sess, text); !strings.Contains(plan, "WindowTopN") {
			t.Fatalf("not a window top-N:\n%s", plan)
		}
	}
	w := startWindowRun(t, ctx, st, text, 0)
	defer w.close()

	// The workload and the model.
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	now := base
	live := map[int]version{} // id -> current version
	var nextID int
	var ver, maxTS int64
	seen := false
	wm := func() int64 { // the model's watermark; valid when seen
		return maxTS - delay*1e6
	}
	type step struct {
		snapshot, mirror int64
		from, to         int64 // windows ending in (from, to] close here; from = math.MinInt64: none before
		closesFrom       bool  // from is valid
		closes           bool
	}
	var steps []step
	var lateModel int64
	var mirrorSnap int64
	tsSQL := func(us int64) string {
		return "TIMESTAMP '" + time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.000") + "'"
	}
	for range 20 + rng.Intn(30) {
		prevSeen, prevWM := seen, wm()
		late := func(ts int64) bool { return prevSeen && shape.late(ts, prevWM) }
		var add []version
		var drop []int64
		newVersion := func(id int) version {
			ver++
			// Quarter seconds: event times often meet window ends and watermarks.
			ts := (now + int64(rng.Intn(5_000_000)) - 4_000_000) / 250_000 * 250_000
			return version{ver: ver, k: int64(rng.Intn(3)), v: int64(rng.Intn(100)), ts: ts + shift}
		}
		stored := func(x version) string { return tsSQL(x.ts - shift) }
		var stmt string
		ids := slices.Sorted(func(yield func(int) bool) {
			for id := range live {
				if !yield(id) {
					return
				}
			}
		})
		switch r := rng.Intn(10); {
		case r < 6 || len(ids) == 0: // insert
			var vals []string
			for range 1 + rng.Intn(6) {
				nextID++
				x := newVersion(nextID)
				live[nextID] = x
				vals = append(vals, fmt.Sprintf("(%d, %d, %d, %d, %s)", nextID, x.ver, x.k, x.v, stored(x)))
				if !seen || x.ts > maxTS {
					maxTS, seen = x.ts, true
				}
				if late(x.ts) {
					lateModel++
				} else {
					add = append(add, x)
				}
			}
			stmt = "INSERT INTO t0 VALUES " + strings.Join(vals, ", ")
		case r < 8: // update one row: -U of the old version, +U of the new
			id := ids[rng.Intn(len(ids))]
			old, x := live[id], newVersion(id)
			live[id] = x
			stmt = fmt.Sprintf("UPDATE t0 SET ver = %d, k = %d, v = %d, %s = %s WHERE id = %d", x.ver, x.k, x.v, map[bool]string{true: "t0", false: "ts"}[computed], stored(x), id)
			if !seen || x.ts > maxTS {
				maxTS, seen = x.ts, true
			}
			for _, c := range []struct {
				x      version
				retire bool
			}{{old, true}, {x, false}} {
				switch {
				case late(c.x.ts):
					lateModel++
				case c.retire:
					drop = append(drop, c.x.ver)
				default:
					add = append(add, c.x)
				}
			}
		default: // delete some rows
			var del []string
			for range 1 + rng.Intn(3) {
				id := ids[rng.Intn(len(ids))]
				x, ok := live[id]
				if !ok {
					continue
				}
				delete(live, id)
				del = append(del, fmt.Sprint(id))
				if late(x.ts) {
					lateModel++
				} else {
					drop = append(drop, x.ver)
				}
			}
			stmt = "DELETE FROM t0 WHERE id IN (" + strings.Join(del, ", ") + ")"
		}
		run(stmt)
		snap, err := ev.LatestSnapshotID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(add) > 0 {
			var vals []string
			for _, x := range add {
				vals = append(vals, fmt.Sprintf("(%d, %d, %d, %s)", x.ver, x.k, x.v, tsSQL(x.ts)))
			}
			run("INSERT INTO m VALUES " + strings.Join(vals, ", "))
		}
		if len(drop) > 0 {
			run(fmt.Sprintf("DELETE FROM m WHERE ver IN (%s)", strings.ReplaceAll(strings.Trim(fmt.Sprint(drop), "[]"), " ", ", ")))
		}
		if len(add)+len(drop) > 0 {
			if mirrorSnap, err = mirror.LatestSnapshotID(ctx); err != nil {
				t.Fatal(err)
			}
		}
		steps = append(steps, step{snapshot: snap, mirror: mirrorSnap, from: prevWM, closesFrom: prevSeen, to: wm(), closes: seen})
		now += int64(rng.Intn(1_500_000))
	}
	snaps := make([]int64, len(steps))
	for i, s := range steps {
		snaps[i] = s.snapshot
	}
	// t0 is write-only (no compaction), so every snapshot is a step's
	// write and a window closes at the marker of the step that closes it.
	byStep := w.insertsByStep(t, snaps, "a window aggregation")
	checked := 0
	for i, s := range steps {
		want := []string{}
		if s.closes && s.mirror > 0 && (!s.closesFrom || s.to > s.from) {
			where := "WHERE window_end <= " + tsSQL(s.to)
			if s.closesFrom {
				where += " AND window_end > " + tsSQL(s.from)
			}
			q := strings.Replace(query(fmt.Sprintf("m /*+ OPTIONS('scan.snapshot-id'='%d') */", s.mirror)), "{WHERE}", where, 1)
			st, err := sess.Prepare(ctx, q, nil)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			op, err := st.Query(ctx, nil)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if want, err = drain(ctx, op); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		g := byStep[i]
		slices.Sort(g)
		slices.Sort(want)
		if !slices.Equal(g, want) {
			t.Fatalf("at snapshot %d (watermark %s) the stream emitted\n%q\nthe batch windows closed there (over the rows that were not late) are\n%q", s.snapshot, time.UnixMicro(s.to).UTC(), g, want)
		}
		checked += len(g)
	}
	if n := w.late.Load(); n != lateModel {
		t.Fatalf("the stream reports %d late rows, the model %d", n, lateModel)
	}
	if got, want := w.watermark.Load(), wm(); got != want {
		t.Fatalf("the stream's watermark is %s, the model's %s", time.UnixMicro(got).UTC(), time.UnixMicro(want).UTC())
	}
	t.Logf("%d snapshots, %d window rows checked, %d late rows", len(steps), checked, lateModel)
}

// windowEngine opens an engine with a table bid(auction, price, ts) whose
// WATERMARK is ts - 1 s, holding rows.
func windowEngine(t *testing.T, rows string) (context.Context, *engine.Session) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	eng, err := engine.Open(ctx, engine.Config{Mem: mem, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	t.Cleanup(func() { eng.Close() })
	sess := eng.NewSession()
	for _, q := range []string{
		"CREATE TABLE bid (auction INT, price BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"INSERT INTO bid VALUES " + rows,
	} {
		st, err := sess.Prepare(ctx, q, nil)
		if err == nil {
			_, err = st.Exec(ctx, nil)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return ctx, sess
}

// TestWindowBoundedEnd: when a bounded stream ends, every window still
// open is emitted (by a window aggregation or a window join), so the
// stream gives the whole batch answer.
func TestWindowBoundedEnd(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01'), (1, 5, TIMESTAMP '2024-01-01 00:00:04'), (2, 7, TIMESTAMP '2024-01-01 00:00:09')")
	const q = "SELECT window_start, window_end, auction, sum(price) FROM TABLE(HOP(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '4' SECOND)) GROUP BY window_start, window_end, auction"
	rows := func(text string) []string { return sortedRows(t, ctx, sess, text) }
	var got []string
	for _, r := range rows(fmt.Sprintf(q, "/*+ OPTIONS('scan.mode'='latest-full', 'scan.bounded.snapshot-id'='1') */")) {
		k, rest, _ := strings.Cut(r, "|")
		if k != "+I" {
			t.Fatalf("row %s", r)
		}
		got = append(got, rest)
	}
	want := rows(fmt.Sprintf(q, ""))
	if len(want) != 6 || !slices.Equal(got, want) {
		t.Fatalf("the bounded stream gives %q, the batch query %q", got, want)
	}

	// Other aggregates, FILTER and HAVING (a filter of the insert-only
	// output), and the plan.
	const q2 = "SELECT window_start, window_end, count(DISTINCT auction), avg(price), sum(price) FILTER (WHERE auction = 1) FROM TABLE(CUMULATE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND)) GROUP BY window_start, window_end HAVING count(*) > 1"
	const bounded = "/*+ OPTIONS('scan.mode'='latest-full', 'scan.bounded.snapshot-id'='1') */"
	got = got[:0]
	for _, r := range rows(fmt.Sprintf(q2, bounded)) {
		got = append(got, strings.TrimPrefix(r, "+I|"))
	}
	if want := rows(fmt.Sprintf(q2, "")); len(want) != 1 || !slices.Equal(got, want) {
		t.Fatalf("the bounded stream gives %q, the batch query %q", got, want)
	}
	// A window join of bounded streams emits every window at their end.
	const q3 = "SELECT a.auction, b.price, a.window_start, b.window_time FROM (SELECT * FROM TABLE(TUMBLE(TABLE bid %[1]s, DESCRIPTOR(ts), INTERVAL '5' SECOND))) a JOIN (SELECT * FROM TABLE(TUMBLE(TABLE bid %[1]s, DESCRIPTOR(ts), INTERVAL '5' SECOND))) b ON a.window_start = b.window_start AND a.window_end = b.window_end"
	got = got[:0]
	for _, r := range rows(fmt.Sprintf(q3, bounded)) {
		got = append(got, strings.TrimPrefix(r, "+I|"))
	}
	if want := rows(fmt.Sprintf(q3, "")); len(want) != 5 || !slices.Equal(got, want) {
		t.Fatalf("the bounded window join gives %q, the batch query %q", got, want)
	}
	plan := explain(t, ctx, sess, fmt.Sprintf(q2, bounded))
	for _, want := range []string{"WindowAggregate CUMULATE(ts, size 6s, step 2s)", "StreamFilter"} {
		if !strings.Contains(plan, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, plan)
		}
	}
}

// TestWindowRefused: window TVFs over streams that are not aggregated by
// their windows, or not over the table's WATERMARK column, are refused at
// planning with the reason.
func TestWindowRefused(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01')")
	const hint = "/*+ OPTIONS('scan.mode'='latest-full') */"
	for q, want := range map[string]string{
		"SELECT auction FROM TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND))":                                                                                                                                                 "must be aggregated by its windows",
		"SELECT window_start, count(*) FROM TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY window_start":                                                                                                            "groups by both window_start and window_end",
		"SELECT window_start, window_end, count(*) FROM TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) WHERE window_start > TIMESTAMP '2024-01-01 00:00:00' GROUP BY window_start, window_end":                               "not used in a filter",
		"SELECT window_start, window_end, window_time, count(*) FROM TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY window_start, window_end, window_time":                                                          "window_time is not supported yet",
		"SELECT window_start, window_end, max(window_start) FROM TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY window_start, window_end":                                                                           "not used in an aggregate",
		"SELECT count(*) FROM TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) a JOIN TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) b ON a.window_start = b.window_start":                                   "window",
		"SELECT * FROM (SELECT auction, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn FROM TABLE(SESSION(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND))) WHERE rn <= 2":                             "window top-N over SESSION windows",
		"SELECT window_start, window_end, auction, count(*) FROM TABLE(SESSION(TABLE bid %s PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '2' SECOND)) WHERE price > 5 GROUP BY window_start, window_end, auction":                            "a WHERE over the rows of a SESSION TVF",
		"SELECT count(*) FROM TABLE(SESSION(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) a JOIN TABLE(SESSION(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) b ON a.window_start = b.window_start AND a.window_end = b.window_end": "SESSION windows are not supported yet",
	} {
		text := strings.ReplaceAll(q, "%s", hint)
		_, err := sess.Prepare(ctx, text, nil)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, plan.ErrNotImplemented) {
			t.Errorf("%s: got %v, want a not-implemented error containing %q", text, err, want)
		}
	}
	// The DESCRIPTOR column must be the WATERMARK column of the table.
	for _, q := range []string{
		"CREATE TABLE two (a TIMESTAMP(3), b TIMESTAMP(3), WATERMARK FOR a AS a)",
		"CREATE TABLE nowm (a TIMESTAMP(3))",
	} {
		st, err := sess.Prepare(ctx, q, nil)
		if err == nil {
			_, err = st.Exec(ctx, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tbl := range []string{"two", "nowm"} {
		q := "SELECT window_start, window_end, count(*) FROM TABLE(TUMBLE(TABLE " + tbl + " " + hint + ", DESCRIPTOR(b), INTERVAL '2' SECOND)) GROUP BY window_start, window_end"
		if tbl == "nowm" {
			q = strings.Replace(q, "DESCRIPTOR(b)", "DESCRIPTOR(a)", 1)
		}
		if _, err := sess.Prepare(ctx, q, nil); err == nil || !strings.Contains(err.Error(), "must be the WATERMARK column of default."+tbl) {
			t.Errorf("%s: got %v, want the DESCRIPTOR column refused", q, err)
		}
	}
}

// TestSessionWindows: SESSION windows per PARTITION BY key, in batch and
// as a bounded stream (every session emitted at the end): rows at most the
// gap apart (touching included) are one session, which ends a gap after
// its last row.
func TestSessionWindows(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01'), (1, 5, TIMESTAMP '2024-01-01 00:00:04'), (1, 1, TIMESTAMP '2024-01-01 00:00:08'), (2, 7, TIMESTAMP '2024-01-01 00:00:02'), (2, 3, TIMESTAMP '2024-01-01 00:00:02'), (2, 4, NULL)")
	const q = "SELECT window_start, window_end, auction, count(*), sum(price) FROM TABLE(SESSION(TABLE bid %s PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY window_start, window_end, auction"
	const bounded = "/*+ OPTIONS('scan.mode'='latest-full', 'scan.bounded.snapshot-id'='1') */"
	rows := func(text string) []string { return sortedRows(t, ctx, sess, text) }
	want := []string{
		"2024-01-01 00:00:01|2024-01-01 00:00:07|1|2|15",
		"2024-01-01 00:00:02|2024-01-01 00:00:05|2|2|10",
		"2024-01-01 00:00:08|2024-01-01 00:00:11|1|1|1",
	}
	if got := rows(fmt.Sprintf(q, "")); !slices.Equal(got, want) {
		t.Fatalf("batch sessions %q, want %q", got, want)
	}
	var got []string
	for _, r := range rows(fmt.Sprintf(q, bounded)) {
		got = append(got, strings.TrimPrefix(r, "+I|"))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("streamed sessions %q, want %q", got, want)
	}
	// Nexmark q11's legacy group window is the same SESSION TVF.
	const legacy = "SELECT S.`start`, S.`end`, S.auction, S.bids, S.total FROM (SELECT B.auction, SESSION_START(B.ts, INTERVAL '3' SECOND) AS `start`, SESSION_END(B.ts, INTERVAL '3' SECOND) AS `end`, count(*) AS bids, sum(B.price) AS total FROM bid %s B GROUP BY B.auction, SESSION(B.ts, INTERVAL '3' SECOND)) S"
	got = got[:0]
	for _, r := range rows(fmt.Sprintf(legacy, bounded)) {
		got = append(got, strings.TrimPrefix(r, "+I|"))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("streamed legacy sessions %q, want %q", got, want)
	}
	if got := rows(fmt.Sprintf(legacy, "")); !slices.Equal(got, want) {
		t.Fatalf("batch legacy sessions %q, want %q", got, want)
	}
	// Without PARTITION BY sessions form over all rows (NULL times in
	// none); window_time is the end less a millisecond.
	const q2 = "SELECT window_start, window_end, window_time, auction, price FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(ts), INTERVAL '3' SECOND))"
	if got, want := rows(q2), []string{
		"2024-01-01 00:00:01|2024-01-01 00:00:07|2024-01-01 00:00:06.999|1|10",
		"2024-01-01 00:00:01|2024-01-01 00:00:07|2024-01-01 00:00:06.999|1|5",
		"2024-01-01 00:00:01|2024-01-01 00:00:07|2024-01-01 00:00:06.999|2|3",
		"2024-01-01 00:00:01|2024-01-01 00:00:07|2024-01-01 00:00:06.999|2|7",
		"2024-01-01 00:00:08|2024-01-01 00:00:11|2024-01-01 00:00:10.999|1|1",
	}; !slices.Equal(got, want) {
		t.Fatalf("batch sessions %q, want %q", got, want)
	}
	plan := explain(t, ctx, sess, fmt.Sprintf(q, bounded))
	if want := "WindowAggregate SESSION(ts, gap 3s, partition by auction)"; !strings.Contains(plan, want) {
		t.Errorf("EXPLAIN lacks %q:\n%s", want, plan)
	}
}

// TestWindowTopNBoundedEnd: a window top-N over a window aggregation of a
// bounded stream emits the top rows of every window once, at the end for
// the windows the watermark had not closed, and equals the batch query.
func TestWindowTopNBoundedEnd(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01'), (2, 5, TIMESTAMP '2024-01-01 00:00:01.5'), (3, 7, TIMESTAMP '2024-01-01 00:00:01'), (1, 1, TIMESTAMP '2024-01-01 00:00:04'), (2, 3, TIMESTAMP '2024-01-01 00:00:05'), (2, 9, TIMESTAMP '2024-01-01 00:00:09')")
	const q = "SELECT * FROM (SELECT window_start, window_end, auction, total, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY total DESC) AS rn FROM (SELECT window_start, window_end, auction, sum(price) AS total FROM TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY window_start, window_end, auction)) WHERE rn <= 2"
	const bounded = "/*+ OPTIONS('scan.mode'='latest-full', 'scan.bounded.snapshot-id'='1') */"
	rows := func(text string) []string { return sortedRows(t, ctx, sess, text) }
	want := []string{
		"2024-01-01 00:00:00|2024-01-01 00:00:02|1|10|1",
		"2024-01-01 00:00:00|2024-01-01 00:00:02|3|7|2",
		"2024-01-01 00:00:04|2024-01-01 00:00:06|2|3|1",
		"2024-01-01 00:00:04|2024-01-01 00:00:06|1|1|2",
		"2024-01-01 00:00:08|2024-01-01 00:00:10|2|9|1",
	}
	slices.Sort(want)
	if got := rows(fmt.Sprintf(q, "")); !slices.Equal(got, want) {
		t.Fatalf("batch top-N %q, want %q", got, want)
	}
	var got []string
	for _, r := range rows(fmt.Sprintf(q, bounded)) {
		k, rest, _ := strings.Cut(r, "|")
		if k != "+I" {
			t.Fatalf("a window top-N emitted %s", r)
		}
		got = append(got, rest)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("streamed top-N %q, want %q", got, want)
	}
	if plan := explain(t, ctx, sess, fmt.Sprintf(q, bounded)); !strings.Contains(plan, "WindowTopN partition: window_start, window_end order: total DESC rows 1 to 2 numbered") {
		t.Errorf("EXPLAIN:\n%s", plan)
	}
}

// TestAggregateOverWindowsBoundedEnd: the windows a window aggregation
// emits when a bounded stream ends (after its last marker) reach the
// regular aggregation above it.
func TestAggregateOverWindowsBoundedEnd(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01'), (2, 5, TIMESTAMP '2024-01-01 00:00:01.5'), (1, 1, TIMESTAMP '2024-01-01 00:00:04'), (2, 9, TIMESTAMP '2024-01-01 00:00:09')")
	const q = "SELECT count(*), sum(total) FROM (SELECT window_start, sum(price) AS total FROM TABLE(TUMBLE(TABLE bid %s, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY window_start, window_end)"
	const bounded = "/*+ OPTIONS('scan.mode'='latest-full', 'scan.bounded.snapshot-id'='1') */"
	run := func(text string) []string { return queryRows(t, ctx, sess, text) }
	if got := run(fmt.Sprintf(q, "")); !slices.Equal(got, []string{"3|25"}) {
		t.Fatalf("batch %q, want 3 windows", got)
	}
	// The changelog applied in order: the last row standing is the answer.
	var last string
	for _, r := range run(fmt.Sprintf(q, bounded)) {
		kind, rest, _ := strings.Cut(r, "|")
		switch kind {
		case "+I", "+U":
			last = rest
		case "-D":
			last = ""
		}
	}
	if last != "3|25" {
		t.Fatalf("streamed answer %q, want 3|25", last)
	}
}

// queryRows runs a query (batch or bounded stream) and returns its rows in
// order, each as drain formats them.
func queryRows(t *testing.T, ctx context.Context, sess *engine.Session, text string) []string {
	t.Helper()
	st, err := sess.Prepare(ctx, text, nil)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	op, err := st.Query(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := drain(ctx, op)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return got
}

// sortedRows is queryRows sorted.
func sortedRows(t *testing.T, ctx context.Context, sess *engine.Session, text string) []string {
	t.Helper()
	got := queryRows(t, ctx, sess, text)
	slices.Sort(got)
	return got
}

// insertsByStep follows w to the last of snaps and returns the rows it
// emits, which must all be inserts (what names the operator), by the index
// in snaps of the snapshot each is labelled with.
func (w *windowRun) insertsByStep(t *testing.T, snaps []int64, what string) map[int][]string {
	t.Helper()
	final := snaps[len(snaps)-1]
	byStep := map[int][]string{}
	for {
		e := w.next(t, 30*time.Second, final)
		if e.rows == nil {
			if e.pos[0] >= final {
				return byStep
			}
			continue
		}
		i := slices.Index(snaps, e.pos[0])
		for _, r := range e.rows {
			if r[0] != "+I" {
				t.Fatalf("%s emitted %v: its output must be inserts only", what, r)
			}
			if i < 0 {
				t.Fatalf("rows labelled with snapshot %d, which no write made: %v", e.pos[0], r)
			}
			byStep[i] = append(byStep[i], strings.Join(r[1:], "|"))
		}
	}
}
