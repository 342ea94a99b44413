// Package changes measures flightd's change streams over loopback: how
// long a committed row takes to reach streaming clients under a steady
// write load (commit-to-client latency), and how fast a backlog of changes
// is delivered to one and to many consumers.
//
//	writer ──ADBC ingest (Flight SQL)──▶ flightd ──DoGet change stream──▶ N consumers
//
// Rows carry the writer's clock when their batch was handed to the client
// library, so the latency includes the commit (flush, fsync, publication),
// the stream noticing it, reading the new files and sending them.
//
// With Config.Aggregate the consumers run a streaming GROUP BY over the
// table instead (AggregateQuery, through Flight SQL): each changed group's
// max(ts) is the stamp of the commit that changed it last, so the latency
// is that of the aggregation's changes.
package changes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/bench/doget"
	"github.com/flightd/flightd/engine"
	fsql "github.com/flightd/flightd/flightsql"
)

// Config sets the load.
type Config struct {
	Producer      string        // changelog-producer of the table
	Keys          int           // upserts pick keys in [0, Keys)
	RowsPerCommit int           // rows per commit under steady load
	Interval      time.Duration // time between commits under steady load
	Duration      time.Duration // length of each steady-load phase
	Consumers     []int         // consumer counts to measure
	BacklogCommit int           // rows per commit of the backlog
	Backlog       int           // commits in the backlog
	CacheBytes    int64         // flightd's column cache (the server's default is 1 GiB)
	// Aggregate has the consumers stream AggregateQuery instead of the
	// table's changes.
	Aggregate bool
}

// AggregateQuery is the streaming aggregation of Config.Aggregate: its ts
// column is the newest write stamp of each changed group.
const AggregateQuery = `SELECT k % 100 AS g, count(*) AS n, sum(v) AS s, max(ts) AS ts
	FROM events /*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='1000ms') */ GROUP BY k % 100`

// Latency is one steady-load phase. Write is from handing a batch to the
// client library to a consumer receiving it; Commit from the commit's
// acknowledgement to the writer (negative when the stream delivered the
// rows before the acknowledgement arrived).
type Latency struct {
	Consumers int           `json:"consumers"`
	Commits   int           `json:"commits"`
	Rows      int64         `json:"rows_delivered"`
	WriteP50  time.Duration `json:"write_p50_ns"`
	WriteP99  time.Duration `json:"write_p99_ns"`
	CommitP50 time.Duration `json:"commit_p50_ns"`
	CommitP99 time.Duration `json:"commit_p99_ns"`
	AckP50    time.Duration `json:"ack_p50_ns"` // write call to acknowledgement
	CommitMax time.Duration `json:"commit_max_ns"`
	// CPUPerCommit is the process's CPU time (server, writer and
	// consumers: all in this process) per commit of the phase: steadier
	// than latency on a shared machine.
	CPUPerCommit time.Duration `json:"cpu_per_commit_ns"`
}

// Throughput is one backlog read.
type Throughput struct {
	Consumers     int     `json:"consumers"`
	RowsPerReader int64   `json:"rows_per_consumer"`
	Seconds       float64 `json:"seconds"`
	RowsPerSec    float64 `json:"rows_per_sec_total"`
}

// Result is a whole run.
type Result struct {
	Config     Config       `json:"config"`
	Latency    []Latency    `json:"latency"`
	IngestRPS  float64      `json:"backlog_ingest_rows_per_sec"`
	Throughput []Throughput `json:"throughput"`
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// Run serves flightd over dir in this process and measures.
func Run(ctx context.Context, dir string, cfg Config) (Result, error) {
	res := Result{Config: cfg}
	mem := memory.NewGoAllocator()
	_, addr, stop, err := doget.StartFlightd(ctx, engine.Config{Mem: mem, Root: dir, CacheBytes: cfg.CacheBytes})
	if err != nil {
		return res, err
	}
	defer stop()
	w, err := newWriter(ctx, addr, mem)
	if err != nil {
		return res, err
	}
	defer w.close()
	if err := w.exec(ctx, fmt.Sprintf(`CREATE TABLE events (k BIGINT, v BIGINT, ts BIGINT, PRIMARY KEY (k) NOT ENFORCED)
		WITH ('bucket' = '2', 'changelog-producer' = '%s')`, cfg.Producer)); err != nil {
		return res, err
	}
	seq := int64(0)
	for _, n := range cfg.Consumers {
		l, err := latency(ctx, addr, w, cfg, n, &seq)
		if err != nil {
			return res, fmt.Errorf("latency with %d consumers: %w", n, err)
		}
		res.Latency = append(res.Latency, l)
	}
	if cfg.Backlog == 0 {
		return res, nil
	}
	// The backlog: snapshots first..last, written as fast as possible.
	before, err := latest(ctx, addr)
	if err != nil {
		return res, err
	}
	start := time.Now()
	for range cfg.Backlog {
		if _, err := w.commit(ctx, cfg.BacklogCommit, cfg.Keys, &seq); err != nil {
			return res, err
		}
	}
	res.IngestRPS = float64(cfg.Backlog*cfg.BacklogCommit) / time.Since(start).Seconds()
	last, err := latest(ctx, addr)
	if err != nil {
		return res, err
	}
	first := before + 1
	for _, n := range cfg.Consumers {
		t, err := backlog(ctx, addr, n, first, last)
		if err != nil {
			return res, fmt.Errorf("backlog with %d consumers: %w", n, err)
		}
		res.Throughput = append(res.Throughput, t)
	}
	return res, nil
}

// latency runs n consumers from the latest snapshot while the writer
// commits at a steady pace, and takes each delivered batch's age.
func latency(ctx context.Context, addr string, w *writer, cfg Config, n int, seq *int64) (Latency, error) {
	res := Latency{Consumers: n}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var ages []time.Duration // receive - write call, in receive order
	var stamps []int64       // the rows' write-call stamps, same order
	var recv []int64         // receive times, same order
	errs := make(chan error, n)
	ready := make(chan struct{}, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started := false
			open := changesStream(fsql.ChangesTicket{Table: "events", Mode: "latest", HeartbeatMillis: 1000})
			if cfg.Aggregate {
				open = queryStream(AggregateQuery)
			}
			err := consume(ctx, addr, open, func(b arrow.RecordBatch, _ int64, caughtUp bool) {
				if caughtUp {
					if !started {
						started = true
						ready <- struct{}{}
					}
					return
				}
				if !started {
					return // the aggregation's first answer, from before the phase
				}
				now := time.Now().UnixNano()
				kinds := b.Column(0).(*array.String)
				ts := b.Column(b.Schema().FieldIndices("ts")[0]).(*array.Int64)
				mu.Lock()
				for i := 0; i < ts.Len(); i++ {
					if k := kinds.Value(i); k == "-U" || k == "-D" {
						continue // a before-image carries an older write's stamp
					}
					ages = append(ages, time.Duration(now-ts.Value(i)))
					stamps = append(stamps, ts.Value(i))
					recv = append(recv, now)
				}
				res.Rows += b.NumRows()
				mu.Unlock()
			})
			if ctx.Err() == nil {
				errs <- err
			}
		}()
	}
	for range n {
		select {
		case <-ready:
		case err := <-errs:
			return res, err
		}
	}
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	end := time.Now().Add(cfg.Duration)
	acked := map[int64]int64{} // write-call stamp -> acknowledgement time
	var acks []time.Duration
	cpu0 := doget.CPUTime()
	for time.Now().Before(end) {
		stamp, err := w.commit(ctx, cfg.RowsPerCommit, cfg.Keys, seq)
		if err != nil {
			return res, err
		}
		now := time.Now().UnixNano()
		mu.Lock()
		acked[stamp] = now
		mu.Unlock()
		acks = append(acks, time.Duration(now-stamp))
		res.Commits++
		<-tick.C
	}
	time.Sleep(500 * time.Millisecond) // let the last commits arrive
	res.CPUPerCommit = (doget.CPUTime() - cpu0) / time.Duration(res.Commits)
	cancel()
	wg.Wait()
	select {
	case err := <-errs:
		return res, err
	default:
	}
	if len(ages) == 0 {
		return res, fmt.Errorf("no rows delivered")
	}
	commits := make([]time.Duration, len(stamps))
	for i, st := range stamps {
		commits[i] = time.Duration(recv[i] - acked[st])
	}
	res.WriteP50, res.WriteP99 = percentiles(ages)
	res.CommitP50, res.CommitP99 = percentiles(commits)
	res.CommitMax = commits[len(commits)-1]
	res.AckP50, _ = percentiles(acks)
	return res, nil
}

// percentiles sorts d and returns its median and 99th percentile.
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100]
}

// backlog has n consumers read snapshots first..last at once.
func backlog(ctx context.Context, addr string, n int, first, last int64) (Throughput, error) {
	res := Throughput{Consumers: n}
	var wg sync.WaitGroup
	rows := make([]int64, n)
	errs := make([]error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := fsql.ChangesTicket{Table: "events", Mode: "from-snapshot", SnapshotID: first, EndSnapshotID: last}
			errs[i] = consume(ctx, addr, changesStream(tk), func(b arrow.RecordBatch, _ int64, _ bool) { rows[i] += b.NumRows() })
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	for i := range n {
		if errs[i] != nil {
			return res, errs[i]
		}
		if i > 0 && rows[i] != rows[0] {
			return res, fmt.Errorf("consumers read %d and %d rows of the same snapshots", rows[0], rows[i])
		}
	}
	res.RowsPerReader = rows[0]
	res.RowsPerSec = float64(rows[0]*int64(n)) / res.Seconds
	return res, nil
}

// opener starts a stream of changes on a client.
type opener func(ctx context.Context, cl *flightsql.Client) (flight.FlightService_DoGetClient, error)

// changesStream opens the change stream of a ticket.
func changesStream(tk fsql.ChangesTicket) opener {
	return func(ctx context.Context, cl *flightsql.Client) (flight.FlightService_DoGetClient, error) {
		body, _ := json.Marshal(tk)
		return cl.Client.DoGet(ctx, &flight.Ticket{Ticket: append([]byte(fsql.ChangesTicketPrefix), body...)})
	}
}

// queryStream opens a streaming query's result, as a Flight SQL client does.
func queryStream(query string) opener {
	return func(ctx context.Context, cl *flightsql.Client) (flight.FlightService_DoGetClient, error) {
		info, err := cl.Execute(ctx, query)
		if err != nil {
			return nil, err
		}
		return cl.Client.DoGet(ctx, info.Endpoint[0].Ticket)
	}
}

// consume reads a change stream until it ends or ctx is cancelled.
func consume(ctx context.Context, addr string, open opener, fn func(b arrow.RecordBatch, snapshot int64, caughtUp bool)) error {
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cl.Close()
	s, err := open(ctx, cl)
	if err != nil {
		return err
	}
	rdr, err := flight.NewRecordReader(s, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
		meta, err := fsql.ParseChangeProgress(rdr.LatestAppMetadata())
		if err != nil {
			return err
		}
		fn(rdr.RecordBatch(), meta.Snapshot, meta.CaughtUp)
	}
	if ctx.Err() != nil {
		return nil
	}
	return rdr.Err()
}

// writer commits batches of upserts through ADBC bulk ingest.
type writer struct {
	mem  memory.Allocator
	db   adbc.Database
	cnxn adbc.Connection
}

func newWriter(ctx context.Context, addr string, mem memory.Allocator) (*writer, error) {
	db, err := adbcflightsql.NewDriver(mem).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + addr})
	if err != nil {
		return nil, err
	}
	cnxn, err := db.Open(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &writer{mem: mem, db: db, cnxn: cnxn}, nil
}

func (w *writer) close() {
	w.cnxn.Close()
	w.db.Close()
}

func (w *writer) exec(ctx context.Context, q string) error {
	stmt, err := w.cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}

// commit appends rows upserts (keys spread by a multiplicative hash of a
// running sequence) in one commit; the rows' ts is the returned stamp.
func (w *writer) commit(ctx context.Context, rows, keys int, seq *int64) (int64, error) {
	b := array.NewRecordBuilder(w.mem, schema)
	defer b.Release()
	now := time.Now().UnixNano()
	for range rows {
		*seq++
		b.Field(0).(*array.Int64Builder).Append(int64(uint64(*seq)*0x9E3779B97F4A7C15>>1) % int64(keys))
		b.Field(1).(*array.Int64Builder).Append(*seq)
		b.Field(2).(*array.Int64Builder).Append(now)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	stmt, err := w.cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, "events"); err != nil {
		return 0, err
	}
	if err := stmt.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeAppend); err != nil {
		return 0, err
	}
	if err := stmt.BindStream(ctx, rdr); err != nil {
		return 0, err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return now, err
}

// latest is the table's latest snapshot: the first progress marker of a
// change stream from the latest snapshot says it.
func latest(ctx context.Context, addr string) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := int64(-1)
	err := consume(ctx, addr, changesStream(fsql.ChangesTicket{Table: "events", Mode: "latest"}), func(_ arrow.RecordBatch, snapshot int64, caughtUp bool) {
		if caughtUp && got < 0 {
			got = snapshot
			cancel()
		}
	})
	if got < 0 {
		return 0, fmt.Errorf("no progress marker: %v", err)
	}
	return got, nil
}
