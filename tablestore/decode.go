package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// decodeChunk decodes column col of row group rg into one array of the
// file's type for it: the rows of ranges, one after the other, or all rows
// when ranges is nil. Flat columns of the common physical and Arrow types
// are decoded page by page straight into the array's buffers (values
// copied once, strings gathered from the dictionary decoded once per
// chunk, buffers sized up front); the rest goes through pqarrow, whose
// per-value builders were most of an uncached scan's time.
func (df *dataFile) decodeChunk(ctx context.Context, mem memory.Allocator, rg, col int, ranges []rowRange) (_ arrow.Array, err error) {
	if df.flatDecodable(col) {
		a, err := df.decodeFlat(ctx, mem, rg, col, ranges)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, corruptf(df.path, fmt.Errorf("column %d, row group %d: %w", col, rg, err))
		}
		return a, nil
	}
	// arrow-go's page reader panics on some damaged page headers (a
	// missing header struct), which no checksum catches on a partial read.
	defer func() {
		if r := recover(); r != nil {
			err = corruptf(df.path, fmt.Errorf("column %d, row group %d: %v", col, rg, r))
		}
	}()
	fr, err := df.arrowFile()
	if err != nil {
		return nil, corruptf(df.path, err)
	}
	tbl, err := fr.ReadRowGroups(ctx, df.leaves[col], []int{rg})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, corruptf(df.path, err)
	}
	defer tbl.Release()
	chunks := tbl.Column(0).Data().Chunks()
	var whole arrow.Array
	if len(chunks) == 1 {
		whole = chunks[0]
		whole.Retain()
	} else if whole, err = array.Concatenate(chunks, mem); err != nil {
		return nil, corruptf(df.path, err)
	}
	if ranges == nil {
		return whole, nil
	}
	defer whole.Release()
	return takeRanges(mem, whole, ranges)
}

// takeRanges copies the rows of ranges out of a.
func takeRanges(mem memory.Allocator, a arrow.Array, ranges []rowRange) (arrow.Array, error) {
	parts := make([]arrow.Array, len(ranges))
	for i, r := range ranges {
		parts[i] = array.NewSlice(a, r.start, r.end)
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	return array.Concatenate(parts, mem)
}

// flatDecodable reports whether decodeFlat handles column col: one leaf,
// not repeated, at most nullable, and a physical type that holds the
// Arrow type's values as they are.
func (df *dataFile) flatDecodable(col int) bool {
	if len(df.leaves[col]) != 1 {
		return false
	}
	descr := df.pr.MetaData().Schema.Column(df.leaves[col][0])
	if descr.MaxRepetitionLevel() != 0 || descr.MaxDefinitionLevel() > 1 {
		return false
	}
	typ := df.types[col]
	switch descr.PhysicalType() {
	case parquet.Types.Boolean:
		return typ.ID() == arrow.BOOL
	case parquet.Types.Int32:
		return typ.ID() == arrow.INT32 || typ.ID() == arrow.DATE32 || typ.ID() == arrow.DECIMAL128
	case parquet.Types.Int64:
		switch t := typ.(type) {
		case *arrow.Int64Type, *arrow.Decimal128Type:
			return true
		case *arrow.TimestampType:
			lt, ok := descr.LogicalType().(schema.TimestampLogicalType)
			return ok && timeUnitOf(lt.TimeUnit()) == t.Unit
		}
		return false
	case parquet.Types.Float:
		return typ.ID() == arrow.FLOAT32
	case parquet.Types.Double:
		return typ.ID() == arrow.FLOAT64
	case parquet.Types.ByteArray:
		return typ.ID() == arrow.STRING || typ.ID() == arrow.BINARY
	}
	return false
}

func timeUnitOf(u schema.TimeUnitType) arrow.TimeUnit {
	switch u {
	case schema.TimeUnitMillis:
		return arrow.Millisecond
	case schema.TimeUnitMicros:
		return arrow.Microsecond
	case schema.TimeUnitNanos:
		return arrow.Nanosecond
	}
	return arrow.Second // no such Parquet unit: never equal to a stored one
}

// levelReader is a typed column chunk reader of arrow-go's file package.
type levelReader[T any] interface {
	ReadBatchInPage(batchSize int64, values []T, defLvls, repLvls []int16) (total int64, valuesRead int, err error)
}

// flatChunk is what decodeFlat assembles: n rows, their validity (nil for
// a required column) and the null count.
type flatChunk struct {
	n     int
	valid *memory.Buffer
	nulls int
	defs  []int16 // definition levels of one read (nullable columns)
}

// batch is the most rows one read takes.
func (fc *flatChunk) batch() int { return min(fc.n, pageRows) }

// readLevels reads up to len(dst) rows of the current page, starting at
// row, into dst (dense: the non-null values first) and records their
// validity; it returns the rows and the values read.
func readLevels[T any](fc *flatChunk, r levelReader[T], dst []T, row int) (rows, read int, err error) {
	var defs []int16
	if fc.valid != nil {
		defs = fc.defs[:len(dst)]
	}
	total, read, err := r.ReadBatchInPage(int64(len(dst)), dst, defs, nil)
	if err != nil {
		return 0, 0, err
	}
	rows = int(total)
	if fc.valid == nil {
		if read != rows {
			return 0, 0, fmt.Errorf("required column read %d values for %d rows", read, rows)
		}
		return rows, read, nil
	}
	bits := fc.valid.Bytes()
	for i, d := range defs[:rows] {
		if d == 1 {
			bitutil.SetBit(bits, row+i)
		} else {
			fc.nulls++
		}
	}
	return rows, read, nil
}

// spread moves the dense values of rows [off, off+rows) to their rows,
// back to front so that it works in place, zeroing the null slots.
func spread[T any](fc *flatChunk, vals []T, off, rows, read int) {
	if read == rows {
		return
	}
	bits := fc.valid.Bytes()
	j := off + read - 1
	var zero T
	for i := off + rows - 1; i >= off; i-- {
		if bitutil.BitIsSet(bits, i) {
			vals[i] = vals[j]
			j--
		} else {
			vals[i] = zero
		}
	}
}

// readFixed fills slots [from, to) of vals (one per row) from r.
func readFixed[T any](ctx context.Context, fc *flatChunk, r levelReader[T], vals []T, from, to int) error {
	for off := from; off < to; {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows, read, err := readLevels(fc, r, vals[off:off+min(to-off, fc.batch())], off)
		if err != nil {
			return err
		}
		if rows == 0 {
			return fmt.Errorf("%w: chunk ends after %d of %d rows", io.ErrUnexpectedEOF, off, fc.n)
		}
		spread(fc, vals, off, rows, read)
		off += rows
	}
	return nil
}

// eachRange calls read for each range's slots [from, to) in the output,
// after moving cr to the range's first row (it reads the first page before
// a seek, so a dictionary page is seen before the pages it encodes).
func eachRange(cr file.ColumnChunkReader, n int, ranges []rowRange, read func(from, to int) error) error {
	if ranges == nil {
		return read(0, n)
	}
	var row int64
	out := 0
	for _, r := range ranges {
		if r.start != row {
			if row == 0 && !cr.HasNext() {
				return fmt.Errorf("%w: empty chunk: %v", io.ErrUnexpectedEOF, cr.Err())
			}
			if err := cr.SeekToRow(r.start); err != nil {
				return err
			}
		}
		to := out + int(r.end-r.start)
		if err := read(out, to); err != nil {
			return err
		}
		out, row = to, r.end
	}
	return nil
}

// pageRows bounds the rows read per call: the definition levels buffer, and
// for strings the values that alias a page's buffers.
const pageRows = 8192

func (df *dataFile) decodeFlat(ctx context.Context, mem memory.Allocator, rg, col int, ranges []rowRange) (_ arrow.Array, err error) {
	leaf := df.leaves[col][0]
	rgr := df.pr.RowGroup(rg)
	n := int(rgr.NumRows())
	if ranges != nil {
		n = int(rangeRows(ranges))
	}
	fc := &flatChunk{n: n}
	if df.pr.MetaData().Schema.Column(leaf).MaxDefinitionLevel() == 1 {
		fc.defs = make([]int16, fc.batch())
		fc.valid = memory.NewResizableBuffer(mem)
		fc.valid.Resize(int(bitutil.BytesForBits(int64(n))))
		clear(fc.valid.Bytes())
		defer fc.valid.Release()
	}
	typ := df.types[col]
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	md, err := rgr.MetaData().ColumnChunk(leaf)
	if err != nil {
		return nil, err
	}
	if width := storedWidth(md.Type()); width != 0 && pageDecodable(md) {
		pr, err := rgr.GetColumnPageReader(leaf)
		if err != nil {
			return nil, err
		}
		defer pr.Close()
		if width < 0 {
			offsets := memory.NewResizableBuffer(mem)
			defer offsets.Release()
			values.Reserve(chunkBytes(md))
			if err := readBytePages(ctx, fc, pr, rgr.NumRows(), ranges, offsets, values); err != nil {
				return nil, err
			}
			return fc.array(typ, offsets, values), nil
		}
		fv := &fixedValues{width: width, wide: typ.ID() == arrow.DECIMAL128}
		if fv.wide {
			values.Resize(n * arrow.Decimal128SizeBytes)
		} else {
			values.Resize(n * width)
		}
		fv.out = values.Bytes()
		if err := readPages(ctx, fc, newPageCursor(pr, fc, rgr.NumRows(), fv), ranges); err != nil {
			return nil, err
		}
		return fc.array(typ, values), nil
	}
	defer recoverPage(&err)
	cr, err := rgr.Column(leaf)
	if err != nil {
		return nil, err
	}
	if c, ok := cr.(io.Closer); ok {
		defer c.Close()
	}
	var buffers []*memory.Buffer
	switch r := cr.(type) {
	case *file.BooleanColumnChunkReader:
		vals := make([]bool, n)
		if err := eachRange(cr, n, ranges, func(from, to int) error { return readFixed(ctx, fc, r, vals, from, to) }); err != nil {
			return nil, err
		}
		values.Resize(int(bitutil.BytesForBits(int64(n))))
		bits := values.Bytes()
		clear(bits)
		for i, v := range vals {
			if v {
				bitutil.SetBit(bits, i)
			}
		}
		buffers = []*memory.Buffer{values}
	case *file.Int32ColumnChunkReader:
		if typ.ID() == arrow.DECIMAL128 {
			vals := make([]int32, n)
			if err := eachRange(cr, n, ranges, func(from, to int) error { return readFixed(ctx, fc, r, vals, from, to) }); err != nil {
				return nil, err
			}
			values.Resize(n * arrow.Decimal128SizeBytes)
			nums := arrow.Decimal128Traits.CastFromBytes(values.Bytes())
			for i, v := range vals {
				nums[i] = decimal128.FromI64(int64(v))
			}
		} else {
			values.Resize(n * 4)
			if err := eachRange(cr, n, ranges, func(from, to int) error {
				return readFixed(ctx, fc, r, arrow.Int32Traits.CastFromBytes(values.Bytes()), from, to)
			}); err != nil {
				return nil, err
			}
		}
		buffers = []*memory.Buffer{values}
	case *file.Int64ColumnChunkReader:
		if typ.ID() == arrow.DECIMAL128 {
			// Decode into the upper half of the decimal buffer, then widen
			// front to back: value i moves to bytes [16i, 16i+16), never
			// over an int64 not yet read (at byte 8n+8i >= 16i).
			values.Resize(n * arrow.Decimal128SizeBytes)
			b := values.Bytes()
			vals := arrow.Int64Traits.CastFromBytes(b[n*8:])
			if err := eachRange(cr, n, ranges, func(from, to int) error { return readFixed(ctx, fc, r, vals, from, to) }); err != nil {
				return nil, err
			}
			nums := arrow.Decimal128Traits.CastFromBytes(b)
			for i := range n {
				nums[i] = decimal128.FromI64(vals[i])
			}
		} else {
			values.Resize(n * 8)
			if err := eachRange(cr, n, ranges, func(from, to int) error {
				return readFixed(ctx, fc, r, arrow.Int64Traits.CastFromBytes(values.Bytes()), from, to)
			}); err != nil {
				return nil, err
			}
		}
		buffers = []*memory.Buffer{values}
	case *file.Float32ColumnChunkReader:
		values.Resize(n * 4)
		if err := eachRange(cr, n, ranges, func(from, to int) error {
			return readFixed(ctx, fc, r, arrow.Float32Traits.CastFromBytes(values.Bytes()), from, to)
		}); err != nil {
			return nil, err
		}
		buffers = []*memory.Buffer{values}
	case *file.Float64ColumnChunkReader:
		values.Resize(n * 8)
		if err := eachRange(cr, n, ranges, func(from, to int) error {
			return readFixed(ctx, fc, r, arrow.Float64Traits.CastFromBytes(values.Bytes()), from, to)
		}); err != nil {
			return nil, err
		}
		buffers = []*memory.Buffer{values}
	case *file.ByteArrayColumnChunkReader:
		offsets := memory.NewResizableBuffer(mem)
		defer offsets.Release()
		if err := readByteArrays(ctx, fc, cr, r, ranges, offsets, values, md); err != nil {
			return nil, err
		}
		buffers = []*memory.Buffer{offsets, values}
	default:
		return nil, fmt.Errorf("unexpected column reader %T", cr)
	}
	return fc.array(typ, buffers...), nil
}

// storedWidth is the bytes of a stored value of physical type t that
// readPages decodes: 4 or 8, -1 for BYTE_ARRAY, 0 for the types it leaves
// to arrow-go's column reader (BOOLEAN's bit-packed values, INT96, fixed
// length byte arrays).
func storedWidth(t parquet.Type) int {
	switch t {
	case parquet.Types.Int32, parquet.Types.Float:
		return 4
	case parquet.Types.Int64, parquet.Types.Double:
		return 8
	case parquet.Types.ByteArray:
		return -1
	}
	return 0
}

// array assembles the chunk's array of typ from its value buffers.
func (fc *flatChunk) array(typ arrow.DataType, buffers ...*memory.Buffer) arrow.Array {
	valid := fc.valid
	if fc.nulls == 0 {
		valid = nil
	}
	data := array.NewData(typ, fc.n, append([]*memory.Buffer{valid}, buffers...), nil, fc.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// readByteArrays reads a string or binary chunk of encodings readBytePages
// does not decode into Arrow offsets and data, copying each value once; the
// data buffer starts at the chunk's uncompressed size, which bounds it for
// plain pages.
func readByteArrays(ctx context.Context, fc *flatChunk, cr file.ColumnChunkReader, r *file.ByteArrayColumnChunkReader, ranges []rowRange, offsets, data *memory.Buffer, md *metadata.ColumnChunkMetaData) error {
	offsets.Resize((fc.n + 1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	offs[0] = 0
	data.Reserve(chunkBytes(md))
	vals := make([]parquet.ByteArray, fc.batch())
	end := 0
	err := eachRange(cr, fc.n, ranges, func(from, to int) error {
		for off := from; off < to; {
			if err := ctx.Err(); err != nil {
				return err
			}
			rows, read, err := readLevels(fc, r, vals[:min(to-off, len(vals))], off)
			if err != nil {
				return err
			}
			if rows == 0 {
				return fmt.Errorf("%w: chunk ends after %d of %d rows", io.ErrUnexpectedEOF, off, fc.n)
			}
			// The values alias the page: copy them before the next read.
			size := 0
			for _, v := range vals[:read] {
				size += len(v)
			}
			if int64(end)+int64(size) > maxInt32 {
				return errors.New("string chunk over 2 GiB")
			}
			if end+size > data.Cap() {
				data.Reserve(max(2*data.Cap(), end+size))
			}
			data.ResizeNoShrink(end + size)
			buf := data.Bytes()
			j := 0
			for i := range rows {
				if fc.valid == nil || bitutil.BitIsSet(fc.valid.Bytes(), off+i) {
					end += copy(buf[end:], vals[j])
					j++
				}
				offs[off+i+1] = int32(end)
			}
			off += rows
		}
		return nil
	})
	data.ResizeNoShrink(end)
	return err
}

const maxInt32 = 1<<31 - 1

// chunkBytes is what to reserve for a string chunk's values: its
// uncompressed size, which bounds plain pages, but no more than one Arrow
// string array holds (a damaged footer may claim any size: reserving it
// would panic or exhaust memory before any page is read).
func chunkBytes(md *metadata.ColumnChunkMetaData) int {
	return int(min(max(md.TotalUncompressedSize(), 0), maxInt32))
}
