package vectorized

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ArithOp is a binary arithmetic operator.
type ArithOp int

// Arithmetic operators.
const (
	Add ArithOp = iota
	Sub
	Mul
	Div
	Mod
)

// String names op in error messages: MOD, not %, which the Go code of
// ADBC's Python Flight SQL driver reads as a format verb ("%!(MISSING)").
func (op ArithOp) String() string {
	return [...]string{"+", "-", "*", "/", "MOD"}[op]
}

// Int is the set of signed integer types.
type Int interface {
	~int8 | ~int16 | ~int32 | ~int64
}

// Float is the set of floating point types.
type Float interface{ ~float32 | ~float64 }

func intRange[T Int]() (int64, int64) {
	var z T
	switch any(z).(type) {
	case int8:
		return math.MinInt8, math.MaxInt8
	case int16:
		return math.MinInt16, math.MaxInt16
	case int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// checkedInt computes x op y in 64 bits; overflow of int64 is ErrOverflow,
// division by zero ErrDivideByZero.
func checkedInt(op ArithOp, x, y int64) (int64, error) {
	switch op {
	case Add:
		r := x + y
		if (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0) {
			return 0, ErrOverflow
		}
		return r, nil
	case Sub:
		r := x - y
		if (x >= 0 && y < 0 && r < 0) || (x < 0 && y > 0 && r >= 0) {
			return 0, ErrOverflow
		}
		return r, nil
	case Mul:
		if x == 0 || y == 0 {
			return 0, nil
		}
		r := x * y
		if r/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
			return 0, ErrOverflow
		}
		return r, nil
	case Div:
		if y == 0 {
			return 0, ErrDivideByZero
		}
		if x == math.MinInt64 && y == -1 {
			return 0, ErrOverflow
		}
		return x / y, nil
	default:
		if y == 0 {
			return 0, ErrDivideByZero
		}
		if y == -1 {
			return 0, nil
		}
		return x % y, nil
	}
}

// ArithInt applies op to two integer arrays of the same type T; rows where
// either side is NULL are NULL. Overflow and division by zero are errors.
func ArithInt[T Int](mem memory.Allocator, op ArithOp, a, b arrow.Array) (arrow.Array, error) {
	n := a.Len()
	v := AndValidity(mem, n, a, b)
	av, bv := Values[T](a), Values[T](b)
	out := NewFixedOut[T](mem, n)
	lo, hi := intRange[T]()
	for i := 0; i < n; i++ {
		if !v.IsValid(i) {
			out.Vals[i] = 0
			continue
		}
		r, err := checkedInt(op, int64(av[i]), int64(bv[i]))
		if err == nil && (r < lo || r > hi) {
			err = ErrOverflow
		}
		if err != nil {
			out.Release()
			v.Release()
			return nil, fmt.Errorf("%w: %d %s %d (%s)", err, av[i], op, bv[i], a.DataType())
		}
		out.Vals[i] = T(r)
	}
	return out.Finish(a.DataType(), v.Buf, v.Nulls), nil
}

// ArithFloat applies op to two float arrays of type T. Division and modulo
// by zero are errors; infinite results of finite inputs are overflow.
func ArithFloat[T Float](mem memory.Allocator, op ArithOp, a, b arrow.Array) (arrow.Array, error) {
	n := a.Len()
	v := AndValidity(mem, n, a, b)
	av, bv := Values[T](a), Values[T](b)
	out := NewFixedOut[T](mem, n)
	for i := 0; i < n; i++ {
		x, y := av[i], bv[i]
		var r T
		switch op {
		case Add:
			r = x + y
		case Sub:
			r = x - y
		case Mul:
			r = x * y
		case Div, Mod:
			if y == 0 && v.IsValid(i) {
				out.Release()
				v.Release()
				return nil, fmt.Errorf("%w: %v %s %v", ErrDivideByZero, x, op, y)
			}
			if op == Div {
				r = x / y
			} else {
				r = T(math.Mod(float64(x), float64(y)))
			}
		}
		if math.IsInf(float64(r), 0) && !math.IsInf(float64(x), 0) && !math.IsInf(float64(y), 0) && v.IsValid(i) {
			out.Release()
			v.Release()
			return nil, fmt.Errorf("%w: %v %s %v (%s)", ErrOverflow, x, op, y, a.DataType())
		}
		out.Vals[i] = r
	}
	return out.Finish(a.DataType(), v.Buf, v.Nulls), nil
}

// NegateInt negates an integer array; negating the minimum value overflows.
func NegateInt[T Int](mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
	n := a.Len()
	v := AndValidity(mem, n, a)
	av := Values[T](a)
	out := NewFixedOut[T](mem, n)
	lo, _ := intRange[T]()
	for i := 0; i < n; i++ {
		if int64(av[i]) == lo && v.IsValid(i) {
			out.Release()
			v.Release()
			return nil, fmt.Errorf("%w: -(%d) (%s)", ErrOverflow, av[i], a.DataType())
		}
		out.Vals[i] = -av[i]
	}
	return out.Finish(a.DataType(), v.Buf, v.Nulls), nil
}

// MapFloat applies f to every value of a float64 array (NULLs stay NULL).
// f returns an error for values outside its domain.
func MapFloat(mem memory.Allocator, a arrow.Array, f func(float64) (float64, error)) (arrow.Array, error) {
	return mapValues(mem, a, f)
}

// MapInt64 applies f to every value of an int64 array (NULLs stay NULL).
func MapInt64(mem memory.Allocator, a arrow.Array, f func(int64) (int64, error)) (arrow.Array, error) {
	return mapValues(mem, a, f)
}

func mapValues[T float64 | int64](mem memory.Allocator, a arrow.Array, f func(T) (T, error)) (arrow.Array, error) {
	n := a.Len()
	v := AndValidity(mem, n, a)
	av := Values[T](a)
	out := NewFixedOut[T](mem, n)
	for i := 0; i < n; i++ {
		if !v.IsValid(i) {
			out.Vals[i] = 0
			continue
		}
		r, err := f(av[i])
		if err != nil {
			out.Release()
			v.Release()
			return nil, err
		}
		out.Vals[i] = r
	}
	return out.Finish(a.DataType(), v.Buf, v.Nulls), nil
}

// DecimalValues returns the values of a decimal128 array (offset honoured).
func DecimalValues(a arrow.Array) []decimal128.Num {
	d := a.Data()
	buf := d.Buffers()[1]
	if buf == nil || buf.Len() == 0 {
		return nil
	}
	all := arrow.GetData[decimal128.Num](buf.Bytes())
	return all[d.Offset() : d.Offset()+d.Len()]
}

func newDecimalOut(mem memory.Allocator, n int) ([]decimal128.Num, *FixedOut[int64]) {
	o := NewFixedOut[int64](mem, 2*n)
	if n == 0 {
		return nil, o
	}
	return arrow.GetData[decimal128.Num](o.buf.Bytes())[:n], o
}

func finishDecimal(o *FixedOut[int64], dt arrow.DataType, n int, v Validity) arrow.Array {
	o.Vals = o.Vals[:n] // length in decimal slots for NewData
	return o.Finish(dt, v.Buf, v.Nulls)
}

func decBitLen(n decimal128.Num) int {
	a := n.Abs()
	if a.HighBits() != 0 {
		return 64 + bits.Len64(uint64(a.HighBits()))
	}
	return bits.Len64(a.LowBits())
}

var bigTen = big.NewInt(10)

// pow10BigTable[k] is 10^k for the scales and precisions of decimal128
// and their differences: computing it per value was a third of the CPU of
// decimal divisions (TPC-DS ratios such as q49's).
var pow10BigTable = func() (p [2*38 + 2]*big.Int) {
	p[0] = big.NewInt(1)
	for k := 1; k < len(p); k++ {
		p[k] = new(big.Int).Mul(p[k-1], bigTen)
	}
	return p
}()

// pow10Big is 10^k (k >= 0). The result may be shared: callers must not
// modify it.
func pow10Big(k int32) *big.Int {
	if k >= 0 && int(k) < len(pow10BigTable) {
		return pow10BigTable[k]
	}
	return new(big.Int).Exp(bigTen, big.NewInt(int64(k)), nil)
}

// divRound128 is x * 10^k / y rounded half away from zero in 128-bit
// integer arithmetic, for k >= 0 when |y| fits in 64 bits and |x| * 10^k in
// 127; ok is false otherwise (big.Int then decides).
func divRound128(x decimal128.Num, k int32, y decimal128.Num) (q decimal128.Num, ok bool) {
	if k < 0 || y.Sign() == 0 || x.HighBits() == math.MinInt64 || y.HighBits() == math.MinInt64 {
		return q, false
	}
	ax, ay := x.Abs(), y.Abs()
	if ay.HighBits() != 0 {
		return q, false
	}
	d := ay.LowBits()
	hi, lo := uint64(ax.HighBits()), ax.LowBits()
	for k > 0 {
		// (hi, lo) *= 10^step, refused past 127 bits.
		step := min(k, int32(len(pow10i64)-1))
		k -= step
		p := uint64(pow10i64[step])
		carry, l := bits.Mul64(lo, p)
		over, h := bits.Mul64(hi, p)
		h, c := bits.Add64(h, carry, 0)
		if over != 0 || c != 0 || h>>63 != 0 {
			return q, false
		}
		hi, lo = h, l
	}
	qHi, r := hi/d, hi%d
	qLo, rem := bits.Div64(r, lo, d)
	if rem >= d-rem { // 2*rem >= d without overflow
		var c uint64
		qLo, c = bits.Add64(qLo, 1, 0)
		qHi += c
	}
	q = decimal128.New(int64(qHi), qLo)
	if (x.Sign() < 0) != (y.Sign() < 0) {
		q = q.Negate()
	}
	return q, true
}

// roundDiv returns num/den rounded half away from zero.
func roundDiv(num, den *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	r2 := new(big.Int).Abs(r)
	r2.Lsh(r2, 1)
	if r2.Cmp(new(big.Int).Abs(den)) >= 0 {
		if (num.Sign() < 0) != (den.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// DecimalArith computes a op b for decimal128 arrays with scales taken from
// their types, producing out (whose precision/scale the caller derived).
func DecimalArith(mem memory.Allocator, op ArithOp, a, b arrow.Array, out *arrow.Decimal128Type) (arrow.Array, error) {
	n := a.Len()
	at, bt := a.DataType().(*arrow.Decimal128Type), b.DataType().(*arrow.Decimal128Type)
	v := AndValidity(mem, n, a, b)
	av, bv := DecimalValues(a), DecimalValues(b)
	res, o := newDecimalOut(mem, n)
	row := func(i int) error {
		if !v.IsValid(i) {
			res[i] = decimal128.Num{}
			return nil
		}
		r, err := decimalOp(op, av[i], at.Scale, bv[i], bt.Scale, out)
		if err != nil {
			return fmt.Errorf("%w: %s %s %s (%s)", err, av[i].ToString(at.Scale), op, bv[i].ToString(bt.Scale), out)
		}
		res[i] = r
		return nil
	}
	done, err := decimalArith64(op, av[:n], bv[:n], at.Scale, bt.Scale, out, res, row)
	for i := 0; err == nil && !done && i < n; i++ {
		err = row(i)
	}
	if err != nil {
		o.Release()
		v.Release()
		return nil, err
	}
	if done && v.Nulls > 0 && v.Buf != nil {
		// The loop computed NULL rows too; they read as zero, as row's.
		bits := v.Buf.Bytes()
		for i := range n {
			if !bitutil.BitIsSet(bits, i) {
				res[i] = decimal128.Num{}
			}
		}
	}
	return finishDecimal(o, out, n, v), nil
}

// mulBound64 bounds both factors of a product that fits in int64.
const mulBound64 = 3037000499 // floor(sqrt(MaxInt64))

// decimalArith64 computes a op b over whole buffers in int64 arithmetic
// where the result's scale is out's without rescaling (sums and
// differences at the larger scale, products at the sum of the scales,
// quotients at out's): a row checks only that its operands and result are
// within bounds, any other row (a wide value, an overflow, a zero divisor)
// goes to row, decimalOp's value at a time path. q04's price arithmetic
// spent most of its time in that path's checks and calls. done is false
// for the operations and scales it does not cover.
func decimalArith64(op ArithOp, av, bv []decimal128.Num, as, bs int32, out *arrow.Decimal128Type, res []decimal128.Num, row func(int) error) (done bool, err error) {
	lim := int64(math.MaxInt64)
	if out.Precision < int32(len(pow10i64)) {
		lim = pow10i64[out.Precision] - 1
	}
	var ma, mb, lx, ly int64
	switch op {
	case Add, Sub:
		s := max(as, bs)
		if out.Scale != s || s-as >= int32(len(pow10i64)) || s-bs >= int32(len(pow10i64)) {
			return false, nil
		}
		// Each scaled operand within half of int64: their sum fits.
		ma, mb = pow10i64[s-as], pow10i64[s-bs]
		lx, ly = maxScaled64[s-as]/2, maxScaled64[s-bs]/2
		if op == Sub {
			mb = -mb
		}
	case Mul:
		if out.Scale != as+bs {
			return false, nil
		}
		lx, ly = mulBound64, mulBound64
	case Div:
		k := out.Scale - as + bs
		if k < 0 || k >= int32(len(pow10i64)) {
			return false, nil
		}
		ma, lx, ly = pow10i64[k], maxScaled64[k], math.MaxInt64
	default:
		return false, nil
	}
	for i := range res {
		x, y := int64(av[i].LowBits()), int64(bv[i].LowBits())
		if av[i].HighBits() != x>>63 || bv[i].HighBits() != y>>63 || x > lx || x < -lx || y > ly || y < -ly {
			if err := row(i); err != nil {
				return true, err
			}
			continue
		}
		var r int64
		switch op {
		case Add, Sub:
			r = x*ma + y*mb
		case Mul:
			r = x * y
		default:
			if y == 0 || y == math.MinInt64 {
				if err := row(i); err != nil {
					return true, err
				}
				continue
			}
			r = roundDiv64(x*ma, y)
		}
		if r > lim || r < -lim {
			if err := row(i); err != nil {
				return true, err
			}
			continue
		}
		res[i] = decimal128.FromI64(r)
	}
	return true, nil
}

func decimalOp(op ArithOp, x decimal128.Num, xs int32, y decimal128.Num, ys int32, out *arrow.Decimal128Type) (decimal128.Num, error) {
	if xv, ok := decimalInt64(x); ok {
		if yv, ok := decimalInt64(y); ok {
			if r, s, ok := smallDecimalOp(op, xv, xs, yv, ys, out.Scale); ok {
				if r, ok := int64Out(r, s, out); ok {
					return r, nil
				}
			}
		}
	}
	return decimalOpWide(op, x, xs, y, ys, out)
}

// decimalInt64 is x as an int64, when it fits.
func decimalInt64(x decimal128.Num) (int64, bool) {
	v := int64(x.LowBits())
	return v, x.HighBits() == v>>63
}

// smallDecimalOp computes x op y (decimals with scales xs, ys held in
// int64) at scale s in 64-bit arithmetic: the TPC-DS case, prices with two
// decimals, where decimal128's big.Int arithmetic allocated per value. ok
// is false when a step would overflow (or for a zero divisor, Mod, a
// division scale out of range): decimalOpWide then decides.
func smallDecimalOp(op ArithOp, x int64, xs int32, y int64, ys int32, outScale int32) (r int64, s int32, ok bool) {
	var err error
	switch op {
	case Add, Sub:
		s = max(xs, ys)
		if x, ok = scale64(x, s-xs); !ok {
			return 0, 0, false
		}
		if y, ok = scale64(y, s-ys); !ok {
			return 0, 0, false
		}
		r, err = checkedInt(op, x, y)
	case Mul:
		s = xs + ys
		r, err = checkedInt(Mul, x, y)
	case Div:
		// x/y at the output scale: x * 10^(outScale - xs + ys) / y, rounded.
		if y == 0 || y == math.MinInt64 {
			return 0, 0, false
		}
		if x, ok = scale64(x, outScale-xs+ys); !ok {
			return 0, 0, false
		}
		return roundDiv64(x, y), outScale, true
	default:
		return 0, 0, false
	}
	return r, s, err == nil
}

// scale64 is v * 10^k for 0 <= k <= 18 when it fits in int64. It bounds
// v by a table, not by checkedInt's division: every decimal addition of
// two prices scales both by 10^0, and every division scales its dividend.
func scale64(v int64, k int32) (int64, bool) {
	if k < 0 || k >= int32(len(pow10i64)) {
		return 0, false
	}
	if lim := maxScaled64[k]; v > lim || v < -lim {
		return 0, false
	}
	return v * pow10i64[k], true
}

// ScaledDiv64 is x * 10^k / y (y > 0) rounded half away from zero, in
// int64 arithmetic; false when x or x * 10^k does not fit in an int64.
func ScaledDiv64(x decimal128.Num, k int32, y int64) (int64, bool) {
	lo := int64(x.LowBits())
	if x.HighBits() != lo>>63 {
		return 0, false
	}
	v, ok := scale64(lo, k)
	if !ok {
		return 0, false
	}
	return roundDiv64(v, y), true
}

// roundDiv64 is x / y rounded half away from zero (y != 0, y != MinInt64).
func roundDiv64(x, y int64) int64 {
	q, rem := x/y, x%y
	if rem < 0 {
		rem = -rem
	}
	ay := y
	if ay < 0 {
		ay = -ay
	}
	if rem >= ay-rem { // 2|rem| >= |y| without overflow
		if (x < 0) != (y < 0) {
			q--
		} else {
			q++
		}
	}
	return q
}

// int64Out converts r at scale s to out's scale (rounding half away from
// zero) and checks out's precision; ok is false when that needs more than
// 64 bits.
func int64Out(r int64, s int32, out *arrow.Decimal128Type) (decimal128.Num, bool) {
	switch {
	case s < out.Scale:
		var ok bool
		if r, ok = scale64(r, out.Scale-s); !ok {
			return decimal128.Num{}, false
		}
	case s > out.Scale:
		d := s - out.Scale
		if d >= int32(len(pow10i64)) {
			return decimal128.Num{}, false
		}
		r = roundDiv64(r, pow10i64[d])
	}
	if out.Precision < int32(len(pow10i64)) {
		if lim := pow10i64[out.Precision]; r >= lim || r <= -lim {
			return decimal128.Num{}, false // decimalOpWide reports the overflow
		}
	}
	return decimal128.FromI64(r), true
}

// decimalOpWide is decimalOp in 128 bits, or big.Int where those overflow.
func decimalOpWide(op ArithOp, x decimal128.Num, xs int32, y decimal128.Num, ys int32, out *arrow.Decimal128Type) (decimal128.Num, error) {
	var r decimal128.Num
	switch op {
	case Add, Sub:
		s := max(xs, ys)
		if decBitLen(x)+4*int(s-xs) < 120 && decBitLen(y)+4*int(s-ys) < 120 {
			x, y = x.IncreaseScaleBy(s-xs), y.IncreaseScaleBy(s-ys)
			if op == Add {
				r = x.Add(y)
			} else {
				r = x.Sub(y)
			}
			return rescaleOut(r, s, out)
		}
		bx := new(big.Int).Mul(x.BigInt(), pow10Big(s-xs))
		by := new(big.Int).Mul(y.BigInt(), pow10Big(s-ys))
		if op == Add {
			return bigOut(bx.Add(bx, by), s, out)
		}
		return bigOut(bx.Sub(bx, by), s, out)
	case Mul:
		if decBitLen(x)+decBitLen(y) < 126 {
			return rescaleOut(x.Mul(y), xs+ys, out)
		}
		p := new(big.Int).Mul(x.BigInt(), y.BigInt())
		return bigOut(p, xs+ys, out)
	case Div:
		if y.Sign() == 0 {
			return r, ErrDivideByZero
		}
		// x/y at scale out.Scale = x * 10^(out.Scale - xs + ys) / y.
		k := out.Scale - xs + ys
		if q, ok := divRound128(x, k, y); ok {
			if !q.FitsInPrecision(out.Precision) {
				return r, ErrOverflow
			}
			return q, nil
		}
		num := x.BigInt()
		den := y.BigInt()
		if k >= 0 {
			num.Mul(num, pow10Big(k))
		} else {
			den.Mul(den, pow10Big(-k))
		}
		return bigOut(roundDiv(num, den), out.Scale, out)
	default:
		if y.Sign() == 0 {
			return r, ErrDivideByZero
		}
		s := max(xs, ys)
		bx := new(big.Int).Mul(x.BigInt(), pow10Big(s-xs))
		by := new(big.Int).Mul(y.BigInt(), pow10Big(s-ys))
		return bigOut(bx.Rem(bx, by), s, out)
	}
}

// rescaleOut converts r at scale s to out's scale (rounding) and checks
// precision.
func rescaleOut(r decimal128.Num, s int32, out *arrow.Decimal128Type) (decimal128.Num, error) {
	if s != out.Scale {
		if s < out.Scale {
			if decBitLen(r)+4*int(out.Scale-s) >= 126 {
				return bigOut(r.BigInt(), s, out)
			}
			r = increaseScale(r, out.Scale-s)
		} else {
			r = r.ReduceScaleBy(s-out.Scale, true)
		}
	}
	if !r.FitsInPrecision(out.Precision) {
		return r, ErrOverflow
	}
	return r, nil
}

// pow10i64[k] is 10^k.
var pow10i64 = func() (p [19]int64) {
	p[0] = 1
	for k := 1; k < len(p); k++ {
		p[k] = p[k-1] * 10
	}
	return p
}()

// maxScaled64[k] is the largest v whose v * 10^k fits in int64.
var maxScaled64 = func() (m [19]int64) {
	for k, p := range pow10i64 {
		m[k] = math.MaxInt64 / p
	}
	return m
}()

// increaseScale multiplies r by 10^k (r*10^k must fit in 128 bits). The
// common case, a value and product that fit in 64 bits, avoids the
// big.Int arithmetic of decimal128's IncreaseScaleBy (which made decimal
// casts in filters 75% of TPC-DS q28's time).
func increaseScale(r decimal128.Num, k int32) decimal128.Num {
	if v, ok := decimalInt64(r); ok {
		if v, ok := scale64(v, k); ok {
			return decimal128.FromI64(v)
		}
	}
	return r.IncreaseScaleBy(k)
}

func bigOut(v *big.Int, s int32, out *arrow.Decimal128Type) (decimal128.Num, error) {
	if s < out.Scale {
		v = new(big.Int).Mul(v, pow10Big(out.Scale-s))
	} else if s > out.Scale {
		v = roundDiv(v, pow10Big(s-out.Scale))
	}
	if new(big.Int).Abs(v).Cmp(pow10Big(out.Precision)) >= 0 {
		return decimal128.Num{}, ErrOverflow
	}
	return decimal128.FromBigInt(v), nil
}

// NegateDecimal negates a decimal128 array.
func NegateDecimal(mem memory.Allocator, a arrow.Array) arrow.Array {
	n := a.Len()
	v := AndValidity(mem, n, a)
	av := DecimalValues(a)
	res, o := newDecimalOut(mem, n)
	for i := range res {
		res[i] = av[i].Negate()
	}
	return finishDecimal(o, a.DataType(), n, v)
}

// RescaleDecimal converts decimal values from scale s to type out, rounding
// half away from zero; values that do not fit are an error.
func RescaleDecimal(x decimal128.Num, s int32, out *arrow.Decimal128Type) (decimal128.Num, error) {
	return rescaleOut(x, s, out)
}
