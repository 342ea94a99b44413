package exec

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/flightd/flightd/vectorized"
)

func init() {
	register(arithResolver("add", vectorized.Add), "add")
	register(arithResolver("subtract", vectorized.Sub), "subtract")
	register(arithResolver("multiply", vectorized.Mul), "multiply")
	register(arithResolver("divide", vectorized.Div), "divide")
	register(arithResolver("modulo", vectorized.Mod), "modulo", "mod")
	register(resolveNegate, "negate")
	register(resolveAbs, "abs")
	register(roundTo(false), "round")
	register(roundTo(true), "truncate")
	register(floorCeil(math.Floor, true), "floor")
	register(floorCeil(math.Ceil, false), "ceil", "ceiling")
	register(floatFunc(func(x float64) (float64, error) {
		if x < 0 {
			return 0, fmt.Errorf("%w: sqrt of negative number %v", vectorized.ErrInvalidValue, x)
		}
		return math.Sqrt(x), nil
	}), "sqrt")
	register(floatFunc(func(x float64) (float64, error) {
		if x <= 0 {
			return 0, fmt.Errorf("%w: ln of non-positive number %v", vectorized.ErrInvalidValue, x)
		}
		return math.Log(x), nil
	}), "ln")
	register(floatFunc(func(x float64) (float64, error) {
		r := math.Exp(x)
		if math.IsInf(r, 0) {
			return 0, fmt.Errorf("%w: exp(%v)", vectorized.ErrOverflow, x)
		}
		return r, nil
	}), "exp")
	register(resolvePower, "power", "pow")
}

var (
	f64Type      = arrow.PrimitiveTypes.Float64
	i64Type      = arrow.PrimitiveTypes.Int64
	i32Type      = arrow.PrimitiveTypes.Int32
	boolType     = arrow.FixedWidthTypes.Boolean
	strType      = arrow.BinaryTypes.String
	dateType     = arrow.FixedWidthTypes.Date32
	intervalType = arrow.FixedWidthTypes.MonthDayNanoInterval
)

func nullKernel(ret arrow.DataType) kernel {
	return func(_ context.Context, ec *Context, _ []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.NullArray(ec.Mem, ret, n), nil
	}
}

func arithResolver(name string, op vectorized.ArithOp) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if err := wantArgs(types, 2, 2); err != nil {
			return nil, err
		}
		a, b := signedOf(types[0]), signedOf(types[1])
		if a.ID() == arrow.NULL && b.ID() == arrow.NULL {
			return &impl{ret: i64Type, fn: nullKernel(i64Type)}, nil
		}
		if a.ID() == arrow.NULL {
			a = b
		}
		if b.ID() == arrow.NULL {
			b = a
		}
		if im := temporalArith(op, a, b); im != nil {
			// A NULL-typed argument takes the type it was matched as.
			im.args = append(im.args, nil, nil)[:2]
			for i, t := range []arrow.DataType{a, b} {
				if types[i].ID() == arrow.NULL && im.args[i] == nil {
					im.args[i] = t
				}
			}
			return im, nil
		}
		if !isNumeric(a) || !isNumeric(b) {
			return nil, fmt.Errorf("arithmetic needs numbers")
		}
		switch {
		case vectorized.IsFloat(a) || vectorized.IsFloat(b):
			t := f64Type
			if a.ID() == arrow.FLOAT32 && b.ID() == arrow.FLOAT32 {
				t = arrow.PrimitiveTypes.Float32
			}
			return &impl{ret: t, args: []arrow.DataType{t, t}, fn: func(_ context.Context, ec *Context, args []arrow.Array, _ int) (arrow.Array, error) {
				if t.ID() == arrow.FLOAT32 {
					return vectorized.ArithFloat[float32](ec.Mem, op, args[0], args[1])
				}
				return vectorized.ArithFloat[float64](ec.Mem, op, args[0], args[1])
			}}, nil
		case a.ID() == arrow.DECIMAL128 || b.ID() == arrow.DECIMAL128:
			da, _ := asDecimal(a)
			db, _ := asDecimal(b)
			ret := decimalResult(name, da, db)
			return &impl{ret: ret, args: []arrow.DataType{da, db}, fn: func(_ context.Context, ec *Context, args []arrow.Array, _ int) (arrow.Array, error) {
				return vectorized.DecimalArith(ec.Mem, op, args[0], args[1], ret)
			}}, nil
		}
		t, _ := CommonType(a, b)
		if name == "modulo" && !arrow.TypeEqual(t, b) {
			// Flink (Calcite) types x % y as y: the remainder fits.
			return &impl{ret: b, args: []arrow.DataType{t, t}, fn: func(_ context.Context, ec *Context, args []arrow.Array, _ int) (arrow.Array, error) {
				r, err := arithIntDispatch(ec, op, args[0], args[1])
				if err != nil {
					return nil, err
				}
				defer r.Release()
				return vectorized.Cast(ec.Mem, r, b)
			}}, nil
		}
		return &impl{ret: t, args: []arrow.DataType{t, t}, fn: func(_ context.Context, ec *Context, args []arrow.Array, _ int) (arrow.Array, error) {
			return arithIntDispatch(ec, op, args[0], args[1])
		}}, nil
	}
}

func arithIntDispatch(ec *Context, op vectorized.ArithOp, a, b arrow.Array) (arrow.Array, error) {
	switch a.DataType().ID() {
	case arrow.INT8:
		return vectorized.ArithInt[int8](ec.Mem, op, a, b)
	case arrow.INT16:
		return vectorized.ArithInt[int16](ec.Mem, op, a, b)
	case arrow.INT32:
		return vectorized.ArithInt[int32](ec.Mem, op, a, b)
	}
	return vectorized.ArithInt[int64](ec.Mem, op, a, b)
}

// temporalArith handles date/timestamp arithmetic: date +/- integer days,
// date - date (days), and date/timestamp +/- interval (same type back).
func temporalArith(op vectorized.ArithOp, a, b arrow.DataType) *impl {
	isDate := func(t arrow.DataType) bool { return t.ID() == arrow.DATE32 }
	isTS := func(t arrow.DataType) bool { return t.ID() == arrow.TIMESTAMP }
	isIv := func(t arrow.DataType) bool { return t.ID() == arrow.INTERVAL_MONTH_DAY_NANO }
	switch {
	case op == vectorized.Add && isDate(a) && vectorized.IsInteger(b),
		op == vectorized.Sub && isDate(a) && vectorized.IsInteger(b):
		return &impl{ret: dateType, args: []arrow.DataType{dateType, i64Type}, fn: dateDays(op, false)}
	case op == vectorized.Add && vectorized.IsInteger(a) && isDate(b):
		return &impl{ret: dateType, args: []arrow.DataType{i64Type, dateType}, fn: dateDays(op, true)}
	case op == vectorized.Sub && isDate(a) && isDate(b):
		return &impl{ret: i64Type, fn: func(_ context.Context, ec *Context, args []arrow.Array, n int) (arrow.Array, error) {
			x, y := vectorized.Values[int32](args[0]), vectorized.Values[int32](args[1])
			return vectorized.MapInt64s(ec.Mem, args, n, func(i int) (int64, error) { return int64(x[i]) - int64(y[i]), nil })
		}}
	case (op == vectorized.Add || op == vectorized.Sub) && (isDate(a) || isTS(a)) && isIv(b),
		op == vectorized.Add && isIv(a) && (isDate(b) || isTS(b)):
		ts, iv := 0, 1
		if isIv(a) {
			ts, iv = 1, 0
		}
		// A date stays a date (as in Trino); an interval with a time part
		// needs a timestamp.
		ret := []arrow.DataType{a, b}[ts]
		return &impl{ret: ret, fn: func(_ context.Context, ec *Context, args []arrow.Array, n int) (arrow.Array, error) {
			ivs := args[iv].(*array.MonthDayNanoInterval)
			return timestampMap(ec, args, n, args[ts], ret, func(i int, t time.Time) (time.Time, error) {
				v := ivs.Value(i)
				if isDate(ret) && v.Nanoseconds != 0 {
					return t, fmt.Errorf("%w: interval with a time part added to a date; cast the date to a timestamp", vectorized.ErrInvalidValue)
				}
				sign := 1
				if op == vectorized.Sub {
					sign = -1
				}
				// Months clamp to the month's end (Jan 31 + 1 month = Feb 29).
				t, err := vectorized.DateAdd("month", int64(sign)*int64(v.Months), t)
				if err != nil {
					return t, err
				}
				t = t.AddDate(0, 0, sign*int(v.Days))
				return t.Add(time.Duration(int64(sign) * v.Nanoseconds)), nil
			})
		}}
	}
	return nil
}

func dateDays(op vectorized.ArithOp, swapped bool) kernel {
	return func(_ context.Context, ec *Context, args []arrow.Array, n int) (arrow.Array, error) {
		d, k := args[0], args[1]
		if swapped {
			d, k = k, d
		}
		dv, kv := vectorized.Values[int32](d), vectorized.Values[int64](k)
		v := vectorized.AndValidity(ec.Mem, n, d, k)
		out := vectorized.NewFixedOut[int32](ec.Mem, n)
		for i := 0; i < n; i++ {
			if !v.IsValid(i) {
				out.Vals[i] = 0
				continue
			}
			x := kv[i]
			if op == vectorized.Sub {
				x = -x
			}
			r := int64(dv[i]) + x
			if x > math.MaxInt32 || x < math.MinInt32 || vectorized.CheckDate(r) != nil {
				out.Release()
				v.Release()
				return nil, fmt.Errorf("%w: date %s %s %d days is outside 0000-01-01 to 9999-12-31", vectorized.ErrDateRange, vectorized.FormatValue(d, i), op, kv[i])
			}
			out.Vals[i] = int32(r)
		}
		return out.Finish(dateType, v.Buf, v.Nulls), nil
	}
}

// timestampMap maps the date/timestamp column src to type ret through f; the
// result is NULL where any of args is NULL.
func timestampMap(ec *Context, args []arrow.Array, n int, src arrow.Array, ret arrow.DataType, f func(i int, t time.Time) (time.Time, error)) (arrow.Array, error) {
	b := array.NewBuilder(ec.Mem, ret)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if vectorized.AnyNull(args, i) {
			b.AppendNull()
			continue
		}
		t, err := f(i, vectorized.TimeAt(src, i))
		if err != nil {
			return nil, err
		}
		if err := appendTime(b, t, ret); err != nil {
			return nil, err
		}
	}
	return b.NewArray(), nil
}

// appendTime appends t to a date or timestamp builder of type ret.
func appendTime(b array.Builder, t time.Time, ret arrow.DataType) error {
	v, err := vectorized.TimeValue(t, ret)
	if err != nil {
		return err
	}
	switch bb := b.(type) {
	case *array.Date32Builder:
		bb.Append(arrow.Date32(v))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(v))
	}
	return nil
}

func resolveNegate(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	t := signedOf(types[0])
	switch {
	case t.ID() == arrow.NULL:
		return &impl{ret: i64Type, fn: nullKernel(i64Type)}, nil
	case vectorized.IsInteger(t):
		return &impl{ret: t, args: []arrow.DataType{t}, fn: func(_ context.Context, ec *Context, args []arrow.Array, _ int) (arrow.Array, error) {
			switch t.ID() {
			case arrow.INT8:
				return vectorized.NegateInt[int8](ec.Mem, args[0])
			case arrow.INT16:
				return vectorized.NegateInt[int16](ec.Mem, args[0])
			case arrow.INT32:
				return vectorized.NegateInt[int32](ec.Mem, args[0])
			}
			return vectorized.NegateInt[int64](ec.Mem, args[0])
		}}, nil
	case vectorized.IsFloat(t):
		return &impl{ret: t, fn: func(_ context.Context, ec *Context, args []arrow.Array, _ int) (arrow.Array, error) {
			return negateFloat(ec, args[0])
		}}, nil
	case t.ID() == arrow.DECIMAL128:
		return &impl{ret: t, fn: func(_ context.Context, ec *Context, args []arrow.Array, _ int) (arrow.Array, error) {
			return vectorized.NegateDecimal(ec.Mem, args[0]), nil
		}}, nil
	}
	return nil, fmt.Errorf("negate needs a number")
}

func negateFloat(ec *Context, a arrow.Array) (arrow.Array, error) {
	if a.DataType().ID() == arrow.FLOAT32 {
		f32, err := vectorized.Cast(ec.Mem, a, f64Type)
		if err != nil {
			return nil, err
		}
		defer f32.Release()
		neg, err := vectorized.MapFloat(ec.Mem, f32, func(x float64) (float64, error) { return -x, nil })
		if err != nil {
			return nil, err
		}
		defer neg.Release()
		return vectorized.Cast(ec.Mem, neg, a.DataType())
	}
	return vectorized.MapFloat(ec.Mem, a, func(x float64) (float64, error) { return -x, nil })
}

func resolveAbs(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	t := signedOf(types[0])
	switch {
	case vectorized.IsInteger(t):
		return &impl{ret: t, args: []arrow.DataType{t}, fn: func(_ context.Context, ec *Context, args []arrow.Array, n int) (arrow.Array, error) {
			wide, err := vectorized.Cast(ec.Mem, args[0], i64Type)
			if err != nil {
				return nil, err
			}
			defer wide.Release()
			r, err := vectorized.MapInt64(ec.Mem, wide, func(x int64) (int64, error) {
				if x == math.MinInt64 {
					return 0, fmt.Errorf("%w: abs(%d)", vectorized.ErrOverflow, x)
				}
				if x < 0 {
					return -x, nil
				}
				return x, nil
			})
			if err != nil {
				return nil, err
			}
			defer r.Release()
			return vectorized.Cast(ec.Mem, r, t)
		}}, nil
	case vectorized.IsFloat(t):
		return &impl{ret: f64Type, args: []arrow.DataType{f64Type}, fn: func(_ context.Context, ec *Context, args []arrow.Array, _ int) (arrow.Array, error) {
			return vectorized.MapFloat(ec.Mem, args[0], func(x float64) (float64, error) { return math.Abs(x), nil })
		}}, nil
	case t.ID() == arrow.DECIMAL128:
		return &impl{ret: t, fn: decimalMap(t.(*arrow.Decimal128Type), func(d decimal128.Num, _ int) (decimal128.Num, error) { return d.Abs(), nil })}, nil
	}
	return nil, fmt.Errorf("abs needs a number")
}

// decimalMap maps the first argument (a decimal of type dt) row by row.
func decimalMap(dt *arrow.Decimal128Type, f func(d decimal128.Num, i int) (decimal128.Num, error)) kernel {
	return func(_ context.Context, ec *Context, args []arrow.Array, n int) (arrow.Array, error) {
		src := vectorized.DecimalValues(args[0])
		b := array.NewDecimal128Builder(ec.Mem, dt)
		defer b.Release()
		b.Reserve(n)
		for i := 0; i < n; i++ {
			if vectorized.AnyNull(args, i) {
				b.AppendNull()
				continue
			}
			d, err := f(src[i], i)
			if err != nil {
				return nil, err
			}
			b.Append(d)
		}
		return b.NewArray(), nil
	}
}

// roundTo is ROUND(x [, digits]) (half away from zero) or, with
// truncate, Flink's TRUNCATE(x [, digits]) (toward zero): x to digits
// decimals, or to tens, hundreds... for negative digits.
func roundTo(truncate bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		return resolveRound(types, truncate)
	}
}

func resolveRound(types []arrow.DataType, truncate bool) (*impl, error) {
	if err := wantArgs(types, 1, 2); err != nil {
		return nil, err
	}
	roundF := math.Round
	if truncate {
		roundF = math.Trunc
	}
	t := signedOf(types[0])
	args := []arrow.DataType{t, i64Type}[:len(types)]
	digits := func(args []arrow.Array, i int) int64 {
		if len(args) < 2 {
			return 0
		}
		return args[1].(*array.Int64).Value(i)
	}
	switch {
	case vectorized.IsFloat(t):
		args[0] = f64Type
		return &impl{ret: f64Type, args: args, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			x := vectorized.Values[float64](a[0])
			b := array.NewFloat64Builder(ec.Mem)
			defer b.Release()
			for i := 0; i < n; i++ {
				if vectorized.AnyNull(a, i) {
					b.AppendNull()
					continue
				}
				p := math.Pow(10, float64(digits(a, i)))
				b.Append(roundF(x[i]*p) / p)
			}
			return b.NewArray(), nil
		}}, nil
	case t.ID() == arrow.DECIMAL128 || vectorized.IsInteger(t):
		dt, _ := asDecimal(t)
		args[0] = dt
		// One more digit: rounding can carry (round(9.76, 0) is 10.00).
		ret := &arrow.Decimal128Type{Precision: min(dt.Precision+1, MaxDecimalPrecision), Scale: dt.Scale}
		if truncate {
			ret = dt
		}
		fn := func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			return decimalMap(ret, func(d decimal128.Num, i int) (decimal128.Num, error) {
				k := int64(dt.Scale) - digits(a, i)
				if k <= 0 {
					return d, nil
				}
				if k > MaxDecimalPrecision {
					return decimal128.Num{}, nil
				}
				r := d.ReduceScaleBy(int32(k), !truncate).IncreaseScaleBy(int32(k))
				if !r.FitsInPrecision(ret.Precision) {
					return r, fmt.Errorf("%w: round(%s) exceeds %s", vectorized.ErrOverflow, d.ToString(dt.Scale), ret)
				}
				return r, nil
			})(ctx, ec, a, n)
		}
		if vectorized.IsInteger(t) {
			return &impl{ret: t, args: args, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
				r, err := fn(ctx, ec, a, n)
				if err != nil {
					return nil, err
				}
				defer r.Release()
				return vectorized.Cast(ec.Mem, r, t)
			}}, nil
		}
		return &impl{ret: ret, args: args, fn: fn}, nil
	}
	return nil, fmt.Errorf("round needs a number")
}

func floorCeil(f func(float64) float64, floor bool) resolver {
	return func(types []arrow.DataType, args []Expr) (*impl, error) {
		if len(types) == 2 {
			return floorCeilTime(types, args, floor)
		}
		if err := wantArgs(types, 1, 1); err != nil {
			return nil, err
		}
		t := signedOf(types[0])
		switch {
		case vectorized.IsInteger(t):
			return &impl{ret: t, fn: func(_ context.Context, _ *Context, a []arrow.Array, _ int) (arrow.Array, error) {
				a[0].Retain()
				return a[0], nil
			}}, nil
		case vectorized.IsFloat(t):
			return &impl{ret: f64Type, args: []arrow.DataType{f64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, _ int) (arrow.Array, error) {
				return vectorized.MapFloat(ec.Mem, a[0], func(x float64) (float64, error) { return f(x), nil })
			}}, nil
		case t.ID() == arrow.DECIMAL128:
			dt := t.(*arrow.Decimal128Type)
			ret := &arrow.Decimal128Type{Precision: min(dt.Precision-dt.Scale+1, MaxDecimalPrecision), Scale: 0}
			return &impl{ret: ret, fn: decimalMap(ret, func(d decimal128.Num, _ int) (decimal128.Num, error) {
				q, r := d.Div(decimal128.GetScaleMultiplier(int(dt.Scale)))
				if r.Sign() != 0 && (r.Sign() < 0) == floor {
					if floor {
						q = q.Sub(decimal128.FromI64(1))
					} else {
						q = q.Add(decimal128.FromI64(1))
					}
				}
				return q, nil
			})}, nil
		}
		return nil, fmt.Errorf("needs a number")
	}
}

func floatFunc(f func(float64) (float64, error)) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if err := wantArgs(types, 1, 1); err != nil {
			return nil, err
		}
		if !isNumeric(types[0]) && types[0].ID() != arrow.NULL {
			return nil, fmt.Errorf("needs a number")
		}
		return &impl{ret: f64Type, args: []arrow.DataType{f64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, _ int) (arrow.Array, error) {
			return vectorized.MapFloat(ec.Mem, a[0], f)
		}}, nil
	}
}

func resolvePower(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	for _, t := range types {
		if !isNumeric(t) && t.ID() != arrow.NULL {
			return nil, fmt.Errorf("needs numbers")
		}
	}
	return &impl{ret: f64Type, args: []arrow.DataType{f64Type, f64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		x, y := vectorized.Values[float64](a[0]), vectorized.Values[float64](a[1])
		b := array.NewFloat64Builder(ec.Mem)
		defer b.Release()
		for i := 0; i < n; i++ {
			if vectorized.AnyNull(a, i) {
				b.AppendNull()
				continue
			}
			r := math.Pow(x[i], y[i])
			if math.IsNaN(r) && !math.IsNaN(x[i]) && !math.IsNaN(y[i]) {
				return nil, fmt.Errorf("%w: power(%v, %v)", vectorized.ErrInvalidValue, x[i], y[i])
			}
			if math.IsInf(r, 0) && !math.IsInf(x[i], 0) {
				return nil, fmt.Errorf("%w: power(%v, %v)", vectorized.ErrOverflow, x[i], y[i])
			}
			b.Append(r)
		}
		return b.NewArray(), nil
	}}, nil
}
