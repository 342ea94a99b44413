package nexmark

import (
	"bufio"
	"cmp"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
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
	LoadAvg [2]float64    `json:"load_average"`
	Layout  []string      `json:"layout"` // how the tables were made, and why
	Load    LoadResult    `json:"load"`
	Queries []QueryResult `json:"queries"`
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
	rep.Load.CPUSeconds = r.cpu() - cpu0
	rep.Load.EventsPerSec = float64(opt.Events) / rep.Load.Seconds
	r.logf("loaded in %.1f s (%.0f events/s, flightd %.1f CPU s)", rep.Load.Seconds, rep.Load.EventsPerSec, rep.Load.CPUSeconds)
	// The batch answers wait on disk for the streamed runs: the runner
	// holds one query's answer at a time (at 1,000,000 events, all of them
	// at once did not fit in memory).
	if r.answers, err = os.MkdirTemp("", "nexmark-answers-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(r.answers)
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
		answer, err := r.loadAnswer(q)
		if err != nil {
			return rep, err
		}
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
	answers  string // the directory of the batch answers (storedAnswer)
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
	s, err := CPUSeconds(r.srv.Pid)
	if err != nil {
		return 0
	}
	return s
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

// batch runs q as a batch query and stores its answer (storeAnswer).
func (r *runner) batch(ctx context.Context, q Query) BatchResult {
	res := BatchResult{Status: StatusRefused}
	if err := r.setup(ctx, q.Setup); err != nil {
		res.Error = "setup: " + oneLine(err)
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, r.opt.Timeout)
	defer cancel()
	cpu0 := r.cpu()
	start := time.Now()
	out, err := r.f.Query(ctx, q.Select)
	res.Seconds = time.Since(start).Seconds()
	res.CPUSeconds = r.cpu() - cpu0
	if err != nil {
		res.Error = oneLine(err)
		if ctx.Err() != nil {
			res.Status = StatusFailed
		}
		return res
	}
	res.Status = StatusOK
	res.Rows = len(out.Rows)
	res.EventsPerSec = float64(r.opt.Events) / res.Seconds
	answer := storedAnswer{Result: out}
	if rank, _, _, _, ok := rankQuery(q.Select); ok {
		// Outside the timing: the rows a correct answer may keep among ties.
		if answer.Tied, err = r.f.Query(ctx, rank); err != nil {
			res.Status, res.Error = StatusFailed, "the query with RANK() for ROW_NUMBER(): "+oneLine(err)
			return res
		}
	}
	if err := r.storeAnswer(q, answer); err != nil {
		res.Status, res.Error = StatusFailed, "storing the answer: "+oneLine(err)
	}
	return res
}

// storedAnswer is a batch answer as stored on disk: the query's result
// and, for a ROW_NUMBER() query, its result with RANK() (the rows a
// correct answer may keep among ties).
type storedAnswer struct {
	Result, Tied *tpcds.Result
}

func (r *runner) answerPath(q Query) string { return filepath.Join(r.answers, q.Name+".gob") }

// storedValue is a tpcds.Value as stored: F as its bits, as gob would
// write -0 as 0 (it leaves zero values out).
type storedValue struct {
	Kind  tpcds.Kind
	Bool  bool
	Num   *big.Rat
	Scale int32
	F     uint64
	S     string
	I     int64
}

func (r *runner) storeAnswer(q Query, a storedAnswer) error {
	f, err := os.Create(r.answerPath(q))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := gob.NewEncoder(w)
	err = storeResult(enc, a.Result)
	if err == nil {
		err = storeResult(enc, a.Tied)
	}
	if err == nil {
		err = w.Flush()
	}
	return errors.Join(err, f.Close())
}

// storeResult writes res (nil: none) as loadResult reads it, row by row:
// a copy of the whole would double it.
func storeResult(enc *gob.Encoder, res *tpcds.Result) error {
	if err := enc.Encode(res != nil); err != nil || res == nil {
		return err
	}
	if err := enc.Encode(res.Columns); err != nil {
		return err
	}
	if err := enc.Encode(len(res.Rows)); err != nil {
		return err
	}
	var row []storedValue
	for _, vals := range res.Rows {
		row = row[:0]
		for _, v := range vals {
			row = append(row, storedValue{v.Kind, v.Bool, v.Num, v.Scale, math.Float64bits(v.F), v.S, v.I})
		}
		if err := enc.Encode(row); err != nil {
			return err
		}
	}
	return nil
}

// loadResult reads a result storeAnswer wrote (nil if none).
func loadResult(dec *gob.Decoder) (*tpcds.Result, error) {
	var present bool
	if err := dec.Decode(&present); err != nil || !present {
		return nil, err
	}
	res := &tpcds.Result{}
	var n int
	if err := dec.Decode(&res.Columns); err != nil {
		return nil, err
	}
	if err := dec.Decode(&n); err != nil {
		return nil, err
	}
	res.Rows = make([][]tpcds.Value, n)
	for i := range res.Rows {
		var row []storedValue // new: gob decodes into the *big.Rat it finds
		if err := dec.Decode(&row); err != nil {
			return nil, err
		}
		vals := make([]tpcds.Value, len(row))
		for j, v := range row {
			vals[j] = tpcds.Value{Kind: v.Kind, Bool: v.Bool, Num: v.Num, Scale: v.Scale, F: math.Float64frombits(v.F), S: v.S, I: v.I}
		}
		res.Rows[i] = vals
	}
	return res, nil
}

// loadAnswer reads q's stored batch answer as the streamed results are
// compared with it.
func (r *runner) loadAnswer(q Query) (*expected, error) {
	f, err := os.Open(r.answerPath(q))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := gob.NewDecoder(bufio.NewReader(f))
	var a storedAnswer
	if a.Result, err = loadResult(dec); err == nil {
		a.Tied, err = loadResult(dec)
	}
	if err != nil || a.Result == nil {
		return nil, fmt.Errorf("%s: the stored batch answer: %v", q.Name, cmp.Or(err, errors.New("no result")))
	}
	answer := &expected{rows: rowSetOf(a.Result)}
	if _, partition, order, rn, ok := rankQuery(q.Select); ok && a.Tied != nil {
		answer.ties = newTies(a.Result.Columns, partition, order, rn, a.Tied)
	}
	return answer, nil
}

// stream runs q as a streaming query over new tables while the events are
// ingested at rate events/s (0: as fast as possible), applies its changes
// and compares the result with the batch answer.
func (r *runner) stream(ctx context.Context, q Query, answer *expected, rate float64) StreamResult {
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
	tr := newTracker(tables)
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
	res.CPUSeconds = r.cpu() - cpu0
	res.PeakRSSMB = peakRSSMB(r.srv.Pid)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	r.measured(&res, elapsed, tr)
	res.Changes = tr.changes
	markers := tr.markerCount()
	if processingTime(q) {
		res.Status, res.Error, res.Rows = StatusUncompared, errProcessingTime, tr.result().rows()
		return res
	}
	want, open, err := r.expectedAt(ctx, q, answer, tr.finalWatermark, &res.Comparison)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	got := tr.result()
	diff, tied := want.diff(got)
	if diff != "" {
		res.Status, res.Error = StatusDiffers, diff
		// The next caught-up marker comes with the stream's heartbeat
		// (5 s by default).
		if tr.awaitCaughtUp(ctx, markers, 15*time.Second) {
			got = tr.result()
			if diff2, tied2 := want.diff(got); diff2 == "" {
				res.Status, res.Error, tied = StatusLate, "at the marker that reported the last commit delivered: "+diff, tied2
			}
		}
	}
	res.TiedRows = tied
	if res.Status == StatusDiffers {
		res.Rows = got.rows()
		return res
	}
	if err := want.selfCheck(got, open); err != nil {
		res.Status, res.Error = StatusFailed, err.Error()
	} else if res.Status != StatusLate {
		res.Status, res.Equal = StatusOK, true
	}
	res.Rows = got.rows()
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
// events); open holds the rows of the windows still open. It fills c.
func (r *runner) expectedAt(ctx context.Context, q Query, full *expected, wm func() time.Time, c *Comparison) (want *expected, open rowSet, err error) {
	if !windowed(q.Select) {
		c.Compared = full.rows.rows()
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
	closed, err := r.f.Query(ctx, sel)
	if err != nil {
		return nil, nil, fmt.Errorf("the batch query over closed windows: %w", err)
	}
	want = &expected{rows: rowSetOf(closed), ties: full.ties}
	open = full.rows.clone()
	for _, cr := range want.rows {
		open.add(cr.row, -cr.n)
	}
	for k, cr := range open {
		if cr.n < 0 {
			if full.ties == nil {
				return nil, nil, fmt.Errorf("the closed windows' answer has a row the full answer lacks: %s", k)
			}
			delete(open, k) // the two batch runs chose other rows among ties
		}
	}
	c.Compared, c.OpenRows = want.rows.rows(), open.rows()
	return want, open, nil
}

// tracker applies a streaming query's changes and follows its progress
// against the commits, for their latency.
type tracker struct {
	tables []string // source tables of the query, sorted
	ready  chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	applied  rowSet           // the applied changelog
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

func newTracker(tables []string) *tracker {
	return &tracker{tables: tables, ready: make(chan struct{}), done: make(chan struct{}),
		applied: rowSet{}, covered: map[string]int64{}}
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
		switch kind := kinds.Value(i); kind {
		case "+I", "+U":
			t.applied.add(row, 1)
		case "-U", "-D":
			t.applied.add(row, -1)
		default:
			return fmt.Errorf("unknown row kind %q", kind)
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

// result is a copy of the applied changelog.
func (t *tracker) result() rowSet {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applied.clone()
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
