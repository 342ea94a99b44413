package vectorized

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func checked(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func ints(mem memory.Allocator, vals ...any) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
		} else {
			b.Append(int64(v.(int)))
		}
	}
	return b.NewArray()
}

func render(a arrow.Array) string {
	s := make([]string, a.Len())
	for i := range s {
		s[i] = FormatValue(a, i)
	}
	return strings.Join(s, ",")
}

func TestCheckedIntArithmetic(t *testing.T) {
	cases := []struct {
		op   ArithOp
		x, y int64
		want string // value or error substring
	}{
		{Add, math.MaxInt64, 1, "overflow"},
		{Add, math.MinInt64, -1, "overflow"},
		{Sub, math.MinInt64, 1, "overflow"},
		{Sub, 0, math.MinInt64, "overflow"},
		{Mul, math.MinInt64, -1, "overflow"},
		{Mul, -1, math.MinInt64, "overflow"},
		{Mul, 1 << 32, 1 << 31, "overflow"},
		{Mul, -(1 << 31), 1 << 32, "-9223372036854775808"},
		{Div, math.MinInt64, -1, "overflow"},
		{Div, 7, 0, "division by zero"},
		{Mod, 7, 0, "division by zero"},
		{Mod, math.MinInt64, -1, "0"},
		{Div, -7, 2, "-3"},
		{Mod, -7, 2, "-1"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d%s%d", c.x, c.op, c.y), func(t *testing.T) {
			mem := checked(t)
			a, b := ints(mem, int(c.x)), ints(mem, int(c.y))
			defer a.Release()
			defer b.Release()
			r, err := ArithInt[int64](mem, c.op, a, b)
			if err != nil {
				if !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got error %v, want %s", err, c.want)
				}
				return
			}
			defer r.Release()
			if got := render(r); got != c.want {
				t.Fatalf("got %s want %s", got, c.want)
			}
		})
	}
}

func TestNarrowOverflowAndNulls(t *testing.T) {
	mem := checked(t)
	b := array.NewInt8Builder(mem)
	b.AppendValues([]int8{100, 1, 0}, []bool{true, true, false})
	a := b.NewArray()
	b.Release()
	defer a.Release()
	if _, err := ArithInt[int8](mem, Add, a, a); !errors.Is(err, ErrOverflow) {
		t.Fatalf("int8 100+100: want overflow, got %v", err)
	}
	// A NULL row's garbage value never raises an error.
	s := array.NewSlice(a, 1, 3)
	defer s.Release()
	r, err := ArithInt[int8](mem, Div, s, s)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if render(r) != "1,NULL" {
		t.Fatalf("got %s", render(r))
	}
}

func TestDecimalArith(t *testing.T) {
	mem := checked(t)
	dec := func(p, s int32, vals ...string) arrow.Array {
		dt := &arrow.Decimal128Type{Precision: p, Scale: s}
		b := array.NewDecimal128Builder(mem, dt)
		defer b.Release()
		for _, v := range vals {
			n, err := ParseDecimal(v, dt)
			if err != nil {
				t.Fatal(err)
			}
			b.Append(n)
		}
		return b.NewArray()
	}
	a := dec(10, 2, "1.25", "-3.50", "99999999.99")
	b := dec(5, 3, "0.125", "2.000", "0.001")
	defer a.Release()
	defer b.Release()
	for _, c := range []struct {
		op   ArithOp
		out  *arrow.Decimal128Type
		want string
	}{
		{Add, &arrow.Decimal128Type{Precision: 12, Scale: 3}, "1.375,-1.500,99999999.991"},
		{Mul, &arrow.Decimal128Type{Precision: 16, Scale: 5}, "0.15625,-7.00000,99999.99999"},
		{Div, &arrow.Decimal128Type{Precision: 20, Scale: 4}, "10.0000,-1.7500,99999999990.0000"},
		{Mod, &arrow.Decimal128Type{Precision: 5, Scale: 3}, "0.000,-1.500,0.000"},
		{Mul, &arrow.Decimal128Type{Precision: 10, Scale: 1}, "0.2,-7.0,100000.0"},
	} {
		r, err := DecimalArith(mem, c.op, a, b, c.out)
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		if got := render(r); got != c.want {
			t.Errorf("%s: got %s want %s", c.op, got, c.want)
		}
		r.Release()
	}
	if _, err := DecimalArith(mem, Add, a, b, &arrow.Decimal128Type{Precision: 5, Scale: 3}); !errors.Is(err, ErrOverflow) {
		t.Fatalf("want overflow, got %v", err)
	}
	zero := dec(5, 3, "0", "0", "0")
	defer zero.Release()
	if _, err := DecimalArith(mem, Div, a, zero, &arrow.Decimal128Type{Precision: 20, Scale: 4}); !errors.Is(err, ErrDivideByZero) {
		t.Fatalf("want division by zero, got %v", err)
	}
	// 38-digit products go through big.Int and still detect overflow.
	big1 := dec(38, 0, "99999999999999999999999999999999999999")
	defer big1.Release()
	if _, err := DecimalArith(mem, Mul, big1, big1, &arrow.Decimal128Type{Precision: 38, Scale: 0}); !errors.Is(err, ErrOverflow) {
		t.Fatalf("want overflow, got %v", err)
	}
	if _, err := ParseDecimal("1e400", &arrow.Decimal128Type{Precision: 38, Scale: 0}); err == nil {
		t.Fatal("1e400 fits decimal(38,0)?")
	}
	n, err := ParseDecimal("-2.345", &arrow.Decimal128Type{Precision: 5, Scale: 2})
	if err != nil || n.ToString(2) != "-2.35" {
		t.Fatalf("round half away: %v %v", n.ToString(2), err)
	}
}

func TestCompareAndKleene(t *testing.T) {
	mem := checked(t)
	a := ints(mem, 1, 2, nil, 4)
	b := ints(mem, 1, 3, 3, nil)
	defer a.Release()
	defer b.Release()
	for op, want := range map[CmpOp]string{Eq: "true,false,NULL,NULL", Lt: "false,true,NULL,NULL", Ge: "true,false,NULL,NULL", Ne: "false,true,NULL,NULL"} {
		r, err := Compare(mem, op, a, b)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(r); got != want {
			t.Errorf("op %d: got %s want %s", op, got, want)
		}
		r.Release()
	}
	bools := func(vals ...any) arrow.Array {
		bb := array.NewBooleanBuilder(mem)
		defer bb.Release()
		for _, v := range vals {
			if v == nil {
				bb.AppendNull()
			} else {
				bb.Append(v.(bool))
			}
		}
		return bb.NewArray()
	}
	x := bools(true, true, true, false, false, false, nil, nil, nil)
	y := bools(true, false, nil, true, false, nil, true, false, nil)
	defer x.Release()
	defer y.Release()
	and, or, not := And(mem, x, y), Or(mem, x, y), Not(mem, x)
	defer and.Release()
	defer or.Release()
	defer not.Release()
	if got := render(and); got != "true,false,NULL,false,false,false,NULL,false,NULL" {
		t.Errorf("and: %s", got)
	}
	if got := render(or); got != "true,true,true,true,false,NULL,true,NULL,NULL" {
		t.Errorf("or: %s", got)
	}
	if got := render(not); got != "false,false,false,true,true,true,NULL,NULL,NULL" {
		t.Errorf("not: %s", got)
	}
	// NaN sorts above everything and equals itself; -0 equals 0.
	f := array.NewFloat64Builder(mem)
	f.AppendValues([]float64{math.NaN(), math.Inf(1), math.Copysign(0, -1)}, nil)
	fa := f.NewArray()
	f.Release()
	defer fa.Release()
	c, _ := NewComparator(fa, fa)
	if c(0, 1) != 1 || c(0, 0) != 0 {
		t.Error("NaN ordering")
	}
	var enc KeyEncoder
	g := array.NewFloat64Builder(mem)
	g.AppendValues([]float64{0, math.NaN()}, nil)
	ga := g.NewArray()
	g.Release()
	defer ga.Release()
	if err := enc.Encode([]arrow.Array{fa}, 3); err != nil {
		t.Fatal(err)
	}
	k0, k2 := string(enc.Key(0)), string(enc.Key(2))
	if err := enc.Encode([]arrow.Array{ga}, 2); err != nil {
		t.Fatal(err)
	}
	if k2 != string(enc.Key(0)) || k0 != string(enc.Key(1)) {
		t.Error("-0/0 or NaN keys differ")
	}
}

func TestCasts(t *testing.T) {
	mem := checked(t)
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{" 42 ", "-7", "x"}, []bool{true, true, true})
	s := sb.NewArray()
	sb.Release()
	defer s.Release()
	head := array.NewSlice(s, 0, 2)
	defer head.Release()
	r, err := Cast(mem, head, arrow.PrimitiveTypes.Int16)
	if err != nil || render(r) != "42,-7" {
		t.Fatalf("got %v %v", r, err)
	}
	r.Release()
	if _, err := Cast(mem, s, arrow.PrimitiveTypes.Int16); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("error must name the value: %v", err)
	}
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	d := array.NewDate32Builder(mem)
	d.Append(arrow.Date32FromTime(time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)))
	da := d.NewArray()
	d.Release()
	defer da.Release()
	tsa, err := Cast(mem, da, ts)
	if err != nil {
		t.Fatal(err)
	}
	defer tsa.Release()
	back, err := Cast(mem, tsa, arrow.FixedWidthTypes.Date32)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Release()
	if render(back) != "1969-12-31" || render(tsa) != "1969-12-31 00:00:00" {
		t.Fatalf("date round trip: %s %s", render(tsa), render(back))
	}
	if CanCast(arrow.FixedWidthTypes.Date32, arrow.PrimitiveTypes.Int64) {
		t.Fatal("date -> int64 should not be castable")
	}
}

func TestLikeAndStrings(t *testing.T) {
	for _, c := range []struct {
		pat  string
		esc  rune
		s    string
		want bool
	}{
		{"abc", 0, "abc", true}, {"abc", 0, "abcd", false}, {"a%", 0, "abc", true}, {"%c", 0, "abc", true},
		{"%b%", 0, "abc", true}, {"a_c", 0, "abc", true}, {"a_c", 0, "ac", false}, {"%", 0, "", true},
		{"a\\%", '\\', "a%", true}, {"a\\%", '\\', "ab", false}, {"é_", 0, "éa", true}, {"a%c%e", 0, "abcde", true},
		{"a.c", 0, "abc", false}, {"%\n%", 0, "x\ny", true},
	} {
		m, err := NewLikeMatcher(c.pat, c.esc, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Match(c.s); got != c.want {
			t.Errorf("%q LIKE %q = %v, want %v", c.s, c.pat, got, c.want)
		}
	}
	if _, err := NewLikeMatcher("ab\\", '\\', false); err == nil {
		t.Error("trailing escape accepted")
	}
	for _, c := range []struct {
		s          string
		start, len int64
		hasLen     bool
		want       string
	}{
		{"hello", 2, 3, true, "ell"}, {"hello", 0, 2, true, "h"}, {"hello", -5, 10, true, "hell"},
		{"hello", 4, 0, false, "lo"}, {"héllo", 2, 1, true, "é"}, {"hi", 5, 1, true, ""},
	} {
		got, err := Substr(c.s, c.start, c.len, c.hasLen)
		if err != nil || got != c.want {
			t.Errorf("substr(%q,%d,%d) = %q %v, want %q", c.s, c.start, c.len, got, err, c.want)
		}
	}
}

func TestDates(t *testing.T) {
	jan31 := time.Date(2023, 1, 31, 10, 0, 0, 0, time.UTC)
	if got, _ := DateAdd("month", 1, jan31); got.Format("2006-01-02") != "2023-02-28" {
		t.Errorf("jan 31 + 1 month = %s", got)
	}
	if got, _ := DateAdd("year", -1, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)); got.Format("2006-01-02") != "2023-02-28" {
		t.Errorf("leap day - 1 year = %s", got)
	}
	if got, _ := DateDiff("month", jan31, time.Date(2023, 3, 30, 0, 0, 0, 0, time.UTC)); got != 1 {
		t.Errorf("date_diff month = %d", got)
	}
	if got, _ := DateDiff("day", time.Date(2023, 3, 30, 0, 0, 0, 0, time.UTC), jan31); got != -57 {
		t.Errorf("date_diff day = %d", got)
	}
	l, err := DateFormatLayout("yyyy-MM-dd'T'HH:mm:ss.SSS")
	if err != nil || jan31.Format(l) != "2023-01-31T10:00:00.000" {
		t.Errorf("layout %q: %v", l, err)
	}
	if _, err := DateFormatLayout("yyyy-qq"); err == nil {
		t.Error("unknown pattern letter accepted")
	}
}

// TestEncodeColumnsRandom: the column-at-a-time encoder writes the bytes,
// offsets and NULL flags of the row-at-a-time one, over random key column
// sets of every type it takes, sliced, with and without NULLs, with
// strings long enough for multi-byte length prefixes.
func TestEncodeColumnsRandom(t *testing.T) {
	mem := checked(t)
	rng := testSeed(t)
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Uint32, arrow.FixedWidthTypes.Date32,
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64, arrow.FixedWidthTypes.Timestamp_us,
		&arrow.Decimal128Type{Precision: 38, Scale: 2},
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary,
	}
	long := array.NewStringBuilder(mem)
	for i := range 400 {
		if i%7 == 3 {
			long.AppendNull()
			continue
		}
		long.Append(strings.Repeat("x", rng.IntN(300)))
	}
	longs := long.NewArray()
	long.Release()
	defer longs.Release()
	var cp, rows KeyEncoder
	for range 300 {
		n := rng.IntN(300)
		var cols []arrow.Array
		for range 1 + rng.IntN(4) {
			if rng.IntN(6) == 0 {
				off := rng.IntN(longs.Len() - n + 1)
				cols = append(cols, array.NewSlice(longs, int64(off), int64(off+n)))
				continue
			}
			cols = append(cols, randomArray(t, mem, rng, types[rng.IntN(len(types))], n, rng.IntN(2) == 0))
		}
		if !columnwise(cols) {
			t.Fatalf("columnwise refuses %v", cols)
		}
		if err := cp.Encode(cols, n); err != nil {
			t.Fatal(err)
		}
		rows.buf, rows.offs, rows.HasNull = rows.buf[:0], make([]int, n+1), make([]bool, n)
		if err := rows.encodeRows(cols, n); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(cp.buf, rows.buf) || !slices.Equal(cp.offs, rows.offs) || !slices.Equal(cp.HasNull, rows.HasNull) {
			t.Fatalf("%d rows of %v: columnwise %x %v %v, by rows %x %v %v", n, cols, cp.buf, cp.offs, cp.HasNull, rows.buf, rows.offs, rows.HasNull)
		}
		for _, c := range cols {
			c.Release()
		}
	}
}

// TestLikeSegmentsLinear: a LIKE pattern of literals between %s is matched
// in time linear in the string: a 100 KB string against '%a' 1,000 times
// then 'b' took 15 s through the regexp, uninterruptible, per row.
func TestLikeSegmentsLinear(t *testing.T) {
	s := strings.Repeat("a", 100_000)
	m, err := NewLikeMatcher(strings.Repeat("%a", 1000)+"b", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if m.Match(s) || !m.Match(s+"b") {
		t.Fatal("wrong answer")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
}

// TestLikeSegmentsMatchRegexp compares random patterns of literals, %s and
// escaped %s with the regexp LIKE matched by before.
func TestLikeSegmentsMatchRegexp(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	pick := func(alpha []string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alpha[rng.IntN(len(alpha))])
		}
		return b.String()
	}
	for range 20000 {
		pat := pick([]string{"a", "b", "é", "%", "%", "!%"}, rng.IntN(8))
		s := pick([]string{"a", "b", "é", "%"}, rng.IntN(10))
		m, err := NewLikeMatcher(pat, '!', false)
		if err != nil {
			t.Fatal(err)
		}
		re := "(?s)^" + strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(pat, "!%", "\x00"), "%", ".*"), "\x00", "%") + "$"
		if got, want := m.Match(s), regexp.MustCompile(re).MatchString(s); got != want {
			t.Fatalf("%q LIKE %q = %v, want %v", s, pat, got, want)
		}
	}
}

// TestParseDecimalLongText: text over 1,000 characters is not a DECIMAL,
// refused at once: math/big reads n digits in n^2 time, and CAST of a 10 MB
// string of digits ran for minutes without a cancel stopping it. Up to
// the bound, long text still parses.
func TestParseDecimalLongText(t *testing.T) {
	dt := &arrow.Decimal128Type{Precision: 38, Scale: 2}
	done := make(chan error, 1)
	go func() {
		_, err := ParseDecimal("1"+strings.Repeat("0", 10_000_000), dt)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "over 1000 for a DECIMAL") {
			t.Fatalf("got %v, want ErrInvalidValue naming the bound", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still parsing after 10 s")
	}
	n, err := ParseDecimal(" 0."+strings.Repeat("0", 995)+"1 ", dt)
	if err != nil || n != (decimal128.Num{}) {
		t.Fatalf("1000 characters: %v, %v", n, err)
	}
}
