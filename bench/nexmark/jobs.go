package nexmark

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/bench/tpcds"
	fsql "github.com/flightd/flightd/flightsql"
)

// JobKeys are the primary keys given to the sinks of the queries whose
// result has a unique key (the nexmark sinks are blackholes without
// keys): a continuous job writes a sink by key, and flightd refuses one
// whose key does not contain a unique key of the query. The other
// queries have no key (their results may repeat rows) and are streamed
// only.
var JobKeys = map[string][]string{
	"q4":  {"id"},                             // GROUP BY category
	"q8":  {"id", "name", "stime"},            // the person windows, joined on the auction windows' key
	"q9":  {"id"},                             // the auction, deduplicated
	"q11": {"bidder", "starttime", "endtime"}, // a bidder's sessions
	"q12": {"bidder", "starttime", "endtime"}, // GROUP BY bidder and window
	"q15": {"day"},
	"q16": {"channel", "day"},
	"q17": {"auction", "day"},
	"q18": {"bidder", "auction"},      // deduplicated by bidder and auction
	"q19": {"auction", "rank_number"}, // the top 10 of each auction
}

// jobPoll is how often the runner reads SHOW JOBS for the job's progress:
// the resolution of its latency, at the cost of a small query each time.
const jobPoll = 20 * time.Millisecond

// job runs q as a continuous job (INSERT INTO a keyed sink) while the
// events are ingested, then compares the sink with the batch answer.
func (r *runner) job(ctx context.Context, q Query, key []string, answer *answer) StreamResult {
	res := StreamResult{Status: StatusFailed}
	if err := r.recreateTables(ctx); err != nil {
		res.Error = "tables: " + oneLine(err)
		return res
	}
	if err := r.setup(ctx, q.Setup); err != nil {
		res.Status, res.Error = StatusRefused, "setup: "+oneLine(err)
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, r.opt.Timeout)
	defer cancel()
	sink := "nexmark_" + q.Name
	ddl, err := r.sinkDDL(ctx, q, sink, key)
	if err != nil {
		res.Error = "sink: " + oneLine(err)
		return res
	}
	_ = r.f.Exec(ctx, "DROP TABLE IF EXISTS "+sink)
	if err := r.f.Exec(ctx, ddl); err != nil {
		res.Error = fmt.Sprintf("%s: %s", ddl, oneLine(err))
		return res
	}
	defer func() { _ = r.f.Exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+sink) }()
	tables, err := hinted(q, func(sel string) error {
		return r.f.Exec(ctx, "INSERT INTO "+sink+" "+sel)
	})
	if err != nil {
		res.Status, res.Error = StatusRefused, oneLine(err)
		return res
	}
	id, err := r.jobOf(ctx, sink)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	defer func() { _ = r.f.Exec(context.WithoutCancel(ctx), "STOP JOB '"+id+"'") }()

	tr := newTracker(tables, nil)
	// The poller has a connection of its own: the ingest uses r.f meanwhile.
	poller, err := tpcds.OpenFlightd(ctx, r.mem, r.srv.URI)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	defer poller.Close()
	polled := make(chan struct{})
	var pollErr error
	pollCtx, stopPoll := context.WithCancel(ctx)
	go func() {
		pollErr = pollJob(pollCtx, poller, id, tr)
		close(polled)
	}()
	defer func() {
		stopPoll()
		<-polled
	}()
	select {
	case <-tr.ready:
	case <-polled:
		res.Error = "before the first event: " + oneLine(pollErr)
		return res
	}
	cpu0 := r.cpu()
	resetPeakRSS(r.srv.Pid)
	start := time.Now()
	err = r.ingest(ctx, pace(start, r.opt.Rate), tr.committed)
	if err == nil {
		tr.finish()
		select {
		case <-tr.done:
		case <-polled:
			err = pollErr
		case <-ctx.Done():
			err = fmt.Errorf("timed out after %v: job %s", r.opt.Timeout, tr.position())
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
	got, err := r.querySpool(ctx, "SELECT * FROM "+sink)
	if err != nil {
		res.Error = "reading the sink: " + oneLine(err)
		return res
	}
	defer got.remove()
	m := got.mark()
	res.Rows = int(m.sum.rows)
	if processingTime(q) {
		res.Status, res.Error = StatusUncompared, errProcessingTime
		return res
	}
	want, openRow, err := r.expectedAt(ctx, q, answer, func() time.Time { return r.sourceWatermark(ctx, tables) }, &res.Comparison)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	if want != answer {
		defer want.rows.remove()
	}
	o, err := want.compare(got, m)
	if err != nil {
		res.Error = oneLine(err)
		return res
	}
	res.TiedRows = o.tied
	switch {
	case o.diff != "":
		res.Status, res.Error = StatusDiffers, o.diff
	default:
		if err := want.selfCheck(o, got, m, openRow); err != nil {
			res.Error = err.Error()
		} else {
			res.Status, res.Equal = StatusOK, true
		}
	}
	return res
}

// sinkDDL is a keyed table for q's result: the column names of q's sink,
// the types of its SELECT's result (so the sink holds the batch answer's
// values unconverted).
func (r *runner) sinkDDL(ctx context.Context, q Query, sink string, key []string) (string, error) {
	names, err := sinkColumns(q.Sink)
	if err != nil {
		return "", err
	}
	schema, err := resultSchema(ctx, r.srv.URI, q.Select)
	if err != nil {
		return "", err
	}
	if len(names) != schema.NumFields() {
		return "", fmt.Errorf("%s has %d columns, the query %d", sink, len(names), schema.NumFields())
	}
	cols := make([]string, len(names))
	for i, f := range schema.Fields() {
		t, err := sqlType(f.Type)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", names[i], err)
		}
		cols[i] = "`" + names[i] + "` " + t
	}
	quoted := make([]string, len(key))
	for i, k := range key {
		quoted[i] = "`" + k + "`"
	}
	return fmt.Sprintf("CREATE TABLE %s (%s, PRIMARY KEY (%s) NOT ENFORCED)", sink, strings.Join(cols, ", "), strings.Join(quoted, ", ")), nil
}

// sinkColumns are the column names of a sink's CREATE TABLE.
func sinkColumns(ddl string) ([]string, error) {
	m := createTable.FindStringSubmatch(ddl)
	if m == nil {
		return nil, fmt.Errorf("no column list in %q", firstLine(ddl))
	}
	var names []string
	depth, from := 0, 0
	list := m[2] + ","
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				if f := strings.Fields(list[from:i]); len(f) > 0 {
					names = append(names, strings.Trim(f[0], "`"))
				}
				from = i + 1
			}
		}
	}
	return names, nil
}

// resultSchema is the schema flightd gives sql's result (from its
// FlightInfo: the query is planned, not run).
func resultSchema(ctx context.Context, uri, sql string) (*arrow.Schema, error) {
	cl, err := flightsql.NewClient(strings.TrimPrefix(uri, "grpc://"), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		return nil, err
	}
	return flight.DeserializeSchema(info.Schema, nil)
}

// sqlType is the SQL type of a result column of type t.
func sqlType(t arrow.DataType) (string, error) {
	switch t := t.(type) {
	case *arrow.Int8Type:
		return "TINYINT", nil
	case *arrow.Int16Type:
		return "SMALLINT", nil
	case *arrow.Int32Type:
		return "INT", nil
	case *arrow.Int64Type:
		return "BIGINT", nil
	case *arrow.Float32Type:
		return "FLOAT", nil
	case *arrow.Float64Type:
		return "DOUBLE", nil
	case *arrow.BooleanType:
		return "BOOLEAN", nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "VARCHAR", nil
	case *arrow.Date32Type:
		return "DATE", nil
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale), nil
	case *arrow.TimestampType:
		p := map[arrow.TimeUnit]int{arrow.Second: 0, arrow.Millisecond: 3, arrow.Microsecond: 6, arrow.Nanosecond: 9}[t.Unit]
		if t.TimeZone != "" {
			return fmt.Sprintf("TIMESTAMP_LTZ(%d)", p), nil
		}
		return fmt.Sprintf("TIMESTAMP(%d)", p), nil
	}
	return "", fmt.Errorf("no SQL type for %s", t)
}

// hinted runs start with sel hinted to stream every source table: first
// with the hint inside window TVFs too, then, where the parser takes none
// there (a syntax error, SQLSTATE 42601), with the TVFs' tables read as
// flightd decides. It returns the tables hinted.
func hinted(q Query, start func(sql string) error) ([]string, error) {
	sel, views := q.Select, q.Views()
	sql, tables := Streaming(sel, true, views)
	if len(tables) == 0 {
		// Unhinted, the query would run once as a batch (an INSERT: no job).
		return nil, errors.New("no table to stream: the query reads no table of the events, nor a view of them")
	}
	err := start(sql)
	if err != nil && strings.Contains(err.Error(), "42601") {
		tvfErr := oneLine(err)
		if sql, tables = Streaming(sel, false, views); len(tables) == 0 {
			return nil, errors.New("every table is read in a window TVF, which takes no scan.mode hint: " + tvfErr)
		}
		err = start(sql)
	}
	return tables, err
}

// jobOf is the id of the running job writing sink.
func (r *runner) jobOf(ctx context.Context, sink string) (string, error) {
	rows, err := listJobs(ctx, r.f)
	if err != nil {
		return "", err
	}
	for _, j := range rows {
		if j.state == "RUNNING" && tableName(j.sink) == sink {
			return j.id, nil
		}
	}
	return "", fmt.Errorf("SHOW JOBS lists no running job into %s", sink)
}

type jobRow struct {
	id, state, sink, err string
	positions            map[string]int64 // "db.table #i" -> snapshot processed
}

// jobPosition is one entry of SHOW JOBS' source_positions: db.table@N.
var jobPosition = regexp.MustCompile(`^(\S+)@(\d+)$`)

func listJobs(ctx context.Context, f *tpcds.Flightd) ([]jobRow, error) {
	out, err := f.Query(ctx, "SHOW JOBS")
	if err != nil {
		return nil, err
	}
	col := func(name string) (int, error) {
		for i, c := range out.Columns {
			if c == name {
				return i, nil
			}
		}
		return 0, fmt.Errorf("SHOW JOBS has no column %s", name)
	}
	var idx [5]int
	for i, name := range []string{"job_id", "state", "sink", "source_positions", "error"} {
		if idx[i], err = col(name); err != nil {
			return nil, err
		}
	}
	var rows []jobRow
	for _, row := range out.Rows {
		j := jobRow{id: row[idx[0]].S, state: row[idx[1]].S, sink: row[idx[2]].S, err: row[idx[4]].S}
		if p := row[idx[3]].S; p != "" {
			j.positions = map[string]int64{}
			for i, part := range strings.Split(p, ", ") {
				if m := jobPosition.FindStringSubmatch(part); m != nil {
					n, _ := strconv.ParseInt(m[2], 10, 64)
					j.positions[fmt.Sprintf("%s #%d", m[1], i)] = n
				} else {
					j.positions = nil // a source not yet positioned ("?")
					break
				}
			}
		}
		rows = append(rows, j)
	}
	return rows, nil
}

// pollJob feeds the job's processed source positions to tr until ctx ends
// or the job fails or goes.
func pollJob(ctx context.Context, f *tpcds.Flightd, id string, tr *tracker) error {
	tick := time.NewTicker(jobPoll)
	defer tick.Stop()
	for {
		rows, err := listJobs(ctx, f)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return err
		}
		i := slices.IndexFunc(rows, func(j jobRow) bool { return j.id == id })
		if i < 0 {
			return fmt.Errorf("job %s is gone", id)
		}
		if j := rows[i]; j.state != "RUNNING" {
			return fmt.Errorf("job %s is %s: %s", id, j.state, j.err)
		} else if j.positions != nil {
			if err := tr.progress(fsql.ChangeProgress{CaughtUp: true, Snapshots: j.positions}); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// sourceWatermark is the watermark the job's sources end with: flightd's
// watermark is the largest event time read minus the WATERMARK delay, the
// least of its inputs' (a job reports none, so it is computed from the
// tables, which hold every event by now).
func (r *runner) sourceWatermark(ctx context.Context, tables []string) time.Time {
	var wm time.Time
	for _, t := range tables {
		out, err := r.f.Query(ctx, "SELECT max(`dateTime`) FROM "+t)
		if err != nil || len(out.Rows) != 1 {
			return time.Time{}
		}
		var end time.Time
		switch v := out.Rows[0][0]; v.Kind {
		case tpcds.KTime:
			end = time.UnixMicro(v.I)
		case tpcds.KDate: // a time at midnight
			end = time.Unix(v.I*86400, 0)
		default:
			return time.Time{}
		}
		end = end.Add(-watermarkDelay)
		if wm.IsZero() || end.Before(wm) {
			wm = end
		}
	}
	return wm
}

// tableName is the table of "db.table".
func tableName(qualified string) string {
	return qualified[strings.LastIndexByte(qualified, '.')+1:]
}
