package tablestore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// WriteOptions configure a Write.
type WriteOptions struct {
	// Overwrite replaces data instead of adding to it (INSERT OVERWRITE):
	// the whole table, or with OverwritePartition the partitions matching
	// that static spec, or with DynamicPartitionOverwrite the partitions the
	// written rows fall into.
	Overwrite bool
	// OverwritePartition maps partition columns (any subset) to values
	// written as in partition paths (dates as 2024-05-01, NULL as the
	// table's partition.default-name).
	OverwritePartition map[string]string
	// DynamicPartitionOverwrite limits an overwrite to the partitions that
	// receive rows (Paimon's dynamic-partition-overwrite).
	DynamicPartitionOverwrite bool
	// BaseSnapshot is the snapshot the written rows were computed from (a
	// read-modify-write such as UPDATE). Commit then fails with ErrConflict
	// if any commit after it (other than compaction) wrote to one of the
	// same buckets. 0: blind writes, which conflict only when sequence
	// numbers could order them wrongly. Overwrites always conflict with
	// data added to their scope after the base.
	BaseSnapshot int64
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
	minSeq   int64
	maxSeq   int64
	pending  []*manifestEntry // flushed, not yet committed
	touched  map[string][]datum
	dirs     map[string]bool
}

// NewWrite starts a write transaction on the table's current schema.
func (t *Table) NewWrite(opts WriteOptions) *Write {
	w := &Write{t: t, sch: t.schema, opts: opts}
	w.reset()
	return w
}

func (w *Write) reset() {
	for _, r := range w.recs {
		r.Release()
	}
	w.started = false
	w.recs, w.kinds, w.seqStart = nil, nil, nil
	w.bytes, w.minSeq, w.maxSeq = 0, -1, -1
	w.pending = nil
	w.touched = map[string][]datum{}
	w.dirs = map[string]bool{}
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
	rec, err := w.conformInput(b, kinds)
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
		if w.minSeq < 0 {
			w.minSeq = start
		}
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
		w.t.st.raiseSeq(sn.NextSequenceNumber)
	}
	w.baseID = id
	if b := w.opts.BaseSnapshot; b > 0 {
		if b > id {
			return fmt.Errorf("write %s: %w: base snapshot %d is newer than the latest %d", w.t.st.id, ErrInvalid, b, id)
		}
		w.baseID = b
	}
	w.started = true
	return nil
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
// table's column order (nil for an empty batch).
func (w *Write) conformInput(b arrow.RecordBatch, kinds []RowKind) (arrow.RecordBatch, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil batch", ErrInvalid)
	}
	if int64(len(kinds)) != b.NumRows() {
		return nil, fmt.Errorf("%w: %d row kinds for %d rows", ErrInvalid, len(kinds), b.NumRows())
	}
	for i, k := range kinds {
		if !k.valid() {
			return nil, fmt.Errorf("%w: row %d: invalid row kind %d", ErrInvalid, i, int8(k))
		}
		if !w.sch.hasPK() && k != Insert {
			return nil, fmt.Errorf("%w: row %d: append table %s accepts only +I rows, got %s", ErrInvalid, i, w.t.st.id, k)
		}
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
			return nil, fmt.Errorf("%w: column %q is NOT NULL but the batch has %d nulls", ErrInvalid, f.Name, c.NullN())
		}
		cols[i] = c
	}
	if b.NumRows() == 0 {
		return nil, nil
	}
	return array.NewRecordBatch(w.sch.arrow, cols, b.NumRows()), nil
}

// flush sorts the buffer by partition, bucket and key, merges versions of a
// key, and writes one level-0 file per partition and bucket.
func (w *Write) flush(ctx context.Context) error {
	if len(w.recs) == 0 {
		return nil
	}
	st := w.t.st
	mem := st.s.opts.Mem
	all, err := w.bufferRecord()
	if err != nil {
		return err
	}
	defer all.Release()
	for _, r := range w.recs {
		r.Release()
	}
	w.recs, w.kinds, w.seqStart, w.bytes = nil, nil, nil, 0

	sch := w.sch
	n := int(all.NumRows())
	sys := 0
	if sch.hasPK() {
		sys = 2
	}
	col := func(name string) arrow.Array { return all.Column(sys + sch.fieldIndex(name)) }
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
	allCols := make([]int, len(sch.Fields))
	for i := range allCols {
		allCols[i] = i
	}
	if sch.hasPK() {
		order = newRowOrder(sch, all, allCols)
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
	if fast, ok := fastKeySort(sch, all, buckets, partCmp); ok {
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
	mf := newMergeFunction(sch)
	for lo := 0; lo < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := lo + 1
		for hi < n && groupCmp(idx[lo], idx[hi]) == 0 {
			hi++
		}
		rows := idx[lo:hi]
		if sch.hasPK() {
			rows = mergeSorted(order, mf, rows, false)
		}
		var part []datum
		for _, p := range sch.PartitionKeys {
			d, _ := datumAt(col(p), idx[lo])
			part = append(part, d)
		}
		e, err := w.t.st.writeRun(ctx, sch, all, rows, part, int(buckets[idx[lo]]), 0, "APPEND", w.dirs)
		if err != nil {
			return err
		}
		w.pending = append(w.pending, e)
		w.touched[partitionKey(part)] = part
		_ = mem
		lo = hi
	}
	return nil
}

// bufferRecord concatenates the buffer into one batch laid out as
// fileSchema (system columns first for key tables).
func (w *Write) bufferRecord() (arrow.RecordBatch, error) {
	mem := w.t.st.s.opts.Mem
	sch := w.sch
	var cols []arrow.Array
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	if sch.hasPK() {
		sb := array.NewInt64Builder(mem)
		kb := array.NewInt8Builder(mem)
		for i, r := range w.recs {
			for j := range r.NumRows() {
				sb.Append(w.seqStart[i] + j)
				kb.Append(int8(w.kinds[i][j]))
			}
		}
		cols = append(cols, sb.NewArray(), kb.NewArray())
		sb.Release()
		kb.Release()
	}
	for c := range sch.Fields {
		parts := make([]arrow.Array, len(w.recs))
		for i, r := range w.recs {
			parts[i] = r.Column(c)
		}
		if len(parts) == 1 {
			parts[0].Retain()
			cols = append(cols, parts[0])
			continue
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, err
		}
		cols = append(cols, a)
	}
	var n int64
	for _, r := range w.recs {
		n += r.NumRows()
	}
	return array.NewRecordBatch(fileSchema(sch), cols, n), nil
}

// bucketsOf computes each row's bucket from the bucket key.
func bucketsOf(sch *tableSchema, n int, col func(string) arrow.Array) []int32 {
	b := make([]int32, n)
	nb := sch.opts.buckets
	if nb <= 1 {
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

// takeRecord gathers rows of rec (nil rows: all, in order).
func takeRecord(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, rows []int) (arrow.RecordBatch, error) {
	if isIdentity(rows, int(rec.NumRows())) {
		rec.Retain()
		return rec, nil
	}
	ib := array.NewInt32Builder(mem)
	ib.Reserve(len(rows))
	for _, r := range rows {
		ib.UnsafeAppend(int32(r))
	}
	ia := ib.NewArray()
	ib.Release()
	defer ia.Release()
	cctx := compute.WithAllocator(ctx, mem)
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range rec.Columns() {
		t, err := compute.TakeArray(cctx, c, ia)
		if err != nil {
			return nil, err
		}
		cols[i] = t
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(rows))), nil
}

func isIdentity(rows []int, n int) bool {
	if len(rows) != n {
		return false
	}
	for i, r := range rows {
		if r != i {
			return false
		}
	}
	return true
}

// writeRun writes rows of rec (laid out as fileSchema(sch), rows already in
// output order) as one data file and describes it.
func (st *tableState) writeRun(ctx context.Context, sch *tableSchema, rec arrow.RecordBatch, rows []int, part []datum, bucket, level int, source string, dirs map[string]bool) (*manifestEntry, error) {
	taken, err := takeRecord(ctx, st.s.opts.Mem, rec, rows)
	if err != nil {
		return nil, err
	}
	defer taken.Release()
	dw := st.newDataWriter(sch, part, bucket, level, source, 0, dirs)
	if err := dw.write(ctx, taken); err != nil {
		dw.abort()
		return nil, err
	}
	ents, err := dw.finish()
	if err != nil {
		return nil, err
	}
	return ents[0], nil
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
	st := w.t.st
	if err := w.flush(ctx); err != nil {
		w.Abort()
		return 0, fmt.Errorf("commit %s: %w", st.id, err)
	}
	if len(w.pending) == 0 && !w.opts.Overwrite {
		w.reset()
		return st.latestSnapshotID()
	}
	if !w.started {
		if err := w.start(); err != nil {
			w.Abort()
			return 0, err
		}
	}
	req := &commitRequest{
		kind:    commitAppend,
		adds:    w.pending,
		baseID:  w.baseID,
		minSeq:  w.minSeq,
		strict:  w.opts.BaseSnapshot > 0,
		nextSeq: w.maxSeq + 1,
		dirs:    slices.Collect(maps.Keys(w.dirs)),
	}
	if w.opts.Overwrite {
		req.kind = commitOverwrite
		sel, err := w.overwriteSelector()
		if err != nil {
			w.Abort()
			return 0, fmt.Errorf("commit %s: %w", st.id, err)
		}
		req.overwrite = sel
	}
	id, err := st.commit(ctx, req)
	if err != nil {
		if !errors.Is(err, errCommitAmbiguous) {
			w.Abort()
		} else {
			w.reset()
		}
		return 0, fmt.Errorf("commit %s: %w", st.id, err)
	}
	buckets := map[string]*manifestEntry{}
	for _, e := range w.pending {
		buckets[partitionKey(e.Partition)+"/"+strconv.Itoa(e.Bucket)] = e
	}
	w.reset()
	st.afterCommit(ctx, slices.Collect(maps.Values(buckets)))
	return id, nil
}

// overwriteSelector returns which live files an overwrite replaces.
func (w *Write) overwriteSelector() (func(*manifestEntry) bool, error) {
	sch := w.sch
	if len(w.opts.OverwritePartition) > 0 && w.opts.DynamicPartitionOverwrite {
		return nil, fmt.Errorf("%w: OverwritePartition and DynamicPartitionOverwrite exclude each other", ErrInvalid)
	}
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
		return func(e *manifestEntry) bool {
			for i, p := range sch.PartitionKeys {
				want, ok := spec[p]
				if !ok {
					continue
				}
				got := partitionPath([]string{""}, types[i:i+1], e.Partition[i:i+1], sch.opts.defaultPartition)[1:]
				if got != partitionPathValue(want) {
					return false
				}
			}
			return true
		}, nil
	}
	if !w.opts.DynamicPartitionOverwrite || len(sch.PartitionKeys) == 0 {
		return func(*manifestEntry) bool { return true }, nil
	}
	touched := maps.Clone(w.touched)
	return func(e *manifestEntry) bool {
		_, ok := touched[partitionKey(e.Partition)]
		return ok
	}, nil
}

// partitionPathValue escapes a user-given partition value like partition
// paths do.
func partitionPathValue(v string) string {
	return partitionPath([]string{""}, []arrow.DataType{arrow.BinaryTypes.String}, []datum{strDatum(v)}, "")[1:]
}

// Abort drops buffered rows and removes files written but not committed.
func (w *Write) Abort() {
	for _, e := range w.pending {
		_ = w.t.st.fs().Remove(joinPath(w.t.st.dir, e.File.Path))
	}
	w.reset()
}

// fastKeySort sorts rows by (bucket, key, sequence) with plain struct
// comparisons when the key is one non-null integer column, the common
// case that dominates ingest cost.
func fastKeySort(sch *tableSchema, all arrow.RecordBatch, buckets []int32, partCmp func(i, j int) int) ([]int, bool) {
	if !sch.hasPK() || len(sch.PrimaryKeys) != 1 || partCmp != nil || len(sch.opts.sequenceField) > 0 {
		return nil, false
	}
	keyCol := all.Column(2 + sch.fieldIndex(sch.PrimaryKeys[0]))
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
	seq := all.Column(0).(*array.Int64).Int64Values()
	type ent struct {
		bucket   int32
		key, seq int64
		idx      int
	}
	ents := make([]ent, len(seq))
	for i := range ents {
		ents[i] = ent{buckets[i], keyAt(i), seq[i], i}
	}
	slices.SortFunc(ents, func(a, b ent) int {
		switch {
		case a.bucket != b.bucket:
			return int(a.bucket - b.bucket)
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	idx := make([]int, len(ents))
	for i, e := range ents {
		idx[i] = e.idx
	}
	return idx, true
}
