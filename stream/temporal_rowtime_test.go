package stream_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

// followJoin starts the streaming query text over tables t0 and t1 (tbls),
// pulled on its own goroutine, and returns it with follow, which applies
// its changes up to a progress marker at the tables' latest snapshots.
func followJoin(t *testing.T, ctx context.Context, sess *engine.Session, tbls []*tablestore.Table, text string) (*windowRun, func()) {
	t.Helper()
	st, err := sess.Prepare(ctx, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := startWindowRun(t, ctx, st, text, 0, 1)
	return w, func() {
		t.Helper()
		var target [2]int64
		for i, tb := range tbls {
			if target[i], err = tb.LatestSnapshotID(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for {
			e := w.next(t, 30*time.Second, target)
			if e.rows == nil {
				if e.pos[0] >= target[0] && e.pos[1] >= target[1] {
					return
				}
				continue
			}
			for _, r := range e.rows {
				if err := w.apply(r); err != nil {
					t.Fatalf("at %v: %v", e.pos, err)
				}
			}
		}
	}
}

// versionChange is a change of the versioned table in the model of
// TestRowtimeTemporalJoin: a version of key k (no row: deleted or
// filtered out) in effect from eff on. A change after the watermark takes
// effect at its own time; one at or before it (never late) right after
// the watermark of its arrival (afterWM), later than every change at or
// before that watermark.
type versionChange struct {
	k, eff  int64
	afterWM bool
	seq     int
	v       int64
	row     bool
}

// versionAt is the model's version of key k for a probe row at time t:
// the change in effect at t that came last.
func versionAt(changes []versionChange, k, t int64) (versionChange, bool) {
	var best versionChange
	found := false
	for _, c := range changes {
		if c.k != k || c.eff > t || c.eff == t && c.afterWM {
			continue
		}
		if !found || cmp.Or(cmp.Compare(c.eff, best.eff), cmpBool(c.afterWM, best.afterWM), cmp.Compare(c.seq, best.seq)) > 0 {
			best, found = c, true
		}
	}
	return best, found
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// TestRowtimeTemporalJoin checks event-time temporal joins against a Go
// model of their semantics (there is no batch form to compare with): a
// probe table t0 and a versioned table t1 (key k), both with WATERMARKs of
// random delays, under random inserts, updates and deletes with
// out-of-order event times, one statement at a time; t0 joins t1 FOR
// SYSTEM_TIME AS OF t0.ts, inner or LEFT, with a filter on t1's values in
// half the runs, in half under a 1 KB budget (spilling at every marker).
// After each statement the applied changelog holds, for every probe row
// that was not late (kept in a model as in TestIntervalJoinEqualsBatch)
// and is at or before the watermark, its row joined with the version of
// its key at its time (the model: t1's change with the largest effective
// time at or before it, see versionChange), or padded; the late count
// equals the model's. Replay with -seed.
func TestRowtimeTemporalJoin(t *testing.T) {
	seed := testSeed(t)
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			runRowtimeTemporal(t, rand.New(rand.NewSource(seed+int64(i))))
		})
	}
}

func runRowtimeTemporal(t *testing.T, rng *rand.Rand) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng, sess, run := invariantEngine(t, ctx, rng, int64(rng.Intn(2))<<10)
	delays := [2]int64{int64(rng.Intn(3)), int64(rng.Intn(3))}
	run(fmt.Sprintf("CREATE TABLE t0 (id INT NOT NULL, ver BIGINT, k INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '%d' SECOND, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')", delays[0]))
	run(fmt.Sprintf("CREATE TABLE t1 (k INT NOT NULL, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '%d' SECOND, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')", delays[1]))
	var tbls []*tablestore.Table
	for i := range 2 {
		tb, err := eng.Store().Table(ctx, tablestore.Ident{Database: "default", Table: fmt.Sprintf("t%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		tbls = append(tbls, tb)
	}
	outer := rng.Intn(2) == 0
	filtered := rng.Intn(2) == 0
	kind, cond := "", ""
	if outer {
		kind = "LEFT"
	}
	if filtered {
		cond = " AND d.v < 80"
	}
	const hint = "/*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms', 'continuous.discovery-interval'='20ms') */"
	text := fmt.Sprintf("SELECT s.ver, s.k, d.v FROM t0 %[1]s AS s %[2]s JOIN t1 %[1]s FOR SYSTEM_TIME AS OF s.ts AS d ON s.k = d.k%[3]s", hint, kind, cond)
	t.Logf("%s (delays %v)", text, delays)
	if p := explain(t, ctx, sess, text); !strings.Contains(p, "RowtimeTemporalJoin") {
		t.Fatalf("not an event-time temporal join:\n%s", p)
	}
	w, follow := followJoin(t, ctx, sess, tbls, text)
	defer w.close()

	type probe struct{ ver, k, ts int64 }
	type row struct{ v, ts int64 }
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	now := base
	probes := map[int64]probe{} // the model's probe rows that were not late, by ver
	liveProbes := map[int]probe{}
	liveRows := map[int64]row{} // t1 by k
	var changes []versionChange
	var maxTS [2]int64
	var seen [2]bool
	watermark := func() (int64, bool) {
		if !seen[0] || !seen[1] {
			return 0, false
		}
		return min(maxTS[0]-delays[0]*1e6, maxTS[1]-delays[1]*1e6), true
	}
	randomTime := func(side int) int64 {
		ts := (now + int64(rng.Intn(4_000_000)) - 3_000_000) / 250_000 * 250_000
		if !seen[side] || ts > maxTS[side] {
			maxTS[side], seen[side] = ts, true
		}
		return ts
	}
	tsSQL := func(us int64) string {
		return "TIMESTAMP '" + time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.000") + "'"
	}
	var ver, lateModel int64
	var nextID, seq int
	for range 30 + rng.Intn(30) {
		wm, valid := watermark()
		late := func(ts int64) bool { return valid && ts <= wm }
		// version records a change of t1 (a row, or none) at ts.
		version := func(k int64, r row, has bool, ts int64) {
			seq++
			c := versionChange{k: k, eff: ts, seq: seq, v: r.v, row: has && (!filtered || r.v < 80)}
			if late(ts) {
				c.eff, c.afterWM = wm, true
			}
			changes = append(changes, c)
		}
		var stmt string
		if side := rng.Intn(2); side == 0 {
			ids := slices.Sorted(func(yield func(int) bool) {
				for id := range liveProbes {
					if !yield(id) {
						return
					}
				}
			})
			newProbe := func() probe {
				ver++
				return probe{ver: ver, k: int64(rng.Intn(4)), ts: randomTime(0)}
			}
			switch r := rng.Intn(10); {
			case r < 6 || len(ids) == 0:
				var vals []string
				for range 1 + rng.Intn(4) {
					nextID++
					p := newProbe()
					liveProbes[nextID] = p
					vals = append(vals, fmt.Sprintf("(%d, %d, %d, %s)", nextID, p.ver, p.k, tsSQL(p.ts)))
					if late(p.ts) {
						lateModel++
					} else {
						probes[p.ver] = p
					}
				}
				stmt = "INSERT INTO t0 VALUES " + strings.Join(vals, ", ")
			case r < 8:
				id := ids[rng.Intn(len(ids))]
				old, p := liveProbes[id], newProbe()
				liveProbes[id] = p
				stmt = fmt.Sprintf("UPDATE t0 SET ver = %d, k = %d, ts = %s WHERE id = %d", p.ver, p.k, tsSQL(p.ts), id)
				for _, x := range []probe{old, p} {
					switch {
					case late(x.ts):
						lateModel++
					case x == old:
						delete(probes, old.ver)
					default:
						probes[p.ver] = p
					}
				}
			default:
				id := ids[rng.Intn(len(ids))]
				old := liveProbes[id]
				delete(liveProbes, id)
				stmt = fmt.Sprintf("DELETE FROM t0 WHERE id = %d", id)
				if late(old.ts) {
					lateModel++
				} else {
					delete(probes, old.ver)
				}
			}
		} else {
			k := int64(rng.Intn(5))
			old, ok := liveRows[k]
			switch {
			case !ok:
				r := row{v: int64(rng.Intn(100)), ts: randomTime(1)}
				liveRows[k] = r
				stmt = fmt.Sprintf("INSERT INTO t1 VALUES (%d, %d, %s)", k, r.v, tsSQL(r.ts))
				version(k, r, true, r.ts)
			case rng.Intn(4) > 0:
				r := row{v: int64(rng.Intn(100)), ts: randomTime(1)}
				liveRows[k] = r
				stmt = fmt.Sprintf("UPDATE t1 SET v = %d, ts = %s WHERE k = %d", r.v, tsSQL(r.ts), k)
				version(k, r, true, r.ts)
			default:
				delete(liveRows, k)
				stmt = fmt.Sprintf("DELETE FROM t1 WHERE k = %d", k)
				version(k, old, false, old.ts) // a -D carries the deleted row's time
			}
		}
		run(stmt)
		follow()
		now += int64(rng.Intn(1_000_000))

		var want []string
		if wm, valid := watermark(); valid {
			for _, p := range probes {
				if p.ts > wm {
					continue
				}
				switch c, ok := versionAt(changes, p.k, p.ts); {
				case ok && c.row:
					want = append(want, fmt.Sprintf("%d|%d|%d", p.ver, p.k, c.v))
				case outer:
					want = append(want, fmt.Sprintf("%d|%d|NULL", p.ver, p.k))
				}
			}
		}
		slices.Sort(want)
		if got := w.rows(); !slices.Equal(got, want) {
			t.Fatalf("after %s (watermark %v) the applied changelog is\n%q\nthe model's\n%q", stmt, time.UnixMicro(wm).UTC(), got, want)
		}
		if n := w.late.Load(); n != lateModel {
			t.Fatalf("after %s the stream reports %d late changes, the model %d", stmt, n, lateModel)
		}
	}
	t.Logf("%d joined rows, %d late changes", len(w.rows()), lateModel)
}
