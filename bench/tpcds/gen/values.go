package gen

import "strings"

const (
	// julianEpoch is the Julian day number of 1970-01-01; date surrogate
	// keys (d_date_sk) are Julian day numbers, as in the specification.
	julianEpoch = 2440588
	// dateDimFirst is d_date_sk of the first date_dim row, 1900-01-02.
	dateDimFirst = 2415022
)

var (
	salesFirst = julian(1998, 1, 2)   // first sale date
	salesLast  = julian(2002, 12, 31) // last sale date
	invFirst   = julian(1998, 1, 1)   // first inventory week
)

// Salts for row-level draws shared by several columns.
const (
	saltNullRow = iota + 1
	saltAddr
	saltOrder
	saltLines
	saltDate
	saltTime
	saltCustomer
	saltCDemo
	saltHDemo
	saltAddrKey
	saltItem
	saltPrice
	saltShip
	saltReturn
	saltName
)

func ival(x int64) val     { return val{kind: kindInt, i: x} }
func sval(s string) val    { return val{kind: kindString, s: s} }
func jval(jd int64) val    { return val{kind: kindDate, i: jd - julianEpoch} } // a date from a Julian day
func dval(cents int64) val { return val{kind: kindDecimal, i: cents} }

var nullVal = val{null: true}

func pick(h uint64, list []string) string { return list[intn(h, int64(len(list)))] }

// daysFromCivil converts a proleptic Gregorian date to days since 1970-01-01.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civil converts days since 1970-01-01 to year, month, day.
func civil(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func julian(y, m, d int64) int64 { return daysFromCivil(y, m, d) + julianEpoch }

// bkey renders a business key the way dsdgen does: 16 upper-case letters,
// 'A' padding and the number in base 16 with digits A..P.
func bkey(n int64) string {
	var b [16]byte
	for i := range b {
		b[i] = 'A'
	}
	for i := 0; i < 8 && n > 0; i++ {
		b[8+i] = byte('A' + n&15)
		n >>= 4
	}
	return string(b[:])
}

// word builds a name from syllables, one per base-len(syl) digit of n.
func word(syl []string, n int64) string {
	var sb strings.Builder
	base := int64(len(syl))
	for {
		sb.WriteString(syl[n%base])
		n /= base
		if n == 0 {
			return sb.String()
		}
	}
}

// text returns a pseudo-sentence of between lo and hi words.
func text(h uint64, lo, hi int64) string {
	n := between(h, lo, hi)
	var sb strings.Builder
	s := stream{h}
	for i := int64(0); i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(pick(s.next(), words))
	}
	return sb.String()
}

// pct scales cents by a fraction, rounding to the nearest cent.
func pct(cents int64, f float64) int64 {
	x := float64(cents) * f
	if x < 0 {
		return -int64(-x + 0.5)
	}
	return int64(x + 0.5)
}

// Column constructors.

func colSK(r *rowCtx, _ uint64) val { return ival(r.row + 1) }
func colBK(r *rowCtx, _ uint64) val { return sval(bkey(r.bk + 1)) }
func colRowBK(r *rowCtx, _ uint64) val {
	return sval(bkey(r.row + 1))
}

func constS(s string) colFn { return func(*rowCtx, uint64) val { return sval(s) } }
func constI(x int64) colFn  { return func(*rowCtx, uint64) val { return ival(x) } }
func rangeI(lo, hi int64) colFn {
	return func(_ *rowCtx, h uint64) val { return ival(between(h, lo, hi)) }
}
func rangeDec(lo, hi int64) colFn {
	return func(_ *rowCtx, h uint64) val { return dval(between(h, lo, hi)) }
}
func pickS(list []string) colFn { return func(_ *rowCtx, h uint64) val { return sval(pick(h, list)) } }
func textCol(lo, hi int64) colFn {
	return func(_ *rowCtx, h uint64) val { return sval(text(h, lo, hi)) }
}
func yesNo(pYes float64) colFn {
	return func(_ *rowCtx, h uint64) val {
		if unit(h) < pYes {
			return sval("Y")
		}
		return sval("N")
	}
}
func nameCol(_ *rowCtx, h uint64) val {
	s := stream{h}
	return sval(pick(s.next(), firstNames) + " " + pick(s.next(), lastNames))
}

// dateSK returns a random date surrogate key in [lo, hi] (Julian days).
func dateSK(lo, hi int64) colFn {
	return func(_ *rowCtx, h uint64) val { return ival(between(h, lo, hi)) }
}
