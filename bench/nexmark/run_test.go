package nexmark

import (
	"bytes"
	"context"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/doget"
	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/engine"
)

// Queries in the nexmark files' form: a sink, then INSERT INTO it.
var testQueries = map[string]string{
	"q0": `CREATE TABLE nexmark_q0 (auction BIGINT, bidder BIGINT) WITH ('connector' = 'blackhole');
		INSERT INTO nexmark_q0 SELECT auction, bidder, price, channel, url, ` + "`dateTime`" + `, extra FROM bid;`,
	"q2": `-- a filter
		CREATE TABLE nexmark_q2 (auction BIGINT, price BIGINT) WITH ('connector' = 'blackhole');
		INSERT INTO nexmark_q2 SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;`,
	"q3": `CREATE TABLE nexmark_q3 (name VARCHAR, id BIGINT) WITH ('connector' = 'blackhole');
		INSERT INTO nexmark_q3 SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER JOIN person AS P on A.seller = P.id
		WHERE A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');`,
	"q17": `CREATE TABLE nexmark_q17 (auction BIGINT, ` + "`day`" + ` VARCHAR, total_bids BIGINT, min_price BIGINT, max_price BIGINT,
		sum_price BIGINT, bidders BIGINT) WITH ('connector' = 'blackhole');
		INSERT INTO nexmark_q17 SELECT auction, DATE_FORMAT(` + "`dateTime`" + `, 'yyyy-MM-dd') AS ` + "`day`" + `, count(*) AS total_bids,
		min(price), max(price), sum(price), count(DISTINCT bidder) FILTER (WHERE price >= 10000)
		FROM bid GROUP BY auction, DATE_FORMAT(` + "`dateTime`" + `, 'yyyy-MM-dd');`,
	// A deduplication whose ORDER BY key ties (events of one millisecond).
	"q18": `CREATE TABLE nexmark_q18 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, ` + "`dateTime`" + ` TIMESTAMP(3),
		extra VARCHAR) WITH ('connector' = 'blackhole');
		INSERT INTO nexmark_q18 SELECT auction, bidder, price, channel, url, ` + "`dateTime`" + `, extra
		FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY ` + "`dateTime`" + ` DESC) AS rank_number FROM bid)
		WHERE rank_number <= 1;`,
	// Event-time windows, some still open when the input ends.
	"q92": `CREATE TABLE nexmark_q92 (auction BIGINT, n BIGINT, starttime TIMESTAMP(3)) WITH ('connector' = 'blackhole');
		INSERT INTO nexmark_q92 SELECT auction, count(*) AS n, window_start FROM TABLE(
		TUMBLE(TABLE bid, DESCRIPTOR(` + "`dateTime`" + `), INTERVAL '2' SECOND)) GROUP BY auction, window_start, window_end;`,
	"q90": `CREATE TABLE nexmark_q90 (channel VARCHAR, n BIGINT) WITH ('connector' = 'blackhole');
		INSERT INTO nexmark_q90 SELECT channel, count(*), max(price) FROM bid WHERE price > 1000000 GROUP BY channel;`,
	"q91": `CREATE TABLE nexmark_q91 (auction BIGINT) WITH ('connector' = 'blackhole');
		INSERT INTO nexmark_q91 SELECT auction FROM bid ORDER BY price DESC;`,
}

// startRun starts a flightd in this process, served over loopback, and
// parses the named testQueries; the allocator it returns is checked for
// leaks when the test ends.
func startRun(t *testing.T, names ...string) (*memory.CheckedAllocator, *Server, []Query) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	dir := t.TempDir()
	_, addr, stop, err := doget.StartFlightd(context.Background(), engine.Config{Mem: memory.NewGoAllocator(), Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	var queries []Query
	for _, name := range names {
		q, err := ParseQuery(name, testQueries[name])
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, q)
	}
	return mem, &Server{URI: "grpc://" + addr, Pid: os.Getpid(), DataDir: dir}, queries
}

// TestRun loads events into a flightd served in-process over loopback,
// through real Flight SQL clients, and runs queries both ways: the
// streamed answers must equal the batch answers, and a query flightd
// cannot stream must be reported with the reason.
func TestRun(t *testing.T) {
	ctx := context.Background()
	mem, srv, queries := startRun(t, "q0", "q2", "q3", "q17", "q18", "q90", "q91", "q92")
	cfg := DefaultConfig()
	cfg.ProbDelayedEvent = 0.1
	cfg.Rate = 500 // 12 s of event time: 2 s windows close, the last stay open
	var log bytes.Buffer
	var progress []int
	rep, err := Run(ctx, mem, srv, queries, Options{
		Events: 6000, CommitEvents: 500, Generator: cfg, Timeout: 5 * time.Minute, Stream: true, Jobs: true, Log: &log,
		Progress: func(rep *Report) {
			streamed := 0
			for _, q := range rep.Queries {
				if q.Stream.Status != StatusNotRun {
					streamed++
				}
			}
			progress = append(progress, streamed)
		},
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	// One report after each query's streamed runs, each with one more.
	for i, n := range progress {
		if n != i+1 {
			t.Errorf("progress reports with %v queries streamed, want 1, 2, ... one per query", progress)
			break
		}
	}
	if len(progress) != len(queries) {
		t.Errorf("%d progress reports, want one per query (%d)", len(progress), len(queries))
	}
	var table bytes.Buffer
	WriteTable(&table, rep)
	t.Log("\n" + table.String())
	for _, q := range rep.Queries {
		if q.Batch.Status != StatusOK {
			t.Errorf("%s batch: %s %s", q.Query, q.Batch.Status, q.Batch.Error)
		}
		if q.Query == "q91" {
			if q.Stream.Status != StatusRefused || !strings.Contains(q.Stream.Error, "ORDER BY") {
				t.Errorf("q91 stream: %s %q, want refused with the reason", q.Stream.Status, q.Stream.Error)
			}
			continue
		}
		if q.Stream.Status != StatusOK || !q.Stream.Equal || q.Stream.Rows != q.Stream.Compared {
			t.Errorf("%s stream: %s (%d rows, compared with %d) %s", q.Query, q.Stream.Status, q.Stream.Rows, q.Stream.Compared, q.Stream.Error)
		}
		if q.Stream.LatencyP50Ms <= 0 || q.Stream.LatencyP99Ms < q.Stream.LatencyP50Ms || q.Stream.CPUSeconds <= 0 {
			t.Errorf("%s stream: latency p50 %v p99 %v, CPU %v s: not measured", q.Query, q.Stream.LatencyP50Ms, q.Stream.LatencyP99Ms, q.Stream.CPUSeconds)
		}
		if q.Query == "q92" {
			if q.Stream.Compared == 0 || q.Stream.OpenRows == 0 || q.Stream.Watermark == "" || q.Stream.Compared+q.Stream.OpenRows != q.Batch.Rows {
				t.Errorf("q92: %+v, want closed and open windows that add up to the batch's %d rows", q.Stream.Comparison, q.Batch.Rows)
			}
		} else if q.Stream.Compared != q.Batch.Rows {
			t.Errorf("%s: compared %d rows of %d", q.Query, q.Stream.Compared, q.Batch.Rows)
		}
		if key := JobKeys[q.Query]; key != nil {
			if j := q.Job; j == nil || j.Status != StatusOK || !j.Equal || j.Rows != q.Batch.Rows || j.LatencyP99Ms <= 0 {
				t.Errorf("%s job: %+v", q.Query, j)
			}
		} else if q.Job != nil {
			t.Errorf("%s ran as a job without a key", q.Query)
		}
	}
	if ms := rep.Queries[0].Stream.LatencyP50Ms; ms <= 0 {
		t.Errorf("q0 p50 %v ms", ms)
	}
	if rep.Queries[0].Batch.Rows != 6000*46/50 {
		t.Errorf("q0 gave %d bids, want %d", rep.Queries[0].Batch.Rows, 6000*46/50)
	}
	for _, bad := range []Options{{Events: 0, CommitEvents: 1, Timeout: time.Second, Generator: cfg},
		{Events: 1, CommitEvents: 1, Timeout: time.Second, Rate: -1, Generator: cfg}} {
		if _, err := Run(ctx, mem, &Server{URI: srv.URI}, queries, bad); err == nil {
			t.Errorf("Run took %+v", bad)
		}
	}
	out := t.TempDir()
	if err := WriteFiles(out, rep); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"nexmark.json", "nexmark.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

// TestRunPaced: with a paced share, each query that streamed streams again
// with ingest paced at that share of its first run's events/s: the paced
// run takes at least the time the pace sets, measures its latency, and its
// answer is compared with the batch answer again.
func TestRunPaced(t *testing.T) {
	ctx := context.Background()
	mem, srv, queries := startRun(t, "q2", "q92", "q91")
	cfg := DefaultConfig()
	cfg.Rate = 500
	const share = 0.5
	opt := Options{Events: 4000, CommitEvents: 500, Generator: cfg, Timeout: 5 * time.Minute, Stream: true, PacedShare: share}
	rep, err := Run(ctx, mem, srv, queries, opt)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	WriteTable(&table, rep)
	t.Log("\n" + table.String())
	if !strings.Contains(table.String(), "paced at 50%") {
		t.Errorf("no paced table")
	}
	for _, q := range rep.Queries {
		p := q.Paced
		if q.Query == "q91" {
			if p != nil {
				t.Errorf("q91 was refused as a stream, but ran paced: %+v", p)
			}
			continue
		}
		if p == nil || p.Status != StatusOK || !p.Equal || p.Compared != q.Batch.Rows-p.OpenRows || (q.Query == "q92" && p.Compared == 0) {
			t.Fatalf("%s paced: %+v", q.Query, p)
		}
		if want := share * q.Stream.EventsPerSec; math.Abs(p.Rate-want) > 1e-9*want {
			t.Errorf("%s paced at %v events/s, want %v", q.Query, p.Rate, want)
		}
		// The last commit begins once the others' events are due.
		if least := float64(opt.Events-int64(opt.CommitEvents)) / p.Rate; p.Seconds < least {
			t.Errorf("%s paced run took %.2f s, the pace sets at least %.2f s", q.Query, p.Seconds, least)
		}
		if p.LatencyP50Ms <= 0 || p.LatencyP99Ms < p.LatencyP50Ms {
			t.Errorf("%s paced latency p50 %v p99 %v", q.Query, p.LatencyP50Ms, p.LatencyP99Ms)
		}
	}
	if c := Count(rep); c.PacedOK != 2 || c.PacedDiffers+c.PacedFailed != 0 {
		t.Errorf("paced counts %+v", c)
	}
	for _, bad := range []float64{-0.5, 1.5, math.NaN()} {
		o := opt
		o.PacedShare = bad
		if _, err := Run(ctx, mem, srv, queries, o); err == nil || !strings.Contains(err.Error(), "paced share") {
			t.Errorf("paced share %v: %v", bad, err)
		}
	}
}

// TestCountPaced: a paced run that compared nothing (processing-time
// windows) is counted as not compared, not as equal to the batch answer.
func TestCountPaced(t *testing.T) {
	rep := &Report{PacedShare: 0.8}
	for _, st := range []string{StatusOK, StatusUncompared, StatusDiffers, StatusLate, StatusFailed} {
		rep.Queries = append(rep.Queries, QueryResult{Paced: &StreamResult{Status: st}})
	}
	if c := Count(rep); c.PacedOK != 1 || c.PacedUncompared != 1 || c.PacedDiffers != 2 || c.PacedFailed != 1 {
		t.Errorf("paced counts %+v", c)
	}
	var table bytes.Buffer
	WriteTable(&table, rep)
	if !strings.Contains(table.String(), "1 equal to batch, 2 differ (also late), 1 failed, 1 not compared") {
		t.Errorf("paced summary:\n%s", table.String())
	}
}

// TestSpool: rows spooled to disk read back as the same rows (keyed as
// compared), with their counts, for every kind of value, zeros, NULLs and
// copies included; a mark reads back only the records before it.
func TestSpool(t *testing.T) {
	num := func(a, b int64, scale int32) tpcds.Value {
		return tpcds.Value{Kind: tpcds.KNum, Num: big.NewRat(a, b), Scale: scale}
	}
	rows := [][]tpcds.Value{
		{num(0, 1, 0), {Kind: tpcds.KFloat, F: math.Copysign(0, -1)}, {Kind: tpcds.KString}, {Kind: tpcds.KBool}, {Kind: tpcds.KDate}, {}},
		{num(-7, 3, 2), {Kind: tpcds.KFloat, F: 2.5}, {Kind: tpcds.KString, S: "a\x00b"}, {Kind: tpcds.KBool, Bool: true}, {Kind: tpcds.KTime, I: -1}, {Kind: tpcds.KDate, I: 16631}},
	}
	s := newTestSpool(t)
	want := rowSet{}
	for _, r := range append(rows, rows[1]) { // a copy
		if err := s.add(r, 1); err != nil {
			t.Fatal(err)
		}
		want.add(r, 1)
	}
	m := s.mark()
	if err := s.add(rows[0], -1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    int64
		want rowSet
	}{{m.records, want}, {s.records, func() rowSet { w := want.clone(); w.add(rows[0], -1); return w }()}} {
		got, err := s.load(c.n)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := (&expected{rows: c.want}).diff(got); d != "" || len(got) != len(c.want) || got.rows() != c.want.rows() {
			t.Fatalf("read back %d records as %d rows (%v), want %d: %s", c.n, got.rows(), got, c.want.rows(), d)
		}
	}
	if m.sum.rows != 3 || s.sum.rows != 2 || m.sum == s.sum {
		t.Fatalf("digests: %+v at the mark, %+v after a retraction", m.sum, s.sum)
	}
}

func newTestSpool(t *testing.T) *spool {
	t.Helper()
	s, err := newSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.remove)
	return s
}
