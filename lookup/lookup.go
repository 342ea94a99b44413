// Package lookup answers batched point lookups by primary key on a table of
// the table store: the rows of a batch of keys, in input order, with a
// found flag per key, at the latest snapshot (or a pinned one).
//
// An Index follows its table. It holds a scan of the latest snapshot (the
// lease keeps that snapshot's files) and reads keys through
// tablestore.Scan.Lookup: key-range and row-group pruning, binary search in
// each sorted run, versions merged by the table's merge engine. A commit of
// this process closes the table's Published channel, and a lookup asking
// for a newer snapshot (one another process committed) shows it behind;
// the next lookup then moves the index to the latest snapshot, and deletes from the cache the keys
// the commits in between wrote (tablestore.Table.ChangedKeys; all of them
// after an overwrite or an unreadable commit). Lookups run under a shared
// lock and the move under the exclusive one, so a lookup reads one snapshot
// whole, and one that starts after a commit was acknowledged sees it.
package lookup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/cache"
	"github.com/flightd/flightd/tablestore"
)

// FoundColumn is the name of the last column of a lookup's result.
const FoundColumn = "found"

// Index answers lookups on one primary-key table. Safe for concurrent use.
type Index struct {
	t      *tablestore.Table
	opts   Options
	mem    memory.Allocator
	keys   []string
	keyIdx []int

	// mu is held shared by lookups and exclusively while the index moves
	// to a new snapshot.
	mu        sync.RWMutex
	scan      *tablestore.Scan
	published <-chan struct{}
	rows      *cache.Rows[row] // nil with CacheNone; a nil row: the key is missing
}

// Check reports why lookups cannot read table t (no primary key, a column
// type rows cannot hold), or nil.
func Check(t *tablestore.Table) error {
	if len(t.PrimaryKey()) == 0 {
		return fmt.Errorf("%w: table %s has no primary key: lookups need one", tablestore.ErrInvalid, t.Ident())
	}
	if err := checkTypes(t.Schema()); err != nil {
		return fmt.Errorf("%w: table %s: %v", tablestore.ErrInvalid, t.Ident(), err)
	}
	return nil
}

// Open makes an index of table t at its latest snapshot.
func Open(ctx context.Context, t *tablestore.Table, mem memory.Allocator, opts Options) (*Index, error) {
	if err := Check(t); err != nil {
		return nil, err
	}
	keys := t.PrimaryKey()
	x := &Index{t: t, opts: opts, mem: mem, keys: keys}
	for _, k := range keys {
		x.keyIdx = append(x.keyIdx, t.Schema().FieldIndices(k)[0])
	}
	if opts.Cache != CacheNone {
		bound := opts.MaxBytes
		if opts.MaxRows > 0 {
			bound = opts.MaxRows
		}
		c, err := cache.NewRows[row](bound, opts.ExpireAfterWrite)
		if err != nil {
			return nil, err
		}
		x.rows = c
	}
	x.published = t.Published()
	scan, err := t.NewScan(ctx, tablestore.ScanSpec{})
	if err != nil {
		x.Close()
		return nil, err
	}
	x.scan = scan
	if opts.Cache == CacheFull {
		if err := x.load(ctx); err != nil {
			x.Close()
			return nil, err
		}
	}
	return x, nil
}

// Close releases the index's snapshot and cache.
func (x *Index) Close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.scan != nil {
		x.scan.Close()
		x.scan = nil
	}
	if x.rows != nil {
		x.rows.Close()
		x.rows = nil
	}
}

// Table is the table the index reads.
func (x *Index) Table() *tablestore.Table { return x.t }

// CacheStats reports the row cache's hits and misses.
func (x *Index) CacheStats() cache.Stats {
	if x.rows == nil {
		return cache.Stats{}
	}
	return x.rows.Stats()
}

// load puts every row of the index's snapshot into the cache.
func (x *Index) load(ctx context.Context) error {
	var key []byte
	for _, sp := range x.scan.Splits() {
		r, err := sp.Open(ctx)
		if err != nil {
			return err
		}
		err = eachBatch(ctx, r, func(b arrow.RecordBatch) {
			keys := make([]arrow.Array, len(x.keyIdx))
			for c, i := range x.keyIdx {
				keys[c] = b.Column(i)
			}
			for i := range int(b.NumRows()) {
				key = tablestore.AppendKey(key[:0], keys, i)
				r, size := rowAt(b.Columns(), i)
				x.set(x.rows, string(key), r, size)
			}
		})
		if err != nil {
			return err
		}
	}
	x.rows.Wait()
	return nil
}

func eachBatch(ctx context.Context, r tablestore.BatchReader, fn func(arrow.RecordBatch)) error {
	defer r.Close()
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(b)
	}
}

// Request is one batch of lookups.
type Request struct {
	// Keys are the key columns in KeyColumns order, of the table's stored
	// types, one key per row. A key with a NULL is not found.
	Keys []arrow.Array
	// Columns are the table's columns to return (schema indexes, in
	// output order); nil returns all.
	Columns []int
	// SnapshotID pins a snapshot (not cached); 0 reads the latest.
	SnapshotID int64
}

// OutputSchema is the schema of the results of lookups of columns (nil:
// all): the columns, nullable, then FoundColumn.
func (x *Index) OutputSchema(columns []int) *arrow.Schema {
	s := x.t.Schema()
	if columns == nil {
		columns = allColumns(s)
	}
	fields := make([]arrow.Field, 0, len(columns)+1)
	for _, c := range columns {
		f := s.Field(c)
		f.Nullable = true
		fields = append(fields, f)
	}
	fields = append(fields, arrow.Field{Name: FoundColumn, Type: arrow.FixedWidthTypes.Boolean})
	return arrow.NewSchema(fields, nil)
}

func allColumns(s *arrow.Schema) []int {
	cols := make([]int, s.NumFields())
	for i := range cols {
		cols[i] = i
	}
	return cols
}

// Lookup returns, per key of req in input order, the row (NULLs when
// missing) and whether it was found, and the snapshot read. The caller
// releases the batch.
func (x *Index) Lookup(ctx context.Context, req Request) (arrow.RecordBatch, int64, error) {
	if err := x.check(req); err != nil {
		return nil, 0, err
	}
	if req.Columns == nil {
		req.Columns = allColumns(x.t.Schema())
	}
	if err := x.refresh(ctx, req.SnapshotID); err != nil {
		return nil, 0, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.scan == nil {
		return nil, 0, fmt.Errorf("%w: lookup index of %s is closed", tablestore.ErrInvalid, x.t.Ident())
	}
	if req.SnapshotID != 0 && req.SnapshotID != x.scan.SnapshotID() {
		scan, err := x.t.NewScan(ctx, tablestore.ScanSpec{SnapshotID: req.SnapshotID})
		if err != nil {
			return nil, 0, err
		}
		defer scan.Close()
		out, err := x.lookup(ctx, scan, nil, req)
		return out, scan.SnapshotID(), err
	}
	out, err := x.lookup(ctx, x.scan, x.rows, req)
	return out, x.scan.SnapshotID(), err
}

func (x *Index) check(req Request) error {
	s := x.t.Schema()
	if len(req.Keys) != len(x.keys) {
		return fmt.Errorf("%w: lookup on %s: %d key columns given, the primary key (%v) has %d", tablestore.ErrInvalid, x.t.Ident(), len(req.Keys), x.keys, len(x.keys))
	}
	for c, i := range x.keyIdx {
		want := s.Field(i).Type
		if got := req.Keys[c].DataType(); !arrow.TypeEqual(got, want) {
			return fmt.Errorf("%w: lookup on %s: key column %d (%s) is %s, the table stores %s", tablestore.ErrInvalid, x.t.Ident(), c+1, x.keys[c], got, want)
		}
		if req.Keys[c].Len() != req.Keys[0].Len() {
			return fmt.Errorf("%w: lookup on %s: key column %d (%s) has %d rows, column 1 has %d", tablestore.ErrInvalid, x.t.Ident(), c+1, x.keys[c], req.Keys[c].Len(), req.Keys[0].Len())
		}
	}
	for _, c := range req.Columns {
		if c < 0 || c >= s.NumFields() {
			return fmt.Errorf("%w: lookup on %s: no column %d", tablestore.ErrInvalid, x.t.Ident(), c)
		}
	}
	return nil
}

// refresh moves the index to the latest snapshot if a commit was published
// since it last moved, or if a lookup asks for a snapshot newer than the
// index's (another process committed it: Published follows this process's
// commits only).
func (x *Index) refresh(ctx context.Context, want int64) error {
	x.mu.RLock()
	ch, behind := x.published, x.scan != nil && want > x.scan.SnapshotID()
	x.mu.RUnlock()
	if !behind {
		select {
		case <-ch:
		default:
			return nil
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.scan == nil || x.published != ch && want <= x.scan.SnapshotID() {
		return nil // another lookup moved it
	}
	next := x.t.Published()
	scan, err := x.t.NewScan(ctx, tablestore.ScanSpec{})
	if err != nil {
		return err
	}
	if x.rows != nil {
		x.invalidate(ctx, x.scan.SnapshotID(), scan.SnapshotID())
	}
	x.scan.Close()
	x.scan, x.published = scan, next
	return nil
}

// invalidate deletes from the cache the keys snapshots (from, to] wrote.
func (x *Index) invalidate(ctx context.Context, from, to int64) {
	for id := from + 1; id <= to; id++ {
		all, err := x.t.ChangedKeys(ctx, id, func(k []byte) { x.rows.Del(string(k)) })
		if all || err != nil {
			// Unknown or wholesale changes (an overwrite, or a commit
			// expired before it was read): nothing cached is known good.
			x.rows.Clear()
			return
		}
	}
	// Sets of lookups before the move are buffered ahead of the Dels: wait
	// until both are applied, so no stale row appears after the move.
	x.rows.Wait()
}

// lookup reads req's keys at scan through the cache c (nil: none).
func (x *Index) lookup(ctx context.Context, scan *tablestore.Scan, c *cache.Rows[row], req Request) (arrow.RecordBatch, error) {
	n := req.Keys[0].Len()
	vals := make([]row, n)
	found := make([]bool, n)
	encs := make([]string, n)
	var miss []int
	var buf []byte
	for i := range n {
		if nullKey(req.Keys, i) {
			continue
		}
		buf = tablestore.AppendKey(buf[:0], req.Keys, i)
		encs[i] = string(buf)
		if c != nil {
			if r, ok := c.Get(encs[i]); ok {
				vals[i], found[i] = r, r != nil
				continue
			}
		}
		miss = append(miss, i)
	}
	if len(miss) > 0 {
		if err := x.read(ctx, scan, c, req.Keys, miss, encs, vals, found); err != nil {
			return nil, err
		}
	}
	return x.assemble(req.Columns, vals, found), nil
}

func nullKey(keys []arrow.Array, i int) bool {
	for _, k := range keys {
		if k.IsNull(i) {
			return true
		}
	}
	return false
}

// read looks up the rows miss of keys in the store and caches what it finds
// (and, with CacheMissingKey, what it does not).
func (x *Index) read(ctx context.Context, scan *tablestore.Scan, c *cache.Rows[row], keys []arrow.Array, miss []int, encs []string, vals []row, found []bool) error {
	sub := keys
	if len(miss) < keys[0].Len() {
		var err error
		if sub, err = take(ctx, x.mem, keys, miss); err != nil {
			return err
		}
		defer func() {
			for _, a := range sub {
				a.Release()
			}
		}()
	}
	rows, idx, err := scan.Lookup(ctx, sub)
	if err != nil {
		return err
	}
	defer rows.Release()
	copied := map[int]row{}
	for j, i := range miss {
		r := idx[j]
		if r < 0 {
			if c != nil && x.opts.CacheMissingKey {
				x.set(c, encs[i], nil, 0)
			}
			continue
		}
		v, ok := copied[r]
		if !ok {
			var size int64
			v, size = rowAt(rows.Columns(), r)
			copied[r] = v
			if c != nil {
				x.set(c, encs[i], v, size)
			}
		}
		vals[i], found[i] = v, true
	}
	return nil
}

// set caches r (nil: the key is missing) at its cost in the cache's unit.
func (x *Index) set(c *cache.Rows[row], key string, r row, size int64) {
	cost := int64(1)
	if x.opts.MaxRows == 0 {
		cost = size + int64(len(key)) + 48
	}
	c.Set(key, r, cost)
}

// take gathers rows idx of each column.
func take(ctx context.Context, mem memory.Allocator, cols []arrow.Array, idx []int) ([]arrow.Array, error) {
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	for _, i := range idx {
		ib.Append(int64(i))
	}
	ind := ib.NewArray()
	defer ind.Release()
	ctx = compute.WithAllocator(ctx, mem)
	out := make([]arrow.Array, 0, len(cols))
	for _, c := range cols {
		a, err := compute.TakeArray(ctx, c, ind)
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// assemble builds the result batch from the rows found.
func (x *Index) assemble(columns []int, vals []row, found []bool) arrow.RecordBatch {
	schema := x.OutputSchema(columns)
	b := array.NewRecordBuilder(x.mem, schema)
	defer b.Release()
	for k, c := range columns {
		fb := b.Field(k)
		fb.Reserve(len(vals))
		for _, r := range vals {
			if r == nil {
				fb.AppendNull()
			} else {
				appendValue(fb, r[c])
			}
		}
	}
	b.Field(len(columns)).(*array.BooleanBuilder).AppendValues(found, nil)
	return b.NewRecordBatch()
}
