package vectorized

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Flip returns the operator with its operands swapped: c op x is
// x op.Flip() c.
func (op CmpOp) Flip() CmpOp {
	switch op {
	case Lt:
		return Gt
	case Le:
		return Ge
	case Gt:
		return Lt
	case Ge:
		return Le
	}
	return op
}

// CompareScalar applies op to every row of a and the constant c (a op c),
// which has a's type. It reads a's values in place instead of expanding c
// into an array, and the result's validity is a's (NULL where a is NULL,
// all NULL when c is NULL). Orders are those of Compare (NaN above every
// float and equal to itself).
func CompareScalar(mem memory.Allocator, op CmpOp, a arrow.Array, c scalar.Scalar) (arrow.Array, error) {
	if !arrow.TypeEqual(a.DataType(), c.DataType()) {
		return nil, fmt.Errorf("compare: mismatched types %s and %s", a.DataType(), c.DataType())
	}
	n := a.Len()
	if !c.IsValid() || a.DataType().ID() == arrow.NULL {
		return FinishBool(n, newBitmap(mem, n), allNull(mem, n)), nil
	}
	vals := newBitmap(mem, n)
	out := vals.Bytes()
	switch x := c.(type) {
	case *scalar.Int8:
		cmpOrdered(op, Values[int8](a), x.Value, out)
	case *scalar.Int16:
		cmpOrdered(op, Values[int16](a), x.Value, out)
	case *scalar.Int32:
		cmpOrdered(op, Values[int32](a), x.Value, out)
	case *scalar.Int64:
		cmpOrdered(op, Values[int64](a), x.Value, out)
	case *scalar.Uint8:
		cmpOrdered(op, Values[uint8](a), x.Value, out)
	case *scalar.Uint16:
		cmpOrdered(op, Values[uint16](a), x.Value, out)
	case *scalar.Uint32:
		cmpOrdered(op, Values[uint32](a), x.Value, out)
	case *scalar.Uint64:
		cmpOrdered(op, Values[uint64](a), x.Value, out)
	case *scalar.Date32:
		cmpOrdered(op, Values[int32](a), int32(x.Value), out)
	case *scalar.Time32:
		cmpOrdered(op, Values[int32](a), int32(x.Value), out)
	case *scalar.Date64:
		cmpOrdered(op, Values[int64](a), int64(x.Value), out)
	case *scalar.Time64:
		cmpOrdered(op, Values[int64](a), int64(x.Value), out)
	case *scalar.Timestamp:
		cmpOrdered(op, Values[int64](a), int64(x.Value), out)
	case *scalar.Duration:
		cmpOrdered(op, Values[int64](a), int64(x.Value), out)
	case *scalar.Float32:
		cmpFloat(op, Values[float32](a), x.Value, out)
	case *scalar.Float64:
		cmpFloat(op, Values[float64](a), x.Value, out)
	case *scalar.Decimal128:
		cmpDecimal(op, DecimalValues(a), x.Value, out)
	case *scalar.String:
		cmpStrings(op, a.(*array.String).ValueOffsets(), bufBytes(a.Data(), 2), x.Value.Bytes(), out)
	case *scalar.LargeString:
		cmpStrings(op, a.(*array.LargeString).ValueOffsets(), bufBytes(a.Data(), 2), x.Value.Bytes(), out)
	default:
		// Rare types (booleans, binary, intervals): expand the constant.
		vals.Release()
		rep, err := scalar.MakeArrayFromScalar(c, n, mem)
		if err != nil {
			return nil, err
		}
		defer rep.Release()
		return Compare(mem, op, a, rep)
	}
	return FinishBool(n, vals, AndValidity(mem, n, a)), nil
}

// allNull is a validity bitmap of n NULL rows.
func allNull(mem memory.Allocator, n int) Validity {
	if n == 0 {
		return Validity{}
	}
	return Validity{Buf: newBitmap(mem, n), Nulls: n}
}

// The bit loops below set out's bit i (out is zeroed) where the primitive
// holds for v[i]; each op is one primitive, possibly negated: <, <= and ==
// of a non-NaN constant are false for a NaN value, and NaN sorts above all,
// so x >= c is !(x < c) and x > c is !(x <= c) for floats as for integers.

func cmpOrdered[T cmp.Ordered](op CmpOp, v []T, c T, out []byte) {
	switch op {
	case Eq, Ne:
		eqBits(v, c, out)
	case Lt, Ge:
		lessBits(v, c, out)
	default:
		lessEqBits(v, c, out)
	}
	if op == Ne || op == Ge || op == Gt {
		negateBits(out, len(v))
	}
}

func cmpFloat[T float32 | float64](op CmpOp, v []T, c T, out []byte) {
	if c == c {
		cmpOrdered(op, v, c, out)
		return
	}
	// c is NaN: only NaN equals it, everything else is below it.
	switch op {
	case Le:
		negateBits(out, len(v))
		return
	case Gt:
		return
	}
	nanBits(v, out)
	if op == Ne || op == Lt {
		negateBits(out, len(v))
	}
}

func cmpDecimal(op CmpOp, v []decimal128.Num, c decimal128.Num, out []byte) {
	switch op {
	case Eq, Ne:
		eqBits(v, c, out)
	case Lt, Ge:
		lessBitsDec(v, c, out)
	default:
		lessEqBitsDec(v, c, out)
	}
	if op == Ne || op == Ge || op == Gt {
		negateBits(out, len(v))
	}
}

// cmpStrings compares the strings data[offs[i]:offs[i+1]] with c.
func cmpStrings[O int32 | int64](op CmpOp, offs []O, data []byte, c []byte, out []byte) {
	n := len(offs) - 1
	if op == Eq || op == Ne {
		for i := range n {
			lo, hi := offs[i], offs[i+1]
			out[i>>3] |= BoolByte(int(hi-lo) == len(c) && bytes.Equal(data[lo:hi], c)) << (i & 7)
		}
		if op == Ne {
			negateBits(out, n)
		}
		return
	}
	for i := range n {
		out[i>>3] |= BoolByte(op.holds(bytes.Compare(data[offs[i]:offs[i+1]], c))) << (i & 7)
	}
}

// BoolByte is 1 for true and 0 for false, for branch-free bit packing.
func BoolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// pack4 packs four results into bits 0-3, first in the lowest; loops call
// it twice per output byte (one call packing eight is too big to inline).
func pack4(b0, b1, b2, b3 bool) byte {
	return BoolByte(b0) | BoolByte(b1)<<1 | BoolByte(b2)<<2 | BoolByte(b3)<<3
}

func lessBits[T cmp.Ordered](v []T, c T, out []byte) {
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := v[i : i+8 : i+8]
		out[i>>3] = pack4(w[0] < c, w[1] < c, w[2] < c, w[3] < c) | pack4(w[4] < c, w[5] < c, w[6] < c, w[7] < c)<<4
	}
	for ; i < len(v); i++ {
		out[i>>3] |= BoolByte(v[i] < c) << (i & 7)
	}
}

func lessEqBits[T cmp.Ordered](v []T, c T, out []byte) {
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := v[i : i+8 : i+8]
		out[i>>3] = pack4(w[0] <= c, w[1] <= c, w[2] <= c, w[3] <= c) | pack4(w[4] <= c, w[5] <= c, w[6] <= c, w[7] <= c)<<4
	}
	for ; i < len(v); i++ {
		out[i>>3] |= BoolByte(v[i] <= c) << (i & 7)
	}
}

// eqBits also serves decimals (== compares both halves).
func eqBits[T comparable](v []T, c T, out []byte) {
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := v[i : i+8 : i+8]
		out[i>>3] = pack4(w[0] == c, w[1] == c, w[2] == c, w[3] == c) | pack4(w[4] == c, w[5] == c, w[6] == c, w[7] == c)<<4
	}
	for ; i < len(v); i++ {
		out[i>>3] |= BoolByte(v[i] == c) << (i & 7)
	}
}

func nanBits[T float32 | float64](v []T, out []byte) {
	for i, x := range v {
		out[i>>3] |= BoolByte(x != x) << (i & 7)
	}
}

// decLess and decLessEq order decimal128 values by their two's-complement
// halves: the signed high word, then the unsigned low word.
func decLess(x, c decimal128.Num) bool {
	return x.HighBits() < c.HighBits() || x.HighBits() == c.HighBits() && x.LowBits() < c.LowBits()
}

func decLessEq(x, c decimal128.Num) bool {
	return x.HighBits() < c.HighBits() || x.HighBits() == c.HighBits() && x.LowBits() <= c.LowBits()
}

func lessBitsDec(v []decimal128.Num, c decimal128.Num, out []byte) {
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := v[i : i+8 : i+8]
		out[i>>3] = pack4(decLess(w[0], c), decLess(w[1], c), decLess(w[2], c), decLess(w[3], c)) | pack4(decLess(w[4], c), decLess(w[5], c), decLess(w[6], c), decLess(w[7], c))<<4
	}
	for ; i < len(v); i++ {
		out[i>>3] |= BoolByte(decLess(v[i], c)) << (i & 7)
	}
}

func lessEqBitsDec(v []decimal128.Num, c decimal128.Num, out []byte) {
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := v[i : i+8 : i+8]
		out[i>>3] = pack4(decLessEq(w[0], c), decLessEq(w[1], c), decLessEq(w[2], c), decLessEq(w[3], c)) | pack4(decLessEq(w[4], c), decLessEq(w[5], c), decLessEq(w[6], c), decLessEq(w[7], c))<<4
	}
	for ; i < len(v); i++ {
		out[i>>3] |= BoolByte(decLessEq(v[i], c)) << (i & 7)
	}
}

// negateBits inverts the first n bits of out, leaving the bits past n
// clear.
func negateBits(out []byte, n int) {
	full := n >> 3
	for i := range out[:full] {
		out[i] = ^out[i]
	}
	if r := n & 7; r != 0 {
		out[full] = ^out[full] & byte(1<<r-1)
	}
}

// InScalars is SQL a IN (consts...) for constants of a's type: true where a
// equals one of them, else NULL where a is NULL or hasNull (the list also
// holds a NULL), else false. Each constant is one CompareScalar pass.
func InScalars(mem memory.Allocator, a arrow.Array, consts []scalar.Scalar, hasNull bool) (arrow.Array, error) {
	n := a.Len()
	hit := newBitmap(mem, n)
	for _, c := range consts {
		eq, err := CompareScalar(mem, Eq, a, c)
		if err != nil {
			hit.Release()
			return nil, err
		}
		// Bits under NULL rows may be set: the validity below hides them.
		bitutil.BitmapOr(hit.Bytes(), maskBytes(eq), 0, 0, hit.Bytes(), 0, int64(n))
		eq.Release()
	}
	v := AndValidity(mem, n, a)
	if hasNull {
		if v.Buf == nil {
			v.Buf = hit
			hit.Retain()
		} else {
			bitutil.BitmapAnd(v.Buf.Bytes(), hit.Bytes(), 0, 0, v.Buf.Bytes(), 0, int64(n))
		}
		v.Nulls = n - bitutil.CountSetBits(v.Buf.Bytes(), 0, n)
	}
	return FinishBool(n, hit, v), nil
}
