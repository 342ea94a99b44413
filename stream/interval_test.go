package stream_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/tablestore"
)

// TestIntervalJoinEqualsBatch is the interval join invariant: two key
// tables with WATERMARKs (random delays) under random inserts, updates and
// deletes with out-of-order event times, joined (inner, left, right or
// full at random) on a key and a random event-time interval; an outer
// join's padded rows are compared once the watermark has closed them. After each statement (the stream caught up, so the
// join has seen the changes in commit order) a model knows the watermark
// (the smaller of the tables': largest event time minus the delay) and
// which changes were late (event time at or before it), and keeps the
// others in mirror tables. The applied changelog (every -D retracting a
// row it has) equals the batch join of the mirrors, the reported late
// count equals the model's, and the join's state is expired by the
// watermark. Half the runs are under a 1 KB budget. Replay with -seed.
func TestIntervalJoinEqualsBatch(t *testing.T) {
	seed := testSeed(t)
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			rng := rand.New(rand.NewSource(seed + int64(i)))
			lo, hi := rng.Intn(3), rng.Intn(3)
			// An outer join pads a row once the watermark has passed its
			// time and the last time a partner could have had: the batch
			// join's padded rows count from then.
			kind := []string{"", "LEFT", "RIGHT", "FULL"}[rng.Intn(4)]
			runJoinInvariant(t, rng, joinShape{
				op: "Interval",
				query: func(a, b, where string) string {
					return fmt.Sprintf("SELECT a.ver, a.v, b.ver, b.v FROM %s AS a %s JOIN %s AS b ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '%d' SECOND AND b.ts + INTERVAL '%d' SECOND %s", a, kind, b, lo, hi, where)
				},
				late: func(ts, wm int64) bool { return ts <= wm },
				closed: func(wm string) string {
					switch {
					case kind == "":
						return ""
					case wm == "":
						return "WHERE a.ver IS NOT NULL AND b.ver IS NOT NULL"
					}
					return fmt.Sprintf("WHERE a.ver IS NOT NULL AND b.ver IS NOT NULL OR b.ver IS NULL AND a.ts <= %[1]s AND a.ts + INTERVAL '%[2]d' SECOND <= %[1]s OR a.ver IS NULL AND b.ts <= %[1]s AND b.ts + INTERVAL '%[3]d' SECOND <= %[1]s", wm, lo, hi)
				},
				budget: int64(rng.Intn(2)) << 10, // half the runs spill at almost every snapshot
			})
		})
	}
}

// TestWindowJoinEqualsBatch is the invariant of window joins (inner, left,
// right or full at random; in half the runs under a 1 KB budget), as
// TestIntervalJoinEqualsBatch checks interval joins: after each statement
// the applied output (inserts only) equals the batch window join of the
// mirror tables for the windows the watermark has closed; a change is late
// when the earliest window of its event time has closed. Replay with
// -seed.
func TestWindowJoinEqualsBatch(t *testing.T) {
	seed := testSeed(t)
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			rng := rand.New(rand.NewSource(seed + int64(i)))
			shape := randomWindow(rng)
			for shape.session { // window joins of sessions are refused
				shape = randomWindow(rng)
			}
			// Outer joins pad, when a window closes, the rows that found
			// no partner in it; a padded side's window columns are NULL.
			kind := []string{"", "LEFT", "RIGHT", "FULL"}[rng.Intn(4)]
			runJoinInvariant(t, rng, joinShape{
				op: "WindowJoin",
				query: func(a, b, where string) string {
					return fmt.Sprintf("SELECT a.ver, a.v, b.ver, b.v, a.window_start, b.window_end, a.window_time FROM (SELECT * FROM TABLE(%s)) a %s JOIN (SELECT * FROM TABLE(%s)) b ON a.k = b.k AND a.window_start = b.window_start AND a.window_end = b.window_end %s",
						fmt.Sprintf(shape.tvf, a), kind, fmt.Sprintf(shape.tvf, b), where)
				},
				late: func(ts, wm int64) bool { return shape.firstEnd(ts) <= wm },
				closed: func(wm string) string {
					if wm == "" {
						return "WHERE false"
					}
					return "WHERE COALESCE(a.window_end, b.window_end) <= " + wm
				},
				budget: int64(rng.Intn(2)) << 10, // half the runs spill at almost every snapshot
			})
		})
	}
}

// joinShape is a join of t0 and t1 by event time for runJoinInvariant.
type joinShape struct {
	op    string // in its EXPLAIN
	query func(a, b, where string) string
	// late: a change at ts is late at watermark wm (microseconds).
	late func(ts, wm int64) bool
	// closed is the WHERE clause of the batch query that keeps the
	// results final at watermark wm (a timestamp literal, "" for none).
	closed func(wm string) string
	budget int64 // the query budget (0: the default)
}

func runJoinInvariant(t *testing.T, rng *rand.Rand, shape joinShape) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng, sess, run := invariantEngine(t, ctx, rng, shape.budget)
	var err error
	delays := [2]int64{int64(rng.Intn(3)), int64(rng.Intn(3))}
	var tbls [2]*tablestore.Table
	for i := range 2 {
		run(fmt.Sprintf("CREATE TABLE t%d (id INT NOT NULL, ver BIGINT, k INT, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '%d' SECOND, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')", i, delays[i]))
		run(fmt.Sprintf("CREATE TABLE m%d (ver BIGINT, k INT, v BIGINT, ts TIMESTAMP(3)) WITH ('bucket' = '-1')", i))
		if tbls[i], err = eng.Store().Table(ctx, tablestore.Ident{Database: "default", Table: fmt.Sprintf("t%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	const hint = "/*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms', 'continuous.discovery-interval'='20ms') */"
	text := shape.query("t0 "+hint, "t1 "+hint, "")
	t.Logf("%s (delays %v)", text, delays)
	if plan := explain(t, ctx, sess, text); !strings.Contains(plan, shape.op) {
		t.Fatalf("not a %s:\n%s", shape.op, plan)
	}
	w, follow := followJoin(t, ctx, sess, tbls[:], text)
	defer w.close()

	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	now := base
	var live [2]map[int]version
	var maxTS [2]int64
	var seen [2]bool
	for i := range live {
		live[i] = map[int]version{}
	}
	watermark := func() (int64, bool) {
		if !seen[0] || !seen[1] {
			return 0, false
		}
		return min(maxTS[0]-delays[0]*1e6, maxTS[1]-delays[1]*1e6), true
	}
	tsSQL := func(us int64) string {
		return "TIMESTAMP '" + time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.000") + "'"
	}
	var ver, lateModel int64
	var nextID int
	checks := 0
	for range 25 + rng.Intn(25) {
		side := rng.Intn(2)
		wm, valid := watermark()
		late := func(ts int64) bool { return valid && shape.late(ts, wm) }
		var add []version
		var drop []int64
		newVersion := func() version {
			ver++
			// Quarter seconds: event times often meet window ends and watermarks.
			ts := (now + int64(rng.Intn(4_000_000)) - 3_000_000) / 250_000 * 250_000
			if !seen[side] || ts > maxTS[side] {
				maxTS[side], seen[side] = ts, true
			}
			return version{ver: ver, k: int64(rng.Intn(3)), v: int64(rng.Intn(100)), ts: ts}
		}
		ids := slices.Sorted(func(yield func(int) bool) {
			for id := range live[side] {
				if !yield(id) {
					return
				}
			}
		})
		var stmt string
		switch r := rng.Intn(10); {
		case r < 6 || len(ids) == 0:
			var vals []string
			for range 1 + rng.Intn(4) {
				nextID++
				x := newVersion()
				live[side][nextID] = x
				vals = append(vals, fmt.Sprintf("(%d, %d, %d, %d, %s)", nextID, x.ver, x.k, x.v, tsSQL(x.ts)))
				if late(x.ts) {
					lateModel++
				} else {
					add = append(add, x)
				}
			}
			stmt = fmt.Sprintf("INSERT INTO t%d VALUES %s", side, strings.Join(vals, ", "))
		case r < 8:
			id := ids[rng.Intn(len(ids))]
			old, x := live[side][id], newVersion()
			live[side][id] = x
			stmt = fmt.Sprintf("UPDATE t%d SET ver = %d, k = %d, v = %d, ts = %s WHERE id = %d", side, x.ver, x.k, x.v, tsSQL(x.ts), id)
			if late(old.ts) {
				lateModel++
			} else {
				drop = append(drop, old.ver)
			}
			if late(x.ts) {
				lateModel++
			} else {
				add = append(add, x)
			}
		default:
			id := ids[rng.Intn(len(ids))]
			old := live[side][id]
			delete(live[side], id)
			stmt = fmt.Sprintf("DELETE FROM t%d WHERE id = %d", side, id)
			if late(old.ts) {
				lateModel++
			} else {
				drop = append(drop, old.ver)
			}
		}
		run(stmt)
		if len(add) > 0 {
			var vals []string
			for _, x := range add {
				vals = append(vals, fmt.Sprintf("(%d, %d, %d, %s)", x.ver, x.k, x.v, tsSQL(x.ts)))
			}
			run(fmt.Sprintf("INSERT INTO m%d VALUES %s", side, strings.Join(vals, ", ")))
		}
		for _, v := range drop {
			run(fmt.Sprintf("DELETE FROM m%d WHERE ver = %d", side, v))
		}
		follow()
		now += int64(rng.Intn(1_000_000))

		closed := ""
		if wm, valid := watermark(); valid {
			closed = tsSQL(wm)
		}
		st, err := sess.Prepare(ctx, shape.query("m0", "m1", shape.closed(closed)), nil)
		if err != nil {
			t.Fatal(err)
		}
		op, err := st.Query(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := drain(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if got := w.rows(); !slices.Equal(got, want) {
			t.Fatalf("after %s (watermark %s) the applied changelog is\n%q\nthe batch join of the changes that were not late is\n%q", stmt, closed, got, want)
		}
		if n := w.late.Load(); n != lateModel {
			t.Fatalf("after %s the stream reports %d late changes, the model %d", stmt, n, lateModel)
		}
		checks++
	}
	t.Logf("%d checks, %d joined rows, %d late changes", checks, len(w.rows()), lateModel)
}

// TestOuterWindowJoinNullKeys: rows with a NULL key match nothing and are
// padded by an outer window join, as the batch join pads them.
func TestOuterWindowJoinNullKeys(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01'), (NULL, 5, TIMESTAMP '2024-01-01 00:00:04'), (2, 7, TIMESTAMP '2024-01-01 00:00:09')")
	const bounded = "/*+ OPTIONS('scan.mode'='latest-full', 'scan.bounded.snapshot-id'='1') */"
	for _, kind := range []string{"LEFT", "RIGHT", "FULL"} {
		q := "SELECT a.auction, a.price, b.auction, b.price, a.window_start, b.window_end FROM (SELECT * FROM TABLE(TUMBLE(TABLE bid %[1]s, DESCRIPTOR(ts), INTERVAL '5' SECOND))) a " + kind +
			" JOIN (SELECT * FROM TABLE(TUMBLE(TABLE bid %[1]s, DESCRIPTOR(ts), INTERVAL '5' SECOND)) WHERE price > 5) b ON a.auction = b.auction AND a.window_start = b.window_start AND a.window_end = b.window_end"
		var got []string
		for _, r := range sortedRows(t, ctx, sess, fmt.Sprintf(q, bounded)) {
			got = append(got, strings.TrimPrefix(r, "+I|"))
		}
		want := sortedRows(t, ctx, sess, fmt.Sprintf(q, ""))
		if !slices.Equal(got, want) || !slices.ContainsFunc(want, func(r string) bool { return strings.HasPrefix(r, "NULL|5|NULL|NULL|") }) && kind != "RIGHT" {
			t.Errorf("%s: the bounded stream gives %q, the batch join %q (with the NULL key's row padded)", kind, got, want)
		}
	}
}

// TestOuterIntervalJoinNulls: an outer interval join pads the rows of a
// kept side with a NULL key (when they expire) or a NULL event time (at
// once), and when bounded inputs end, every row still held; the stream
// then equals the batch join.
func TestOuterIntervalJoinNulls(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01'), (NULL, 5, TIMESTAMP '2024-01-01 00:00:04'), (2, 7, TIMESTAMP '2024-01-01 00:00:09'), (2, 8, TIMESTAMP '2024-01-01 00:00:30'), (3, 3, NULL)")
	const bounded = "/*+ OPTIONS('scan.mode'='latest-full', 'scan.bounded.snapshot-id'='1') */"
	for _, kind := range []string{"LEFT", "RIGHT", "FULL"} {
		q := "SELECT a.auction, a.price, b.auction, b.price FROM bid %[1]s AS a " + kind + " JOIN bid %[1]s AS b ON a.auction = b.auction AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts + INTERVAL '2' SECOND AND a.price <> b.price"
		// A condition beyond the keys and bounds: a regular join.
		if p := explain(t, ctx, sess, fmt.Sprintf(q, bounded)); strings.Contains(p, "Interval") {
			t.Fatalf("%s with a condition beyond the bounds is an interval join:\n%s", kind, p)
		}
		q = "SELECT a.auction, a.price, b.auction, b.price FROM bid %[1]s AS a " + kind + " JOIN bid %[1]s AS b ON a.auction = b.auction AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts + INTERVAL '2' SECOND"
		if p := explain(t, ctx, sess, fmt.Sprintf(q, bounded)); !strings.Contains(p, "Interval") {
			t.Fatalf("%s: not an interval join:\n%s", kind, p)
		}
		var got []string
		for _, r := range sortedRows(t, ctx, sess, fmt.Sprintf(q, bounded)) {
			got = append(got, strings.TrimPrefix(r, "+I|"))
		}
		want := sortedRows(t, ctx, sess, fmt.Sprintf(q, ""))
		if !slices.Equal(got, want) || !slices.Contains(want, "NULL|5|NULL|NULL") && kind != "RIGHT" {
			t.Errorf("%s: the bounded stream gives %q, the batch join %q", kind, got, want)
		}
	}
}
