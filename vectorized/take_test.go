package vectorized

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestTakeMatchesCompute checks the own gather loops against arrow-go's
// take kernel for every type they handle (and one they leave to it), with
// and without NULLs, sliced inputs, negative (NULL) indices and empty
// inputs.
func TestTakeMatchesCompute(t *testing.T) {
	mem := checked(t)
	ctx := context.Background()
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Timestamp_us,
		&arrow.Decimal128Type{Precision: 12, Scale: 2}, &arrow.Decimal256Type{Precision: 40, Scale: 3},
		&arrow.FixedSizeBinaryType{ByteWidth: 3}, arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String,
		arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeString, arrow.FixedWidthTypes.MonthDayNanoInterval,
		arrow.ListOf(arrow.PrimitiveTypes.Int64), // compute fallback
	}
	rng := testSeed(t)
	for _, dt := range types {
		for iter := 0; iter < 8; iter++ {
			n := rng.IntN(300)
			if iter == 0 {
				n = 0
			}
			nullPct := []int{0, 10, 100}[iter%3]
			a := randomTakeArray(t, mem, rng, dt, n+10, nullPct)
			off := rng.IntN(10)
			s := array.NewSlice(a, int64(off), int64(off+n))
			a.Release()
			idx := make([]int64, rng.IntN(400))
			for i := range idx {
				idx[i] = -1
				if n > 0 && (iter%2 == 0 || rng.IntN(5) > 0) {
					idx[i] = rng.Int64N(int64(n))
				}
			}
			got, err := Take(ctx, mem, s, idx)
			if err != nil {
				t.Fatal(err)
			}
			want := referenceTake(t, mem, s, idx)
			if !array.Equal(got, want) || got.NullN() != want.NullN() {
				t.Fatalf("%s iter %d: take(%v, %v)\ngot  %v\nwant %v", dt, iter, s, idx, got, want)
			}
			for _, x := range []arrow.Array{got, want, s} {
				x.Release()
			}
		}
	}
}

// referenceTake gathers with arrow-go's take kernel or, for the types it
// does not handle (month-day-nano intervals; its failing call leaks),
// value by value through strings.
func referenceTake(t *testing.T, mem memory.Allocator, a arrow.Array, idx []int64) arrow.Array {
	t.Helper()
	if a.DataType().ID() != arrow.INTERVAL_MONTH_DAY_NANO {
		ia := indexArray(mem, idx)
		defer ia.Release()
		out, err := compute.TakeArray(compute.WithAllocator(context.Background(), mem), a, ia)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	b := array.NewBuilder(mem, a.DataType())
	defer b.Release()
	for _, x := range idx {
		if x < 0 || a.IsNull(int(x)) {
			b.AppendNull()
		} else if err := b.AppendValueFromString(a.ValueStr(int(x))); err != nil {
			t.Fatal(err)
		}
	}
	return b.NewArray()
}

// randomTakeArray builds n random values of dt, nullPct percent NULL.
func randomTakeArray(t *testing.T, mem memory.Allocator, rng *rand.Rand, dt arrow.DataType, n, nullPct int) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for i := 0; i < n; i++ {
		if rng.IntN(100) < nullPct {
			b.AppendNull()
			continue
		}
		v := rng.IntN(1000)
		var err error
		switch bb := b.(type) {
		case *array.BooleanBuilder:
			bb.Append(v%2 == 0)
		case *array.StringBuilder:
			bb.Append(string(make([]byte, v%7)) + "x")
		case *array.LargeStringBuilder:
			bb.Append(string(rune('a' + v%26)))
		case *array.BinaryBuilder:
			bb.Append(make([]byte, v%5))
		case *array.FixedSizeBinaryBuilder:
			bb.Append([]byte{byte(v), byte(v >> 8), 7})
		case *array.ListBuilder:
			bb.Append(true)
			bb.ValueBuilder().(*array.Int64Builder).Append(int64(v))
		case *array.MonthDayNanoIntervalBuilder:
			bb.Append(arrow.MonthDayNanoInterval{Months: int32(v), Days: 1, Nanoseconds: int64(v) << 20})
		default:
			err = b.AppendValueFromString(randomDecimalOrInt(v))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.NewArray()
}

func randomDecimalOrInt(v int) string {
	return string(rune('0'+v%10)) + string(rune('0'+v/10%10))
}
