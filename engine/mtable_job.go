package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Materialized tables in CONTINUOUS mode are kept by a continuous job
// (job.go) that applies the changelog of the table's query, every source
// streamed from its latest snapshot in full, to the table by key. The
// table already holds a full refresh's answer when its job starts (its
// creation, or the last scheduled refresh before a switch from FULL); the
// job's reconciliation at its first marker then makes it exactly the
// query's answer there, and each later commit of the job is the answer on
// the source snapshots it records. Such jobs are not stored: the table's
// definition (mode, suspended) says whether one runs, so it starts with
// the engine and follows every ALTER. A job and a full refresh of one
// table never run at once: both happen under the table's refresh lock.

// materializedJobID names the job of a materialized table's query; a new
// query is a new job, which does not resume from the old one's
// checkpoints.
func materializedJobID(id tablestore.Ident, query string) string {
	h := sha256.Sum256([]byte(identString(id) + "\x00" + query))
	return "mt-" + hex.EncodeToString(h[:8])
}

// bindContinuous binds materialized table id's query with every table
// streamed, checked against the table as its job's sink.
func (e *Engine) bindContinuous(ctx context.Context, id tablestore.Ident) (*tablestore.Table, *plan.Query, error) {
	t, err := e.store.Table(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	md := t.Materialized()
	if md == nil {
		return nil, nil, fmt.Errorf("%w: %s is no longer a materialized table", ErrInvalid, identString(id))
	}
	ast, err := sql.ParseOne(md.Query)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: materialized table %s: stored query no longer parses: %w", ErrInvalid, identString(id), err)
	}
	s := e.ownerSession(id.Database, md.Owner)
	opts := e.cfg.Plan
	opts.StreamAll = true
	// Idle sources report progress at the job's commit interval, so a
	// change held back for that interval is committed at the latest then.
	opts.StreamHeartbeat = commitInterval(md)
	bound, err := s.bindWith(ctx, ast, &catalog{s: s, db: id.Database, looked: map[tablestore.Ident]int{}}, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("materialized table %s%s: %w", identString(id), asOwner(md.Owner), err)
	}
	q, ok := bound.(*plan.Query)
	if !ok {
		return nil, nil, fmt.Errorf("%w: materialized table %s: stored query is not a query", ErrInvalid, identString(id))
	}
	// The query's columns after the row kind are the table's.
	if err := sameShape(t.Schema(), arrow.NewSchema(q.Schema().Fields()[1:], nil)); err != nil {
		return nil, nil, err
	}
	if why := plan.CheckContinuous(t, q); why != "" {
		return nil, nil, fmt.Errorf("%w: %s", ErrInvalid, why)
	}
	return t, q, nil
}

// commitInterval is how often at most the job of materialized table md
// commits: half its freshness, so that a change waits at most that long
// for its commit (and for a source report after it, StreamHeartbeat) and
// the table's data lag stays within its freshness. With source snapshots
// further apart than that, the job commits after each one that changes
// the table.
func commitInterval(md *tablestore.MaterializedDef) time.Duration {
	return time.Duration(md.FreshnessMillis) * time.Millisecond / 2
}

// syncContinuous makes the job of materialized table id run exactly when
// its definition asks for one: CONTINUOUS and not suspended, for its
// current query. The caller holds the table's refresh lock.
func (e *Engine) syncContinuous(ctx context.Context, id tablestore.Ident) {
	ctx = context.WithoutCancel(ctx) // the job must follow the definition even if the statement's client left
	def, fresh := e.continuousWanted(ctx, id)
	want := def.ID
	e.jobsMu.Lock()
	defer e.jobsMu.Unlock()
	keep := want
	if j, ok := e.jobs[want]; ok && j.freshness != fresh {
		keep = "" // restarted (from its checkpoint) to commit at the new freshness's interval
	}
	e.releaseUnwanted(ctx, e.stopContinuousLocked(ctx, id, keep))
	if _, ok := e.jobs[want]; want != "" && !ok && e.jobCtx.Err() == nil {
		e.launchLocked(def, identString(id), &id)
		e.jobs[want].freshness = fresh
	}
}

// continuousWanted is the job materialized table id's definition asks
// for, and its freshness (a zero def: none).
func (e *Engine) continuousWanted(ctx context.Context, id tablestore.Ident) (tablestore.JobDef, int64) {
	t, err := e.store.Table(ctx, id)
	if err != nil {
		return tablestore.JobDef{}, 0
	}
	md := t.Materialized()
	if md == nil || md.Mode != plan.ModeContinuous || md.Suspended {
		return tablestore.JobDef{}, 0
	}
	return tablestore.JobDef{ID: materializedJobID(id, md.Query), SQL: md.Query, Database: id.Database, State: JobRunning}, md.FreshnessMillis
}

// continuousInStep says whether this node's jobs of materialized table id
// are those its definition asks for (def, fresh), running or not.
func (e *Engine) continuousInStep(id tablestore.Ident, def tablestore.JobDef, fresh int64) bool {
	e.jobsMu.Lock()
	defer e.jobsMu.Unlock()
	for jid, j := range e.jobs {
		if j.mtable != nil && *j.mtable == id && (jid != def.ID || j.freshness != fresh) {
			return false
		}
	}
	_, ok := e.jobs[def.ID]
	return def.ID == "" || ok
}

// stoppedJob is a job of a materialized table that this node stopped, with
// the sources it holds (holdSources), read before a drop takes the table
// whose last commit names them.
type stoppedJob struct {
	j       *job
	sources []*tablestore.Table
}

// stopContinuousLocked stops and forgets the jobs of materialized table id
// but a running one named keep. jobsMu is held.
func (e *Engine) stopContinuousLocked(ctx context.Context, id tablestore.Ident, keep string) []stoppedJob {
	var stopped []stoppedJob
	for jid, j := range e.jobs {
		if j.mtable == nil || *j.mtable != id || jid == keep && j.running() {
			continue
		}
		j.cancel()
		<-j.done
		delete(e.jobs, jid)
		sources := j.sources
		if sources == nil {
			_, _, _, sources, _ = j.committed(ctx)
		}
		stopped = append(stopped, stoppedJob{j, sources})
	}
	return stopped
}

// stopContinuous stops the job of materialized table id, before something
// else writes the table. The caller holds the table's refresh lock, and
// passes what it returns to releaseUnwanted once its change is published.
func (e *Engine) stopContinuous(ctx context.Context, id tablestore.Ident) []stoppedJob {
	e.jobsMu.Lock()
	defer e.jobsMu.Unlock()
	return e.stopContinuousLocked(ctx, id, "")
}

// releaseUnwanted ends the holds on the sources of the stopped jobs that
// can no longer resume (holdWanted): the table was dropped, or has a new
// query, or refreshes in FULL mode now. A suspended table's job keeps its
// hold, to resume from its checkpoint.
func (e *Engine) releaseUnwanted(ctx context.Context, stopped []stoppedJob) {
	ctx = context.WithoutCancel(ctx) // a client that left must not leave a hold behind
	for _, s := range stopped {
		if !s.j.holdWanted(ctx) {
			s.j.releaseSources(ctx, s.sources)
		}
	}
}

// materializedChanged follows a statement that changed materialized table
// id: its job and its schedule.
func (e *Engine) materializedChanged(ctx context.Context, id tablestore.Ident) {
	mu := e.refreshLock(id)
	mu.Lock()
	e.syncContinuous(ctx, id)
	mu.Unlock()
	e.sched.Changed(id)
}

// startContinuous starts the jobs of the materialized tables in
// CONTINUOUS mode.
func (e *Engine) startContinuous(ctx context.Context) error {
	return e.eachMaterialized(ctx, func(id tablestore.Ident) { e.materializedChanged(ctx, id) })
}

// eachMaterialized calls fn with every materialized table.
func (e *Engine) eachMaterialized(ctx context.Context, fn func(tablestore.Ident)) error {
	dbs, err := e.store.Databases(ctx)
	if err != nil {
		return err
	}
	for _, db := range dbs {
		names, err := e.store.Tables(ctx, db)
		if err != nil {
			return err
		}
		for _, n := range names {
			id := tablestore.Ident{Database: db, Table: n}
			if t, err := e.store.Table(ctx, id); err == nil && t.Materialized() != nil {
				fn(id)
			}
		}
	}
	return nil
}

// continuousStatus is the status of the job of materialized table id, and
// its source tables in the order of its positions.
func (e *Engine) continuousStatus(id tablestore.Ident) (JobStatus, []*tablestore.Table, bool) {
	e.jobsMu.Lock()
	defer e.jobsMu.Unlock()
	for _, j := range e.jobs {
		if j.mtable != nil && *j.mtable == id {
			j.mu.Lock()
			defer j.mu.Unlock()
			s := j.status
			s.Sources, s.Positions = slices.Clone(s.Sources), slices.Clone(s.Positions)
			return s, j.sources, true
		}
	}
	return JobStatus{}, nil, false
}

// continuousProgress reports a continuous table's job in ms. When the
// job committed after the last full refresh (snapshot refreshed), the
// table's content is that commit's: its time and the source snapshots it
// records; the data lag follows the snapshots the job has processed
// (committed, or with nothing to change).
func continuousProgress(ctx context.Context, t *tablestore.Table, refreshed int64, js JobStatus, sources []*tablestore.Table, ms *plan.MaterializedStatus) error {
	ms.Job = js.ID
	snap, at, props, err := t.LastProperties(ctx, jobProperty(js.ID))
	if err != nil || snap <= refreshed {
		return err
	}
	var cp checkpoint
	if err := json.Unmarshal([]byte(props[jobProperty(js.ID)]), &cp); err != nil {
		return fmt.Errorf("materialized table %s: checkpoint in snapshot %d: %w", t.Ident(), snap, err)
	}
	if len(cp.Sources) != len(cp.Positions) {
		return fmt.Errorf("materialized table %s: checkpoint in snapshot %d names %d sources and %d positions: %w", t.Ident(), snap, len(cp.Sources), len(cp.Positions), tablestore.ErrCorrupt)
	}
	var srcs []string
	for i, name := range cp.Sources {
		srcs = append(srcs, name+"="+strconv.FormatInt(cp.Positions[i], 10))
	}
	ms.LastRefresh, ms.LastDuration, ms.SourceSnapshots = time.UnixMilli(at), 0, strings.Join(srcs, ",")
	pos := js.Positions
	if len(pos) != len(sources) {
		return nil // the job has not read its sources yet
	}
	var newest int64
	for i, src := range sources {
		if at, err := src.SnapshotTime(ctx, pos[i]); err == nil {
			newest = max(newest, at)
		}
	}
	if newest > 0 {
		ms.DataLag = time.Since(time.UnixMilli(newest))
	}
	return nil
}

// stopJobsWritingTo stops the jobs whose sink is a table of database db,
// which is about to be dropped: a job writing files into it would fail the
// drop, or leave files behind. Jobs of INSERTs are recorded as stopped.
// It asks the store nothing (Jobs would, for every job's lag and lease
// holder).
func (e *Engine) stopJobsWritingTo(ctx context.Context, db string) ([]stoppedJob, error) {
	var ids []string
	e.jobsMu.Lock()
	for id, j := range e.jobs {
		if j.writesTo(db) {
			ids = append(ids, id)
		}
	}
	e.jobsMu.Unlock()
	slices.Sort(ids)
	var stopped []stoppedJob
	for _, jobID := range ids {
		if id, ok := e.jobTable(jobID); ok {
			mu := e.refreshLock(id)
			mu.Lock()
			stopped = append(stopped, e.stopContinuous(ctx, id)...)
			mu.Unlock()
			continue
		}
		if err := e.StopJob(ctx, jobID); err != nil && !errors.Is(err, ErrJobNotFound) {
			return stopped, err
		}
	}
	return stopped, nil
}

// jobTable is the materialized table job id keeps, if it keeps one.
func (e *Engine) jobTable(id string) (tablestore.Ident, bool) {
	e.jobsMu.Lock()
	defer e.jobsMu.Unlock()
	if j, ok := e.jobs[id]; ok && j.mtable != nil {
		return *j.mtable, true
	}
	return tablestore.Ident{}, false
}
