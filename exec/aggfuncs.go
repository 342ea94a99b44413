package exec

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/vectorized"
)

// accumulator is the per-group state of one aggregate function.
type accumulator interface {
	// grow makes room for groups [0, n).
	grow(n int)
	// update folds row i of args into group groups[i] for every row whose
	// mask entry is true (mask nil = every row).
	update(groups []uint32, args []arrow.Array, mask []bool) error
	// result returns the values of groups [0, n).
	result(mem memory.Allocator, n int) (arrow.Array, error)
	// moveTo moves group from's state to group to and truncates to to+1
	// groups (sort aggregation keeps its open group this way).
	moveTo(from, to int)
	// copyGroup copies group from's state over group to's (window frames
	// extend a copy of the previous row's state).
	copyGroup(from, to int)
}

// sizedAcc is an accumulator whose state grows with its values (strings,
// DISTINCT sets) beyond a fixed size per group: bytes estimates it.
type sizedAcc interface{ bytes() int64 }

// aggDef describes one aggregate: its result type and accumulator factory.
type aggDef struct {
	ret   arrow.DataType
	arity int // -1: count_star (no arguments)
	make  func() accumulator
	// distinctNulls: DISTINCT keeps one NULL (ARRAY_AGG respects NULLs).
	distinctNulls bool
}

// ResolveAggregate returns the result type of aggregate name over argTypes.
// Supported: count, count_star, sum, avg, min, max, stddev_samp (stddev),
// stddev_pop, var_samp (variance), var_pop, bool_and (every), bool_or,
// any_value, listagg and Flink's (func_agg.go).
func ResolveAggregate(name string, argTypes []arrow.DataType) (arrow.DataType, error) {
	d, err := resolveAgg(name, argTypes, nil)
	if err != nil {
		return nil, err
	}
	if n := vectorized.MapNesting(d.ret); n > vectorized.MaxMapNesting {
		return nil, fmt.Errorf("%w: aggregate %s(%s): its result would nest MAP types %d deep, over the limit of %d", ErrInvalid, strings.ToLower(name), typesString(argTypes), n, vectorized.MaxMapNesting)
	}
	return d.ret, nil
}

// resolveAgg resolves aggregate name over argument types; args holds the
// argument expressions when known (nil for ResolveAggregate), which only
// decide how values are written, never the result type.
func resolveAgg(name string, types []arrow.DataType, args []Expr) (*aggDef, error) {
	name = strings.ToLower(name)
	bad := func(why string) error {
		return fmt.Errorf("%w: aggregate %s(%s): %s", ErrInvalid, name, typesString(types), why)
	}
	if name == "count_star" {
		if len(types) != 0 {
			return nil, bad("takes no arguments")
		}
		return &aggDef{ret: i64Type, arity: -1, make: func() accumulator { return &countAcc{star: true} }}, nil
	}
	if name == "listagg" {
		d, ok := resolveListagg(types)
		if !ok {
			return nil, bad("takes a string and optionally a string separator")
		}
		return d, nil
	}
	if d, err := resolveFlinkAgg(name, types, args); err != nil {
		return nil, bad(err.Error())
	} else if d != nil {
		return d, nil
	}
	if len(types) != 1 {
		return nil, bad("takes one argument")
	}
	t := types[0]
	switch name {
	case "count":
		return &aggDef{ret: i64Type, arity: 1, make: func() accumulator { return &countAcc{} }}, nil
	case "sum":
		switch {
		case vectorized.IsInteger(t):
			return &aggDef{ret: i64Type, arity: 1, make: func() accumulator { return &sumIntAcc{} }}, nil
		case vectorized.IsFloat(t):
			return &aggDef{ret: f64Type, arity: 1, make: func() accumulator { return &sumFloatAcc{} }}, nil
		case t.ID() == arrow.DECIMAL128:
			// Spark's rule, not Flink's DECIMAL(38, s): ten more digits
			// than the input, enough for any realistic row count
			// (overflow is still detected), and it leaves precision for
			// later division. With Flink's, a quotient of sums keeps 6
			// decimals and TPC-DS q66's sum of them is off DuckDB's by
			// more than its last digit.
			in := t.(*arrow.Decimal128Type)
			dt := &arrow.Decimal128Type{Precision: min(in.Precision+10, MaxDecimalPrecision), Scale: in.Scale}
			return &aggDef{ret: dt, arity: 1, make: func() accumulator { return &sumDecAcc{out: dt} }}, nil
		case t.ID() == arrow.NULL:
			return &aggDef{ret: i64Type, arity: 1, make: func() accumulator { return &sumIntAcc{} }}, nil
		}
		return nil, bad("needs a number")
	case "avg":
		switch {
		case vectorized.IsInteger(t):
			// Flink's: the argument's type, the mean truncated toward zero.
			return &aggDef{ret: t, arity: 1, make: func() accumulator { return &avgIntAcc{ret: t} }}, nil
		case vectorized.IsFloat(t), t.ID() == arrow.NULL:
			return &aggDef{ret: f64Type, arity: 1, make: func() accumulator { return &avgFloatAcc{} }}, nil
		case t.ID() == arrow.DECIMAL128:
			in := t.(*arrow.Decimal128Type)
			dt := &arrow.Decimal128Type{Precision: min(in.Precision+4, MaxDecimalPrecision), Scale: min(in.Scale+4, MaxDecimalPrecision)}
			return &aggDef{ret: dt, arity: 1, make: func() accumulator {
				return &avgDecAcc{sumDecAcc: sumDecAcc{out: &arrow.Decimal128Type{Precision: 38, Scale: in.Scale}}, ret: dt}
			}}, nil
		}
		return nil, bad("needs a number")
	case "min", "max", "any_value", "arbitrary":
		if !vectorized.Comparable(t) {
			return nil, bad("type is not comparable")
		}
		mode := map[string]int{"min": -1, "max": 1}[name]
		return &aggDef{ret: t, arity: 1, make: func() accumulator { return newMinMax(t, mode) }}, nil
	case "stddev_samp", "stddev", "stddev_pop", "var_samp", "variance", "var_pop":
		if !isNumeric(t) && t.ID() != arrow.NULL {
			return nil, bad("needs a number")
		}
		pop := strings.HasSuffix(name, "_pop")
		sqrt := strings.HasPrefix(name, "stddev")
		if ExactVariance(t) {
			return &aggDef{ret: f64Type, arity: 1, make: func() accumulator { return &varIntAcc{pop: pop, sqrt: sqrt} }}, nil
		}
		return &aggDef{ret: f64Type, arity: 1, make: func() accumulator { return &varAcc{pop: pop, sqrt: sqrt} }}, nil
	case "bool_and", "every", "bool_or":
		if t.ID() != arrow.BOOL && t.ID() != arrow.NULL {
			return nil, bad("needs a boolean")
		}
		return &aggDef{ret: boolType, arity: 1, make: func() accumulator { return &boolAcc{or: name == "bool_or"} }}, nil
	}
	return nil, fmt.Errorf("%w: unknown aggregate function %s", ErrInvalid, name)
}

// seen tracks which groups have a non-NULL input (else the result is NULL).
type seen []bool

func (s *seen) grow(n int) {
	for len(*s) < n {
		*s = append(*s, false)
	}
}

// growTo extends s with zero values to length n. The capacity doubles:
// append's growth of large slices (a quarter) copied a 90,000-group
// state about five times over, on freshly faulted pages (q39: 11% of its
// CPU).
func growTo[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	if n > cap(s) {
		grown := make([]T, len(s), max(n, 2*cap(s)))
		copy(grown, s)
		s = grown
	}
	old := len(s)
	s = s[:n]
	clear(s[old:]) // a reslice may have left values past the length
	return s
}

func moveState[T any](s []T, from, to int) []T {
	s[to] = s[from]
	clear(s[to+1:]) // the groups dropped must not keep their values alive
	return s[:to+1]
}

// activeRows says which rows of an aggregate's argument a count: those
// mask keeps (nil: all) where a is not NULL. It reads a's validity bitmap
// in place instead of an IsValid call per row through the arrow.Array
// interface (BenchmarkHashAggregate/int: 10% less CPU), and not NullN,
// which caches its count in the array: the workers of a parallel
// aggregation share their input's arrays.
func activeRows(a arrow.Array, mask []bool) active {
	return active{mask: mask, bits: a.NullBitmapBytes(), off: a.Data().Offset(),
		none: a.DataType().ID() == arrow.NULL} // the NULL type has no bitmap
}

type active struct {
	mask []bool
	bits []byte
	off  int
	none bool
}

func (r active) at(i int) bool {
	if r.none || (r.mask != nil && !r.mask[i]) {
		return false
	}
	j := r.off + i
	return len(r.bits) == 0 || r.bits[j>>3]&(1<<(j&7)) != 0
}

// rows lists the rows of the first n that count, in order, into buf. A
// bitmap without a mask is read 64 rows at a time, visiting set bits only:
// the pivots' sum(CASE WHEN day = 'Sunday' THEN price END) (q02, q43, q59)
// have six NULL rows in seven, which a test per row both reads and
// mispredicts.
func (r active) rows(n int, buf []int32) []int32 {
	buf = slices.Grow(buf[:0], n)[:n]
	k := 0
	switch {
	case r.none:
	case r.mask == nil && len(r.bits) == 0:
		for i := range buf {
			buf[i] = int32(i)
		}
		k = n
	case r.mask == nil:
		i := 0
		for ; i < n && (r.off+i)&7 != 0; i++ { // up to a byte boundary
			buf[k] = int32(i)
			k += int(r.bits[(r.off+i)>>3] >> ((r.off + i) & 7) & 1)
		}
		for ; i+64 <= n; i += 64 {
			for w := binary.LittleEndian.Uint64(r.bits[(r.off+i)>>3:]); w != 0; w &= w - 1 {
				buf[k] = int32(i + bits.TrailingZeros64(w))
				k++
			}
		}
		for ; i < n; i++ {
			buf[k] = int32(i)
			k += int(r.bits[(r.off+i)>>3] >> ((r.off + i) & 7) & 1)
		}
	default:
		for i := range n { // a row that does not count is overwritten by the next
			buf[k] = int32(i)
			if r.at(i) {
				k++
			}
		}
	}
	return buf[:k]
}

type countAcc struct {
	star bool
	n    []int64
	rows []int32 // scratch of update
}

func (c *countAcc) grow(n int) { c.n = growTo(c.n, n) }
func (c *countAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	if c.star {
		for i, g := range groups {
			if mask == nil || mask[i] {
				c.n[g]++
			}
		}
		return nil
	}
	c.rows = activeRows(args[0], mask).rows(len(groups), c.rows)
	for _, i := range c.rows {
		c.n[groups[i]]++
	}
	return nil
}
func (c *countAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	out := vectorized.NewFixedOut[int64](mem, n)
	copy(out.Vals, c.n[:n])
	return out.Finish(i64Type, nil, 0), nil
}
func (c *countAcc) moveTo(from, to int)    { c.n = moveState(c.n, from, to) }
func (c *countAcc) copyGroup(from, to int) { c.n[to] = c.n[from] }

// int64View reads any integer array as int64 values.
func int64View(a arrow.Array) func(i int) int64 {
	switch a.DataType().ID() {
	case arrow.INT8:
		v := vectorized.Values[int8](a)
		return func(i int) int64 { return int64(v[i]) }
	case arrow.INT16:
		v := vectorized.Values[int16](a)
		return func(i int) int64 { return int64(v[i]) }
	case arrow.INT32:
		v := vectorized.Values[int32](a)
		return func(i int) int64 { return int64(v[i]) }
	case arrow.INT64:
		v := vectorized.Values[int64](a)
		return func(i int) int64 { return v[i] }
	case arrow.UINT8:
		v := vectorized.Values[uint8](a)
		return func(i int) int64 { return int64(v[i]) }
	case arrow.UINT16:
		v := vectorized.Values[uint16](a)
		return func(i int) int64 { return int64(v[i]) }
	case arrow.UINT32:
		v := vectorized.Values[uint32](a)
		return func(i int) int64 { return int64(v[i]) }
	case arrow.UINT64:
		v := vectorized.Values[uint64](a)
		return func(i int) int64 { return int64(v[i]) }
	}
	return func(int) int64 { return 0 }
}

// float64View reads a numeric array as float64 values.
func float64View(a arrow.Array) func(i int) float64 {
	switch a.DataType().ID() {
	case arrow.FLOAT64:
		v := vectorized.Values[float64](a)
		return func(i int) float64 { return v[i] }
	case arrow.FLOAT32:
		v := vectorized.Values[float32](a)
		return func(i int) float64 { return float64(v[i]) }
	case arrow.DECIMAL128:
		v := vectorized.DecimalValues(a)
		s := a.DataType().(*arrow.Decimal128Type).Scale
		return func(i int) float64 { return vectorized.DecimalToFloat64(v[i], s) }
	}
	iv := int64View(a)
	return func(i int) float64 { return float64(iv(i)) }
}

type sumIntAcc struct {
	sum  []int64
	seen seen
	rows []int32 // scratch of update
}

func (s *sumIntAcc) grow(n int) { s.sum = growTo(s.sum, n); s.seen.grow(n) }
func (s *sumIntAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	if args[0].DataType().ID() == arrow.NULL {
		return nil
	}
	if args[0].DataType().ID() == arrow.UINT64 {
		on := activeRows(args[0], mask)
		for i := range groups {
			if on.at(i) && args[0].(*array.Uint64).Value(i) > math.MaxInt64 {
				return fmt.Errorf("%w: sum of value %d", vectorized.ErrOverflow, args[0].(*array.Uint64).Value(i))
			}
		}
	}
	v := int64View(args[0])
	s.rows = activeRows(args[0], mask).rows(len(groups), s.rows)
	for _, i := range s.rows {
		g := groups[i]
		x, y := s.sum[g], v(int(i))
		r := x + y
		if (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0) {
			return fmt.Errorf("%w: sum exceeds the int64 range (%d + %d)", vectorized.ErrOverflow, x, y)
		}
		s.sum[g], s.seen[g] = r, true
	}
	return nil
}
func (s *sumIntAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	out := vectorized.NewFixedOut[int64](mem, n)
	copy(out.Vals, s.sum[:n])
	v := vectorized.BoolsToValidity(mem, s.seen[:n])
	return out.Finish(i64Type, v.Buf, v.Nulls), nil
}
func (s *sumIntAcc) moveTo(from, to int) {
	s.sum = moveState(s.sum, from, to)
	s.seen = moveState(s.seen, from, to)
}

type sumFloatAcc struct {
	sum  []float64
	seen seen
	rows []int32 // scratch of update
}

func (s *sumFloatAcc) grow(n int) { s.sum = growTo(s.sum, n); s.seen.grow(n) }
func (s *sumFloatAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	v := float64View(args[0])
	s.rows = activeRows(args[0], mask).rows(len(groups), s.rows)
	for _, i := range s.rows {
		g := groups[i]
		s.sum[g] += v(int(i))
		s.seen[g] = true
	}
	return nil
}
func (s *sumFloatAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	out := vectorized.NewFixedOut[float64](mem, n)
	copy(out.Vals, s.sum[:n])
	v := vectorized.BoolsToValidity(mem, s.seen[:n])
	return out.Finish(f64Type, v.Buf, v.Nulls), nil
}
func (s *sumFloatAcc) moveTo(from, to int) {
	s.sum = moveState(s.sum, from, to)
	s.seen = moveState(s.seen, from, to)
}

type sumDecAcc struct {
	out  *arrow.Decimal128Type
	sum  []decimal128.Num
	seen seen
	rows []int32 // scratch of update
}

func (s *sumDecAcc) grow(n int) { s.sum = growTo(s.sum, n); s.seen.grow(n) }
func (s *sumDecAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	v := vectorized.DecimalValues(args[0])
	s.rows = activeRows(args[0], mask).rows(len(groups), s.rows)
	for _, i := range s.rows {
		g := groups[i]
		r := s.sum[g].Add(v[i])
		if !r.FitsInPrecision(s.out.Precision) {
			return fmt.Errorf("%w: decimal sum exceeds %s", vectorized.ErrOverflow, s.out)
		}
		s.sum[g], s.seen[g] = r, true
	}
	return nil
}
func (s *sumDecAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	b := array.NewDecimal128Builder(mem, s.out)
	defer b.Release()
	b.AppendValues(s.sum[:n], s.seen[:n])
	return b.NewArray(), nil
}
func (s *sumDecAcc) moveTo(from, to int) {
	s.sum = moveState(s.sum, from, to)
	s.seen = moveState(s.seen, from, to)
}

type avgDecAcc struct {
	sumDecAcc
	cnt countAcc
	ret *arrow.Decimal128Type
}

func (a *avgDecAcc) grow(n int) { a.sumDecAcc.grow(n); a.cnt.grow(n) }
func (a *avgDecAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	if err := a.sumDecAcc.update(groups, args, mask); err != nil {
		return err
	}
	return a.cnt.update(groups, args, mask)
}
func (a *avgDecAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	b := array.NewDecimal128Builder(mem, a.ret)
	defer b.Release()
	for g := 0; g < n; g++ {
		if !a.seen[g] {
			b.AppendNull()
			continue
		}
		avg, err := AvgDecimal(a.sum[g], a.out.Scale, a.cnt.n[g], a.ret)
		if err != nil {
			return nil, err
		}
		b.Append(avg)
	}
	return b.NewArray(), nil
}

// AvgDecimal is avg's result over decimals: sum (of scale sumScale) / n,
// n > 0, at ret's scale, rounded half away from zero. Incremental
// aggregation (stream/) computes it the same way.
func AvgDecimal(sum decimal128.Num, sumScale int32, n int64, ret *arrow.Decimal128Type) (decimal128.Num, error) {
	// int64 arithmetic first, the common case (a window's avg over 110K
	// rows spent 4% of TPC-DS q47 in big.Int).
	if q, ok := vectorized.ScaledDiv64(sum, ret.Scale-sumScale, n); ok {
		if q := decimal128.FromI64(q); q.FitsInPrecision(ret.Precision) {
			return q, nil
		}
	}
	num := sum.BigInt()
	num.Mul(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(ret.Scale-sumScale)), nil))
	den := big.NewInt(n)
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if r.Abs(r).Lsh(r, 1).Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	// The result keeps 4 more fractional digits within 38: an average of
	// values near 10^38 has no room for them.
	if q.BitLen() > 127 || !decimal128.FromBigInt(q).FitsInPrecision(ret.Precision) {
		return decimal128.Num{}, fmt.Errorf("%w: avg of %s over %d rows does not fit %s", vectorized.ErrOverflow, sum.ToString(sumScale), n, ret)
	}
	return decimal128.FromBigInt(q), nil
}
func (a *avgDecAcc) moveTo(from, to int) {
	a.sumDecAcc.moveTo(from, to)
	a.cnt.moveTo(from, to)
}

// avgIntAcc is AVG of an integer type as Flink computes it: the exact sum
// divided by the count, truncated toward zero, in the argument's type
// (the mean of its values fits it).
type avgIntAcc struct {
	sumIntAcc
	cnt countAcc
	ret arrow.DataType
}

func (a *avgIntAcc) grow(n int) { a.sumIntAcc.grow(n); a.cnt.grow(n) }
func (a *avgIntAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	if err := a.sumIntAcc.update(groups, args, mask); err != nil {
		return err
	}
	return a.cnt.update(groups, args, mask)
}
func (a *avgIntAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	out := vectorized.NewFixedOut[int64](mem, n)
	for g := range n {
		if a.cnt.n[g] > 0 {
			out.Vals[g] = a.sum[g] / a.cnt.n[g]
		}
	}
	v := vectorized.BoolsToValidity(mem, a.seen[:n])
	means := out.Finish(i64Type, v.Buf, v.Nulls)
	if arrow.TypeEqual(a.ret, i64Type) {
		return means, nil
	}
	defer means.Release()
	return vectorized.Cast(mem, means, a.ret)
}
func (a *avgIntAcc) moveTo(from, to int) {
	a.sumIntAcc.moveTo(from, to)
	a.cnt.moveTo(from, to)
}
func (a *avgIntAcc) copyGroup(from, to int) {
	a.sumIntAcc.copyGroup(from, to)
	a.cnt.copyGroup(from, to)
}

type avgFloatAcc struct {
	sum []float64
	cnt []int64
}

func (a *avgFloatAcc) grow(n int) { a.sum = growTo(a.sum, n); a.cnt = growTo(a.cnt, n) }
func (a *avgFloatAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	if args[0].DataType().ID() == arrow.NULL {
		return nil
	}
	v := float64View(args[0])
	on := activeRows(args[0], mask)
	for i, g := range groups {
		if on.at(i) {
			a.sum[g] += v(i)
			a.cnt[g]++
		}
	}
	return nil
}
func (a *avgFloatAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	for g := 0; g < n; g++ {
		if a.cnt[g] == 0 {
			b.AppendNull()
		} else {
			b.Append(a.sum[g] / float64(a.cnt[g]))
		}
	}
	return b.NewArray(), nil
}
func (a *avgFloatAcc) moveTo(from, to int) {
	a.sum = moveState(a.sum, from, to)
	a.cnt = moveState(a.cnt, from, to)
}

// ExactVariance reports whether the variance of values of type t is
// computed exactly (IntMoments), as for integers but UNSIGNED BIGINT.
func ExactVariance(t arrow.DataType) bool {
	return vectorized.IsInteger(t) && t.ID() != arrow.UINT64
}

// varIntAcc is the variance of integers, from exact moments.
type varIntAcc struct {
	pop, sqrt bool
	m         []IntMoments
}

func (v *varIntAcc) grow(n int) { v.m = growTo(v.m, n) }
func (v *varIntAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	x := int64View(args[0])
	on := activeRows(args[0], mask)
	for i, g := range groups {
		if on.at(i) {
			v.m[g].Add(x(i), 1)
		}
	}
	return nil
}
func (v *varIntAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	for g := range n {
		if r, ok := v.m[g].Variance(v.pop, v.sqrt); ok {
			b.Append(r)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray(), nil
}
func (v *varIntAcc) moveTo(from, to int)    { v.m = moveState(v.m, from, to) }
func (v *varIntAcc) copyGroup(from, to int) { v.m[to] = v.m[from] }

// varAcc uses Welford's online algorithm.
type varAcc struct {
	pop, sqrt bool
	cnt       []int64
	mean, m2  []float64
}

func (v *varAcc) grow(n int) {
	v.cnt, v.mean, v.m2 = growTo(v.cnt, n), growTo(v.mean, n), growTo(v.m2, n)
}
func (v *varAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	if args[0].DataType().ID() == arrow.NULL {
		return nil
	}
	f := float64View(args[0])
	on := activeRows(args[0], mask)
	for i, g := range groups {
		if !on.at(i) {
			continue
		}
		x := f(i)
		v.cnt[g]++
		d := x - v.mean[g]
		v.mean[g] += d / float64(v.cnt[g])
		v.m2[g] += d * (x - v.mean[g])
	}
	return nil
}
func (v *varAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	for g := 0; g < n; g++ {
		den := v.cnt[g] - 1
		if v.pop {
			den = v.cnt[g]
		}
		if den <= 0 {
			b.AppendNull()
			continue
		}
		r := v.m2[g] / float64(den)
		if v.sqrt {
			r = math.Sqrt(r)
		}
		b.Append(r)
	}
	return b.NewArray(), nil
}
func (v *varAcc) moveTo(from, to int) {
	v.cnt, v.mean, v.m2 = moveState(v.cnt, from, to), moveState(v.mean, from, to), moveState(v.m2, from, to)
}

type boolAcc struct {
	or   bool
	val  []bool
	seen seen
}

func (b *boolAcc) grow(n int) { b.val = growTo(b.val, n); b.seen.grow(n) }
func (b *boolAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	if args[0].DataType().ID() == arrow.NULL {
		return nil
	}
	a := args[0].(*array.Boolean)
	on := activeRows(a, mask)
	for i, g := range groups {
		if !on.at(i) {
			continue
		}
		if !b.seen[g] {
			b.val[g], b.seen[g] = a.Value(i), true
		} else if b.or {
			b.val[g] = b.val[g] || a.Value(i)
		} else {
			b.val[g] = b.val[g] && a.Value(i)
		}
	}
	return nil
}
func (b *boolAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	return vectorized.BoolsToArray(mem, b.val[:n], b.seen[:n]), nil
}
func (b *boolAcc) moveTo(from, to int) {
	b.val = moveState(b.val, from, to)
	b.seen = moveState(b.seen, from, to)
}

// minMaxAcc keeps the best value per group in a Go slice of the widened
// value type (mode 0 keeps the first value: any_value).
type minMaxAcc struct {
	typ   arrow.DataType
	mode  int     // -1 min, 1 max, 0 first value
	fixed []int64 // ints, dates, timestamps (widened)
	flt   []float64
	dec   []decimal128.Num
	str   []string
	bl    []bool
	seen  seen
	kind  int // 0 int, 1 float, 2 decimal, 3 string, 4 bool, 5 interval
	iv    []arrow.MonthDayNanoInterval
	// strBytes is the length of the strings held, for the memory budget.
	strBytes int64
}

func (m *minMaxAcc) bytes() int64 { return m.strBytes }

func newMinMax(t arrow.DataType, mode int) *minMaxAcc {
	m := &minMaxAcc{typ: t, mode: mode}
	switch {
	case vectorized.IsFloat(t):
		m.kind = 1
	case t.ID() == arrow.DECIMAL128:
		m.kind = 2
	case vectorized.IsString(t), t.ID() == arrow.BINARY:
		m.kind = 3
	case t.ID() == arrow.BOOL:
		m.kind = 4
	case t.ID() == arrow.INTERVAL_MONTH_DAY_NANO:
		m.kind = 5
	}
	return m
}

func (m *minMaxAcc) grow(n int) {
	m.seen.grow(n)
	switch m.kind {
	case 0:
		m.fixed = growTo(m.fixed, n)
	case 1:
		m.flt = growTo(m.flt, n)
	case 2:
		m.dec = growTo(m.dec, n)
	case 3:
		m.str = growTo(m.str, n)
	case 4:
		m.bl = growTo(m.bl, n)
	case 5:
		m.iv = growTo(m.iv, n)
	}
}

func (m *minMaxAcc) better(c int) bool {
	return m.mode != 0 && c*m.mode > 0
}

func (m *minMaxAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	a := args[0]
	if a.DataType().ID() == arrow.NULL {
		return nil
	}
	switch m.kind {
	case 0:
		var v func(int) int64
		switch a.DataType().ID() {
		case arrow.DATE32, arrow.TIME32:
			iv := vectorized.Values[int32](a)
			v = func(i int) int64 { return int64(iv[i]) }
		case arrow.TIMESTAMP, arrow.TIME64, arrow.DATE64, arrow.DURATION:
			iv := vectorized.Values[int64](a)
			v = func(i int) int64 { return iv[i] }
		default:
			v = int64View(a)
		}
		on := activeRows(a, mask)
		for i, g := range groups {
			if on.at(i) {
				x := v(i)
				if !m.seen[g] || m.better(cmp.Compare(x, m.fixed[g])) {
					m.fixed[g], m.seen[g] = x, true
				}
			}
		}
	case 1:
		v := float64View(a)
		on := activeRows(a, mask)
		for i, g := range groups {
			if on.at(i) {
				x := v(i)
				if !m.seen[g] || m.better(floatOrder(x, m.flt[g])) {
					m.flt[g], m.seen[g] = x, true
				}
			}
		}
	case 2:
		v := vectorized.DecimalValues(a)
		on := activeRows(a, mask)
		for i, g := range groups {
			if on.at(i) && (!m.seen[g] || m.better(v[i].Cmp(m.dec[g]))) {
				m.dec[g], m.seen[g] = v[i], true
			}
		}
	case 3:
		on := activeRows(a, mask)
		for i, g := range groups {
			if !on.at(i) {
				continue
			}
			x := vectorized.StringAt(a, i)
			if !m.seen[g] || m.better(strings.Compare(x, m.str[g])) {
				m.strBytes += int64(len(x) - len(m.str[g]))
				m.str[g], m.seen[g] = strings.Clone(x), true
			}
		}
	case 4:
		b := a.(*array.Boolean)
		on := activeRows(a, mask)
		for i, g := range groups {
			if on.at(i) {
				x := b.Value(i)
				c := 0
				if x != m.bl[g] {
					c = 1
					if !x {
						c = -1
					}
				}
				if !m.seen[g] || m.better(c) {
					m.bl[g], m.seen[g] = x, true
				}
			}
		}
	case 5:
		b := a.(*array.MonthDayNanoInterval)
		on := activeRows(a, mask)
		for i, g := range groups {
			if on.at(i) && !m.seen[g] {
				m.iv[g], m.seen[g] = b.Value(i), true
			}
		}
	}
	return nil
}

// floatOrder is the min/max order of floats: NaN after every number,
// NaN equal to NaN. It is not cmp.Compare, which puts NaN before every
// number.
func floatOrder(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	case a != a && b != b:
		return 0
	case a != a:
		return 1
	}
	return -1
}

func (m *minMaxAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	b := array.NewBuilder(mem, m.typ)
	defer b.Release()
	b.Reserve(n)
	for g := 0; g < n; g++ {
		if !m.seen[g] {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.Float64Builder:
			bb.Append(m.flt[g])
		case *array.Float32Builder:
			bb.Append(float32(m.flt[g]))
		case *array.Decimal128Builder:
			bb.Append(m.dec[g])
		case *array.StringBuilder:
			bb.Append(m.str[g])
		case *array.LargeStringBuilder:
			bb.Append(m.str[g])
		case *array.BinaryBuilder:
			bb.AppendString(m.str[g])
		case *array.BooleanBuilder:
			bb.Append(m.bl[g])
		case *array.MonthDayNanoIntervalBuilder:
			bb.Append(m.iv[g])
		case *array.Date32Builder:
			bb.Append(arrow.Date32(m.fixed[g]))
		case *array.TimestampBuilder:
			bb.Append(arrow.Timestamp(m.fixed[g]))
		case *array.Time32Builder:
			bb.Append(arrow.Time32(m.fixed[g]))
		case *array.Time64Builder:
			bb.Append(arrow.Time64(m.fixed[g]))
		case *array.Date64Builder:
			bb.Append(arrow.Date64(m.fixed[g]))
		case *array.DurationBuilder:
			bb.Append(arrow.Duration(m.fixed[g]))
		default:
			if put := vectorized.IntPutter(b); put != nil {
				put(m.fixed[g])
			} else {
				return nil, fmt.Errorf("%w: min/max of %s", ErrNotImplemented, m.typ)
			}
		}
	}
	return b.NewArray(), nil
}

func (m *minMaxAcc) moveTo(from, to int) {
	m.seen = moveState(m.seen, from, to)
	switch m.kind {
	case 0:
		m.fixed = moveState(m.fixed, from, to)
	case 1:
		m.flt = moveState(m.flt, from, to)
	case 2:
		m.dec = moveState(m.dec, from, to)
	case 3:
		m.str = moveState(m.str, from, to)
		m.strBytes = int64(len(m.str[to]))
	case 4:
		m.bl = moveState(m.bl, from, to)
	case 5:
		m.iv = moveState(m.iv, from, to)
	}
}

// distinctAcc feeds each (group, value) pair to the inner accumulator once.
// Its set of pairs counts against the query budget: once the operator
// freezes it (spill), pairs not in it go to disk as (g, v) rows, and finish
// deduplicates them into the inner accumulator.
type distinctAcc struct {
	ec    *Context
	inner accumulator
	set   *spillSet
	enc   vectorized.KeyEncoder // the argument (update) or the pair (spill)
	buf   []byte
	// keepNull feeds NULL once too (ARRAY_AGG's DISTINCT respects NULLs).
	keepNull bool
	// rest holds the constant arguments after the first (LISTAGG's
	// separator), which the spilled pairs do not carry.
	rest []scalar.Scalar
}

func newDistinctAcc(ec *Context, inner accumulator, arg arrow.DataType, keepNull bool) *distinctAcc {
	schema := arrow.NewSchema([]arrow.Field{{Name: "g", Type: arrow.PrimitiveTypes.Uint32}, {Name: "v", Type: arg, Nullable: true}}, nil)
	return &distinctAcc{ec: ec, inner: inner, set: newSpillSet(ec, schema, 0), keepNull: keepNull}
}

func (d *distinctAcc) grow(n int) { d.inner.grow(n) }

func (d *distinctAcc) bytes() int64 {
	n := d.set.bytes
	if s, ok := d.inner.(sizedAcc); ok {
		n += s.bytes()
	}
	return n
}

// update is add without cancellation; operators call add.
func (d *distinctAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	return d.add(context.Background(), groups, args, mask)
}

func (d *distinctAcc) add(ctx context.Context, groups []uint32, args []arrow.Array, mask []bool) error {
	if err := d.enc.Encode(args, len(groups)); err != nil {
		return err
	}
	if d.rest == nil && len(groups) > 0 {
		for _, a := range args[1:] {
			s := scalar.MakeNullScalar(a.DataType())
			if a.IsValid(0) {
				s = scalar.NewStringScalar(vectorized.StringAt(a, 0))
			}
			d.rest = append(d.rest, s)
		}
	}
	m := make([]bool, len(groups))
	var out []bool
	for i, g := range groups {
		if (mask != nil && !mask[i]) || d.enc.HasNull[i] && !d.keepNull {
			continue
		}
		d.buf = append(d.buf[:0], byte(g), byte(g>>8), byte(g>>16), byte(g>>24))
		d.buf = append(d.buf, d.enc.Key(i)...)
		switch d.set.admit(d.buf) {
		case keyFresh:
			m[i] = true
		case keySpill:
			out = markRow(out, len(groups), i)
		}
	}
	if out != nil {
		if err := d.spillPairs(ctx, d.set, groups, 0, args[0], out); err != nil {
			return err
		}
	}
	return d.inner.update(groups, args, m)
}

// spillPairs writes the pairs (groups[i] - shift, v[i]) of rows to set's
// partitions.
func (d *distinctAcc) spillPairs(ctx context.Context, set *spillSet, groups []uint32, shift uint32, v arrow.Array, rows []bool) error {
	g := vectorized.NewFixedOut[uint32](d.ec.Mem, len(groups))
	for i, x := range groups {
		g.Vals[i] = x - shift
	}
	ga := g.Finish(arrow.PrimitiveTypes.Uint32, nil, 0)
	defer ga.Release()
	b := array.NewRecordBatch(set.schema, []arrow.Array{ga, v}, int64(len(groups)))
	defer b.Release()
	if err := d.enc.Encode(b.Columns(), len(groups)); err != nil {
		return err
	}
	return set.write(ctx, b, &d.enc, rows)
}

// finish feeds the spilled pairs of groups [0, n) to the inner accumulator,
// each once. Pairs of later groups (sort aggregation's open group) stay
// spilled, renumbered from 0 for the moveTo(n, 0) that follows.
func (d *distinctAcc) finish(ctx context.Context, n int) error {
	if d.set.spill == nil {
		return nil
	}
	var kept *spillSet
	err := d.set.drain(ctx, func(b arrow.RecordBatch, fresh []bool) error {
		groups := vectorized.Values[uint32](b.Column(0))
		var keep []bool
		for i, g := range groups {
			if fresh[i] && int(g) >= n {
				keep, fresh[i] = markRow(keep, len(groups), i), false
			}
		}
		if keep != nil {
			if kept == nil {
				kept = newSpillSet(d.ec, d.set.schema, 0)
				if err := kept.freeze(); err != nil {
					return err
				}
			}
			if err := d.spillPairs(ctx, kept, groups, uint32(n), b.Column(1), keep); err != nil {
				return err
			}
		}
		args := []arrow.Array{b.Column(1)}
		defer func() { releaseArrays(args[1:]) }()
		for _, s := range d.rest {
			a, err := scalar.MakeArrayFromScalar(s, len(groups), d.ec.Mem)
			if err != nil {
				return err
			}
			args = append(args, a)
		}
		return d.inner.update(groups, args, fresh)
	})
	if kept != nil && err != nil {
		kept.remove()
	} else if kept != nil {
		d.set.spill, kept.spill = kept.spill, nil
	}
	return err
}

func (d *distinctAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	return d.inner.result(mem, n)
}

// moveTo is only used by sort aggregation, which finishes a group before
// reusing its slot, so the distinct set of finished groups can be dropped.
func (d *distinctAcc) moveTo(from, to int) {
	d.inner.moveTo(from, to)
	keep := vectorized.NewBytesTable(0)
	var bytes int64
	var nk []byte
	d.set.seen.Each(func(k []byte, _ int32) {
		g := uint32(k[0]) | uint32(k[1])<<8 | uint32(k[2])<<16 | uint32(k[3])<<24
		if int(g) == from {
			nk = append(nk[:0], k...)
			nk[0], nk[1], nk[2], nk[3] = byte(to), byte(to>>8), byte(to>>16), byte(to>>24)
			keep.Put(nk, 0)
			bytes += int64(len(nk)) + tableEntryBytes
		}
	})
	d.set.seen, d.set.bytes = keep, bytes
}

func (s *sumIntAcc) copyGroup(from, to int) {
	s.sum[to] = s.sum[from]
	s.seen[to] = s.seen[from]
}

func (s *sumFloatAcc) copyGroup(from, to int) {
	s.sum[to] = s.sum[from]
	s.seen[to] = s.seen[from]
}

func (s *sumDecAcc) copyGroup(from, to int) {
	s.sum[to] = s.sum[from]
	s.seen[to] = s.seen[from]
}

func (a *avgDecAcc) copyGroup(from, to int) {
	a.sumDecAcc.copyGroup(from, to)
	a.cnt.copyGroup(from, to)
}

func (a *avgFloatAcc) copyGroup(from, to int) {
	a.sum[to] = a.sum[from]
	a.cnt[to] = a.cnt[from]
}

func (v *varAcc) copyGroup(from, to int) {
	v.cnt[to], v.mean[to], v.m2[to] = v.cnt[from], v.mean[from], v.m2[from]
}

func (b *boolAcc) copyGroup(from, to int) {
	b.val[to] = b.val[from]
	b.seen[to] = b.seen[from]
}

func (m *minMaxAcc) copyGroup(from, to int) {
	m.seen[to] = m.seen[from]
	switch m.kind {
	case 0:
		m.fixed[to] = m.fixed[from]
	case 1:
		m.flt[to] = m.flt[from]
	case 2:
		m.dec[to] = m.dec[from]
	case 3:
		m.str[to] = m.str[from]
	case 4:
		m.bl[to] = m.bl[from]
	case 5:
		m.iv[to] = m.iv[from]
	}
}

// copyGroup does not copy the distinct set: NewWindow rejects DISTINCT
// aggregates, the only users of copyGroup.
func (d *distinctAcc) copyGroup(from, to int) { d.inner.copyGroup(from, to) }

// mergeGroups folds the state of group src[i] into group dst[i] of the
// same accumulator, for every i in order (a later pair may read what an
// earlier one wrote: a window's running fold), as if dst had also seen
// src's rows:
// COUNT, SUM, AVG (its sum and count), MIN, MAX and ANY_VALUE can; it
// reports false for any other (DISTINCT, variances, LISTAGG, ...), before
// changing anything. The type switch names exact types on purpose: the
// AVG accumulators embed the SUM ones.
func mergeGroups(a accumulator, src, dst []uint32) (bool, error) {
	switch a := a.(type) {
	case *countAcc:
		for i, s := range src {
			a.n[dst[i]] += a.n[s]
		}
	case *sumIntAcc:
		for i, s := range src {
			d := dst[i]
			if !a.seen[s] {
				continue
			}
			x, y := a.sum[d], a.sum[s]
			r := x + y
			if (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0) {
				return true, fmt.Errorf("%w: sum exceeds the int64 range (%d + %d)", vectorized.ErrOverflow, x, y)
			}
			a.sum[d], a.seen[d] = r, true
		}
	case *sumFloatAcc:
		for i, s := range src {
			if d := dst[i]; a.seen[s] {
				a.sum[d] += a.sum[s]
				a.seen[d] = true
			}
		}
	case *sumDecAcc:
		for i, s := range src {
			d := dst[i]
			if !a.seen[s] {
				continue
			}
			r := a.sum[d].Add(a.sum[s])
			if !r.FitsInPrecision(a.out.Precision) {
				return true, fmt.Errorf("%w: decimal sum exceeds %s", vectorized.ErrOverflow, a.out)
			}
			a.sum[d], a.seen[d] = r, true
		}
	case *avgIntAcc:
		mergeGroups(&a.cnt, src, dst)
		return mergeGroups(&a.sumIntAcc, src, dst)
	case *avgDecAcc:
		mergeGroups(&a.cnt, src, dst)
		return mergeGroups(&a.sumDecAcc, src, dst)
	case *avgFloatAcc:
		for i, s := range src {
			a.sum[dst[i]] += a.sum[s]
			a.cnt[dst[i]] += a.cnt[s]
		}
	case *minMaxAcc:
		for i, s := range src {
			if d := int(dst[i]); a.seen[s] && (!a.seen[d] || a.better(a.compare(int(s), d))) {
				if a.kind == 3 {
					a.strBytes += int64(len(a.str[s]) - len(a.str[d]))
				}
				a.copyGroup(int(s), d)
			}
		}
	default:
		return false, nil
	}
	return true, nil
}

// mergeable reports whether mergeGroups can fold a's groups.
func mergeable(a accumulator) bool {
	ok, _ := mergeGroups(a, nil, nil)
	return ok
}

// compare orders the values of groups x and y (both seen) as update does.
func (m *minMaxAcc) compare(x, y int) int {
	switch m.kind {
	case 0:
		return cmp.Compare(m.fixed[x], m.fixed[y])
	case 1:
		return floatOrder(m.flt[x], m.flt[y])
	case 2:
		return m.dec[x].Cmp(m.dec[y])
	case 3:
		return strings.Compare(m.str[x], m.str[y])
	case 4:
		switch {
		case m.bl[x] == m.bl[y]:
			return 0
		case m.bl[x]:
			return 1
		}
		return -1
	}
	return 0 // intervals: only ANY_VALUE, which keeps the first
}
