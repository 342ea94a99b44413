package vectorized

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// CastString renders non-NULL a[i] as CAST(.. AS STRING) does in Flink,
// where that differs from FormatValue: floats as Java's Double.toString
// and Float.toString, timestamps with as many fractional digits as their
// precision and, with a local time zone, in the session's zone (UTC)
// without an offset.
func CastString(a arrow.Array, i int) string {
	switch arr := a.(type) {
	case *array.Boolean:
		// Flink writes TRUE and FALSE.
		if arr.Value(i) {
			return "TRUE"
		}
		return "FALSE"
	case *array.Float64:
		return javaFloat(arr.Value(i), 64)
	case *array.Float32:
		return javaFloat(float64(arr.Value(i)), 32)
	case *array.Timestamp:
		unit := arr.DataType().(*arrow.TimestampType).Unit
		t := TimestampToTime(int64(arr.Value(i)), unit)
		digits := [...]int{0, 3, 6, 9}[unit]
		if digits == 0 {
			return t.Format("2006-01-02 15:04:05")
		}
		return t.Format("2006-01-02 15:04:05." + strings.Repeat("0", digits))
	case *array.Binary:
		return ValidUTF8(string(arr.Value(i)))
	}
	return FormatValue(a, i)
}

// ValidUTF8 is s with each byte that is not part of a UTF-8 character
// replaced by U+FFFD, as Java's decoder (and so Flink) reads bytes as
// text: a STRING holds UTF-8 only, which clients decode (pyarrow fails on
// anything else).
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}

// javaFloat formats f (of bits 32 or 64) as Java does: plain decimals
// with at least one fractional digit for magnitudes in [1e-3, 1e7),
// otherwise d.dddE[-]n; NaN, Infinity and -Infinity spelled out.
func javaFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if abs := math.Abs(f); abs == 0 || (abs >= 1e-3 && abs < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, bits)
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(n)
}
