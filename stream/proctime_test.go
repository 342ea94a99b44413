package stream_test

import (
	"context"
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

// procWindows is a random TUMBLE, HOP or CUMULATE over the PROCTIME()
// attribute pt, with the windows holding a time computed independently
// of the code under test.
type procWindows struct {
	tvf        string // with %s for the table
	kind       string
	step, size int64 // microseconds
}

func randomProcWindows(rng *rand.Rand) procWindows {
	unit := []int64{1000, 500}[rng.Intn(2)] // milliseconds: whole or half seconds
	iv := func(n int64) string { return fmt.Sprintf("INTERVAL '%d' MILLISECOND", n*unit) }
	switch rng.Intn(3) {
	case 0:
		s := int64(1 + rng.Intn(5))
		return procWindows{fmt.Sprintf("TUMBLE(TABLE %%s, DESCRIPTOR(pt), %s)", iv(s)), "TUMBLE", s * unit * 1e3, s * unit * 1e3}
	case 1:
		st := int64(1 + rng.Intn(2))
		s := st * int64(2+rng.Intn(2))
		return procWindows{fmt.Sprintf("HOP(TABLE %%s, DESCRIPTOR(pt), %s, %s)", iv(st), iv(s)), "HOP", st * unit * 1e3, s * unit * 1e3}
	default:
		st := int64(1 + rng.Intn(2))
		s := st * int64(2+rng.Intn(3))
		return procWindows{fmt.Sprintf("CUMULATE(TABLE %%s, DESCRIPTOR(pt), %s, %s)", iv(st), iv(s)), "CUMULATE", st * unit * 1e3, s * unit * 1e3}
	}
}

// of lists the windows [start, end) holding t, aligned to the epoch.
func (w procWindows) of(t int64) [][2]int64 {
	floor := func(x int64) int64 { return t - ((t%x)+x)%x }
	var out [][2]int64
	switch w.kind {
	case "HOP":
		for s := floor(w.step); s > t-w.size; s -= w.step {
			out = append(out, [2]int64{s, s + w.size})
		}
	case "CUMULATE":
		s := floor(w.size)
		for e := s + w.step; e <= s+w.size; e += w.step {
			if t < e {
				out = append(out, [2]int64{s, e})
			}
		}
	default:
		out = append(out, [2]int64{floor(w.size), floor(w.size) + w.size})
	}
	return out
}

// TestProcTimeWindows: a window TVF aggregation over a PROCTIME()
// attribute (through a view, as Nexmark q12 reads it) streams under a
// clock the test drives. Rows are inserted and deleted while the clock
// stands still and moves on only once the stream has caught up with
// them, so a model knows each change's windows: those holding the clock
// when it was read (a deletion retracts from them). After every step the
// rows emitted are exactly the model's groups of the windows the clock
// has passed, with a positive row count, each once, as +I: none before
// its window closed and none lost. Then the batch query over the same
// view puts every row in the windows of its statement time. Replay with
// -seed.
func TestProcTimeWindows(t *testing.T) {
	seed := testSeed(t)
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			runProcTimeWindows(t, rand.New(rand.NewSource(seed+int64(i))))
		})
	}
}

// openProcTime opens an engine over cfg whose PROCTIME() reads clock (set to
// a random moment of 2024-01-01), checked for leaks, with a session and a
// helper that executes a statement or fails the test.
func openProcTime(t *testing.T, rng *rand.Rand, clock *atomic.Int64, cfg engine.Config) (*engine.Engine, *engine.Session, func(string)) {
	t.Helper()
	clock.Store(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro() + rng.Int63n(10e6))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	cfg.Mem, cfg.Root = mem, t.TempDir()
	cfg.Plan.ProcTime = func() time.Time { return time.UnixMicro(clock.Load()) }
	eng, err := engine.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sess := eng.NewSession()
	run := func(q string) {
		t.Helper()
		st, err := sess.Prepare(context.Background(), q, nil)
		if err == nil {
			_, err = st.Exec(context.Background(), nil)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return eng, sess, run
}

func runProcTimeWindows(t *testing.T, rng *rand.Rand) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clock atomic.Int64 // microseconds
	eng, sess, run := openProcTime(t, rng, &clock, engine.Config{BatchSize: []int{1, 3, 1024}[rng.Intn(3)], Parallelism: 1})
	defer eng.Close()
	run("CREATE TABLE bid (id INT, auction INT, price BIGINT)")
	run("CREATE VIEW b AS SELECT *, PROCTIME() AS pt FROM bid")
	bid, err := eng.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "bid"})
	if err != nil {
		t.Fatal(err)
	}
	ws := randomProcWindows(rng)
	query := func(table string) string {
		return fmt.Sprintf("SELECT window_start, window_end, auction, count(*), sum(price) FROM TABLE(%s) GROUP BY window_start, window_end, auction", fmt.Sprintf(ws.tvf, table))
	}
	text := query("b /*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='20ms', 'continuous.discovery-interval'='10ms') */")
	t.Log(text)
	if p := explain(t, ctx, sess, text); !strings.Contains(p, "processing time") {
		t.Fatalf("not a processing-time window aggregation:\n%s", p)
	}
	st, err := sess.Prepare(ctx, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &streamRun{query: text, img: map[string]int{}, events: make(chan event, 4), tables: []int{0}}
	sctx, stop := context.WithCancel(plan.WithStreamObserver(ctx, s))
	op, err := st.Query(sctx, nil)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	s.stop = stop
	s.wg.Add(1)
	go s.pull(sctx, op)
	defer s.close()

	// next applies the stream's next event; it fails the test on an
	// error or when nothing comes for a minute (a stream that stopped).
	next := func() event {
		t.Helper()
		ev := s.next(t, time.Minute, "the next marker")
		for _, r := range ev.rows {
			if r[0] != "+I" {
				t.Fatalf("a processing-time window emitted %q", r)
			}
			if err := s.apply(r); err != nil {
				t.Fatal(err)
			}
		}
		return ev
	}
	caughtUp := func() {
		t.Helper()
		latest, err := bid.LatestSnapshotID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if ev := next(); ev.rows == nil && ev.pos[0] >= latest {
				return
			}
		}
	}
	type group struct{ rows, sum int64 }
	model := map[[2]int64]map[int64]*group{} // window -> auction -> group
	ts := func(us int64) string { return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999999") }
	want := func() []string {
		var out []string
		for w, groups := range model {
			if w[1] > clock.Load() {
				continue
			}
			for a, g := range groups {
				if g.rows > 0 {
					out = append(out, fmt.Sprintf("%s|%s|%d|%d|%d", ts(w[0]), ts(w[1]), a, g.rows, g.sum))
				}
			}
		}
		slices.Sort(out)
		return out
	}
	type row struct{ auction, price int64 }
	live := map[int]row{}
	nextID := 0
	caughtUp()
	emitted := 0
	for step := range 40 {
		switch r := rng.Intn(4); {
		case r == 0:
			clock.Add(rng.Int63n(2 * ws.size))
		case r == 1 && len(live) > 0:
			ids := make([]int, 0, len(live))
			for id := range live {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			id := ids[rng.Intn(len(ids))]
			run(fmt.Sprintf("DELETE FROM bid WHERE id = %d", id))
			for _, w := range ws.of(clock.Load()) {
				g := model[w][live[id].auction]
				if g == nil {
					g = &group{}
					if model[w] == nil {
						model[w] = map[int64]*group{}
					}
					model[w][live[id].auction] = g
				}
				g.rows--
				g.sum -= live[id].price
			}
			delete(live, id)
			caughtUp()
		default:
			var vals []string
			for range 1 + rng.Intn(4) {
				r := row{int64(1 + rng.Intn(3)), int64(1 + rng.Intn(100))}
				live[nextID] = r
				vals = append(vals, fmt.Sprintf("(%d, %d, %d)", nextID, r.auction, r.price))
				nextID++
				for _, w := range ws.of(clock.Load()) {
					if model[w] == nil {
						model[w] = map[int64]*group{}
					}
					g := model[w][r.auction]
					if g == nil {
						g = &group{}
						model[w][r.auction] = g
					}
					g.rows++
					g.sum += r.price
				}
			}
			run("INSERT INTO bid VALUES " + strings.Join(vals, ", "))
			caughtUp()
		}
		// The windows the clock passed are emitted at a later marker
		// (the heartbeat): wait for them, and for nothing else.
		w := want()
		deadline := time.Now().Add(time.Minute)
		for !slices.Equal(s.rows(), w) {
			if time.Now().After(deadline) {
				t.Fatalf("step %d (clock %s): after a minute of markers the stream has %q, want %q", step, ts(clock.Load()), s.rows(), w)
			}
			for _, r := range s.rows() {
				if !slices.Contains(w, r) {
					t.Fatalf("step %d (clock %s): emitted %s, which is not a closed window's group; want %q", step, ts(clock.Load()), r, w)
				}
			}
			next()
		}
		emitted = len(w)
	}
	t.Logf("%d window groups emitted, %d rows live", emitted, len(live))

	// Batch: every row in the windows holding the statement time.
	before := time.Now().UnixMicro()
	got := sortedRows(t, ctx, sess, query("b"))
	after := time.Now().UnixMicro()
	sums := map[int64]*group{}
	for _, r := range live {
		if sums[r.auction] == nil {
			sums[r.auction] = &group{}
		}
		sums[r.auction].rows++
		sums[r.auction].sum += r.price
	}
	var okWant [][]string
	for _, at := range []int64{before, after} { // the statement time is between
		var rows []string
		for _, w := range ws.of(at) {
			for a, g := range sums {
				rows = append(rows, fmt.Sprintf("%s|%s|%d|%d|%d", ts(w[0]), ts(w[1]), a, g.rows, g.sum))
			}
		}
		slices.Sort(rows)
		okWant = append(okWant, rows)
	}
	if !slices.Equal(got, okWant[0]) && !slices.Equal(got, okWant[1]) {
		t.Fatalf("batch over processing time gives %q, want the windows of the statement time: %q", got, okWant[0])
	}
}

// TestProcTimeWindowsRefused: what processing-time windows do not support
// is refused at planning with the reason, and a view takes a streaming
// hint only.
func TestProcTimeWindowsRefused(t *testing.T) {
	ctx, sess := windowEngine(t, "(1, 10, TIMESTAMP '2024-01-01 00:00:01')")
	st, err := sess.Prepare(ctx, "CREATE VIEW b AS SELECT *, PROCTIME() AS pt FROM bid", nil)
	if err == nil {
		_, err = st.Exec(ctx, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	const hint = "/*+ OPTIONS('scan.mode'='latest-full') */"
	tvf := "TUMBLE(TABLE b " + hint + ", DESCRIPTOR(pt), INTERVAL '10' SECOND)"
	for q, want := range map[string]string{
		"SELECT window_start, window_end, count(*) FROM TABLE(SESSION(TABLE b " + hint + ", DESCRIPTOR(pt), INTERVAL '10' SECOND)) GROUP BY window_start, window_end":                                                                                               "SESSION windows over processing time",
		"SELECT window_start, window_end, count(*) FROM TABLE(SESSION(TABLE b, DESCRIPTOR(pt), INTERVAL '10' SECOND)) GROUP BY window_start, window_end":                                                                                                            "SESSION windows over processing time",
		"SELECT a.auction FROM (SELECT * FROM TABLE(" + tvf + ")) a JOIN (SELECT * FROM TABLE(" + tvf + ")) c ON a.window_start = c.window_start AND a.window_end = c.window_end":                                                                                   "window joins over processing time",
		"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY c DESC) AS rn FROM (SELECT window_start, window_end, auction, count(*) AS c FROM TABLE(" + tvf + ") GROUP BY window_start, window_end, auction)) WHERE rn <= 3": "window top-N over processing-time windows",
		"SELECT * FROM b /*+ OPTIONS('scan.snapshot-id'='1') */":                   "table hints other than a streaming one",
		"SELECT * FROM b /*+ OPTIONS('scan.mode'='latest', 'consumer-id'='c1') */": "consumer-id applies to a table's stream",
	} {
		_, err := sess.Prepare(ctx, q, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", q, err, want)
		}
	}
}

// TestProcTimeWindowJob runs Nexmark q12's query (bids per bidder in
// 10-second processing-time windows, through a view adding PROCTIME()) as
// a continuous job into a keyed table: rows are inserted while the clock
// stands still, the clock moves once the job has processed them, and then
// the sink must come to hold exactly a model's counts for the windows the
// clock has passed, and never a row of a window still open. Replay with
// -seed.
func TestProcTimeWindowJob(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clock atomic.Int64 // microseconds
	eng, sess, run := openProcTime(t, rng, &clock, engine.Config{})
	defer eng.Close()
	run("CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT)")
	run("CREATE VIEW B AS SELECT *, PROCTIME() AS p_time FROM bid")
	run("CREATE TABLE q12 (bidder BIGINT NOT NULL, bid_count BIGINT, starttime TIMESTAMP_LTZ(6) NOT NULL, endtime TIMESTAMP_LTZ(6) NOT NULL, PRIMARY KEY (bidder, starttime, endtime) NOT ENFORCED)")
	run(`INSERT INTO q12 SELECT bidder, count(*) AS bid_count, window_start AS starttime, window_end AS endtime
		FROM TABLE(TUMBLE(TABLE B /*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='20ms', 'continuous.discovery-interval'='10ms') */, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
		GROUP BY bidder, window_start, window_end`)
	bid, err := eng.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "bid"})
	if err != nil {
		t.Fatal(err)
	}
	const size = int64(10e6)
	ts := func(us int64) string { return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999999") }
	counts := map[[2]int64]int64{} // window start, bidder -> bids
	want := func() []string {
		var out []string
		for k, n := range counts {
			if k[0]+size <= clock.Load() {
				out = append(out, fmt.Sprintf("%d|%d|%s|%s", k[1], n, ts(k[0]), ts(k[0]+size)))
			}
		}
		slices.Sort(out)
		return out
	}
	for round := range 12 {
		var vals []string
		for range 1 + rng.Intn(5) {
			bidder := int64(1 + rng.Intn(4))
			vals = append(vals, fmt.Sprintf("(1, %d, 10)", bidder))
			now := clock.Load()
			counts[[2]int64{now - now%size, bidder}]++
		}
		run("INSERT INTO bid VALUES " + strings.Join(vals, ", "))
		latest, err := bid.LatestSnapshotID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The job has read the rows (at the clock now) once it has
		// processed their snapshot.
		deadline := time.Now().Add(time.Minute)
		for {
			jobs := eng.Jobs(ctx)
			if len(jobs) != 1 || jobs[0].State != engine.JobRunning {
				t.Fatalf("jobs: %+v", jobs)
			}
			if len(jobs[0].Positions) == 1 && jobs[0].Positions[0] >= latest {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job did not process snapshot %d in a minute: %+v", latest, jobs[0])
			}
			time.Sleep(10 * time.Millisecond)
		}
		clock.Add(rng.Int63n(15e6))
		w := want()
		for deadline := time.Now().Add(time.Minute); ; {
			got := sortedRows(t, ctx, sess, "SELECT bidder, bid_count, starttime, endtime FROM q12")
			for _, r := range got {
				if !slices.Contains(w, r) {
					t.Fatalf("round %d (clock %s): the sink has %s; want %q", round, ts(clock.Load()), r, w)
				}
			}
			if slices.Equal(got, w) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d (clock %s): after a minute the sink has %q, want %q", round, ts(clock.Load()), got, w)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(want()) == 0 {
		t.Fatal("no window closed: the test checked nothing")
	}
	t.Logf("%d window rows in the sink", len(want()))
}
