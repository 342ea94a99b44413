package exec_test

import (
	"context"
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

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

var cmpSeed = flag.Uint64("cmpseed", 0, "seed of TestCompareConstRandom (0: from the clock)")

// TestCompareConstRandom checks comparisons of a column with a constant
// against the definition: cast both sides to their common type, then
// compare. Columns and constants come from the edges where a constant stops
// being a value of the column's type (int32 bounds, decimal digits and
// scale, negative scales, float32 precision, NaN, NULL).
func TestCompareConstRandom(t *testing.T) {
	seed := *cmpSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -cmpseed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ctx := context.Background()

	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	colTypes := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		dec(7, 2), dec(5, -2), dec(38, 10), dec(3, 3),
	}
	consts := []scalar.Scalar{
		scalar.NewInt32Scalar(0), scalar.NewInt32Scalar(8), scalar.NewInt32Scalar(-127), scalar.NewInt32Scalar(128),
		scalar.NewInt32Scalar(255), scalar.NewInt32Scalar(1200), scalar.NewInt32Scalar(99999),
		scalar.NewInt32Scalar(math.MaxInt32), scalar.NewInt32Scalar(math.MinInt32),
		scalar.NewInt64Scalar(math.MaxInt32 + 1), scalar.NewInt64Scalar(math.MinInt32 - 1), scalar.NewInt64Scalar(1e12),
		scalar.NewInt64Scalar(math.MaxInt64), scalar.NewInt64Scalar(math.MinInt64),
		scalar.NewDecimal128Scalar(decimal128.FromI64(8125), dec(4, 3)),
		scalar.NewDecimal128Scalar(decimal128.FromI64(810), dec(3, 2)),
		scalar.NewDecimal128Scalar(decimal128.FromI64(-5), dec(2, 1)),
		scalar.NewDecimal128Scalar(decimal128.FromI64(12), dec(2, -2)),
		scalar.NewDecimal128Scalar(decimal128.FromI64(123), dec(3, 3)),
		scalar.NewDecimal128Scalar(decimal128.FromI64(5), dec(38, 0)),
		scalar.NewFloat64Scalar(1 << 53), scalar.NewFloat64Scalar(2), scalar.NewFloat64Scalar(2.5), scalar.NewFloat64Scalar(0.5), scalar.NewFloat64Scalar(0.1),
		scalar.NewFloat64Scalar(math.NaN()), scalar.NewFloat64Scalar(math.Inf(1)), scalar.NewFloat64Scalar(1e300),
		scalar.NewFloat32Scalar(0.1),
		scalar.MakeNullScalar(arrow.PrimitiveTypes.Int64), scalar.MakeNullScalar(dec(10, 4)),
	}
	ops := []string{"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
	checked := 0
	for _, ct := range colTypes {
		col := randomColumn(t, mem, rng, ct, 300)
		schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: ct, Nullable: true}}, nil)
		b := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
		col.Release()
		for _, k := range consts {
			common, ok := exec.CommonType(ct, k.DataType())
			if !ok {
				continue
			}
			for _, op := range ops {
				for _, left := range []bool{false, true} {
					args := []exec.Expr{exec.NewColumn(0, ct, "x"), exec.NewLiteral(k)}
					if left {
						args[0], args[1] = args[1], args[0]
					}
					e, err := exec.NewCall(op, args...)
					if err != nil {
						t.Fatalf("seed %d: %s(%s, %s): %v", seed, op, ct, k, err)
					}
					got, gotErr := e.Eval(ctx, ec, b)
					want, wantErr := compareInCommon(mem, op, b.Column(0), k, common, left)
					name := fmt.Sprintf("seed %d: %s as %s", seed, e, common)
					switch {
					case (gotErr != nil) != (wantErr != nil):
						t.Errorf("%s: error %v, want %v", name, gotErr, wantErr)
					case gotErr == nil && !array.Equal(got, want):
						t.Errorf("%s:\n got %v\nwant %v", name, got, want)
					}
					if got != nil {
						got.Release()
					}
					if want != nil {
						want.Release()
					}
					checked++
				}
			}
		}
		b.Release()
	}
	t.Logf("%d comparisons checked", checked)
}

// compareInCommon is the definition: both sides cast to common, compared.
func compareInCommon(mem memory.Allocator, op string, col arrow.Array, k scalar.Scalar, common arrow.DataType, left bool) (arrow.Array, error) {
	x, err := vectorized.Cast(mem, col, common)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	raw, err := scalar.MakeArrayFromScalar(k, col.Len(), mem)
	if err != nil {
		return nil, err
	}
	defer raw.Release()
	c, err := vectorized.Cast(mem, raw, common)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	cmpOp := map[string]vectorized.CmpOp{"equal": vectorized.Eq, "not_equal": vectorized.Ne, "less": vectorized.Lt,
		"less_equal": vectorized.Le, "greater": vectorized.Gt, "greater_equal": vectorized.Ge}[op]
	if left {
		return vectorized.Compare(mem, cmpOp, c, x)
	}
	return vectorized.Compare(mem, cmpOp, x, c)
}

// randomColumn makes n values of dt, a tenth NULL, drawn from small numbers
// (which meet the constants) and the type's extremes.
func randomColumn(t *testing.T, mem memory.Allocator, rng *rand.Rand, dt arrow.DataType, n int) arrow.Array {
	bld := array.NewBuilder(mem, dt)
	defer bld.Release()
	for range n {
		if rng.IntN(10) == 0 {
			bld.AppendNull()
			continue
		}
		small := int64(rng.IntN(601) - 300)
		switch b := bld.(type) {
		case *array.Int8Builder:
			b.Append(int8(pick(rng, small, math.MinInt8, math.MaxInt8)))
		case *array.Int16Builder:
			b.Append(int16(pick(rng, small, math.MinInt16, math.MaxInt16)))
		case *array.Int32Builder:
			b.Append(int32(pick(rng, small, math.MinInt32, math.MaxInt32)))
		case *array.Int64Builder:
			// 2^53+1 becomes 2^53 as a float64.
			b.Append(pick(rng, small, math.MinInt64, 1<<53+1))
		case *array.Uint8Builder:
			b.Append(uint8(pick(rng, small&0xff, 0, math.MaxUint8)))
		case *array.Uint32Builder:
			b.Append(uint32(pick(rng, small&0xffff, 0, math.MaxUint32)))
		case *array.Uint64Builder:
			// Not past MaxInt64: Cast fails on such values even to
			// decimal(38,0), so the definition has no answer for them.
			b.Append(uint64(pick(rng, small&0xffff, 0, math.MaxInt64)))
		case *array.Float32Builder:
			b.Append(float32(pickFloat(rng, float64(small)/4)))
		case *array.Float64Builder:
			b.Append(pickFloat(rng, float64(small)/4))
		case *array.Decimal128Builder:
			d := dt.(*arrow.Decimal128Type)
			// small with random fraction digits, or small units of
			// 10^-scale when the scale is negative.
			v := decimal128.FromI64(small)
			if d.Scale > 0 {
				v = v.IncreaseScaleBy(d.Scale).Add(decimal128.FromI64(rng.Int64N(int64(math.Pow10(int(min(d.Scale, 18)))))))
			}
			if rng.IntN(20) == 0 {
				v = decimal128.GetMaxValue(d.Precision)
				if rng.IntN(2) == 0 {
					v = v.Negate()
				}
			}
			if !v.FitsInPrecision(d.Precision) {
				v = decimal128.FromI64(small)
			}
			b.Append(v)
		default:
			t.Fatalf("randomColumn: no generator for %s", dt)
		}
	}
	return bld.NewArray()
}

func pick(rng *rand.Rand, small, lo, hi int64) int64 {
	switch rng.IntN(20) {
	case 0:
		return lo
	case 1:
		return hi
	}
	return max(lo, min(hi, small))
}

func pickFloat(rng *rand.Rand, small float64) float64 {
	switch rng.IntN(30) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(-1)
	case 2:
		return 0.1
	}
	return small
}
