package vectorized

import (
	"context"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A mask is a boolean array without NULLs at offset 0 that selects the rows
// where it is true. Masks are built and combined a word at a time.

// TrueBits returns the mask of the rows where the boolean array pred is true
// (NULL counts as false) and how many there are.
func TrueBits(mem memory.Allocator, pred arrow.Array) (arrow.Array, int) {
	n := pred.Len()
	d := pred.Data()
	if pred.NullN() == 0 && d.Offset() == 0 {
		pred.Retain()
		return pred, bitutil.CountSetBits(d.Buffers()[1].Bytes(), 0, n)
	}
	vals := newBitmap(mem, n)
	if n > 0 {
		if pred.NullN() == 0 {
			bitutil.CopyBitmap(d.Buffers()[1].Bytes(), d.Offset(), n, vals.Bytes(), 0)
		} else {
			bitutil.BitmapAnd(d.Buffers()[1].Bytes(), pred.NullBitmapBytes(), int64(d.Offset()), int64(d.Offset()), vals.Bytes(), 0, int64(n))
		}
	}
	return FinishBool(n, vals, Validity{}), bitutil.CountSetBits(vals.Bytes(), 0, n)
}

// AndMasks returns the rows selected by both masks (of equal length) and
// how many there are.
func AndMasks(mem memory.Allocator, a, b arrow.Array) (arrow.Array, int) {
	return combineMasks(mem, a, b, bitutil.BitmapAnd)
}

// combineMasks applies a bitmap operation to two masks.
func combineMasks(mem memory.Allocator, a, b arrow.Array, op func(l, r []byte, lOff, rOff int64, out []byte, outOff, length int64)) (arrow.Array, int) {
	n := a.Len()
	vals := newBitmap(mem, n)
	op(maskBytes(a), maskBytes(b), 0, 0, vals.Bytes(), 0, int64(n))
	return FinishBool(n, vals, Validity{}), bitutil.CountSetBits(vals.Bytes(), 0, n)
}

func maskBytes(m arrow.Array) []byte { return m.Data().Buffers()[1].Bytes() }

// MaskRows appends to dst the positions of the rows mask selects, in order.
func MaskRows(mask arrow.Array, dst []int32) []int32 {
	b := maskBytes(mask)
	n := mask.Len()
	for w := 0; w*64 < n; w++ {
		var word uint64
		for k := 0; k < 8 && w*8+k < len(b); k++ {
			word |= uint64(b[w*8+k]) << (8 * k)
		}
		if rest := n - w*64; rest < 64 {
			word &= 1<<rest - 1
		}
		for word != 0 {
			dst = append(dst, int32(w*64+bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	return dst
}

// RowsMask returns the n-row mask selecting rows (each below n).
func RowsMask(mem memory.Allocator, n int, rows []int32) arrow.Array {
	vals := newBitmap(mem, n)
	b := vals.Bytes()
	for _, r := range rows {
		b[r>>3] |= 1 << (r & 7)
	}
	return FinishBool(n, vals, Validity{})
}

// FilterMask keeps the rows of b that mask (a mask, see TrueBits) selects;
// count is their number. When it keeps every row, b itself is returned,
// retained. Fixed-width, string and binary columns are gathered by own
// loops, faster than arrow-go's filter kernel (BenchmarkFilterBatch,
// decimals and strings above all); others go through that kernel.
func FilterMask(ctx context.Context, mem memory.Allocator, b arrow.RecordBatch, mask arrow.Array, count int) (arrow.RecordBatch, error) {
	if count == int(b.NumRows()) {
		b.Retain()
		return b, nil
	}
	var rows []int32
	var rest []int // columns for the kernel
	cols := make([]arrow.Array, b.NumCols())
	for i, c := range b.Columns() {
		w := gatherWidth(c.DataType())
		str := isVarBinary(c.DataType())
		if w == 0 && !str {
			rest = append(rest, i)
			continue
		}
		if rows == nil {
			rows = MaskRows(mask, make([]int32, 0, count))
		}
		if w > 0 {
			cols[i] = gatherFixed(mem, c, rows, w)
			continue
		}
		s, err := gatherVar(mem, c, rows)
		if err != nil {
			releaseAll(cols)
			return nil, err
		}
		cols[i] = s
	}
	if len(rest) > 0 {
		// One record-batch call: it turns the mask into indices once
		// (and compute.FilterArray mishandles NULLs in booleans).
		fields := make([]arrow.Field, len(rest))
		for i, c := range rest {
			fields[i] = b.Schema().Field(c)
		}
		in := SelectColumns(b, arrow.NewSchema(fields, nil), rest)
		out, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), in, mask, compute.DefaultFilterOptions())
		in.Release()
		if err != nil {
			releaseAll(cols)
			return nil, err
		}
		for i, c := range rest {
			cols[c] = out.Column(i)
			cols[c].Retain()
		}
		out.Release()
	}
	out := array.NewRecordBatch(b.Schema(), cols, int64(count))
	releaseAll(cols)
	return out, nil
}

func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// gatherWidth is the byte width of dt's values when gatherFixed can copy
// them (one buffer of fixed-width values), else 0.
func gatherWidth(dt arrow.DataType) int {
	if dt.ID() == arrow.DECIMAL128 {
		return 16
	}
	if IsInteger(dt) || IsFloat(dt) || isTemporal(dt) {
		if fw, ok := dt.(arrow.FixedWidthDataType); ok && fw.BitWidth()%8 == 0 {
			return fw.BitWidth() / 8
		}
	}
	return 0
}

// gatherFixed returns a's values at rows, w bytes each.
func gatherFixed(mem memory.Allocator, a arrow.Array, rows []int32, w int) arrow.Array {
	d := a.Data()
	return gathered(mem, d, rows, false, []*memory.Buffer{nil, takeFixed(mem, d, w, rows, false)})
}

// isVarBinary reports whether dt is a string or binary type, which
// gatherVar gathers.
func isVarBinary(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return true
	}
	return false
}

// gatherVar returns a's strings (or binaries) at rows.
func gatherVar(mem memory.Allocator, a arrow.Array, rows []int32) (arrow.Array, error) {
	d := a.Data()
	bufs, err := takeVarBufs(mem, d, rows)
	if err != nil {
		return nil, err
	}
	return gathered(mem, d, rows, false, bufs), nil
}

// SelectColumns returns a batch of b's columns cols (sharing them).
func SelectColumns(b arrow.RecordBatch, schema *arrow.Schema, cols []int) arrow.RecordBatch {
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		arrs[i] = b.Column(c)
	}
	return array.NewRecordBatch(schema, arrs, b.NumRows())
}

// OrMasks returns the rows selected by either mask and how many there are.
func OrMasks(mem memory.Allocator, a, b arrow.Array) (arrow.Array, int) {
	return combineMasks(mem, a, b, bitutil.BitmapOr)
}

// AndNotMasks returns the rows a selects and b does not, and how many.
func AndNotMasks(mem memory.Allocator, a, b arrow.Array) (arrow.Array, int) {
	return combineMasks(mem, a, b, bitutil.BitmapAndNot)
}

// NotMask returns the rows mask does not select and how many.
func NotMask(mem memory.Allocator, mask arrow.Array) (arrow.Array, int) {
	n := mask.Len()
	vals := newBitmap(mem, n)
	bitutil.InvertBitmap(maskBytes(mask), 0, n, vals.Bytes(), 0)
	return FinishBool(n, vals, Validity{}), bitutil.CountSetBits(vals.Bytes(), 0, n)
}

// CountMask is the number of rows mask selects.
func CountMask(mask arrow.Array) int { return bitutil.CountSetBits(maskBytes(mask), 0, mask.Len()) }
