package vectorized

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Fixed is the set of fixed-width Go types the kernels operate on directly.
type Fixed interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Values returns the typed value slice of a fixed-width array, honouring its
// offset. The slice aliases the array's buffer: read only.
func Values[T Fixed](a arrow.Array) []T {
	d := a.Data()
	buf := d.Buffers()[1]
	if buf == nil || buf.Len() == 0 {
		return nil
	}
	b := buf.Bytes()
	var z T
	all := unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(z)))
	return all[d.Offset() : d.Offset()+d.Len()]
}

// FixedOut is a fixed-width output column under construction.
type FixedOut[T Fixed] struct {
	buf  *memory.Buffer
	Vals []T
}

// NewFixedOut allocates n values from mem.
func NewFixedOut[T Fixed](mem memory.Allocator, n int) *FixedOut[T] {
	var z T
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * int(unsafe.Sizeof(z)))
	o := &FixedOut[T]{buf: buf}
	if n > 0 {
		b := buf.Bytes()
		o.Vals = unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
	}
	return o
}

// Finish builds the array of type dt with the given validity (may be nil,
// ownership passes to the array) and releases o's own reference.
func (o *FixedOut[T]) Finish(dt arrow.DataType, validity *memory.Buffer, nulls int) arrow.Array {
	data := array.NewData(dt, len(o.Vals), []*memory.Buffer{validity, o.buf}, nil, nulls, 0)
	arr := array.MakeFromData(data)
	data.Release()
	o.buf.Release()
	if validity != nil {
		validity.Release()
	}
	return arr
}

// Release frees o without building an array (error paths).
func (o *FixedOut[T]) Release() { o.buf.Release() }

// Validity is a result validity bitmap; Buf is nil when all rows are valid.
type Validity struct {
	Buf   *memory.Buffer
	Nulls int
}

// IsValid reports whether row i of the bitmap is set (true when Buf is nil).
func (v Validity) IsValid(i int) bool {
	return v.Buf == nil || bitutil.BitIsSet(v.Buf.Bytes(), i)
}

// Release frees the bitmap.
func (v Validity) Release() {
	if v.Buf != nil {
		v.Buf.Release()
	}
}

// AndValidity returns the intersection of the arrays' validity bitmaps: the
// row is valid iff it is valid in every array. All arrays have length n.
func AndValidity(mem memory.Allocator, n int, arrs ...arrow.Array) Validity {
	var out *memory.Buffer
	for _, a := range arrs {
		// MayHaveNulls, not NullN: NullN counts and caches the count on the
		// array, which races when parallel workers share an input batch.
		if a.DataType().ID() != arrow.NULL && !MayHaveNulls(a.Data()) {
			continue
		}
		if a.DataType().ID() == arrow.NULL {
			if out != nil {
				out.Release()
			}
			out = memory.NewResizableBuffer(mem)
			out.Resize(int(bitutil.BytesForBits(int64(n))))
			clear(out.Bytes())
			return Validity{Buf: out, Nulls: n}
		}
		bm := a.NullBitmapBytes()
		off := int64(a.Data().Offset())
		if out == nil {
			out = memory.NewResizableBuffer(mem)
			out.Resize(int(bitutil.BytesForBits(int64(n))))
			bitutil.CopyBitmap(bm, int(off), n, out.Bytes(), 0)
			continue
		}
		bitutil.BitmapAnd(out.Bytes(), bm, 0, off, out.Bytes(), 0, int64(n))
	}
	if out == nil {
		return Validity{}
	}
	nulls := n - bitutil.CountSetBits(out.Bytes(), 0, n)
	if nulls == 0 {
		out.Release()
		return Validity{}
	}
	return Validity{Buf: out, Nulls: nulls}
}

// BoolsToValidity converts a []bool (true = valid) to a validity bitmap.
func BoolsToValidity(mem memory.Allocator, valid []bool) Validity {
	nulls := 0
	for _, v := range valid {
		if !v {
			nulls++
		}
	}
	if nulls == 0 {
		return Validity{}
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(valid)))))
	b := buf.Bytes()
	clear(b)
	for i, v := range valid {
		if v {
			bitutil.SetBit(b, i)
		}
	}
	return Validity{Buf: buf, Nulls: nulls}
}

// NewBoolOut allocates a boolean output bitmap of n bits, zeroed.
func newBitmap(mem memory.Allocator, n int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	clear(buf.Bytes())
	return buf
}

// FinishBool builds a boolean array from a value bitmap and validity.
func FinishBool(n int, vals *memory.Buffer, v Validity) arrow.Array {
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{v.Buf, vals}, nil, v.Nulls, 0)
	arr := array.MakeFromData(data)
	data.Release()
	vals.Release()
	v.Release()
	return arr
}

// BoolsToArray builds a boolean array from values and an optional validity
// slice (nil = all valid).
func BoolsToArray(mem memory.Allocator, vals []bool, valid []bool) arrow.Array {
	buf := newBitmap(mem, len(vals))
	b := buf.Bytes()
	for i, x := range vals {
		if x {
			bitutil.SetBit(b, i)
		}
	}
	var v Validity
	if valid != nil {
		v = BoolsToValidity(mem, valid)
	}
	return FinishBool(len(vals), buf, v)
}

// NullArray returns an all-NULL array of type dt and length n.
func NullArray(mem memory.Allocator, dt arrow.DataType, n int) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	b.AppendNulls(n)
	return b.NewArray()
}

// ErrOverflow reports an arithmetic result out of its type's range.
var ErrOverflow = fmt.Errorf("numeric overflow")

// ErrDivideByZero reports a division or modulo by zero.
var ErrDivideByZero = fmt.Errorf("division by zero")

// ErrInvalidValue reports a value a cast or function cannot convert.
var ErrInvalidValue = fmt.Errorf("invalid value")

// ErrTooLarge reports a computed value or batch over one of the size
// limits below.
var ErrTooLarge = fmt.Errorf("result too large")
