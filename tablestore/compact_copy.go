package tablestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"reflect"
	"slices"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/flightd/flightd/tablestore/meta"
)

// minCopyRows is the fewest rows a row group of an append table's small
// file may hold for compaction to copy it into the output as it is (four
// batches of the default size): smaller ones are concatenated into row
// groups of up to rowGroupRows, so that copying never piles up small row
// groups level after level.
func minCopyRows(o tableOptions) int64 { return max(1, o.rowGroupRows/16) }

// minConcatChunkBytes is the fewest bytes a small row group must hold
// (uncompressed, on average per column) for compaction to concatenate its
// pages with others'. A concatenation keeps the pages, and smaller ones
// stay small in the row groups made of them, each its own zstd frame and
// page header: commits of 512 rows of BenchmarkIngestCodec's table (about
// 5 KiB a column) took 21% more disk so than rewritten, and no less CPU;
// commits of 3,000 rows (about 30 KiB a column) took 9% more disk and 25%
// less CPU (BenchmarkIngestCodec table=medium, 6 alternated runs). Row
// groups of fewer bytes are rewritten, with the other files of their
// compaction.
const minConcatChunkBytes = 16 << 10

// concatenates reports whether compaction concatenates a row group of an
// append table of rows rows, bytes bytes and columns columns with others'
// instead of copying it alone (too small) or rewriting it (pages too
// small).
func concatenates(o tableOptions, rows, bytes int64, columns int) bool {
	return rows < minCopyRows(o) && bytes >= minConcatChunkBytes*int64(columns)
}

// copyRowGroups compacts the files of an append table by copying their
// row groups, compressed pages and statistics as they are, into new files
// of the target size, with a new footer: no decoding or encoding, which
// was most of a streaming source's compaction cost. Row groups of fewer
// than minCopyRows rows (small commits) are concatenated (concatenates),
// consecutive ones into one: their column chunks' pages follow each other, and their
// statistics are merged. ok is false, with nothing written, when the files
// do not allow it (another schema, another codec, no checksum, small row
// groups of small pages or with dictionaries); the caller then rewrites
// them.
// The copies carry no page index (its page offsets would need rewriting):
// scans of them skip by row group statistics only.
func (st *tableState) copyRowGroups(ctx context.Context, sch *tableSchema, files []*meta.ManifestEntry, level int, dirs map[string]bool) (adds []*meta.ManifestEntry, ok bool, err error) {
	// distinct marks the columns with a distinct count known in an input
	// (at most maxTrackedNDV values): counts do not add up, so the copy
	// decodes those columns alone and counts their values again, so that
	// its statistics are those a rewrite would record. Skipping the copy
	// for them instead meant that any append table with one column of few
	// values (a status, a channel) was compacted by decoding and encoding
	// every column: about a tenth of the CPU of a 5M-event Nexmark run.
	distinct := make([]bool, len(sch.Fields))
	for _, e := range files {
		if e.File.SchemaID != sch.ID || e.File.CRC == nil {
			return nil, false, nil
		}
		for i, f := range sch.Fields {
			j := slices.IndexFunc(e.File.ValueStats, func(cs meta.ColStats) bool { return cs.ID == f.ID })
			if j < 0 {
				return nil, false, nil
			}
			distinct[i] = distinct[i] || e.File.ValueStats[j].NDV > 0
		}
	}
	// A first pass decides from the footers alone, a second copies: it
	// reads the files one at a time into one buffer (up to 50 of them,
	// each up to half the target size, are not held at once) and checks
	// each whole against its checksum: a copy must not carry damage a
	// rewrite would have reported.
	var tmpl *metadata.FileMetaData
	for _, e := range files {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		m, err := st.footer(e)
		if err != nil {
			return nil, false, err
		}
		if tmpl == nil {
			tmpl = m
		}
		if m.IsSetEncryptionAlgorithm() || len(m.RowGroups) == 0 || !m.Schema.Equals(tmpl.Schema) ||
			!reflect.DeepEqual(m.KeyValueMetadata(), tmpl.KeyValueMetadata()) {
			return nil, false, nil
		}
		for _, rg := range m.RowGroups {
			small := rg.NumRows < minCopyRows(sch.opts)
			if small && !concatenates(sch.opts, rg.NumRows, rg.TotalByteSize, len(rg.Columns)) {
				return nil, false, nil
			}
			for _, c := range rg.Columns {
				if c.MetaData == nil || c.FilePath != nil || c.IsSetCryptoMetadata() ||
					int32(c.MetaData.Codec) != int32(sch.opts.codec(level, math.MaxInt64, false)) {
					return nil, false, nil
				}
				if !small {
					continue
				}
				// A column chunk holds at most one dictionary, first.
				if c.MetaData.DictionaryPageOffset != nil || c.MetaData.IndexPageOffset != nil {
					return nil, false, nil
				}
				for _, e := range c.MetaData.Encodings {
					if int32(e) == int32(parquet.Encodings.PlainDict) || int32(e) == int32(parquet.Encodings.RLEDict) {
						return nil, false, nil
					}
				}
			}
		}
	}

	first := files[0]
	dw := st.newDataWriter(sch, first.Partition, first.Bucket, level, "COMPACT", 0, dirs)
	defer func() {
		if err != nil {
			dw.abort()
		}
	}()
	var out *metadata.FileMetaData // footer of the file being written
	start := func(tmpl *metadata.FileMetaData) error {
		if err := dw.create(); err != nil {
			return err
		}
		if _, err := dw.bw.WriteString("PAR1"); err != nil {
			return err
		}
		fm := *tmpl.FileMetaData // the inputs' schema, creator and key-value metadata
		fm.RowGroups, fm.NumRows = nil, 0
		out = &metadata.FileMetaData{FileMetaData: &fm, Schema: tmpl.Schema}
		return nil
	}
	finish := func() error {
		pos := dw.cw.n + int64(dw.bw.Buffered())
		if _, err := out.WriteTo(dw.bw, nil); err != nil {
			return err
		}
		var tail [8]byte
		binary.LittleEndian.PutUint32(tail[:4], uint32(dw.cw.n+int64(dw.bw.Buffered())-pos))
		copy(tail[4:], "PAR1")
		if _, err := dw.bw.Write(tail[:]); err != nil {
			return err
		}
		for i := range dw.acc {
			if !distinct[i] {
				// Every input counted more than maxTrackedNDV values or none.
				dw.acc[i].tooMany = true
			}
		}
		dw.meta.RowCount = out.NumRows
		return dw.syncFile(nil)
	}
	// The small row groups gathered for one concatenated row group: their
	// footers, each column's pages (copied out of the input read), and
	// each column's merged statistics (nil once a chunk has none).
	pend := tmpl.RowGroups[:0:0]
	var pendRows, pendBytes int64
	pendPages := make([][]byte, tmpl.Schema.NumColumns())
	pendStats := make([]metadata.TypedStatistics, len(pendPages))
	addConcat := func(e *meta.ManifestEntry, data []byte, rg *metadata.RowGroupMetaData) error {
		for j := range pendPages {
			cc, err := rg.ColumnChunk(j)
			if err != nil {
				return corruptf(joinPath(st.dir, e.File.Path), err)
			}
			chunk, err := st.chunkBytes(e, data, cc.DataPageOffset(), cc.TotalCompressedSize())
			if err != nil {
				return err
			}
			pendPages[j] = append(pendPages[j], chunk...)
			pendBytes += int64(len(chunk))
			if len(pend) == 0 {
				pendStats[j] = metadata.NewStatistics(tmpl.Schema.Column(j), st.s.opts.Mem)
			}
			if pendStats[j] == nil {
				continue
			}
			// Merged, bounds need every chunk's: one without (none kept,
			// or too long to keep) leaves the row group without.
			cs, err := cc.Statistics()
			switch {
			case err != nil || cs == nil || !cs.HasNullCount():
				pendStats[j] = nil
			case cs.HasMinMax() || cs.NullCount() == cc.NumValues():
				pendStats[j].Merge(cs)
			default:
				pendStats[j] = nil
			}
		}
		return nil
	}
	flushConcat := func() error {
		if len(pend) == 0 {
			return nil
		}
		if out == nil {
			if err := start(tmpl); err != nil {
				return err
			}
		}
		rg := *pend[0] // its sorting columns and the like, all inputs' alike
		rg.Columns = slices.Clone(rg.Columns)
		rgStart := dw.cw.n + int64(dw.bw.Buffered())
		rg.NumRows, rg.TotalByteSize = 0, 0
		var size int64
		for _, p := range pend {
			rg.NumRows += p.NumRows
			rg.TotalByteSize += p.TotalByteSize
		}
		for j := range rg.Columns {
			c := *rg.Columns[j]
			md := *c.MetaData
			c.MetaData = &md
			to := dw.cw.n + int64(dw.bw.Buffered())
			if _, err := dw.bw.Write(pendPages[j]); err != nil {
				return err
			}
			md.DataPageOffset = to
			if c.FileOffset != 0 {
				c.FileOffset = to
			}
			md.NumValues, md.TotalCompressedSize, md.TotalUncompressedSize = 0, 0, 0
			md.Encodings = slices.Clone(md.Encodings)
			md.EncodingStats = slices.Clone(md.EncodingStats)
			for k, es := range md.EncodingStats {
				v := *es
				v.Count = 0
				md.EncodingStats[k] = &v
			}
			for _, p := range pend {
				in := p.Columns[j].MetaData
				md.NumValues += in.NumValues
				md.TotalCompressedSize += in.TotalCompressedSize
				md.TotalUncompressedSize += in.TotalUncompressedSize
				for _, enc := range in.Encodings {
					if !slices.Contains(md.Encodings, enc) {
						md.Encodings = append(md.Encodings, enc)
					}
				}
			stats:
				for _, es := range in.EncodingStats {
					for _, o := range md.EncodingStats {
						if o.PageType == es.PageType && o.Encoding == es.Encoding {
							o.Count += es.Count
							continue stats
						}
					}
					v := *es
					md.EncodingStats = append(md.EncodingStats, &v)
				}
			}
			md.Statistics = nil
			if pendStats[j] != nil {
				enc, err := pendStats[j].Encode()
				if err != nil {
					return err
				}
				md.Statistics = enc.ToThrift()
			}
			md.BloomFilterOffset, md.BloomFilterLength = nil, nil
			md.SizeStatistics, md.GeospatialStatistics = nil, nil
			c.OffsetIndexOffset, c.OffsetIndexLength = nil, nil
			c.ColumnIndexOffset, c.ColumnIndexLength = nil, nil
			size += md.TotalCompressedSize
			rg.Columns[j] = &c
			pendPages[j] = pendPages[j][:0]
		}
		rg.FileOffset = &rgStart
		rg.TotalCompressedSize = &size
		ordinal := int16(len(out.RowGroups))
		rg.Ordinal = &ordinal
		out.RowGroups = append(out.RowGroups, &rg)
		out.NumRows += rg.NumRows
		pend, pendRows, pendBytes = pend[:0], 0, 0
		return nil
	}
	var buf []byte
	for _, e := range files {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		data, fmeta, err := st.readChecked(e, buf)
		if err != nil {
			return nil, false, err
		}
		if out == nil {
			if err := start(tmpl); err != nil {
				return nil, false, err
			}
		}
		for i, rg := range fmeta.RowGroups {
			if rg.NumRows < minCopyRows(sch.opts) {
				if pendRows+rg.NumRows > sch.opts.rowGroupRows {
					if err := flushConcat(); err != nil {
						return nil, false, err
					}
				}
				if err := addConcat(e, data, fmeta.RowGroup(i)); err != nil {
					return nil, false, err
				}
				pend = append(pend, rg)
				pendRows += rg.NumRows
				continue
			}
			if err := flushConcat(); err != nil {
				return nil, false, err
			}
			rgStart := dw.cw.n + int64(dw.bw.Buffered())
			var size int64
			for _, c := range rg.Columns {
				md := c.MetaData
				from := md.DataPageOffset
				if md.DictionaryPageOffset != nil && *md.DictionaryPageOffset < from {
					from = *md.DictionaryPageOffset
				}
				chunk, err := st.chunkBytes(e, data, from, md.TotalCompressedSize)
				if err != nil {
					return nil, false, err
				}
				to := dw.cw.n + int64(dw.bw.Buffered())
				if _, err := dw.bw.Write(chunk); err != nil {
					return nil, false, err
				}
				shift := to - from
				md.DataPageOffset += shift
				if md.DictionaryPageOffset != nil {
					*md.DictionaryPageOffset += shift
				}
				if md.IndexPageOffset != nil {
					*md.IndexPageOffset += shift
				}
				if c.FileOffset != 0 {
					c.FileOffset += shift
				}
				md.BloomFilterOffset, md.BloomFilterLength = nil, nil
				c.OffsetIndexOffset, c.OffsetIndexLength = nil, nil
				c.ColumnIndexOffset, c.ColumnIndexLength = nil, nil
				size += md.TotalCompressedSize
			}
			rg.FileOffset = &rgStart
			rg.TotalCompressedSize = &size
			ordinal := int16(len(out.RowGroups))
			rg.Ordinal = &ordinal
			out.RowGroups = append(out.RowGroups, rg)
			out.NumRows += rg.NumRows
		}
		for i, f := range sch.Fields {
			j := slices.IndexFunc(e.File.ValueStats, func(cs meta.ColStats) bool { return cs.ID == f.ID })
			dw.acc[i].add(e.File.ValueStats[j], e.File.RowCount)
		}
		if err := st.countDistinct(ctx, e, data, sch, distinct, dw.acc); err != nil {
			return nil, false, err
		}
		buf = data // written out or copied: the next input may reuse it
		if dw.cw.n+int64(dw.bw.Buffered())+pendBytes >= sch.opts.targetFileSize {
			if err := flushConcat(); err != nil {
				return nil, false, err
			}
			if err := finish(); err != nil {
				return nil, false, err
			}
			out = nil
		}
	}
	if err := flushConcat(); err != nil {
		return nil, false, err
	}
	if out != nil {
		if err := finish(); err != nil {
			return nil, false, err
		}
	}
	return dw.done, true, nil
}

// chunkBytes is the column chunk of size bytes at from in data, e's data
// file read whole.
func (st *tableState) chunkBytes(e *meta.ManifestEntry, data []byte, from, size int64) ([]byte, error) {
	if from < 4 || size < 0 || from+size > int64(len(data)) {
		return nil, corruptf(joinPath(st.dir, e.File.Path), fmt.Errorf("column chunk at %d+%d outside the file", from, size))
	}
	return data[from : from+size], nil
}

// countDistinct adds the values of the columns marked in distinct of e's
// data file (data, read whole) to their accumulators in acc, decoding
// those columns only.
func (st *tableState) countDistinct(ctx context.Context, e *meta.ManifestEntry, data []byte, sch *tableSchema, distinct []bool, acc []statAcc) error {
	var df *dataFile
	for i, f := range sch.Fields {
		if !distinct[i] || acc[i].tooMany {
			continue
		}
		if df == nil {
			var err error
			if df, err = st.dataFileOf(e, joinPath(st.dir, e.File.Path), inMemoryFile{bytes.NewReader(data)}); err != nil {
				return err
			}
			defer df.Close()
		}
		col, ok := df.cols[f.ID]
		if !ok {
			return corruptf(df.path, fmt.Errorf("no column for field %d (%s)", f.ID, f.Name))
		}
		for rg := range df.numRowGroups() {
			a, err := df.decodeChunk(ctx, st.s.opts.Mem, rg, col, nil)
			if err != nil {
				return err
			}
			acc[i].addDistinct(a)
			a.Release()
		}
	}
	return nil
}

// inMemoryFile is a data file already read whole.
type inMemoryFile struct{ *bytes.Reader }

func (inMemoryFile) Close() error { return nil }

// readChecked reads the data file of e whole (into buf when it is large
// enough), checks it against the manifest's size and checksum, and decodes
// its footer.
func (st *tableState) readChecked(e *meta.ManifestEntry, buf []byte) ([]byte, *metadata.FileMetaData, error) {
	path := joinPath(st.dir, e.File.Path)
	data, err := readFileInto(st.fs(), path, buf)
	if err != nil {
		return nil, nil, fmt.Errorf("read data file %s: %w", path, err)
	}
	if int64(len(data)) != e.File.FileSize || crc32.Checksum(data, crcTable) != *e.File.CRC {
		return nil, nil, fmt.Errorf("%w: data file %s: checksum or size differs from the manifest", ErrCorrupt, path)
	}
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, corruptf(path, err)
	}
	return data, pr.MetaData(), nil
}

// footer decodes the footer of e's data file: from the cache of footers
// when a scan read it, otherwise from the file's tail, never reading the
// file whole. The caller must not change it (the cache shares it).
func (st *tableState) footer(e *meta.ManifestEntry) (*metadata.FileMetaData, error) {
	path := joinPath(st.dir, e.File.Path)
	if m, _ := st.s.footers.get(path, e.File.FileSize); m != nil {
		return m, nil
	}
	rf, err := st.fs().Open(path)
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w", path, err)
	}
	defer rf.Close()
	if rf.Size() != e.File.FileSize {
		return nil, fmt.Errorf("%w: data file %s has %d bytes, manifest says %d (truncated or replaced)", ErrCorrupt, path, rf.Size(), e.File.FileSize)
	}
	pr, err := file.NewParquetReader(io.NewSectionReader(rf, 0, rf.Size()),
		file.WithReadProps(parquet.NewReaderProperties(st.s.opts.Mem)))
	if err != nil {
		return nil, corruptf(path, err)
	}
	return pr.MetaData(), nil
}
