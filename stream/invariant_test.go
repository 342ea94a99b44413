package stream_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
)

var seedFlag = flag.Int64("seed", 0, "seed for TestStreamEqualsBatch (0: time-based)")

// testSeed is -seed, or the time when it is unset, logged for replay.
func testSeed(t *testing.T) int64 {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return seed
}

// tableKind is a table the random workload writes.
type tableKind struct {
	name  string
	keyed bool
	with  string
	// lagging: changes come only at full compactions, so the stream
	// equals the batch answer at the snapshots of those.
	lagging bool
	// merging: the merge engine merges an UPDATE's rows into the old ones,
	// so it refuses UPDATE; first-row refuses DELETE too.
	merging, noDelete bool
	// insertsOnly: the workload only inserts (and compacts).
	insertsOnly bool
}

var tableKinds = []tableKind{
	{"dedup_none", true, "'bucket' = '2', 'num-sorted-run.compaction-trigger' = '2'", false, false, false, false},
	{"dedup_input", true, "'bucket' = '2', 'changelog-producer' = 'input'", false, false, false, false},
	{"dedup_lookup", true, "'bucket' = '2', 'changelog-producer' = 'lookup'", false, false, false, false},
	{"dedup_full", true, "'changelog-producer' = 'full-compaction', 'full-compaction.delta-commits' = '3'", true, false, false, false},
	{"partial_lookup", true, "'merge-engine' = 'partial-update', 'partial-update.remove-record-on-delete' = 'true', 'changelog-producer' = 'lookup'", false, false, false, false},
	{"agg_lookup", true, "'merge-engine' = 'aggregation', 'fields.x.aggregate-function' = 'sum', 'fields.s.aggregate-function' = 'max', 'fields.s.ignore-retract' = 'true', 'fields.g.ignore-retract' = 'true', 'aggregation.remove-record-on-delete' = 'true', 'changelog-producer' = 'lookup'", false, true, false, false},
	{"first_lookup", true, "'merge-engine' = 'first-row', 'changelog-producer' = 'lookup'", false, true, true, false},
	{"append", false, "'bucket' = '-1'", false, false, false, false},
}

// TestStreamEqualsBatch is the streaming invariant: for random queries over
// tables of every kind under a random workload of upserts, deletes,
// updates, overwrites and compactions, applying a query's streamed
// changelog gives exactly the batch answer of the query at the snapshot it
// reports, at every snapshot boundary (a change of snapshot label, or a
// progress marker), compared as multisets; and every -U/-D retracts a row
// the consumer has. Replay with -seed.
func TestStreamEqualsBatch(t *testing.T) {
	seed := testSeed(t)
	for i, k := range tableKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			runInvariant(t, rand.New(rand.NewSource(seed+int64(i))), []tableKind{k}, randomQuery, 0)
		})
	}
}

// TestStreamRankEqualsBatch is the invariant for deduplications and
// top-Ns only, over tables of every kind. Replay with -seed.
func TestStreamRankEqualsBatch(t *testing.T) {
	seed := testSeed(t)
	for i, k := range tableKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			runInvariant(t, rand.New(rand.NewSource(seed+int64(i))), []tableKind{k}, func(rng *rand.Rand) string {
				return randomRank(rng, []string{"", " WHERE x > 5", " WHERE s <> 's1'"}[rng.Intn(3)])
			}, 0)
		})
	}
}

// TestStreamSpillEqualsBatch is the invariant for aggregations,
// deduplications and top-Ns under a query budget of 1 KB, so that their
// state (and the normalization's) spills at almost every snapshot. Replay
// with -seed.
func TestStreamSpillEqualsBatch(t *testing.T) {
	seed := testSeed(t)
	for i, k := range tableKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			runInvariant(t, rand.New(rand.NewSource(seed+int64(i))), []tableKind{k}, func(rng *rand.Rand) string {
				if rng.Intn(2) == 0 {
					return randomRank(rng, "")
				}
				return randomQuery(rng)
			}, 1<<10)
		})
	}
}

// TestStreamJoinEqualsBatch is the invariant for joins and unions of two
// and three tables of random kinds: at every boundary the applied changelog equals
// the batch query with each table at the snapshot the stream reports for
// it. Replay with -seed.
func TestStreamJoinEqualsBatch(t *testing.T) { runJoinInvariants(t, 3, 0, randomJoin) }

// TestStreamJoinSpillEqualsBatch is TestStreamJoinEqualsBatch under a
// query budget of 1 KB, so that join state spills at almost every
// snapshot. Replay with -seed.
func TestStreamJoinSpillEqualsBatch(t *testing.T) { runJoinInvariants(t, 2, 1<<10, randomJoin) }

// TestStreamScalarSubqueryEqualsBatch is the invariant for non-correlated
// scalar subqueries (a join with a one-row aggregate), over tables of
// random kinds. Replay with -seed.
func TestStreamScalarSubqueryEqualsBatch(t *testing.T) {
	runJoinInvariants(t, 3, 0, randomScalarSubquery)
}

// runJoinInvariants runs the invariant over runs random queries of three
// tables of random kinds, under a budget of limit bytes (0: none).
func runJoinInvariants(t *testing.T, runs int, limit int64, randomQuery func(*rand.Rand) string) {
	seed := testSeed(t)
	var kinds []tableKind
	for _, k := range tableKinds {
		if !k.lagging {
			kinds = append(kinds, k)
		}
	}
	for i := range runs {
		rng := rand.New(rand.NewSource(seed + int64(i)))
		ks := []tableKind{kinds[rng.Intn(len(kinds))], kinds[rng.Intn(len(kinds))], kinds[rng.Intn(len(kinds))]}
		t.Run(fmt.Sprintf("%s,%s,%s", ks[0].name, ks[1].name, ks[2].name), func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			runInvariant(t, rng, ks, randomQuery, limit)
		})
	}
}

// tablesOf lists the tables a query reads ({T0}, {T1}, ...).
func tablesOf(q string, n int) []int {
	var out []int
	for i := range n {
		if strings.Contains(q, fmt.Sprintf("{T%d}", i)) {
			out = append(out, i)
		}
	}
	return out
}

// invariantEngine opens an engine for a stream-vs-batch test (a random
// batch size, one core, query memory budget; 0: the default), closed and
// checked for leaks when the test ends, with a session and run, which
// executes a statement or fails the test.
func invariantEngine(t *testing.T, ctx context.Context, rng *rand.Rand, budget int64) (*engine.Engine, *engine.Session, func(string)) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	eng, err := engine.Open(ctx, engine.Config{Mem: mem, Root: t.TempDir(), SpillDir: t.TempDir(),
		BatchSize: []int{1, 3, 1024}[rng.Intn(3)], Parallelism: 1, QueryMemory: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	sess := eng.NewSession()
	return eng, sess, func(q string) {
		t.Helper()
		st, err := sess.Prepare(ctx, q, nil)
		if err == nil {
			_, err = st.Exec(ctx, nil)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// runInvariant runs the invariant over tables of kinds for random queries;
// budget is the engine's query memory (0: the default).
func runInvariant(t *testing.T, rng *rand.Rand, kinds []tableKind, randomQuery func(*rand.Rand) string, budget int64) {
	kinds = slices.Clone(kinds) // insertOnly marks them
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng, sess, exec := invariantEngine(t, ctx, rng, budget)
	var err error
	var tbls []*tablestore.Table
	lagging := false
	for i, kind := range kinds {
		pk := ""
		if kind.keyed {
			pk = ", PRIMARY KEY (k) NOT ENFORCED"
		}
		exec(fmt.Sprintf("CREATE TABLE t%d (k INT NOT NULL, g INT, x BIGINT, s VARCHAR%s) WITH (%s)", i, pk, kind.with))
		tbl, err := eng.Store().Table(ctx, tablestore.Ident{Database: "default", Table: fmt.Sprintf("t%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		tbls = append(tbls, tbl)
		lagging = lagging || kind.lagging
	}
	batchRows := func(q string, at map[int]int64) []string {
		t.Helper()
		text := q
		for i := range kinds {
			ph := fmt.Sprintf("{T%d}", i)
			if at[i] == 0 { // before the first commit: the empty table
				text = strings.ReplaceAll(text, ph, fmt.Sprintf("(SELECT * FROM t%d WHERE false)", i))
			} else {
				text = strings.ReplaceAll(text, ph, fmt.Sprintf("t%d /*+ OPTIONS('scan.snapshot-id'='%d') */", i, at[i]))
			}
		}
		st, err := sess.Prepare(ctx, text, nil)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		op, err := st.Query(ctx, nil)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		rows, err := drain(ctx, op)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return rows
	}
	write := func() {
		i := rng.Intn(len(kinds))
		exec(strings.ReplaceAll(randomWrite(rng, kinds[i]), "{T}", fmt.Sprintf("t%d", i)))
	}
	// insertOnly marks the append tables an insert-only top-N reads once
	// the streams start: a retraction would fail it (checked by engine's
	// TestJobInsertOnlyTopNRetraction and stream_rank.slt), so they are
	// only inserted into.
	insertOnly := func(text string, tables []int) {
		if !strings.Contains(explain(t, ctx, sess, text), "InsertOnly") {
			return
		}
		for _, i := range tables {
			kinds[i].insertsOnly = !kinds[i].keyed
		}
	}

	// Some rows before the streams start (they come as the full snapshot).
	for range rng.Intn(3) * len(kinds) {
		write()
	}
	var streams []*streamRun
	for range 3 {
		q := randomQuery(rng)
		// A stateless query may start at the latest snapshot: applied to
		// the answer there, its changes give the answers after it.
		mode := "latest-full"
		if stateless(q) && !lagging && rng.Intn(2) == 0 {
			mode = "latest"
		}
		text := q
		for i := range kinds {
			text = strings.ReplaceAll(text, fmt.Sprintf("{T%d}", i), fmt.Sprintf("t%d /*+ OPTIONS('scan.mode'='%s', 'stream.heartbeat-interval'='50ms', 'continuous.discovery-interval'='20ms') */", i, mode))
		}
		st, err := sess.Prepare(ctx, text, nil)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		s := &streamRun{query: q, img: map[string]int{}, events: make(chan event, 4), tables: tablesOf(q, len(kinds))}
		insertOnly(text, s.tables)
		if len(s.tables) == 1 {
			// A plain projection that keeps the key of a table without
			// before-images streams upserts by key (not normalized).
			k := kinds[s.tables[0]]
			s.upserts = !strings.Contains(explain(t, ctx, sess, text), "normalized") && k.keyed && !strings.Contains(k.with, "lookup") && !k.lagging
		}
		sctx, stop := context.WithCancel(plan.WithStreamObserver(ctx, s))
		op, err := st.Query(sctx, nil)
		if err != nil {
			stop()
			t.Fatalf("%s: %v", text, err)
		}
		s.stop = stop
		if mode == "latest" {
			// Open here, so the stream starts before the next write.
			if err := op.Open(sctx); err != nil {
				t.Fatal(err)
			}
			base, err := tbls[s.tables[0]].LatestSnapshotID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range batchRows(q, map[int]int64{s.tables[0]: base}) {
				if err := s.apply(append([]string{"+I"}, strings.Split(r, "|")...)); err != nil {
					t.Fatal(err)
				}
			}
		}
		s.wg.Add(1)
		go s.pull(sctx, op)
		streams = append(streams, s)
		defer s.close()
	}
	check := func(s *streamRun, at map[int]int64) {
		t.Helper()
		got := s.rows()
		want := batchRows(s.query, at)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s\nat snapshots %v the applied changelog is\n%q\nthe batch answer is\n%q", s.query, at, got, want)
		}
		s.checks++
	}
	// follow applies a stream's changes up to a progress marker at or
	// after the targets, checking the invariant at every boundary.
	follow := func(s *streamRun, target map[int]int64, final bool) {
		t.Helper()
		for {
			ev := s.next(t, 30*time.Second, target)
			switch {
			case ev.rows != nil:
				if s.label != nil && !maps.Equal(ev.pos, s.label) {
					check(s, s.label) // the labelled position is complete
				}
				s.label = ev.pos
				for _, r := range ev.rows {
					if err := s.apply(r); err != nil {
						t.Fatalf("%s: at %v: %v", s.query, ev.pos, err)
					}
				}
			default: // caught up
				s.label = nil
				reached := true
				for _, i := range s.tables {
					reached = reached && ev.pos[i] >= target[i]
				}
				// A lagging table's changes come at full compactions: its
				// markers are exact only at the last one.
				if !lagging || final && reached {
					check(s, ev.pos)
				}
				if reached {
					return
				}
			}
		}
	}
	rounds := 3 + rng.Intn(4)
	for r := 0; r <= rounds; r++ {
		last := r == rounds
		if last {
			if lagging {
				for i := range kinds {
					exec(fmt.Sprintf("CALL sys.compact('t%d')", i))
				}
			}
		} else {
			for range 1 + rng.Intn(2*len(kinds)) {
				write()
			}
		}
		target := map[int]int64{}
		for i, tbl := range tbls {
			if target[i], err = tbl.LatestSnapshotID(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range streams {
			follow(s, target, last)
		}
	}
	for _, s := range streams {
		t.Logf("%d checks, %d rows: %s", s.checks, len(s.rows()), s.query)
		s.close()
	}
}

// streamRun is one streaming query, pulled on its own goroutine; its
// observer calls and batches arrive in order as events.
type streamRun struct {
	query  string
	tables []int          // the tables it reads
	img    map[string]int // the applied changelog: row -> copies
	events chan event
	stop   func()
	wg     sync.WaitGroup
	once   sync.Once
	label  map[int]int64
	checks int
	cur    map[int]int64 // position of the rows being pulled (pull goroutine)
	// upserts: the stream's rows are upserts and deletes by key (column
	// 1, k); byKey holds the applied rows.
	upserts bool
	byKey   map[string]string
}

type event struct {
	pos  map[int]int64 // table -> snapshot
	rows [][]string    // nil: a progress marker
	err  error
}

// next returns the stream's next event; it fails the test on an error or
// when nothing comes within wait (a stream that stopped short of until).
func (s *streamRun) next(t *testing.T, wait time.Duration, until any) event {
	t.Helper()
	select {
	case e := <-s.events:
		if e.err != nil {
			t.Fatalf("%s: %v", s.query, e.err)
		}
		return e
	case <-time.After(wait):
		t.Fatalf("%s: no progress to %v in %v", s.query, until, wait)
	}
	return event{}
}

func (s *streamRun) Rows(snapshot int64, _ bool) {
	if len(s.tables) == 1 {
		s.cur = map[int]int64{s.tables[0]: snapshot}
	}
}

// Snapshots makes streamRun a plan.MultiStreamObserver: labels are
// "default.tN AS alias".
func (s *streamRun) Snapshots(tables []string, snapshots []int64) {
	s.cur = map[int]int64{}
	for i, l := range tables {
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(l, "default.t"), "%d", &n); err != nil {
			panic(fmt.Sprintf("table label %q", l))
		}
		s.cur[n] = snapshots[i]
	}
}

// Image: every stream here starts once, so a full read starts from the
// empty state the run already holds.
func (s *streamRun) Image(int64, bool) error { return nil }

func (s *streamRun) CaughtUp(snapshot int64) error {
	s.Rows(snapshot, false)
	s.events <- event{pos: s.cur}
	return nil
}

func (s *streamRun) pull(ctx context.Context, op interface {
	Open(context.Context) error
	Next(context.Context) (arrow.RecordBatch, error)
	Close() error
}) {
	defer s.wg.Done()
	defer op.Close()
	err := op.Open(ctx)
	for err == nil {
		var b arrow.RecordBatch
		if b, err = op.Next(ctx); err == nil {
			s.events <- event{pos: s.cur, rows: formatRows(b)}
		}
	}
	if ctx.Err() == nil {
		s.events <- event{err: err}
	}
}

func (s *streamRun) close() {
	s.once.Do(func() {
		s.stop()
		go func() {
			for range s.events { // unblock the puller
			}
		}()
		s.wg.Wait()
		close(s.events)
	})
}

// apply applies one change row (kind first).
func (s *streamRun) apply(r []string) error {
	row := strings.Join(r[1:], "|")
	if s.upserts {
		if s.byKey == nil {
			s.byKey = map[string]string{}
		}
		switch r[0] {
		case "+I", "+U":
			s.byKey[r[1]] = row
		case "-U", "-D":
			if _, ok := s.byKey[r[1]]; !ok {
				return fmt.Errorf("%s deletes key %s, which is not there", r[0], r[1])
			}
			delete(s.byKey, r[1])
		}
		clear(s.img)
		for _, v := range s.byKey {
			s.img[v]++
		}
		return nil
	}
	switch r[0] {
	case "+I", "+U":
		s.img[row]++
	case "-U", "-D":
		if s.img[row] == 0 {
			return fmt.Errorf("%s retracts %s, which is not there", r[0], row)
		}
		s.img[row]--
		if s.img[row] == 0 {
			delete(s.img, row)
		}
	default:
		return fmt.Errorf("row kind %q", r[0])
	}
	return nil
}

func (s *streamRun) rows() []string {
	var out []string
	for r, n := range s.img {
		for range n {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

func formatRows(b arrow.RecordBatch) [][]string {
	out := make([][]string, b.NumRows())
	for i := range out {
		row := make([]string, b.NumCols())
		for c := range row {
			row[c] = slt.FormatValue(b.Column(c), i)
		}
		out[i] = row
	}
	return out
}

func drain(ctx context.Context, op interface {
	Open(context.Context) error
	Next(context.Context) (arrow.RecordBatch, error)
	Close() error
}) ([]string, error) {
	defer op.Close()
	if err := op.Open(ctx); err != nil {
		return nil, err
	}
	var rows []string
	for {
		b, err := op.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return rows, nil
			}
			return nil, err
		}
		for _, r := range formatRows(b) {
			rows = append(rows, strings.Join(r, "|"))
		}
	}
}

// explain returns the plan of a query.
func explain(t *testing.T, ctx context.Context, sess *engine.Session, q string) string {
	t.Helper()
	st, err := sess.Prepare(ctx, "EXPLAIN "+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	op, err := st.Query(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := drain(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(rows, "\n")
}

// randomWrite is one statement of the workload.
func randomWrite(rng *rand.Rand, kind tableKind) string {
	val := func(null int, f func() string) string {
		if rng.Intn(100) < null {
			return "NULL"
		}
		return f()
	}
	rows := func() string {
		var rs []string
		for range 1 + rng.Intn(6) {
			rs = append(rs, fmt.Sprintf("(%d, %s, %s, %s)", rng.Intn(20),
				val(15, func() string { return fmt.Sprint(rng.Intn(4)) }),
				val(15, func() string { return fmt.Sprint(rng.Intn(60) - 10) }),
				val(15, func() string { return fmt.Sprintf("'s%d'", rng.Intn(6)) })))
		}
		return strings.Join(rs, ", ")
	}
	switch x := rng.Intn(20); {
	case x < 11 || kind.insertsOnly && x < 19:
		return "INSERT INTO {T} VALUES " + rows()
	case x < 16 && kind.noDelete:
		return "INSERT INTO {T} VALUES " + rows()
	case x < 14:
		return fmt.Sprintf("DELETE FROM {T} WHERE k %% 5 = %d", rng.Intn(5))
	case x < 16:
		return fmt.Sprintf("DELETE FROM {T} WHERE x > %d", 30+rng.Intn(20))
	case x < 18 && !kind.merging:
		return fmt.Sprintf("UPDATE {T} SET x = x + 1 WHERE g = %d", rng.Intn(4))
	case x < 18:
		return "INSERT INTO {T} VALUES " + rows()
	case x < 19:
		return "INSERT OVERWRITE {T} VALUES " + rows()
	}
	return "CALL sys.compact('{T}')"
}

// randomQuery is a query of a shape the streaming planner maintains, with
// {T0} where the table goes.
func randomQuery(rng *rand.Rand) string {
	where := ""
	if rng.Intn(3) == 0 {
		where = []string{" WHERE x > 5", " WHERE s <> 's1'", " WHERE g IS NOT NULL AND k < 15"}[rng.Intn(3)]
	}
	if rng.Intn(4) == 0 {
		return randomRank(rng, where)
	}
	if rng.Intn(4) == 0 {
		// Filters and projections.
		return "SELECT " + []string{"k, x, s", "x, s", "k + g AS kg, upper(s) AS us", "DISTINCT g, s"}[rng.Intn(4)] + " FROM {T0}" + where
	}
	aggs := []string{
		"count(*)", "count(x)", "sum(x)", "avg(x)", "min(x)", "max(x)", "min(s)", "max(s)",
		"count(DISTINCT s)", "count(DISTINCT g)", "count(DISTINCT g, s)", "sum(x) FILTER (WHERE s > 's2')", "count(*) FILTER (WHERE x < 0)",
		"max(x) - min(x)", "sum(DISTINCT x)", "avg(DISTINCT x)", "bool_and(x > 0)", "bool_or(s = 's1')",
		"avg(CAST(x AS DECIMAL(10, 2)))", "sum(DISTINCT CAST(x AS DECIMAL(10, 1)))", "stddev_samp(x)", "var_pop(k)",
	}
	rng.Shuffle(len(aggs), func(i, j int) { aggs[i], aggs[j] = aggs[j], aggs[i] })
	sel := aggs[:1+rng.Intn(4)]
	groups := [][]string{nil, {"g"}, {"s"}, {"g", "s"}, {"k % 3"}, {"g", "s"}, {"g"}}[rng.Intn(7)]
	q := "SELECT " + strings.Join(append(slices.Clone(groups), sel...), ", ") + " FROM {T0}" + where
	switch by := strings.Join(groups, ", "); {
	case groups == nil:
	case rng.Intn(3) == 0: // grouping sets
		sets := []string{"ROLLUP (" + by + ")", "CUBE (" + by + ")", "GROUPING SETS ((" + by + "), ())", "GROUPING SETS ((" + by + "), (" + by + "))"}
		q += " GROUP BY " + sets[rng.Intn(len(sets))]
	default:
		q += " GROUP BY " + by
	}
	if rng.Intn(3) == 0 {
		q += []string{" HAVING count(*) > 1", " HAVING sum(x) > 20", " HAVING max(x) < 40"}[rng.Intn(3)]
	}
	return q
}

// randomRank is a deduplication or top-N (ROW_NUMBER(), RANK(),
// DENSE_RANK() or ORDER BY with LIMIT), over the table or over an
// aggregation of it. A row number's ORDER BY keys cover every column, so
// that rows tied on them are equal and the batch answer is one multiset.
func randomRank(rng *rand.Rand, where string) string {
	bound := []string{"rn = 1", "rn <= 2", "rn < 4", "rn <= 3 AND rn > 1", "rn <= 2 AND x > 0"}[rng.Intn(5)]
	if rng.Intn(4) == 0 {
		bound = strings.ReplaceAll(bound, "x > 0", "c > 1")
		return "SELECT g, c" + []string{"", ", rn"}[rng.Intn(2)] + " FROM (SELECT g, c, ROW_NUMBER() OVER (ORDER BY c DESC, g) AS rn FROM (SELECT g, count(*) AS c FROM {T0}" + where + " GROUP BY g) a) b WHERE " + bound
	}
	if rng.Intn(5) == 0 {
		return []string{
			"SELECT k, x, s FROM {T0}" + where + " ORDER BY x DESC, k, s, g LIMIT 3",
			"SELECT g, count(*) AS c FROM {T0}" + where + " GROUP BY g ORDER BY c DESC, g LIMIT 2 OFFSET 1",
		}[rng.Intn(2)]
	}
	part := []string{"PARTITION BY g ", "PARTITION BY s ", "PARTITION BY k % 3 ", ""}[rng.Intn(4)]
	order := []string{"x DESC, k, s, g", "s, x, k, g", "k DESC, x, g, s"}[rng.Intn(3)]
	cols := []string{"k, g, x, s, rn", "k, x, s", "g, x"}[rng.Intn(3)]
	fn := "ROW_NUMBER()"
	if rng.Intn(2) == 0 {
		// A rank numbers rows tied on the ORDER BY keys alike: any keys
		// give one answer.
		fn = []string{"RANK()", "DENSE_RANK()"}[rng.Intn(2)]
		order = []string{"x DESC", "g, x", "s", "x % 3, g DESC"}[rng.Intn(4)]
	}
	return "SELECT " + cols + " FROM (SELECT k, g, x, s, " + fn + " OVER (" + part + "ORDER BY " + order + ") AS rn FROM {T0}" + where + ") a WHERE " + bound
}

// stateless reports whether randomQuery's q keeps no state.
func stateless(q string) bool {
	if strings.Contains(q, "RANK()") || strings.Contains(q, "ROW_NUMBER") || strings.Contains(q, "LIMIT") {
		return false
	}
	for _, p := range []string{"SELECT k, x, s ", "SELECT x, s ", "SELECT k + g AS kg, upper(s) AS us "} {
		if strings.HasPrefix(q, p) {
			return true
		}
	}
	return false
}

// randomScalarSubquery is a query with a non-correlated scalar subquery
// (a join with a one-row aggregate): a change of the value moves every
// row it compares. The subquery reads another table: two reads of one
// table are at different snapshots between markers, which this test's
// positions cannot say.
func randomScalarSubquery(rng *rand.Rand) string {
	return []string{
		"SELECT k, x FROM {T0} WHERE x > (SELECT avg(x) FROM {T1})",
		"SELECT k, s, (SELECT max(x) FROM {T1} WHERE x > 5) AS m FROM {T0}",
		"SELECT g, count(*) FROM {T0} WHERE x >= (SELECT min(x) + 3 FROM {T1} WHERE g = 1) GROUP BY g",
		"SELECT a.k, b.s FROM {T0} a JOIN {T1} b ON a.k = b.k WHERE a.x < (SELECT max(x) - 2 FROM {T2})",
	}[rng.Intn(4)]
}

// randomJoin is a join of two or three tables, alone or under an
// aggregation, a set operation over them, or a scalar subquery of one in
// a query of the other.
func randomJoin(rng *rand.Rand) string {
	kinds := []string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"}
	on := []string{"a.k = b.k", "a.g = b.g", "a.g = b.g AND a.x < b.x", "a.k = b.k AND (a.s <> b.s OR b.s IS NULL)"}
	from := "{T0} a " + kinds[rng.Intn(4)] + " {T1} b ON " + on[rng.Intn(len(on))]
	cols := "a.k, a.x, b.k, b.s"
	if rng.Intn(2) == 0 {
		from += " " + kinds[rng.Intn(4)] + " {T2} c ON " + []string{"b.g = c.g", "a.k = c.k", "c.x > b.x AND c.g = a.g"}[rng.Intn(3)]
		cols += ", c.x"
	}
	switch rng.Intn(8) {
	case 7:
		return randomScalarSubquery(rng)
	case 4:
		return []string{
			"SELECT k, x FROM {T0} WHERE x > 5 UNION ALL SELECT k, x FROM {T1}",
			"SELECT g FROM {T0} UNION SELECT g FROM {T1}",
			"SELECT g, count(*), sum(x) FROM (SELECT g, x FROM {T0} UNION ALL SELECT g, x FROM {T1} UNION ALL SELECT g, k FROM {T2}) u GROUP BY g",
			"SELECT g, s FROM {T0} INTERSECT SELECT g, s FROM {T1}",
			"SELECT g, x % 3 FROM {T0} EXCEPT SELECT g, x % 3 FROM {T1} WHERE x > 5",
			"SELECT g, count(*) FROM (SELECT g, s FROM {T0} EXCEPT SELECT g, s FROM {T1}) e GROUP BY g",
		}[rng.Intn(6)]
	case 0:
		return "SELECT a.g, count(*), sum(b.x), max(a.s) FROM " + from + " GROUP BY a.g"
	case 1:
		return "SELECT count(*), count(b.k), min(a.x) FROM " + from
	case 2:
		sub := []string{"b.g = a.g", "b.g = a.g AND b.x > a.x", "b.k = a.k"}[rng.Intn(3)]
		not := []string{"", "NOT "}[rng.Intn(2)]
		return "SELECT a.k, a.x, a.s FROM {T0} a WHERE " + not + "EXISTS (SELECT 1 FROM {T1} b WHERE " + sub + ")"
	case 3:
		return "SELECT a.k, a.g FROM {T0} a WHERE a.g IN (SELECT g FROM {T1} b WHERE b.x > 10)"
	}
	return "SELECT " + cols + " FROM " + from
}
