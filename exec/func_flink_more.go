package exec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// More of Flink's built-in functions: hex and binary text, character
// sets, UUID, TRANSLATE, ELT, PARSE_URL and REGEXP_COUNT/REGEXP_SUBSTR.
func init() {
	register(strPredicate(strings.HasPrefix), "startswith")
	register(strPredicate(strings.HasSuffix), "endswith")
	register(resolveHex, "hex")
	register(resolveUnhex, "unhex")
	register(resolveBin, "bin")
	register(resolveEncode, "encode")
	register(resolveDecode, "decode")
	register(resolveUUID, "uuid")
	register(resolveTranslate, "translate")
	register(resolveElt, "elt")
	register(resolveParseURL, "parse_url")
	register(resolveRegexpCount, "regexp_count")
	register(resolveRegexpSubstr, "regexp_substr")
}

// resolveHex is HEX(integer), the 64-bit two's complement in upper-case
// hex digits (HEX(-1) is 16 F's), or HEX(string), its UTF-8 bytes.
func resolveHex(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	if vectorized.IsInteger(types[0]) {
		return &impl{ret: strType, args: []arrow.DataType{i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			v := vectorized.Values[int64](a[0])
			return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
				return strings.ToUpper(strconv.FormatUint(uint64(v[i]), 16)), nil
			})
		}}, nil
	}
	st, err := stringArgs(types)
	if err != nil {
		return nil, fmt.Errorf("needs an integer or a string")
	}
	return &impl{ret: strType, args: bytesArgs(types, st), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			return strings.ToUpper(hex.EncodeToString([]byte(vectorized.StringAt(a[0], i)))), nil
		})
	}}, nil
}

// resolveUnhex is UNHEX(string): the BYTES the hex digits spell; NULL for
// text that is not hex (an odd length is read with a leading 0).
func resolveUnhex(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 1, 1)
	if err != nil {
		return nil, err
	}
	return &impl{ret: arrow.BinaryTypes.Binary, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		b := array.NewBinaryBuilder(ec.Mem, arrow.BinaryTypes.Binary)
		defer b.Release()
		b.Reserve(n)
		for i := 0; i < n; i++ {
			if a[0].IsNull(i) {
				b.AppendNull()
				continue
			}
			s := vectorized.StringAt(a[0], i)
			if len(s)%2 == 1 {
				s = "0" + s
			}
			v, err := hex.DecodeString(s)
			if err != nil {
				b.AppendNull()
				continue
			}
			b.Append(v)
		}
		return b.NewArray(), nil
	}}, nil
}

// resolveBin is BIN(integer): binary digits, 64-bit two's complement for
// negative numbers.
func resolveBin(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	if !vectorized.IsInteger(types[0]) && types[0].ID() != arrow.NULL {
		return nil, fmt.Errorf("needs an integer")
	}
	return &impl{ret: strType, args: []arrow.DataType{i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		v := vectorized.Values[int64](a[0])
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) { return strconv.FormatUint(uint64(v[i]), 2), nil })
	}}, nil
}

// charset names the character sets ENCODE and DECODE know (Flink's list
// but UTF-16, whose byte order mark rules differ by platform).
func charset(name string) (string, error) {
	switch n := strings.ToUpper(strings.TrimSpace(name)); n {
	case "UTF-8", "UTF8", "US-ASCII", "ISO-8859-1":
		return n, nil
	}
	return "", fmt.Errorf("%w: character set %q (UTF-8, US-ASCII and ISO-8859-1 are supported)", vectorized.ErrInvalidValue, name)
}

// resolveEncode is ENCODE(string, charset): the string's bytes in charset;
// a character the charset lacks becomes '?', as Java's String.getBytes
// (Flink's) writes it.
func resolveEncode(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 2, 2)
	if err != nil {
		return nil, err
	}
	return &impl{ret: arrow.BinaryTypes.Binary, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		b := array.NewBinaryBuilder(ec.Mem, arrow.BinaryTypes.Binary)
		defer b.Release()
		b.Reserve(n)
		for i := 0; i < n; i++ {
			if vectorized.AnyNull(a, i) {
				b.AppendNull()
				continue
			}
			cs, err := charset(vectorized.StringAt(a[1], i))
			if err != nil {
				return nil, err
			}
			s := vectorized.StringAt(a[0], i)
			if cs == "UTF-8" || cs == "UTF8" {
				b.Append([]byte(s))
				continue
			}
			limit := rune(0x7f)
			if cs == "ISO-8859-1" {
				limit = 0xff
			}
			out := make([]byte, 0, len(s))
			for _, r := range s {
				if r > limit {
					r = '?'
				}
				out = append(out, byte(r))
			}
			b.Append(out)
		}
		return b.NewArray(), nil
	}}, nil
}

// resolveDecode is DECODE(bytes, charset): the text of bytes in charset;
// bytes that are not UTF-8 become U+FFFD, as in Flink.
// (Flink's DECODE; Oracle's DECODE(expr, search, result, ...) is a CASE.)
func resolveDecode(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	if types[0].ID() != arrow.BINARY && types[0].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument 1 must be BYTES")
	}
	if _, err := stringArgs(types[1:]); err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: []arrow.DataType{arrow.BinaryTypes.Binary, strType}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			cs, err := charset(vectorized.StringAt(a[1], i))
			if err != nil {
				return "", err
			}
			raw := vectorized.StringAt(a[0], i)
			switch cs {
			case "UTF-8", "UTF8":
				return vectorized.ValidUTF8(raw), nil
			case "US-ASCII":
				for k := 0; k < len(raw); k++ {
					if raw[k] > 0x7f {
						return "", fmt.Errorf("%w: byte %X is not US-ASCII", vectorized.ErrInvalidValue, raw[k])
					}
				}
			}
			var sb strings.Builder
			for k := 0; k < len(raw); k++ {
				sb.WriteRune(rune(raw[k]))
			}
			return sb.String(), nil
		})
	}}, nil
}

// resolveUUID is UUID(): a random (version 4) UUID per row.
func resolveUUID(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 0, 0); err != nil {
		return nil, err
	}
	return &impl{ret: strType, fn: func(_ context.Context, ec *Context, _ []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapStrings(ec.Mem, nil, n, func(int) (string, error) {
			var u [16]byte
			if _, err := rand.Read(u[:]); err != nil {
				return "", err
			}
			u[6] = u[6]&0x0f | 0x40
			u[8] = u[8]&0x3f | 0x80
			h := hex.EncodeToString(u[:])
			return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
		})
	}}, nil
}

// resolveTranslate is TRANSLATE(s, from, to): each character of s found in
// from becomes the character at the same place in to, or is dropped when
// to is shorter (Flink, Postgres, DuckDB). The first occurrence in from
// decides.
func resolveTranslate(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 3, 3)
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			from, to := []rune(vectorized.StringAt(a[1], i)), []rune(vectorized.StringAt(a[2], i))
			m := map[rune]rune{}
			for k, r := range from {
				if _, dup := m[r]; dup {
					continue
				}
				m[r] = -1
				if k < len(to) {
					m[r] = to[k]
				}
			}
			var sb strings.Builder
			for _, r := range vectorized.StringAt(a[0], i) {
				t, ok := m[r]
				switch {
				case !ok:
					sb.WriteRune(r)
				case t >= 0:
					sb.WriteRune(t)
				}
			}
			return sb.String(), nil
		})
	}}, nil
}

// resolveElt is ELT(k, e1, e2, ...): the k-th expression (from 1); NULL if
// k is NULL or out of range. The expressions share their common type.
func resolveElt(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) < 2 {
		return nil, fmt.Errorf("needs an index and at least one expression")
	}
	if !vectorized.IsInteger(types[0]) && types[0].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument 1 must be an integer")
	}
	t, err := commonArgs(types[1:])
	if err != nil {
		return nil, err
	}
	if t.ID() == arrow.NULL {
		t = strType
	}
	return &impl{ret: t, args: append([]arrow.DataType{i64Type}, repeatType(t, len(types)-1)...), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		k := vectorized.Values[int64](a[0])
		b := array.NewBuilder(ec.Mem, t)
		defer b.Release()
		b.Reserve(n)
		for i := 0; i < n; i++ {
			if a[0].IsNull(i) || k[i] < 1 || k[i] >= int64(len(a)) {
				b.AppendNull()
				continue
			}
			vectorized.AppendValue(b, a[k[i]], i)
		}
		return b.NewArray(), nil
	}}, nil
}

// resolveParseURL is PARSE_URL(url, part [, key]): part HOST, PATH, QUERY,
// REF, PROTOCOL, FILE, AUTHORITY or USERINFO of url, or with QUERY and a
// key that query parameter's value; NULL for what the URL lacks and for
// other parts.
func resolveParseURL(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 2, 3)
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return mapNullableStrings(ec, a, n, false, func(i int) (string, bool, error) {
			u, err := url.Parse(vectorized.StringAt(a[0], i))
			if err != nil {
				return "", false, nil
			}
			part := strings.ToUpper(vectorized.StringAt(a[1], i))
			if len(a) == 3 {
				if part != "QUERY" {
					return "", false, nil
				}
				vals, ok := u.Query()[vectorized.StringAt(a[2], i)]
				if !ok || len(vals) == 0 {
					return "", false, nil
				}
				return vals[0], true, nil
			}
			var s string
			switch part {
			case "HOST":
				s = u.Hostname()
			case "PATH":
				s = u.EscapedPath()
			case "QUERY":
				s = u.RawQuery
			case "REF":
				s = u.EscapedFragment()
			case "PROTOCOL":
				s = u.Scheme
			case "FILE":
				s = u.EscapedPath()
				if u.RawQuery != "" {
					s += "?" + u.RawQuery
				}
			case "AUTHORITY":
				s = u.Host
				if u.User != nil {
					s = u.User.String() + "@" + s
				}
			case "USERINFO":
				if u.User != nil {
					s = u.User.String()
				}
			default: // NULL, as in Flink
				return "", false, nil
			}
			return s, s != "", nil
		})
	}}, nil
}

// resolveRegexpCount is REGEXP_COUNT(s, pattern): how many times pattern
// matches s (non-overlapping).
func resolveRegexpCount(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 2, 2)
	if err != nil {
		return nil, err
	}
	return &impl{ret: i64Type, args: st, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		res := newRegexps(ctx, "REGEXP_COUNT", nil)
		return vectorized.MapInt64s(ec.Mem, a, n, func(i int) (int64, error) {
			re, err := res.get(vectorized.StringAt(a[1], i))
			if err != nil {
				return 0, err
			}
			s := vectorized.StringAt(a[0], i)
			if err := res.meter(re, s); err != nil {
				return 0, err
			}
			return int64(len(re.FindAllStringIndex(s, -1))), nil
		})
	}}, nil
}

// resolveRegexpSubstr is REGEXP_SUBSTR(s, pattern): the first match, NULL
// if none.
func resolveRegexpSubstr(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 2, 2)
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: st, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		res := newRegexps(ctx, "REGEXP_SUBSTR", nil)
		return mapNullableStrings(ec, a, n, false, func(i int) (string, bool, error) {
			re, err := res.get(vectorized.StringAt(a[1], i))
			if err != nil {
				return "", false, err
			}
			if err := res.meter(re, vectorized.StringAt(a[0], i)); err != nil {
				return "", false, err
			}
			loc := re.FindStringIndex(vectorized.StringAt(a[0], i))
			if loc == nil {
				return "", false, nil
			}
			return vectorized.StringAt(a[0], i)[loc[0]:loc[1]], true, nil
		})
	}}, nil
}
