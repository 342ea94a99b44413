package vectorized

import (
	"context"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Take gathers a[idx[i]] for every i; idx[i] < 0 yields NULL. Indices must
// be below a.Len(): callers derive them from the array, so there is no
// separate bounds-check pass (an index out of range is a bug and panics).
// Fixed-width, boolean and (large) string/binary columns use own gather
// loops, about twice as fast as arrow-go's take kernel (BenchmarkTakeInt64,
// BenchmarkTakeString); other types fall back to it.
func Take(ctx context.Context, mem memory.Allocator, a arrow.Array, idx []int64) (arrow.Array, error) {
	return take(ctx, mem, a, idx, hasNegative(idx), nil)
}

// TakeColumns gathers the same rows of several columns.
func TakeColumns(ctx context.Context, mem memory.Allocator, cols []arrow.Array, idx []int64) ([]arrow.Array, error) {
	neg := hasNegative(idx)
	var ia arrow.Array // index array for compute's take, built at most once
	defer func() {
		if ia != nil {
			ia.Release()
		}
	}()
	out := make([]arrow.Array, len(cols))
	for i, c := range cols {
		t, err := take(ctx, mem, c, idx, neg, &ia)
		if err != nil {
			for _, o := range out[:i] {
				o.Release()
			}
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// TakeBatch gathers rows idx of b into a new batch with schema.
func TakeBatch(ctx context.Context, mem memory.Allocator, b arrow.RecordBatch, schema *arrow.Schema, idx []int64) (arrow.RecordBatch, error) {
	cols, err := TakeColumns(ctx, mem, b.Columns(), idx)
	if err != nil {
		return nil, err
	}
	out := array.NewRecordBatch(schema, cols, int64(len(idx)))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

func hasNegative(idx []int64) bool {
	for _, x := range idx {
		if x < 0 {
			return true
		}
	}
	return false
}

// take gathers one column; ia caches the index array of the compute
// fallback across the columns of one TakeColumns call.
func take(ctx context.Context, mem memory.Allocator, a arrow.Array, idx []int64, neg bool, ia *arrow.Array) (arrow.Array, error) {
	d := a.Data()
	dt := a.DataType()
	var bufs []*memory.Buffer
	switch dt.ID() {
	case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32, arrow.INT64, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64,
		arrow.TIMESTAMP, arrow.DURATION, arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256, arrow.FIXED_SIZE_BINARY:
		bufs = []*memory.Buffer{nil, takeFixed(mem, d, dt.(arrow.FixedWidthDataType).BitWidth()/8, idx, neg)}
	case arrow.BOOL:
		bufs = []*memory.Buffer{nil, takeBits(mem, bufBytes(d, 1), d.Offset(), idx)}
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		var err error
		if bufs, err = takeVarBufs(mem, d, idx); err != nil {
			return nil, err
		}
	default:
		return computeTake(ctx, mem, a, idx, ia)
	}
	return gathered(mem, d, idx, neg, bufs), nil
}

// gathered finishes the array of d's rows idx from its gathered value
// buffers bufs (bufs[0], the validity, is filled in here). It takes over
// bufs.
func gathered[I int32 | int64](mem memory.Allocator, d arrow.ArrayData, idx []I, neg bool, bufs []*memory.Buffer) arrow.Array {
	nulls := 0
	if neg || MayHaveNulls(d) {
		bufs[0], nulls = takeValidity(mem, d, idx)
		if nulls == 0 {
			bufs[0].Release()
			bufs[0] = nil
		}
	}
	data := array.NewData(d.DataType(), len(idx), bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	out := array.MakeFromData(data)
	data.Release()
	return out
}

func computeTake(ctx context.Context, mem memory.Allocator, a arrow.Array, idx []int64, ia *arrow.Array) (arrow.Array, error) {
	if ia == nil {
		ix := indexArray(mem, idx)
		defer ix.Release()
		ia = &ix
	} else if *ia == nil {
		*ia = indexArray(mem, idx)
	}
	return compute.TakeArray(compute.WithAllocator(ctx, mem), a, *ia)
}

// indexArray builds an int64 index array; negative indices become NULL
// (which compute's take turns into NULL output rows).
func indexArray(mem memory.Allocator, idx []int64) arrow.Array {
	out := NewFixedOut[int64](mem, len(idx))
	copy(out.Vals, idx)
	var valid []bool
	for i, x := range idx {
		if x < 0 {
			if valid == nil {
				valid = make([]bool, len(idx))
				for j := range valid {
					valid[j] = true
				}
			}
			valid[i] = false
			out.Vals[i] = 0
		}
	}
	var v Validity
	if valid != nil {
		v = BoolsToValidity(mem, valid)
	}
	return out.Finish(arrow.PrimitiveTypes.Int64, v.Buf, v.Nulls)
}

// MayHaveNulls reports whether d has a validity bitmap and a null count
// that is not known to be zero. Unlike arrow.Array.NullN it never counts
// (and caches) the nulls, which races when goroutines share an array.
func MayHaveNulls(d arrow.ArrayData) bool {
	return d.Buffers()[0] != nil && d.NullN() != 0
}

// bufBytes returns the bytes of buffer i of d, nil if it is absent (empty
// arrays may have none).
func bufBytes(d arrow.ArrayData, i int) []byte {
	if b := d.Buffers()[i]; b != nil {
		return b.Bytes()
	}
	return nil
}

func newBuffer(mem memory.Allocator, n int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n)
	return buf
}

// asSlice views b as n values of T.
func asSlice[T any](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// takeFixed gathers values of width bytes; rows with idx < 0 get zeros.
func takeFixed[I int32 | int64](mem memory.Allocator, d arrow.ArrayData, width int, idx []I, neg bool) *memory.Buffer {
	out := newBuffer(mem, len(idx)*width)
	src := bufBytes(d, 1)
	if src != nil {
		src = src[d.Offset()*width:]
	}
	dst := out.Bytes()
	switch width {
	case 1:
		takeT(asSlice[uint8](dst, len(idx)), asSlice[uint8](src, d.Len()), idx, neg)
	case 2:
		takeT(asSlice[uint16](dst, len(idx)), asSlice[uint16](src, d.Len()), idx, neg)
	case 4:
		takeT(asSlice[uint32](dst, len(idx)), asSlice[uint32](src, d.Len()), idx, neg)
	case 8:
		takeT(asSlice[uint64](dst, len(idx)), asSlice[uint64](src, d.Len()), idx, neg)
	case 16:
		takeT(asSlice[[2]uint64](dst, len(idx)), asSlice[[2]uint64](src, d.Len()), idx, neg)
	case 32:
		takeT(asSlice[[4]uint64](dst, len(idx)), asSlice[[4]uint64](src, d.Len()), idx, neg)
	default:
		for i, x := range idx {
			o := dst[i*width : (i+1)*width]
			if x < 0 {
				clear(o)
			} else {
				copy(o, src[int(x)*width:])
			}
		}
	}
	return out
}

func takeT[T any, I int32 | int64](dst, src []T, idx []I, neg bool) {
	if !neg {
		for i, x := range idx {
			dst[i] = src[x]
		}
		return
	}
	var zero T
	for i, x := range idx {
		if x < 0 {
			dst[i] = zero
		} else {
			dst[i] = src[x]
		}
	}
}

// takeBits gathers bits of a bitmap starting at bit off (a boolean
// array's values); rows with idx < 0 get 0.
func takeBits(mem memory.Allocator, s []byte, off int, idx []int64) *memory.Buffer {
	out := newBitmap(mem, len(idx))
	dst := out.Bytes()
	for i, x := range idx {
		if x >= 0 && bitutil.BitIsSet(s, off+int(x)) {
			bitutil.SetBit(dst, i)
		}
	}
	return out
}

// takeValidity returns the validity of the gathered rows: valid when the
// index is not negative and the source row is valid.
func takeValidity[I int32 | int64](mem memory.Allocator, d arrow.ArrayData, idx []I) (*memory.Buffer, int) {
	out := newBitmap(mem, len(idx))
	dst := out.Bytes()
	valid := 0
	if bm := bufBytes(d, 0); bm == nil {
		for i, x := range idx {
			if x >= 0 {
				bitutil.SetBit(dst, i)
				valid++
			}
		}
	} else {
		off := d.Offset()
		for i, x := range idx {
			if x >= 0 && bitutil.BitIsSet(bm, off+int(x)) {
				bitutil.SetBit(dst, i)
				valid++
			}
		}
	}
	return out, len(idx) - valid
}

// takeVarBufs gathers a string or binary column's buffers at idx (the
// validity, first, left to gathered).
func takeVarBufs[I int32 | int64](mem memory.Allocator, d arrow.ArrayData, idx []I) ([]*memory.Buffer, error) {
	take := takeVar[int32, I]
	if id := d.DataType().ID(); id == arrow.LARGE_STRING || id == arrow.LARGE_BINARY {
		take = takeVar[int64, I]
	}
	offs, vals, err := take(mem, d, idx)
	if err != nil {
		return nil, err
	}
	return []*memory.Buffer{nil, offs, vals}, nil
}

// takeVar gathers a string or binary column with offsets of type O.
func takeVar[O int32 | int64, I int32 | int64](mem memory.Allocator, d arrow.ArrayData, idx []I) (*memory.Buffer, *memory.Buffer, error) {
	var z O
	size := int(unsafe.Sizeof(z))
	offsBuf := newBuffer(mem, (len(idx)+1)*size)
	dst := asSlice[O](offsBuf.Bytes(), len(idx)+1)
	var src []O // nil for an empty column: then every index is negative
	if b := bufBytes(d, 1); b != nil {
		src = asSlice[O](b[d.Offset()*size:], d.Len()+1)
	}
	total := int64(0)
	dst[0] = 0
	for i, x := range idx {
		if x >= 0 {
			total += int64(src[x+1] - src[x])
		}
		dst[i+1] = O(total)
	}
	if size == 4 && total > math.MaxInt32 {
		offsBuf.Release()
		return nil, nil, fmt.Errorf("%w: gathered strings take %d bytes, more than a string column holds", ErrOverflow, total)
	}
	valsBuf := newBuffer(mem, int(total))
	vals := valsBuf.Bytes()
	data := bufBytes(d, 2)
	for i, x := range idx {
		if x >= 0 {
			copy(vals[dst[i]:dst[i+1]], data[src[x]:src[x+1]])
		}
	}
	return offsBuf, valsBuf, nil
}

// FilterBatch keeps the rows of b where mask is true (count of them given),
// through FilterMask.
func FilterBatch(ctx context.Context, mem memory.Allocator, b arrow.RecordBatch, mask []bool, count int) (arrow.RecordBatch, error) {
	if count == len(mask) {
		b.Retain()
		return b, nil
	}
	m := BoolsToArray(mem, mask, nil)
	defer m.Release()
	return FilterMask(ctx, mem, b, m, count)
}
