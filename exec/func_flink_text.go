package exec

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // CONVERT_TZ must know every zone on machines without a zoneinfo directory
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// Flink's text built-ins that were missing: URL_ENCODE/URL_DECODE, PRINTF,
// SPLIT, STR_TO_MAP, REGEXP_INSTR, OVERLAY, CONVERT_TZ, JSON_EXISTS and
// RAND_INTEGER.
func init() {
	register(resolveURLEncode, "url_encode")
	register(resolveURLDecode, "url_decode")
	register(resolvePrintf, "printf")
	register(resolveSplit, "split")
	register(resolveStrToMap, "str_to_map")
	register(resolveRegexpInstr, "regexp_instr")
	register(resolveOverlay, "overlay")
	register(resolveConvertTZ, "convert_tz")
	register(resolveJSONExists, "json_exists")
	register(resolveRandInteger, "rand_integer")
}

// urlUnreserved are the bytes Java's URLEncoder (which Flink calls) keeps:
// letters, digits and ".-*_". A space becomes '+', everything else %XX of
// its UTF-8 bytes. Go's url.QueryEscape differs on '*' and '~'.
func urlUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '-' || c == '*' || c == '_'
}

func urlEncode(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case urlUnreserved(c):
			sb.WriteByte(c)
		case c == ' ':
			sb.WriteByte('+')
		default:
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}

// urlDecode is Java's URLDecoder: '+' is a space, %XX a byte; ok is false
// for a malformed escape, which Flink answers with NULL. Bytes that are not
// UTF-8 become U+FFFD, as Java's decoder replaces them.
func urlDecode(s string) (string, bool) {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b = append(b, ' ')
		case '%':
			if i+2 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b = append(b, byte(v))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return vectorized.ValidUTF8(string(b)), true
}

func resolveURLEncode(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 1, 1)
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			return urlEncode(vectorized.StringAt(a[0], i)), nil
		})
	}}, nil
}

func resolveURLDecode(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 1, 1)
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return mapNullableStrings(ec, a, n, false, func(i int) (string, bool, error) {
			s, ok := urlDecode(vectorized.StringAt(a[0], i))
			return s, ok, nil
		})
	}}, nil
}

// resolveSplit is SPLIT(s, delimiter): an ARRAY<STRING> of the pieces, with
// empty pieces kept; an empty delimiter splits into characters; an empty s
// gives an empty array; NULL if either argument is NULL (Flink 2.3).
func resolveSplit(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 2, 2)
	if err != nil {
		return nil, err
	}
	ret := arrow.ListOf(strType)
	return &impl{ret: ret, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		b := array.NewListBuilder(ec.Mem, strType)
		defer b.Release()
		vb := b.ValueBuilder().(*array.StringBuilder)
		for i := 0; i < n; i++ {
			if vectorized.AnyNull(a, i) {
				b.AppendNull()
				continue
			}
			b.Append(true)
			str := vectorized.StringAt(a[0], i)
			if str == "" {
				continue // Flink: no pieces at all, whatever the delimiter
			}
			for _, p := range strings.Split(str, vectorized.StringAt(a[1], i)) {
				vb.Append(p)
			}
		}
		return b.NewArray(), nil
	}}, nil
}

// resolveStrToMap is STR_TO_MAP(s [, listDelimiter, keyValueDelimiter]): a
// MAP<STRING, STRING> of s split into entries at listDelimiter (default
// ',') and each entry into key and value at keyValueDelimiter (default
// '='). Both delimiters are regular expressions, as in Flink; an entry
// without the delimiter has a NULL value, and a repeated key keeps its last
// value.
func resolveStrToMap(types []arrow.DataType, args []Expr) (*impl, error) {
	if len(types) != 1 && len(types) != 3 {
		return nil, fmt.Errorf("takes 1 or 3 arguments, got %d", len(types))
	}
	st, err := stringArgs(types)
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(types) && args != nil; i++ {
		if p, ok := literalString(args[i]); ok {
			if _, err := compileRegexp(p); err != nil {
				return nil, err
			}
		}
	}
	ret := arrow.MapOf(strType, strType)
	return &impl{ret: ret, args: st, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		res := newRegexps(ctx, "STR_TO_MAP", nil)
		b := array.NewMapBuilder(ec.Mem, strType, strType, false)
		defer b.Release()
		kb, ib := b.KeyBuilder().(*array.StringBuilder), b.ItemBuilder().(*array.StringBuilder)
		for i := 0; i < n; i++ {
			if vectorized.AnyNull(a, i) {
				b.AppendNull()
				continue
			}
			listSep, kvSep := ",", "="
			if len(a) == 3 {
				listSep, kvSep = vectorized.StringAt(a[1], i), vectorized.StringAt(a[2], i)
			}
			lre, err := res.get(listSep)
			if err != nil {
				return nil, err
			}
			kre, err := res.get(kvSep)
			if err != nil {
				return nil, err
			}
			s := vectorized.StringAt(a[0], i)
			if err := res.meter(lre, s); err != nil {
				return nil, err
			}
			var keys []string
			vals := map[string]*string{}
			for _, entry := range lre.Split(s, -1) {
				if err := res.meter(kre, entry); err != nil {
					return nil, err
				}
				kv := kre.Split(entry, 2)
				if _, seen := vals[kv[0]]; !seen {
					keys = append(keys, kv[0])
				}
				vals[kv[0]] = nil
				if len(kv) == 2 {
					vals[kv[0]] = &kv[1]
				}
			}
			b.Append(true)
			for _, k := range keys {
				kb.Append(k)
				if v := vals[k]; v != nil {
					ib.Append(*v)
				} else {
					ib.AppendNull()
				}
			}
		}
		return b.NewArray(), nil
	}}, nil
}

// resolveRegexpInstr is REGEXP_INSTR(s, regex): the 1-based character
// position of the first match, 0 without one.
func resolveRegexpInstr(types []arrow.DataType, args []Expr) (*impl, error) {
	st, err := wantStrings(types, 2, 2)
	if err != nil {
		return nil, err
	}
	var fixed *regexp.Regexp // a literal pattern, compiled (and checked) once
	if args != nil {
		if p, ok := literalString(args[1]); ok {
			if fixed, err = compileRegexp(p); err != nil {
				return nil, err
			}
		}
	}
	return &impl{ret: i32Type, args: st, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		res := newRegexps(ctx, "REGEXP_INSTR", fixed)
		return vectorized.MapFixed(ec.Mem, i32Type, a, n, func(i int) (int32, error) {
			re, err := res.get(vectorized.StringAt(a[1], i))
			if err != nil {
				return 0, err
			}
			s := vectorized.StringAt(a[0], i)
			if err := res.meter(re, s); err != nil {
				return 0, err
			}
			if loc := re.FindStringIndex(s); loc != nil {
				return int32(utf8.RuneCountInString(s[:loc[0]])) + 1, nil
			}
			return 0, nil
		})
	}}, nil
}

// resolveOverlay is OVERLAY(s PLACING r FROM pos [FOR len]): s with len
// characters from pos (1-based; len defaults to r's length) replaced by r.
func resolveOverlay(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 3, 4); err != nil {
		return nil, err
	}
	for i := 2; i < len(types); i++ {
		if !vectorized.IsInteger(types[i]) && types[i].ID() != arrow.NULL {
			return nil, fmt.Errorf("argument %d must be an integer, not %s", i+1, types[i])
		}
	}
	st, err := stringArgs(types[:2])
	if err != nil {
		return nil, err
	}
	argTypes := append(st, i64Type)
	if len(types) == 4 {
		argTypes = append(argTypes, i64Type)
	}
	return &impl{ret: strType, args: argTypes, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		pos := vectorized.Values[int64](a[2])
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			s, r := []rune(vectorized.StringAt(a[0], i)), vectorized.StringAt(a[1], i)
			length := int64(utf8.RuneCountInString(r))
			if len(a) == 4 {
				length = vectorized.Values[int64](a[3])[i]
			}
			p := pos[i]
			if p < 1 || length < 0 {
				return "", fmt.Errorf("%w: OVERLAY position %d and length %d (the position counts from 1, the length is not negative)", vectorized.ErrInvalidValue, p, length)
			}
			start := min(p-1, int64(len(s)))
			end := start + min(length, int64(len(s))-start) // no overflow for a huge length
			return string(s[:start]) + r + string(s[end:]), nil
		})
	}}, nil
}

// javaShortZones are the three-letter zone IDs Java's TimeZone (which
// Flink's CONVERT_TZ uses) accepts besides region names and GMT offsets.
var javaShortZones = map[string]string{
	"ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
	"ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
	"CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
	"EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
	"IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
	"NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
	"PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
	"EST": "-05:00", "MST": "-07:00", "HST": "-10:00",
}

var gmtOffset = regexp.MustCompile(`^(?:GMT|UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$`)

// zoneByID resolves a zone as Java's TimeZone does: a region name, a
// three-letter ID, GMT/UTC, or an offset such as GMT-08:00 or +8. Java falls
// back to GMT for an unknown ID; flightd reports it.
func zoneByID(id string) (*time.Location, error) {
	if z, ok := javaShortZones[id]; ok {
		id = z
	}
	switch id {
	case "GMT", "UTC", "Z", "UT":
		return time.UTC, nil
	}
	if m := gmtOffset.FindStringSubmatch(id); m != nil {
		h, _ := strconv.Atoi(m[2])
		mins, _ := strconv.Atoi(m[3] + "0")
		off := h*3600 + mins/10*60
		if h > 18 || mins/10 > 59 {
			return nil, fmt.Errorf("%w: time zone offset %q is out of range", vectorized.ErrInvalidValue, id)
		}
		if m[1] == "-" {
			off = -off
		}
		return time.FixedZone(id, off), nil
	}
	loc, err := time.LoadLocation(id)
	if err != nil || id == "" || id == "Local" {
		return nil, fmt.Errorf("%w: unknown time zone %q (a region such as 'America/Los_Angeles', a three-letter ID such as 'PST', or an offset such as 'GMT-08:00')", vectorized.ErrInvalidValue, id)
	}
	return loc, nil
}

// resolveConvertTZ is CONVERT_TZ(s, fromZone, toZone): the local time
// 'yyyy-MM-dd HH:mm:ss' s in fromZone as the local time in toZone, as a
// string of the same format.
func resolveConvertTZ(types []arrow.DataType, args []Expr) (*impl, error) {
	st, err := wantStrings(types, 3, 3)
	if err != nil {
		return nil, err
	}
	for i := 1; i < 3 && args != nil; i++ {
		if z, ok := literalString(args[i]); ok {
			if _, err := zoneByID(z); err != nil {
				return nil, err
			}
		}
	}
	const layout = "2006-01-02 15:04:05"
	return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		zones := map[string]*time.Location{}
		zone := func(id string) (*time.Location, error) {
			if z, ok := zones[id]; ok {
				return z, nil
			}
			z, err := zoneByID(id)
			zones[id] = z
			return z, err
		}
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			from, err := zone(vectorized.StringAt(a[1], i))
			if err != nil {
				return "", err
			}
			to, err := zone(vectorized.StringAt(a[2], i))
			if err != nil {
				return "", err
			}
			s := vectorized.StringAt(a[0], i)
			t, err := time.ParseInLocation(layout, s, from)
			if err != nil {
				return "", fmt.Errorf("%w: CONVERT_TZ of %q: want 'yyyy-MM-dd HH:mm:ss'", vectorized.ErrInvalidValue, s)
			}
			return t.In(to).Format(layout), nil
		})
	}}, nil
}

// resolveJSONExists is JSON_EXISTS(json, path): whether the path selects a
// value other than JSON null (as Flink: Calcite tests the selected object);
// FALSE for text that is not JSON (Flink's default FALSE ON ERROR).
func resolveJSONExists(types []arrow.DataType, args []Expr) (*impl, error) {
	st, err := jsonArgs(types, args)
	if err != nil {
		return nil, err
	}
	return &impl{ret: boolType, args: st, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		paths := newJSONPaths(ctx)
		return vectorized.MapBools(ec.Mem, a, n, func(i int) (bool, error) {
			v, found, err := paths.find([]byte(vectorized.StringAt(a[0], i)), vectorized.StringAt(a[1], i))
			return found && string(bytes.TrimSpace(v)) != "null", err
		})
	}}, nil
}

// resolveRandInteger is RAND_INTEGER(bound): a pseudorandom INT in
// [0, bound); RAND_INTEGER(seed, bound) is seededRandInteger.
func resolveRandInteger(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) == 2 {
		return seededRandInteger(types)
	}
	if err := wantArgs(types, 1, 2); err != nil {
		return nil, err
	}
	if !vectorized.IsInteger(types[0]) && types[0].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument 1 must be an integer, not %s", types[0])
	}
	return &impl{ret: i32Type, args: []arrow.DataType{i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		bound := vectorized.Values[int64](a[0])
		return vectorized.MapFixed(ec.Mem, i32Type, a, n, func(i int) (int32, error) {
			if bound[i] <= 0 || bound[i] > 1<<31-1 {
				return 0, fmt.Errorf("%w: RAND_INTEGER bound %d must be between 1 and %d", vectorized.ErrInvalidValue, bound[i], 1<<31-1)
			}
			return int32(rand.Int64N(bound[i])), nil
		})
	}}, nil
}
