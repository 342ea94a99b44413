package tablestore

import (
	"bufio"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/internal/arrowstr"
	"github.com/flightd/flightd/tablestore/meta"
)

// dataWriter writes the rows of one partition and bucket, in order, into
// Parquet data files (laid out as fileSchema(sch)), rolling to a new file
// once one reaches the target size, and describes each file for the
// manifest. Files are synced before they are reported.
type dataWriter struct {
	st     *tableState
	sch    *tableSchema
	part   []meta.Datum
	bucket int
	level  int
	source string
	target int64 // bytes; 0: one file
	dirs   map[string]bool
	rel    string
	fsch   *arrow.Schema
	prefix string // of file names: data- or changelog-

	f    File
	cw   *countingWriter
	bw   *bufio.Writer
	pw   *pqarrow.FileWriter
	name string
	meta meta.DataFile
	acc  []statAcc
	// footerBounds marks the string and binary columns whose bounds are
	// taken from the chunk statistics Parquet computes anyway, once the
	// file is closed, instead of comparing every value twice (flightd's
	// own bounds were 4% of a Nexmark bid ingest's CPU).
	footerBounds []bool
	last         []meta.Datum // key of the last row written
	// oneBatch, when set (a commit's flush), says each file gets one
	// batch: it is written as row groups of its own, unbuffered, and its
	// columns go to the column cache once the file is synced (kept holds
	// them while the file has had that one batch; see offerKept).
	oneBatch bool
	kept     []arrow.Array
	batches  int

	done []*meta.ManifestEntry
}

func (st *tableState) newDataWriter(sch *tableSchema, part []meta.Datum, bucket, level int, source string, target int64, dirs map[string]bool) *dataWriter {
	rel := joinPath(meta.PartitionPath(sch.PartitionKeys, partTypes(sch), part, sch.opts.defaultPartition), "bucket-"+strconv.Itoa(bucket))
	return &dataWriter{st: st, sch: sch, part: part, bucket: bucket, level: level, source: source,
		target: target, dirs: dirs, rel: rel, fsch: fileSchema(sch), prefix: "data-"}
}

// newChangelogWriter writes changelog files: the data-file layout, named
// changelog-*.parquet, listed only in a snapshot's changelog manifests.
func (st *tableState) newChangelogWriter(sch *tableSchema, part []meta.Datum, bucket int, source string, dirs map[string]bool) *dataWriter {
	d := st.newDataWriter(sch, part, bucket, 0, source, 0, dirs)
	d.prefix = "changelog-"
	return d
}

// open starts a new file; first is the first batch it gets (columns as
// fileSchema(sch)).
func (d *dataWriter) open(first arrow.RecordBatch) error {
	if err := d.create(); err != nil {
		return err
	}
	mem := d.st.s.opts.Mem
	concat := !d.sch.hasPK() && d.level == 0 &&
		concatenates(d.sch.opts, first.NumRows(), util.TotalRecordSize(first), int(first.NumCols()))
	codec := d.sch.opts.codec(d.level, first.NumRows(), concat)
	wp := []parquet.WriterProperty{
		parquet.WithAllocator(mem),
		parquet.WithCompression(codec),
		parquet.WithCompressionLevel(compressionLevel(&d.sch.opts, codec)),
		parquet.WithMaxRowGroupLength(d.sch.opts.rowGroupRows),
		parquet.WithStats(true),
		// Min/max per page, so scans skip the pages a filter excludes
		// (pageRanges); columns without statistics get none. Pages of
		// 64 KiB (arrow-go's default is 1 MiB, a whole row group of most
		// columns) give a row group several to choose from.
		parquet.WithPageIndexEnabled(true),
		parquet.WithDataPageSize(64 << 10),
		parquet.WithCreatedBy("flightd tablestore"),
		parquet.WithDictionaryDefault(false),
		// DECIMAL(p<=18) as INT32/INT64, as Paimon writes them: decoding
		// big-endian fixed-length bytes was most of a cold scan's time.
		parquet.WithStoreDecimalAsInteger(true),
	}
	// Dictionaries pay off for strings; numbers mostly fall back to plain
	// encoding after building one in vain. Files compaction will rewrite
	// are short-lived and skip them altogether.
	switch {
	case d.level == 0 && d.sch.hasPK():
		// Level-0 files share their bucket with other runs, where only key
		// columns may prune row groups: skip the other columns' page
		// statistics (the manifest keeps file-level ones).
		wp = append(wp, parquet.WithStats(false))
		for _, k := range d.sch.PrimaryKeys {
			wp = append(wp, parquet.WithStatsFor(k, true))
		}
	case d.level == 0 && first.NumRows() < minCopyRows(d.sch.opts):
		// An append table's small commit file, whose row group compaction
		// concatenates with others' (concat) or rewrites: a page index buys
		// nothing and a dictionary would stop the concatenation. Row group
		// statistics are merged into the concatenated row group's; a file
		// rewritten is pruned by the manifest's file statistics. Without
		// them and dictionaries, the Nexmark load (auction and person files
		// of 600 and 200 rows a commit) took 5% less CPU.
		wp = append(wp, parquet.WithStats(concat), parquet.WithPageIndexEnabled(false))
	default:
		for i, f := range d.fsch.Fields() {
			if arrow.IsBaseBinary(f.Type.ID()) && !mostlyDistinct(first.Column(i)) {
				wp = append(wp, parquet.WithDictionaryFor(f.Name, true))
			}
		}
	}
	props := parquet.NewWriterProperties(wp...)
	sys := len(d.fsch.Fields()) - len(d.sch.Fields)
	d.footerBounds = make([]bool, len(d.sch.Fields))
	for i := range d.footerBounds {
		f := d.fsch.Field(sys + i)
		id := f.Type.ID()
		d.footerBounds[i] = (id == arrow.STRING || id == arrow.BINARY) && props.StatisticsEnabledFor(f.Name)
	}
	var err error
	d.pw, err = pqarrow.NewFileWriter(d.fsch, d.bw, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem), pqarrow.WithStoreSchema()))
	if err != nil {
		d.discard()
		return err
	}
	return nil
}

// create starts a new file, empty, and its manifest entry.
func (d *dataWriter) create() error {
	dir := joinPath(d.st.dir, d.rel)
	if !d.dirs[dir] {
		if err := d.st.fs().MkdirIn(d.st.dir, d.rel); err != nil {
			return d.st.droppedOr(fmt.Errorf("create %s: %w", dir, err))
		}
		d.dirs[dir] = true
	}
	d.name = d.prefix + newUUID() + "-0.parquet"
	f, err := d.st.fs().Create(joinPath(dir, d.name))
	if err != nil {
		return d.st.droppedOr(fmt.Errorf("create %s: %w", joinPath(dir, d.name), err))
	}
	d.f = f
	d.cw = &countingWriter{w: f}
	d.bw = fileBuffers.Get().(*bufio.Writer)
	d.bw.Reset(d.cw)
	d.meta = meta.DataFile{FileName: d.name, Path: joinPath(d.rel, d.name), SchemaID: d.sch.ID, Level: d.level, FileSource: d.source}
	d.acc = make([]statAcc, len(d.sch.Fields))
	d.footerBounds = nil
	d.batches = 0
	return nil
}

// write appends rec (columns as fileSchema(sch), rows in output order).
func (d *dataWriter) write(ctx context.Context, rec arrow.RecordBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if rec.NumRows() == 0 {
		return nil
	}
	if d.pw == nil {
		if err := d.open(rec); err != nil {
			return err
		}
	}
	// Relabel with the file schema (field IDs) whatever rec was read as.
	out := array.NewRecordBatch(d.fsch, rec.Columns(), rec.NumRows())
	defer out.Release()
	// WriteBuffered copies a row group's encoded columns into growing
	// buffers until it closes; a batch that is the whole file needs none.
	write := d.pw.WriteBuffered
	if d.oneBatch {
		write = d.pw.Write
	}
	if err := write(out); err != nil {
		return fmt.Errorf("write %s: %w", d.meta.Path, err)
	}
	d.describe(out)
	d.keep(out)
	if d.target > 0 && d.cw.n+int64(d.bw.Buffered())+d.pw.RowGroupTotalBytesWritten() >= d.target {
		return d.closeFile()
	}
	return nil
}

// describe folds rec into the current file's manifest entry.
func (d *dataWriter) describe(out arrow.RecordBatch) {
	sch := d.sch
	m := &d.meta
	n := int(out.NumRows())
	sys := 0
	if sch.hasPK() {
		sys = 2
		seq := out.Column(0).(*array.Int64).Int64Values()
		for i, s := range seq {
			if m.RowCount == 0 && i == 0 {
				m.MinSeq, m.MaxSeq = s, s
			}
			m.MinSeq, m.MaxSeq = min(m.MinSeq, s), max(m.MaxSeq, s)
		}
		for _, k := range out.Column(1).(*array.Int8).Int8Values() {
			if RowKind(k).IsRetract() {
				m.DeleteRowCount++
			}
		}
		key := func(row int) []meta.Datum {
			var ds []meta.Datum
			for _, k := range sch.PrimaryKeys {
				d, _ := meta.DatumAt(out.Column(sys+sch.fieldIndex(k)), row)
				ds = append(ds, meta.KeptDatum(d))
			}
			return ds
		}
		if m.RowCount == 0 {
			m.MinKey = key(0)
		}
		d.last = key(n - 1)
	}
	for i, f := range sch.Fields {
		col := out.Column(sys + i)
		if d.footerBounds != nil && d.footerBounds[i] {
			d.acc[i].count(int64(col.NullN()), int64(n))
		} else {
			d.acc[i].add(columnStats(f.ID, col), int64(n))
		}
		d.acc[i].addDistinct(col)
	}
	m.RowCount += int64(n)
}

// keep holds the columns of out while they are all the current file has
// had, for offerKept.
func (d *dataWriter) keep(out arrow.RecordBatch) {
	if !d.oneBatch || d.st.s.columns == nil {
		return
	}
	d.batches++
	if d.batches > 1 {
		d.releaseKept()
		return
	}
	d.kept = slices.Clone(out.Columns())
	for _, a := range d.kept {
		a.Retain()
	}
}

func (d *dataWriter) releaseKept() {
	for _, a := range d.kept {
		a.Release()
	}
	d.kept = nil
}

// offerKept offers the columns kept of the synced file to the column
// cache under the keys of its row group 0, when that one row group is
// all the file holds and a reader decodes it to the same types: a stream
// reading each commit as it lands (the change feed) then finds the rows
// it would decode from the file just written (a tenth of a Nexmark q0
// run's CPU was that decoding). The cache may decline them.
func (d *dataWriter) offerKept(md *metadata.FileMetaData) {
	defer d.releaseKept()
	if d.kept == nil || md == nil || md.NumRowGroups() != 1 {
		return
	}
	l, err := newFileLayout(md, d.st.s.readProps())
	if err != nil || len(l.types) != len(d.kept) {
		return
	}
	path := joinPath(d.st.dir, d.meta.Path)
	for i, a := range d.kept {
		if !arrow.TypeEqual(a.DataType(), l.types[i]) {
			continue
		}
		// Copied: the batch may be a slice of a client's message, whose
		// whole body a cached column would keep alive while the cache
		// counts only the column (a copy costs a memcpy; decoding the
		// file costs several times that).
		c, err := array.Concatenate([]arrow.Array{a}, d.st.s.opts.Mem)
		if err != nil {
			continue
		}
		d.st.s.columns.Put(chunkKey(path, 0, i), c)
		c.Release()
	}
}

// addFooterBounds folds the bounds of the footerBounds columns from the
// chunk statistics of md (nil: none; bounds then unknown). Parquet keeps
// no bound longer than its maximum statistics size: such a chunk leaves
// the file's bounds unknown.
func (d *dataWriter) addFooterBounds(md *metadata.FileMetaData) {
	sys := len(d.fsch.Fields()) - len(d.sch.Fields)
	for i, ok := range d.footerBounds {
		if !ok {
			continue
		}
		name := d.fsch.Field(sys + i).Name
		leaf := -1
		if md != nil {
			leaf = md.Schema.ColumnIndexByName(name)
		}
		if leaf < 0 {
			d.acc[i].addBounds(nil, nil)
			continue
		}
		for rg := range md.NumRowGroups() {
			cc, err := md.RowGroup(rg).ColumnChunk(leaf)
			var ps metadata.TypedStatistics
			if err == nil {
				ps, err = cc.Statistics()
			}
			bs, _ := ps.(*metadata.ByteArrayStatistics)
			switch {
			case err == nil && bs != nil && bs.HasMinMax():
				if d.fsch.Field(sys+i).Type.ID() == arrow.STRING {
					d.acc[i].addBounds(clipBounds(meta.StrDatum(string(bs.Min())), meta.StrDatum(string(bs.Max()))))
				} else {
					d.acc[i].addBounds(clipBounds(meta.BinDatum(bs.Min()), meta.BinDatum(bs.Max())))
				}
			case err == nil && bs != nil && bs.HasNullCount() && bs.NullCount() == cc.NumValues():
				// Only NULLs: nothing to bound.
			default:
				d.acc[i].addBounds(nil, nil)
			}
		}
	}
}

// closeFile finishes and syncs the current file.
func (d *dataWriter) closeFile() error {
	if d.pw == nil {
		return nil
	}
	err := d.pw.Close()
	var md *metadata.FileMetaData
	if err == nil {
		md, _ = d.pw.FileMetadata()
		d.addFooterBounds(md)
	}
	d.pw = nil
	if err = d.syncFile(err); err == nil {
		d.offerKept(md)
	}
	d.releaseKept()
	return err
}

// syncFile flushes, syncs and closes the current file, unless err (of
// writing it) is set, and describes it for the manifest.
func (d *dataWriter) syncFile(err error) error {
	if err == nil {
		err = d.bw.Flush()
	}
	if err == nil {
		err = d.f.Sync()
	}
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	d.f = nil
	d.releaseBuffer()
	if err != nil {
		_ = d.st.fs().Remove(joinPath(d.st.dir, d.meta.Path))
		return fmt.Errorf("write %s: %w", d.meta.Path, err)
	}
	m := d.meta
	m.FileSize, m.CreationMillis = d.cw.n, d.st.s.opts.Now().UnixMilli()
	crc := d.cw.crc
	m.CRC = &crc
	m.MaxKey = d.last
	for i, f := range d.sch.Fields {
		m.ValueStats = append(m.ValueStats, d.acc[i].stats(f.ID))
		d.acc[i].freeDistinct()
	}
	d.done = append(d.done, &meta.ManifestEntry{Kind: meta.KindAdd, Partition: d.part, Bucket: d.bucket, TotalBuckets: d.sch.opts.buckets, File: m})
	return nil
}

// finish closes the last file and returns the files written.
func (d *dataWriter) finish() ([]*meta.ManifestEntry, error) {
	if err := d.closeFile(); err != nil {
		d.abort()
		return nil, err
	}
	return d.done, nil
}

// discard drops the file being written.
func (d *dataWriter) discard() {
	if d.pw != nil {
		_ = d.pw.Close()
		d.pw = nil
	}
	if d.f != nil {
		_ = d.f.Close()
		d.f = nil
		_ = d.st.fs().Remove(joinPath(d.st.dir, d.rel, d.name))
	}
	d.releaseBuffer()
	d.releaseKept()
}

// fileBuffers holds the 1 MiB write buffers of data files: a commit
// writes a file per table and bucket, and allocating (and zeroing) a new
// buffer for each was a visible share of a small commit's cost.
var fileBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<20) }}

// releaseBuffer returns the file's write buffer, flushed or abandoned.
func (d *dataWriter) releaseBuffer() {
	if d.bw != nil {
		d.bw.Reset(nil)
		fileBuffers.Put(d.bw)
		d.bw = nil
	}
}

// abort removes every file written.
func (d *dataWriter) abort() {
	d.discard()
	d.st.removeUncommitted(d.done)
	d.done = nil
}

// statAcc merges column statistics across batches.
type statAcc struct {
	min, max     *meta.Datum
	nulls, rows  int64
	noMin, noMax bool // a batch had values but no bound
	// distinct holds hashes of a string column's values while there are
	// at most maxTrackedNDV of them (estimates of col = 'x' need the count:
	// strings have no range to derive it from); tooMany once exceeded.
	distinct *ndvSet
	tooMany  bool
}

// ndvSet is a set of at most maxTrackedNDV+1 hashes in a table of twice
// that many slots (open addressing), reused from file to file: a Go map
// grew through seven sizes to its 1,024 entries for each string column of
// every file written, and was dropped (0.11 of 6.47 CPU s of the
// 1,000,000-event Nexmark load, and a share of its page faults).
type ndvSet struct {
	slots [ndvSlots]uint64 // 0: empty
	n     int
	zero  bool // the hash 0, which marks an empty slot, was added
}

const ndvSlots = 2048 // a power of two, at least 2*(maxTrackedNDV+1)

var ndvSets = sync.Pool{New: func() any { return new(ndvSet) }}

func (s *ndvSet) add(h uint64) {
	if h == 0 {
		if !s.zero {
			s.zero = true
			s.n++
		}
		return
	}
	for i := h & (ndvSlots - 1); ; i = (i + 1) & (ndvSlots - 1) {
		switch s.slots[i] {
		case h:
			return
		case 0:
			s.slots[i] = h
			s.n++
			return
		}
	}
}

// freeDistinct returns the set to the pool, emptied.
func (a *statAcc) freeDistinct() {
	if a.distinct != nil {
		*a.distinct = ndvSet{}
		ndvSets.Put(a.distinct)
		a.distinct = nil
	}
}

// maxTrackedNDV bounds the distinct values counted per string column and
// file: dimension attributes (d_day_name, cd_marital_status) fit, keys and
// free text do not and are not worth the memory.
const maxTrackedNDV = 1024

// ndvSeed hashes values for distinct counts; counts are per file, so the
// seed need not outlive the process.
var ndvSeed = maphash.MakeSeed()

// addDistinct counts the distinct values of a string or binary column.
func (a *statAcc) addDistinct(arr arrow.Array) {
	if a.tooMany || arr.Len() == 0 { // an empty array may have no offsets
		return
	}
	switch c := arr.(type) {
	case *array.String:
		addDistinctValues(a, c, c.ValueOffsets(), c.ValueBytes())
	case *array.LargeString:
		addDistinctValues(a, c, c.ValueOffsets(), c.ValueBytes())
	case *array.Binary:
		addDistinctValues(a, c, c.ValueOffsets(), c.ValueBytes())
	case *array.LargeBinary:
		addDistinctValues(a, c, c.ValueOffsets(), c.ValueBytes())
	}
}

// addDistinctValues hashes the values of a variable-width array straight
// from its offsets and data (this runs per row of every file written: no
// per-row indirect call). data starts at offs[0], as ValueBytes returns it.
func addDistinctValues[O int32 | int64](a *statAcc, arr arrow.Array, offs []O, data []byte) {
	if a.distinct == nil {
		a.distinct = ndvSets.Get().(*ndvSet)
	}
	nulls, base := arr.NullN() > 0, offs[0]
	for i := range len(offs) - 1 {
		if nulls && arr.IsNull(i) {
			continue
		}
		a.distinct.add(maphash.Bytes(ndvSeed, data[offs[i]-base:offs[i+1]-base]))
		if a.distinct.n > maxTrackedNDV {
			a.freeDistinct()
			a.tooMany = true
			return
		}
	}
}

func (a *statAcc) add(cs meta.ColStats, rows int64) {
	a.count(cs.NullCount, rows)
	if rows > cs.NullCount {
		a.addBounds(cs.Min, cs.Max)
	}
}

// count adds rows, nulls of them NULL, leaving the bounds to addBounds.
func (a *statAcc) count(nulls, rows int64) {
	a.nulls += nulls
	a.rows += rows
}

// addBounds folds in the bounds of some non-null values (nil: unknown).
func (a *statAcc) addBounds(mn, mx *meta.Datum) {
	if mn == nil {
		a.noMin = true
	} else if a.min == nil {
		a.min = mn
	} else if c, ok := meta.CompareDatum(*mn, *a.min); !ok {
		a.noMin = true
	} else if c < 0 {
		a.min = mn
	}
	if mx == nil {
		a.noMax = true
	} else if a.max == nil {
		a.max = mx
	} else if c, ok := meta.CompareDatum(*mx, *a.max); !ok {
		a.noMax = true
	} else if c > 0 {
		a.max = mx
	}
}

func (a *statAcc) stats(id int) meta.ColStats {
	cs := meta.ColStats{ID: id, NullCount: a.nulls}
	if !a.tooMany && a.distinct != nil {
		cs.NDV = int64(a.distinct.n)
	}
	if !a.noMin {
		cs.Min = a.min
	}
	if !a.noMax {
		cs.Max = a.max
	}
	return cs
}

// dictionarySample is how many leading values of a file's first batch
// mostlyDistinct looks at.
const dictionarySample = 1024

// mostlyDistinct reports whether more than half of the first
// dictionarySample non-null values of a string or binary column differ
// (at least 64 of them): there a dictionary stores nearly every value once
// more and costs a hash of each, for no smaller file (a random `extra` or
// URL column of an event stream; most of an ingest's encoding time).
func mostlyDistinct(col arrow.Array) bool {
	value, ok := arrowstr.Viewer(col)
	if !ok {
		return false
	}
	seen := make(map[string]struct{}, dictionarySample)
	n := 0
	for i := 0; i < col.Len() && n < dictionarySample; i++ {
		if col.IsNull(i) {
			continue
		}
		seen[value(i)] = struct{}{}
		n++
	}
	return n >= 64 && 2*len(seen) > n
}
