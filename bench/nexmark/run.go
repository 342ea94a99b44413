package nexmark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/bench/tpcds"
	fsql "github.com/flightd/flightd/flightsql"
)

// Options set a run.
type Options struct {
	Events       int64         // events loaded for the batch queries and streamed to each streaming query
	CommitEvents int           // events per commit (each commit writes person, auction and bid)
	Rate         float64       // events per second of wall time while streaming; 0: as fast as possible
	Generator    Config        // the events
	Timeout      time.Duration // longest a query may run, batch or streaming
	Stream       bool          // also run the queries as streaming queries
	Jobs         bool          // also run the queries with a key in JobKeys as continuous jobs
	// PacedShare, with Stream: each query that streamed is streamed again
	// with ingest paced at this share of the events/s its first run
	// reached (its sustainable rate), for the latency below the maximum
	// rate; 0: not.
	PacedShare float64
	Database   string    // flightd's database of the tables ("default")
	Log        io.Writer // progress lines; nil: none
	// Progress, when set, gets the report so far after each query's
	// streamed runs: a long run stopped early keeps what it measured.
	Progress func(*Report)
}

// Status of a query run.
const (
	StatusOK      = "ok"
	StatusRefused = "refused" // flightd refused the query; Error says why
	StatusFailed  = "failed"  // accepted, then failed, timed out, or setup failed
	StatusDiffers = "differs" // streamed answer != batch answer
	// StatusLate: the streamed answer equalled the batch answer only after
	// a later progress marker than the one that reported the last commit
	// delivered: the stream's progress ran ahead of its changes.
	StatusLate   = "late"
	StatusNotRun = "not run"
	// StatusUncompared: the query ran, but its answer depends on when rows
	// arrived (processing-time windows), so no batch answer compares.
	StatusUncompared = "uncompared"
)

// BatchResult is a query run once as a batch query over all the events.
type BatchResult struct {
	Status       string  `json:"status"`
	Error        string  `json:"error,omitempty"`
	Rows         int     `json:"rows"`
	Seconds      float64 `json:"seconds"`
	CPUSeconds   float64 `json:"flightd_cpu_seconds"`
	EventsPerSec float64 `json:"events_per_second"`
}

// StreamResult is a query run as a streaming query while the events are
// ingested. CPU is flightd's over the run, ingest included.
type StreamResult struct {
	Status          string  `json:"status"`
	Error           string  `json:"error,omitempty"`
	Seconds         float64 `json:"seconds"`
	CPUSeconds      float64 `json:"flightd_cpu_seconds"`
	EventsPerSec    float64 `json:"events_per_second"`
	EventsPerCPUSec float64 `json:"events_per_cpu_second"`
	LatencyP50Ms    float64 `json:"latency_p50_ms"`
	LatencyP99Ms    float64 `json:"latency_p99_ms"`
	// Rate is the events/s of wall time ingest was paced at (0: as fast
	// as possible).
	Rate      float64 `json:"rate,omitempty"`
	Changes   int64   `json:"changes"`
	PeakRSSMB float64 `json:"flightd_peak_rss_mb,omitempty"`
	Rows      int     `json:"rows"`
	Equal     bool    `json:"streamed_equals_batch"`
	Comparison
}

// Comparison says what a streamed result was compared with.
type Comparison struct {
	// Watermark is the stream's final watermark (a query with event-time
	// windows): only the windows it closed are compared.
	Watermark string `json:"watermark,omitempty"`
	// Compared rows of the batch answer (of closed windows only, for a
	// windowed query); OpenRows of the full batch answer are in windows
	// still open (not compared, not an error).
	Compared int `json:"compared_rows"`
	OpenRows int `json:"open_window_rows,omitempty"`
	// TiedRows differ from the batch answer only in the choice among rows
	// tied on a ROW_NUMBER()'s ORDER BY keys (accepted).
	TiedRows int `json:"tied_rows,omitempty"`
}

// QueryResult is one query both ways.
type QueryResult struct {
	Query  string       `json:"query"`
	Batch  BatchResult  `json:"batch"`
	Stream StreamResult `json:"stream"`
	// Job is the query run as a continuous job into a keyed sink (queries
	// with a key in JobKeys, with Options.Jobs).
	Job *StreamResult `json:"job,omitempty"`
	// Paced is the query streamed again at Options.PacedShare of
	// Stream.EventsPerSec.
	Paced *StreamResult `json:"paced,omitempty"`
	Flink *FlinkResult  `json:"flink,omitempty"`
}

// LoadResult is the ingest of all events with no query running.
type LoadResult struct {
	Seconds      float64 `json:"seconds"`
	CPUSeconds   float64 `json:"flightd_cpu_seconds"`
	EventsPerSec float64 `json:"events_per_second"`
}

// Report is a whole run.
type Report struct {
	Date         string  `json:"date"`
	Machine      string  `json:"machine"`
	Events       int64   `json:"events"`
	CommitEvents int     `json:"commit_events"`
	Rate         float64 `json:"rate"`
	PacedShare   float64 `json:"paced_share,omitempty"`
	// LoadAvg is the machine's 1-minute load average when the run began
	// and when it ended (other processes share the cores).
	LoadAvg [2]float64 `json:"load_average"`
	Layout  []string   `json:"layout"` // how the tables were made, and why
	// FlinkReads is which events the Flink peer's jobs read, when it ran.
	FlinkReads FlinkReads    `json:"flink_reads,omitempty"`
	Load       LoadResult    `json:"load"`
	Queries    []QueryResult `json:"queries"`
}

// Run loads the events into the flightd srv, runs every query as a batch
// query and then, with opt.Stream, each as a streaming query while the
// events are ingested again into new tables, and compares the answers.
func Run(ctx context.Context, mem memory.Allocator, srv *Server, queries []Query, opt Options) (*Report, error) {
	if err := opt.Generator.Validate(); err != nil {
		return nil, err
	}
	if opt.Events <= 0 || opt.CommitEvents <= 0 || opt.Timeout <= 0 {
		return nil, fmt.Errorf("nexmark: events (%d), commit size (%d) and timeout (%v) must be positive", opt.Events, opt.CommitEvents, opt.Timeout)
	}
	if !(opt.Rate >= 0) {
		return nil, fmt.Errorf("nexmark: rate must be 0 (as fast as possible) or positive, got %v", opt.Rate)
	}
	if opt.Database == "" {
		opt.Database = "default"
	}
	r := &runner{mem: mem, srv: srv, opt: opt}
	f, err := tpcds.OpenFlightd(ctx, mem, srv.URI)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r.f = f
	if !(opt.PacedShare >= 0 && opt.PacedShare <= 1) {
		return nil, fmt.Errorf("nexmark: the paced share must be from 0 (no paced run) to 1, got %v", opt.PacedShare)
	}
	rep := &Report{Events: opt.Events, CommitEvents: opt.CommitEvents, Rate: opt.Rate, PacedShare: opt.PacedShare}
	rep.LoadAvg[0] = tpcds.LoadAverage()
	defer func() { rep.LoadAvg[1] = tpcds.LoadAverage() }()
	if rep.Layout, err = r.createTables(ctx); err != nil {
		return nil, err
	}
	r.logf("loading %d events in commits of %d", opt.Events, opt.CommitEvents)
	cpu0 := r.cpu()
	start := time.Now()
	if err := r.ingest(ctx, nil, nil); err != nil {
		return nil, err
	}
	rep.Load.Seconds = time.Since(start).Seconds()
	rep.Load.CPUSeconds = r.settledCPU() - cpu0
	rep.Load.EventsPerSec = float64(opt.Events) / rep.Load.Seconds
	r.logf("loaded in %.1f s (%.0f events/s, flightd %.1f CPU s)", rep.Load.Seconds, rep.Load.EventsPerSec, rep.Load.CPUSeconds)
	// The batch answers wait on disk for the streamed runs, and the
	// streamed results are spooled there too: the runner holds digests of
	// them, not their rows (spool), unless two differ.
	if r.answers, err = os.MkdirTemp("", "nexmark-answers-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(r.answers)
	r.stored = map[string]*answer{}
	defer func() {
		for _, a := range r.stored {
			a.remove()
		}
	}()
	for _, q := range queries {
		res := QueryResult{Query: q.Name, Stream: StreamResult{Status: StatusNotRun}}
		res.Batch = r.batch(ctx, q)
		r.logf("%s batch: %s %s", q.Name, res.Batch.Status, res.Batch.Error)
		rep.Queries = append(rep.Queries, res)
	}
	if !opt.Stream {
		return rep, nil
	}
	for i, q := range queries {
		if rep.Queries[i].Batch.Status != StatusOK {
			rep.Queries[i].Stream.Error = "no batch answer to compare with"
			continue
		}
		answer := r.stored[q.Name]
		rep.Queries[i].Stream = r.stream(ctx, q, answer, opt.Rate)
		s := rep.Queries[i].Stream
		r.logf("%s stream: %s %s", q.Name, s.Status, s.Error)
		if opt.PacedShare > 0 && (s.Status == StatusOK || s.Status == StatusUncompared) && s.EventsPerSec > 0 {
			p := r.stream(ctx, q, answer, opt.PacedShare*s.EventsPerSec)
			rep.Queries[i].Paced = &p
			r.logf("%s paced at %.0f events/s: %s %s (p50 %.0f ms, p99 %.0f ms)", q.Name, p.Rate, p.Status, p.Error, p.LatencyP50Ms, p.LatencyP99Ms)
		}
		if key := JobKeys[q.Name]; opt.Jobs && key != nil {
			j := r.job(ctx, q, key, answer)
			rep.Queries[i].Job = &j
			r.logf("%s job: %s %s", q.Name, j.Status, j.Error)
		}
		answer.remove()
		delete(r.stored, q.Name)
		if opt.Progress != nil {
			opt.Progress(rep)
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

type runner struct {
	mem memory.Allocator
	srv *Server
	opt Options
	f   *tpcds.Flightd
	// tableDDL makes the source tables (after the probe of the richest
	// form flightd accepts).
	tableDDL []string
	answers  string             // the directory of the spools
	stored   map[string]*answer // the batch answers of the queries yet to stream
}

func (r *runner) logf(format string, args ...any) {
	if r.opt.Log != nil {
		fmt.Fprintf(r.opt.Log, format+"\n", args...)
	}
}

func (r *runner) cpu() float64 {
	if r.srv.Pid == 0 {
		return 0
	}
	s, err := tpcds.CPUSeconds(r.srv.Pid)
	if err != nil {
		return 0
	}
	return s
}

// settledCPU is flightd's CPU time once the work a phase left running in
// the background (compaction of the tables it loaded, after their last
// commit) has finished: read at once, it fell to the next phase (q0's
// batch query showed 0.96-1.32 CPU s of compaction instead of 0.4-0.7).
// It waits until a quarter second costs under a quarter of a core (a
// compaction takes a whole one; a job or stream still open, waiting for
// commits, takes a little), or 10 s.
func (r *runner) settledCPU() float64 {
	const tick = 250 * time.Millisecond
	start, last := time.Now(), r.cpu()
	for deadline := start.Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(tick)
		now := r.cpu()
		if now-last < 0.25*tick.Seconds() {
			return now
		}
		last = now
	}
	r.logf("flightd still busy 10 s after the phase")
	return last
}

// The nexmark DDL's datagen table, without its connector options.
const datagenDDL = "CREATE TABLE datagen (event_type INT, " +
	"person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>, " +
	"auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>, " +
	"bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>, " +
	"`dateTime` AS CASE WHEN event_type = 0 THEN person.`dateTime` WHEN event_type = 1 THEN auction.`dateTime` ELSE bid.`dateTime` END, " +
	"WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND)"

// The flat tables that stand in for the views over datagen.
var flatColumns = [3]string{
	"id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR",
	"id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR",
	"auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR",
}

var entityTables = [3]string{"person", "auction", "bid"}

// watermarkDelay is the DDL's: WATERMARK FOR dateTime AS dateTime - 4 s.
const watermarkDelay = 4 * time.Second

var watermarkClause = fmt.Sprintf(", WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '%d' SECOND", int(watermarkDelay.Seconds()))

// createTables probes the richest table layout flightd accepts and
// creates the tables; the notes say what was substituted and why.
func (r *runner) createTables(ctx context.Context) ([]string, error) {
	var notes []string
	_ = r.f.Exec(ctx, "DROP TABLE IF EXISTS datagen")
	err := r.f.Exec(ctx, datagenDDL)
	if err == nil {
		// The loader writes flat tables only: nested (struct) ingest is
		// not written yet.
		_ = r.f.Exec(ctx, "DROP TABLE IF EXISTS datagen")
		notes = append(notes, "flightd accepts the datagen table with ROW columns, but the loader writes flat tables only")
	} else {
		notes = append(notes, "datagen with ROW columns refused: "+oneLine(err))
	}
	notes = append(notes, "three flat tables person, auction, bid with the views' columns stand in for datagen and its views")
	wm := watermarkClause
	_ = r.f.Exec(ctx, "DROP TABLE IF EXISTS probe_watermark")
	if err := r.f.Exec(ctx, "CREATE TABLE probe_watermark (`dateTime` TIMESTAMP(3)"+wm+")"); err != nil {
		notes = append(notes, "no WATERMARK on the flat tables: "+oneLine(err))
		wm = ""
	} else {
		notes = append(notes, "the flat tables have the DDL's WATERMARK (dateTime - 4 s)")
	}
	_ = r.f.Exec(ctx, "DROP TABLE IF EXISTS probe_watermark")
	r.tableDDL = nil
	for i, t := range entityTables {
		r.tableDDL = append(r.tableDDL, "CREATE TABLE "+t+" ("+flatColumns[i]+wm+")")
	}
	r.tableDDL = append(r.tableDDL, SideInputDDL)
	notes = append(notes, fmt.Sprintf("q13's side_input is a table of %d rows (key i, value 'i'), as nexmark's side_input_gen.sh writes, with PRIMARY KEY (key): a temporal join reads a table by its key", SideInputRows),
		"q14's Java UDF count_char(s, 'c') is rewritten to COALESCE(CHAR_LENGTH(s) - CHAR_LENGTH(REPLACE(s, 'c', '')), 0)")
	return notes, r.recreateTables(ctx)
}

// recreateTables drops and creates the source tables, empty but for the
// side input.
func (r *runner) recreateTables(ctx context.Context) error {
	for _, t := range append(entityTables[:], "side_input") {
		if err := r.f.Exec(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
			return fmt.Errorf("drop %s: %w", t, err)
		}
	}
	for _, ddl := range r.tableDDL {
		if err := r.f.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("%s: %w", ddl, err)
		}
	}
	b := array.NewRecordBuilder(r.mem, arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int64}, {Name: "value", Type: arrow.BinaryTypes.String},
	}, nil))
	defer b.Release()
	for i := range SideInputRows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(strconv.Itoa(i))
	}
	side := b.NewRecordBatch()
	defer side.Release()
	return r.f.Append(ctx, "side_input", side)
}

// commitDone is an ingested commit: when its write began and each table's
// newest snapshot once it was acknowledged.
type commitDone struct {
	began     time.Time
	snapshots map[string]int64
}

// ingest writes all events in commits of opt.CommitEvents, at opt.Rate
// when pace is set; done, if set, gets each commit.
func (r *runner) ingest(ctx context.Context, pace func(sent int64) time.Duration, done func(commitDone)) error {
	src := NewSource(r.opt.Generator, r.opt.Events)
	var sent int64
	for {
		events := src.Next(r.opt.CommitEvents)
		if len(events) == 0 {
			return nil
		}
		if pace != nil {
			if d := pace(sent); d > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(d):
				}
			}
		}
		c := commitDone{began: time.Now()}
		bs := NewBatches(r.mem, events)
		err := r.appendBatches(ctx, bs)
		bs.Release()
		if err != nil {
			return err
		}
		sent += int64(len(events))
		if done != nil {
			c.snapshots = map[string]int64{}
			for _, t := range entityTables {
				if c.snapshots[t], err = latestSnapshot(r.srv.DataDir, r.opt.Database, t); err != nil {
					return err
				}
			}
			done(c)
		}
	}
}

func (r *runner) appendBatches(ctx context.Context, bs Batches) error {
	for i, b := range bs {
		if b.NumRows() == 0 {
			continue
		}
		if err := r.f.Append(ctx, entityTables[i], b); err != nil {
			return err
		}
	}
	return nil
}

// setup runs a query's setup statements, each after dropping what it
// creates, so that a query can be set up again.
func (r *runner) setup(ctx context.Context, stmts []string) error {
	for _, st := range stmts {
		if d := dropFor(st); d != "" {
			_ = r.f.Exec(ctx, d)
		}
		if err := r.f.Exec(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", firstLine(st), err)
		}
	}
	return nil
}

// batch runs q as a batch query and keeps its answer in r.stored.
func (r *runner) batch(ctx context.Context, q Query) BatchResult {
	res := BatchResult{Status: StatusRefused}
	if err := r.setup(ctx, q.Setup); err != nil {
		res.Error = "setup: " + oneLine(err)
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, r.opt.Timeout)
	defer cancel()
	rows, err := newSpool(r.answers)
	if err != nil {
		res.Status, res.Error = StatusFailed, oneLine(err)
		return res
	}
	a := &answer{rows: rows}
	cpu0 := r.cpu()
	start := time.Now()
	cols, err := r.f.QueryRows(ctx, q.Select, func(row []tpcds.Value) error { return rows.add(row, 1) })
	res.Seconds = time.Since(start).Seconds()
	res.CPUSeconds = r.cpu() - cpu0
	if err != nil {
		a.remove()
		res.Error = oneLine(err)
		if ctx.Err() != nil {
			res.Status = StatusFailed
		}
		return res
	}
	res.Status = StatusOK
	res.Rows = int(rows.records)
	res.EventsPerSec = float64(r.opt.Events) / res.Seconds
	if rank, partition, order, rn, ok := rankQuery(q.Select); ok {
		if a.ties = newTies(cols, partition, order, rn); a.ties != nil {
			// Outside the timing: the rows a correct answer may keep among ties.
			if a.tied, err = r.querySpool(ctx, rank); err != nil {
				a.remove()
				res.Status, res.Error = StatusFailed, "the query with RANK() for ROW_NUMBER(): "+oneLine(err)
				return res
			}
		}
	}
	r.stored[q.Name] = a
	return res
}

// querySpool runs a batch query into a spool.
func (r *runner) querySpool(ctx context.Context, sql string) (*spool, error) {
	s, err := newSpool(r.answers)
	if err != nil {
		return nil, err
	}
	if _, err := r.f.QueryRows(ctx, sql, func(row []tpcds.Value) error { return s.add(row, 1) }); err != nil {
		s.remove()
		return nil, err
	}
	return s, nil
}

// stream runs q as a streaming query over new tables while the events are
// ingested at rate events/s (0: as fast as possible), applies its changes
// and compares the result with the batch answer.
func (r *runner) stream(ctx context.Context, q Query, answer *answer, rate float64) StreamResult {
	res := StreamResult{Status: StatusFailed, Rate: rate}
	if err := r.recreateTables(ctx); err != nil {
		res.Error = "tables: " + oneLine(err)
		return res
	}
	// Views keep their tables unhinted: their references are hinted
	// instead (hinted).
	if err := r.setup(ctx, q.Setup); err != nil {
		res.Status, res.Error = StatusRefused, "setup: "+oneLine(err)
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, r.opt.Timeout)
	defer cancel()
	var st *changeStream
	tables, err := hinted(q, func(sql string) (err error) {
		st, err = openStream(ctx, r.srv.URI, r.mem, sql)
		return err
	})
	if err != nil {
		res.Status, res.Error = StatusRefused, oneLine(err)
		return res
	}
	applied, err := newSpool(r.answers)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	defer applied.remove()
	applied.keepParts(answer)
	tr := newTracker(tables, applied)
	consumed := make(chan struct{})
	var consumeErr error
	go func() {
		consumeErr = st.consume(tr)
		close(consumed)
	}()
	defer func() {
		st.close()
		<-consumed
		st.release()
	}()
	// The stream is positioned once it has caught up with the empty tables.
	select {
	case <-tr.ready:
	case <-consumed:
		res.Status, res.Error = StatusRefused, "the stream ended before it caught up"
		if consumeErr != nil {
			res.Error = oneLine(consumeErr)
		}
		return res
	}
	cpu0 := r.cpu()
	resetPeakRSS(r.srv.Pid)
	start := time.Now()
	err = r.ingest(ctx, pace(start, rate), tr.committed)
	if err == nil {
		tr.finish()
		select {
		case <-tr.done:
		case <-consumed:
			err = consumeErr
			if err == nil {
				err = errors.New("the stream ended")
			}
		case <-ctx.Done():
			err = fmt.Errorf("timed out after %v: %s", r.opt.Timeout, tr.position())
		}
	}
	elapsed := time.Since(start)
	res.CPUSeconds = r.settledCPU() - cpu0
	res.PeakRSSMB = peakRSSMB(r.srv.Pid)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	r.measured(&res, elapsed, tr)
	res.Changes = tr.changes
	markers := tr.markerCount()
	if processingTime(q) {
		res.Status, res.Error, res.Rows = StatusUncompared, errProcessingTime, int(tr.result().sum.rows)
		return res
	}
	want, openRow, err := r.expectedAt(ctx, q, answer, tr.finalWatermark, &res.Comparison)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	if want != answer {
		defer want.rows.remove()
	}
	m := tr.result()
	o, err := tr.compare(want, m)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	if o.diff != "" {
		res.Status, res.Error = StatusDiffers, o.diff
		// The next caught-up marker comes with the stream's heartbeat
		// (5 s by default).
		if tr.awaitCaughtUp(ctx, markers, 15*time.Second) {
			m2 := tr.result()
			if o2, err := tr.compare(want, m2); err == nil && o2.diff == "" {
				res.Status, res.Error = StatusLate, "at the marker that reported the last commit delivered: "+o.diff
				m, o = m2, o2
			}
		}
	}
	res.TiedRows = o.tied
	res.Rows = int(m.sum.rows)
	if res.Status == StatusDiffers {
		return res
	}
	if err := tr.selfCheck(want, o, m, openRow); err != nil {
		res.Status, res.Error = StatusFailed, err.Error()
	} else if res.Status != StatusLate {
		res.Status, res.Equal = StatusOK, true
	}
	return res
}

// pace is the ingest's wait before each commit for rate events/s from
// start (nil for 0: as fast as possible).
func pace(start time.Time, rate float64) func(sent int64) time.Duration {
	if rate <= 0 {
		return nil
	}
	return func(sent int64) time.Duration {
		return time.Until(start.Add(time.Duration(float64(sent) / rate * float64(time.Second))))
	}
}

// measured fills in the rates and latencies of a run that took elapsed
// (res.CPUSeconds set).
func (r *runner) measured(res *StreamResult, elapsed time.Duration, tr *tracker) {
	res.Seconds = elapsed.Seconds()
	res.EventsPerSec = float64(r.opt.Events) / res.Seconds
	if res.CPUSeconds > 0 {
		res.EventsPerCPUSec = float64(r.opt.Events) / res.CPUSeconds
	}
	res.LatencyP50Ms, res.LatencyP99Ms = tr.latencies()
}

// expectedAt is the answer a result at the final watermark wm (zero: none
// reported) is compared with: the batch answer, restricted for a windowed
// query to the windows wm closed (the batch query again, over the same
// events, in a spool the caller removes); openRow is a row of the full
// answer in a window still open (nil: none). It fills c. Besides digests
// it holds the hashes of the closed windows' rows, to find the open ones.
func (r *runner) expectedAt(ctx context.Context, q Query, full *answer, wm func() time.Time, c *Comparison) (want *answer, openRow []tpcds.Value, err error) {
	if !windowed(q.Select) {
		c.Compared = int(full.rows.sum.rows)
		return full, nil, nil
	}
	w := wm()
	if w.IsZero() {
		return nil, nil, errors.New("a windowed query whose stream reported no watermark: no window can be compared")
	}
	c.Watermark = w.UTC().Format(time.RFC3339Nano)
	sel, err := closedWindows(q.Select, w)
	if err != nil {
		return nil, nil, err
	}
	closed, err := r.querySpool(ctx, sel)
	if err != nil {
		return nil, nil, fmt.Errorf("the batch query over closed windows: %w", err)
	}
	want = &answer{rows: closed, tied: full.tied, ties: full.ties}
	openRow, openRows, err := openRows(full.rows, closed, full.ties != nil)
	if err != nil {
		closed.remove()
		return nil, nil, err
	}
	c.Compared, c.OpenRows = int(closed.sum.rows), openRows
	return want, openRow, nil
}

// openRows counts the rows of the full answer that the closed windows'
// answer lacks (the windows still open) and returns the first of them.
// A row of the closed answer the full one lacks is an error, but with
// ties, where the two batch runs may choose other rows.
func openRows(full, closed *spool, ties bool) (first []tpcds.Value, n int, err error) {
	left := map[[2]uint64]int{}
	if err := closed.each(closed.records, func(row []tpcds.Value, c int) error {
		left[keyHash(rowKey(row))] += c
		return nil
	}); err != nil {
		return nil, 0, err
	}
	if err := full.each(full.records, func(row []tpcds.Value, c int) error {
		k := keyHash(rowKey(row))
		if left[k] > 0 {
			left[k] -= c
			return nil
		}
		if first == nil {
			first = row
		}
		n += c
		return nil
	}); err != nil {
		return nil, 0, err
	}
	if !ties {
		for _, c := range left {
			if c > 0 {
				return nil, 0, errors.New("the closed windows' answer has a row the full answer lacks")
			}
		}
	}
	return first, n, nil
}

// tracker applies a streaming query's changes and follows its progress
// against the commits, for their latency.
type tracker struct {
	tables []string // source tables of the query, sorted
	ready  chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	applied  *spool           // the applied changelog
	changes  int64            // rows received
	covered  map[string]int64 // per table, the snapshot up to which every change was delivered
	pending  []commitDone     // commits not yet covered, in order
	finished bool             // every commit is in pending or covered
	readySet bool
	doneSet  bool
	markers  int       // caught-up markers received
	atMarker bool      // the last progress was a caught-up marker
	wm       time.Time // watermark of the last caught-up marker
	lat      []time.Duration
	keyErr   error
}

// newTracker follows a query over tables whose changes are applied to
// applied (nil for a job, whose changes it does not see).
func newTracker(tables []string, applied *spool) *tracker {
	return &tracker{tables: tables, ready: make(chan struct{}), done: make(chan struct{}),
		applied: applied, covered: map[string]int64{}}
}

func (t *tracker) committed(c commitDone) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending = append(t.pending, c)
	t.advance()
}

func (t *tracker) finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.finished = true
	t.advance()
}

func (t *tracker) isDone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.doneSet
}

// advance takes the latency of the commits the stream now covers; called
// with mu held.
func (t *tracker) advance() {
	now := time.Now()
	for len(t.pending) > 0 && t.covers(t.pending[0]) {
		t.lat = append(t.lat, now.Sub(t.pending[0].began))
		t.pending = t.pending[1:]
	}
	// Done at a caught-up marker only: there the applied stream is exact
	// and its watermark is current (rows may run ahead of the marker that
	// carries the watermark their windows closed at).
	if t.finished && len(t.pending) == 0 && t.atMarker && !t.doneSet {
		t.doneSet = true
		close(t.done)
	}
}

func (t *tracker) covers(c commitDone) bool {
	for _, tb := range t.tables {
		if t.covered[tb] < c.snapshots[tb] {
			return false
		}
	}
	return true
}

// progress records a batch's metadata: its rows are changes of the
// snapshots it names, so every earlier one was delivered; a caught-up
// marker delivers the snapshots it names too.
func (t *tracker) progress(p fsql.ChangeProgress) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.CaughtUp && p.Watermark != "" {
		wm, err := time.Parse(time.RFC3339Nano, p.Watermark)
		if err != nil {
			return fmt.Errorf("progress watermark: %w", err)
		}
		t.wm = wm
	}
	done := p.Snapshot
	if !p.CaughtUp {
		done--
	}
	if len(p.Snapshots) == 0 {
		for _, tb := range t.tables {
			t.covered[tb] = max(t.covered[tb], done)
		}
	} else {
		// Keys are "db.table [AS alias]", "#n" appended to a repeated
		// one; a table read twice (a self join) is delivered up to the
		// least of its reads.
		least := map[string]int64{}
		for k, s := range p.Snapshots {
			name, _, _ := strings.Cut(strings.Fields(k)[0], "#")
			name = name[strings.LastIndexByte(name, '.')+1:]
			if !p.CaughtUp {
				s--
			}
			if v, ok := least[name]; !ok || s < v {
				least[name] = s
			}
		}
		for tb, s := range least {
			t.covered[tb] = max(t.covered[tb], s)
		}
	}
	t.atMarker = p.CaughtUp
	if p.CaughtUp {
		t.markers++
	}
	if p.CaughtUp && !t.readySet {
		t.readySet = true
		close(t.ready)
	}
	t.advance()
	return nil
}

// finalWatermark is the watermark of the last caught-up marker (zero: none).
func (t *tracker) finalWatermark() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.wm
}

func (t *tracker) apply(b arrow.RecordBatch) error {
	kinds, ok := b.Column(0).(*array.String)
	if !ok {
		return fmt.Errorf("first column of a change stream is %s, want the row kind", b.Column(0).DataType())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	row := make([]tpcds.Value, b.NumCols()-1)
	for i := 0; i < int(b.NumRows()); i++ {
		for c := 1; c < int(b.NumCols()); c++ {
			v, err := tpcds.FromArrow(b.Column(c), i)
			if err != nil {
				return err
			}
			row[c-1] = v
		}
		n := 1
		switch kind := kinds.Value(i); kind {
		case "+I", "+U":
		case "-U", "-D":
			n = -1
		default:
			return fmt.Errorf("unknown row kind %q", kind)
		}
		if err := t.applied.add(row, n); err != nil {
			return err
		}
		t.changes++
	}
	return nil
}

func (t *tracker) markerCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.markers
}

// awaitCaughtUp waits up to d for a caught-up marker after the first seen.
func (t *tracker) awaitCaughtUp(ctx context.Context, seen int, d time.Duration) bool {
	deadline := time.After(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			return false
		case <-tick.C:
			t.mu.Lock()
			more := t.markers > seen
			t.mu.Unlock()
			if more {
				return true
			}
		}
	}
}

func (t *tracker) position() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	for _, tb := range t.tables {
		want := int64(0)
		if n := len(t.pending); n > 0 {
			want = t.pending[n-1].snapshots[tb]
		}
		parts = append(parts, fmt.Sprintf("%s at snapshot %d of %d", tb, t.covered[tb], want))
	}
	return "stream " + strings.Join(parts, ", ")
}

func (t *tracker) latencies() (p50, p99 float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lat) == 0 {
		return 0, 0
	}
	l := slices.Clone(t.lat)
	slices.Sort(l)
	at := func(p int) float64 { return float64(l[min(len(l)-1, len(l)*p/100)]) / 1e6 }
	return at(50), at(99)
}

// result is the point the applied changelog has reached.
func (t *tracker) result() mark {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applied.mark()
}

// compare compares the applied changelog up to m with want (the changes
// wait while it is read back, if it is).
func (t *tracker) compare(want *answer, m mark) (outcome, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return want.compare(t.applied, m)
}

// selfCheck is want.selfCheck of the applied changelog.
func (t *tracker) selfCheck(want *answer, o outcome, m mark, openRow []tpcds.Value) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return want.selfCheck(o, t.applied, m, openRow)
}

// changeStream is a streaming query's result read over Flight SQL.
type changeStream struct {
	cl     *flightsql.Client
	rdr    *flight.Reader
	cancel context.CancelFunc
}

func openStream(ctx context.Context, uri string, mem memory.Allocator, sql string) (*changeStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	cl, err := flightsql.NewClient(strings.TrimPrefix(uri, "grpc://"), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		return nil, err
	}
	fail := func(err error) (*changeStream, error) {
		cl.Close()
		cancel()
		return nil, err
	}
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		return fail(err)
	}
	if len(info.Endpoint) != 1 {
		return fail(fmt.Errorf("streaming query has %d endpoints, want 1", len(info.Endpoint)))
	}
	s, err := cl.Client.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return fail(err)
	}
	rdr, err := flight.NewRecordReader(s, ipc.WithAllocator(mem))
	if err != nil {
		return fail(err)
	}
	return &changeStream{cl: cl, rdr: rdr, cancel: cancel}, nil
}

// consume applies the stream to t until it ends or fails.
func (s *changeStream) consume(t *tracker) error {
	for s.rdr.Next() {
		b := s.rdr.RecordBatch()
		p, err := fsql.ParseChangeProgress(s.rdr.LatestAppMetadata())
		if err != nil {
			return err
		}
		if b.NumRows() > 0 {
			if err := t.apply(b); err != nil {
				return err
			}
		}
		if err := t.progress(p); err != nil {
			return err
		}
	}
	if err := s.rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// close cancels the stream; consume then returns.
func (s *changeStream) close() {
	s.cancel()
}

// release frees the reader once consume has returned.
func (s *changeStream) release() {
	s.rdr.Release()
	s.cl.Close()
}

func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
