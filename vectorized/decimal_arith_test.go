package vectorized

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// randomDecimals is n values of type dt: mostly small, some near the
// type's or int64's bounds and beyond int64 (wide), some zero, some NULL.
func randomDecimals(mem memory.Allocator, rng *rand.Rand, dt *arrow.Decimal128Type, n int) arrow.Array {
	b := array.NewDecimal128Builder(mem, dt)
	defer b.Release()
	top := decimal128.FromI64(1)
	for range dt.Precision {
		top = top.Mul(decimal128.FromI64(10))
	}
	for range n {
		var v decimal128.Num
		switch rng.IntN(10) {
		case 0:
			b.AppendNull()
			continue
		case 1:
			v = decimal128.Num{}
		case 2: // the type's largest magnitudes
			v = top.Sub(decimal128.FromI64(1 + rng.Int64N(1000)))
		case 3: // near int64's bounds, kept within the type
			v = decimal128.FromI64(math.MaxInt64 - rng.Int64N(1000))
		default:
			v = decimal128.FromI64(rng.Int64N(10_000_000))
		}
		if v.Greater(top.Sub(decimal128.FromI64(1))) {
			v = top.Sub(decimal128.FromI64(1))
		}
		if rng.IntN(2) == 0 {
			v = v.Negate()
		}
		b.Append(v)
	}
	return b.NewArray()
}

// TestDecimalArithRows checks DecimalArith's whole-buffer int64 loop
// against decimalOp, the value at a time path, over random operands of
// random types: the same values and NULLs, and an error where decimalOp
// has one.
func TestDecimalArithRows(t *testing.T) {
	mem := checked(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	// A result of exactly 10^precision overflows.
	dt := &arrow.Decimal128Type{Precision: 4, Scale: 2}
	x, y := array.NewDecimal128Builder(mem, dt), array.NewDecimal128Builder(mem, dt)
	x.Append(decimal128.FromI64(9999))
	y.Append(decimal128.FromI64(1))
	xa, ya := x.NewArray(), y.NewArray()
	x.Release()
	y.Release()
	if r, err := DecimalArith(mem, Add, xa, ya, dt); !errors.Is(err, ErrOverflow) {
		t.Fatalf("99.99 + 0.01 as DECIMAL(4,2): %v, want overflow", err)
	} else if r != nil {
		r.Release()
	}
	xa.Release()
	ya.Release()
	for range 300 {
		typ := func() *arrow.Decimal128Type {
			p := int32(1 + rng.IntN(20))
			return &arrow.Decimal128Type{Precision: p, Scale: int32(rng.IntN(int(p) + 1))}
		}
		at, bt := typ(), typ()
		op := []ArithOp{Add, Sub, Mul, Div}[rng.IntN(4)]
		var out *arrow.Decimal128Type
		switch op {
		case Add, Sub:
			s := max(at.Scale, bt.Scale)
			out = &arrow.Decimal128Type{Precision: min(38, max(at.Precision-at.Scale, bt.Precision-bt.Scale)+s+int32(rng.IntN(2))), Scale: s}
		case Mul:
			out = &arrow.Decimal128Type{Precision: min(38, at.Precision+bt.Precision-int32(rng.IntN(3))), Scale: at.Scale + bt.Scale}
		default:
			s := max(at.Scale, min(at.Scale+int32(rng.IntN(8)), 18))
			out = &arrow.Decimal128Type{Precision: min(38, at.Precision-at.Scale+bt.Scale+s), Scale: s}
		}
		if out.Scale > out.Precision {
			out.Precision = out.Scale
		}
		a, b := randomDecimals(mem, rng, at, 50), randomDecimals(mem, rng, bt, 50)
		got, err := DecimalArith(mem, op, a, b, out)
		var wantErr error
		for i := 0; i < a.Len() && wantErr == nil; i++ {
			if a.IsNull(i) || b.IsNull(i) {
				continue
			}
			want, err := decimalOp(op, a.(*array.Decimal128).Value(i), at.Scale, b.(*array.Decimal128).Value(i), bt.Scale, out)
			if err != nil {
				wantErr = err
				break
			}
			if got != nil && (got.IsNull(i) || got.(*array.Decimal128).Value(i) != want) {
				t.Fatalf("seed %d: %s %s %s %s -> %s row %d: got %v want %s", seed, a.(*array.Decimal128).Value(i).ToString(at.Scale), op,
					b.(*array.Decimal128).Value(i).ToString(bt.Scale), at, out, i, got.(*array.Decimal128).Value(i).ToString(out.Scale), want.ToString(out.Scale))
			}
		}
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("seed %d: %s %s %s -> %s: error %v, want %v", seed, at, op, bt, out, err, wantErr)
		}
		if got != nil {
			for i := range a.Len() {
				if got.IsNull(i) != (a.IsNull(i) || b.IsNull(i)) {
					t.Fatalf("seed %d: row %d NULL %v", seed, i, got.IsNull(i))
				}
			}
			got.Release()
		}
		a.Release()
		b.Release()
	}
}
