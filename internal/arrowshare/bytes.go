package arrowshare

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Bytes is the bytes of d's buffers that its rows use. A slice counts
// its own rows, not the whole buffers it shares with the other slices of
// its array: an operator holding the batch-sized slices of one large array
// (an aggregation's output, a column chunk) would otherwise count the
// array once per slice and spill long before its budget (TPC-DS q67's
// window did at SF 0.3 with 1.4 GiB). Fixed-width and (large) string and
// binary columns count by rows; other layouts count their whole buffers.
func Bytes(d arrow.ArrayData) int64 {
	dt := d.DataType()
	if ext, ok := dt.(arrow.ExtensionType); ok {
		dt = ext.StorageType()
	}
	n, off, bufs := int64(d.Len()), int64(d.Offset()), d.Buffers()
	var sum int64
	switch fw, fixed := dt.(arrow.FixedWidthDataType); {
	case len(bufs) == 2 && fixed:
		sum = bufferShare(bufs[0], (n+7)/8) + bufferShare(bufs[1], (n*int64(fw.BitWidth())+7)/8)
	case len(bufs) == 3 && (dt.ID() == arrow.STRING || dt.ID() == arrow.BINARY):
		sum = varBytes(bufs, arrow.Int32Traits.CastFromBytes, 4, off, n)
	case len(bufs) == 3 && (dt.ID() == arrow.LARGE_STRING || dt.ID() == arrow.LARGE_BINARY):
		sum = varBytes(bufs, arrow.Int64Traits.CastFromBytes, 8, off, n)
	default:
		return WholeBytes(d)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		sum += WholeBytes(dict)
	}
	return sum
}

// bufferShare is need bytes of b, or all of b if it is shorter (or none).
func bufferShare(b *memory.Buffer, need int64) int64 {
	if b == nil {
		return 0
	}
	return min(int64(b.Len()), need)
}

// varBytes counts rows [off, off+n) of a string or binary layout: their
// validity bits, offsets and value bytes.
func varBytes[T int32 | int64](bufs []*memory.Buffer, offsets func([]byte) []T, width, off, n int64) int64 {
	sum := bufferShare(bufs[0], (n+7)/8) + bufferShare(bufs[1], (n+1)*width)
	if bufs[1] == nil || n == 0 {
		return sum
	}
	if o := offsets(bufs[1].Bytes()); int64(len(o)) > off+n {
		return sum + bufferShare(bufs[2], int64(o[off+n]-o[off]))
	}
	return sum + bufferShare(bufs[2], math.MaxInt64)
}

// WholeBytes is the length of all of d's buffers, its children's and its
// dictionary's.
func WholeBytes(d arrow.ArrayData) int64 {
	var sum int64
	for _, b := range d.Buffers() {
		if b != nil {
			sum += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		sum += WholeBytes(c)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		sum += WholeBytes(dict)
	}
	return sum
}
