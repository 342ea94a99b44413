package vectorized

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// The benchmarks compare own loops with arrow-go compute for the kernels
// where both exist; results decide which one the engine uses (see doc.go).
// Run: go test -run x -bench . -count 6 ./vectorized | benchstat -

const benchRows = 64 << 10

func benchInts(mem memory.Allocator, nulls, sliced bool, seed uint64) arrow.Array {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := array.NewInt64Builder(mem)
	defer b.Release()
	n := benchRows
	if sliced {
		n += 16
	}
	for i := 0; i < n; i++ {
		if nulls && rng.IntN(10) == 0 {
			b.AppendNull()
		} else {
			b.Append(rng.Int64N(1 << 40))
		}
	}
	a := b.NewArray()
	if !sliced {
		return a
	}
	defer a.Release()
	return array.NewSlice(a, 8, int64(8+benchRows))
}

func variants(b *testing.B, f func(b *testing.B, x, y arrow.Array)) {
	mem := memory.NewGoAllocator()
	for _, nulls := range []bool{false, true} {
		for _, sliced := range []bool{false, true} {
			b.Run(fmt.Sprintf("hasNulls=%v/sliced=%v/int64", nulls, sliced), func(b *testing.B) {
				x, y := benchInts(mem, nulls, sliced, 1), benchInts(mem, nulls, sliced, 2)
				defer x.Release()
				defer y.Release()
				b.SetBytes(int64(benchRows * 8 * 2))
				f(b, x, y)
			})
		}
	}
}

func BenchmarkAddInt64(b *testing.B) {
	mem := memory.NewGoAllocator()
	b.Run("own", func(b *testing.B) {
		eachVariant(b, func(x, y arrow.Array) (arrow.Array, error) { return ArithInt[int64](mem, Add, x, y) })
	})
	b.Run("compute", func(b *testing.B) {
		eachVariant(b, func(x, y arrow.Array) (arrow.Array, error) { return callCompute(mem, "add", x, y) })
	})
}

// eachVariant times f over the inputs of every variant, releasing what it
// returns.
func eachVariant(b *testing.B, f func(x, y arrow.Array) (arrow.Array, error)) {
	variants(b, func(b *testing.B, x, y arrow.Array) {
		for b.Loop() {
			r, err := f(x, y)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
		}
	})
}

// eachConverted is eachVariant over conv of each variant's first input
// (converted once, outside the timing).
func eachConverted(b *testing.B, mem memory.Allocator, conv func(memory.Allocator, arrow.Array) arrow.Array, f func(arrow.Array) (arrow.Array, error)) {
	variants(b, func(b *testing.B, x, _ arrow.Array) {
		c := conv(mem, x)
		defer c.Release()
		for b.Loop() {
			r, err := f(c)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
		}
	})
}

// callCompute calls an arrow-go compute function on arrays or scalars.
func callCompute(mem memory.Allocator, fn string, args ...any) (arrow.Array, error) {
	ds := make([]compute.Datum, len(args))
	for i, a := range args {
		d := compute.NewDatum(a)
		defer d.Release()
		ds[i] = d
	}
	r, err := compute.CallFunction(compute.WithAllocator(context.Background(), mem), fn, nil, ds...)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return r.(*compute.ArrayDatum).MakeArray(), nil
}

func BenchmarkLessInt64(b *testing.B) {
	mem := memory.NewGoAllocator()
	b.Run("own", func(b *testing.B) {
		eachVariant(b, func(x, y arrow.Array) (arrow.Array, error) { return compareOwn(mem, Lt, x, y) })
	})
	b.Run("compute", func(b *testing.B) {
		eachVariant(b, func(x, y arrow.Array) (arrow.Array, error) { return callCompute(mem, "less", x, y) })
	})
}

// builderTake is the alternative to compute's take: append row by row.
func builderTake(mem memory.Allocator, a arrow.Array, idx []int64) arrow.Array {
	bl := array.NewBuilder(mem, a.DataType())
	defer bl.Release()
	bl.Reserve(len(idx))
	for _, i := range idx {
		if i < 0 {
			bl.AppendNull()
		} else {
			AppendValue(bl, a, int(i))
		}
	}
	return bl.NewArray()
}

func BenchmarkTakeInt64(b *testing.B) {
	benchTake(b, func(mem memory.Allocator, nulls, sliced bool) arrow.Array { return benchInts(mem, nulls, sliced, 1) })
}

// BenchmarkTakeString gathers strings of 5-12 bytes.
func BenchmarkTakeString(b *testing.B) {
	benchTake(b, func(mem memory.Allocator, nulls, sliced bool) arrow.Array {
		x := benchInts(mem, nulls, sliced, 1)
		defer x.Release()
		s, err := compute.CastToType(context.Background(), x, arrow.BinaryTypes.String)
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// benchTake gathers half as many random rows as the input has with the
// own loops (Take), arrow-go's take kernel and a builder loop.
func benchTake(b *testing.B, input func(mem memory.Allocator, nulls, sliced bool) arrow.Array) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(3, 3))
	idx := make([]int64, benchRows/2)
	for i := range idx {
		idx[i] = rng.Int64N(benchRows)
	}
	ctx := context.Background()
	for _, kind := range []string{"own", "compute", "builder"} {
		for _, nulls := range []bool{false, true} {
			for _, sliced := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/hasNulls=%v/sliced=%v", kind, nulls, sliced), func(b *testing.B) {
					x := input(mem, nulls, sliced)
					defer x.Release()
					ia := indexArray(mem, idx)
					defer ia.Release()
					for b.Loop() {
						var r arrow.Array
						var err error
						switch kind {
						case "own":
							r, err = Take(ctx, mem, x, idx)
						case "compute":
							r, err = compute.TakeArray(ctx, x, ia)
						case "builder":
							r = builderTake(mem, x, idx)
						}
						if err != nil {
							b.Fatal(err)
						}
						r.Release()
					}
				})
			}
		}
	}
}

func BenchmarkFilterBatch(b *testing.B) {
	mem := memory.NewGoAllocator()
	mask := make([]bool, benchRows)
	cnt := 0
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range mask {
		if rng.IntN(2) == 0 {
			mask[i] = true
			cnt++
		}
	}
	maskArr := BoolsToArray(mem, mask, nil)
	defer maskArr.Release()
	batch := func(x, y arrow.Array) arrow.RecordBatch {
		s := arrow.NewSchema([]arrow.Field{{Name: "x", Type: x.DataType()}, {Name: "y", Type: y.DataType()}}, nil)
		return array.NewRecordBatch(s, []arrow.Array{x, y}, int64(x.Len()))
	}
	for _, suffix := range []string{"", "-decimal", "-string"} {
		// As int64 columns, or the same values as decimal(18,2) or string
		// columns.
		conv := map[string]func(arrow.Array) arrow.Array{"-decimal": func(x arrow.Array) arrow.Array { return asDecimal18(mem, x) }, "-string": func(x arrow.Array) arrow.Array { return asStrings(mem, x) }}[suffix]
		cols := func(x, y arrow.Array) arrow.RecordBatch {
			if conv == nil {
				return batch(x, y)
			}
			cx, cy := conv(x), conv(y)
			defer cx.Release()
			defer cy.Release()
			return batch(cx, cy)
		}
		b.Run("own"+suffix, func(b *testing.B) {
			variants(b, func(b *testing.B, x, y arrow.Array) {
				rb := cols(x, y)
				defer rb.Release()
				cpu0 := cpuTime()
				defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
				for b.Loop() {
					r, err := FilterMask(context.Background(), mem, rb, maskArr, cnt)
					if err != nil {
						b.Fatal(err)
					}
					r.Release()
				}
			})
		})
		b.Run("compute"+suffix, func(b *testing.B) {
			ctx := compute.WithAllocator(context.Background(), mem)
			variants(b, func(b *testing.B, x, y arrow.Array) {
				rb := cols(x, y)
				defer rb.Release()
				for b.Loop() {
					r, err := compute.FilterRecordBatch(ctx, rb, maskArr, compute.DefaultFilterOptions())
					if err != nil {
						b.Fatal(err)
					}
					r.Release()
				}
			})
		})
	}
}

// asStrings returns x's values as decimal strings (NULLs kept).
func asStrings(mem memory.Allocator, x arrow.Array) arrow.Array {
	bld := array.NewStringBuilder(mem)
	defer bld.Release()
	for i := 0; i < x.Len(); i++ {
		if x.IsNull(i) {
			bld.AppendNull()
			continue
		}
		bld.Append(FormatValue(x, i))
	}
	return bld.NewArray()
}

func BenchmarkCastInt32ToInt64(b *testing.B) {
	mem := memory.NewGoAllocator()
	ctx := compute.WithAllocator(context.Background(), mem)
	for _, c := range []struct {
		name string
		cast func(x arrow.Array) (arrow.Array, error)
	}{
		{"own", func(x arrow.Array) (arrow.Array, error) { return Cast(mem, x, arrow.PrimitiveTypes.Int64) }},
		{"compute", func(x arrow.Array) (arrow.Array, error) {
			return compute.CastArray(ctx, x, compute.SafeCastOptions(arrow.PrimitiveTypes.Int64))
		}},
	} {
		b.Run(c.name, func(b *testing.B) { eachConverted(b, mem, narrow, c.cast) })
	}
}

func narrow(mem memory.Allocator, x arrow.Array) arrow.Array {
	b := array.NewInt32Builder(mem)
	defer b.Release()
	v := x.(*array.Int64)
	for i := 0; i < v.Len(); i++ {
		if v.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(int32(v.Value(i)))
		}
	}
	return b.NewArray()
}

// BenchmarkLessScalar compares a column with a constant: CompareScalar's
// loop, arrow-go compute with a scalar datum, and the constant expanded
// into an array first (what filters did before CompareScalar).
func BenchmarkLessScalar(b *testing.B) {
	mem := memory.NewGoAllocator()
	c := scalar.NewInt64Scalar(1 << 39)
	dc := scalar.NewDecimal128Scalar(decimal128.FromI64(1<<39), &arrow.Decimal128Type{Precision: 18, Scale: 2})
	expand := func(x arrow.Array, c scalar.Scalar) (arrow.Array, error) {
		rep, _ := Repeat(mem, c, x.Len())
		defer rep.Release()
		return Compare(mem, Lt, x, rep)
	}
	b.Run("own", func(b *testing.B) {
		eachVariant(b, func(x, _ arrow.Array) (arrow.Array, error) { return CompareScalar(mem, Lt, x, c) })
	})
	b.Run("compute", func(b *testing.B) {
		eachVariant(b, func(x, _ arrow.Array) (arrow.Array, error) { return callCompute(mem, "less", x, c) })
	})
	b.Run("expand", func(b *testing.B) {
		eachVariant(b, func(x, _ arrow.Array) (arrow.Array, error) { return expand(x, c) })
	})
	for _, v := range []struct {
		name string
		cmp  func(d arrow.Array) (arrow.Array, error)
	}{
		{"own-decimal", func(d arrow.Array) (arrow.Array, error) { return CompareScalar(mem, Lt, d, dc) }},
		{"expand-decimal", func(d arrow.Array) (arrow.Array, error) { return expand(d, dc) }},
	} {
		b.Run(v.name, func(b *testing.B) { eachConverted(b, mem, asDecimal18, v.cmp) })
	}
}

// asDecimal18 reinterprets int64 values as decimal(18,2) (same validity
// and offset), for decimal benchmarks over the same data.
func asDecimal18(mem memory.Allocator, x arrow.Array) arrow.Array {
	r, err := Cast(mem, x, &arrow.Decimal128Type{Precision: 18, Scale: 0})
	if err != nil {
		panic(err)
	}
	defer r.Release()
	d := r.Data()
	data := array.NewData(&arrow.Decimal128Type{Precision: 18, Scale: 2}, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
	defer data.Release()
	return array.MakeFromData(data)
}

// BenchmarkAndKleene is SQL AND over booleans made from the int64 inputs
// (same NULLs and offsets).
func BenchmarkAndKleene(b *testing.B) {
	mem := memory.NewGoAllocator()
	variants(b, func(b *testing.B, x, y arrow.Array) {
		bx, by := halfBools(mem, x), halfBools(mem, y)
		defer bx.Release()
		defer by.Release()
		for b.Loop() {
			And(mem, bx, by).Release()
		}
	})
}

// halfBools is x < 2^39 (true for about half the rows), NULL where x is,
// at x's offset.
func halfBools(mem memory.Allocator, x arrow.Array) arrow.Array {
	r, err := CompareScalar(mem, Lt, x, scalar.NewInt64Scalar(1<<39))
	if err != nil {
		panic(err)
	}
	defer r.Release()
	if x.Data().Offset() == 0 {
		r.Retain()
		return r
	}
	// CompareScalar's result starts at offset 0: pad it to x's offset.
	d := r.Data()
	bits := newBitmap(mem, d.Len()+x.Data().Offset())
	bitutil.CopyBitmap(d.Buffers()[1].Bytes(), 0, d.Len(), bits.Bytes(), x.Data().Offset())
	data := array.NewData(d.DataType(), d.Len(), []*memory.Buffer{x.Data().Buffers()[0], bits}, nil, x.NullN(), x.Data().Offset())
	defer data.Release()
	bits.Release()
	return array.MakeFromData(data)
}

// BenchmarkDecimalOp compares decimal arithmetic's 64-bit path (decimalOp)
// with the 128-bit and big.Int one it had before (decimalOpWide), per
// value, on decimal(7,2) prices: a sum (q04's profit) and division by an
// integer. Measured (-count 6, medians, 2-core machine under load): add
// 28 ns vs 500 ns, div 20 ns vs 1030 ns per value. Since division runs in
// 128-bit integers (divRound128), the wide path divides as fast, and a
// ratio at DECIMAL(35,20) takes 24 ns per value against 950-1380 ns
// through big.Int before (-count 3, load average 5-8).
func BenchmarkDecimalOp(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]decimal128.Num, 4096)
	for i := range xs {
		xs[i] = decimal128.FromI64(rng.Int64N(2_000_000) - 1_000_000)
	}
	two := decimal128.FromI64(2)
	sum := &arrow.Decimal128Type{Precision: 9, Scale: 2}
	quot := &arrow.Decimal128Type{Precision: 14, Scale: 6}
	ratio := &arrow.Decimal128Type{Precision: 35, Scale: 20}
	for _, path := range []struct {
		name string
		op   func(ArithOp, decimal128.Num, int32, decimal128.Num, int32, *arrow.Decimal128Type) (decimal128.Num, error)
	}{{"fast", decimalOp}, {"wide", decimalOpWide}} {
		b.Run("add/"+path.name, func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				for i := 1; i < len(xs); i++ {
					if _, err := path.op(Add, xs[i-1], 2, xs[i], 2, sum); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("div/"+path.name, func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				for _, x := range xs {
					if _, err := path.op(Div, x, 2, two, 0, quot); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		// A ratio of two sums at a wide scale (q49's DECIMAL(35,20)).
		b.Run("ratio/"+path.name, func(b *testing.B) {
			for b.Loop() {
				for i := 1; i < len(xs); i++ {
					if _, err := path.op(Div, xs[i-1], 4, xs[i], 4, ratio); err != nil && !errors.Is(err, ErrDivideByZero) {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportCPU reports the CPU time per op since cpu0, which the machine's
// load moves less than wall time.
func reportCPU(b *testing.B, cpu0 int64) {
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkDecimalArith is DecimalArith over 64K prices (DECIMAL(7,2),
// one in ten NULL): q04's sums and differences of prices and its division
// by 2, and a price times a quantity.
func BenchmarkDecimalArith(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(1, 2))
	price := &arrow.Decimal128Type{Precision: 7, Scale: 2}
	arr := func(dt *arrow.Decimal128Type, lo, n int64) arrow.Array {
		bld := array.NewDecimal128Builder(mem, dt)
		defer bld.Release()
		for range 1 << 16 {
			if rng.IntN(10) == 0 {
				bld.AppendNull()
			} else {
				bld.Append(decimal128.FromI64(lo + rng.Int64N(n)))
			}
		}
		return bld.NewArray()
	}
	x, y := arr(price, -1_000_000, 2_000_000), arr(price, -1_000_000, 2_000_000)
	qty := arr(&arrow.Decimal128Type{Precision: 10, Scale: 0}, 1, 100)
	two := arr(&arrow.Decimal128Type{Precision: 1, Scale: 0}, 2, 1)
	for _, c := range []struct {
		name string
		op   ArithOp
		a, b arrow.Array
		out  *arrow.Decimal128Type
	}{
		{"add", Add, x, y, &arrow.Decimal128Type{Precision: 8, Scale: 2}},
		{"sub", Sub, x, y, &arrow.Decimal128Type{Precision: 8, Scale: 2}},
		{"mul", Mul, x, qty, &arrow.Decimal128Type{Precision: 18, Scale: 2}},
		{"div", Div, x, two, &arrow.Decimal128Type{Precision: 14, Scale: 8}},
	} {
		b.Run(c.name, func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				r, err := DecimalArith(mem, c.op, c.a, c.b, c.out)
				if err != nil {
					b.Fatal(err)
				}
				r.Release()
			}
		})
	}
}

// BenchmarkCastIntToDecimal casts 64K quantities (INT32, one in ten NULL)
// to decimals, as a quantity times a price does before multiplying (q23's
// ss_quantity * ss_sales_price casts 1.6M quantities to DECIMAL(10,0)).
func BenchmarkCastIntToDecimal(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(1, 2))
	bld := array.NewInt32Builder(mem)
	for range 1 << 16 {
		if rng.IntN(10) == 0 {
			bld.AppendNull()
		} else {
			bld.Append(rng.Int32N(100) + 1)
		}
	}
	qty := bld.NewArray()
	bld.Release()
	defer qty.Release()
	for _, to := range []*arrow.Decimal128Type{{Precision: 10, Scale: 0}, {Precision: 12, Scale: 2}} {
		b.Run(fmt.Sprintf("int32-to-decimal(%d,%d)", to.Precision, to.Scale), func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				r, err := Cast(mem, qty, to)
				if err != nil {
					b.Fatal(err)
				}
				r.Release()
			}
		})
	}
}
