package exec_test

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// TestAvgDecimalRandom holds AvgDecimal (an int64 path for sums that fit,
// big.Int beyond) to a big.Rat model: sum * 10^(ret scale - sum scale) / n
// rounded half away from zero, an overflow error exactly when that does
// not fit ret's precision. Sums cluster at the int64 path's edges: 10^k
// times the sum at MaxInt64, and ties.
func TestAvgDecimalRandom(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 31))
	for i := 0; i < 200000; i++ {
		sumScale := rng.Int32N(8)
		scale := min(sumScale+rng.Int32N(21), 38) // avg keeps at least the sum's scale
		ret := &arrow.Decimal128Type{Precision: max(scale, 1) + rng.Int32N(39-max(scale, 1)), Scale: scale}
		n := 1 + rng.Int64N(1000)
		if rng.IntN(4) == 0 {
			n = 1 + rng.Int64N(math.MaxInt64/2)
		}
		var sum *big.Int
		switch rng.IntN(4) {
		case 0: // near the int64 edge of the scaled sum
			k := ret.Scale - sumScale
			lim := int64(math.MaxInt64)
			if k < 19 {
				lim /= int64(math.Pow10(int(k)))
			}
			sum = big.NewInt(lim + rng.Int64N(5) - 2)
		case 1: // a tie: n/2 left over
			sum = big.NewInt(n*rng.Int64N(1000) + n/2)
		case 2:
			sum = new(big.Int).Lsh(big.NewInt(rng.Int64()), uint(rng.IntN(60)))
		default:
			sum = big.NewInt(rng.Int64N(1_000_000_000))
		}
		if rng.IntN(2) == 0 {
			sum.Neg(sum)
		}
		if sum.BitLen() > 126 {
			continue
		}
		got, err := exec.AvgDecimal(decimal128.FromBigInt(sum), sumScale, n, ret)
		want, fits := avgModel(sum, ret.Scale-sumScale, n, ret.Precision)
		switch {
		case !fits:
			if !errors.Is(err, vectorized.ErrOverflow) {
				t.Fatalf("seed %d: avg of %s (scale %d) over %d as %s = %s, %v; want an overflow", seed, sum, sumScale, n, ret, got.BigInt(), err)
			}
		case err != nil || got.BigInt().Cmp(want) != 0:
			t.Fatalf("seed %d: avg of %s (scale %d) over %d as %s = %s, %v; want %s", seed, sum, sumScale, n, ret, got.BigInt(), err, want)
		}
	}
}

// avgModel is sum * 10^k / n rounded half away from zero, and whether it
// fits prec digits.
func avgModel(sum *big.Int, k int32, n int64, prec int32) (*big.Int, bool) {
	num := new(big.Int).Mul(sum, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
	r := new(big.Rat).SetFrac(num, big.NewInt(n))
	abs := new(big.Rat).Abs(r)
	half := new(big.Rat).Add(abs, big.NewRat(1, 2))
	q := new(big.Int).Quo(half.Num(), half.Denom()) // floor(|r| + 1/2)
	if r.Sign() < 0 {
		q.Neg(q)
	}
	lim := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(prec)), nil)
	return q, new(big.Int).Abs(q).Cmp(lim) < 0
}

// BenchmarkAvgDecimal is one avg result of a decimal(17, 2) sum over 30
// rows, as a window's avg computes per row.
func BenchmarkAvgDecimal(b *testing.B) {
	ret := &arrow.Decimal128Type{Precision: 21, Scale: 6}
	sum := decimal128.FromI64(123456789)
	for b.Loop() {
		if _, err := exec.AvgDecimal(sum, 2, 30, ret); err != nil {
			b.Fatal(err)
		}
	}
}
