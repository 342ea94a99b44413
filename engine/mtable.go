package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Materialized tables in FULL mode: a refresh binds the table's query with
// every source pinned at its latest snapshot and replaces the table's
// contents with the answer in one INSERT OVERWRITE commit, whose snapshot
// properties record the source snapshots and the refresh's timing. The
// table therefore always equals the answer of some refresh over the
// snapshots it names; a refresh cut short (error, Close, kill -9) publishes
// nothing and is simply run again.

// Snapshot properties of a refresh commit.
const (
	propRefresh    = "flightd.refresh"             // "full" or the partition refreshed
	propSources    = "flightd.refresh.sources"     // db.table=snapshot,... (0: empty)
	propSourceTime = "flightd.refresh.source-time" // newest source commit, Unix ms
	propStarted    = "flightd.refresh.started"     // Unix ms
	propDuration   = "flightd.refresh.duration-ms" // until the commit began
)

// Scheduler runs the scheduled refreshes of materialized tables by calling
// Engine.Refresh. The embedded one runs inside flightd; another (a
// workflow system) can take its place through Config.Scheduler.
type Scheduler interface {
	// Changed says that table id was created, altered, refreshed by hand
	// or dropped: its schedule must be read again.
	Changed(id tablestore.Ident)
	// NextRun is when the scheduler will next refresh id (zero: never).
	NextRun(id tablestore.Ident) time.Time
	// Close stops scheduling and waits for a running refresh to stop.
	Close()
}

func (e *Engine) refreshLock(id tablestore.Ident) *sync.Mutex {
	mu, _ := e.refreshMu.LoadOrStore(id, &sync.Mutex{})
	return mu.(*sync.Mutex)
}

// Refresh recomputes materialized table id whole, now.
func (e *Engine) Refresh(ctx context.Context, id tablestore.Ident) error {
	return e.refresh(ctx, id, wholeTable)
}

// RefreshScheduled runs the refresh a schedule asks for (none for a
// suspended table): with
// partition.fields.<col>.date-formatter, only the partition of the current
// period (now), else the whole table.
func (e *Engine) RefreshScheduled(ctx context.Context, id tablestore.Ident, now time.Time) error {
	return e.refresh(ctx, id, func(md *tablestore.MaterializedDef) (map[string]string, string, bool, error) {
		if md.Suspended {
			return nil, "", false, nil
		}
		if len(md.DateFormatters) == 0 {
			return wholeTable(md)
		}
		spec := map[string]string{}
		var conds []string
		for _, col := range slices.Sorted(maps.Keys(md.DateFormatters)) {
			layout, err := plan.DateLayout(md.DateFormatters[col])
			if err != nil {
				return nil, "", false, err
			}
			v := now.UTC().Format(layout)
			spec[col] = v
			conds = append(conds, sql.QuoteIdent(col)+" = "+sql.QuoteString(v))
		}
		return spec, strings.Join(conds, " AND "), true, nil
	})
}

// refreshScope says, from a materialized table's definition as it is when
// its refresh starts, what the refresh overwrites: the partition spec
// (nil: the whole table) and the filter selecting its rows; run is false
// for no refresh at all.
type refreshScope func(md *tablestore.MaterializedDef) (spec map[string]string, filter string, run bool, err error)

func wholeTable(*tablestore.MaterializedDef) (map[string]string, string, bool, error) {
	return nil, "", true, nil
}

// refresh overwrites the table, or the part of it scope picks, with its
// query's answer; a failure of the refresh is recorded as the table's last
// error. The table is read once, under the table's refresh lock, so scope
// sees the definition the refresh runs.
func (e *Engine) refresh(ctx context.Context, id tablestore.Ident, scope refreshScope) error {
	mu := e.refreshLock(id)
	mu.Lock()
	defer mu.Unlock()
	t, err := e.store.Table(ctx, id)
	if err != nil {
		return err
	}
	if md := t.Materialized(); md != nil && md.Mode == plan.ModeContinuous {
		// A full refresh of a continuous table (REFRESH): its job pauses,
		// and restarts from the refreshed table.
		e.stopContinuous(ctx, id) // the same job resumes: its hold stays
		defer e.syncContinuous(ctx, id)
	}
	md := t.Materialized()
	if md == nil {
		return fmt.Errorf("refresh %s: not a materialized table: %w", identString(id), ErrInvalid)
	}
	spec, filter, run, err := scope(md)
	if err != nil || !run {
		return err
	}
	err = e.runRefresh(ctx, md, id.Database, filter, t.Schema(), func(props map[string]string) *tablestore.Write {
		return t.NewWrite(tablestore.WriteOptions{Overwrite: true, OverwritePartition: spec, Properties: props})
	})
	e.recordRefresh(ctx, id, err)
	return err
}

// recordRefresh keeps the outcome of a refresh (or of a continuous job's
// run) as the table's last error and count of failures in a row; a
// refresh cut short by Close is not a failure of the table.
func (e *Engine) recordRefresh(ctx context.Context, id tablestore.Ident, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	old, rerr := e.store.MaterializedState(ctx, id)
	var st tablestore.MaterializedState
	if err != nil {
		st = tablestore.MaterializedState{LastError: err.Error(), LastErrorMillis: time.Now().UnixMilli(), Failures: old.Failures + 1}
	} else if rerr != nil || old == st {
		return
	}
	_ = e.store.PutMaterializedState(ctx, id, st) // best effort: the error is also returned
}

// Retries of a failed refresh or continuous job: the first a second after
// the failure, then twice as long after each failure in a row, but never
// more than a freshness interval or retryMax apart, so a table recovers
// soon after a transient failure and a lasting one is retried (and
// reported) without end.
const retryFirst, retryMax = time.Second, 5 * time.Minute

func retryDelay(failures int, fresh time.Duration) time.Duration {
	d := retryFirst << min(max(failures-1, 0), 20)
	return min(d, fresh, retryMax)
}

// runRefresh binds md's query (in db, rows filtered by filter) with every
// table pinned at its latest snapshot, as md's owner, checks its columns
// against want, and streams its answer into the write newWrite makes,
// committed with the refresh's snapshot properties.
func (e *Engine) runRefresh(ctx context.Context, md *tablestore.MaterializedDef, db, filter string, want *arrow.Schema, newWrite func(map[string]string) *tablestore.Write) error {
	start := time.Now()
	text := md.Query
	if filter != "" {
		text = "SELECT * FROM (" + md.Query + ") AS refreshed WHERE " + filter
	}
	ast, err := sql.ParseOne(text)
	if err != nil {
		return fmt.Errorf("refresh: stored query no longer parses: %w", err)
	}
	s := e.ownerSession(db, md.Owner)
	cat := &catalog{s: s, db: db, pins: map[tablestore.Ident]int64{}}
	bound, err := s.bind(ctx, ast, cat)
	if err != nil {
		return fmt.Errorf("refresh%s: %w", asOwner(md.Owner), err)
	}
	q, ok := bound.(*plan.Query)
	if !ok {
		return fmt.Errorf("refresh: stored query is not a query: %w", ErrInvalid)
	}
	if err := sameShape(want, q.Schema()); err != nil {
		return err
	}
	props, err := e.refreshProps(ctx, cat.pins, filter, start)
	if err != nil {
		return err
	}
	st := &Statement{s: s}
	w := newWrite(props)
	_, err = st.commitFrom(ctx, w, q, nil, tablestore.Insert)
	return err
}

// asOwner names the user a refresh runs as, for its errors.
func asOwner(owner string) string {
	if owner == "" {
		return ""
	}
	return fmt.Sprintf(" as owner %q", owner)
}

// sameShape checks that a query still produces the table's columns.
func sameShape(want, got *arrow.Schema) error {
	if want.NumFields() != got.NumFields() {
		return fmt.Errorf("refresh: the query now produces %d columns, the table has %d; redefine it with ALTER MATERIALIZED TABLE ... AS SELECT: %w", got.NumFields(), want.NumFields(), ErrInvalid)
	}
	for i, f := range want.Fields() {
		if g := got.Field(i); g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
			return fmt.Errorf("refresh: the query's column %d is now %s %s, the table's is %s %s; redefine it with ALTER MATERIALIZED TABLE ... AS SELECT: %w",
				i+1, g.Name, g.Type, f.Name, f.Type, ErrInvalid)
		}
	}
	return nil
}

func (e *Engine) refreshProps(ctx context.Context, pins map[tablestore.Ident]int64, filter string, start time.Time) (map[string]string, error) {
	var srcs []string
	var newest int64
	for _, id := range slices.SortedFunc(maps.Keys(pins), func(a, b tablestore.Ident) int {
		return strings.Compare(identString(a), identString(b))
	}) {
		srcs = append(srcs, identString(id)+"="+strconv.FormatInt(pins[id], 10))
		if pins[id] == 0 {
			continue
		}
		t, err := e.store.Table(ctx, id)
		if err != nil {
			return nil, err
		}
		ms, err := t.SnapshotTime(ctx, pins[id])
		if err != nil {
			return nil, err
		}
		newest = max(newest, ms)
	}
	what := "full"
	if filter != "" {
		what = filter
	}
	return map[string]string{
		propRefresh:    what,
		propSources:    strings.Join(srcs, ","),
		propSourceTime: strconv.FormatInt(newest, 10),
		propStarted:    strconv.FormatInt(start.UnixMilli(), 10),
		propDuration:   strconv.FormatInt(time.Since(start).Milliseconds(), 10),
	}, nil
}

// materializedDDL runs the statements on materialized tables, and keeps
// DROP TABLE, ALTER TABLE and CREATE OR REPLACE TABLE off them; done is
// false for other statements.
func (st *Statement) materializedDDL(ctx context.Context) (done bool, err error) {
	e := st.s.e
	switch b := st.bound.(type) {
	case *plan.CreateMaterialized:
		return true, e.createMaterialized(ctx, b, st.s.userName())
	case *plan.AlterMaterialized:
		return true, e.alterMaterialized(ctx, b, st.s.userName())
	case *plan.DropMaterialized:
		return true, e.dropMaterialized(ctx, b)
	case *plan.DropTable:
		if t, err := e.store.Table(ctx, b.Ident); err == nil && t.Materialized() != nil {
			return true, fmt.Errorf("drop table %s: it is a materialized table; use DROP MATERIALIZED TABLE: %w", b.Ident, ErrInvalid)
		}
	case *plan.AlterTable:
		if t, err := e.store.Table(ctx, b.Ident); err == nil && t.Materialized() != nil {
			return true, fmt.Errorf("alter table %s: it is a materialized table; use ALTER MATERIALIZED TABLE: %w", b.Ident, ErrInvalid)
		}
	case *plan.CreateTable:
		if !b.OrReplace {
			break
		}
		if t, err := e.store.Table(ctx, b.Ident); err == nil && t.Materialized() != nil {
			return true, fmt.Errorf("create or replace table %s: it is a materialized table; use CREATE OR ALTER MATERIALIZED TABLE: %w", b.Ident, ErrInvalid)
		}
	}
	return false, nil
}

// createMaterialized creates the table with its first refresh in one
// commit, so the table never exists without its definition or contents.
// CREATE OR ALTER on an existing materialized table replaces its query,
// keeping its status.
func (e *Engine) createMaterialized(ctx context.Context, b *plan.CreateMaterialized, owner string) error {
	b.Def.Materialized.Owner = owner
	replace := false
	if t, err := e.store.Table(ctx, b.Ident); err == nil {
		old := t.Materialized()
		switch {
		case old == nil:
			return fmt.Errorf("create materialized table %s: a table of that name exists: %w", b.Ident, tablestore.ErrTableExists)
		case b.IfNotExists:
			return nil
		case !b.OrAlter:
			return fmt.Errorf("create materialized table %s: %w", b.Ident, tablestore.ErrTableExists)
		}
		b.Def.Materialized.Suspended = old.Suspended // CREATE OR ALTER redefines; it does not resume
		replace = true
	} else if !errors.Is(err, tablestore.ErrTableNotFound) {
		return err
	}
	if _, err := e.store.View(ctx, b.Ident); err == nil {
		return fmt.Errorf("create materialized table %s: a view of that name exists: %w", b.Ident, tablestore.ErrViewExists)
	}
	if err := e.continuousSlot(ctx, b.Ident, b.Def.Materialized); err != nil {
		return err
	}
	if err := e.stageMaterialized(ctx, b.Ident, b.Def, replace); err != nil {
		return err
	}
	e.materializedChanged(ctx, b.Ident)
	return nil
}

// continuousSlot fails with ErrLimit when materialized table id, defined
// as md, would run a continuous job it does not run now past the limit on
// running jobs (-max-jobs).
func (e *Engine) continuousSlot(ctx context.Context, id tablestore.Ident, md *tablestore.MaterializedDef) error {
	if md.Mode != plan.ModeContinuous || md.Suspended {
		return nil
	}
	if _, _, running := e.continuousStatus(id); running {
		return nil // its job is replaced, not added
	}
	return e.jobSlot(ctx, "the job of CONTINUOUS materialized table "+identString(id))
}

// stageMaterialized publishes table id, defined by def, with its first
// refresh, in one commit (replacing the table of that name if replace).
func (e *Engine) stageMaterialized(ctx context.Context, id tablestore.Ident, def tablestore.TableDef, replace bool) error {
	mu := e.refreshLock(id)
	mu.Lock()
	defer mu.Unlock()
	// A new query: the old one's job must not write the new table.
	defer e.releaseUnwanted(ctx, e.stopContinuous(ctx, id))
	w, err := e.store.StageTable(ctx, id, def, replace)
	if err != nil {
		return err
	}
	err = e.runRefresh(ctx, def.Materialized, id.Database, "", w.Table().Schema(), func(props map[string]string) *tablestore.Write {
		w.SetProperties(props)
		return w
	})
	if err != nil {
		w.Abort()
	}
	return err
}

func (e *Engine) alterMaterialized(ctx context.Context, b *plan.AlterMaterialized, user string) error {
	id := b.Table.Ident()
	defer e.materializedChanged(ctx, id)
	switch b.Action {
	case "REFRESH":
		return e.refresh(ctx, id, func(*tablestore.MaterializedDef) (map[string]string, string, bool, error) {
			return b.Partition, b.PartitionFilter, true, nil
		})
	case "AS":
		return e.replaceQuery(ctx, id, *b.NewTable, user)
	}
	wasContinuous := b.Table.Materialized().Mode == plan.ModeContinuous
	after := *b.Table.Materialized()
	for _, c := range b.Changes {
		switch c := c.(type) {
		case tablestore.SuspendMaterialized:
			after.Suspended = c.Suspended
		case tablestore.SetFreshness:
			if c.Mode != "" {
				after.Mode = c.Mode
			}
		}
	}
	if err := e.continuousSlot(ctx, id, &after); err != nil {
		return err
	}
	if err := e.store.AlterTable(ctx, id, b.Changes...); err != nil {
		return err
	}
	if t, err := e.store.Table(ctx, id); err == nil && wasContinuous && t.Materialized().Mode == plan.ModeFull {
		// From CONTINUOUS to FULL: the job stops (materializedChanged) and
		// a full refresh takes over at once rather than a freshness later.
		mu := e.refreshLock(id)
		mu.Lock()
		e.releaseUnwanted(ctx, e.stopContinuous(ctx, id))
		mu.Unlock()
		return e.Refresh(ctx, id)
	}
	return nil
}

// replaceQuery swaps in a new query (and schema) for materialized table id
// with its first refresh, keeping the status and freshness it has now;
// owner, who gave the query, becomes the table's owner. A
// SUSPEND, RESUME or SET FRESHNESS that publishes between reading them
// here and StageTable is undone by the swap (one after fails it with
// ErrConflict).
func (e *Engine) replaceQuery(ctx context.Context, id tablestore.Ident, def tablestore.TableDef, owner string) error {
	t, err := e.store.Table(ctx, id)
	if err != nil {
		return err
	}
	cur := t.Materialized()
	if cur == nil {
		return fmt.Errorf("alter materialized table %s: it is no longer a materialized table: %w", identString(id), ErrInvalid)
	}
	cur.Query, cur.Owner = def.Materialized.Query, owner
	def.Materialized = cur
	return e.stageMaterialized(ctx, id, def, true)
}

func (e *Engine) dropMaterialized(ctx context.Context, b *plan.DropMaterialized) error {
	t, err := e.store.Table(ctx, b.Ident)
	if err != nil {
		if b.IfExists && errors.Is(err, tablestore.ErrTableNotFound) {
			return nil
		}
		return err
	}
	if t.Materialized() == nil {
		return fmt.Errorf("drop materialized table %s: it is a table; use DROP TABLE: %w", b.Ident, ErrInvalid)
	}
	mu := e.refreshLock(b.Ident)
	mu.Lock()
	defer mu.Unlock()
	defer e.sched.Changed(b.Ident)
	defer e.releaseUnwanted(ctx, e.stopContinuous(ctx, b.Ident))
	if err := e.store.DropTable(ctx, b.Ident, b.IfExists); err != nil {
		return err
	}
	return e.store.DeleteMaterializedState(ctx, b.Ident)
}

// lastRefresh reads what the newest refresh commit of t recorded.
type lastRefresh struct {
	snapshot   int64
	at         time.Time
	duration   time.Duration
	sources    string
	sourceTime time.Time
}

func lastRefreshOf(ctx context.Context, t *tablestore.Table) (lastRefresh, bool, error) {
	id, ms, props, err := t.LastProperties(ctx, propRefresh)
	if err != nil || id == 0 {
		return lastRefresh{}, false, err
	}
	dur, _ := strconv.ParseInt(props[propDuration], 10, 64)
	src, _ := strconv.ParseInt(props[propSourceTime], 10, 64)
	return lastRefresh{snapshot: id, at: time.UnixMilli(ms), duration: time.Duration(dur) * time.Millisecond, sources: props[propSources], sourceTime: time.UnixMilli(src)}, true, nil
}

var (
	_ plan.MaterializedCatalog    = (*catalog)(nil)
	_ plan.DatabaseOptionsCatalog = (*catalog)(nil)
)

// DatabaseOptions: the freshness threshold of a database's materialized
// tables.
func (c *catalog) DatabaseOptions(ctx context.Context, db string) (map[string]string, error) {
	c.opaque = true
	return c.s.e.store.DatabaseOptions(ctx, db)
}

// MaterializedStatus: the data lag is now minus the commit time of the
// newest source snapshot the table reflects.
func (c *catalog) MaterializedStatus(ctx context.Context, t *tablestore.Table) (plan.MaterializedStatus, error) {
	c.opaque = true
	e := c.s.e
	var ms plan.MaterializedStatus
	last, ok, err := lastRefreshOf(ctx, t)
	if err != nil {
		return ms, err
	}
	if ok {
		ms.LastRefresh, ms.LastDuration, ms.SourceSnapshots = last.at, last.duration, last.sources
		if !last.sourceTime.Equal(time.UnixMilli(0)) {
			ms.DataLag = time.Since(last.sourceTime)
		}
	}
	if js, sources, ok := e.continuousStatus(t.Ident()); ok {
		if err := continuousProgress(ctx, t, last.snapshot, js, sources, &ms); err != nil {
			return ms, err
		}
	}
	state, err := e.store.MaterializedState(ctx, t.Ident())
	if err != nil {
		return ms, err
	}
	ms.LastError, ms.Failures = state.LastError, state.Failures
	if state.LastErrorMillis > 0 {
		ms.LastErrorAt = time.UnixMilli(state.LastErrorMillis)
	}
	ms.NextRun = e.sched.NextRun(t.Ident())
	return ms, nil
}

// embeddedScheduler runs due refreshes one at a time on one goroutine. It
// keeps no state of its own: the next run of a table is its last refresh
// commit's time plus its freshness (now, when it has none), so a restart
// resumes the schedule and redoes a refresh a crash cut short.
type embeddedScheduler struct {
	e      *Engine
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}

	mu   sync.Mutex
	next map[tablestore.Ident]time.Time
}

func newEmbeddedScheduler(e *Engine) Scheduler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &embeddedScheduler{e: e, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}),
		next: map[tablestore.Ident]time.Time{}}
	dbs, _ := e.store.Databases(ctx)
	for _, db := range dbs {
		names, _ := e.store.Tables(ctx, db)
		for _, n := range names {
			s.update(tablestore.Ident{Database: db, Table: n})
		}
	}
	go s.loop()
	return s
}

// Changed reads id's schedule before it returns, so a statement's effect
// on the schedule (NextRun) is visible when the statement is.
func (s *embeddedScheduler) Changed(id tablestore.Ident) {
	s.update(id)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *embeddedScheduler) NextRun(id tablestore.Ident) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next[id]
}

func (s *embeddedScheduler) Close() {
	s.cancel()
	<-s.done
}

func (s *embeddedScheduler) loop() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		id, at, ok := s.earliest()
		if ok && !time.Now().Before(at) {
			_ = s.e.RefreshScheduled(s.ctx, id, time.Now()) // recorded as the table's last error
			if s.ctx.Err() != nil {
				return
			}
			s.update(id)
			continue
		}
		wait := time.Hour
		if ok {
			wait = time.Until(at)
		}
		timer.Reset(wait)
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

func (s *embeddedScheduler) earliest() (tablestore.Ident, time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best tablestore.Ident
	var at time.Time
	for id, t := range s.next {
		if at.IsZero() || t.Before(at) {
			best, at = id, t
		}
	}
	return best, at, !at.IsZero()
}

// update reads id's schedule: a freshness interval after its last refresh
// or failed attempt; none when it is dropped, suspended or not
// materialized. A table whose schedule cannot be read is retried after a
// minute.
func (s *embeddedScheduler) update(id tablestore.Ident) {
	at, ok := s.schedule(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		s.next[id] = at
	} else {
		delete(s.next, id)
	}
}

func (s *embeddedScheduler) schedule(id tablestore.Ident) (time.Time, bool) {
	t, err := s.e.store.Table(s.ctx, id)
	if err != nil {
		return time.Time{}, false
	}
	md := t.Materialized()
	if md == nil || md.Suspended || md.Mode == plan.ModeContinuous {
		return time.Time{}, false // a continuous table's job keeps it
	}
	last, ok, err := lastRefreshOf(s.ctx, t)
	if err != nil {
		return time.Now().Add(time.Minute), true
	}
	fresh := time.Duration(md.FreshnessMillis) * time.Millisecond
	// A failed refresh is retried with backoff (retryDelay).
	if st, err := s.e.store.MaterializedState(s.ctx, id); err == nil && st.LastErrorMillis > last.at.UnixMilli() {
		return time.UnixMilli(st.LastErrorMillis).Add(retryDelay(st.Failures, fresh)), true
	}
	if !ok {
		return time.Now(), true
	}
	return last.at.Add(fresh), true
}
