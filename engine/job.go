package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/stream"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// Continuous jobs: `INSERT INTO t SELECT ... FROM s /*+ OPTIONS('scan.mode'=
// ...) */` runs inside the engine until stopped, applying the query's
// changelog to t by key.
//
// Exactly once: at a marker of the stream (the end of a source snapshot,
// with the snapshot of every source) that follows changes (with
// checkpoints: a barrier's marker), the job commits its buffered sink rows
// in one snapshot of t whose properties hold those source positions. Each
// such snapshot of t is the query's answer on the source snapshots it
// names.
//
// Checkpoints: every JobCheckpointInterval (a materialized table's job at
// its commit interval instead) the job asks its operators for a
// checkpoint (stream/checkpoint.go): the sources flag their next markers
// with a barrier, every operator saves its state as the barrier passes,
// and at the barrier's marker the job commits its buffered rows with those
// positions (it commits only then) and writes the state, named by the
// sink snapshot it committed, to the warehouse (tablestore's
// PutJobCheckpoint): the whole state (a base) or the changes since the
// previous checkpoint (a delta, whose restore reads the files of its chain
// from its base); the files before the base of the last one are deleted.
// A run's first checkpoint is a base, so a stale node's cleanup (before
// its own base) never reaches the chain of the node that took the job
// over. A restart whose last sink snapshot has its checkpoint, whole
// (its chain too) and of the same plan, with every
// source's next snapshot still there, restores the operators from it and
// resumes every source after its position: it reads only what was
// committed since: the restored state is the answer t holds, so there is
// nothing to reconcile. Otherwise (no checkpoint: checkpoints off, an
// operator that cannot save its state, a crash between the commit and the
// write; a corrupt or unreadable file; an expired source snapshot) it
// rebuilds:
//
// Rebuild: the job reads the positions of the last snapshot of t it
// committed and starts every source with that snapshot in full
// (from-snapshot-full), so its operators' state is rebuilt from the inputs
// (state is a function of the inputs up to a position). The output of the
// new run, from empty, is the answer at its first marker Q at or past the
// checkpoint (sources of a join are read concurrently, so the new run need
// not pass through the checkpoint exactly). The job writes that output to
// t and also deletes every key t holds that the answer lacks, in one
// commit: t then holds exactly the answer at Q, whatever the interleaving.
// A first start does the same against an empty t (a job refuses a target
// with rows). A checkpointed snapshot that expired meanwhile is replaced by
// the source's latest one, which the reconciliation keeps exact.

// Job states as SHOW JOBS lists them.
const (
	JobRunning = "RUNNING"
	JobStopped = "STOPPED"
	JobFailed  = "FAILED"
)

// ErrJobNotFound marks an unknown job id.
var ErrJobNotFound = errors.New("job not found")

// JobStatus is what SHOW JOBS reports of a job.
type JobStatus struct {
	ID, SQL, Database, State, Error string
	// Sink is the target table.
	Sink string
	// Sources are the streamed tables; Positions the snapshot of each the
	// job has processed, Committed the positions of SinkSnapshot, the
	// sink's last snapshot the job committed (0: none yet).
	Sources              []string
	Positions, Committed []int64
	SinkSnapshot         int64
	// Lag is how many source snapshots are committed and not processed.
	Lag int64
	// Start is how the job's run started: StartCheckpoint (its state
	// restored from a checkpoint taken at source positions From),
	// StartSources (its sources read in full), or "" while it starts.
	// SourceRows counts the rows its sources read since.
	Start      string
	From       []int64
	SourceRows int64
	// Checkpoints sums the checkpoints of the run (bases and deltas).
	Checkpoints stream.CheckpointStats
	// Node is the node running a RUNNING job (Config.NodeID, or the random
	// id of a node started without one): the holder of its lease, "" while
	// no node holds it. Any other node reports the positions of the job's
	// last sink commit (Positions = Committed) and knows nothing of the run
	// (Start, From, SourceRows, Checkpoints).
	Node string
}

// How a job's run starts (JobStatus.Start).
const (
	StartCheckpoint = "checkpoint"
	StartSources    = "sources"
)

// checkpointPause: a job waits at least this many times its last
// checkpoint's cost before it asks for the next one, so checkpoints take
// at most about a fifth of its time however large its state grows (a base
// saves it whole) and however slow a loaded machine makes them: a
// checkpoint of 100 MB of state every second would cost more than the
// changes it covers. The price is latency: the job commits at checkpoints
// only.
const checkpointPause = 4

// DefaultMaxJobs is Config.MaxJobs's default: 300 idle jobs took about
// 120 MB, so clients can make a server hold about 400 MB of jobs, not
// gigabytes.
const DefaultMaxJobs = 1000

// DefaultJobCheckpointInterval is how often a continuous job checkpoints
// by default: its sink then lags its sources by about as much.
const DefaultJobCheckpointInterval = time.Second

type job struct {
	e *Engine
	// def is the job as stored when this node launched it and never
	// changes, so it is read without mu; the job's state since is status's.
	def tablestore.JobDef
	// mtable is the materialized table the job keeps (not stored as a
	// job: the table's definition says whether it runs); nil for an
	// INSERT's job.
	mtable *tablestore.Ident
	// freshness is the materialized table's when the job started, which
	// set its commit interval.
	freshness int64
	cancel    context.CancelFunc
	done      chan struct{}

	mu      sync.Mutex
	status  JobStatus
	sources []*tablestore.Table
	cp      *stream.Checkpoints // this run's
}

// jobProperty is the snapshot property of the sink commits of job id.
func jobProperty(id string) string { return "flightd.job." + id }

// checkpoint is the value of jobProperty.
type checkpoint struct {
	Sources   []string `json:"sources"`
	Positions []int64  `json:"positions"`
	// State: the job's checkpoint of this sink snapshot holds its
	// operators' state at Positions.
	State bool `json:"state,omitempty"`
	// Times are the commit times (ms) of the sources' snapshots at
	// Positions (0 for position 0). A table has no identity beyond its
	// name: a source dropped and created again, or rolled back, has its
	// snapshot at the position missing or of another time.
	Times []int64 `json:"times,omitempty"`
}

// startJobs starts the stored jobs that were running.
func (e *Engine) startJobs(ctx context.Context) error {
	defs, err := e.store.Jobs(ctx)
	if err != nil {
		return err
	}
	e.jobsMu.Lock()
	defer e.jobsMu.Unlock()
	for _, def := range defs {
		if def.State == JobRunning {
			e.launchLocked(def, "", nil)
		} else {
			e.jobs[def.ID] = &job{e: e, def: def, status: JobStatus{ID: def.ID, SQL: def.SQL, Database: def.Database, State: def.State, Error: def.Error}}
		}
	}
	return nil
}

// StartJob stores a continuous job and starts it; def.SQL must be an
// INSERT from a stream (checked by binding it in def.Database, without an
// Authorizer: the caller decides who may). It returns the job's id.
func (e *Engine) StartJob(ctx context.Context, def tablestore.JobDef) (string, error) {
	s := e.NewSession()
	s.database = def.Database
	st, err := s.Prepare(ctx, def.SQL, nil)
	if err != nil {
		return "", err
	}
	if ins, ok := st.bound.(*plan.Insert); !ok || !ins.Source.Streaming() {
		return "", fmt.Errorf("%w: a continuous job is an INSERT from a stream (a scan.mode hint), not %q", ErrInvalid, def.SQL)
	}
	return st.startJob(ctx)
}

// startJob starts the job of a bound INSERT from a stream.
func (st *Statement) startJob(ctx context.Context) (string, error) {
	ins := st.bound.(*plan.Insert)
	sink := ins.Table
	switch {
	case st.tx != nil:
		return "", fmt.Errorf("a continuous job (INSERT from a stream) inside a transaction: %w", ErrNotSupported)
	case st.readsTarget:
		return "", fmt.Errorf("%w: a continuous job cannot read its own target %s", ErrInvalid, sink.Ident())
	}
	e := st.s.e
	// The stored definitions name the targets of jobs other nodes started,
	// also those this node has not picked up yet.
	defs, err := e.store.Jobs(ctx)
	if err != nil {
		return "", err
	}
	if via := e.feedsFrom(ctx, defs, ins.Source.StreamSources(), sink.Ident(), map[tablestore.Ident]bool{}); via != nil {
		return "", fmt.Errorf("%w: a continuous job into %s would read its own target through %s: each commit of one would feed the other forever", ErrInvalid, sink.Ident(), plan.IdentChain(via))
	}
	e.jobsMu.Lock()
	defer e.jobsMu.Unlock()
	for _, def := range defs {
		if id, ok := storedSink(def); ok && def.State == JobRunning && id == sink.Ident() {
			return "", fmt.Errorf("%w: table %s is already the target of job %s", ErrInvalid, sink.Ident(), def.ID)
		}
	}
	for id, j := range e.jobs {
		if j.running() && j.sinkName() == sink.Ident().String() {
			return "", fmt.Errorf("%w: table %s is already the target of job %s", ErrInvalid, sink.Ident(), id)
		}
	}
	// Checked under jobsMu, which launchLocked holds too: concurrent
	// starts on this node never pass the limit together.
	if err := e.jobSlotLocked(defs, "a continuous job into "+sink.Ident().String()); err != nil {
		return "", err
	}
	if n, err := liveRows(ctx, sink); err != nil {
		return "", err
	} else if n > 0 {
		return "", fmt.Errorf("%w: the target of a continuous job holds the query's answer and nothing else: table %s has rows", ErrInvalid, sink.Ident())
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	def := tablestore.JobDef{ID: hex.EncodeToString(b[:]), SQL: sql.Format(st.ast), Database: st.s.Database(),
		SinkDatabase: sink.Ident().Database, SinkTable: sink.Ident().Table, State: JobRunning}
	if err := e.store.PutJob(ctx, def); err != nil {
		return "", err
	}
	e.launchLocked(def, sink.Ident().String(), nil)
	return def.ID, nil
}

// jobSlotLocked fails with ErrLimit when what, a job about to start, would
// pass the limit on running jobs. jobsMu is held.
func (e *Engine) jobSlotLocked(defs []tablestore.JobDef, what string) error {
	limit := e.maxJobs()
	if limit <= 0 {
		return nil
	}
	if n := e.runningJobsLocked(defs); n >= limit {
		return fmt.Errorf("%w: %s would pass the limit on running continuous jobs, flightd -max-jobs %d (running: %d); stop one with STOP JOB (or SUSPEND a materialized table) first", ErrLimit, what, limit, n)
	}
	return nil
}

// jobSlot is jobSlotLocked for a job started after a definition commits
// (a CONTINUOUS materialized table's): starts that run at once may pass
// the limit together, by as many as run at once.
func (e *Engine) jobSlot(ctx context.Context, what string) error {
	if e.maxJobs() <= 0 {
		return nil
	}
	defs, err := e.store.Jobs(ctx)
	if err != nil {
		return err
	}
	e.jobsMu.Lock()
	defer e.jobsMu.Unlock()
	return e.jobSlotLocked(defs, what)
}

func (e *Engine) maxJobs() int {
	if e.cfg.MaxJobs == 0 {
		return DefaultMaxJobs
	}
	return e.cfg.MaxJobs
}

// runningJobsLocked counts the running jobs: this node's (INSERTs' and
// materialized tables'), and those of defs, stored, that it has not
// picked up yet. jobsMu is held.
func (e *Engine) runningJobsLocked(defs []tablestore.JobDef) int {
	n := 0
	for _, j := range e.jobs {
		if j.running() {
			n++
		}
	}
	for _, def := range defs {
		if _, known := e.jobs[def.ID]; !known && def.State == JobRunning {
			n++
		}
	}
	return n
}

// feedsFrom returns the chain of tables through which commits to target
// reach one of tables (nil: none): a table is fed by the streams of the
// running job writing it (defs) and by the tables its materialized query
// reads. seen holds the tables already followed. A job or query that no
// longer binds feeds nothing here: it fails on its own.
func (e *Engine) feedsFrom(ctx context.Context, defs []tablestore.JobDef, tables []*tablestore.Table, target tablestore.Ident, seen map[tablestore.Ident]bool) []tablestore.Ident {
	for _, t := range tables {
		id := t.Ident()
		if id == target {
			return []tablestore.Ident{id}
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		var feeders []*tablestore.Table
		for _, def := range defs {
			if sink, ok := storedSink(def); ok && def.State == JobRunning && sink == id {
				feeders = append(feeders, e.boundTables(ctx, def.Database, def.SQL)...)
			}
		}
		if md := t.Materialized(); md != nil {
			feeders = append(feeders, e.boundTables(ctx, id.Database, md.Query)...)
		}
		if via := e.feedsFrom(ctx, defs, feeders, target, seen); via != nil {
			return append([]tablestore.Ident{id}, via...)
		}
	}
	return nil
}

var _ plan.JobFeedCatalog = (*catalog)(nil)

// JobFeed: the materialized tables' cycle check follows the edges of the
// running jobs, as feedsFrom follows theirs when a job starts.
func (c *catalog) JobFeed(ctx context.Context, id tablestore.Ident) (string, []*tablestore.Table, error) {
	c.opaque = true
	if c.jobDefs == nil {
		defs, err := c.s.e.store.Jobs(ctx)
		if err != nil {
			return "", nil, err
		}
		c.jobDefs = defs
	}
	for _, def := range c.jobDefs {
		if sink, ok := storedSink(def); ok && def.State == JobRunning && sink == id {
			return def.ID, c.s.e.boundTables(ctx, def.Database, def.SQL), nil
		}
	}
	return "", nil, nil
}

// boundTables binds text in database db and returns the tables it
// streams (an INSERT from a stream) or reads (a query); none when it does
// not bind.
func (e *Engine) boundTables(ctx context.Context, db, text string) []*tablestore.Table {
	s := e.NewSession()
	s.database = db
	st, err := s.Prepare(ctx, text, nil)
	if err != nil {
		return nil
	}
	switch b := st.bound.(type) {
	case *plan.Insert:
		return b.Source.StreamSources()
	case *plan.Query:
		return plan.ScannedTables(b.Logical())
	}
	return nil
}

// storedSink is the target a stored job definition names; false for one
// stored before targets were kept.
func storedSink(def tablestore.JobDef) (tablestore.Ident, bool) {
	return tablestore.Ident{Database: def.SinkDatabase, Table: def.SinkTable}, def.SinkTable != ""
}

func (j *job) running() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.status.State == JobRunning
}

func (j *job) sinkName() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.status.Sink
}

// writesTo says whether the job's sink is a table of database db: the
// sink its run bound, or for a job this node has not run (another node
// does) the database its definition records.
func (j *job) writesTo(db string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.HasPrefix(j.status.Sink, db+".") || j.def.SinkDatabase == db
}

// liveRows counts up to one row of t's latest snapshot.
func liveRows(ctx context.Context, t *tablestore.Table) (int64, error) {
	var n int64
	err := scanTable(ctx, t, nil, func(b arrow.RecordBatch) error {
		n += b.NumRows()
		if n > 0 {
			return io.EOF
		}
		return nil
	})
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// scanTable passes the batches of t's latest snapshot to fn.
func scanTable(ctx context.Context, t *tablestore.Table, cols []string, fn func(arrow.RecordBatch) error) error {
	s, err := t.NewScan(ctx, tablestore.ScanSpec{Columns: cols})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Each(ctx, fn)
}

// launchLocked starts a job's goroutine; sink is its target when known
// (run sets it otherwise), mtable the materialized table it keeps. jobsMu
// is held.
func (e *Engine) launchLocked(def tablestore.JobDef, sink string, mtable *tablestore.Ident) {
	ctx, cancel := context.WithCancel(e.jobCtx)
	j := &job{e: e, def: def, mtable: mtable, cancel: cancel, done: make(chan struct{}),
		status: JobStatus{ID: def.ID, SQL: def.SQL, Database: def.Database, State: JobRunning, Sink: sink}}
	e.jobs[def.ID] = j
	go func() {
		defer close(j.done)
		for {
			err := j.runLeased(ctx)
			switch {
			case ctx.Err() != nil:
				// Stopped, or the engine closes: the job stays as stored.
				return
			case errors.Is(err, io.EOF):
				j.end(JobStopped, "") // bounded sources (scan.bounded.snapshot-id) ended
				return
			}
			j.end(JobFailed, err.Error())
			if j.mtable == nil || !j.retryAfter(ctx) {
				return
			}
		}
	}()
}

// retryAfter waits before a materialized table's failed job runs again
// (retryDelay, after the failures recorded in a row); false when ctx ends
// first.
func (j *job) retryAfter(ctx context.Context) bool {
	fresh := retryMax
	if t, err := j.e.store.Table(ctx, *j.mtable); err == nil && t.Materialized() != nil {
		fresh = time.Duration(t.Materialized().FreshnessMillis) * time.Millisecond
	}
	failures := 1
	if st, err := j.e.store.MaterializedState(ctx, *j.mtable); err == nil {
		failures = st.Failures
	}
	timer := time.NewTimer(retryDelay(failures, fresh))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
	}
	j.mu.Lock()
	j.status.State, j.status.Error = JobRunning, ""
	j.mu.Unlock()
	return true
}

// end records that the job's goroutine ended by itself.
func (j *job) end(state, why string) {
	if j.mtable == nil {
		if def, err := j.e.store.Job(context.Background(), j.def.ID); err == nil && def.State != JobRunning {
			// Another node stopped the job, which made this run fail (its
			// checkpoint went) before this node saw the stop: it stays
			// stopped.
			j.mu.Lock()
			j.status.State, j.status.Error = def.State, def.Error
			j.mu.Unlock()
			return
		}
	}
	j.mu.Lock()
	j.status.State, j.status.Error = state, why
	sources := j.sources
	j.mu.Unlock()
	if j.mtable != nil {
		if state == JobFailed {
			j.e.recordRefresh(context.Background(), *j.mtable, errors.New(why))
		}
		return
	}
	def := j.def
	def.State, def.Error = state, why
	// Best effort: a job that cannot record its end restarts with the
	// server and ends again.
	if j.e.store.PutJob(context.Background(), def) == nil {
		j.releaseSources(context.Background(), sources)
	}
}

// StopJob stops a running job and records it as stopped; its target keeps
// the rows of its last commit.
func (e *Engine) StopJob(ctx context.Context, id string) error {
	e.jobsMu.Lock()
	j, ok := e.jobs[id]
	e.jobsMu.Unlock()
	if !ok {
		return fmt.Errorf("job %q: %w", id, ErrJobNotFound)
	}
	if j.mtable != nil {
		return fmt.Errorf("%w: job %s keeps materialized table %s: use ALTER MATERIALIZED TABLE %s SUSPEND", ErrInvalid, id, j.mtable, j.mtable)
	}
	if j.cancel != nil {
		j.cancel()
		<-j.done
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.status.State != JobRunning {
		return nil
	}
	def := j.def
	def.State, def.Error = JobStopped, ""
	if err := e.store.PutJob(ctx, def); err != nil {
		return err
	}
	// A stopped job does not run again: its state is of no use.
	if err := e.store.DeleteJobCheckpoints(ctx, id, 0); err != nil {
		return err
	}
	j.releaseSources(ctx, j.sources)
	j.status.State = JobStopped
	return nil
}

// jobDatabase is the database whose grants cover job id: its sink's.
func (e *Engine) jobDatabase(id string) (string, bool) {
	e.jobsMu.Lock()
	defer e.jobsMu.Unlock()
	j, ok := e.jobs[id]
	if !ok {
		return "", false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.def.SinkDatabase != "" {
		return j.def.SinkDatabase, true
	}
	return j.def.Database, true
}

// Jobs reports every job, sorted by id.
func (e *Engine) Jobs(ctx context.Context) []JobStatus {
	e.jobsMu.Lock()
	jobs := make([]*job, 0, len(e.jobs))
	for _, j := range e.jobs {
		jobs = append(jobs, j)
	}
	e.jobsMu.Unlock()
	out := make([]JobStatus, 0, len(jobs))
	for _, j := range jobs {
		j.mu.Lock()
		s := j.status
		s.Positions, s.Committed, s.Sources, s.From = slices.Clone(s.Positions), slices.Clone(s.Committed), slices.Clone(s.Sources), slices.Clone(s.From)
		sources := j.sources
		if j.cp != nil {
			s.SourceRows, s.Checkpoints = j.cp.SourceRows(), j.cp.Stats()
		}
		j.mu.Unlock()
		if s.State == JobRunning {
			s.Node, _ = e.store.LeaseHolder(ctx, s.ID) // unknown ("") if the store fails
			if s.Node != e.node {
				// What this node knows of the job is stale or nothing.
				sources = j.committedStatus(ctx, &s)
			}
		}
		for i, t := range sources {
			if latest, err := t.LatestSnapshotID(ctx); err == nil && i < len(s.Positions) {
				s.Lag += max(latest-s.Positions[i], 0)
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b JobStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}

var _ plan.JobCatalog = (*catalog)(nil)

// JobRows is SHOW JOBS: every job, as plan.JobColumns.
func (c *catalog) JobRows(ctx context.Context) ([][]string, error) {
	c.opaque = true
	var rows [][]string
	for _, j := range c.s.e.Jobs(ctx) {
		if db, ok := c.s.e.jobDatabase(j.ID); !ok || c.s.allow(db, Read) != nil {
			continue // jobs writing to databases the user cannot read stay hidden
		}
		snap := ""
		if j.SinkSnapshot > 0 {
			snap = strconv.FormatInt(j.SinkSnapshot, 10)
		}
		from := "" // a run from the sources starts from none
		if j.From != nil {
			from = sourcePositions(j.Sources, j.From)
		}
		rows = append(rows, []string{j.ID, j.State, j.Sink, snap, sourcePositions(j.Sources, j.Positions), strconv.FormatInt(j.Lag, 10), j.Node, j.Error, j.SQL,
			j.Start, from, strconv.FormatInt(j.SourceRows, 10)})
	}
	return rows, nil
}

// sourcePositions renders positions of sources as db.table@snapshot, "?"
// for one not known.
func sourcePositions(sources []string, positions []int64) string {
	var pos []string
	for i, src := range sources {
		p := "?"
		if i < len(positions) {
			p = strconv.FormatInt(positions[i], 10)
		}
		pos = append(pos, src+"@"+p)
	}
	return strings.Join(pos, ", ")
}

// stopJobs ends every running job's goroutine (their stored state stays
// RUNNING, so they restart with the engine).
func (e *Engine) stopJobs() {
	e.jobCancel()
	<-e.followDone
	e.jobsMu.Lock()
	jobs := make([]*job, 0, len(e.jobs))
	for _, j := range e.jobs {
		jobs = append(jobs, j)
	}
	e.jobsMu.Unlock()
	for _, j := range jobs {
		if j.done != nil {
			<-j.done
		}
	}
}

// run runs the job until ctx ends or it fails.
func (j *job) run(ctx context.Context) error {
	e := j.e
	sink, q, err := j.bind(ctx)
	if err != nil {
		return err
	}
	sources := q.StreamSources()
	names := tableNames(sources)
	j.mu.Lock()
	j.sources, j.status.Sources, j.status.Sink = sources, names, sink.Ident().String()
	j.mu.Unlock()
	r, err := j.resumeFrom(ctx, sink, sources)
	if err != nil {
		return err
	}
	from := r.from
	if from == nil && j.mtable != nil {
		// A materialized table's job starts from every source's latest
		// snapshot in full (as StreamAll reads them) and reconciles the
		// table only once all of them are read: a join's first marker may
		// come before one side was read at all, and the table (its last
		// refresh) must not go back to an answer without it. (An INSERT's
		// job starts on an empty sink, which has nothing to lose.)
		from = make([]int64, len(sources))
		for i, t := range sources {
			if from[i], err = t.LatestSnapshotID(ctx); err != nil {
				return err
			}
		}
		r.from = from
	}
	a := &applier{j: j, ctx: ctx, sink: sink, schema: q.Schema(), names: names, started: time.Now(),
		w: sink.NewWrite(tablestore.WriteOptions{CommitEmpty: true}), answer: map[string]bool{}, from: from}
	if md := sink.Materialized(); j.mtable != nil && md != nil {
		a.every = commitInterval(md)
	}
	interval := e.cfg.JobCheckpointInterval
	if interval == 0 {
		interval = DefaultJobCheckpointInterval
	}
	if interval > 0 && a.every > 0 {
		interval = a.every // a materialized table's freshness sets it
	}
	// The run's operators reserve their state in the pool until it ends.
	ec := e.execContext()
	defer ec.ReleaseMemory()
	ch, restored, err := j.changes(ctx, ec, q, sources, r, interval)
	if err != nil {
		return err
	}
	defer ch.Op.Close()
	defer j.logCheckpoints()
	keep := int64(0)
	if restored {
		// The sink holds the answer at the checkpoint, whose chain stays
		// until this run writes a base.
		a.answer, a.from, keep = nil, nil, j.cp.ChainStart()
		a.committed = r.positions
	}
	if err := e.store.DeleteJobCheckpoints(ctx, j.def.ID, keep); err != nil {
		return err
	}
	if err := ch.Op.Open(ctx); err != nil {
		return err
	}
	a.perm, a.cp, a.interval = ch.Perm, j.cp, interval
	a.checkpointing = interval > 0 && j.cp.Supported() == ""
	defer a.w.Abort()
	for _, k := range sink.PrimaryKey() {
		a.pk = append(a.pk, sink.Schema().FieldIndices(k)[0])
	}
	for {
		c, err := ch.Op.Next(ctx)
		if err != nil {
			return err
		}
		if c.Batch != nil {
			if err := a.changes(c.Batch); err != nil {
				return err
			}
			continue
		}
		if err := a.marker(c); err != nil {
			return err
		}
	}
}

// changes builds the job's operators: restored from the checkpoint of the
// sink snapshot r resumes from when it has a usable one (true), else
// reading the sources from r.from in full.
func (j *job) changes(ctx context.Context, ec *exec.Context, q *plan.Query, sources []*tablestore.Table, r resume, interval time.Duration) (*plan.Changes, bool, error) {
	if r.state && interval > 0 {
		cp := stream.NewCheckpoints(interval)
		if err := j.loadCheckpoint(ctx, cp, sources, r); err == nil {
			if ch, err := q.Changes(ec, nil, cp); err == nil {
				j.setRun(cp, StartCheckpoint, r.positions)
				return ch, true, nil
			}
		}
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		// Unusable: rebuilt from the sources, which is exact too.
	}
	cp := stream.NewCheckpoints(interval)
	ch, err := q.Changes(ec, r.from, cp)
	j.setRun(cp, StartSources, nil)
	return ch, false, err
}

// logCheckpoints logs what the run's checkpoints cost, at its end.
func (j *job) logCheckpoints() {
	j.mu.Lock()
	cp := j.cp
	j.mu.Unlock()
	if st := cp.Stats(); st.Count > 0 {
		j.e.logf("job %s: %d checkpoints (%d bases), %d bytes (the last %d), saving %s, encoding %s, writing %s",
			j.def.ID, st.Count, st.Bases, st.Bytes, st.LastBytes, st.Saving.Round(time.Millisecond), st.Encoding.Round(time.Millisecond), st.Writing.Round(time.Millisecond))
	}
}

func (j *job) setRun(cp *stream.Checkpoints, start string, from []int64) {
	j.mu.Lock()
	j.cp, j.status.Start, j.status.From = cp, start, from
	j.mu.Unlock()
}

// loadCheckpoint loads the checkpoint of r's sink snapshot into cp, if it
// is whole, of r's positions, and every source still has the snapshots
// after them.
func (j *job) loadCheckpoint(ctx context.Context, cp *stream.Checkpoints, sources []*tablestore.Table, r resume) error {
	read := func(snap int64) ([]byte, error) { return j.e.store.JobCheckpoint(ctx, j.def.ID, snap) }
	if err := cp.Load(r.snap, r.positions, read); err != nil {
		return err
	}
	for i, t := range sources {
		latest, err := t.LatestSnapshotID(ctx)
		if err != nil {
			return err
		}
		if next := r.positions[i] + 1; next <= latest {
			if _, err := t.Stats(ctx, next); err != nil {
				return err // expired while the job was down
			}
		}
	}
	return nil
}

// bind binds the job's query and finds its sink.
func (j *job) bind(ctx context.Context) (*tablestore.Table, *plan.Query, error) {
	if j.mtable != nil {
		return j.e.bindContinuous(ctx, *j.mtable)
	}
	s := j.e.NewSession()
	s.database = j.def.Database
	st, err := s.Prepare(ctx, j.def.SQL, nil)
	if err != nil {
		return nil, nil, err
	}
	ins, ok := st.bound.(*plan.Insert)
	if !ok || !ins.Source.Streaming() {
		return nil, nil, fmt.Errorf("%w: job %s is not an INSERT from a stream", ErrInvalid, j.def.ID)
	}
	return ins.Table, ins.Source, nil
}

// resume is where a job's run starts: from, the snapshot each source
// restarts from in full (nil: the query's own start), unless the state
// of sink snapshot snap, taken at the sources' positions, is restored.
type resume struct {
	from, positions []int64
	snap            int64
	state           bool
}

// lastCommit reads the job's last commit to sink: its snapshot (0: none)
// and what it recorded.
func (j *job) lastCommit(ctx context.Context, sink *tablestore.Table) (int64, checkpoint, error) {
	snap, _, props, err := sink.LastProperties(ctx, jobProperty(j.def.ID))
	if err != nil || snap == 0 {
		return 0, checkpoint{}, err
	}
	var cp checkpoint
	if err := json.Unmarshal([]byte(props[jobProperty(j.def.ID)]), &cp); err != nil {
		return 0, checkpoint{}, fmt.Errorf("job %s: checkpoint in snapshot %d of %s: %w", j.def.ID, snap, sink.Ident(), err)
	}
	return snap, cp, nil
}

// committedStatus is s as the job's sink tells it, for a job this node
// does not run: what the node that does (or did) committed last. It
// returns the job's sources. The sink's last commit names them, so the
// job's query is bound only for a job that has not committed yet or whose
// definition does not name its sink.
func (j *job) committedStatus(ctx context.Context, s *JobStatus) []*tablestore.Table {
	s.Positions, s.Committed, s.SinkSnapshot, s.Start, s.From, s.SourceRows = nil, nil, 0, "", nil, 0
	s.Checkpoints = stream.CheckpointStats{}
	if sources, ok := j.committedSources(ctx, s); ok {
		return sources
	}
	sink, q, err := j.bind(ctx)
	if err != nil {
		return nil // the job's run reports why
	}
	sources := q.StreamSources()
	s.Sink, s.Sources = sink.Ident().String(), tableNames(sources)
	if snap, cp, err := j.lastCommit(ctx, sink); err == nil && len(cp.Positions) == len(sources) {
		s.Positions, s.Committed, s.SinkSnapshot = cp.Positions, slices.Clone(cp.Positions), snap
	}
	return sources
}

// committedSources fills s from the last commit of the sink the job's
// definition names, without binding its query; false when there is none.
func (j *job) committedSources(ctx context.Context, s *JobStatus) ([]*tablestore.Table, bool) {
	sink, snap, cp, sources, ok := j.committed(ctx)
	if !ok {
		return nil, false
	}
	s.Sink, s.Sources = sink.String(), slices.Clone(cp.Sources)
	s.Positions, s.Committed, s.SinkSnapshot = cp.Positions, slices.Clone(cp.Positions), snap
	return sources, true
}

// committed reads the job's last commit to the sink its definition names
// and opens the sources the commit names; false when there is none or the
// definition does not name the sink.
func (j *job) committed(ctx context.Context) (sink tablestore.Ident, snap int64, cp checkpoint, sources []*tablestore.Table, ok bool) {
	sink, ok = storedSink(j.def)
	if j.mtable != nil {
		sink, ok = *j.mtable, true
	}
	if !ok {
		return sink, 0, cp, nil, false
	}
	t, err := j.e.store.Table(ctx, sink)
	if err != nil {
		return sink, 0, cp, nil, false
	}
	snap, cp, err = j.lastCommit(ctx, t)
	if err != nil || snap == 0 || len(cp.Positions) != len(cp.Sources) {
		return sink, 0, cp, nil, false
	}
	sources = make([]*tablestore.Table, len(cp.Sources))
	for i, name := range cp.Sources {
		db, table, _ := strings.Cut(name, ".") // names have no '.'
		if sources[i], err = j.e.store.Table(ctx, tablestore.Ident{Database: db, Table: table}); err != nil {
			return sink, 0, cp, nil, false
		}
	}
	return sink, snap, cp, sources, true
}

// jobConsumer is the consumer id by which job id holds its sources'
// snapshots.
func jobConsumer(id string) string { return "flightd-job-" + id }

// holdSources records the job as a consumer of each source from its
// position in the checkpoint just written, so that expiry keeps the
// snapshots a restart from that checkpoint reads (as Flink's consumer-id
// does on Paimon sources). A source's consumer.expiration-time ends the
// hold of a job that stays down. Best effort: a failed write keeps the
// last hold, which holds more, and a restart that finds its snapshots
// expired rebuilds the answer from the sources, exact but slower.
//
// A node that ends the job (STOP JOB; for a materialized table, a drop,
// a new query or FULL) records that first and releases the hold after,
// possibly while this write is in flight: so the definition is read
// again after the write, and a hold written after the release is taken
// back. Otherwise it would keep the sources' snapshots for good.
func (j *job) holdSources(ctx context.Context, pos stream.Pos) {
	defer func() {
		if !j.holdWanted(ctx) {
			j.releaseSources(ctx, j.sources)
		}
	}()
	next := map[tablestore.Ident]int64{}
	tables := map[tablestore.Ident]*tablestore.Table{}
	for i, t := range j.sources {
		id := t.Ident()
		if n, ok := next[id]; !ok || pos[i] < n {
			next[id] = pos[i] // a table read twice is held from the older position
		}
		tables[id] = t
	}
	for id, n := range next {
		if n < 1 {
			continue // nothing read yet: the table has no snapshot
		}
		if err := tables[id].SetConsumer(ctx, jobConsumer(j.def.ID), n); err != nil {
			j.e.logf("job %s: holding the snapshots of %s from %d: %v", j.def.ID, id, n, err)
		}
	}
}

// holdWanted says whether the job may still resume from a checkpoint, so
// its hold on the sources is of use: it is running, or for a materialized
// table, the table is still CONTINUOUS with this job's query (suspended or
// not). It reads the definition from the store, not as cached; when that
// fails it says yes, which holds more.
func (j *job) holdWanted(ctx context.Context) bool {
	if j.mtable == nil {
		def, err := j.e.store.Job(ctx, j.def.ID)
		if err != nil {
			return !errors.Is(err, fs.ErrNotExist)
		}
		return def.State == JobRunning
	}
	t, err := j.e.store.FreshTable(ctx, *j.mtable)
	if err != nil {
		return !errors.Is(err, tablestore.ErrTableNotFound)
	}
	md := t.Materialized()
	return md != nil && md.Mode == plan.ModeContinuous && materializedJobID(*j.mtable, md.Query) == j.def.ID
}

// releaseSources ends the hold on the sources of a job that will not run
// again: those its run read, or those its last commit names when this
// node has not run it (sources nil). Best effort, as holdSources.
func (j *job) releaseSources(ctx context.Context, sources []*tablestore.Table) {
	if sources == nil {
		_, _, _, sources, _ = j.committed(ctx)
	}
	for _, t := range sources {
		if err := t.DeleteConsumer(ctx, jobConsumer(j.def.ID)); err != nil {
			j.e.logf("job %s: releasing the snapshots of %s: %v", j.def.ID, t.Ident(), err)
		}
	}
}

// tableNames names tables as SHOW JOBS shows them.
func tableNames(tables []*tablestore.Table) []string {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Ident().String()
	}
	return names
}

// resumeFrom reads the positions of the job's last sink commit.
func (j *job) resumeFrom(ctx context.Context, sink *tablestore.Table, sources []*tablestore.Table) (resume, error) {
	snap, cp, err := j.lastCommit(ctx, sink)
	if err != nil || snap == 0 {
		return resume{}, err
	}
	if j.mtable != nil {
		// A full refresh since the checkpoint (the table ran FULL for a
		// while) reflects newer sources: resuming from the checkpoint
		// would take the table back to older data.
		if r, _, _, err := sink.LastProperties(ctx, propRefresh); err != nil || r > snap {
			return resume{}, err
		}
	}
	if len(cp.Positions) != len(sources) || cp.Sources != nil && !slices.Equal(cp.Sources, tableNames(sources)) {
		// The query reads other tables now, or the same in another order
		// (a planner change): the positions are not this plan's. Start over.
		return resume{}, nil
	}
	if replaced, err := sourcesReplaced(ctx, sources, cp); replaced || err != nil {
		// The positions are another table's: start over from these.
		return resume{}, err
	}
	j.mu.Lock()
	j.status.Committed, j.status.Positions, j.status.SinkSnapshot = cp.Positions, cp.Positions, snap
	j.mu.Unlock()
	from := slices.Clone(cp.Positions)
	for i, t := range sources {
		if from[i] == 0 {
			continue
		}
		if _, err := t.Stats(ctx, from[i]); errors.Is(err, tablestore.ErrSnapshotNotFound) {
			// Expired while the job was down.
			if from[i], err = t.LatestSnapshotID(ctx); err != nil {
				return resume{}, err
			}
		} else if err != nil {
			return resume{}, err
		}
	}
	return resume{from: from, positions: cp.Positions, snap: snap, state: cp.State}, nil
}

// sourcesReplaced reports whether a source is not the table cp's
// positions were taken of (checkpoints that record no times tell
// nothing). The job's hold keeps the snapshots at its positions
// (holdSources), so one missing is a table replaced, or a hold lost (a
// job down past the consumer's expiry): either way the positions are of
// no use, and starting over is exact.
func sourcesReplaced(ctx context.Context, sources []*tablestore.Table, cp checkpoint) (bool, error) {
	if len(cp.Times) != len(sources) {
		return false, nil
	}
	for i, t := range sources {
		if cp.Positions[i] == 0 {
			continue
		}
		ms, err := t.SnapshotTime(ctx, cp.Positions[i])
		if errors.Is(err, tablestore.ErrSnapshotNotFound) || err == nil && ms != cp.Times[i] {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
	return false, nil
}

// applier writes a job's changelog to its sink.
type applier struct {
	j      *job
	ctx    context.Context
	sink   *tablestore.Table
	schema *arrow.Schema // the query's: row kind, then the sink's columns
	perm   []int
	names  []string
	w      *tablestore.Write
	dirty  bool // rows written since the last commit
	// every is the least time between two commits (0: at every marker
	// after changes); lastCommit the time of this run's last one (with a
	// checkpoint: when its write ended).
	every      time.Duration
	lastCommit time.Time
	started    time.Time
	committed  stream.Pos // the sources' positions of the last commit
	// times are the commit times of the sources' snapshots at timesAt.
	times, timesAt []int64
	// checkpointing: every operator can save its state, and the job
	// commits only at barriers, asked for every interval after changes
	// (or idleCheckpointFactor intervals after source changes that left
	// the answer as it was; barrier is the last asked for; requested: its
	// marker has not come),
	// or checkpointPause times the last checkpoint's cost when that is
	// longer (cost: the state's saving, encoding and writing).
	cp            *stream.Checkpoints
	checkpointing bool
	interval      time.Duration
	cost          time.Duration
	barrier       int64
	requested     bool
	// healthy: this run's exact answer is in the table (processed), and
	// the table's last error is cleared.
	healthy bool
	// Until the first marker at or past from, answer holds the keys of the
	// new run's output (encoded primary keys) to reconcile the sink with.
	answer map[string]bool
	from   []int64
	pk     []int // primary key columns in the sink's column order
	enc    vectorized.KeyEncoder
	kinds  []tablestore.RowKind
}

// changes buffers a batch of the query's changes in the sink's write.
func (a *applier) changes(b arrow.RecordBatch) error {
	n := int(b.NumRows())
	kinds, ok := b.Column(a.perm[0]).(*array.String)
	if !ok {
		return fmt.Errorf("%w: row kind column of type %s", ErrInvalid, b.Column(a.perm[0]).DataType())
	}
	a.kinds = a.kinds[:0]
	for i := range n {
		k, ok := tablestore.ParseRowKind(kinds.Value(i))
		if !ok {
			return fmt.Errorf("%w: row kind %q", ErrInvalid, kinds.Value(i))
		}
		a.kinds = append(a.kinds, k)
	}
	cols := make([]arrow.Array, len(a.perm)-1)
	for i, p := range a.perm[1:] {
		cols[i] = b.Column(p)
	}
	rows := array.NewRecordBatch(a.sink.Schema(), cols, int64(n))
	defer rows.Release()
	if a.answer != nil {
		if err := a.encodeKeys(rows); err != nil {
			return err
		}
		for i, k := range a.kinds {
			a.answer[string(a.enc.Key(i))] = !k.IsRetract()
		}
	}
	if err := a.w.WriteKinds(a.ctx, rows, a.kinds); err != nil {
		return fmt.Errorf("job %s: %w", a.j.def.ID, err)
	}
	a.dirty = true
	return nil
}

func (a *applier) encodeKeys(rows arrow.RecordBatch) error {
	keys := make([]arrow.Array, len(a.pk))
	for i, c := range a.pk {
		keys[i] = rows.Column(c)
	}
	return a.enc.Encode(keys, int(rows.NumRows()))
}

// marker ends a mini-batch at c.Pos: reconciles the sink on the first one
// past the restart point, and commits what was written with c.Pos (with
// checkpoints: at a barrier only, with the operators' state).
func (a *applier) marker(c stream.Chunk) error {
	pos := c.Pos
	if c.Barrier != 0 {
		a.requested = false
		defer a.cp.Discard(c.Barrier) // unless a commit took it
	}
	if a.answer != nil {
		for i, p := range a.from {
			if pos[i] < p {
				return nil // the new run has not rebuilt its state yet
			}
		}
		if err := a.reconcile(); err != nil {
			return err
		}
		a.answer = nil
	}
	if !a.dirty {
		if a.checkpointing {
			if c.Barrier != 0 {
				return a.commit(pos, c.Barrier) // asked for by idleCheckpointDue
			}
			if !a.requested && a.idleCheckpointDue(time.Now(), pos) {
				a.requestBarrier()
			}
		}
		a.processed(pos)
		return nil
	}
	if a.checkpointing {
		if c.Barrier != 0 {
			return a.commit(pos, c.Barrier)
		}
		if !a.requested && a.checkpointDue(time.Now()) {
			a.requestBarrier()
		}
		return nil
	}
	if !a.lastCommit.IsZero() && time.Since(a.lastCommit) < a.every {
		return nil // committed with a later marker (a source's heartbeat at the latest)
	}
	return a.commit(pos, 0)
}

// checkpointDue says whether the job asks for its next checkpoint at now:
// an interval after its last commit (its checkpoint written), or
// checkpointPause times the last checkpoint's cost when that is longer.
func (a *applier) checkpointDue(now time.Time) bool {
	return now.Sub(a.lastCommit) >= max(a.interval, checkpointPause*a.cost)
}

// idleCheckpointFactor: a job whose answer does not change while its
// sources do checkpoints this many intervals apart (an empty commit of its
// sink), so that its hold on the sources' snapshots (holdSources) and
// what a restart reads again stay bounded.
const idleCheckpointFactor = 60

// idleCheckpointDue says whether a job whose answer has not changed since
// its last commit asks for a checkpoint at now, its sources at pos.
func (a *applier) idleCheckpointDue(now time.Time, pos stream.Pos) bool {
	since := a.lastCommit
	if since.IsZero() {
		since = a.started
	}
	return !slices.Equal(pos, a.committed) && now.Sub(since) >= max(idleCheckpointFactor*a.interval, checkpointPause*a.cost)
}

// requestBarrier asks the sources for the next checkpoint's barrier.
func (a *applier) requestBarrier() {
	a.barrier++
	a.cp.Request(a.barrier)
	a.requested = true
}

// commit commits what was written with pos and, when barrier is not 0,
// the operators' state saved at that barrier, as the checkpoint of the
// sink snapshot committed.
func (a *applier) commit(pos stream.Pos, barrier int64) error {
	var state [][]byte
	if barrier != 0 {
		var err error
		if state, err = a.cp.Encode(barrier, pos); err != nil {
			return err
		}
	}
	times, err := a.sourceTimes(pos)
	if err != nil {
		return err
	}
	v, err := json.Marshal(checkpoint{Sources: a.names, Positions: pos, State: state != nil, Times: times})
	if err != nil {
		return err
	}
	a.w.SetProperties(map[string]string{jobProperty(a.j.def.ID): string(v)})
	id, err := a.w.Commit(a.ctx)
	if err != nil {
		return fmt.Errorf("job %s: %w", a.j.def.ID, err)
	}
	a.dirty, a.lastCommit, a.committed = false, time.Now(), slices.Clone(pos)
	a.j.mu.Lock()
	a.j.status.Committed, a.j.status.SinkSnapshot = slices.Clone(pos), id
	a.j.mu.Unlock()
	if state != nil {
		// A crash before the write leaves the snapshot without its state
		// (the restart rebuilds); a stop waits for it.
		ctx := context.WithoutCancel(a.ctx)
		start := time.Now()
		if err := a.j.e.store.PutJobCheckpoint(ctx, a.j.def.ID, id, state...); err != nil {
			return err
		}
		// The pause runs from the write's end: counted from the commit,
		// a write as slow as the rest of the checkpoint would take a
		// quarter of the job's time.
		a.lastCommit = time.Now()
		a.cost = a.cp.Took() + a.lastCommit.Sub(start)
		a.cp.Written(barrier, id, a.lastCommit.Sub(start))
		// A delta needs the files of its chain: only those before its
		// base go.
		if err := a.j.e.store.DeleteJobCheckpoints(ctx, a.j.def.ID, a.cp.ChainStart()); err != nil {
			return err
		}
		a.j.holdSources(ctx, pos)
	}
	a.processed(pos)
	return nil
}

// sourceTimes returns the commit times of the sources' snapshots at pos
// (0 for position 0), reading only those of positions that moved since
// the last call.
func (a *applier) sourceTimes(pos stream.Pos) ([]int64, error) {
	if a.times == nil {
		a.times, a.timesAt = make([]int64, len(pos)), make([]int64, len(pos))
	}
	for i, p := range pos {
		if p == a.timesAt[i] {
			continue
		}
		ms, err := a.j.sources[i].SnapshotTime(a.ctx, p)
		if err != nil {
			return nil, fmt.Errorf("job %s: source %s: %w", a.j.def.ID, a.names[i], err)
		}
		a.times[i], a.timesAt[i] = ms, p
	}
	return slices.Clone(a.times), nil
}

// processed records that the sink holds the answer at pos (committed, or
// unchanged since the last commit).
func (a *applier) processed(pos stream.Pos) {
	a.j.mu.Lock()
	a.j.status.Positions = slices.Clone(pos)
	a.j.mu.Unlock()
	if a.j.mtable != nil && !a.healthy {
		// The table holds this run's exact answer, committed: an earlier
		// run's error is over. (Cleared before the commit, a run whose
		// commits fail would reset its backoff every time.)
		a.healthy = true
		a.j.e.recordRefresh(a.ctx, *a.j.mtable, nil)
	}
}

// reconcile deletes the rows of the sink whose key the new run's answer
// lacks.
func (a *applier) reconcile() error {
	return scanTable(a.ctx, a.sink, nil, func(b arrow.RecordBatch) error {
		if err := a.encodeKeys(b); err != nil {
			return err
		}
		var idx []int64
		for i := range int(b.NumRows()) {
			if !a.answer[string(a.enc.Key(i))] {
				idx = append(idx, int64(i))
			}
		}
		if len(idx) == 0 {
			return nil
		}
		gone, err := vectorized.TakeBatch(a.ctx, a.j.e.cfg.Mem, b, a.sink.Schema(), idx)
		if err != nil {
			return err
		}
		defer gone.Release()
		kinds := make([]tablestore.RowKind, len(idx))
		for i := range kinds {
			kinds[i] = tablestore.Delete
		}
		a.dirty = true
		return a.w.WriteKinds(a.ctx, gone, kinds)
	})
}
