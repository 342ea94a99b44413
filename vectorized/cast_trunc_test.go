package vectorized

import (
	"math"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCastTruncatesToInteger: a fractional DOUBLE or DECIMAL cast to an
// integer type truncates toward zero, as Flink does, for random values of
// both signs (halves included).
func TestCastTruncatesToInteger(t *testing.T) {
	rng := testSeed(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const n = 2000
	dt := &arrow.Decimal128Type{Precision: 18, Scale: 3}
	fb := array.NewFloat64Builder(mem)
	db := array.NewDecimal128Builder(mem, dt)
	var floats []float64
	var units []int64 // decimal values in thousandths
	for i := 0; i < n; i++ {
		u := rng.Int64N(2_000_000_000) - 1_000_000_000
		if i%4 == 0 {
			u = u/1000*1000 + 500*(1-2*(u&1)) // exact halves
		}
		units = append(units, u)
		floats = append(floats, float64(u)/1000)
		fb.Append(floats[i])
		db.Append(decimal128.FromI64(u))
	}
	fa, da := fb.NewArray(), db.NewArray()
	fb.Release()
	db.Release()
	defer fa.Release()
	defer da.Release()
	for _, in := range []arrow.Array{fa, da} {
		out, err := Cast(mem, in, arrow.PrimitiveTypes.Int64)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*array.Int64)
		for i := 0; i < n; i++ {
			want := int64(math.Trunc(floats[i]))
			if in == da {
				want = new(big.Int).Quo(big.NewInt(units[i]), big.NewInt(1000)).Int64()
			}
			if got.Value(i) != want {
				t.Fatalf("CAST(%s AS BIGINT) = %d, want %d", FormatValue(in, i), got.Value(i), want)
			}
		}
		out.Release()
	}
}
