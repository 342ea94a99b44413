package vectorized

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// And is SQL three-valued AND: false if either side is false, else NULL if
// either is NULL, else true.
func And(mem memory.Allocator, a, b arrow.Array) arrow.Array {
	return kleene(mem, a.(*array.Boolean), b.(*array.Boolean), false)
}

// Or is SQL three-valued OR: true if either side is true, else NULL if
// either is NULL, else false.
func Or(mem memory.Allocator, a, b arrow.Array) arrow.Array {
	return kleene(mem, a.(*array.Boolean), b.(*array.Boolean), true)
}

// kleene evaluates AND (dominant=false) or OR (dominant=true) 64 rows at a
// time: a side decides the row when it is valid and equal to dominant, and
// the row is valid when a side decides it or both sides are valid.
func kleene(mem memory.Allocator, a, b *array.Boolean, dominant bool) arrow.Array {
	n := a.Len()
	vals := newBitmap(mem, n)
	if n == 0 {
		return FinishBool(n, vals, Validity{})
	}
	vb := vals.Bytes()
	if !MayHaveNulls(a.Data()) && !MayHaveNulls(b.Data()) {
		op := bitutil.BitmapAnd
		if dominant {
			op = bitutil.BitmapOr
		}
		op(a.Data().Buffers()[1].Bytes(), b.Data().Buffers()[1].Bytes(), int64(a.Data().Offset()), int64(b.Data().Offset()), vb, 0, int64(n))
		return FinishBool(n, vals, Validity{})
	}
	valid := newBitmap(mem, n)
	// Inputs: both value bitmaps, then the validity bitmaps of the sides
	// that have NULLs (a missing one means all valid).
	in := []bitutil.Bitmap{boolBits(a), boolBits(b)}
	ia, ib := -1, -1
	if MayHaveNulls(a.Data()) {
		ia = len(in)
		in = append(in, validityBits(a))
	}
	if MayHaveNulls(b.Data()) {
		ib = len(in)
		in = append(in, validityBits(b))
	}
	out := []bitutil.Bitmap{{Data: vb, Len: int64(n)}, {Data: valid.Bytes(), Len: int64(n)}}
	err := bitutil.VisitWordsAndWrite(in, out, func(in, out []uint64) {
		av, bv := ^uint64(0), ^uint64(0)
		if ia >= 0 {
			av = in[ia]
		}
		if ib >= 0 {
			bv = in[ib]
		}
		ax, bx := in[0], in[1]
		if !dominant {
			ax, bx = ^ax, ^bx
		}
		decided := av&ax | bv&bx // a valid side equal to dominant
		out[1] = decided | av&bv
		if dominant {
			out[0] = decided
		} else {
			out[0] = ^decided & av & bv // both valid and true
		}
	})
	if err != nil {
		panic(fmt.Sprintf("vectorized: kleene: %v", err)) // broken invariant: all bitmaps have n bits
	}
	nulls := n - bitutil.CountSetBits(valid.Bytes(), 0, n)
	if nulls == 0 {
		valid.Release()
		return FinishBool(n, vals, Validity{})
	}
	return FinishBool(n, vals, Validity{Buf: valid, Nulls: nulls})
}

// boolBits is the value bitmap of a boolean array.
func boolBits(a *array.Boolean) bitutil.Bitmap {
	return bitutil.Bitmap{Data: a.Data().Buffers()[1].Bytes(), Offset: int64(a.Data().Offset()), Len: int64(a.Len())}
}

// validityBits is the validity bitmap of an array that has one.
func validityBits(a arrow.Array) bitutil.Bitmap {
	return bitutil.Bitmap{Data: a.NullBitmapBytes(), Offset: int64(a.Data().Offset()), Len: int64(a.Len())}
}

// Not negates a boolean array; NULL stays NULL.
func Not(mem memory.Allocator, a arrow.Array) arrow.Array {
	n := a.Len()
	vals := newBitmap(mem, n)
	bitutil.InvertBitmap(a.Data().Buffers()[1].Bytes(), a.Data().Offset(), n, vals.Bytes(), 0)
	return FinishBool(n, vals, AndValidity(mem, n, a))
}

// IsNull returns a non-NULL boolean array that is true where a is NULL
// (negate=false) or where it is not NULL (negate=true).
func IsNull(mem memory.Allocator, a arrow.Array, negate bool) arrow.Array {
	n := a.Len()
	vals := newBitmap(mem, n)
	vb := vals.Bytes()
	// The answer is the validity bitmap, inverted for IS NULL.
	switch {
	case a.DataType().ID() == arrow.NULL: // no validity bitmap: all NULL
		bitutil.SetBitsTo(vb, 0, int64(n), !negate)
	case !MayHaveNulls(a.Data()): // not NullN, which may store its count
		bitutil.SetBitsTo(vb, 0, int64(n), negate)
	case negate:
		bitutil.CopyBitmap(a.NullBitmapBytes(), a.Data().Offset(), n, vb, 0)
	default:
		bitutil.InvertBitmap(a.NullBitmapBytes(), a.Data().Offset(), n, vb, 0)
	}
	return FinishBool(n, vals, Validity{})
}

// TrueMask returns, for a boolean predicate result, which rows are true
// (NULL counts as false) and how many.
func TrueMask(pred arrow.Array) ([]bool, int) {
	b := pred.(*array.Boolean)
	n := b.Len()
	m := make([]bool, n)
	cnt := 0
	for i := 0; i < n; i++ {
		if b.IsValid(i) && b.Value(i) {
			m[i] = true
			cnt++
		}
	}
	return m, cnt
}

// CountDecided returns how many rows of a boolean array are valid and equal
// to dominant: the rows the left operand of AND (dominant false) or OR
// (dominant true) decides alone.
func CountDecided(b *array.Boolean, dominant bool) int {
	n := b.Len()
	vals := boolBits(b)
	if !MayHaveNulls(b.Data()) {
		c := bitutil.CountSetBits(vals.Data, int(vals.Offset), n)
		if dominant {
			return c
		}
		return n - c
	}
	valid := validityBits(b)
	tmp := make([]byte, bitutil.BytesForBits(int64(n)))
	if dominant {
		bitutil.BitmapAnd(vals.Data, valid.Data, vals.Offset, valid.Offset, tmp, 0, int64(n))
	} else {
		bitutil.BitmapAndNot(valid.Data, vals.Data, valid.Offset, vals.Offset, tmp, 0, int64(n))
	}
	return bitutil.CountSetBits(tmp, 0, n)
}
