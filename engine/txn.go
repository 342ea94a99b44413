package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
)

// Txn is an explicit transaction. Reads see each table as of the start of
// the transaction's first statement, with the transaction's own writes
// (ownWrite); writes are buffered and published by Commit.
type Txn struct {
	id string
	// begin is the start of the first statement, as PostgreSQL takes a
	// transaction's snapshot, not BEGIN's: a client that begins at once
	// (ADBC with autocommit off begins when it connects, and after each
	// commit) and sits idle reads what was committed before it asks.
	begin time.Time

	// stmt serializes the transaction's statements and its end: they
	// share its buffered writes (a tablestore.Write is not safe for
	// concurrent use), and a client may send several at once. Taken
	// before mu.
	stmt sync.Mutex

	mu        sync.Mutex
	done      bool
	failed    error // a statement failed half-way; only rollback is left
	snapshots map[tablestore.Ident]int64
	holds     []func() // release the snapshots held from expiry
	writes    map[tablestore.Ident]*txnWrite
	order     []tablestore.Ident // commit order = order of first write
}

// tables counts the tables the transaction writes: a statement bound
// when it wrote fewer reads some of them without its own writes
// (ownWrite wraps the tables written at binding), so it binds again.
func (tx *Txn) tables() int {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return len(tx.order)
}

type txnWrite struct {
	w         *tablestore.Write
	overwrite bool
}

// Begin starts a transaction.
func (e *Engine) Begin() *Txn {
	var b [16]byte
	_, _ = rand.Read(b[:])
	tx := &Txn{
		id:        hex.EncodeToString(b[:]),
		snapshots: make(map[tablestore.Ident]int64),
		writes:    make(map[tablestore.Ident]*txnWrite),
	}
	e.mu.Lock()
	e.txns[tx.id] = tx
	e.mu.Unlock()
	return tx
}

// ID is the opaque id clients send back with their statements.
func (tx *Txn) ID() string { return tx.id }

// TxnControl is a transaction statement given as SQL text.
type TxnControl int

// The transaction statements, in plan.TxnKind's order.
const (
	TxnBegin TxnControl = iota
	TxnCommit
	TxnRollback
)

func (c TxnControl) String() string { return [...]string{"BEGIN", "COMMIT", "ROLLBACK"}[c] }

// TxnControl reports whether the statement is BEGIN, COMMIT or ROLLBACK.
// The endpoint runs those: the transactions of its clients' sessions are
// its to keep.
func (st *Statement) TxnControl() (TxnControl, bool) {
	t, ok := st.bound.(*plan.Transaction)
	if !ok {
		return 0, false
	}
	return TxnControl(t.Kind), true
}

// Txn is the transaction the statement runs in (nil: autocommit).
func (st *Statement) Txn() *Txn { return st.tx }

// In returns the statement bound to run in tx (nil: autocommit): st when
// it is, else the same statement bound again. A client's current
// transaction changes under a statement it keeps prepared.
func (st *Statement) In(ctx context.Context, tx *Txn) (*Statement, error) {
	if st.tx == tx {
		return st, nil
	}
	return st.s.PrepareAST(ctx, st.ast, tx)
}

// Txn finds an open transaction by id.
func (e *Engine) Txn(id string) (*Txn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, ok := e.txns[id]
	if !ok {
		return nil, fmt.Errorf("transaction %q: %w", id, ErrTxnNotFound)
	}
	return tx, nil
}

// Commit publishes the transaction's writes: all, or none if one of them
// conflicts, except with a conflicting commit of another process landing
// mid-way (tablestore.CommitAll).
func (e *Engine) Commit(ctx context.Context, id string) error {
	tx, err := e.take(id)
	if err != nil {
		return err
	}
	defer tx.running()()
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.done = true
	if tx.failed != nil {
		tx.abortWrites()
		return fmt.Errorf("transaction rolled back: %w (an earlier statement failed: %v)", ErrTxnAborted, tx.failed)
	}
	ws := make([]*tablestore.Write, len(tx.order))
	for i, ident := range tx.order {
		ws[i] = tx.writes[ident].w
	}
	defer tx.releaseSnapshots()
	if _, err := tablestore.CommitAll(ctx, ws); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// Rollback drops the transaction's writes.
func (e *Engine) Rollback(id string) error {
	tx, err := e.take(id)
	if err != nil {
		return err
	}
	tx.rollback()
	return nil
}

func (e *Engine) take(id string) (*Txn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, ok := e.txns[id]
	if !ok {
		return nil, fmt.Errorf("transaction %q: %w", id, ErrTxnNotFound)
	}
	delete(e.txns, id)
	return tx, nil
}

// running waits for the transaction's statement in progress, if any, and
// returns the func that lets the next one run. The first statement's
// start is the transaction's begin.
func (tx *Txn) running() (done func()) {
	tx.stmt.Lock()
	tx.mu.Lock()
	tx.beginLocked()
	tx.mu.Unlock()
	return tx.stmt.Unlock
}

// start is running for a statement: it refuses one the transaction no
// longer runs (refusal).
func (tx *Txn) start() (done func(), err error) {
	done = tx.running()
	if err := tx.refusal(); err != nil {
		done()
		return nil, err
	}
	return done, nil
}

// ended reports whether the transaction was committed or rolled back.
func (tx *Txn) ended() bool {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return tx.done
}

// refusal is why the transaction runs no more statements, nil while it
// does: it ended (a write prepared in it would commit on its own; a query
// runs outside it, Statement.Query), or a write statement failed
// half-way in it, whose buffered writes hold part of that statement's
// rows.
func (tx *Txn) refusal() error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	switch {
	case tx.done:
		return fmt.Errorf("transaction %s has ended (committed or rolled back); a write prepared in it runs in no other: prepare it again: %w", tx.id, ErrTxnNotFound)
	case tx.failed != nil:
		return fmt.Errorf("%w (an earlier statement failed: %v)", ErrTxnAborted, tx.failed)
	}
	return nil
}

// beginLocked sets the transaction's begin at its first statement (a
// prepared statement binds before it runs: binding starts it too). tx.mu
// is held.
func (tx *Txn) beginLocked() {
	if tx.begin.IsZero() {
		tx.begin = time.Now()
	}
}

func (tx *Txn) rollback() {
	defer tx.running()()
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.done = true
	tx.abortWrites()
}

// abortWrites drops the buffered writes; tx.mu is held.
func (tx *Txn) abortWrites() {
	for _, ident := range tx.order {
		tx.writes[ident].w.Abort()
	}
	tx.releaseSnapshots()
}

// releaseSnapshots lets expiry take the snapshots the transaction read;
// tx.mu is held.
func (tx *Txn) releaseSnapshots() {
	for _, release := range tx.holds {
		release()
	}
	tx.holds = nil
}

func (tx *Txn) fail(err error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.failed == nil {
		tx.failed = err
	}
}

// snapshot pins the snapshot a table is read at within the transaction:
// the one current at the transaction's begin, held from expiry until the
// transaction ends.
func (tx *Txn) snapshot(ctx context.Context, t *tablestore.Table) (int64, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if id, ok := tx.snapshots[t.Ident()]; ok {
		return id, nil
	}
	if tx.done {
		// A hold taken now would never be released.
		return 0, fmt.Errorf("transaction %s has ended: %w", tx.id, ErrTxnNotFound)
	}
	tx.beginLocked()
	for {
		id, release, err := holdAsOf(ctx, t, tx.begin)
		if errors.Is(err, tablestore.ErrSnapshotExpired) {
			if len(tx.snapshots) == 0 {
				// Nothing read yet: the transaction may as well begin now.
				tx.begin = time.Now()
				continue
			}
			return 0, fmt.Errorf("its snapshot as of the transaction's start was expired (snapshot retention): %w", tablestore.ErrSerialization)
		}
		if err != nil {
			return 0, err
		}
		tx.snapshots[t.Ident()] = id
		if release != nil {
			tx.holds = append(tx.holds, release)
		}
		return id, nil
	}
}

// holdAsOf holds from expiry the snapshot of t current at ts; id 0, held
// by nothing, when t had none then (0 reads the latest snapshot, and as
// a write's base conflicts with every key written since).
func holdAsOf(ctx context.Context, t *tablestore.Table, ts time.Time) (id int64, release func(), err error) {
	id, err = t.SnapshotAsOf(ctx, ts)
	switch {
	case errors.Is(err, tablestore.ErrSnapshotExpired):
		return 0, nil, err
	case errors.Is(err, tablestore.ErrSnapshotNotFound):
		return 0, nil, nil
	case err != nil:
		return 0, nil, err
	}
	release, err = t.Hold(id) // expiry may have removed it since the lookup
	return id, release, err
}

// ownWrite is the transaction's write to t, not yet committed, which a
// statement reading t reads too (tablestore.Table.WithWrite), so that it
// sees the writes of the statements before it, as the standard and every
// SQL database have it (two UPDATEs of one row add up); nil if it has
// not written t. A table the transaction overwrote cannot be read: the
// overwrite replaces rows of the snapshot the read would still see.
func (tx *Txn) ownWrite(t *tablestore.Table) (*tablestore.Write, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tw, ok := tx.writes[t.Ident()]
	if !ok {
		return nil, nil
	}
	if tw.overwrite {
		return nil, fmt.Errorf("a transaction cannot read a table after overwriting it (INSERT OVERWRITE, or DELETE/UPDATE of a table without primary key): %w", ErrNotSupported)
	}
	return tw.w, nil
}

// write returns the transaction's buffered write for a table, a
// read-modify-write of the transaction's snapshot of it once a statement
// read it (opts.ReadModifyWrite). A table is either appended to or
// overwritten within one transaction, not both: an overwrite computed from
// the pinned snapshot would drop earlier writes.
func (tx *Txn) write(t *tablestore.Table, opts tablestore.WriteOptions) (*tablestore.Write, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.done {
		return nil, fmt.Errorf("transaction %s has ended: %w", tx.id, ErrTxnNotFound)
	}
	if tw, ok := tx.writes[t.Ident()]; ok {
		if tw.overwrite != opts.Overwrite || opts.Overwrite {
			return nil, fmt.Errorf("table %s: a transaction cannot combine an overwrite (INSERT OVERWRITE, or DELETE/UPDATE of a table without primary key) with other writes to the same table: %w",
				identString(t.Ident()), ErrNotSupported)
		}
		if opts.ReadModifyWrite {
			tw.w.ReadFrom(opts.BaseSnapshot)
		}
		return tw.w, nil
	}
	w := t.NewWrite(opts)
	tx.writes[t.Ident()] = &txnWrite{w: w, overwrite: opts.Overwrite}
	tx.order = append(tx.order, t.Ident())
	return w, nil
}

func identString(id tablestore.Ident) string { return id.Database + "." + id.Table }
