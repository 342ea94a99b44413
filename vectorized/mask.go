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
	n := a.Len()
	vals := newBitmap(mem, n)
	bitutil.BitmapAnd(maskBytes(a), maskBytes(b), 0, 0, vals.Bytes(), 0, int64(n))
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

// FilterMask keeps the rows of b where the boolean array mask is true (NULL
// counts as false) with arrow-go's filter kernel; count is the number of
// such rows. When it keeps every row, b itself is returned, retained.
func FilterMask(ctx context.Context, mem memory.Allocator, b arrow.RecordBatch, mask arrow.Array, count int) (arrow.RecordBatch, error) {
	if count == int(b.NumRows()) {
		b.Retain()
		return b, nil
	}
	return compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), b, mask, compute.DefaultFilterOptions())
}

// SelectColumns returns a batch of b's columns cols (sharing them).
func SelectColumns(b arrow.RecordBatch, schema *arrow.Schema, cols []int) arrow.RecordBatch {
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		arrs[i] = b.Column(c)
	}
	return array.NewRecordBatch(schema, arrs, b.NumRows())
}
