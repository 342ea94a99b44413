package vectorized

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/quote"
)

// IsInteger reports whether dt is a signed or unsigned integer type.
func IsInteger(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// IsFloat reports whether dt is float32 or float64.
func IsFloat(dt arrow.DataType) bool {
	return dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64
}

// IsString reports whether dt is a UTF-8 string type.
func IsString(dt arrow.DataType) bool {
	return dt.ID() == arrow.STRING || dt.ID() == arrow.LARGE_STRING
}

// CanCast reports whether Cast supports from -> to.
func CanCast(from, to arrow.DataType) bool {
	if arrow.TypeEqual(from, to) || from.ID() == arrow.NULL {
		return true
	}
	if IsNested(to) {
		return canCastNested(from, to)
	}
	num := func(dt arrow.DataType) bool {
		return IsInteger(dt) || IsFloat(dt) || dt.ID() == arrow.DECIMAL128 || dt.ID() == arrow.BOOL
	}
	switch {
	case IsString(to), IsString(from) && (num(to) || isTemporal(to) || to.ID() == arrow.BINARY || to.ID() == arrow.INTERVAL_MONTH_DAY_NANO):
		return true
	case num(from) && num(to):
		return true
	case isTemporal(from) && isTemporal(to):
		return true
	case from.ID() == arrow.BINARY && IsString(to), IsString(from) && to.ID() == arrow.BINARY:
		return true
	}
	return false
}

func isTemporal(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.DATE32, arrow.TIMESTAMP, arrow.TIME64:
		return true
	}
	return false
}

// maxQuotedValue is how much of a value a failed cast quotes: a 15 MB
// string of control characters quoted whole took 1.25 GB.
const maxQuotedValue = 256

// Cast converts a to type to with SQL CAST semantics: out-of-range numbers and
// unparsable strings are errors naming the value; fractional numbers cast to
// integers truncate toward zero, as in Flink (DuckDB and Postgres round).
func Cast(mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(a.DataType(), to) {
		a.Retain()
		return a, nil
	}
	n := a.Len()
	if a.DataType().ID() == arrow.NULL || a.NullN() == n {
		return NullArray(mem, to, n), nil
	}
	if !CanCast(a.DataType(), to) {
		return nil, fmt.Errorf("cannot cast %s to %s", a.DataType(), to)
	}
	if IsNested(to) {
		return castNested(mem, a, to)
	}
	// Fast path: widening integer casts cannot fail.
	if out, ok := widenInt(mem, a, to); ok {
		return out, nil
	}
	if out, ok := widenDecimal(mem, a, to); ok {
		return out, nil
	}
	if out, ok := intToDecimal(mem, a, to); ok {
		return out, nil
	}
	b := array.NewBuilder(mem, to)
	defer b.Release()
	b.Reserve(n)
	put, err := castAppender(a, b)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		if err := put(i); errors.Is(err, ErrTooLarge) {
			return nil, err // the value is too large to quote
		} else if err != nil {
			return nil, fmt.Errorf("cannot cast %s value %s to %s: %w", a.DataType(), quote.Clipped(FormatValue(a, i), maxQuotedValue), to, err)
		}
	}
	return b.NewArray(), nil
}

func intWidth(id arrow.Type) int {
	switch id {
	case arrow.INT8:
		return 1
	case arrow.INT16:
		return 2
	case arrow.INT32:
		return 4
	case arrow.INT64:
		return 8
	}
	return 0
}

func widenInt(mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, bool) {
	fw, tw := intWidth(a.DataType().ID()), intWidth(to.ID())
	if fw == 0 || tw == 0 || tw < fw {
		return nil, false
	}
	n := a.Len()
	v := AndValidity(mem, n, a)
	switch to.ID() {
	case arrow.INT64:
		out := NewFixedOut[int64](mem, n)
		copyInts(a, out.Vals)
		return out.Finish(to, v.Buf, v.Nulls), true
	case arrow.INT32:
		out := NewFixedOut[int32](mem, n)
		copyInts(a, out.Vals)
		return out.Finish(to, v.Buf, v.Nulls), true
	case arrow.INT16:
		out := NewFixedOut[int16](mem, n)
		copyInts(a, out.Vals)
		return out.Finish(to, v.Buf, v.Nulls), true
	}
	out := NewFixedOut[int8](mem, n)
	copyInts(a, out.Vals)
	return out.Finish(to, v.Buf, v.Nulls), true
}

// widenDecimal casts between decimal128 types that keep every value (no
// fewer integer digits, no smaller scale): the same scale shares the
// buffers, a larger one multiplies each value by a power of ten. Filters
// cast decimal columns this way to compare them with wider literals.
func widenDecimal(mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, bool) {
	from, ok := a.DataType().(*arrow.Decimal128Type)
	dt, ok2 := to.(*arrow.Decimal128Type)
	if !ok || !ok2 || dt.Scale < from.Scale || dt.Precision-dt.Scale < from.Precision-from.Scale {
		return nil, false
	}
	d := a.Data()
	if dt.Scale == from.Scale {
		shared := array.NewData(to, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
		defer shared.Release()
		return array.MakeFromData(shared), true
	}
	in := a.(*array.Decimal128)
	n, k := in.Len(), dt.Scale-from.Scale
	vals, o := newDecimalOut(mem, n)
	for i, x := range in.Values() {
		if in.IsValid(i) {
			vals[i] = increaseScale(x, k) // fits: at most 38 digits
		}
	}
	return finishDecimal(o, to, n, AndValidity(mem, n, a)), true
}

// intToDecimal casts signed integers to a decimal128 type in one loop over
// the values, scaled in int64 with a bound check each: a quantity times a
// price casts the quantity first, and the builder path took 30 ns a value
// (q23: 1.6M of them). ok is false when a value does not fit in 64 bits
// scaled or in the type's precision: the value at a time path then casts
// it or names it in its error.
func intToDecimal(mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, bool) {
	dt, ok := to.(*arrow.Decimal128Type)
	if !ok || intWidth(a.DataType().ID()) == 0 || dt.Scale < 0 || int(dt.Scale) >= len(pow10i64) {
		return nil, false
	}
	lim, mul := int64(math.MaxInt64), pow10i64[dt.Scale]
	if int(dt.Precision) < len(pow10i64) {
		lim = pow10i64[dt.Precision] - 1
	}
	lim /= mul // |v| <= lim keeps v * 10^scale within the precision and int64
	n := a.Len()
	vals, o := newDecimalOut(mem, n)
	switch a.DataType().ID() {
	case arrow.INT8:
		ok = scaleInts(vals, Values[int8](a), a, lim, mul)
	case arrow.INT16:
		ok = scaleInts(vals, Values[int16](a), a, lim, mul)
	case arrow.INT32:
		ok = scaleInts(vals, Values[int32](a), a, lim, mul)
	default:
		ok = scaleInts(vals, Values[int64](a), a, lim, mul)
	}
	if !ok {
		o.buf.Release()
		return nil, false
	}
	return finishDecimal(o, to, n, AndValidity(mem, n, a)), true
}

// scaleInts sets dst[i] to src[i] * mul, false if a valid value's absolute
// value exceeds lim (a NULL's value is scaled unchecked and never read).
func scaleInts[T Int](dst []decimal128.Num, src []T, a arrow.Array, lim, mul int64) bool {
	nulls := MayHaveNulls(a.Data())
	for i, x := range src {
		v := int64(x)
		if (v > lim || v < -lim) && (!nulls || a.IsValid(i)) {
			return false
		}
		dst[i] = decimal128.FromI64(v * mul)
	}
	return true
}

func copyInts[T Int](a arrow.Array, dst []T) {
	switch a.DataType().ID() {
	case arrow.INT8:
		widen(dst, Values[int8](a))
	case arrow.INT16:
		widen(dst, Values[int16](a))
	case arrow.INT32:
		widen(dst, Values[int32](a))
	default:
		widen(dst, Values[int64](a))
	}
}

// numReader reads a[i] as the most exact of int64, float64 or decimal.
type numReader struct {
	kind  int // 0 int, 1 float, 2 decimal, 3 bool
	i64   func(i int) (int64, error)
	f64   func(i int) float64
	dec   func(i int) decimal128.Num
	scale int32
}

func newNumReader(a arrow.Array) (numReader, bool) {
	switch arr := a.(type) {
	case *array.Int8:
		return numReader{i64: func(i int) (int64, error) { return int64(arr.Value(i)), nil }}, true
	case *array.Int16:
		return numReader{i64: func(i int) (int64, error) { return int64(arr.Value(i)), nil }}, true
	case *array.Int32:
		return numReader{i64: func(i int) (int64, error) { return int64(arr.Value(i)), nil }}, true
	case *array.Int64:
		return numReader{i64: func(i int) (int64, error) { return arr.Value(i), nil }}, true
	case *array.Uint8:
		return numReader{i64: func(i int) (int64, error) { return int64(arr.Value(i)), nil }}, true
	case *array.Uint16:
		return numReader{i64: func(i int) (int64, error) { return int64(arr.Value(i)), nil }}, true
	case *array.Uint32:
		return numReader{i64: func(i int) (int64, error) { return int64(arr.Value(i)), nil }}, true
	case *array.Uint64:
		return numReader{i64: func(i int) (int64, error) {
			if arr.Value(i) > math.MaxInt64 {
				return 0, ErrOverflow
			}
			return int64(arr.Value(i)), nil
		}}, true
	case *array.Float32:
		return numReader{kind: 1, f64: func(i int) float64 { return float64(arr.Value(i)) }}, true
	case *array.Float64:
		return numReader{kind: 1, f64: arr.Value}, true
	case *array.Decimal128:
		return numReader{kind: 2, dec: arr.Value, scale: arr.DataType().(*arrow.Decimal128Type).Scale}, true
	case *array.Boolean:
		return numReader{kind: 3, i64: func(i int) (int64, error) {
			if arr.Value(i) {
				return 1, nil
			}
			return 0, nil
		}}, true
	}
	return numReader{}, false
}

func (r numReader) float(i int) (float64, error) {
	switch r.kind {
	case 1:
		return r.f64(i), nil
	case 2:
		return DecimalToFloat64(r.dec(i), r.scale), nil
	}
	v, err := r.i64(i)
	return float64(v), err
}

func (r numReader) int(i int) (int64, error) {
	switch r.kind {
	case 1:
		f := math.Trunc(r.f64(i))
		if math.IsNaN(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, ErrOverflow
		}
		return int64(f), nil
	case 2:
		d := r.dec(i)
		if r.scale > 0 {
			d = d.ReduceScaleBy(r.scale, false)
		} else if r.scale < 0 {
			d = d.IncreaseScaleBy(-r.scale)
		}
		bi := d.BigInt()
		if !bi.IsInt64() {
			return 0, ErrOverflow
		}
		return bi.Int64(), nil
	}
	return r.i64(i)
}

func (r numReader) decimal(i int, to *arrow.Decimal128Type) (decimal128.Num, error) {
	switch r.kind {
	case 1:
		return Float64ToDecimal(r.f64(i), to)
	case 2:
		return RescaleDecimal(r.dec(i), r.scale, to)
	}
	v, err := r.i64(i)
	if err != nil {
		return decimal128.Num{}, err
	}
	return RescaleDecimal(decimal128.FromI64(v), 0, to)
}

func intBounds(id arrow.Type) (int64, int64) {
	switch id {
	case arrow.INT8:
		return math.MinInt8, math.MaxInt8
	case arrow.INT16:
		return math.MinInt16, math.MaxInt16
	case arrow.INT32:
		return math.MinInt32, math.MaxInt32
	case arrow.UINT8:
		return 0, math.MaxUint8
	case arrow.UINT16:
		return 0, math.MaxUint16
	case arrow.UINT32:
		return 0, math.MaxUint32
	case arrow.UINT64:
		return 0, math.MaxInt64
	}
	return math.MinInt64, math.MaxInt64
}

// castAppender returns a function appending the cast of non-NULL a[i] to b.
func castAppender(a arrow.Array, b array.Builder) (func(i int) error, error) {
	to := b.Type()
	from := a.DataType()
	if bb, ok := b.(*array.BinaryBuilder); ok && IsString(from) {
		// Flink: a string's UTF-8 bytes (AppendValueFromString would
		// decode base64).
		return func(i int) error { bb.AppendString(FormatValue(a, i)); return nil }, nil
	}
	if IsString(to) && IsNested(from) {
		// A nested value's text can be far larger than the value: a ROW
		// naming one long string many times holds it once. Its strings
		// alone are checked before it is rendered, the text after.
		sizes := ComputedStrings{Rows: a.Len()}
		return func(i int) error {
			if err := CheckComputedString("CAST to STRING", nestedStringBytes(a, i)); err != nil {
				return err
			}
			s := CastString(a, i)
			if err := sizes.Add(len(s)); err != nil {
				return err
			}
			return b.AppendValueFromString(s)
		}, nil
	}
	if IsString(to) {
		return func(i int) error {
			return b.AppendValueFromString(CastString(a, i))
		}, nil
	}
	if IsString(from) || from.ID() == arrow.BINARY {
		str := func(i int) string { return FormatValue(a, i) }
		return parseAppender(str, b)
	}
	if r, ok := newNumReader(a); ok {
		return numAppender(r, b)
	}
	return temporalAppender(a, b)
}

func numAppender(r numReader, b array.Builder) (func(i int) error, error) {
	to := b.Type()
	switch bb := b.(type) {
	case *array.Float64Builder:
		return func(i int) error {
			f, err := r.float(i)
			bb.Append(f)
			return err
		}, nil
	case *array.Float32Builder:
		return func(i int) error {
			f, err := r.float(i)
			if err == nil && math.Abs(f) > math.MaxFloat32 && !math.IsInf(f, 0) {
				return ErrOverflow
			}
			bb.Append(float32(f))
			return err
		}, nil
	case *array.Decimal128Builder:
		dt := to.(*arrow.Decimal128Type)
		return func(i int) error {
			d, err := r.decimal(i, dt)
			bb.Append(d)
			return err
		}, nil
	case *array.BooleanBuilder:
		return func(i int) error {
			f, err := r.float(i)
			bb.Append(f != 0)
			return err
		}, nil
	}
	if IsInteger(to) {
		lo, hi := intBounds(to.ID())
		put := IntPutter(b)
		return func(i int) error {
			v, err := r.int(i)
			if err != nil {
				return err
			}
			if v < lo || v > hi {
				return ErrOverflow
			}
			put(v)
			return nil
		}, nil
	}
	return nil, fmt.Errorf("cannot cast numbers to %s", to)
}

// IntPutter returns a function appending an int64 to an integer builder of
// any width, or nil for other builders. The value must fit the builder's
// type: it is converted as Go converts, without a check.
func IntPutter(b array.Builder) func(int64) {
	switch bb := b.(type) {
	case *array.Int8Builder:
		return func(v int64) { bb.Append(int8(v)) }
	case *array.Int16Builder:
		return func(v int64) { bb.Append(int16(v)) }
	case *array.Int32Builder:
		return func(v int64) { bb.Append(int32(v)) }
	case *array.Int64Builder:
		return bb.Append
	case *array.Uint8Builder:
		return func(v int64) { bb.Append(uint8(v)) }
	case *array.Uint16Builder:
		return func(v int64) { bb.Append(uint16(v)) }
	case *array.Uint32Builder:
		return func(v int64) { bb.Append(uint32(v)) }
	case *array.Uint64Builder:
		return func(v int64) { bb.Append(uint64(v)) }
	}
	return nil
}

// pow10Float are the powers of ten a float64 holds exactly.
var pow10Float = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// DecimalToFloat64 returns the float64 nearest to the decimal v/10^scale
// (-855.42, not -855.4200000000001 as multiplying by 10^-scale gives).
func DecimalToFloat64(v decimal128.Num, scale int32) float64 {
	if u, ok := decimalInt64(v); ok && u > -1<<53 && u < 1<<53 && scale >= 0 && int(scale) < len(pow10Float) {
		// Both operands are exact, so the one division rounds once.
		return float64(u) / pow10Float[scale]
	}
	f, _ := strconv.ParseFloat(v.ToString(scale), 64)
	return f
}

// Float64ToDecimal converts f to type to through its shortest decimal
// representation, rounding half away from zero as decimal casts do
// (86.25 -> 86.3 in DECIMAL(p,1)).
func Float64ToDecimal(f float64, to *arrow.Decimal128Type) (decimal128.Num, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return decimal128.Num{}, ErrInvalidValue
	}
	return ParseDecimal(strconv.FormatFloat(f, 'g', -1, 64), to)
}

// maxDecimalText bounds the text ParseDecimal reads: math/big reads n
// digits in n^2 time (CAST of a 10 MB string of digits ran for minutes,
// which no cancel stopped), and a DECIMAL holds 38 digits.
const maxDecimalText = 1000

// ParseDecimal parses s exactly (no binary floating point) into type to.
func ParseDecimal(s string, to *arrow.Decimal128Type) (decimal128.Num, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxDecimalText {
		return decimal128.Num{}, fmt.Errorf("%w: %d characters, over %d for a DECIMAL", ErrInvalidValue, len(s), maxDecimalText)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return decimal128.Num{}, ErrInvalidValue
	}
	num := new(big.Int).Mul(r.Num(), pow10Big(to.Scale))
	return bigOut(roundDiv(num, r.Denom()), to.Scale, to)
}

var timestampLayouts = []string{
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999 Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999 MST",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02",
}

// ParseTimestamp parses a SQL timestamp literal; text without a zone is read
// in loc.
func ParseTimestamp(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range timestampLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, ErrInvalidValue
}

// ParseDate parses a SQL date literal (YYYY-MM-DD) into days since epoch.
func ParseDate(s string) (int32, error) {
	t, err := time.Parse("2006-01-02", strings.TrimSpace(s))
	if err != nil {
		return 0, ErrInvalidValue
	}
	return int32(t.Unix() / 86400), nil
}

func parseAppender(str func(int) string, b array.Builder) (func(i int) error, error) {
	to := b.Type()
	switch bb := b.(type) {
	case *array.BinaryBuilder:
		return func(i int) error { bb.AppendString(str(i)); return nil }, nil
	case *array.BooleanBuilder:
		return func(i int) error {
			switch strings.ToLower(strings.TrimSpace(str(i))) {
			case "true", "t", "yes", "y", "on", "1":
				bb.Append(true)
			case "false", "f", "no", "n", "off", "0":
				bb.Append(false)
			default:
				return ErrInvalidValue
			}
			return nil
		}, nil
	case *array.Float64Builder, *array.Float32Builder:
		bits := 64
		if to.ID() == arrow.FLOAT32 {
			bits = 32
		}
		return func(i int) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(str(i)), bits)
			if err != nil {
				return ErrInvalidValue
			}
			if bits == 32 {
				b.(*array.Float32Builder).Append(float32(f))
			} else {
				b.(*array.Float64Builder).Append(f)
			}
			return nil
		}, nil
	case *array.Decimal128Builder:
		dt := to.(*arrow.Decimal128Type)
		return func(i int) error {
			d, err := ParseDecimal(str(i), dt)
			bb.Append(d)
			return err
		}, nil
	case *array.Date32Builder:
		return func(i int) error {
			d, err := ParseDate(str(i))
			if err != nil {
				// Accept a timestamp string and keep its date.
				t, terr := ParseTimestamp(str(i), time.UTC)
				if terr != nil {
					return err
				}
				d = int32(floorDiv(t.Unix(), 86400))
			}
			bb.Append(arrow.Date32(d))
			return CheckDate(int64(d)) // a zone can move 9999-12-31 past it
		}, nil
	case *array.TimestampBuilder:
		ts := to.(*arrow.TimestampType)
		return func(i int) error {
			t, err := ParseTimestamp(str(i), time.UTC)
			if err != nil {
				return err
			}
			// TimeToTimestamp wraps past the unit's range (nanoseconds:
			// 1678 to 2262).
			v, err := TimeValue(t, ts)
			bb.Append(arrow.Timestamp(v))
			return err
		}, nil
	case *array.MonthDayNanoIntervalBuilder:
		return func(i int) error {
			iv, err := ParseInterval(str(i))
			bb.Append(iv)
			return err
		}, nil
	case *array.Time64Builder:
		unit := to.(*arrow.Time64Type).Unit
		return func(i int) error {
			t, err := time.Parse("15:04:05.999999999", strings.TrimSpace(str(i)))
			if err != nil {
				return ErrInvalidValue
			}
			ns := int64(t.Hour())*3600e9 + int64(t.Minute())*60e9 + int64(t.Second())*1e9 + int64(t.Nanosecond())
			bb.Append(arrow.Time64(ns / (1e9 / UnitsPerSecond(unit))))
			return nil
		}, nil
	}
	if IsInteger(to) {
		lo, hi := intBounds(to.ID())
		put := IntPutter(b)
		return func(i int) error {
			v, err := strconv.ParseInt(strings.TrimSpace(str(i)), 10, 64)
			if err != nil {
				if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
					return ErrOverflow
				}
				return ErrInvalidValue
			}
			if v < lo || v > hi {
				return ErrOverflow
			}
			put(v)
			return nil
		}, nil
	}
	return nil, fmt.Errorf("cannot cast strings to %s", to)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// unitRange says that a date or timestamp overflowed the ticks of the
// timestamp type to (nanoseconds hold 1678 to 2261 only).
func unitRange(err error, to arrow.DataType) error {
	if err != nil {
		return fmt.Errorf("%w: outside the range of %s", ErrDateRange, to)
	}
	return nil
}

func temporalAppender(a arrow.Array, b array.Builder) (func(i int) error, error) {
	to := b.Type()
	switch src := a.(type) {
	case *array.Date32:
		switch bb := b.(type) {
		case *array.TimestampBuilder:
			unit := to.(*arrow.TimestampType).Unit
			return func(i int) error {
				v, err := checkedInt(Mul, int64(src.Value(i)), 86400*UnitsPerSecond(unit))
				bb.Append(arrow.Timestamp(v))
				return unitRange(err, to)
			}, nil
		}
	case *array.Timestamp:
		unit := src.DataType().(*arrow.TimestampType).Unit
		switch bb := b.(type) {
		case *array.Date32Builder:
			per := 86400 * UnitsPerSecond(unit)
			return func(i int) error {
				bb.Append(arrow.Date32(floorDiv(int64(src.Value(i)), per)))
				return nil
			}, nil
		case *array.TimestampBuilder:
			tu := to.(*arrow.TimestampType).Unit
			f, t := UnitsPerSecond(unit), UnitsPerSecond(tu)
			return func(i int) error {
				v := int64(src.Value(i))
				if t >= f {
					r, err := checkedInt(Mul, v, t/f)
					bb.Append(arrow.Timestamp(r))
					return unitRange(err, to)
				}
				bb.Append(arrow.Timestamp(floorDiv(v, f/t)))
				return nil
			}, nil
		case *array.Time64Builder:
			tu := to.(*arrow.Time64Type).Unit
			per := 86400 * UnitsPerSecond(unit)
			return func(i int) error {
				v := int64(src.Value(i)) - floorDiv(int64(src.Value(i)), per)*per
				bb.Append(arrow.Time64(v * UnitsPerSecond(tu) / UnitsPerSecond(unit)))
				return nil
			}, nil
		}
	case *array.Time64:
		if bb, ok := b.(*array.Time64Builder); ok {
			f, t := UnitsPerSecond(src.DataType().(*arrow.Time64Type).Unit), UnitsPerSecond(to.(*arrow.Time64Type).Unit)
			return func(i int) error {
				bb.Append(arrow.Time64(int64(src.Value(i)) * t / f))
				return nil
			}, nil
		}
	}
	return nil, fmt.Errorf("cannot cast %s to %s", a.DataType(), to)
}
