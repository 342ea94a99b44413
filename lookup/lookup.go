// Package lookup answers batched point lookups by primary key on a table of
// the table store: the rows of a batch of keys, in input order, with a
// found flag per key, at the latest snapshot (or a pinned one).
//
// An Index follows its table. It holds a scan of the latest snapshot (the
// lease keeps that snapshot's files) and reads keys through
// tablestore.Scan.Lookup: key-range and row-group pruning, binary search in
// each sorted run, versions merged by the table's merge engine. Before a
// lookup of the latest snapshot, the index asks storage for the table's
// newest snapshot (tablestore.Table.LatestSnapshotID: the LATEST hint and
// a probe past it), so it sees the commits of other processes (other nodes
// on the warehouse) too; concurrent lookups share one such check when it
// started after they did, and Options.MaxStaleness lets a lookup use the
// result of an older one. A commit of this process closes the table's
// Published channel, which moves the index without asking storage. To
// move, the index plans a scan of the latest snapshot and deletes from the
// cache the keys the commits in between wrote (tablestore.Table.ChangedKeys;
// all of them after an overwrite or an unreadable commit). Lookups run
// under a shared lock and the move under the exclusive one, so a lookup
// reads one snapshot whole, and one that starts after a commit was
// acknowledged (by any process, or MaxStaleness before) sees it.
package lookup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/cache"
	"github.com/flightd/flightd/tablestore"
)

// FoundColumn is the name of the last column of a lookup's result.
const FoundColumn = "found"

// Index answers lookups on one primary-key table. Safe for concurrent use.
type Index struct {
	// t is the table the index reads: a table another node dropped and
	// created again under the name is followed (check), a handle being
	// bound to the directory it opened.
	t      atomic.Pointer[tablestore.Table]
	opts   Options
	mem    memory.Allocator
	keys   []string
	keyIdx []int
	types  []arrow.DataType // of the key columns
	exact  bool             // hashIsKey(types)
	all    []int            // every column
	allOut *arrow.Schema    // OutputSchema(all), built once: most lookups ask for it

	// mu is held shared by lookups and exclusively while the index moves
	// to a new snapshot.
	mu sync.RWMutex
	// scan reads the index's snapshot. It does not hold the snapshot from
	// expiry (Scan.Unhold): a lookup holds it while it reads (answer), so
	// that an index unused for long keeps no snapshots of its table.
	scan      *tablestore.Scan
	expired   atomic.Bool // a lookup found scan's snapshot expired: refresh moves the index
	published <-chan struct{}
	rows      *cache.Rows[*segment] // nil with CacheNone

	// The newest snapshot found in storage, for lookups of the latest
	// (latestSince).
	epoch     time.Time    // monotonic clock origin
	checkMu   sync.Mutex   // one check of storage at a time
	checkedAt atomic.Int64 // when the last check started, ns since epoch
	latest    atomic.Int64 // the snapshot id it found
	// replaced: a check found the newest snapshot in storage older than
	// the index's when the check started: the table was dropped and
	// created again (or rolled back), and refresh must move the index.
	replaced atomic.Bool
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
	if t.Uncommitted() {
		// An index holds committed snapshots only; the transaction's own
		// rows are read by scanning.
		return fmt.Errorf("%w: table %s is read with a transaction's uncommitted rows", tablestore.ErrInvalid, t.Ident())
	}
	return nil
}

// Open makes an index of table t at its latest snapshot. Its row cache
// shares budget (nil: none) with the other indexes' caches.
func Open(ctx context.Context, t *tablestore.Table, mem memory.Allocator, opts Options, budget *cache.Budget) (*Index, error) {
	if err := Check(t); err != nil {
		return nil, err
	}
	keys := t.PrimaryKey()
	x := &Index{opts: opts, mem: mem, keys: keys, all: allColumns(t.Schema()), epoch: time.Now()}
	x.t.Store(t)
	x.allOut = x.OutputSchema(nil)
	for _, k := range keys {
		i := t.Schema().FieldIndices(k)[0]
		x.keyIdx = append(x.keyIdx, i)
		x.types = append(x.types, t.Schema().Field(i).Type)
	}
	x.exact = hashIsKey(x.types)
	if opts.Cache != CacheNone {
		maxBytes, maxRows := opts.MaxBytes, int64(0)
		if opts.MaxRows > 0 {
			maxBytes, maxRows = 0, opts.MaxRows
		}
		c, err := cache.NewRows[*segment](maxBytes, maxRows, opts.ExpireAfterWrite, budget)
		if err != nil {
			return nil, err
		}
		x.rows = c
	}
	x.published = t.Published()
	opened := x.now()
	scan, err := t.NewScan(ctx, tablestore.ScanSpec{})
	if err != nil {
		x.Close()
		return nil, err
	}
	x.scan = scan
	x.latest.Store(scan.SnapshotID())
	x.checkedAt.Store(opened)
	if opts.Cache == CacheFull {
		if err := x.load(ctx); err != nil {
			x.Close()
			return nil, err
		}
	}
	scan.Unhold()
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
	}
	x.rows = nil
}

// Table is the table the index reads.
func (x *Index) Table() *tablestore.Table { return x.t.Load() }

// CacheStats reports the row cache's hits and misses.
func (x *Index) CacheStats() cache.Stats {
	if x.rows == nil {
		return cache.Stats{}
	}
	return x.rows.Stats()
}

// loadSegmentRows is the most rows of one segment a full load makes. A
// cached row keeps its whole segment alive: when the cache's bound (or its
// share of the lookup budget) ends a generation inside a segment of a
// whole scan batch, the rows kept pinned the rest of it, and twenty full
// caches of a 15 MB table held 238 MB under a 16 MB budget.
const loadSegmentRows = 1024

// load puts every row of the index's snapshot into the cache.
func (x *Index) load(ctx context.Context) error {
	fields := x.t.Load().Schema().Fields()
	for _, sp := range x.scan.Splits() {
		r, err := sp.Open(ctx)
		if err != nil {
			return err
		}
		err = eachBatch(ctx, r, func(b arrow.RecordBatch) {
			for lo := int64(0); lo < b.NumRows(); lo += loadSegmentRows {
				part := b.NewSlice(lo, min(lo+loadSegmentRows, b.NumRows()))
				n := int(part.NumRows())
				seg, keys := x.copyRows(newRowSegment(part.Columns(), x.keyIdx), fields, n)
				part.Release()
				hs, skip := make([]uint64, n), make([]bool, n)
				hashKeys(keys, hs, skip)
				x.rows.SetBatch(func(set cache.Setter[*segment]) {
					for i := range n {
						set(hs[i], cache.Ref[*segment]{Seg: seg, Row: int32(i)}, seg.cost)
					}
				})
			}
		})
		if err != nil {
			return err
		}
	}
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
	// MaxBytes bounds the answer's columns (0: no bound): past it the
	// lookup is ErrAnswerTooLarge, before the values are copied. One
	// DoGet of 50,000 keys and 5,000 columns took a server to 24 GB.
	MaxBytes int64
}

// ErrAnswerTooLarge reports a lookup whose answer would pass its
// Request.MaxBytes, or a column 32-bit offsets cannot address.
var ErrAnswerTooLarge = errors.New("lookup answer too large")

// OutputSchema is the schema of the results of lookups of columns (nil:
// all): the columns, nullable, then FoundColumn.
func (x *Index) OutputSchema(columns []int) *arrow.Schema {
	s := x.t.Load().Schema()
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
		req.Columns = x.all
	}
	want := req.SnapshotID
	if want == 0 {
		latest, err := x.latestSince(ctx, x.now()-int64(x.opts.MaxStaleness))
		if err != nil {
			return nil, 0, err
		}
		want = latest
	}
	// An index unused while its snapshot expired moves to a new one; a
	// lookup racing further commits and expiry may find that one gone too.
	for attempt := 0; ; attempt++ {
		if err := x.refresh(ctx, want); err != nil {
			return nil, 0, err
		}
		out, id, expired, err := x.answer(ctx, req)
		if !expired || attempt == 2 {
			return out, id, err
		}
		x.expired.Store(true)
	}
}

// answer answers req at the index's snapshot, holding it from expiry
// while it reads, or at req.SnapshotID. expired reports that the index's
// snapshot was gone.
func (x *Index) answer(ctx context.Context, req Request) (_ arrow.RecordBatch, _ int64, expired bool, _ error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.scan == nil {
		return nil, 0, false, fmt.Errorf("%w: lookup index of %s is closed", tablestore.ErrInvalid, x.t.Load().Ident())
	}
	if req.SnapshotID != 0 && req.SnapshotID != x.scan.SnapshotID() {
		scan, err := x.t.Load().NewScan(ctx, tablestore.ScanSpec{SnapshotID: req.SnapshotID})
		if errors.Is(err, tablestore.ErrSnapshotNotFound) && req.SnapshotID < x.scan.SnapshotID() {
			// Committed once (ids ascend), expired since: the statement
			// that read it is retried on a newer one. An autocommit UPDATE
			// failed with "snapshot not found" while another session
			// committed and expired (engine TestTxnExpiryModel).
			return nil, 0, false, fmt.Errorf("lookup of %s at snapshot %d, expired since the statement read it: %w", x.t.Load().Ident(), req.SnapshotID, tablestore.ErrSerialization)
		}
		if err != nil {
			return nil, 0, false, err
		}
		defer scan.Close()
		if !scan.Schema().Equal(x.scan.Schema()) {
			// Written after an ALTER TABLE the index's handle has not
			// seen (a snapshot written before one reads with the
			// handle's columns).
			return nil, 0, false, fmt.Errorf("%w: lookup of %s at snapshot %d: the table's columns changed since; run the statement again",
				tablestore.ErrConflict, x.t.Load().Ident(), req.SnapshotID)
		}
		out, err := x.lookup(ctx, scan, nil, req)
		return out, scan.SnapshotID(), false, err
	}
	if id := x.scan.SnapshotID(); id > 0 { // 0: the table had none
		release, err := x.t.Load().Hold(id)
		if err != nil {
			return nil, 0, errors.Is(err, tablestore.ErrSnapshotNotFound), err
		}
		defer release()
	}
	out, err := x.lookup(ctx, x.scan, x.rows, req)
	return out, x.scan.SnapshotID(), false, err
}

func (x *Index) check(req Request) error {
	s := x.t.Load().Schema()
	if len(req.Keys) != len(x.keys) {
		return fmt.Errorf("%w: lookup on %s: %d key columns given, the primary key (%v) has %d", tablestore.ErrInvalid, x.t.Load().Ident(), len(req.Keys), x.keys, len(x.keys))
	}
	for c, i := range x.keyIdx {
		want := s.Field(i).Type
		if got := req.Keys[c].DataType(); !arrow.TypeEqual(got, want) {
			return fmt.Errorf("%w: lookup on %s: key column %d (%s) is %s, the table stores %s", tablestore.ErrInvalid, x.t.Load().Ident(), c+1, x.keys[c], got, want)
		}
		if req.Keys[c].Len() != req.Keys[0].Len() {
			return fmt.Errorf("%w: lookup on %s: key column %d (%s) has %d rows, column 1 has %d", tablestore.ErrInvalid, x.t.Load().Ident(), c+1, x.keys[c], req.Keys[c].Len(), req.Keys[0].Len())
		}
	}
	for _, c := range req.Columns {
		if c < 0 || c >= s.NumFields() {
			return fmt.Errorf("%w: lookup on %s: no column %d", tablestore.ErrInvalid, x.t.Load().Ident(), c)
		}
	}
	return nil
}

// now is the time on the index's monotonic clock, in ns.
func (x *Index) now() int64 { return int64(time.Since(x.epoch)) }

// latestSince returns the newest snapshot id in storage as found by a
// check that started after since (x.now's clock), checking now if none
// did. A check that started after a lookup did sees every commit
// acknowledged before the lookup started, so concurrent lookups share one.
// Strictly after: a check whose clock reading ties the lookup's may have
// read it first, before the commit's acknowledgement.
func (x *Index) latestSince(ctx context.Context, since int64) (int64, error) {
	if x.checkedAt.Load() > since {
		return x.latest.Load(), nil
	}
	x.checkMu.Lock()
	defer x.checkMu.Unlock()
	if x.checkedAt.Load() > since {
		return x.latest.Load(), nil // checked while this lookup waited
	}
	x.mu.RLock()
	floor := int64(0) // the index's snapshot was in storage before the check
	if x.scan != nil {
		floor = x.scan.SnapshotID()
	}
	x.mu.RUnlock()
	start := x.now()
	id, err := x.t.Load().LatestSnapshotID(ctx)
	if errors.Is(err, tablestore.ErrTableNotFound) {
		id, err = x.follow(ctx)
	}
	if err != nil {
		return 0, err
	}
	if id < floor {
		x.replaced.Store(true)
	}
	// latest before checkedAt: a lookup that sees the new time sees the id.
	x.latest.Store(id)
	x.checkedAt.Store(start)
	return id, nil
}

// follow opens the table now under the index's table's name and, if it
// has the same columns, reads that one from now on (the cache is cleared
// at the next refresh: the table was replaced). It returns its latest
// snapshot.
func (x *Index) follow(ctx context.Context) (int64, error) {
	old := x.t.Load()
	t, err := old.Reopen(ctx)
	if err != nil {
		return 0, err
	}
	if !t.Schema().Equal(old.Schema()) {
		return 0, fmt.Errorf("%w: %s was created again with other columns than the lookup index reads", tablestore.ErrTableNotFound, old.Ident())
	}
	x.t.Store(t)
	x.replaced.Store(true)
	return t.LatestSnapshotID(ctx)
}

// refresh moves the index to the latest snapshot if a commit was published
// since it last moved, or if a lookup asks for a snapshot newer than the
// index's (another process committed it: Published follows this process's
// commits only), or the table was replaced.
func (x *Index) refresh(ctx context.Context, want int64) error {
	moved := func() bool { return want > x.scan.SnapshotID() || x.replaced.Load() || x.expired.Load() }
	x.mu.RLock()
	ch, behind := x.published, x.scan != nil && moved()
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
	if x.scan == nil || x.published != ch && !moved() {
		return nil // another lookup moved it
	}
	next := x.t.Load().Published()
	replaced := x.replaced.Swap(false) // before the scan: a later check may set it again
	x.expired.Store(false)
	scan, err := x.t.Load().NewScan(ctx, tablestore.ScanSpec{})
	if err != nil {
		return err
	}
	if x.rows != nil {
		// A followed table (follow) is another table even where its
		// former self's snapshot still reads as current.
		if ok, err := x.scan.Current(); replaced || !ok || err != nil {
			// The table was replaced (or rolled back): nothing cached is
			// known good, and the snapshots in between are another table's.
			x.rows.Clear()
		} else {
			x.invalidate(ctx, x.scan.SnapshotID(), scan.SnapshotID())
		}
	}
	x.scan.Close()
	scan.Unhold()
	x.scan, x.published = scan, next
	return nil
}

// invalidate deletes from the cache the keys snapshots (from, to] wrote.
func (x *Index) invalidate(ctx context.Context, from, to int64) {
	for id := from + 1; id <= to; id++ {
		undecoded := false
		all, err := x.t.Load().ChangedKeys(ctx, id, func(k []byte) {
			if h, ok := hashEncoded(x.types, k); ok {
				x.rows.Del(h)
			} else {
				undecoded = true
			}
		})
		if all || err != nil || undecoded {
			// Unknown or wholesale changes (an overwrite, or a commit
			// expired before it was read): nothing cached is known good.
			x.rows.Clear()
			return
		}
	}
}

// lookup reads req's keys at scan through the cache c (nil: none): keys
// are hashed and checked column by column, and the answer is gathered
// from the cached segments and the rows read from the store.
func (x *Index) lookup(ctx context.Context, scan *tablestore.Scan, c *cache.Rows[*segment], req Request) (arrow.RecordBatch, error) {
	n := req.Keys[0].Len()
	hs, skip := make([]uint64, n), make([]bool, n)
	segs, rows := make([]*segment, n), make([]int32, n)
	var old []int // hits in the cache's old generation, to keep
	var oldExpires []int64
	if c == nil {
		markNulls(req.Keys, skip)
	} else {
		hashKeys(req.Keys, hs, skip)
		probe := viewsOf(req.Keys)
		c.GetBatch(hs, skip, func(i int, ref cache.Ref[*segment]) bool {
			if !x.exact && !keyEqual(probe, i, ref.Seg.keys, int(ref.Row)) {
				return false // another key with the same hash
			}
			segs[i], rows[i] = ref.Seg, ref.Row
			if ref.Old {
				old, oldExpires = append(old, i), append(oldExpires, ref.Expires)
			}
			return true
		})
	}
	var miss []int
	for i := range n {
		if !skip[i] && segs[i] == nil {
			miss = append(miss, i)
		}
	}
	var fill func(set cache.Setter[*segment])
	if len(miss) > 0 {
		rb, sub, idx, err := x.read(ctx, scan, req.Keys, miss)
		if err != nil {
			return nil, err
		}
		defer rb.Release()
		defer releaseAll(sub)
		seg := newRowSegment(rb.Columns(), x.keyIdx)
		if c != nil {
			seg, _ = x.copyRows(seg, x.t.Load().Schema().Fields(), int(rb.NumRows()))
		}
		var gone []int // positions in sub of missing keys
		for j, i := range miss {
			if idx[j] < 0 {
				gone = append(gone, j)
				continue
			}
			segs[i], rows[i] = seg, int32(idx[j])
		}
		if c != nil {
			var mseg *segment
			if len(gone) > 0 && x.opts.CacheMissingKey {
				keys, err := take(ctx, cacheMem, sub, gone)
				if err != nil {
					return nil, err
				}
				mseg = newMissingSegment(keys)
			}
			fill = func(set cache.Setter[*segment]) {
				for j, i := range miss {
					if idx[j] >= 0 {
						set(hs[i], cache.Ref[*segment]{Seg: seg, Row: int32(idx[j])}, seg.cost)
					}
				}
				if mseg != nil {
					for k, j := range gone {
						set(hs[miss[j]], cache.Ref[*segment]{Seg: mseg, Row: int32(k)}, mseg.cost)
					}
				}
			}
		}
	}
	out, err := x.assemble(ctx, req.Columns, segs, rows, req.MaxBytes)
	if err != nil {
		return nil, err
	}
	if len(old) > 0 {
		keep, err := x.keep(ctx, req.Keys, hs, segs, rows, old, oldExpires)
		if err != nil {
			out.Release()
			return nil, err
		}
		if fill == nil {
			fill = keep
		} else {
			f := fill
			fill = func(set cache.Setter[*segment]) { f(set); keep(set) }
		}
	}
	if fill != nil {
		c.SetBatch(fill)
	}
	return out, nil
}

// keep copies the hits old of the cache's old generation into new
// segments, so they stay cached without keeping the old segments alive.
func (x *Index) keep(ctx context.Context, keys []arrow.Array, hs []uint64, segs []*segment, rows []int32, old []int, expires []int64) (func(set cache.Setter[*segment]), error) {
	var found, gone []int
	var foundExp, goneExp []int64
	for k, i := range old {
		if segs[i].cols != nil {
			found, foundExp = append(found, i), append(foundExp, expires[k])
		} else {
			gone, goneExp = append(gone, i), append(goneExp, expires[k])
		}
	}
	var fseg, mseg *segment
	if len(found) > 0 {
		fs, fr := make([]*segment, len(found)), make([]int32, len(found))
		for k, i := range found {
			fs[k], fr[k] = segs[i], rows[i]
		}
		fseg, _ = x.gatherRows(fs, fr, x.t.Load().Schema().Fields())
	}
	if len(gone) > 0 {
		ks, err := take(ctx, cacheMem, keys, gone)
		if err != nil {
			return nil, err
		}
		mseg = newMissingSegment(ks)
	}
	return func(set cache.Setter[*segment]) {
		for k, i := range found {
			set(hs[i], cache.Ref[*segment]{Seg: fseg, Row: int32(k), Expires: foundExp[k]}, fseg.cost)
		}
		for k, i := range gone {
			set(hs[i], cache.Ref[*segment]{Seg: mseg, Row: int32(k), Expires: goneExp[k]}, mseg.cost)
		}
	}, nil
}

// copyRows copies the n rows of s into cacheMem; it returns the copy and
// its key columns.
func (x *Index) copyRows(s *segment, fields []arrow.Field, n int) (*segment, []arrow.Array) {
	segs, rows := make([]*segment, n), make([]int32, n)
	for i := range n {
		segs[i], rows[i] = s, int32(i)
	}
	return x.gatherRows(segs, rows, fields)
}

// gatherRows makes a segment in cacheMem of row rows[i] of segs[i] (whole
// rows of the table's columns fields); it returns it and its key columns.
func (x *Index) gatherRows(segs []*segment, rows []int32, fields []arrow.Field) (*segment, []arrow.Array) {
	cols := make([]arrow.Array, len(fields))
	for c, f := range fields {
		// Rows of one read, whose columns already had 32-bit offsets.
		cols[c], _ = gather(cacheMem, f.Type, segs, rows, c, nil)
	}
	keys := make([]arrow.Array, len(x.keyIdx))
	for c, i := range x.keyIdx {
		keys[c] = cols[i]
	}
	return newRowSegment(cols, x.keyIdx), keys
}

// read looks up the keys miss of keys in the store: the rows found (in
// the scan's batch), the keys it read (sub, one per miss) and, per miss,
// its row in the batch or -1. The caller releases the batch and sub.
func (x *Index) read(ctx context.Context, scan *tablestore.Scan, keys []arrow.Array, miss []int) (arrow.RecordBatch, []arrow.Array, []int, error) {
	var sub []arrow.Array
	if len(miss) < keys[0].Len() {
		var err error
		if sub, err = take(ctx, x.mem, keys, miss); err != nil {
			return nil, nil, nil, err
		}
	} else {
		for _, k := range keys {
			k.Retain()
			sub = append(sub, k)
		}
	}
	rb, idx, err := scan.Lookup(ctx, sub)
	if err != nil {
		releaseAll(sub)
		return nil, nil, nil, err
	}
	return rb, sub, idx, nil
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		a.Release()
	}
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
			releaseAll(out)
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// assemble gathers the result batch: per key, the columns of its row
// (segs[i] at rows[i]; NULLs where it has none) and whether it has one.
func (x *Index) assemble(ctx context.Context, columns []int, segs []*segment, rows []int32, maxBytes int64) (arrow.RecordBatch, error) {
	schema := x.allOut
	if !slices.Equal(columns, x.all) {
		schema = x.OutputSchema(columns)
	}
	n := len(segs)
	var budget *int64
	if maxBytes > 0 {
		budget = &maxBytes
	}
	cols := make([]arrow.Array, 0, len(columns)+1)
	for k, c := range columns {
		col, err := gather(x.mem, schema.Field(k).Type, segs, rows, c, budget)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			if col != nil {
				col.Release()
			}
			releaseAll(cols)
			return nil, fmt.Errorf("lookup on %s, column %d of %d: %w", x.t.Load().Ident(), k+1, len(columns), err)
		}
		cols = append(cols, col)
	}
	fb := memory.NewResizableBuffer(x.mem)
	fb.Resize(int(bitutil.BytesForBits(int64(n))))
	b := fb.Bytes()
	clear(b)
	for i, s := range segs {
		if s != nil && s.cols != nil {
			bitutil.SetBit(b, i)
		}
	}
	d := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{nil, fb}, nil, 0, 0)
	cols = append(cols, array.MakeFromData(d))
	d.Release()
	fb.Release()
	out := array.NewRecordBatch(schema, cols, int64(n))
	releaseAll(cols)
	return out, nil
}
