package tablestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore/merge"
	"github.com/flightd/flightd/tablestore/meta"
)

// WriteOptions configure a Write.
type WriteOptions struct {
	// Overwrite replaces data instead of adding to it (INSERT OVERWRITE):
	// the whole table, or with OverwritePartition the partitions matching
	// that static spec. With DynamicPartitionOverwrite on a partitioned
	// table, only the partitions the written rows fall into (within the
	// static spec); an overwrite that writes no rows then changes nothing.
	// Paimon's semantics; an unpartitioned table is always replaced whole.
	Overwrite bool
	// OverwritePartition maps partition columns (any subset) to values
	// written as in partition paths (dates as 2024-05-01, NULL as the
	// table's partition.default-name).
	OverwritePartition map[string]string
	// DynamicPartitionOverwrite: see Overwrite (Paimon's
	// dynamic-partition-overwrite; Table.DynamicPartitionOverwrite is the
	// table's default).
	DynamicPartitionOverwrite bool
	// ReadModifyWrite says the written rows were computed from snapshot
	// BaseSnapshot (0: the empty table), as UPDATE computes them: Commit
	// then fails with ErrSerialization if a commit after it (other than
	// compaction) wrote one of the same keys (key tables) or changed the
	// overwritten scope. Otherwise the write is blind and never fails for
	// being concurrent: it lands after every commit before it, and per key
	// its rows win over theirs.
	ReadModifyWrite bool
	BaseSnapshot    int64
	// Properties annotate the commit's snapshot (Table.LastProperties).
	Properties map[string]string
	// CommitEmpty: Commit publishes a snapshot also when nothing was
	// written, for its Properties (a continuous job's progress).
	CommitEmpty bool
}

// Write buffers rows and publishes them atomically on Commit. It can be
// reused after Commit or Abort. Not safe for concurrent use.
type Write struct {
	t    *Table
	sch  *tableSchema
	opts WriteOptions

	started  bool
	baseID   int64 // latest snapshot when the first row was written
	recs     []arrow.RecordBatch
	kinds    [][]RowKind
	seqStart []int64
	bytes    int64
	maxSeq   int64
	pending  []*meta.ManifestEntry // flushed, not yet committed
	logs     []*meta.ManifestEntry // changelog files (input producer)
	// Per buffered row, during a flush: source batch, row, seq, kind.
	src, row []int32
	seqs     []int64
	kindv    []int8
	touched  map[string][]meta.Datum
	dirs     map[string]bool
	// release ends the lease that keeps the snapshots after baseID, which
	// the commit checks for conflicts, from expiring.
	release func()
	// staged is the new table's schema version of a Store.StageTable write
	// until its commit publishes it; createOnly: the table must not exist.
	staged     *tableSchema
	createOnly bool
	// broken: a flush for a read failed and lost buffered rows; the
	// write can only be aborted.
	broken error
	// readable are the pending files scans read (Settle).
	readable atomic.Pointer[[]*meta.ManifestEntry]
	// superseded are pending files Settle merged into others: a scan
	// still running may read them, so they go when the write ends.
	superseded []*meta.ManifestEntry
}

// NewWrite starts a write transaction on the table's current schema.
func (t *Table) NewWrite(opts WriteOptions) *Write {
	w := &Write{t: t, sch: t.schema, opts: opts}
	w.reset()
	return w
}

// Table is the table the write goes to (for Store.StageTable, the staged
// one).
func (w *Write) Table() *Table { return w.t }

func (w *Write) reset() {
	for _, r := range w.recs {
		r.Release()
	}
	w.t.st.removeUncommitted(w.superseded)
	w.superseded = nil
	w.started = false
	w.recs, w.kinds, w.seqStart = nil, nil, nil
	w.bytes, w.maxSeq = 0, -1
	w.pending, w.logs = nil, nil
	w.touched = map[string][]meta.Datum{}
	w.dirs = map[string]bool{}
	w.broken = nil
	w.readable.Store(nil)
	if w.release != nil {
		w.release()
		w.release = nil
	}
}

// Settle flushes the buffered rows to pending files and makes those the
// rows that scans of a WithWrite handle read, until the next Settle. The
// scans may run after it returns, concurrently with more rows being
// written: they read the files settled, not the buffer. A transaction
// settles once per statement that reads the table, a file each, so a
// bucket's pending files are merged into one past the table's
// compaction trigger: every scan would read them all (2,000 UPDATEs of
// one row in a transaction took 166 s, each reading every earlier one).
func (w *Write) Settle(ctx context.Context) error {
	err := w.flush(ctx)
	if err == nil {
		err = w.mergePending(ctx)
	}
	if err != nil {
		// The buffered rows are lost: the write must not commit what is
		// left of it.
		w.broken = err
		return err
	}
	files := slices.Clone(w.pending)
	w.readable.Store(&files)
	return nil
}

// mergePending merges the pending files of each bucket that has more
// than the compaction trigger's count into one level-0 run, keeping
// deletes (they hide rows of the snapshot below) and sequence numbers.
func (w *Write) mergePending(ctx context.Context) error {
	st, sch := w.t.st, w.sch
	groups := map[string][]*meta.ManifestEntry{}
	for _, e := range w.pending {
		k := bucketOf(e)
		groups[k] = append(groups[k], e)
	}
	for _, g := range groups {
		if len(g) <= sch.opts.compactionTrigger {
			continue
		}
		merged, err := st.rewrite(ctx, sch, g, 0, false, "APPEND", w.dirs)
		if err != nil {
			return err
		}
		w.pending = slices.DeleteFunc(w.pending, func(e *meta.ManifestEntry) bool { return slices.Contains(g, e) })
		w.pending = append(w.pending, merged...)
		w.superseded = append(w.superseded, g...)
	}
	return nil
}

// Write buffers the rows of b with one row kind.
func (w *Write) Write(ctx context.Context, b arrow.RecordBatch, kind RowKind) error {
	if b == nil {
		return fmt.Errorf("write %s: %w: nil batch", w.t.st.id, ErrInvalid)
	}
	kinds := make([]RowKind, b.NumRows())
	for i := range kinds {
		kinds[i] = kind
	}
	return w.WriteKinds(ctx, b, kinds)
}

// WriteKinds buffers the rows of b, row i with kinds[i]. b must have the
// table's columns (matched by name, any order) with the table's types; on
// error nothing is buffered.
func (w *Write) WriteKinds(ctx context.Context, b arrow.RecordBatch, kinds []RowKind) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rec, kinds, err := w.conformInput(b, kinds)
	if err != nil {
		return fmt.Errorf("write %s: %w", w.t.st.id, err)
	}
	if rec == nil {
		return nil
	}
	if !w.started {
		if err := w.start(); err != nil {
			rec.Release()
			return err
		}
	}
	n := rec.NumRows()
	if w.sch.hasPK() {
		start := w.t.st.allocSeq(n)
		w.maxSeq = start + n - 1
		w.seqStart = append(w.seqStart, start)
	}
	w.recs = append(w.recs, rec)
	w.kinds = append(w.kinds, slices.Clone(kinds))
	w.bytes += recordBytes(rec)
	budget := w.sch.opts.writeBufferSize
	if budget == 0 {
		budget = w.t.st.s.opts.WriteBufferSize
	}
	if w.bytes >= budget {
		return w.flush(ctx)
	}
	return nil
}

func (w *Write) start() error {
	id, err := w.t.st.latestSnapshotID()
	if err != nil {
		return err
	}
	if id > 0 {
		sn, err := w.t.st.readSnapshot(id)
		if err != nil {
			return err
		}
		next, err := w.t.st.nextSequenceNumber(sn)
		if err != nil {
			return err
		}
		w.t.st.raiseSeq(next)
	}
	w.baseID = id
	if w.opts.ReadModifyWrite {
		if b := w.opts.BaseSnapshot; b > id {
			return fmt.Errorf("write %s: %w: base snapshot %d is newer than the latest %d (the table was dropped and created again)", w.t.st.id, ErrSerialization, b, id)
		}
		w.baseID = w.opts.BaseSnapshot
	}
	w.lease()
	w.started = true
	return nil
}

// lease keeps the snapshots after baseID, which the commit checks, from
// expiring.
func (w *Write) lease() {
	if w.release != nil {
		w.release()
	}
	w.release = w.t.st.hold(w.baseID + 1)
	runtime.AddCleanup(w, func(f func()) { f() }, w.release)
}

// ReadFrom turns the write into a read-modify-write of snapshot id (see
// WriteOptions.ReadModifyWrite), for the rows written so far too: a
// transaction's write to a table becomes one when a statement of it reads
// the table.
func (w *Write) ReadFrom(id int64) {
	if w.opts.ReadModifyWrite && w.opts.BaseSnapshot <= id {
		return
	}
	w.opts.ReadModifyWrite, w.opts.BaseSnapshot = true, id
	if w.started && id < w.baseID {
		w.baseID = id
		w.lease()
	}
}

// allocSeq reserves n sequence numbers.
func (st *tableState) allocSeq(n int64) int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.nextSeq == 0 {
		st.nextSeq = 1
	}
	s := st.nextSeq
	st.nextSeq += n
	return s
}

func (st *tableState) raiseSeq(next int64) {
	st.mu.Lock()
	st.nextSeq = max(st.nextSeq, next)
	st.mu.Unlock()
}

func recordBytes(r arrow.RecordBatch) int64 {
	var n int64
	for _, c := range r.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

// conformInput checks b against the schema and returns it with the
// table's column order (nil for an empty batch), without the retracting
// rows when the table has ignore-delete.
func (w *Write) conformInput(b arrow.RecordBatch, kinds []RowKind) (arrow.RecordBatch, []RowKind, error) {
	rec, err := w.conformColumns(b, kinds)
	if err != nil || rec == nil {
		return nil, nil, err
	}
	if !w.sch.opts.merge.IgnoreDelete || !slices.ContainsFunc(kinds, RowKind.IsRetract) {
		return rec, kinds, nil
	}
	defer rec.Release()
	var refs []merge.Ref
	var kept []RowKind
	for i, k := range kinds {
		if !k.IsRetract() {
			refs = append(refs, merge.Ref{Src: 0, Row: int32(i)})
			kept = append(kept, k)
		}
	}
	if len(refs) == 0 {
		return nil, nil, nil
	}
	cols := make([]arrow.Array, rec.NumCols())
	for c := range cols {
		cols[c] = merge.Gather(w.t.st.s.opts.Mem, w.sch.types[c], []arrow.Array{rec.Column(c)}, refs)
		defer cols[c].Release()
	}
	return array.NewRecordBatch(w.sch.arrow, cols, int64(len(refs))), kept, nil
}

func (w *Write) conformColumns(b arrow.RecordBatch, kinds []RowKind) (arrow.RecordBatch, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil batch", ErrInvalid)
	}
	if int64(len(kinds)) != b.NumRows() {
		return nil, fmt.Errorf("%w: %d row kinds for %d rows", ErrInvalid, len(kinds), b.NumRows())
	}
	for i, k := range kinds {
		if !validKind(k) {
			return nil, fmt.Errorf("%w: row %d: invalid row kind %d", ErrInvalid, i, int8(k))
		}
		if !w.sch.hasPK() && k != Insert {
			return nil, fmt.Errorf("%w: row %d: append table %s accepts only +I rows, got %s", ErrInvalid, i, w.t.st.id, k)
		}
	}
	if err := checkInputKinds(w.t.st.id, w.sch, kinds); err != nil {
		return nil, err
	}
	in := b.Schema()
	for _, f := range in.Fields() {
		if w.sch.fieldIndex(f.Name) < 0 {
			return nil, fmt.Errorf("%w: unknown column %q", ErrInvalid, f.Name)
		}
	}
	cols := make([]arrow.Array, len(w.sch.Fields))
	for i, f := range w.sch.Fields {
		idx := in.FieldIndices(f.Name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("%w: column %q is missing", ErrInvalid, f.Name)
		}
		if len(idx) > 1 {
			return nil, fmt.Errorf("%w: column %q appears %d times", ErrInvalid, f.Name, len(idx))
		}
		c := b.Column(idx[0])
		if !arrow.TypeEqual(c.DataType(), w.sch.types[i]) {
			return nil, fmt.Errorf("%w: column %q has type %s, the table has %s", ErrInvalid, f.Name, c.DataType(), w.sch.types[i])
		}
		if !f.Nullable && c.NullN() > 0 {
			return nil, w.nullsError(f.Name, c.NullN())
		}
		cols[i] = c
	}
	if b.NumRows() == 0 {
		return nil, nil
	}
	return array.NewRecordBatch(w.sch.arrow, cols, b.NumRows()), nil
}

// nullsError refuses n NULLs for NOT NULL column name (the caller names
// the table), naming a primary key column as one: a key derived from a query (a
// materialized table's GROUP BY columns) is NOT NULL though the query's
// column may hold NULL.
func (w *Write) nullsError(name string, n int) error {
	what := "column"
	if slices.Contains(w.sch.PrimaryKeys, name) {
		what = "primary key column"
	}
	return fmt.Errorf("%w: %s %q cannot hold NULL, and the rows have %d", ErrNotNull, what, name, n)
}

// flush sorts the buffer by partition, bucket and key, merges versions of a
// key, and writes one level-0 file per partition and bucket. Only the
// columns that order rows are concatenated; output rows are gathered
// straight from the buffered batches.
func (w *Write) flush(ctx context.Context) error {
	if len(w.recs) == 0 {
		return nil
	}
	defer func() {
		for _, r := range w.recs {
			r.Release()
		}
		w.recs, w.kinds, w.seqStart, w.bytes = nil, nil, nil, 0
		w.src, w.row, w.seqs, w.kindv = nil, nil, nil, nil
	}()
	sch := w.sch
	if len(w.recs) == 1 && !sch.hasPK() && len(sch.PartitionKeys) == 0 && sch.opts.buckets <= 1 {
		// One buffered batch of an append table of one bucket, unpartitioned
		// (bulk ingest): the batch is the file, rows in order. The order
		// columns, buckets and row index of every row, built below, were 2%
		// of the Nexmark load's CPU profile for nothing.
		return w.writeLevel0(ctx, w.recs[0], nil, 0)
	}
	ord, ordCols, err := w.orderRecord()
	if err != nil {
		return err
	}
	defer ord.Release()
	n := int(ord.NumRows())
	col := func(name string) arrow.Array { return ord.Column(2 + slices.Index(ordCols, sch.fieldIndex(name))) }
	buckets := bucketsOf(sch, n, col)
	var partCmp func(i, j int) int
	if len(sch.PartitionKeys) > 0 {
		var pc []arrow.Array
		for _, p := range sch.PartitionKeys {
			pc = append(pc, col(p))
		}
		partCmp = rowsCmp(pc)
	}
	var order rowOrder
	if sch.hasPK() {
		order = newRowOrder(sch, ord, ordCols)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	groupCmp := func(a, b int) int {
		if c := int(buckets[a]) - int(buckets[b]); c != 0 {
			return c
		}
		if partCmp != nil {
			return partCmp(a, b)
		}
		return 0
	}
	if fast, ok := fastKeySort(sch, col, buckets, partCmp); ok {
		idx = fast
	} else if sch.hasPK() {
		slices.SortFunc(idx, func(a, b int) int {
			if c := groupCmp(a, b); c != 0 {
				return c
			}
			return order.full(a, b)
		})
	} else if partCmp != nil || sch.opts.buckets > 1 {
		slices.SortStableFunc(idx, groupCmp)
	}
	partAt := func(row int) []meta.Datum {
		var part []meta.Datum
		for _, p := range sch.PartitionKeys {
			d, _ := meta.DatumAt(col(p), row)
			part = append(part, meta.KeptDatum(d))
		}
		return part
	}
	if partCmp != nil {
		if err := w.checkPartitions(idx, groupCmp, partAt); err != nil {
			return err
		}
	}
	for lo := 0; lo < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := lo + 1
		for hi < n && groupCmp(idx[lo], idx[hi]) == 0 {
			hi++
		}
		rows := idx[lo:hi]
		var out arrow.RecordBatch
		switch {
		case sch.hasPK() && sch.opts.merge.BuildsRows():
			if out, err = w.mergeBuffered(order, rows); err != nil {
				return err
			}
		case sch.hasPK():
			out = w.gatherRows(ord, mergeSorted(order, &sch.opts.merge, rows, false))
		default:
			out = w.gatherRows(ord, rows)
		}
		part := partAt(idx[lo])
		err := w.writeLevel0(ctx, out, part, int(buckets[idx[lo]]))
		out.Release()
		if err != nil {
			return err
		}
		if sch.hasPK() && sch.opts.producer == producerInput {
			if err := w.writeInputChangelog(ctx, ord, idx[lo:hi], part, int(buckets[idx[lo]])); err != nil {
				return err
			}
		}
		lo = hi
	}
	return nil
}

// checkPartitions refuses a flush whose groups of rows (idx, grouped by
// same) would take the partitions the write has touched past the table's
// partition.max-per-commit, before any file is written: each partition
// is a file per bucket, and one INSERT made 3,000 in 10 s.
func (w *Write) checkPartitions(idx []int, same func(a, b int) int, partAt func(row int) []meta.Datum) error {
	added := map[string]bool{}
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && same(idx[lo], idx[hi]) == 0 {
			hi++
		}
		key := meta.PartitionKey(partAt(idx[lo]))
		if _, ok := w.touched[key]; !ok && !added[key] {
			added[key] = true
			if len(w.touched)+len(added) > w.sch.opts.maxPartitions {
				return fmt.Errorf("%w: table %s: the rows fall into more than %d partitions (table option %s)", ErrTooManyPartitions, w.t.Ident(), w.sch.opts.maxPartitions, optMaxPartitions)
			}
		}
		lo = hi
	}
	return nil
}

// writeLevel0 writes out, the rows of one partition and bucket, as a
// level-0 file of the commit.
func (w *Write) writeLevel0(ctx context.Context, out arrow.RecordBatch, part []meta.Datum, bucket int) error {
	dw := w.t.st.newDataWriter(w.sch, part, bucket, 0, "APPEND", 0, w.dirs)
	dw.oneBatch = true
	ents, err := writeAll(ctx, dw, out)
	if err != nil {
		return err
	}
	w.pending = append(w.pending, ents...)
	w.touched[meta.PartitionKey(part)] = part
	return nil
}

// writeInputChangelog writes the rows of one bucket as they came in (in
// sequence order, unmerged) to a changelog file (the input producer).
func (w *Write) writeInputChangelog(ctx context.Context, ord arrow.RecordBatch, rows []int, part []meta.Datum, bucket int) error {
	bySeq := slices.Clone(rows)
	slices.SortFunc(bySeq, func(a, b int) int { return cmp.Compare(w.seqs[a], w.seqs[b]) })
	out := w.gatherRows(ord, bySeq)
	defer out.Release()
	ents, err := writeAll(ctx, w.t.st.newChangelogWriter(w.sch, part, bucket, "APPEND", w.dirs), out)
	if err != nil {
		return err
	}
	w.logs = append(w.logs, ents...)
	return nil
}

// writeAll writes out as d's files and returns them, or removes them.
func writeAll(ctx context.Context, d *dataWriter, out arrow.RecordBatch) ([]*meta.ManifestEntry, error) {
	if err := d.write(ctx, out); err != nil {
		d.abort()
		return nil, err
	}
	return d.finish()
}

// orderRecord builds the columns that order the buffered rows: the system
// columns, then (concatenated) the partition, bucket-key, primary-key and
// sequence.field columns, listed by ordCols (schema indexes).
func (w *Write) orderRecord() (arrow.RecordBatch, []int, error) {
	mem := w.t.st.s.opts.Mem
	sch := w.sch
	var ordCols []int
	for _, names := range [][]string{sch.PartitionKeys, sch.opts.bucketKey, sch.PrimaryKeys, sch.opts.sequenceField} {
		for _, c := range names {
			if i := sch.fieldIndex(c); !slices.Contains(ordCols, i) {
				ordCols = append(ordCols, i)
			}
		}
	}
	var n int64
	for _, r := range w.recs {
		n += r.NumRows()
	}
	seqs := make([]int64, 0, n)
	kinds := make([]int8, 0, n)
	w.src, w.row = make([]int32, 0, n), make([]int32, 0, n)
	for i, r := range w.recs {
		for j := range r.NumRows() {
			if sch.hasPK() {
				seqs = append(seqs, w.seqStart[i]+j)
			} else {
				seqs = append(seqs, 0)
			}
			kinds = append(kinds, int8(w.kinds[i][j]))
			w.src = append(w.src, int32(i))
			w.row = append(w.row, int32(j))
		}
	}
	w.seqs, w.kindv = seqs, kinds
	fields := []arrow.Field{{Name: colSeq, Type: arrow.PrimitiveTypes.Int64}, {Name: colKind, Type: arrow.PrimitiveTypes.Int8}}
	cols := []arrow.Array{int64Array(mem, seqs), int8Array(mem, kinds)}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, c := range ordCols {
		parts := make([]arrow.Array, len(w.recs))
		for i, r := range w.recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, nil, err
		}
		cols = append(cols, a)
		fields = append(fields, sch.arrow.Field(c))
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n), ordCols, nil
}

// allColumns returns the schema indexes of every column, in order.
func allColumns(sch *tableSchema) []int {
	all := make([]int, len(sch.Fields))
	for i := range all {
		all[i] = i
	}
	return all
}

func int64Array(mem memory.Allocator, v []int64) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(v, nil)
	return b.NewArray()
}

func int8Array(mem memory.Allocator, v []int8) arrow.Array {
	b := array.NewInt8Builder(mem)
	defer b.Release()
	b.AppendValues(v, nil)
	return b.NewArray()
}

// gatherRows builds the file batch (fileSchema layout) of buffered rows.
func (w *Write) gatherRows(ord arrow.RecordBatch, rows []int) arrow.RecordBatch {
	mem := w.t.st.s.opts.Mem
	sch := w.sch
	var cols []arrow.Array
	if sch.hasPK() {
		seqs := make([]int64, len(rows))
		kinds := make([]int8, len(rows))
		for i, r := range rows {
			seqs[i], kinds[i] = w.seqs[r], w.kindv[r]
		}
		cols = append(cols, int64Array(mem, seqs), int8Array(mem, kinds))
	}
	refs := make([]merge.Ref, len(rows))
	for i, r := range rows {
		refs[i] = merge.Ref{Src: w.src[r], Row: w.row[r]}
	}
	srcs := make([]arrow.Array, len(w.recs))
	for c := range sch.Fields {
		for i, r := range w.recs {
			srcs[i] = r.Column(c)
		}
		cols = append(cols, merge.Gather(mem, sch.types[c], srcs, refs))
	}
	out := array.NewRecordBatch(fileSchema(sch), cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return out
}

// mergeBuffered merges the buffered rows (sorted by key, then version) with a
// row-building merge engine into a file batch (fileSchema layout).
func (w *Write) mergeBuffered(o rowOrder, sorted []int) (arrow.RecordBatch, error) {
	sch := w.sch
	arrs := make([][]arrow.Array, len(sch.Fields))
	for c := range arrs {
		for _, r := range w.recs {
			arrs[c] = append(arrs[c], r.Column(c))
		}
	}
	in := &merge.Input{
		Arrays: func(p int) []arrow.Array { return arrs[p] },
		Seq:    func(r merge.Ref) int64 { return w.seqStart[r.Src] + int64(r.Row) },
		Kind:   func(r merge.Ref) RowKind { return w.kinds[r.Src][r.Row] },
	}
	keys := func(yield func([]merge.Ref) bool) {
		var vers []merge.Ref
		for i := 0; i < len(sorted); {
			j := i + 1
			for j < len(sorted) && o.key(sorted[i], sorted[j]) == 0 {
				j++
			}
			vers = vers[:0]
			for _, r := range sorted[i:j] {
				vers = append(vers, merge.Ref{Src: w.src[r], Row: w.row[r]})
			}
			if !yield(vers) {
				return
			}
			i = j
		}
	}
	cols, err := merge.Merge(w.t.st.id.String(), &sch.opts.merge, mergeColumnsOf(sch, allColumns(sch)), in, keys, w.t.st.s.opts.Mem)
	if err != nil {
		return nil, err
	}
	rec := array.NewRecordBatch(fileSchema(sch), cols, int64(cols[0].Len()))
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// bucketsOf computes each row's bucket from the bucket key: Paimon's
// bucket function (paimonBuckets), or for tables created before flightd
// used it, the hash their rows were placed by.
func bucketsOf(sch *tableSchema, n int, col func(string) arrow.Array) []int32 {
	b := make([]int32, n)
	nb := sch.opts.buckets
	if nb <= 1 {
		return b
	}
	if !sch.LegacyBucketHash {
		paimonBuckets(sch, b, col)
		return b
	}
	h := make([]uint64, n)
	for _, k := range sch.opts.bucketKey {
		hashColumn(col(k), h)
	}
	for i := range b {
		b[i] = int32(h[i] % uint64(nb))
	}
	return b
}

func partTypes(sch *tableSchema) []arrow.DataType {
	out := make([]arrow.DataType, len(sch.PartitionKeys))
	for i, p := range sch.PartitionKeys {
		out[i] = sch.types[sch.fieldIndex(p)]
	}
	return out
}

// Commit flushes the buffer and publishes one snapshot with everything
// written since the last Commit. The snapshot and all files it references
// are durable when Commit returns. It returns the new snapshot id (the
// current one when there was nothing to commit). On ErrConflict the
// written files are removed and nothing is visible.
func (w *Write) Commit(ctx context.Context) (int64, error) {
	req, err := w.prepare(ctx)
	if err != nil {
		return 0, err
	}
	if req == nil {
		return w.t.st.latestSnapshotID()
	}
	id, err := w.t.st.commit(ctx, req)
	return w.finish(ctx, id, err)
}

// CommitAll commits writes to distinct tables together: either all are
// published, or, when one does not fit (ErrSerialization) or fails before
// the first publication, none is and all are aborted. No other commit of
// this process lands between the check and the publications (the tables'
// commit locks are held throughout), but another process's can: a commit
// of it that conflicts with a later write, a crash, or an I/O error, between
// two publications leaves the earlier ones. It returns the new snapshot ids.
func CommitAll(ctx context.Context, ws []*Write) ([]int64, error) {
	ids := make([]int64, len(ws))
	reqs := make([]*commitRequest, len(ws))
	abort := func() {
		for _, w := range ws {
			w.Abort()
		}
	}
	for i, w := range ws {
		req, err := w.prepare(ctx)
		if err != nil {
			abort()
			return nil, err
		}
		if req == nil {
			ids[i], _ = w.t.st.latestSnapshotID()
			continue
		}
		if err := w.t.st.syncReqDirs(req); err != nil {
			abort()
			return nil, fmt.Errorf("commit %s: %w", w.t.st.id, err)
		}
		reqs[i] = req
	}
	qs := make([]*queuedCommit, len(ws))
	if err := publishAll(ctx, ws, reqs, qs); err != nil {
		abort()
		return nil, err
	}
	// Outside the commit locks: finishing may wait for compaction.
	var first error
	for i, w := range ws {
		switch {
		case reqs[i] == nil:
		case qs[i] == nil:
			w.Abort() // not published: an earlier publication failed
		default:
			var err error
			if ids[i], err = w.finish(ctx, qs[i].id, qs[i].err); err != nil && first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return nil, first
	}
	return ids, nil
}

// publishAll takes the commit locks of the writes' tables in path order,
// checks every request against its table's latest snapshot, then publishes
// them one by one until one fails; qs gets the outcomes.
func publishAll(ctx context.Context, ws []*Write, reqs []*commitRequest, qs []*queuedCommit) error {
	order := make([]int, len(ws))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ws[a].t.st.dir, ws[b].t.st.dir) })
	for _, i := range order {
		ws[i].t.st.commitMu.Lock()
		defer ws[i].t.st.commitMu.Unlock()
	}
	for i, req := range reqs {
		if req == nil {
			continue
		}
		st := ws[i].t.st
		if st.dropped.Load() {
			return st.notFound(errDroppedHere)
		}
		sch, err := st.latestSchema()
		var latest *meta.Snapshot
		if err == nil {
			latest, err = st.resolveSnapshot(0)
		}
		if err == nil {
			err = st.fits(ctx, req, sch, latest, nil, commitDeltas{})
		}
		if err != nil {
			return fmt.Errorf("commit %s: %w", st.id, err)
		}
	}
	for i, req := range reqs {
		if req == nil {
			continue
		}
		qs[i] = &queuedCommit{req: req}
		ws[i].t.st.publish(ctx, []*queuedCommit{qs[i]})
		if qs[i].err != nil {
			return nil
		}
	}
	return nil
}

// prepare flushes the buffer and describes the commit; nil when there is
// nothing to commit (the write is reset). On error the write is aborted.
func (w *Write) prepare(ctx context.Context) (*commitRequest, error) {
	st := w.t.st
	if err := w.broken; err != nil {
		w.Abort()
		return nil, fmt.Errorf("commit %s: rows were lost when a read flushed them (Settle): %w", st.id, err)
	}
	if err := w.flush(ctx); err != nil {
		w.Abort()
		return nil, fmt.Errorf("commit %s: %w", st.id, err)
	}
	if len(w.pending) == 0 && (!w.opts.Overwrite || w.dynamicOverwrite()) && w.staged == nil && !w.opts.CommitEmpty {
		w.reset()
		return nil, nil
	}
	if !w.started {
		if err := w.start(); err != nil {
			w.Abort()
			return nil, err
		}
	}
	req := &commitRequest{
		kind:       meta.CommitAppend,
		adds:       w.pending,
		baseID:     w.baseID,
		strict:     w.opts.ReadModifyWrite,
		nextSeq:    w.maxSeq + 1,
		dirs:       slices.Collect(maps.Keys(w.dirs)),
		changelog:  w.logs,
		properties: w.opts.Properties,
		schema:     w.sch,
		replace:    w.staged,
		create:     w.createOnly,
	}
	if w.sch.hasPK() && w.sch.opts.producer == producerLookup && w.staged == nil {
		req.produce = st.lookupChangelog()
	}
	if w.opts.Overwrite {
		req.kind = meta.CommitOverwrite
		sel, err := w.overwriteSelector()
		if err != nil {
			w.Abort()
			return nil, fmt.Errorf("commit %s: %w", st.id, err)
		}
		req.overwrite = sel
	}
	return req, nil
}

// finish ends the write after its commit returned id, err.
func (w *Write) finish(ctx context.Context, id int64, err error) (int64, error) {
	st := w.t.st
	if err != nil {
		if !errors.Is(err, errCommitAmbiguous) {
			w.Abort()
		} else {
			w.reset()
		}
		return 0, fmt.Errorf("commit %s: %w", st.id, err)
	}
	w.staged = nil
	buckets := map[string]*meta.ManifestEntry{}
	for _, e := range w.pending {
		buckets[bucketOf(e)] = e
	}
	w.reset()
	st.afterCommit(ctx, slices.Collect(maps.Values(buckets)))
	return id, nil
}

// overwriteSelector returns which live files an overwrite replaces.
func (w *Write) overwriteSelector() (func(*meta.ManifestEntry) bool, error) {
	sch := w.sch
	static := func(*meta.ManifestEntry) bool { return true }
	if len(w.opts.OverwritePartition) > 0 {
		if len(sch.PartitionKeys) == 0 {
			return nil, fmt.Errorf("%w: OverwritePartition given but the table is not partitioned", ErrInvalid)
		}
		for k := range w.opts.OverwritePartition {
			if !slices.Contains(sch.PartitionKeys, k) {
				return nil, fmt.Errorf("%w: OverwritePartition: %q is not a partition column", ErrInvalid, k)
			}
		}
		types := partTypes(sch)
		spec := w.opts.OverwritePartition
		static = func(e *meta.ManifestEntry) bool {
			for i, p := range sch.PartitionKeys {
				want, ok := spec[p]
				if !ok {
					continue
				}
				got := meta.PartitionPath([]string{""}, types[i:i+1], e.Partition[i:i+1], sch.opts.defaultPartition)[1:]
				if got != partitionPathValue(want) {
					return false
				}
			}
			return true
		}
	}
	if !w.dynamicOverwrite() {
		return static, nil
	}
	touched := maps.Clone(w.touched)
	return func(e *meta.ManifestEntry) bool {
		_, ok := touched[meta.PartitionKey(e.Partition)]
		return ok && static(e)
	}, nil
}

// dynamicOverwrite: the overwrite replaces only the partitions written.
func (w *Write) dynamicOverwrite() bool {
	return w.opts.Overwrite && w.opts.DynamicPartitionOverwrite && len(w.sch.PartitionKeys) > 0
}

// partitionPathValue escapes a user-given partition value like partition
// paths do.
func partitionPathValue(v string) string {
	return meta.PartitionPath([]string{""}, []arrow.DataType{arrow.BinaryTypes.String}, []meta.Datum{meta.StrDatum(v)}, "")[1:]
}

// Abort drops buffered rows and removes files written but not committed
// (and the schema version of an uncommitted Store.StageTable write). When
// the table was dropped meanwhile, it also removes the directories the
// write created in the dropped table's directory, those that are empty:
// through its pin, so a table or CREATE that made the directory at the
// path again keeps it and its files (pinnedDir.removeSelf).
func (w *Write) Abort() {
	st := w.t.st
	st.removeUncommitted(append(w.pending, w.logs...))
	if w.staged != nil {
		st.abandonStaged(w.staged.ID, w.dirs)
		w.staged = nil
	} else if _, err := st.latestSchema(); errors.Is(err, ErrTableNotFound) && len(w.dirs) > 0 {
		st.removeEmptyDirs(w.dirs)
	}
	w.reset()
}

// abandonStaged removes the schema a staged create or replace published
// and, when no other schema is left (the table did not exist, and no other
// create of it has published), the table's directories: an aborted CREATE
// TABLE ... AS left an empty table directory behind. It holds the locks
// StageTable publishes under, so another create either published first
// (and the directories stay) or makes them again after.
func (st *tableState) abandonStaged(id int64, dirs map[string]bool) {
	st.commitMu.Lock()
	defer st.commitMu.Unlock()
	fsys := st.fs()
	_ = fsys.Remove(joinPath(st.dir, "schema", "schema-"+strconv.FormatInt(id, 10)))
	unlock, err := st.lockSchemaChange()
	if err != nil {
		return
	}
	defer unlock()
	if names, err := fsys.List(joinPath(st.dir, "schema")); err != nil || len(schemaIDs(names)) > 0 {
		return
	}
	st.removeEmptyDirs(dirs, "schema", "snapshot", "manifest")
}

// removeEmptyDirs removes the directories a write made (dirs, then their
// parents up to the table's), the table's subdirectories subs and the
// table's directory, each only if empty: what another writer put there
// stays.
func (st *tableState) removeEmptyDirs(dirs map[string]bool, subs ...string) {
	fsys := st.fs()
	paths := slices.Collect(maps.Keys(dirs))
	slices.SortFunc(paths, func(a, b string) int { return len(b) - len(a) }) // deepest first
	for _, d := range paths {
		for ; len(d) > len(st.dir); d = path.Dir(d) {
			_ = fsys.Remove(d)
		}
	}
	for _, sub := range subs {
		_ = fsys.Remove(joinPath(st.dir, sub))
	}
	_ = fsys.Remove(st.dir)
}

// removeUncommitted removes files written and never committed, and the
// columns their writer offered to the cache (dataWriter.offerKept).
func (st *tableState) removeUncommitted(files []*meta.ManifestEntry) {
	paths := make([]string, 0, len(files))
	for _, e := range files {
		p := joinPath(st.dir, e.File.Path)
		_ = st.fs().Remove(p)
		paths = append(paths, p)
	}
	st.s.forgetColumns(paths...)
}

// fastKeySort sorts rows by (bucket, key, sequence) with a radix sort when
// the key is one non-null integer column, the common case that dominates
// ingest cost.
func fastKeySort(sch *tableSchema, col func(string) arrow.Array, buckets []int32, partCmp func(i, j int) int) ([]int, bool) {
	if !sch.hasPK() || len(sch.PrimaryKeys) != 1 || partCmp != nil || len(sch.opts.sequenceField) > 0 {
		return nil, false
	}
	keyCol := col(sch.PrimaryKeys[0])
	if keyCol.NullN() > 0 {
		return nil, false
	}
	var keyAt func(i int) int64
	switch k := keyCol.(type) {
	case *array.Int64:
		v := k.Int64Values()
		keyAt = func(i int) int64 { return v[i] }
	case *array.Int32:
		v := k.Int32Values()
		keyAt = func(i int) int64 { return int64(v[i]) }
	default:
		return nil, false
	}
	// Sequence numbers grow with the row index within a flush, so a
	// stable sort by (bucket, key) is the (bucket, key, sequence) order:
	// LSD radix sort on the key bytes, then a stable pass by bucket.
	n := keyCol.Len()
	keys := make([]uint64, n)
	idx := make([]int, n)
	for i := range n {
		keys[i] = uint64(keyAt(i)) ^ (1 << 63)
		idx[i] = i
	}
	tk, ti := make([]uint64, n), make([]int, n)
	for shift := 0; shift < 64; shift += 8 {
		var count [257]int
		for _, k := range keys {
			count[(k>>shift)&0xff+1]++
		}
		if slices.Contains(count[:], n) {
			continue // all rows share this byte
		}
		for b := 1; b < 257; b++ {
			count[b] += count[b-1]
		}
		for i, k := range keys {
			d := (k >> shift) & 0xff
			tk[count[d]], ti[count[d]] = k, idx[i]
			count[d]++
		}
		keys, tk, idx, ti = tk, keys, ti, idx
	}
	if sch.opts.buckets > 1 {
		count := make([]int, sch.opts.buckets+1)
		for _, r := range idx {
			count[buckets[r]+1]++
		}
		for b := 1; b < len(count); b++ {
			count[b] += count[b-1]
		}
		for _, r := range idx {
			ti[count[buckets[r]]] = r
			count[buckets[r]]++
		}
		idx = ti
	}
	return idx, true
}
