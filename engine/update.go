package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
)

// Exec runs a statement with side effects and returns the number of rows it
// wrote (0 for DDL). In autocommit mode the effect is durable when Exec
// returns; inside a transaction it is published by Commit. params holds one
// row per execution; their counts add up.
func (st *Statement) Exec(ctx context.Context, params arrow.RecordBatch) (_ int64, err error) {
	defer recoverInternal(&err)
	if st.tx != nil {
		done, err := st.tx.start()
		if err != nil {
			return 0, err
		}
		defer done()
	}
	if ins, ok := st.bound.(*plan.Insert); ok && ins.Source.Streaming() {
		// SHOW JOBS lists the job: an update count cannot carry its id.
		_, err := st.startJob(ctx)
		return 0, err
	}
	if err := st.withOwnWrites(ctx); err != nil {
		return 0, err
	}
	bound, rmw, base, err := st.bindForWrite(ctx)
	if err != nil {
		return 0, err
	}
	read := tablestore.WriteOptions{ReadModifyWrite: rmw, BaseSnapshot: base}
	switch b := bound.(type) {
	case *plan.Query, *plan.Explain:
		return 0, fmt.Errorf("statement returns rows; execute it as a query: %w", ErrInvalid)
	case *plan.Insert:
		opts := read
		opts.Overwrite, opts.OverwritePartition, opts.DynamicPartitionOverwrite = b.Overwrite, b.Partition, b.DynamicOverwrite
		return st.write(ctx, b.Table, b.Source, params, opts, tablestore.Insert)
	case *plan.Delete:
		if len(b.Table.PrimaryKey()) > 0 {
			return st.write(ctx, b.Table, b.Deleted, params, read, tablestore.Delete)
		}
		return st.rewrite(ctx, b.Table, b.Deleted, b.Kept, params, read)
	case *plan.Update:
		if len(b.Table.PrimaryKey()) > 0 {
			return st.write(ctx, b.Table, b.Updated, params, read, tablestore.UpdateAfter)
		}
		return st.rewrite(ctx, b.Table, b.Updated, b.All, params, read)
	case *plan.Merge:
		return st.merge(ctx, b, params, read)
	case *plan.CopyFrom:
		return st.copyFrom(ctx, b)
	case *plan.CopyTo:
		return st.copyTo(ctx, b, params)
	}
	if params != nil && params.NumCols() > 0 {
		return 0, fmt.Errorf("statement takes no parameters: %w", ErrInvalid)
	}
	if c, ok := bound.(*plan.CallProcedure); ok {
		return call(ctx, c)
	}
	return 0, st.ddl(ctx)
}

// bindForWrite returns the statement to run and whether it is a
// read-modify-write (UPDATE, DELETE, or an INSERT whose source reads its
// target), with the snapshot of the target its rows are computed from.
// Outside a transaction such a statement is bound again at each execution
// with every table pinned at its latest snapshot, once per table, so that
// all its reads of the target see that snapshot: the write commits only if
// no commit since wrote one of its keys, so two concurrent read-modify-writes
// cannot lose an update (one gets tablestore.ErrSerialization). Inside a
// transaction its tables are read at the transaction's snapshots. Other
// statements keep their prepared binding.
func (st *Statement) bindForWrite(ctx context.Context) (plan.Statement, bool, int64, error) {
	var target *tablestore.Table
	switch b := st.bound.(type) {
	case *plan.Insert:
		if st.readsTarget {
			target = b.Table
		}
	case *plan.Delete:
		target = b.Table
	case *plan.Update:
		target = b.Table
	case *plan.Merge:
		target = b.Table
	}
	if target == nil {
		return st.bound, false, 0, nil
	}
	if st.tx != nil {
		snap, err := st.tx.snapshot(ctx, target)
		return st.bound, true, snap, err
	}
	cat := &catalog{s: st.s, db: st.s.Database(), pins: map[tablestore.Ident]int64{}}
	bound, err := st.s.bind(ctx, st.ast, cat)
	if err != nil {
		return nil, false, 0, err
	}
	return bound, true, cat.pins[target.Ident()], nil
}

func (st *Statement) ddl(ctx context.Context) error {
	if done, err := st.materializedDDL(ctx); done {
		return err
	}
	store := st.s.e.store
	switch b := st.bound.(type) {
	case *plan.CreateTable:
		if _, err := store.View(ctx, b.Ident); err == nil {
			return fmt.Errorf("create table %s: a view of that name exists: %w", b.Ident, tablestore.ErrViewExists)
		}
		if b.As == nil && !b.OrReplace {
			_, err := store.CreateTable(ctx, b.Ident, b.Def, b.IfNotExists)
			return err
		}
		return st.stageTable(ctx, b)
	case *plan.DropTable:
		err := store.DropTable(ctx, b.Ident, b.IfExists)
		if errors.Is(err, tablestore.ErrTableNotFound) {
			if _, verr := store.View(ctx, b.Ident); verr == nil {
				return fmt.Errorf("drop table %s: it is a view; use DROP VIEW: %w", b.Ident, err)
			}
		}
		return err
	case *plan.CreateView:
		err := store.CreateView(ctx, b.Ident, b.Def, b.OrReplace)
		if b.IfNotExists && errors.Is(err, tablestore.ErrViewExists) {
			return nil
		}
		return err
	case *plan.DropView:
		err := store.DropView(ctx, b.Ident, b.IfExists)
		if errors.Is(err, tablestore.ErrViewNotFound) {
			if _, terr := store.Table(ctx, b.Ident); terr == nil {
				return fmt.Errorf("drop view %s: it is a table; use DROP TABLE: %w", b.Ident, err)
			}
		}
		return err
	case *plan.AlterTable:
		return store.AlterTable(ctx, b.Ident, b.Changes...)
	case *plan.CreateDatabase:
		return store.CreateDatabaseWith(ctx, b.Name, b.IfNotExists, b.Options)
	case *plan.AlterDatabase:
		return store.SetDatabaseOptions(ctx, b.Name, b.Options)
	case *plan.DropDatabase:
		if !b.Cascade {
			// The store counts tables only; views make a database non-empty too.
			if views, err := store.Views(ctx, b.Name); err == nil && len(views) > 0 {
				return fmt.Errorf("%w: database %q is not empty (%d views); use CASCADE", ErrInvalid, b.Name, len(views))
			}
		}
		if b.Cascade {
			stopped, err := st.s.e.stopJobsWritingTo(ctx, b.Name)
			defer st.s.e.releaseUnwanted(ctx, stopped)
			if err != nil {
				return err
			}
		}
		return store.DropDatabase(ctx, b.Name, b.IfExists, b.Cascade)
	case *plan.UseDatabase:
		return st.s.SetDatabase(ctx, b.Name)
	case *plan.StopJob:
		return st.s.e.StopJob(ctx, b.ID)
	case *plan.Transaction:
		// The endpoint runs them (Statement.TxnControl) in its session.
		return fmt.Errorf("%s outside a client session: %w", TxnControl(b.Kind), ErrNotSupported)
	}
	return fmt.Errorf("statement %T: %w", st.bound, ErrNotSupported)
}

// DefaultOrphanAge is how old an unreferenced file must be before
// sys.remove_orphan_files removes it without an older_than (Paimon's one
// day): younger ones may belong to a commit still in flight.
const DefaultOrphanAge = 24 * time.Hour

// call runs a maintenance procedure; the count is what it did (snapshots
// expired, orphan files removed), or 1.
func call(ctx context.Context, c *plan.CallProcedure) (int64, error) {
	t := c.Table
	done := 1
	var err error
	switch c.Proc {
	case "sys.reset_consumer":
		if c.Snapshot == 0 {
			err = t.DeleteConsumer(ctx, c.Consumer)
			break
		}
		// A position past the next snapshot would skip the commits before
		// it without a word: the consumer waited for snapshot N while the
		// table's new commits went by.
		var latest int64
		if latest, err = t.LatestSnapshotID(ctx); err != nil {
			break
		}
		if c.Snapshot > latest+1 {
			return 0, fmt.Errorf("%s: consumer %q: next snapshot %d is past the table's next one, %d (its latest is %d): %w", c.Proc, c.Consumer, c.Snapshot, latest+1, latest, ErrInvalid)
		}
		err = t.SetConsumer(ctx, c.Consumer, c.Snapshot)
	case "sys.create_tag":
		err = t.CreateTag(ctx, c.Tag, c.Snapshot)
	case "sys.delete_tag":
		err = t.DeleteTag(ctx, c.Tag)
	case "sys.expire_snapshots":
		done, err = t.ExpireSnapshotsWith(ctx, c.Expire)
	case "sys.remove_orphan_files":
		guard := DefaultOrphanAge
		if !c.OlderThan.IsZero() {
			if guard = time.Since(c.OlderThan); guard < 0 {
				return 0, fmt.Errorf("%s: older_than %s is in the future: %w", c.Proc, c.OlderThan, ErrInvalid)
			}
		}
		done, err = t.RemoveOrphanFiles(ctx, guard)
	case "sys.compact":
		err = t.Compact(ctx, true)
	default:
		return 0, fmt.Errorf("procedure %s: %w", c.Proc, ErrNotSupported)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.Proc, err)
	}
	return int64(done), nil
}

// stageTable runs CREATE TABLE ... AS and CREATE OR REPLACE TABLE: the
// table is published with its rows in one commit
// (tablestore.Store.StageTable), so readers see the old table or the new
// one, and a failed or interrupted statement leaves the catalog as it was.
// Like all DDL it commits at once, also inside a transaction.
func (st *Statement) stageTable(ctx context.Context, b *plan.CreateTable) error {
	if len(st.reads) > 0 {
		// It commits at once, outside the transaction, which may still
		// roll back the rows it would copy.
		return fmt.Errorf("create table %s: its query reads %s, written by this transaction and not committed: commit first: %w",
			b.Ident, st.reads[0].Table().Ident(), ErrNotSupported)
	}
	w, err := st.s.e.store.StageTable(ctx, b.Ident, b.Def, b.OrReplace)
	switch {
	case err != nil:
	case b.As == nil:
		_, err = w.Commit(ctx)
	default:
		_, err = st.commitFrom(ctx, w, b.As, nil, tablestore.Insert)
	}
	if b.IfNotExists && errors.Is(err, tablestore.ErrTableExists) {
		return nil
	}
	return err
}

// rewrite runs DELETE/UPDATE on a table without a primary key: the rows
// that remain (all) replace the table atomically; affected counts the rows
// the statement touched.
func (st *Statement) rewrite(ctx context.Context, t *tablestore.Table, affected, all *plan.Query, params arrow.RecordBatch, read tablestore.WriteOptions) (int64, error) {
	var n int64
	count := func(b arrow.RecordBatch) error { n += b.NumRows(); return nil }
	if err := st.pull(ctx, affected, params, count); err != nil {
		return 0, err
	}
	read.Overwrite = true
	if _, err := st.write(ctx, t, all, params, read, tablestore.Insert); err != nil {
		return 0, err
	}
	return n, nil
}

// write streams source's rows, all of one row kind, into t: into the
// transaction's buffered write, or into a fresh write committed here.
func (st *Statement) write(ctx context.Context, t *tablestore.Table, source *plan.Query, params arrow.RecordBatch,
	opts tablestore.WriteOptions, kind tablestore.RowKind) (int64, error) {
	return st.writeRows(ctx, t, source, params, opts, ofKind(ctx, kind))
}

// putRows writes one batch of a statement's rows into w.
type putRows func(w *tablestore.Write, b arrow.RecordBatch) error

// ofKind writes every row with kind.
func ofKind(ctx context.Context, kind tablestore.RowKind) putRows {
	return func(w *tablestore.Write, b arrow.RecordBatch) error { return w.Write(ctx, b, kind) }
}

// writeRows is write with put deciding how each batch is written.
func (st *Statement) writeRows(ctx context.Context, t *tablestore.Table, source *plan.Query, params arrow.RecordBatch,
	opts tablestore.WriteOptions, put putRows) (int64, error) {
	if st.tx == nil {
		return st.commitRows(ctx, t.NewWrite(opts), source, params, put)
	}
	w, err := st.tx.write(t, opts)
	if err != nil {
		return 0, err
	}
	var n int64
	err = st.pull(ctx, source, params, func(b arrow.RecordBatch) error {
		n += b.NumRows()
		return put(w, b)
	})
	if err != nil {
		// Part of the statement may already be buffered: the transaction
		// can only be rolled back now.
		st.tx.fail(err)
		return 0, err
	}
	return n, nil
}

// commitFrom streams source's rows into w and commits them.
func (st *Statement) commitFrom(ctx context.Context, w *tablestore.Write, source *plan.Query, params arrow.RecordBatch, kind tablestore.RowKind) (int64, error) {
	return st.commitRows(ctx, w, source, params, ofKind(ctx, kind))
}

func (st *Statement) commitRows(ctx context.Context, w *tablestore.Write, source *plan.Query, params arrow.RecordBatch, put putRows) (int64, error) {
	var n int64
	err := st.pull(ctx, source, params, func(b arrow.RecordBatch) error {
		n += b.NumRows()
		return put(w, b)
	})
	if err != nil {
		w.Abort()
		return 0, err
	}
	if _, err := w.Commit(ctx); err != nil {
		return 0, err
	}
	return n, nil
}

func (st *Statement) pull(ctx context.Context, q *plan.Query, params arrow.RecordBatch, fn func(arrow.RecordBatch) error) error {
	op, at, err := st.buildPerRowAt(ctx, st.s.e.execContext(), q, params, true) // under Exec, which holds its transaction's turn
	if err != nil {
		return err
	}
	return drain(ctx, op, func(b arrow.RecordBatch) error { return at(fn(b)) })
}
