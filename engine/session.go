package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Session is one client's state: its current database. Safe for concurrent
// use (Flight clients pipeline calls).
type Session struct {
	e *Engine

	mu        sync.Mutex
	database  string
	authorize Authorizer // nil: everything is allowed
	user      string     // "": no authentication
	endpoints Endpoints  // how queries split into parts (partition.go)
}

// NewSession starts a session in the default database.
func (e *Engine) NewSession() *Session {
	return &Session{e: e, database: DefaultDatabase}
}

// ViewSchema binds a view as a query would and returns its result schema
// (for metadata: a view has no stored schema).
func (e *Engine) ViewSchema(ctx context.Context, id tablestore.Ident) (*arrow.Schema, error) {
	st, err := e.NewSession().PrepareAST(ctx, &sql.Query{Pos: sql.Pos{Line: 1, Col: 1}, Body: selectFrom([]string{id.Database, id.Table}, nil)}, nil)
	if err != nil {
		return nil, err
	}
	return st.Schema(), nil
}

// Database is the session's current database.
func (s *Session) Database() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.database
}

// SetDatabase switches the current database; it must exist.
func (s *Session) SetDatabase(ctx context.Context, name string) error {
	dbs, err := s.e.store.Databases(ctx)
	if err != nil {
		return err
	}
	for _, db := range dbs {
		if db == name {
			s.mu.Lock()
			s.database = name
			s.mu.Unlock()
			return nil
		}
	}
	return fmt.Errorf("database %q: %w", name, tablestore.ErrDatabaseNotFound)
}

// Statement is one parsed and bound statement. Query statements may run
// many times; the plan is immutable and each run builds fresh operators.
type Statement struct {
	s     *Session
	tx    *Txn
	ast   sql.Statement // kept to bind DML again at each execution
	bound plan.Statement
	// readsTarget: an INSERT whose source reads the table it writes (a
	// read-modify-write).
	readsTarget bool
	// part, when set, computes part partIndex of the query only
	// (PreparePartition).
	part      *plan.Partitioning
	partIndex int
	// pins make a query read each table at one snapshot per execution,
	// resolved once (catalog.Table); nil for other statements.
	pins []*tablestore.Pin
	// txTables is tx.tables() when the statement was bound; reads are
	// the transaction's writes it reads (catalog.reads).
	txTables int
	reads    []*tablestore.Write
	// resolved is what binding a query read of the catalog (Unchanged);
	// nil when it cannot tell.
	resolved *resolved
}

// resolved is what binding a query found in the catalog: each table with
// the latest snapshot it read, and each view name's lookup.
type resolved struct {
	tables map[tablestore.Ident]resolvedTable
	views  map[tablestore.Ident]viewLookup
}

type resolvedTable struct {
	t    *tablestore.Table
	snap int64
}

// Prepare parses and binds one statement, so errors surface before any
// execution. tx may be nil (autocommit).
func (s *Session) Prepare(ctx context.Context, text string, tx *Txn) (*Statement, error) {
	ast, err := sql.ParseOne(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s.PrepareAST(ctx, ast, tx)
}

// PrepareAST binds an already parsed statement (one of several that
// sql.Parse returned, for instance).
func (s *Session) PrepareAST(ctx context.Context, ast sql.Statement, tx *Txn) (_ *Statement, err error) {
	defer recoverInternal(&err)
	st := &Statement{s: s, tx: tx, ast: ast}
	if tx != nil {
		// Refused here too, so that a client sees it when it executes a
		// query, not when it fetches the rows.
		if err := tx.refusal(); err != nil {
			return nil, err
		}
		st.txTables = tx.tables()
	}
	cat := &catalog{s: s, tx: tx, db: s.Database(), looked: map[tablestore.Ident]int{}, pinned: map[tablestore.Ident]*tablestore.Pin{}}
	if st.bound, err = s.bind(ctx, ast, cat); err != nil {
		return nil, err
	}
	// Only a query's executions read their tables where the plan's
	// handles resolve them: DML binds again at execution, and a streaming
	// query or a job follows its tables' new snapshots.
	q, isQuery := st.bound.(*plan.Query)
	for _, p := range cat.pinned {
		if isQuery && !q.Streaming() && tx == nil {
			st.pins = append(st.pins, p)
		} else {
			p.Release()
		}
	}
	if err := s.allowStatement(st.bound); err != nil {
		return nil, err
	}
	if isQuery && !q.Streaming() && tx == nil {
		if st.resolved, err = cat.resolved(ctx); err != nil {
			return nil, err
		}
	}
	if ins, ok := st.bound.(*plan.Insert); ok {
		st.readsTarget = cat.looked[ins.Table.Ident()] > 1 // the target itself is one
	}
	st.reads = cat.reads
	return st, nil
}

// Unchanged reports whether the query would bind now as it was bound:
// every table it resolved is the same table at the same schema version and
// latest snapshot, every view name resolves as it did, and the session may
// still read them. Binding it again would give the same plan, so the plan
// can serve an execution asked for apart from its preparation (Flight SQL's
// DoGet after GetFlightInfo) without binding and optimizing it twice. It is
// false for what it cannot tell: a statement of a transaction, or one that
// read listings of the catalog, files or jobs.
func (st *Statement) Unchanged(ctx context.Context) bool {
	r := st.resolved
	if r == nil {
		return false
	}
	for id, rt := range r.tables {
		if st.s.allow(id.Database, Read) != nil {
			return false
		}
		now, err := st.s.e.store.Table(ctx, id)
		if err != nil || !rt.t.SameVersion(now) {
			return false
		}
		if snap, err := now.LatestSnapshotID(ctx); err != nil || snap != rt.snap {
			return false
		}
	}
	for id, v := range r.views {
		if _, ok := r.tables[id]; ok {
			continue // a table, so no view: checked above
		}
		if v.err != nil || st.s.allow(id.Database, Read) != nil {
			return false
		}
		def, err := st.s.e.store.View(ctx, id)
		if err != nil || !reflect.DeepEqual(def, v.def) {
			return false
		}
	}
	return st.s.allowStatement(st.bound) == nil
}

// withOwnWrites readies an execution of a statement of a transaction to
// read the transaction's own writes: it binds the statement again when
// the transaction has begun writing another table since it was bound (an
// earlier execution of the statement itself, for one), and settles the
// writes it reads (tablestore.Write.Settle). The caller holds
// tx.running.
func (st *Statement) withOwnWrites(ctx context.Context) error {
	if st.tx == nil {
		return nil
	}
	if st.tx.tables() != st.txTables {
		again, err := st.s.PrepareAST(ctx, st.ast, st.tx)
		if err != nil {
			return err
		}
		st.bound, st.readsTarget, st.txTables, st.reads = again.bound, again.readsTarget, again.txTables, again.reads
	}
	for _, w := range st.reads {
		if err := w.Settle(ctx); err != nil {
			st.tx.fail(err)
			return fmt.Errorf("the transaction's own writes: %w", err)
		}
	}
	return nil
}

func (s *Session) bind(ctx context.Context, ast sql.Statement, cat *catalog) (plan.Statement, error) {
	return s.bindWith(ctx, ast, cat, s.e.cfg.Plan)
}

func (s *Session) bindWith(ctx context.Context, ast sql.Statement, cat *catalog, opts plan.Options) (plan.Statement, error) {
	bound, err := plan.Bind(ctx, ast, cat, opts)
	if err != nil {
		switch {
		case errors.Is(err, plan.ErrNotImplemented):
			return nil, fmt.Errorf("%w: %w", ErrNotSupported, err)
		case KindOf(err) != KindInternal:
			return nil, err // a table not found, say: its kind, not "invalid argument"
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return bound, nil
}

// IsQuery reports whether the statement returns rows (SELECT, SHOW,
// DESCRIBE, EXPLAIN) rather than an update count.
func (st *Statement) IsQuery() bool {
	switch st.bound.(type) {
	case *plan.Query, *plan.Explain:
		return true
	}
	return false
}

// ChangesSession reports whether executing the statement changes its
// session (USE): whoever keeps the client's session state across calls
// must take the new state from Session after Exec, whichever path
// (prepared or not) ran it.
func (st *Statement) ChangesSession() bool {
	_, ok := st.bound.(*plan.UseDatabase)
	return ok
}

// Session is the session the statement was prepared in.
func (st *Statement) Session() *Session { return st.s }

// Streaming reports whether the statement is a query over a change stream
// (a table hint with scan.mode): its result does not end on its own.
func (st *Statement) Streaming() bool {
	q, ok := st.bound.(*plan.Query)
	return ok && q.Streaming()
}

// Schema is the result schema of a query, or an empty schema for updates.
func (st *Statement) Schema() *arrow.Schema {
	switch b := st.bound.(type) {
	case *plan.Query:
		return b.Schema()
	case *plan.Explain:
		if b.Format == "SUBSTRAIT" {
			return substraitSchema
		}
		return explainSchema
	}
	return arrow.NewSchema(nil, nil)
}

// rowQuery is the query that produces a statement's rows: the query
// itself, or the rows a DML statement writes; nil for other statements.
func rowQuery(b plan.Statement) *plan.Query {
	switch b := b.(type) {
	case *plan.Query:
		return b
	case *plan.Insert:
		return b.Source
	case *plan.Delete:
		return b.Deleted
	case *plan.Update:
		return b.Updated
	}
	return nil
}

// ParamSchema describes the statement's parameters, or nil if it has none.
func (st *Statement) ParamSchema() *arrow.Schema {
	q := rowQuery(st.bound)
	if q == nil {
		return nil
	}
	return q.Params()
}

// Query starts a query statement and returns its unopened root operator.
// params holds one row per execution (nil or zero rows: no parameters); the
// results of several rows are concatenated in row order.
func (st *Statement) Query(ctx context.Context, params arrow.RecordBatch) (_ exec.Operator, err error) {
	defer recoverInternal(&err)
	if st.tx != nil && st.tx.ended() {
		// A client reusing a query prepared in a transaction that has
		// ended (ADBC's DB-API cursor keeps it for the same text across
		// commits) runs it outside, at the latest snapshots: what its
		// next transaction's first statement would read. Its ended
		// snapshots would be a stale answer.
		again, err := st.s.PrepareAST(ctx, st.ast, nil)
		if err != nil {
			return nil, err
		}
		return again.Query(ctx, params)
	}
	if st.tx != nil {
		done, err := st.tx.start()
		if err != nil {
			return nil, err
		}
		defer done()
	}
	for _, p := range st.pins {
		p.Reset() // this execution reads the snapshots latest now
	}
	if err := st.withOwnWrites(ctx); err != nil {
		return nil, err
	}
	ec := st.s.e.execContext()
	switch b := st.bound.(type) {
	case *plan.Query:
		return st.buildPerRow(ctx, ec, b, params)
	case *plan.Explain:
		// EXPLAIN ANALYZE ran the query to its end here.
		defer ec.ReleaseMemory()
		return st.explain(ctx, ec, b, params)
	}
	return nil, fmt.Errorf("statement does not return rows; execute it as an update: %w", ErrInvalid)
}

// buildPerRow builds q's operators; the statement's pool reservations
// are released when the operator returned closes, or here on error.
func (st *Statement) buildPerRow(ctx context.Context, ec *exec.Context, q *plan.Query, params arrow.RecordBatch) (exec.Operator, error) {
	op, _, err := st.buildPerRowAt(ctx, ec, q, params, false)
	return op, err
}

// buildPerRowAt is buildPerRow that also returns at, which wraps an error
// met while the rows of one parameter row are consumed (writing them, say)
// to name that row; with one execution it returns the error as it is.
// held: the caller holds its transaction's statement turn (tx.running)
// until the operator is drained, so later rows must not wait for it; a
// query's are built as its reader pulls them, after Query returned it.
func (st *Statement) buildPerRowAt(ctx context.Context, ec *exec.Context, q *plan.Query, params arrow.RecordBatch, held bool) (_ exec.Operator, at func(error) error, err error) {
	same := func(err error) error { return err }
	defer func() {
		if err != nil {
			ec.ReleaseMemory()
		}
	}()
	rows, err := paramRows(ctx, ec, q, params, q.BatchesParams())
	if err != nil {
		return nil, nil, err
	}
	build := func(row arrow.RecordBatch) (exec.Operator, error) {
		if row != nil {
			defer row.Release()
		}
		if st.part != nil {
			return st.part.Build(ec, row, st.partIndex)
		}
		return q.Build(ec, row)
	}
	// The first row's operators are built now, so that what fails for
	// every row fails here; the others' when their turn comes.
	first, err := build(rows[0])
	if err != nil {
		releaseBatches(rows[1:])
		if len(rows) > 1 {
			err = paramRowError(1, len(rows), err)
		}
		return nil, nil, err
	}
	if len(rows) == 1 {
		return releasing(ec, withSchema(first, q.Schema())), same, nil
	}
	later := func(row arrow.RecordBatch) (exec.Operator, error) {
		if st.tx != nil && !held {
			defer st.tx.running()()
		}
		return build(row)
	}
	p := &perRow{schema: q.Schema(), cur: withSchema(first, q.Schema()), rows: rows[1:], build: later, row: 1, total: len(rows)}
	return releasing(ec, p), p.at, nil
}

// paramRowError names the parameter row (1-based, of total) whose
// execution failed: each runs the statement's text, so the error itself
// names the text's rows (VALUES row 1), not the client's.
func paramRowError(row, total int, err error) error {
	return fmt.Errorf("parameter row %d of %d: %w", row, total, err)
}

// perRow concatenates the executions of a query for each parameter row,
// building a row's operators only when the previous row's are done: built
// all at once, 100,000 rows took 1.1 GB of operator trees, and the limit
// of bound rows is a million.
type perRow struct {
	schema *arrow.Schema
	cur    exec.Operator       // the current row's, nil between rows
	rows   []arrow.RecordBatch // owned: the rows still to run
	build  func(arrow.RecordBatch) (exec.Operator, error)
	opened bool
	// row is the parameter row (1-based) of cur or of the last batch
	// returned, of total.
	row, total int
	failed     bool // an error returned already names the row
}

// at names the current parameter row in an error met consuming its rows.
func (p *perRow) at(err error) error {
	if err == nil || p.failed {
		return err
	}
	return paramRowError(p.row, p.total, err)
}

// fail names the current parameter row in err, once.
func (p *perRow) fail(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	p.failed = true
	return paramRowError(p.row, p.total, err)
}

func (p *perRow) Schema() *arrow.Schema { return p.schema }

func (p *perRow) Open(ctx context.Context) error {
	if p.opened || p.cur == nil {
		return nil
	}
	p.opened = true
	return p.fail(p.cur.Open(ctx))
}

func (p *perRow) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if p.cur == nil {
			if len(p.rows) == 0 {
				return nil, io.EOF
			}
			row := p.rows[0]
			p.rows = p.rows[1:]
			p.row++
			op, err := p.build(row)
			if err != nil {
				return nil, p.fail(err)
			}
			p.cur = withSchema(op, p.schema)
			if err := p.cur.Open(ctx); err != nil {
				return nil, p.fail(err)
			}
		}
		b, err := exec.Next(ctx, p.cur)
		if !errors.Is(err, io.EOF) {
			if err != nil {
				err = p.fail(err)
			}
			return b, err
		}
		err = p.cur.Close()
		p.cur = nil
		if err != nil {
			return nil, p.fail(err)
		}
	}
}

func (p *perRow) Close() error {
	releaseBatches(p.rows)
	p.rows = nil
	if p.cur == nil {
		return nil
	}
	err := p.cur.Close()
	p.cur = nil
	return err
}

// releasing returns op whose Close also releases what its statement still
// holds in the memory pool: whether it ended, failed or was cancelled, or
// its client went away, nothing it reserved stays.
func releasing(ec *exec.Context, op exec.Operator) exec.Operator {
	if ec.Pool == nil {
		return op
	}
	return &releaseOnClose{Operator: op, ec: ec}
}

type releaseOnClose struct {
	exec.Operator
	ec *exec.Context
}

func (r *releaseOnClose) Close() error {
	err := r.Operator.Close()
	r.ec.ReleaseMemory()
	return err
}

// CheckParams reports whether params fit the statement's parameters, so a
// mismatch surfaces when the client executes, not when it fetches.
func (st *Statement) CheckParams(params arrow.RecordBatch) error {
	q, ok := st.bound.(*plan.Query)
	if !ok {
		return nil // updates and EXPLAIN are checked when they run, which is at once
	}
	return checkParams(q.Params(), params)
}

func checkParams(want *arrow.Schema, params arrow.RecordBatch) error {
	if want == nil || want.NumFields() == 0 {
		if params != nil && params.NumCols() > 0 {
			return fmt.Errorf("statement takes no parameters but %d were bound: %w", params.NumCols(), ErrInvalid)
		}
		return nil
	}
	if params == nil || params.NumRows() == 0 {
		return fmt.Errorf("statement takes %d parameters but none were bound: %w", want.NumFields(), ErrInvalid)
	}
	if int(params.NumCols()) != want.NumFields() {
		return fmt.Errorf("statement takes %d parameters but %d were bound: %w", want.NumFields(), params.NumCols(), ErrInvalid)
	}
	return nil
}

// paramRows splits the bound parameter batch into one-row batches (owned by
// the caller) of the parameters' types, or with batch keeps it whole (one
// execution reads every row); a statement without parameters runs once
// with nil.
func paramRows(ctx context.Context, ec *exec.Context, q *plan.Query, params arrow.RecordBatch, batch bool) ([]arrow.RecordBatch, error) {
	if err := checkParams(q.Params(), params); err != nil {
		return nil, err
	}
	if q.Params() == nil || q.Params().NumFields() == 0 {
		return []arrow.RecordBatch{nil}, nil
	}
	stored, err := storedParams(ec.Mem, params)
	if err != nil {
		return nil, err
	}
	params, err = q.ConvertParams(ctx, ec, stored)
	stored.Release()
	if err != nil {
		return nil, err
	}
	if batch {
		return []arrow.RecordBatch{params}, nil
	}
	defer params.Release()
	rows := make([]arrow.RecordBatch, params.NumRows())
	for i := range rows {
		rows[i] = params.NewSlice(int64(i), int64(i)+1)
	}
	return rows, nil
}

func releaseBatches(bs []arrow.RecordBatch) {
	for _, b := range bs {
		if b != nil {
			b.Release()
		}
	}
}

// drain pulls every batch of an operator through fn, then closes it.
func drain(ctx context.Context, op exec.Operator, fn func(arrow.RecordBatch) error) (err error) {
	defer func() {
		if cerr := op.Close(); err == nil {
			err = cerr
		}
	}()
	if err := op.Open(ctx); err != nil {
		return err
	}
	for {
		b, err := op.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
	}
}

// catalog resolves names for the binder within a session and transaction.
// With pins set (autocommit DML), every table is read at its latest
// snapshot as of its first lookup, recorded in pins, so the write can name
// the snapshot it was computed from. looked, if set, counts the lookups of
// each table. With pinned set, the handles of a table share one
// tablestore.Pin, kept there, so that the statement resolves the table's
// latest snapshot once for binding and planning, and once per execution.
// A table or view is looked up in the store once per catalog (a listing
// or a read on an object store, at every reference otherwise).
type catalog struct {
	s      *Session
	tx     *Txn
	db     string
	pins   map[tablestore.Ident]int64
	looked map[tablestore.Ident]int
	pinned map[tablestore.Ident]*tablestore.Pin
	tables map[tablestore.Ident]*tablestore.Table
	views  map[tablestore.Ident]viewLookup
	// reads are the transaction's writes the statement reads
	// (Txn.withOwnWrites), settled at each execution.
	reads []*tablestore.Write
	// jobDefs are the stored continuous jobs, read once per binding by
	// JobFeed (nil: not read yet, or none).
	jobDefs []tablestore.JobDef
	// opaque: binding read what Statement.Unchanged cannot check again
	// (listings of databases, tables or views, files, jobs, materialized
	// tables' state).
	opaque bool
}

// resolved records the tables and views the catalog resolved, each table
// at the snapshot its handle reads; nil when the catalog is opaque.
func (c *catalog) resolved(ctx context.Context) (*resolved, error) {
	if c.opaque {
		return nil, nil
	}
	r := &resolved{tables: make(map[tablestore.Ident]resolvedTable, len(c.tables)), views: c.views}
	for id, t := range c.tables {
		snap, err := t.LatestSnapshotID(ctx)
		if err != nil {
			return nil, err
		}
		r.tables[id] = resolvedTable{t, snap}
	}
	return r, nil
}

// viewLookup is the outcome of a catalog's lookup of a view name.
type viewLookup struct {
	def tablestore.ViewDef
	err error
}

var _ plan.Catalog = (*catalog)(nil)

func (c *catalog) CurrentDatabase() string { return c.db }

func (c *catalog) Table(ctx context.Context, id tablestore.Ident) (*tablestore.Table, int64, error) {
	if err := c.s.allow(id.Database, Read); err != nil {
		return nil, 0, err
	}
	t, err := c.table(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	if c.looked != nil {
		c.looked[t.Ident()]++
	}
	if c.pins != nil {
		// A statement binds a table once per reference (UPDATE twice):
		// every reference must read the snapshot the write is based on.
		if snap, ok := c.pins[t.Ident()]; ok {
			return t, snap, nil
		}
		snap, err := t.LatestSnapshotID(ctx)
		if err != nil {
			return nil, 0, err
		}
		c.pins[t.Ident()] = snap
		return t, snap, nil
	}
	if c.tx == nil {
		return t, 0, nil
	}
	snap, err := c.tx.snapshot(ctx, t)
	if err != nil {
		return nil, 0, err
	}
	w, err := c.tx.ownWrite(t)
	if err != nil {
		return nil, 0, err
	}
	if w != nil {
		if !slices.Contains(c.reads, w) {
			c.reads = append(c.reads, w)
		}
		t = t.WithWrite(w)
	}
	return t, snap, nil
}

// table opens table id once per catalog.
func (c *catalog) table(ctx context.Context, id tablestore.Ident) (*tablestore.Table, error) {
	if t, ok := c.tables[id]; ok {
		return t, nil
	}
	t, err := c.s.e.store.Table(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.pinned != nil {
		p := c.pinned[t.Ident()]
		if p == nil {
			p = &tablestore.Pin{}
			c.pinned[t.Ident()] = p
		}
		t = t.WithPin(p)
	}
	if c.tables == nil {
		c.tables = map[tablestore.Ident]*tablestore.Table{}
	}
	c.tables[id] = t
	return t, nil
}

func (c *catalog) Databases(ctx context.Context) ([]string, error) {
	c.opaque = true
	return c.s.e.store.Databases(ctx)
}

func (c *catalog) Tables(ctx context.Context, db string) ([]string, error) {
	c.opaque = true
	if err := c.s.allow(db, Read); err != nil {
		return nil, err
	}
	return c.s.e.store.Tables(ctx, db)
}

var _ plan.ViewCatalog = (*catalog)(nil)

func (c *catalog) View(ctx context.Context, id tablestore.Ident) (tablestore.ViewDef, error) {
	if err := c.s.allow(id.Database, Read); err != nil {
		return tablestore.ViewDef{}, err
	}
	if v, ok := c.views[id]; ok {
		return v.def, v.err
	}
	var def tablestore.ViewDef
	var err error
	if _, terr := c.table(ctx, id); terr == nil {
		// A name is a table or a view, never both (the store refuses to
		// create either over the other): the table's lookup, which its
		// binding needs anyway, answers for the view.
		err = fmt.Errorf("view %s: %w", id, tablestore.ErrViewNotFound)
	} else {
		def, err = c.s.e.store.View(ctx, id)
	}
	if c.views == nil {
		c.views = map[tablestore.Ident]viewLookup{}
	}
	c.views[id] = viewLookup{def, err}
	return def, err
}

func (c *catalog) Views(ctx context.Context, db string) ([]string, error) {
	c.opaque = true
	if err := c.s.allow(db, Read); err != nil {
		return nil, err
	}
	return c.s.e.store.Views(ctx, db)
}
