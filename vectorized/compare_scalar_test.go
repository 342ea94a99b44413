package vectorized

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the randomized kernel tests (0: from the clock)")

func testSeed(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// randomTypes are the types the randomized kernel tests draw arrays of.
var randomTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
	arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
	arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Time32s,
	arrow.FixedWidthTypes.Time64us, arrow.FixedWidthTypes.Timestamp_us, arrow.FixedWidthTypes.Duration_ms,
	&arrow.Decimal128Type{Precision: 7, Scale: 2}, &arrow.Decimal128Type{Precision: 38, Scale: 0},
	arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary, arrow.FixedWidthTypes.Boolean,
}

// randomArray returns n values of dt from a small domain (so that values
// repeat and meet constants), with NULLs when nulls is set, as a slice at a
// random offset of a longer array.
func randomArray(t *testing.T, mem memory.Allocator, rng *rand.Rand, dt arrow.DataType, n int, nulls bool) arrow.Array {
	bld := array.NewBuilder(mem, dt)
	defer bld.Release()
	off := rng.IntN(9)
	for range off + n {
		if nulls && rng.IntN(5) == 0 {
			bld.AppendNull()
			continue
		}
		v := int64(rng.IntN(21) - 10)
		switch b := bld.(type) {
		case *array.Int8Builder:
			b.Append(int8(v))
		case *array.Int16Builder:
			b.Append(int16(v))
		case *array.Int32Builder:
			b.Append(int32(v))
		case *array.Int64Builder:
			b.Append(v)
		case *array.Uint8Builder:
			b.Append(uint8(v + 10))
		case *array.Uint16Builder:
			b.Append(uint16(v + 10))
		case *array.Uint32Builder:
			b.Append(uint32(v + 10))
		case *array.Uint64Builder:
			b.Append(uint64(v+10) << 60) // the high bit set: unsigned order
		case *array.Float32Builder:
			b.Append(float32(randomFloat(rng, v)))
		case *array.Float64Builder:
			b.Append(randomFloat(rng, v))
		case *array.Date32Builder:
			b.Append(arrow.Date32(v))
		case *array.Date64Builder:
			b.Append(arrow.Date64(v * 86400000))
		case *array.Time32Builder:
			b.Append(arrow.Time32(v + 10))
		case *array.Time64Builder:
			b.Append(arrow.Time64(v + 10))
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(v))
		case *array.DurationBuilder:
			b.Append(arrow.Duration(v))
		case *array.Decimal128Builder:
			// Values whose low words agree and high words differ, and the
			// reverse, so both halves of the order are exercised.
			x := decimal128.FromI64(v)
			if rng.IntN(3) == 0 {
				x = decimal128.New(v, uint64(rng.IntN(3))<<63)
			}
			if !x.FitsInPrecision(dt.(*arrow.Decimal128Type).Precision) {
				x = decimal128.FromI64(v)
			}
			b.Append(x)
		case *array.StringBuilder:
			b.Append(randomString(rng, v))
		case *array.LargeStringBuilder:
			b.Append(randomString(rng, v))
		case *array.BinaryBuilder:
			b.Append([]byte(randomString(rng, v)))
		case *array.BooleanBuilder:
			b.Append(v > 0)
		default:
			t.Fatalf("randomArray: no generator for %s", dt)
		}
	}
	a := bld.NewArray()
	defer a.Release()
	return array.NewSlice(a, int64(off), int64(off+n))
}

func randomFloat(rng *rand.Rand, v int64) float64 {
	switch rng.IntN(12) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(int(v))
	case 2:
		return math.Copysign(0, -1)
	}
	return float64(v) / 2
}

func randomString(rng *rand.Rand, v int64) string {
	return []string{"", "a", "ab", "abc", "b", "ba", "\xff", "a\x00"}[(v+10)%8]
}

// TestCompareScalarRandom checks CompareScalar against comparing with the
// constant expanded into an array (compareOwn's per-row loop).
func TestCompareScalarRandom(t *testing.T) {
	mem := checked(t)
	rng := testSeed(t)
	for _, dt := range randomTypes {
		for _, nulls := range []bool{false, true} {
			n := rng.IntN(200) + 1
			a := randomArray(t, mem, rng, dt, n, nulls)
			pool := randomArray(t, mem, rng, dt, 8, true)
			for k := range pool.Len() + 2 {
				var c scalar.Scalar
				var err error
				switch {
				case k < pool.Len():
					c, err = scalar.GetScalar(pool, k) // NULL when pool[k] is
				case IsFloat(dt):
					c, err = scalar.MakeScalarParam(math.NaN(), dt)
					if dt.ID() == arrow.FLOAT32 {
						c = scalar.NewFloat32Scalar(float32(math.NaN()))
					}
				default:
					c = scalar.MakeNullScalar(dt)
				}
				if err != nil {
					t.Fatal(err)
				}
				for op := Eq; op <= Ge; op++ {
					name := fmt.Sprintf("%s nulls=%v %d rows offset %d: x %s %s", dt, nulls, n, a.Data().Offset(), op.computeName(), c)
					got, err := CompareScalar(mem, op, a, c)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					rep, err := scalar.MakeArrayFromScalar(c, n, mem)
					if err != nil {
						t.Fatal(err)
					}
					want, err := compareOwn(mem, op, a, rep)
					if err != nil {
						t.Fatal(err)
					}
					if !array.Equal(got, want) || got.NullN() != want.NullN() {
						t.Errorf("%s\n  x: %v\n got %v\nwant %v", name, a, got, want)
					}
					got.Release()
					want.Release()
					rep.Release()
				}
				if rel, ok := c.(scalar.Releasable); ok {
					rel.Release()
				}
			}
			a.Release()
			pool.Release()
		}
	}
}

func TestCompareScalarMismatch(t *testing.T) {
	mem := checked(t)
	a := ints(mem, 1, 2)
	defer a.Release()
	if _, err := CompareScalar(mem, Lt, a, scalar.NewInt32Scalar(1)); err == nil {
		t.Fatal("comparing int64 with an int32 constant: no error")
	}
}

// TestInScalarsRandom checks InScalars against x = c1 OR x = c2 OR ...
// evaluated row by row with three-valued logic.
func TestInScalarsRandom(t *testing.T) {
	mem := checked(t)
	rng := testSeed(t)
	for _, dt := range randomTypes {
		for _, nulls := range []bool{false, true} {
			n := rng.IntN(200) + 1
			a := randomArray(t, mem, rng, dt, n, nulls)
			pool := randomArray(t, mem, rng, dt, 1+rng.IntN(5), true)
			var consts []scalar.Scalar
			hasNull := false
			want := make([]int, n) // 0 false, 1 true, 2 NULL
			for k := range pool.Len() {
				c, err := scalar.GetScalar(pool, k)
				if err != nil {
					t.Fatal(err)
				}
				if r, ok := c.(scalar.Releasable); ok {
					defer r.Release()
				}
				if !c.IsValid() {
					hasNull = true
					continue
				}
				consts = append(consts, c)
				rep, err := scalar.MakeArrayFromScalar(c, n, mem)
				if err != nil {
					t.Fatal(err)
				}
				eq, err := compareOwn(mem, Eq, a, rep)
				if err != nil {
					t.Fatal(err)
				}
				for i := range n {
					if eq.IsValid(i) && eq.(*array.Boolean).Value(i) {
						want[i] = 1
					}
				}
				eq.Release()
				rep.Release()
			}
			for i := range n {
				if a.IsNull(i) || want[i] == 0 && hasNull {
					want[i] = 2
				}
			}
			got, err := InScalars(mem, a, consts, hasNull)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				g := 2
				if got.IsValid(i) {
					g = int(BoolByte(got.(*array.Boolean).Value(i)))
				}
				if g != want[i] {
					t.Fatalf("%s row %d: %s IN %v (NULL in list: %v) gives %d, want %d", dt, i, FormatValue(a, i), consts, hasNull, g, want[i])
				}
			}
			got.Release()
			a.Release()
			pool.Release()
		}
	}
}
