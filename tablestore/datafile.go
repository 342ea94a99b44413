package tablestore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/tablestore/meta"
)

// crcTable is CRC-32C, the checksum of data files (and of metadata files,
// in meta).
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// System columns of key-table data files (Paimon's names).
const (
	colSeq  = "_SEQUENCE_NUMBER"
	colKind = "_VALUE_KIND"
	// keyColPrefix names Paimon's copies of the key columns in key
	// tables' files.
	keyColPrefix = "_KEY_"
)

// Paimon's field ids of the system columns (SpecialFields).
const (
	seqFieldID  = 2147483646
	kindFieldID = 2147483645
)

const fieldIDKey = "PARQUET:field_id"

// fileSchema is the Arrow schema of data files written under sch: the
// system columns for key tables, then every column tagged with its field ID
// (readers map columns by ID, so renames and drops need no rewrite).
func fileSchema(sch *tableSchema) *arrow.Schema {
	var fields []arrow.Field
	if sch.hasPK() {
		fields = append(fields,
			arrow.Field{Name: colSeq, Type: arrow.PrimitiveTypes.Int64,
				Metadata: arrow.NewMetadata([]string{fieldIDKey}, []string{strconv.Itoa(seqFieldID)})},
			arrow.Field{Name: colKind, Type: arrow.PrimitiveTypes.Int8,
				Metadata: arrow.NewMetadata([]string{fieldIDKey}, []string{strconv.Itoa(kindFieldID)})})
	}
	for i, f := range sch.Fields {
		fields = append(fields, arrow.Field{
			Name: f.Name, Type: sch.types[i], Nullable: f.Nullable,
			Metadata: arrow.NewMetadata([]string{fieldIDKey}, []string{strconv.Itoa(f.ID)}),
		})
	}
	return arrow.NewSchema(fields, nil)
}

// countingWriter counts and checksums what goes to the file: Parquet pages
// carry no checksum in arrow-go, so the manifest keeps one per file.
type countingWriter struct {
	w   io.Writer
	n   int64
	crc uint32
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.crc = crc32.Update(c.crc, crcTable, p[:n])
	return n, err
}

// dataFile is an open Parquet data file.
type dataFile struct {
	path     string
	rf       ReadFile
	pr       *file.Reader
	props    pqarrow.ArrowReadProperties
	mem      memory.Allocator
	frOnce   sync.Once           // decoders of one file share it (parallel scans)
	fr       *pqarrow.FileReader // made by arrowFile
	frErr    error
	cols     map[int]int // field ID -> column index
	seqCol   int         // -1 for append tables
	kindCol  int
	types    []arrow.DataType // by column index (the fileLayout's)
	leaves   [][]int          // the fileLayout's
	layout   *fileLayout
	crc      *uint32
	verified *verifiedFiles
	// bounded: field IDs with manifest min/max. Parquet float statistics
	// ignore NaN, so they are used only where the manifest shows none.
	bounded map[int]bool
}

func corruptf(path string, err error) error {
	return fmt.Errorf("%w: data file %s: %v", ErrCorrupt, path, err)
}

// openDataFile opens the file of e and checks it against the manifest.
func (st *tableState) openDataFile(e *meta.ManifestEntry) (*dataFile, error) {
	path := joinPath(st.dir, e.File.Path)
	rf, err := st.fs().Open(path)
	if err != nil {
		return nil, st.missing(fmt.Errorf("open data file %s: %w", path, err))
	}
	return st.dataFileOf(e, path, rf)
}

// dataFileOf opens rf, the file of e at path, as openDataFile does; it
// closes rf on error.
func (st *tableState) dataFileOf(e *meta.ManifestEntry, path string, rf ReadFile) (*dataFile, error) {
	if rf.Size() != e.File.FileSize {
		rf.Close()
		return nil, fmt.Errorf("%w: data file %s has %d bytes, manifest says %d (truncated or replaced)", ErrCorrupt, path, rf.Size(), e.File.FileSize)
	}
	mem := st.s.opts.Mem
	opts := []file.ReadOption{file.WithReadProps(parquet.NewReaderProperties(mem))}
	footer, layout := st.s.footers.get(path, rf.Size())
	if footer != nil {
		opts = append(opts, file.WithMetadata(footer))
	}
	pr, err := file.NewParquetReader(io.NewSectionReader(rf, 0, rf.Size()), opts...)
	if err != nil {
		rf.Close()
		return nil, corruptf(path, err)
	}
	props := st.s.readProps()
	if layout == nil {
		if layout, err = newFileLayout(pr.MetaData(), props); err != nil {
			rf.Close()
			return nil, corruptf(path, err)
		}
	}
	if pr.NumRows() != e.File.RowCount {
		rf.Close()
		return nil, fmt.Errorf("%w: data file %s has %d rows, manifest says %d", ErrCorrupt, path, pr.NumRows(), e.File.RowCount)
	}
	df := &dataFile{path: path, rf: rf, pr: pr, props: props, mem: mem, types: layout.types, leaves: layout.leaves, layout: layout,
		cols: map[int]int{}, seqCol: -1, kindCol: -1, bounded: map[int]bool{}, verified: &st.s.verified}
	df.crc = e.File.CRC
	for _, cs := range e.File.ValueStats {
		if cs.Min != nil {
			df.bounded[cs.ID] = true
		}
	}
	for i, f := range layout.fields {
		switch f.Name {
		case colSeq:
			df.seqCol = i
			continue
		case colKind:
			df.kindCol = i
			continue
		}
		if strings.HasPrefix(f.Name, keyColPrefix) {
			continue // Paimon's copy of a key column; flightd reads the column itself
		}
		v, ok := f.Metadata.GetValue(fieldIDKey)
		id, err := strconv.Atoi(v)
		if !ok || err != nil || id < 0 {
			// Files of Paimon's Python writer have no field ids: the
			// columns of the schema the file was written with, by name.
			if sch, serr := st.schema(e.File.SchemaID); serr == nil {
				if j := sch.fieldIndex(f.Name); j >= 0 {
					df.cols[sch.Fields[j].ID] = i
					continue
				}
			}
			rf.Close()
			return nil, corruptf(path, fmt.Errorf("column %q has no field id", f.Name))
		}
		df.cols[id] = i
	}
	if (df.seqCol < 0) != (df.kindCol < 0) {
		rf.Close()
		return nil, corruptf(path, errors.New("incomplete system columns"))
	}
	if footer == nil {
		st.s.footers.add(path, pr.MetaData(), layout)
	}
	return df, nil
}

// fileLayout is what a data file's footer says of its columns, kept with
// the parsed footer (footerCache): every query opens its files again, and
// building pqarrow's schema manifest (the footer's Arrow schema decoded)
// was most of an open.
type fileLayout struct {
	fields []arrow.Field
	types  []arrow.DataType // by column index
	// leaves: the Parquet leaf columns of each column (a nested column
	// has one per primitive value it holds).
	leaves [][]int
	// pages and stats hold the page indexes and the footer statistics of
	// the file's column chunks read so far, by chunkID (dataFile.pageIndex,
	// dataFile.chunkStats).
	pages, stats sync.Map
}

// readProps are the properties data files are read with; the column types
// a file decodes to depend on them.
func (s *Store) readProps() pqarrow.ArrowReadProperties {
	return pqarrow.ArrowReadProperties{BatchSize: int64(s.opts.BatchSize)}
}

func newFileLayout(md *metadata.FileMetaData, props pqarrow.ArrowReadProperties) (*fileLayout, error) {
	m, err := pqarrow.NewSchemaManifest(md.Schema, md.KeyValueMetadata(), &props)
	if err != nil {
		return nil, err
	}
	l := &fileLayout{}
	for _, sf := range m.Fields {
		f := *sf.Field
		if !arrow.IsPrimitive(f.Type.ID()) && !arrow.IsBaseBinary(f.Type.ID()) && f.Type.ID() != arrow.BOOL && f.Type.ID() != arrow.DECIMAL128 && !isNested(f.Type) {
			return nil, fmt.Errorf("column %q has unexpected type %s", f.Name, f.Type)
		}
		l.fields = append(l.fields, f)
		l.types = append(l.types, f.Type)
		l.leaves = append(l.leaves, leafColumns(nil, sf))
	}
	return l, nil
}

// arrowFile returns pqarrow's reader of the file, made when first needed:
// only chunks decodeFlat does not decode go through it.
func (df *dataFile) arrowFile() (*pqarrow.FileReader, error) {
	df.frOnce.Do(func() { df.fr, df.frErr = pqarrow.NewFileReader(df.pr, df.props, df.mem) })
	return df.fr, df.frErr
}

func (df *dataFile) Close() error { return df.rf.Close() }

func leafColumns(dst []int, f pqarrow.SchemaField) []int {
	if f.IsLeaf() {
		return append(dst, f.ColIndex)
	}
	for _, c := range f.Children {
		dst = leafColumns(dst, c)
	}
	return dst
}

// verify checks the whole file against the manifest checksum, once per
// process (verifiedFiles); readers call it when they read every row group
// anyway, so damage is reported instead of decoded.
func (df *dataFile) verify(ctx context.Context) error {
	if df.crc == nil {
		return nil // written before checksums were recorded
	}
	if df.verified.has(df.path) {
		return nil
	}
	// No larger than the file: most are a commit's few KB, and zeroing
	// 1 MiB for each was most of verifying them (compaction checks its
	// 50 inputs, a stream every file it reads).
	buf := make([]byte, min(1<<20, df.rf.Size()))
	var crc uint32
	for off := int64(0); off < df.rf.Size(); {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := df.rf.ReadAt(buf[:min(int64(len(buf)), df.rf.Size()-off)], off)
		if n == 0 && err != nil {
			return fmt.Errorf("read %s: %w", df.path, err)
		}
		crc = crc32.Update(crc, crcTable, buf[:n])
		off += int64(n)
	}
	if crc != *df.crc {
		return fmt.Errorf("%w: data file %s: checksum mismatch (manifest %08x, file %08x)", ErrCorrupt, df.path, *df.crc, crc)
	}
	df.verified.add(df.path)
	return nil
}

func (df *dataFile) numRowGroups() int { return df.pr.NumRowGroups() }

// readTarget describes the columns a reader produces: optionally the
// system columns, then table columns (by field ID) with their current names
// and types.
type readTarget struct {
	sys    bool
	ids    []int
	schema *arrow.Schema // output schema
}

func newReadTarget(sch *tableSchema, idx []int, sys bool) *readTarget {
	rt := &readTarget{sys: sys}
	var fields []arrow.Field
	if sys {
		fields = append(fields,
			arrow.Field{Name: colSeq, Type: arrow.PrimitiveTypes.Int64,
				Metadata: arrow.NewMetadata([]string{fieldIDKey}, []string{strconv.Itoa(seqFieldID)})},
			arrow.Field{Name: colKind, Type: arrow.PrimitiveTypes.Int8,
				Metadata: arrow.NewMetadata([]string{fieldIDKey}, []string{strconv.Itoa(kindFieldID)})})
	}
	for _, i := range idx {
		rt.ids = append(rt.ids, sch.Fields[i].ID)
		fields = append(fields, sch.arrow.Field(i))
	}
	rt.schema = arrow.NewSchema(fields, nil)
	return rt
}

// fileColumns returns the file columns to read for rt (deduplicated, in
// file order) and, per output column, its position among them (-1: absent).
func (df *dataFile) fileColumns(rt *readTarget) (cols []int, pos []int, err error) {
	want := []int{}
	if rt.sys {
		if df.seqCol < 0 {
			return nil, nil, corruptf(df.path, errors.New("key-table file without system columns"))
		}
		want = append(want, df.seqCol, df.kindCol)
	}
	for _, id := range rt.ids {
		if c, ok := df.cols[id]; ok {
			want = append(want, c)
		} else {
			want = append(want, -1)
		}
	}
	for _, c := range want {
		if c >= 0 && !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	slices.Sort(cols)
	for _, c := range want {
		pos = append(pos, slices.Index(cols, c))
	}
	return cols, pos, nil
}

// conform builds the output batch of rt from the columns read (in the order
// of fileColumns), casting widened types and filling dropped-then-added or
// new columns with nulls.
func conform(ctx context.Context, mem memory.Allocator, rt *readTarget, pos []int, read []arrow.Array, n int) (arrow.RecordBatch, error) {
	out := make([]arrow.Array, len(pos))
	defer func() {
		for _, a := range out {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, p := range pos {
		typ := rt.schema.Field(i).Type
		if p < 0 {
			out[i] = array.MakeArrayOfNull(mem, typ, n)
			continue
		}
		src := read[p]
		if arrow.TypeEqual(src.DataType(), typ) {
			src.Retain()
			out[i] = src
			continue
		}
		cctx := compute.WithAllocator(ctx, mem)
		c, err := compute.CastArray(cctx, src, compute.SafeCastOptions(typ))
		if err != nil {
			return nil, fmt.Errorf("cast column %q from %s to %s: %w", rt.schema.Field(i).Name, src.DataType(), typ, err)
		}
		out[i] = c
	}
	return array.NewRecordBatch(rt.schema, out, int64(n)), nil
}

// statsComparable reports whether Parquet statistics of a column read as
// typ compare with literals of its table type tableTyp: not for seconds,
// which the file holds coerced to milliseconds (pqarrow reads them as
// milliseconds, and literals convert to seconds), nor decimals, whose
// statistics are unscaled.
func statsComparable(typ, tableTyp arrow.DataType) bool {
	for _, t := range []arrow.DataType{typ, tableTyp} {
		if ts, ok := t.(*arrow.TimestampType); ok && ts.Unit == arrow.Second {
			return false
		}
		if t.ID() == arrow.DECIMAL128 {
			return false
		}
	}
	return true
}

// rowGroupStats exposes a row group's Parquet statistics for columns that
// allowed admits.
func (df *dataFile) rowGroupStats(rg int, sch *tableSchema, allowed func(string) bool) statsFunc {
	md := df.pr.MetaData().RowGroup(rg)
	rows := md.NumRows()
	return func(col string) (colRange, bool, func(scalar.Scalar) (meta.Datum, bool)) {
		i := sch.fieldIndex(col)
		if i < 0 || !allowed(col) {
			return colRange{}, false, nil
		}
		lit := func(s scalar.Scalar) (meta.Datum, bool) { return meta.ScalarDatum(s, sch.types[i]) }
		c, ok := df.cols[sch.Fields[i].ID]
		if !ok {
			// Column added after this file was written: all NULL.
			return colRange{nullCount: rows, rowCount: rows}, true, lit
		}
		if isNested(df.types[c]) {
			return colRange{}, false, nil // no bounds for nested values
		}
		ps := df.chunkStats(md, rg, df.leaves[c][0])
		if ps == nil {
			return colRange{}, false, nil
		}
		r := colRange{nullCount: -1, rowCount: rows}
		if ps.HasNullCount() {
			r.nullCount = ps.NullCount()
		}
		isFloat := df.types[c].ID() == arrow.FLOAT32 || df.types[c].ID() == arrow.FLOAT64
		if ps.HasMinMax() && (!isFloat || df.bounded[sch.Fields[i].ID]) {
			r.min, r.max = parquetMinMax(ps, df.types[c], sch.types[i])
		}
		return r, true, lit
	}
}

// chunkStats returns the footer's statistics of leaf column chunk rg of
// row group md (nil: none), decoded once per file and kept with its layout
// like its page indexes: every scan with a filter decoded them again.
func (df *dataFile) chunkStats(md *metadata.RowGroupMetaData, rg, leaf int) metadata.TypedStatistics {
	id := chunkID{rg, leaf}
	if v, ok := df.layout.stats.Load(id); ok {
		return v.(*chunkStatistics).ps
	}
	cc, err := md.ColumnChunk(leaf)
	if err != nil {
		return nil
	}
	cs := &chunkStatistics{}
	if set, err := cc.StatsSet(); err == nil && set {
		if cs.ps, err = cc.Statistics(); err != nil {
			cs.ps = nil
		}
	}
	df.layout.stats.Store(id, cs)
	return cs.ps
}

type chunkStatistics struct{ ps metadata.TypedStatistics }

// parquetMinMax converts Parquet statistics of a column read as typ, of
// table type tableTyp, to datums; nil when they do not bound the values as
// literals of tableTyp convert (see statsComparable).
func parquetMinMax(ps metadata.TypedStatistics, typ, tableTyp arrow.DataType) (*meta.Datum, *meta.Datum) {
	if !statsComparable(typ, tableTyp) {
		return nil, nil
	}
	var lo, hi meta.Datum
	switch s := ps.(type) {
	case *metadata.BooleanStatistics:
		b := func(v bool) meta.Datum {
			if v {
				return meta.IntDatum(1)
			}
			return meta.IntDatum(0)
		}
		lo, hi = b(s.Min()), b(s.Max())
	case *metadata.Int32Statistics:
		if typ.ID() == arrow.DECIMAL128 {
			return nil, nil
		}
		lo, hi = meta.IntDatum(int64(s.Min())), meta.IntDatum(int64(s.Max()))
	case *metadata.Int64Statistics:
		if typ.ID() == arrow.DECIMAL128 {
			return nil, nil
		}
		lo, hi = meta.IntDatum(s.Min()), meta.IntDatum(s.Max())
	case *metadata.Float32Statistics:
		lo, hi = meta.FloatDatum(float64(s.Min())), meta.FloatDatum(float64(s.Max()))
	case *metadata.Float64Statistics:
		lo, hi = meta.FloatDatum(s.Min()), meta.FloatDatum(s.Max())
	case *metadata.ByteArrayStatistics:
		if typ.ID() == arrow.DECIMAL128 {
			return nil, nil
		}
		lo, hi = meta.BinDatum(s.Min()), meta.BinDatum(s.Max())
	default:
		return nil, nil
	}
	return &lo, &hi
}
