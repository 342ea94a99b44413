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
)

// minCopyRows is the fewest rows a row group of an append table's small
// file may hold for compaction to copy it into the output as it is (four
// batches of the default size): fewer, and the files are rewritten, so
// that copying never piles up tiny row groups level after level.
func minCopyRows(o tableOptions) int64 { return max(1, o.rowGroupRows/16) }

// copyRowGroups compacts the files of an append table by copying their
// row groups, compressed pages and statistics as they are, into new files
// of the target size, with a new footer: no decoding or encoding, which
// was most of a streaming source's compaction cost. ok is false, with
// nothing written, when the files do not allow it (another schema, another
// codec, no checksum, small row groups, a known distinct count); the
// caller then rewrites them.
// The copies carry no page index (its page offsets would need rewriting):
// scans of them skip by row group statistics only.
func (st *tableState) copyRowGroups(ctx context.Context, sch *tableSchema, files []*manifestEntry, level int, dirs map[string]bool) (adds []*manifestEntry, ok bool, err error) {
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
			j := slices.IndexFunc(e.File.ValueStats, func(cs colStats) bool { return cs.ID == f.ID })
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
			if rg.NumRows < minCopyRows(sch.opts) {
				return nil, false, nil
			}
			for _, c := range rg.Columns {
				if c.MetaData == nil || c.FilePath != nil || c.IsSetCryptoMetadata() ||
					int32(c.MetaData.Codec) != int32(sch.opts.codec(level, math.MaxInt64)) {
					return nil, false, nil
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
	var buf []byte
	for _, e := range files {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		data, meta, err := st.readChecked(e, buf)
		if err != nil {
			return nil, false, err
		}
		if out == nil {
			if err := start(tmpl); err != nil {
				return nil, false, err
			}
		}
		for _, rg := range meta.RowGroups {
			rgStart := dw.cw.n + int64(dw.bw.Buffered())
			var size int64
			for _, c := range rg.Columns {
				md := c.MetaData
				from := md.DataPageOffset
				if md.DictionaryPageOffset != nil && *md.DictionaryPageOffset < from {
					from = *md.DictionaryPageOffset
				}
				if from < 4 || md.TotalCompressedSize < 0 || from+md.TotalCompressedSize > int64(len(data)) {
					return nil, false, corruptf(joinPath(st.dir, e.File.Path), fmt.Errorf("column chunk at %d+%d outside the file", from, md.TotalCompressedSize))
				}
				to := dw.cw.n + int64(dw.bw.Buffered())
				if _, err := dw.bw.Write(data[from : from+md.TotalCompressedSize]); err != nil {
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
			j := slices.IndexFunc(e.File.ValueStats, func(cs colStats) bool { return cs.ID == f.ID })
			dw.acc[i].add(e.File.ValueStats[j], e.File.RowCount)
		}
		if err := st.countDistinct(ctx, e, data, sch, distinct, dw.acc); err != nil {
			return nil, false, err
		}
		buf = data // written out: the next input may reuse it
		if dw.cw.n+int64(dw.bw.Buffered()) >= sch.opts.targetFileSize {
			if err := finish(); err != nil {
				return nil, false, err
			}
			out = nil
		}
	}
	if out != nil {
		if err := finish(); err != nil {
			return nil, false, err
		}
	}
	return dw.done, true, nil
}

// countDistinct adds the values of the columns marked in distinct of e's
// data file (data, read whole) to their accumulators in acc, decoding
// those columns only.
func (st *tableState) countDistinct(ctx context.Context, e *manifestEntry, data []byte, sch *tableSchema, distinct []bool, acc []statAcc) error {
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
func (st *tableState) readChecked(e *manifestEntry, buf []byte) ([]byte, *metadata.FileMetaData, error) {
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
func (st *tableState) footer(e *manifestEntry) (*metadata.FileMetaData, error) {
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
