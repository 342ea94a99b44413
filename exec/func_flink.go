package exec

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// Flink SQL built-in functions (Flink's "System (Built-in) Functions"),
// with Flink's NULL handling: NULL in, NULL out, unless a function says
// otherwise.
func init() {
	register(resolveConcatWS, "concat_ws")
	register(resolveSplitIndex, "split_index")
	register(hashResolver(md5.New), "md5")
	register(hashResolver(sha1.New), "sha1")
	register(hashResolver(sha256.New224), "sha224")
	register(hashResolver(sha256.New), "sha256")
	register(hashResolver(sha512.New384), "sha384")
	register(hashResolver(sha512.New), "sha512")
	register(resolveSHA2, "sha2")
	register(resolveToTimestampLTZ, "to_timestamp_ltz")
	register(floatFunc(func(x float64) (float64, error) { return math.Sin(x), nil }), "sin")
	register(floatFunc(func(x float64) (float64, error) { return math.Cos(x), nil }), "cos")
	register(floatFunc(func(x float64) (float64, error) { return math.Tan(x), nil }), "tan")
	register(floatFunc(func(x float64) (float64, error) { return 1 / math.Tan(x), nil }), "cot")
	register(floatFunc(func(x float64) (float64, error) { return math.Asin(x), nil }), "asin")
	register(floatFunc(func(x float64) (float64, error) { return math.Acos(x), nil }), "acos")
	register(floatFunc(func(x float64) (float64, error) { return math.Atan(x), nil }), "atan")
	register(floatFunc(func(x float64) (float64, error) { return math.Sinh(x), nil }), "sinh")
	register(floatFunc(func(x float64) (float64, error) { return math.Cosh(x), nil }), "cosh")
	register(floatFunc(func(x float64) (float64, error) { return math.Tanh(x), nil }), "tanh")
	register(floatFunc(func(x float64) (float64, error) { return x * 180 / math.Pi, nil }), "degrees")
	register(floatFunc(func(x float64) (float64, error) { return x * math.Pi / 180, nil }), "radians")
	register(floatFunc(func(x float64) (float64, error) { return math.Log2(x), nil }), "log2")
	register(resolveLog, "log")
	register(resolveAtan2, "atan2")
	register(constFloat(math.Pi), "pi")
	register(constFloat(math.E), "e")
	register(strIntResult(func(s string) int64 {
		if s == "" {
			return 0
		}
		return int64(int8(s[0])) // Flink's: the first UTF-8 byte, signed
	}), "ascii")
	register(resolveChr, "chr")
	register(resolveLocate, "locate")
	register(resolveInstr, "instr")
	register(resolveToBase64, "to_base64")
	register(strErrMap(func(s string) (string, error) {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", fmt.Errorf("%w: from_base64: %q is not base64", vectorized.ErrInvalidValue, s)
		}
		return vectorized.ValidUTF8(string(b)), nil // Flink's FROM_BASE64 is text
	}), "from_base64")
	register(strPredicateOf(func(s string) bool {
		return s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) < 0
	}), "is_alpha")
	register(strPredicateOf(func(s string) bool {
		return s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) }) < 0
	}), "is_digit")
	register(strPredicateOf(isDecimalText), "is_decimal")
}

// resolveLog is LOG(x), the natural logarithm, or LOG(base, x). As in
// Flink (Java's Math.log), non-positive arguments give -Infinity or NaN
// rather than an error, and base 1 Infinity.
func resolveLog(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantNumbers(types, 1, 2); err != nil {
		return nil, err
	}
	return &impl{ret: f64Type, args: repeatType(f64Type, len(types)), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		if len(a) == 1 {
			return vectorized.MapFloat(ec.Mem, a[0], func(x float64) (float64, error) { return math.Log(x), nil })
		}
		base, x := vectorized.Values[float64](a[0]), vectorized.Values[float64](a[1])
		return mapFloats(ec, a, n, func(i int) (float64, error) { return math.Log(x[i]) / math.Log(base[i]), nil })
	}}, nil
}

func resolveAtan2(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantNumbers(types, 2, 2); err != nil {
		return nil, err
	}
	return &impl{ret: f64Type, args: repeatType(f64Type, 2), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		y, x := vectorized.Values[float64](a[0]), vectorized.Values[float64](a[1])
		return mapFloats(ec, a, n, func(i int) (float64, error) { return math.Atan2(y[i], x[i]), nil })
	}}, nil
}

func wantNumbers(types []arrow.DataType, lo, hi int) error {
	if err := wantArgs(types, lo, hi); err != nil {
		return err
	}
	for i, t := range types {
		if !isNumeric(t) && t.ID() != arrow.NULL {
			return fmt.Errorf("argument %d must be a number, not %s", i+1, t)
		}
	}
	return nil
}

// mapFloats computes a DOUBLE per row, NULL where an argument is.
func mapFloats(ec *Context, args []arrow.Array, n int, f func(i int) (float64, error)) (arrow.Array, error) {
	v := vectorized.AndValidity(ec.Mem, n, args...)
	out := vectorized.NewFixedOut[float64](ec.Mem, n)
	for i := 0; i < n; i++ {
		if !v.IsValid(i) {
			continue
		}
		x, err := f(i)
		if err != nil {
			out.Release()
			v.Release()
			return nil, err
		}
		out.Vals[i] = x
	}
	return out.Finish(f64Type, v.Buf, v.Nulls), nil
}

func constFloat(x float64) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if err := wantArgs(types, 0, 0); err != nil {
			return nil, err
		}
		return &impl{ret: f64Type, fn: func(_ context.Context, ec *Context, _ []arrow.Array, n int) (arrow.Array, error) {
			out := vectorized.NewFixedOut[float64](ec.Mem, n)
			for i := range out.Vals {
				out.Vals[i] = x
			}
			return out.Finish(f64Type, nil, 0), nil
		}}, nil
	}
}

// mapNullableStrings computes a string or NULL (ok false) per row; rows
// where an argument is NULL are NULL unless keepNulls.
func mapNullableStrings(ec *Context, args []arrow.Array, n int, keepNulls bool, f func(i int) (string, bool, error)) (arrow.Array, error) {
	b := array.NewStringBuilder(ec.Mem)
	defer b.Release()
	b.Reserve(n)
	sizes := vectorized.ComputedStrings{Rows: n}
	for i := 0; i < n; i++ {
		if !keepNulls && vectorized.AnyNull(args, i) {
			b.AppendNull()
			continue
		}
		s, ok, err := f(i)
		switch {
		case err != nil:
			return nil, err
		case ok:
			if err := sizes.Add(len(s)); err != nil {
				return nil, err
			}
			b.Append(s)
		default:
			b.AppendNull()
		}
	}
	return b.NewArray(), nil
}

// writeBounded appends s to sb unless that passes
// vectorized.MaxComputedString: a function joining strings checks as it
// goes, since its result can be far larger than its arguments (a long
// separator between many short strings).
func writeBounded(sb *strings.Builder, fn, s string) error {
	if err := vectorized.CheckComputedString(fn, int64(sb.Len())+int64(len(s))); err != nil {
		return err
	}
	sb.WriteString(s)
	return nil
}

// resolveConcatWS is CONCAT_WS(sep, s1, ...): NULL if sep is NULL, NULL
// arguments skipped (Flink, MySQL, DuckDB).
func resolveConcatWS(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) < 1 {
		return nil, fmt.Errorf("needs a separator")
	}
	for i, t := range types {
		if !vectorized.CanCast(t, strType) {
			return nil, fmt.Errorf("argument %d: cannot concatenate %s", i+1, t)
		}
	}
	return &impl{ret: strType, args: repeatType(strType, len(types)), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		var sb strings.Builder
		return mapNullableStrings(ec, a, n, true, func(i int) (string, bool, error) {
			if a[0].IsNull(i) {
				return "", false, nil
			}
			sep := vectorized.StringAt(a[0], i)
			sb.Reset()
			first := true
			for _, x := range a[1:] {
				if x.IsNull(i) {
					continue
				}
				if !first {
					if err := writeBounded(&sb, "CONCAT_WS", sep); err != nil {
						return "", false, err
					}
				}
				first = false
				if err := writeBounded(&sb, "CONCAT_WS", vectorized.StringAt(x, i)); err != nil {
					return "", false, err
				}
			}
			return sb.String(), true, nil
		})
	}}, nil
}

// resolveSplitIndex is SPLIT_INDEX(s, sep, k): the k-th (from 0) piece of
// s split at sep; NULL if k is negative or past the last piece.
func resolveSplitIndex(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 3, 3); err != nil {
		return nil, err
	}
	if _, err := stringArgs(types[:2]); err != nil {
		return nil, err
	}
	if !vectorized.IsInteger(types[2]) && types[2].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument 3 must be an integer")
	}
	return &impl{ret: strType, args: []arrow.DataType{strType, strType, i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		k := vectorized.Values[int64](a[2])
		return mapNullableStrings(ec, a, n, false, func(i int) (string, bool, error) {
			s, sep := vectorized.StringAt(a[0], i), vectorized.StringAt(a[1], i)
			piece, ok := splitPiece(s, sep, k[i])
			return piece, ok, nil
		})
	}}, nil
}

// splitPiece is the k-th (from 0) piece of s split at sep, as
// strings.Split would give it, found without building the pieces: a
// slice of them per row was most of SPLIT_INDEX's cost. An empty sep
// does not split.
func splitPiece(s, sep string, k int64) (string, bool) {
	if k < 0 || (sep == "" && k > 0) {
		return "", false
	}
	if sep == "" {
		return s, true
	}
	for ; k > 0; k-- {
		j := strings.Index(s, sep)
		if j < 0 {
			return "", false
		}
		s = s[j+len(sep):]
	}
	if j := strings.Index(s, sep); j >= 0 {
		s = s[:j]
	}
	return s, true
}

// hashResolver is a hash of a string or binary value as lowercase hex.
func hashResolver(h func() hash.Hash) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		st, err := wantStrings(types, 1, 1)
		if err != nil {
			return nil, err
		}
		return &impl{ret: strType, args: bytesArgs(types, st), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
				return hexHash(h(), vectorized.StringAt(a[0], i)), nil
			})
		}}, nil
	}
}

// resolveToBase64 is TO_BASE64(s): the base64 of a string's UTF-8 bytes,
// or of BYTES as they are.
func resolveToBase64(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 1, 1)
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: bytesArgs(types, st), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			return base64.StdEncoding.EncodeToString([]byte(vectorized.StringAt(a[0], i))), nil
		})
	}}, nil
}

// bytesArgs keeps binary arguments binary: the function reads their
// bytes (a cast to STRING would replace those that are not UTF-8).
func bytesArgs(types, st []arrow.DataType) []arrow.DataType {
	if types[0].ID() == arrow.BINARY {
		st[0] = nil
	}
	return st
}

func hexHash(h hash.Hash, s string) string {
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil))
}

// resolveSHA2 is SHA2(s, bits), bits one of 224, 256, 384 or 512; NULL if
// either argument is.
func resolveSHA2(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	st, err := stringArgs(types[:1])
	if err != nil {
		return nil, err
	}
	if !vectorized.IsInteger(types[1]) && types[1].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument 2 must be the hash length 224, 256, 384 or 512")
	}
	return &impl{ret: strType, args: append(bytesArgs(types, st), i64Type), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		bits := vectorized.Values[int64](a[1])
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			h, ok := map[int64]func() hash.Hash{224: sha256.New224, 256: sha256.New, 384: sha512.New384, 512: sha512.New}[bits[i]]
			if !ok {
				return "", fmt.Errorf("%w: sha2 hash length %d (use 224, 256, 384 or 512)", vectorized.ErrInvalidValue, bits[i])
			}
			return hexHash(h(), vectorized.StringAt(a[0], i)), nil
		})
	}}, nil
}

// timestampLTZ is TIMESTAMP_LTZ(3), TO_TIMESTAMP_LTZ's type by default.
var timestampLTZ = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// resolveToTimestampLTZ is TO_TIMESTAMP_LTZ(epoch [, precision]), epoch
// in units of 10^-precision seconds (precision 0 to 3, 3 by default), or
// TO_TIMESTAMP_LTZ(string [, format]) read in UTC. Flink also takes
// precisions up to 9 and types the result TIMESTAMP_LTZ(precision); here
// the result type cannot depend on the argument's value.
func resolveToTimestampLTZ(types []arrow.DataType, args []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 2); err != nil {
		return nil, err
	}
	if vectorized.IsString(types[0]) {
		return toTemporal(timestampLTZ)(types, args)
	}
	if !isNumeric(types[0]) && types[0].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument 1 must be a number of seconds or milliseconds since the epoch, or a string")
	}
	if len(types) == 2 && !vectorized.IsInteger(types[1]) && types[1].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument 2 must be the precision, 0 to 3")
	}
	// msPer is the milliseconds in one unit of the argument at row i.
	msPer := func(a []arrow.Array, i int) (int64, error) {
		if len(a) < 2 {
			return 1, nil
		}
		p := vectorized.Values[int64](a[1])[i]
		if p < 0 || p > 3 {
			return 0, fmt.Errorf("%w: to_timestamp_ltz precision %d (use 0 to 3)", vectorized.ErrInvalidValue, p)
		}
		return int64(math.Pow10(3 - int(p))), nil
	}
	if vectorized.IsInteger(types[0]) || types[0].ID() == arrow.NULL {
		return &impl{ret: timestampLTZ, args: []arrow.DataType{i64Type, i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			epoch := vectorized.Values[int64](a[0])
			return vectorized.MapFixed[int64](ec.Mem, timestampLTZ, a, n, func(i int) (int64, error) {
				m, err := msPer(a, i)
				if err != nil {
					return 0, err
				}
				if epoch[i] > math.MaxInt64/m || epoch[i] < math.MinInt64/m {
					return 0, fmt.Errorf("%w: to_timestamp_ltz(%d)", vectorized.ErrDateRange, epoch[i])
				}
				return epoch[i] * m, vectorized.CheckTimestamp(epoch[i]*m, arrow.Millisecond)
			})
		}}, nil
	}
	return &impl{ret: timestampLTZ, args: []arrow.DataType{f64Type, i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		epoch := vectorized.Values[float64](a[0])
		return vectorized.MapFixed[int64](ec.Mem, timestampLTZ, a, n, func(i int) (int64, error) {
			m, err := msPer(a, i)
			if err != nil {
				return 0, err
			}
			ms := math.Trunc(epoch[i] * float64(m))
			if math.IsNaN(ms) || math.Abs(ms) >= math.MaxInt64 {
				return 0, fmt.Errorf("%w: to_timestamp_ltz(%v)", vectorized.ErrDateRange, epoch[i])
			}
			return int64(ms), vectorized.CheckTimestamp(int64(ms), arrow.Millisecond)
		})
	}}, nil
}

// strIntResult is f(string) -> BIGINT.
func strIntResult(f func(string) int64) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		st, err := wantStrings(types, 1, 1)
		if err != nil {
			return nil, err
		}
		return &impl{ret: i64Type, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			return vectorized.MapInt64s(ec.Mem, a, n, func(i int) (int64, error) { return f(vectorized.StringAt(a[0], i)), nil })
		}}, nil
	}
}

// strErrMap is f(string) -> string that may fail.
func strErrMap(f func(string) (string, error)) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		st, err := wantStrings(types, 1, 1)
		if err != nil {
			return nil, err
		}
		return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) { return f(vectorized.StringAt(a[0], i)) })
		}}, nil
	}
}

// strPredicateOf is f(string) -> BOOLEAN; Flink's IS_ALPHA, IS_DIGIT and
// IS_DECIMAL are false, not NULL, for NULL.
func strPredicateOf(f func(string) bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		st, err := wantStrings(types, 1, 1)
		if err != nil {
			return nil, err
		}
		return &impl{ret: boolType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			vals := make([]bool, n)
			for i := range vals {
				vals[i] = a[0].IsValid(i) && f(vectorized.StringAt(a[0], i))
			}
			return vectorized.BoolsToArray(ec.Mem, vals, nil), nil
		}}, nil
	}
}

// isDecimalText reports whether s reads as a number (Flink's IS_DECIMAL:
// surrounding spaces, a sign, an exponent, NaN and Infinity allowed).
func isDecimalText(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// resolveChr is Flink's CHR(n): the character of code n mod 256 (Latin-1),
// the empty string for a negative n.
func resolveChr(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	if !vectorized.IsInteger(types[0]) && types[0].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument must be an integer")
	}
	return &impl{ret: strType, args: []arrow.DataType{i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		c := vectorized.Values[int64](a[0])
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			if c[i] < 0 {
				return "", nil
			}
			return string(rune(c[i] & 0xff)), nil
		})
	}}, nil
}

// resolveLocate is LOCATE(needle, haystack [, from]): the 1-based
// position of needle in haystack at or after character from, 0 if absent.
func resolveLocate(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 3); err != nil {
		return nil, err
	}
	st, err := stringArgs(types[:2])
	if err != nil {
		return nil, err
	}
	if len(types) == 3 {
		if !vectorized.IsInteger(types[2]) && types[2].ID() != arrow.NULL {
			return nil, fmt.Errorf("argument 3 must be an integer")
		}
		st = append(st, i64Type)
	}
	// INT as in Flink.
	return &impl{ret: i32Type, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapFixed(ec.Mem, i32Type, a, n, func(i int) (int32, error) {
			from := int64(1)
			if len(a) == 3 {
				from = vectorized.Values[int64](a[2])[i]
			}
			return int32(runeIndex(vectorized.StringAt(a[1], i), vectorized.StringAt(a[0], i), from)), nil
		})
	}}, nil
}

// resolveInstr is INSTR(haystack, needle): LOCATE with the arguments the
// other way round.
func resolveInstr(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 2, 2)
	if err != nil {
		return nil, err
	}
	return &impl{ret: i32Type, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapFixed(ec.Mem, i32Type, a, n, func(i int) (int32, error) {
			return int32(runeIndex(vectorized.StringAt(a[0], i), vectorized.StringAt(a[1], i), 1)), nil
		})
	}}, nil
}

// runeIndex is the 1-based character position of needle in s at or after
// character from (from 1 when from < 1, as Flink; 0: absent).
func runeIndex(s, needle string, from int64) int64 {
	from = max(from, 1)
	r := []rune(s)
	if from-1 > int64(len(r)) {
		return 0
	}
	k := strings.Index(string(r[from-1:]), needle)
	if k < 0 {
		return 0
	}
	return from + int64(utf8.RuneCountInString(string(r[from-1:])[:k]))
}
