package vectorized

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

func repeatFixed[T Fixed](mem memory.Allocator, dt arrow.DataType, v T, n int) arrow.Array {
	out := NewFixedOut[T](mem, n)
	for i := range out.Vals {
		out.Vals[i] = v
	}
	return out.Finish(dt, nil, 0)
}

// Repeat returns an array of n copies of a valid scalar for the common
// fixed-width types (ok = false otherwise). It is a fill loop, where
// scalar.MakeArrayFromScalar appends through a builder; literals are
// expanded this way once per batch.
func Repeat(mem memory.Allocator, s scalar.Scalar, n int) (arrow.Array, bool) {
	if !s.IsValid() {
		return nil, false
	}
	dt := s.DataType()
	switch x := s.(type) {
	case *scalar.Int64:
		return repeatFixed(mem, dt, x.Value, n), true
	case *scalar.Int32:
		return repeatFixed(mem, dt, x.Value, n), true
	case *scalar.Int16:
		return repeatFixed(mem, dt, x.Value, n), true
	case *scalar.Int8:
		return repeatFixed(mem, dt, x.Value, n), true
	case *scalar.Float64:
		return repeatFixed(mem, dt, x.Value, n), true
	case *scalar.Float32:
		return repeatFixed(mem, dt, x.Value, n), true
	case *scalar.Date32:
		return repeatFixed(mem, dt, int32(x.Value), n), true
	case *scalar.Timestamp:
		return repeatFixed(mem, dt, int64(x.Value), n), true
	case *scalar.Boolean:
		buf := newBitmap(mem, n)
		if x.Value {
			bitutil.SetBitsTo(buf.Bytes(), 0, int64(n), true)
		}
		return FinishBool(n, buf, Validity{}), true
	case *scalar.Decimal128:
		res, o := newDecimalOut(mem, n)
		for i := range res {
			res[i] = x.Value
		}
		return finishDecimal(o, dt, n, Validity{}), true
	}
	return nil, false
}
