package vectorized

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestIncreaseScale checks the 64-bit fast path against decimal128's
// big.Int arithmetic at the edges and on random values.
func TestIncreaseScale(t *testing.T) {
	rng := testSeed(t)
	vals := []decimal128.Num{
		decimal128.FromI64(0), decimal128.FromI64(1), decimal128.FromI64(-1),
		decimal128.FromI64(math.MaxInt64), decimal128.FromI64(math.MinInt64),
		decimal128.FromI64(math.MaxInt64 / 10), decimal128.FromI64(-math.MaxInt64 / 10),
		decimal128.FromI64(922337203685477580), decimal128.FromI64(-922337203685477581),
		decimal128.New(1, 0), decimal128.New(-2, math.MaxUint64), // beyond 64 bits
	}
	for range 2000 {
		v := rng.Int64N(1 << uint(rng.IntN(62)+1))
		if rng.IntN(2) == 0 {
			v = -v
		}
		vals = append(vals, decimal128.FromI64(v))
	}
	for _, v := range vals {
		for k := int32(0); k <= 20; k++ {
			if decBitLen(v)+4*int(k) >= 126 {
				continue // rescaleOut takes the big.Int path there
			}
			if got, want := increaseScale(v, k), v.IncreaseScaleBy(k); got != want {
				t.Fatalf("increaseScale(%s, %d) = %s, want %s", v.BigInt(), k, got.BigInt(), want.BigInt())
			}
		}
	}
}

// TestWidenDecimal: the widening decimal casts give the values of the
// general path, keep NULLs and honour slice offsets.
func TestWidenDecimal(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	from := &arrow.Decimal128Type{Precision: 7, Scale: 2}
	b := array.NewDecimal128Builder(mem, from)
	for i, v := range []int64{12345, -99999, 0, 9999999, -9999999, 1} {
		if i == 2 {
			b.AppendNull()
		}
		b.Append(decimal128.FromI64(v))
	}
	whole := b.NewArray()
	b.Release()
	defer whole.Release()
	a := array.NewSlice(whole, 1, int64(whole.Len()))
	defer a.Release()
	for _, to := range []*arrow.Decimal128Type{{Precision: 7, Scale: 2}, {Precision: 12, Scale: 2}, {Precision: 12, Scale: 5}, {Precision: 38, Scale: 20}} {
		got, err := Cast(mem, a, to)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) != got.IsNull(i) {
				t.Fatalf("%s row %d: null %v, want %v", to, i, got.IsNull(i), a.IsNull(i))
			}
			if a.IsNull(i) {
				continue
			}
			want, err := RescaleDecimal(a.(*array.Decimal128).Value(i), from.Scale, to)
			if err != nil {
				t.Fatal(err)
			}
			if v := got.(*array.Decimal128).Value(i); v != want {
				t.Fatalf("%s row %d: %s, want %s", to, i, v.BigInt(), want.BigInt())
			}
		}
		got.Release()
	}
}

// TestSmallDecimalOp checks decimal arithmetic's 64-bit path against the
// 128-bit and big.Int one (decimalOpWide) on random values of random
// precisions and scales, near the overflow edges too.
func TestSmallDecimalOp(t *testing.T) {
	rng := testSeed(t)
	val := func() int64 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return []int64{1, -1, math.MaxInt64, math.MinInt64 + 1, 999999999999999999, -999999999999999999}[rng.IntN(6)]
		}
		v := rng.Int64N(1 << uint(rng.IntN(62)+1))
		if rng.IntN(2) == 0 {
			v = -v
		}
		return v
	}
	for i := 0; i < 200_000; i++ {
		op := []ArithOp{Add, Sub, Mul, Div}[rng.IntN(4)]
		xs, ys := int32(rng.IntN(10)), int32(rng.IntN(10))
		out := &arrow.Decimal128Type{Precision: int32(1 + rng.IntN(38)), Scale: int32(rng.IntN(12))}
		out.Scale = min(out.Scale, out.Precision)
		x, y := decimal128.FromI64(val()), decimal128.FromI64(val())
		got, gerr := decimalOp(op, x, xs, y, ys, out)
		want, werr := decimalOpWide(op, x, xs, y, ys, out)
		if (gerr == nil) != (werr == nil) || gerr == nil && got != want {
			t.Fatalf("%s(s%d) %s %s(s%d) as %s = %s, %v; want %s, %v", x.BigInt(), xs, op, y.BigInt(), ys, out,
				got.BigInt(), gerr, want.BigInt(), werr)
		}
	}
}

// TestDecimalToFloat64: the exact 64-bit path and the string fallback (wide
// or 128-bit values) both give the float64 nearest the decimal.
func TestDecimalToFloat64(t *testing.T) {
	for _, c := range []struct {
		v     decimal128.Num
		scale int32
		want  float64
	}{
		{decimal128.FromI64(-85542), 2, -855.42},
		{decimal128.FromI64(1), 0, 1},
		{decimal128.FromI64(0), 5, 0},
		{decimal128.FromI64(1 << 60), 3, float64(1<<60) / 1000},
		{decimal128.FromI64(math.MinInt64), 2, float64(math.MinInt64) / 100},
		{decimal128.New(1, 0), 0, 1 << 64},
		{decimal128.New(-1, 0), 1, -(1 << 64) / 10.0},
	} {
		if got := DecimalToFloat64(c.v, c.scale); got != c.want {
			t.Errorf("DecimalToFloat64(%s, %d) = %v, want %v", c.v.BigInt(), c.scale, got, c.want)
		}
	}
}

// TestDivRound128 checks decimal division's 128-bit path against big.Int
// (x * 10^k / y, rounded half away from zero) on random values of every
// width, exact halves and the 127-bit edge, and that it declines what it
// cannot hold rather than answering wrong.
func TestDivRound128(t *testing.T) {
	rng := testSeed(t)
	val := func(bitsMax int) decimal128.Num {
		switch rng.IntN(8) {
		case 0:
			return decimal128.FromI64(0)
		case 1:
			return []decimal128.Num{decimal128.FromI64(1), decimal128.FromI64(-1), decimal128.MaxDecimal128, decimal128.MaxDecimal128.Negate(),
				decimal128.New(math.MaxInt64, math.MaxUint64), decimal128.New(math.MinInt64, 0), decimal128.FromU64(math.MaxUint64)}[rng.IntN(7)]
		}
		// A random magnitude of 1 to bitsMax bits.
		v := new(big.Int).Lsh(new(big.Int).SetUint64(rng.Uint64()>>1), 64)
		v.Or(v, new(big.Int).SetUint64(rng.Uint64()))
		v.Rsh(v, uint(127-(rng.IntN(bitsMax)+1)))
		n := decimal128.FromBigInt(v)
		if rng.IntN(2) == 0 {
			n = n.Negate()
		}
		return n
	}
	fast := 0
	for i := 0; i < 200_000; i++ {
		x, y, k := val(127), val(127), int32(rng.IntN(42))-1
		if i%4 == 0 { // exact halves: y even, x a multiple of y/2
			y = decimal128.FromI64(2 * (rng.Int64N(1<<20) + 1))
			x = decimal128.FromI64((2*rng.Int64N(1<<30) + 1) * int64(y.LowBits()/2))
		}
		got, ok := divRound128(x, k, y)
		if !ok {
			continue
		}
		fast++
		num := new(big.Int).Mul(x.BigInt(), pow10Big(k))
		want := roundDiv(num, y.BigInt())
		if got.BigInt().Cmp(want) != 0 {
			t.Fatalf("%s * 10^%d / %s = %s, want %s", x.BigInt(), k, y.BigInt(), got.BigInt(), want)
		}
	}
	if fast < 50_000 {
		t.Fatalf("the 128-bit path took only %d of 200,000 divisions", fast)
	}
}

// TestIntToDecimal: integers cast to decimals over whole buffers give the
// values of the general path (RescaleDecimal), keep NULLs, honour slice
// offsets, and a value beyond the precision or 64 bits scaled is still an
// error naming it, or cast exactly where it fits in 128 bits.
func TestIntToDecimal(t *testing.T) {
	rng := testSeed(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewInt64Builder(mem)
	for i := range 500 {
		switch {
		case i%7 == 3:
			b.AppendNull()
		case i == 100:
			b.Append(math.MaxInt64)
		case i == 101:
			b.Append(math.MinInt64)
		default:
			v := rng.Int64N(1 << uint(rng.IntN(40)+1))
			if rng.IntN(2) == 0 {
				v = -v
			}
			b.Append(v)
		}
	}
	whole := b.NewArray()
	b.Release()
	defer whole.Release()
	for _, r := range [][2]int64{{1, 99}, {0, 500}, {102, 480}} {
		a := array.NewSlice(whole, r[0], r[1])
		defer a.Release()
		for _, to := range []*arrow.Decimal128Type{{Precision: 10, Scale: 0}, {Precision: 12, Scale: 2}, {Precision: 18, Scale: 4}, {Precision: 19, Scale: 0}, {Precision: 38, Scale: 10}} {
			var want []decimal128.Num
			var failed error
			for i := 0; i < a.Len(); i++ {
				if a.IsNull(i) {
					want = append(want, decimal128.Num{})
					continue
				}
				d, err := RescaleDecimal(decimal128.FromI64(a.(*array.Int64).Value(i)), 0, to)
				if err != nil && failed == nil {
					failed = err
				}
				want = append(want, d)
			}
			got, err := Cast(mem, a, to)
			if failed != nil {
				if err == nil {
					t.Fatalf("rows %v to %s: no error, want one (%v)", r, to, failed)
				}
				continue
			}
			if err != nil {
				t.Fatalf("rows %v to %s: %v", r, to, err)
			}
			for i := range want {
				if a.IsNull(i) != got.IsNull(i) {
					t.Fatalf("rows %v to %s row %d: null %v, want %v", r, to, i, got.IsNull(i), a.IsNull(i))
				}
				if v := got.(*array.Decimal128).Value(i); !a.IsNull(i) && v != want[i] {
					t.Fatalf("rows %v to %s row %d: %s, want %s", r, to, i, v.BigInt(), want[i].BigInt())
				}
			}
			got.Release()
		}
	}
	// The fast path's own: narrower integers.
	i32 := array.NewInt32Builder(mem)
	i32.AppendValues([]int32{7, -7, math.MaxInt32, math.MinInt32}, nil)
	i32.AppendNull()
	a := i32.NewArray()
	i32.Release()
	defer a.Release()
	got, err := Cast(mem, a, &arrow.Decimal128Type{Precision: 12, Scale: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	d := got.(*array.Decimal128)
	for i, want := range []int64{700, -700, 214748364700, -214748364800} {
		if v := d.Value(i); v != decimal128.FromI64(want) {
			t.Fatalf("int32 to DECIMAL(12,2) row %d: %s, want %d", i, v.BigInt(), want)
		}
	}
	if !d.IsNull(4) {
		t.Fatal("int32 to DECIMAL(12,2): row 4 not NULL")
	}
	if _, err := Cast(mem, a, &arrow.Decimal128Type{Precision: 9, Scale: 0}); err == nil || !strings.Contains(err.Error(), "2147483647") {
		t.Fatalf("int32 2147483647 to DECIMAL(9,0): %v, want an error naming it", err)
	}
}
