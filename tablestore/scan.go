package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore/meta"
)

// ScanSpec says what a scan reads.
type ScanSpec struct {
	// SnapshotID selects the snapshot; 0 reads the latest.
	SnapshotID int64
	// Tag selects a tagged snapshot instead (SnapshotID must be 0).
	Tag string
	// Columns is the projection in output order; nil reads all columns.
	Columns []string
	// Filter skips data that cannot match; nil for none.
	Filter Predicate
	// Parallelism bounds the goroutines that decode the column chunks of
	// the scan's files at once, beyond those reading its splits (0 or 1:
	// each reader decodes alone).
	Parallelism int
}

// ScanStats report data skipping, for EXPLAIN. Row-group counts grow as
// splits are read.
type ScanStats struct {
	SnapshotID         int64
	PartitionsTotal    int
	PartitionsSelected int
	FilesTotal         int
	FilesSelected      int
	RowGroupsRead      int64
	RowGroupsSkipped   int64
	// PageRowsSkipped counts rows of read row groups left out because
	// the page index showed their pages cannot match.
	PageRowsSkipped int64
}

// Scan reads one snapshot of a table, split into independent units.
type Scan struct {
	st        *tableState
	sch       *tableSchema
	snapID    int64
	snapSum   uint32 // the snapshot's checksum (0: not known)
	out       *arrow.Schema
	proj      []int // schema indexes of output columns
	filter    Predicate
	splits    []Split
	orderedBy []string
	stats     ScanStats
	rgRead    atomic.Int64
	rgSkipped atomic.Int64
	// pagesSkipped counts rows the page index left out (PageRowsSkipped).
	pagesSkipped atomic.Int64
	release      func()
	noCache      bool // read around the column cache (compaction)
	// decoders holds a token per extra goroutine decoding a column chunk
	// (Parallelism-1 of them); nil: none.
	decoders chan struct{}
	points   pointFiles
}

// Split is an independent part of a scan (one bucket of one partition, or
// one file of an append table); splits may be read in parallel.
type Split interface {
	Open(ctx context.Context) (BatchReader, error)
	Bucket() int
	// Partition returns the split's partition values as written in
	// partition paths (nil for unpartitioned tables).
	Partition() map[string]string
}

// BatchReader streams the batches of a split.
type BatchReader interface {
	// Next returns the next batch or io.EOF at the end. The batch is
	// borrowed until the next call to Next or Close; never empty.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

// NewScan plans a scan of one snapshot.
func (t *Table) NewScan(ctx context.Context, spec ScanSpec) (*Scan, error) {
	return t.newScan(ctx, spec, 0)
}

// maxLatestRetries bounds how often a read of the latest snapshot (a scan,
// latestSnapshot) resolves it again after expiry took the one it resolved
// (a newer one was committed meanwhile).
const maxLatestRetries = 10

func (t *Table) newScan(ctx context.Context, spec ScanSpec, retries int) (_ *Scan, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := t.st
	// Dropped meanwhile, the table's files may be another table's by now
	// (its schema read against the new table's manifests).
	defer func() { err = st.missing(err) }()
	var sn *meta.Snapshot
	if spec.Tag != "" && spec.SnapshotID != 0 {
		return nil, fmt.Errorf("scan %s: %w: both SnapshotID and Tag given", st.id, ErrInvalid)
	}
	if sn, err = t.named(spec.SnapshotID, spec.Tag); err != nil {
		return nil, err
	}
	sch := t.schema
	if sn != nil && sn.SchemaID > sch.ID {
		// Altered since the handle was opened: the snapshot's files may
		// hold columns or types the handle's schema cannot read.
		if sch, err = st.schema(sn.SchemaID); err != nil {
			return nil, err
		}
	}
	s := &Scan{st: st, sch: sch, filter: spec.Filter}
	if spec.Parallelism > 1 {
		s.decoders = make(chan struct{}, spec.Parallelism-1)
	}
	if err := s.project(spec.Columns); err != nil {
		return nil, err
	}
	if sch.hasPK() {
		s.orderedBy = slices.Clone(sch.PrimaryKeys)
	}
	var files []*meta.ManifestEntry
	if sn != nil {
		s.snapID, s.snapSum = sn.ID, sn.Checksum
		s.stats.SnapshotID = sn.ID
		s.holdSnapshot()
		if spec.Tag == "" {
			// Re-read under the lease: expiry may have removed the snapshot
			// between resolving and leasing it.
			if _, err := st.readSnapshot(sn.ID); err != nil {
				s.Close()
				if errors.Is(err, ErrSnapshotNotFound) && spec.SnapshotID == 0 && t.pin == nil && retries < maxLatestRetries {
					// The latest was asked for, and a newer one is: a lookup
					// index moving to the latest failed an autocommit UPDATE
					// with "snapshot not found" while another session
					// committed and expired (engine TestTxnExpiryModel).
					return t.newScan(ctx, spec, retries+1)
				}
				return nil, err
			}
		}
		if files, err = st.liveFiles(sn); err != nil {
			s.Close()
			return nil, err
		}
	}
	if t.write != nil {
		if pending := t.write.readable.Load(); pending != nil {
			files = append(slices.Clip(files), *pending...)
		}
	}
	if files == nil {
		return s, nil
	}
	s.plan(files)
	return s, nil
}

// project sets the output columns (nil: all) and checks the filter's
// columns against the schema.
func (s *Scan) project(columns []string) error {
	sch, st := s.sch, s.st
	if columns == nil {
		s.proj = allColumns(sch)
	} else {
		for _, c := range columns {
			i := sch.fieldIndex(c)
			if i < 0 {
				return fmt.Errorf("scan %s: %w: no column %q", st.id, ErrInvalid, c)
			}
			if slices.Contains(s.proj, i) {
				return fmt.Errorf("scan %s: %w: column %q listed twice", st.id, ErrInvalid, c)
			}
			s.proj = append(s.proj, i)
		}
	}
	fields := make([]arrow.Field, len(s.proj))
	for k, i := range s.proj {
		fields[k] = sch.arrow.Field(i)
	}
	s.out = arrow.NewSchema(fields, nil)
	cols, err := predColumns(s.filter, nil)
	if err != nil {
		return fmt.Errorf("scan %s: %w", st.id, err)
	}
	for _, c := range cols {
		if sch.fieldIndex(c) < 0 {
			return fmt.Errorf("scan %s: %w: filter column %q does not exist", st.id, ErrInvalid, c)
		}
	}
	return nil
}

// plan prunes partitions and files and groups the rest into splits.
func (s *Scan) plan(files []*meta.ManifestEntry) {
	sch := s.sch
	type group struct {
		part   []meta.Datum
		bucket int
		files  []*meta.ManifestEntry
	}
	var groups []*group
	byKey := map[string]*group{}
	parts := map[string]bool{}
	for _, e := range files {
		k := meta.PartitionKey(e.Partition)
		parts[k] = true
		gk := k + "/" + fmt.Sprint(e.Bucket)
		g := byKey[gk]
		if g == nil {
			g = &group{part: e.Partition, bucket: e.Bucket}
			byKey[gk] = g
			groups = append(groups, g)
		}
		g.files = append(g.files, e)
	}
	s.stats.PartitionsTotal = len(parts)
	s.stats.FilesTotal = len(files)
	selParts := map[string]bool{}
	buckets := s.filterBuckets()
	for _, g := range groups {
		if buckets != nil && !buckets[int32(g.bucket)] {
			continue
		}
		if !mayMatch(s.filter, s.partitionStats(g.part)) {
			continue
		}
		// In a bucket with several files another version of a key may live
		// in another file, so only key columns may prune files there.
		allowed := anyColumn
		if sch.hasPK() && len(g.files) > 1 {
			allowed = sch.isPrimaryKey
		}
		var keep []*meta.ManifestEntry
		for _, e := range g.files {
			if mayMatch(s.filter, s.fileStats(e, allowed)) {
				keep = append(keep, e)
			}
		}
		if len(keep) == 0 {
			continue
		}
		selParts[meta.PartitionKey(g.part)] = true
		s.stats.FilesSelected += len(keep)
		if sch.hasPK() {
			s.splits = append(s.splits, &pkSplit{s: s, bucket: g.bucket, files: keep, allowed: allowed})
			continue
		}
		for _, e := range keep {
			s.splits = append(s.splits, &fileSplit{s: s, bucket: g.bucket, file: e})
		}
	}
	s.stats.PartitionsSelected = len(selParts)
}

func (s *Scan) literal(i int) func(scalar.Scalar) (meta.Datum, bool) {
	return func(v scalar.Scalar) (meta.Datum, bool) { return meta.ScalarDatum(v, s.sch.types[i]) }
}

func (s *Scan) partitionStats(part []meta.Datum) statsFunc {
	return func(col string) (colRange, bool, func(scalar.Scalar) (meta.Datum, bool)) {
		k := slices.Index(s.sch.PartitionKeys, col)
		if k < 0 || k >= len(part) {
			return colRange{}, false, nil
		}
		v := part[k]
		if v.Null {
			return colRange{nullCount: 1, rowCount: 1}, true, s.literal(s.sch.fieldIndex(col))
		}
		return colRange{min: &v, max: &v, nullCount: 0, rowCount: 1}, true, s.literal(s.sch.fieldIndex(col))
	}
}

func (s *Scan) fileStats(e *meta.ManifestEntry, allowed func(string) bool) statsFunc {
	return func(col string) (colRange, bool, func(scalar.Scalar) (meta.Datum, bool)) {
		i := s.sch.fieldIndex(col)
		if i < 0 || !allowed(col) {
			return colRange{}, false, nil
		}
		id := s.sch.Fields[i].ID
		for _, cs := range e.File.ValueStats {
			if cs.ID == id {
				return colRange{min: cs.Min, max: cs.Max, nullCount: cs.NullCount, rowCount: e.File.RowCount}, true, s.literal(i)
			}
		}
		// The column was added after the file was written: all NULL.
		return colRange{nullCount: e.File.RowCount, rowCount: e.File.RowCount}, true, s.literal(i)
	}
}

// Schema returns the output schema (the projection).
func (s *Scan) Schema() *arrow.Schema { return s.out }

// Splits returns the independent parts of the scan.
func (s *Scan) Splits() []Split { return s.splits }

// Each reads the splits one after another and passes every batch to fn
// (borrowed for the call); an error of fn stops the scan and is returned.
func (s *Scan) Each(ctx context.Context, fn func(arrow.RecordBatch) error) error {
	for _, sp := range s.splits {
		rd, err := sp.Open(ctx)
		if err != nil {
			return err
		}
		for {
			b, err := rd.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err == nil {
				err = fn(b)
			}
			if err != nil {
				_ = rd.Close()
				return err
			}
		}
		if err := rd.Close(); err != nil {
			return err
		}
	}
	return nil
}

// OrderedBy returns the columns each split's output is sorted by (the
// primary key for key tables, none for append tables).
func (s *Scan) OrderedBy() []string { return s.orderedBy }

// Bucketing reports how rows are spread over splits: by hash of keys into
// n buckets per partition (keys empty: not bucketed by any column). Two
// scans with equal bucketing keys and counts can be joined bucket by
// bucket.
func (s *Scan) Bucketing() (keys []string, n int) {
	if len(s.sch.opts.bucketKey) == 0 {
		return nil, s.sch.opts.buckets
	}
	return slices.Clone(s.sch.opts.bucketKey), s.sch.opts.buckets
}

// SnapshotID returns the snapshot read (0 when the table had none).
func (s *Scan) SnapshotID() int64 { return s.snapID }

// Current reports whether the table still has the snapshot s reads, as it
// was: not a table dropped and created again under the name since, or
// rolled back past it (a table has no identity beyond its path). It reads
// that snapshot again; one that expired is not known to be current.
func (s *Scan) Current() (bool, error) {
	if s.snapID == 0 {
		return true, nil
	}
	sn, err := s.st.readSnapshot(s.snapID)
	if errors.Is(err, ErrSnapshotNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return sn.Checksum == s.snapSum, nil
}

// Stats reports data skipping so far.
func (s *Scan) Stats() ScanStats {
	st := s.stats
	st.RowGroupsRead = s.rgRead.Load()
	st.RowGroupsSkipped = s.rgSkipped.Load()
	st.PageRowsSkipped = s.pagesSkipped.Load()
	return st
}

// selectRowGroups returns the row groups of df that may match.
func (s *Scan) selectRowGroups(df *dataFile, allowed func(string) bool) []int {
	var rgs []int
	for rg := range df.numRowGroups() {
		if s.filter == nil || mayMatch(s.filter, df.rowGroupStats(rg, s.sch, allowed)) {
			rgs = append(rgs, rg)
		}
	}
	s.rgRead.Add(int64(len(rgs)))
	s.rgSkipped.Add(int64(df.numRowGroups() - len(rgs)))
	return rgs
}

// verifyIfFull checksums the file when every row group is read.
func verifyIfFull(ctx context.Context, df *dataFile, rgs []int) error {
	if len(rgs) != df.numRowGroups() {
		return nil
	}
	if err := df.verify(ctx); err != nil {
		df.Close()
		return err
	}
	return nil
}

// fileSplit streams one file of an append table.
type fileSplit struct {
	s      *Scan
	bucket int
	file   *meta.ManifestEntry
}

func (f *fileSplit) Bucket() int { return f.bucket }

func (f *fileSplit) Partition() map[string]string { return partitionValues(f.s.sch, f.file.Partition) }

// openFile opens a data file of the scan's snapshot. A file gone because
// another node's expiry took the snapshot (this process's holds do not
// reach there) is a conflict, as for a transaction whose snapshot
// expired: the statement can be retried at a later snapshot. The
// snapshot's file itself tells, not this process's cache of it.
func (s *Scan) openFile(e *meta.ManifestEntry) (*dataFile, error) {
	df, err := s.st.openDataFile(e)
	if err != nil && errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrTableNotFound) && s.snapID > 0 {
		if _, serr := s.st.fs().Stat(s.st.snapshotPath(s.snapID)); errors.Is(serr, fs.ErrNotExist) {
			if derr := s.st.droppedOr(err); errors.Is(derr, ErrTableNotFound) {
				return nil, derr // the whole table went, not a snapshot
			}
			return nil, fmt.Errorf("table %s: snapshot %d was expired (by another node) while this statement read it: %w", s.st.id, s.snapID, ErrSerialization)
		}
	}
	return df, err
}

// anyColumn lets every column's statistics prune: for files not merged
// with other versions of their keys, and for reads without a filter.
func anyColumn(string) bool { return true }

func (f *fileSplit) Open(ctx context.Context) (BatchReader, error) {
	s := f.s
	df, err := s.openFile(f.file)
	if err != nil {
		return nil, err
	}
	rgs := s.selectRowGroups(df, anyColumn)
	if err := verifyIfFull(ctx, df, rgs); err != nil {
		return nil, err
	}
	r, err := newStreamReader(ctx, s, df, rgs, newReadTarget(s.sch, s.proj, false))
	if err != nil {
		return nil, err
	}
	r.skipPages(anyColumn)
	return r, nil
}

// streamReader streams the selected row groups of one file, dropping
// retracting rows of key-table files.
type streamReader struct {
	raw  bool // keep system columns and retracting rows (merge input)
	s    *Scan
	df   *dataFile
	rt   *readTarget
	pos  []int
	rr   *chunkSource // raw columns of the selected row groups
	cur  arrow.RecordBatch
	done bool
}

func newStreamReader(ctx context.Context, s *Scan, df *dataFile, rgs []int, rt *readTarget) (*streamReader, error) {
	r := &streamReader{s: s, df: df, rt: rt}
	if len(rgs) == 0 {
		r.done = true
		return r, nil
	}
	cols, pos, err := df.fileColumns(rt)
	if err != nil {
		df.Close()
		return nil, err
	}
	r.pos = pos
	if len(cols) == 0 {
		// Nothing stored is needed (e.g. only columns added later): read
		// the smallest column for row counts.
		cols = []int{0}
		for i := range pos {
			pos[i] = -1
		}
	}
	src := &chunkSource{ctx: ctx, decoders: s.decoders, df: df, cols: cols, rgs: rgs, batch: s.st.s.opts.BatchSize, mem: s.st.s.opts.Mem}
	if !s.noCache {
		src.cache = s.st.s.columns
	}
	r.rr = src
	return r, nil
}

// skipPages makes r read only the pages of its row groups that the scan's
// filter may match, judged by the columns allowed admits.
func (r *streamReader) skipPages(allowed func(string) bool) {
	if r.rr != nil && r.s.filter != nil {
		r.rr.ranges = func(rg int) ([]rowRange, bool) { return r.s.pageRanges(r.df, rg, allowed) }
	}
}

func (r *streamReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	mem := r.s.st.s.opts.Mem
	for !r.done {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, err := r.rr.Read()
		if errors.Is(err, io.EOF) || (err == nil && rec == nil) {
			r.done = true
			break
		}
		if err != nil {
			return nil, corruptf(r.df.path, err)
		}
		out, err := conform(ctx, mem, r.rt, r.pos, rec.Columns(), int(rec.NumRows()))
		if err != nil {
			return nil, err
		}
		if r.rt.sys && !r.raw {
			out, err = dropSys(ctx, mem, out, len(r.s.proj))
			if err != nil {
				return nil, err
			}
		}
		if out.NumRows() == 0 {
			out.Release()
			continue
		}
		r.cur = out
		return out, nil
	}
	return nil, io.EOF
}

// dropSys filters out retracting rows and the system columns.
func dropSys(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, ncols int) (arrow.RecordBatch, error) {
	defer rec.Release()
	kinds := rec.Column(1).(*array.Int8).Int8Values()
	retracts := 0
	for _, k := range kinds {
		if RowKind(k).IsRetract() {
			retracts++
		}
	}
	proj := rec.NewSlice(0, rec.NumRows()) // retained copy to select from
	defer proj.Release()
	cols := proj.Columns()[2 : 2+ncols]
	fields := proj.Schema().Fields()[2 : 2+ncols]
	sel := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, proj.NumRows())
	if retracts == 0 {
		return sel, nil
	}
	defer sel.Release()
	mb := array.NewBooleanBuilder(mem)
	defer mb.Release()
	for _, k := range kinds {
		mb.Append(!RowKind(k).IsRetract())
	}
	mask := mb.NewBooleanArray()
	defer mask.Release()
	cctx := compute.WithAllocator(ctx, mem)
	out, err := compute.FilterRecordBatch(cctx, sel, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (r *streamReader) Close() error {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	if r.df != nil {
		err := r.df.Close()
		r.df = nil
		return err
	}
	return nil
}

// pkSplit reads one bucket of a key table: a k-way merge of its sorted
// runs through the merge function, in primary-key order.
type pkSplit struct {
	s       *Scan
	bucket  int
	files   []*meta.ManifestEntry
	allowed func(string) bool
}

func (p *pkSplit) Bucket() int { return p.bucket }

func (p *pkSplit) Partition() map[string]string {
	return partitionValues(p.s.sch, p.files[0].Partition)
}

// partitionValues renders partition values like partition paths do.
func partitionValues(sch *tableSchema, part []meta.Datum) map[string]string {
	if len(sch.PartitionKeys) == 0 {
		return nil
	}
	types := partTypes(sch)
	out := make(map[string]string, len(part))
	for i, k := range sch.PartitionKeys {
		v := meta.PartitionPath([]string{""}, types[i:i+1], part[i:i+1], sch.opts.defaultPartition)[1:]
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
		out[k] = v
	}
	return out
}

func (p *pkSplit) Open(ctx context.Context) (BatchReader, error) {
	s := p.s
	if files, ok := disjointKeyRanges(p.files); ok {
		// Each file holds one version per key and no two files share a
		// key: stream them one after the other in key order.
		return &chainReader{s: s, files: files, allowed: p.allowed, rt: newReadTarget(s.sch, s.proj, true)}, nil
	}
	return newMergeReader(ctx, s, p.files, p.allowed, false, false)
}

// disjointKeyRanges orders files by key range and reports whether the
// ranges are disjoint (so no merge is needed).
func disjointKeyRanges(files []*meta.ManifestEntry) ([]*meta.ManifestEntry, bool) {
	if len(files) == 1 {
		return files, true
	}
	sorted := slices.Clone(files)
	ok := true
	slices.SortFunc(sorted, func(a, b *meta.ManifestEntry) int {
		c, cok := compareKeys(a.File.MinKey, b.File.MinKey)
		ok = ok && cok
		return c
	})
	for i := 1; ok && i < len(sorted); i++ {
		c, cok := compareKeys(sorted[i-1].File.MaxKey, sorted[i].File.MinKey)
		ok = cok && c < 0
	}
	return sorted, ok
}

// compareKeys compares key tuples; ok is false when any part is not
// comparable (e.g. decimal keys have no datums).
func compareKeys(a, b []meta.Datum) (int, bool) {
	if len(a) != len(b) || len(a) == 0 {
		return 0, false
	}
	for i := range a {
		c, ok := meta.CompareDatum(a[i], b[i])
		if !ok {
			return 0, false
		}
		if c != 0 {
			return c, true
		}
	}
	return 0, true
}

// chainReader streams files with disjoint key ranges in key order.
type chainReader struct {
	s       *Scan
	files   []*meta.ManifestEntry
	allowed func(string) bool
	rt      *readTarget
	raw     bool // keep system columns and retracting rows
	cur     *streamReader
}

func (c *chainReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if c.cur != nil {
			b, err := c.cur.Next(ctx)
			if !errors.Is(err, io.EOF) {
				return b, err
			}
			if err := c.cur.Close(); err != nil {
				return nil, err
			}
			c.cur = nil
		}
		if len(c.files) == 0 {
			return nil, io.EOF
		}
		s := c.s
		df, err := s.openFile(c.files[0])
		if err != nil {
			return nil, err
		}
		c.files = c.files[1:]
		rgs := s.selectRowGroups(df, c.allowed)
		if err := verifyIfFull(ctx, df, rgs); err != nil {
			return nil, err
		}
		if c.cur, err = newStreamReader(ctx, s, df, rgs, c.rt); err != nil {
			return nil, err
		}
		c.cur.raw = c.raw
		c.cur.skipPages(c.allowed)
	}
}

func (c *chainReader) Close() error {
	if c.cur != nil {
		err := c.cur.Close()
		c.cur = nil
		return err
	}
	return nil
}

var (
	_ Split       = (*pkSplit)(nil)
	_ Split       = (*fileSplit)(nil)
	_ BatchReader = (*streamReader)(nil)
	_ BatchReader = (*chainReader)(nil)
	_ BatchReader = (*mergeReader)(nil)
	_ FS          = localFS{}
)
