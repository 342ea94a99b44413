package vectorized

import (
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

// kleene evaluates AND (dominant=false) or OR (dominant=true).
func kleene(mem memory.Allocator, a, b *array.Boolean, dominant bool) arrow.Array {
	n := a.Len()
	vals := newBitmap(mem, n)
	vb := vals.Bytes()
	if a.NullN() == 0 && b.NullN() == 0 {
		op := bitutil.BitmapAnd
		if dominant {
			op = bitutil.BitmapOr
		}
		op(a.Data().Buffers()[1].Bytes(), b.Data().Buffers()[1].Bytes(), int64(a.Data().Offset()), int64(b.Data().Offset()), vb, 0, int64(n))
		return FinishBool(n, vals, Validity{})
	}
	valid := make([]bool, n)
	for i := 0; i < n; i++ {
		av, bv := a.IsValid(i), b.IsValid(i)
		x, y := av && a.Value(i), bv && b.Value(i)
		switch {
		case (av && x == dominant) || (bv && y == dominant):
			valid[i] = true
			if dominant {
				bitutil.SetBit(vb, i)
			}
		case av && bv:
			valid[i] = true
			if !dominant {
				bitutil.SetBit(vb, i)
			}
		}
	}
	return FinishBool(n, vals, BoolsToValidity(mem, valid))
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
	// A NULL-typed array has no validity bitmap, so its IsNull says false.
	allNull := a.DataType().ID() == arrow.NULL
	for i := 0; i < n; i++ {
		if (allNull || a.IsNull(i)) != negate {
			bitutil.SetBit(vb, i)
		}
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
