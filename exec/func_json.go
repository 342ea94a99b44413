package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/vectorized"
)

// JSON_OBJECT and JSON_ARRAY build JSON text (below). JSON_VALUE and
// JSON_QUERY in Flink's default forms (no RETURNING, NULL
// ON EMPTY and NULL ON ERROR): a path selects one value of a JSON text;
// JSON_VALUE returns a scalar as a string, JSON_QUERY an object or array
// as compact JSON, and either gives NULL where the path finds nothing,
// the text is not JSON, or the value is of the other kind.
func init() {
	register(jsonResolver(false), "json_value")
	register(jsonResolver(true), "json_query")
	register(jsonObjectResolver(false), "json_object")
	register(jsonObjectResolver(true), "json_object_absent_on_null")
	register(jsonArrayResolver(true), "json_array")
	register(jsonArrayResolver(false), "json_array_null_on_null")
	register(strMap(jsonQuote), "json_quote")
	register(strMap(jsonUnquote), "json_unquote")
}

// jsonQuote is Flink's JSON_QUOTE: s as a JSON string literal, with '"',
// '\\' and '/' escaped and control characters written \b, \f, \n, \r,
// \t or \u00XX.
func jsonQuote(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\', '/':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&sb, `\u%04x`, r)
			} else {
				sb.WriteRune(r)
			}
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// jsonUnquote is Flink's JSON_UNQUOTE: the text of a JSON string literal,
// and anything else unchanged.
func jsonUnquote(s string) string {
	var v string
	if strings.HasPrefix(s, `"`) && json.Unmarshal([]byte(s), &v) == nil {
		return v
	}
	return s
}

// jsonStep is one step of a path: an object member or an array index.
type jsonStep struct {
	key   string
	index int // -1 for a member
}

// parseJSONPath reads the subset of SQL/JSON paths Flink users write:
// $, then .name, ."name", ['name'] and [n] steps (lax mode, the default).
func parseJSONPath(p string) ([]jsonStep, error) {
	s := strings.TrimSpace(p)
	s = strings.TrimPrefix(s, "lax ")
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("%w: JSON path %q must start with $", vectorized.ErrInvalidValue, p)
	}
	s = s[1:]
	var steps []jsonStep
	for s != "" {
		switch {
		case strings.HasPrefix(s, ".\""):
			end := strings.Index(s[2:], "\"")
			if end < 0 {
				return nil, fmt.Errorf("%w: JSON path %q: unterminated name", vectorized.ErrInvalidValue, p)
			}
			steps = append(steps, jsonStep{key: s[2 : 2+end], index: -1})
			s = s[3+end:]
		case s[0] == '.':
			end := strings.IndexAny(s[1:], ".[")
			if end < 0 {
				end = len(s) - 1
			}
			name := s[1 : 1+end]
			if name == "" {
				return nil, fmt.Errorf("%w: JSON path %q: empty member name", vectorized.ErrInvalidValue, p)
			}
			steps = append(steps, jsonStep{key: name, index: -1})
			s = s[1+end:]
		case s[0] == '[':
			end := strings.Index(s, "]")
			if end < 0 {
				return nil, fmt.Errorf("%w: JSON path %q: missing ]", vectorized.ErrInvalidValue, p)
			}
			in := strings.TrimSpace(s[1:end])
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				steps = append(steps, jsonStep{key: in[1 : len(in)-1], index: -1})
			} else {
				k, err := strconv.Atoi(in)
				if err != nil || k < 0 {
					return nil, fmt.Errorf("%w: JSON path %q: bad subscript [%s]", vectorized.ErrInvalidValue, p, in)
				}
				steps = append(steps, jsonStep{index: k})
			}
			s = s[end+1:]
		default:
			return nil, fmt.Errorf("%w: JSON path %q: unexpected %q", vectorized.ErrInvalidValue, p, s)
		}
	}
	return steps, nil
}

// maxJSONPathWork bounds the bytes one row's path decodes past eight
// passes over its document: each step decodes what the step before
// selected, so a path as deep as its document is quadratic (9,000 steps
// into a 90 KB document took 11 s of one row, which no cancel stopped).
// At the bound a row takes about half a second.
const maxJSONPathWork = 1 << 24

// jsonSelect returns the raw JSON the path selects, or false; work counts
// the bytes decoded, and an error is returned past maxJSONPathWork.
func jsonSelect(doc []byte, steps []jsonStep, work *int64) (json.RawMessage, bool, error) {
	cur := json.RawMessage(doc)
	limit := *work + 8*int64(len(doc)) + maxJSONPathWork
	for _, st := range steps {
		if *work += int64(len(cur)); *work > limit {
			return nil, false, fmt.Errorf("%w: a JSON path of %d steps into a document of %d bytes decodes more than %d bytes", vectorized.ErrTooLarge, len(steps), len(doc), limit)
		}
		if st.index < 0 {
			var obj map[string]json.RawMessage
			if json.Unmarshal(cur, &obj) != nil {
				return nil, false, nil
			}
			v, ok := obj[st.key]
			if !ok {
				return nil, false, nil
			}
			cur = v
			continue
		}
		var arr []json.RawMessage
		if json.Unmarshal(cur, &arr) != nil || st.index >= len(arr) {
			return nil, false, nil
		}
		cur = arr[st.index]
	}
	if !json.Valid(cur) {
		return nil, false, nil
	}
	return cur, true, nil
}

// jsonArgs checks the (json, path) arguments of JSON_VALUE, JSON_QUERY and
// JSON_EXISTS; a literal path must parse.
func jsonArgs(types []arrow.DataType, args []Expr) ([]arrow.DataType, error) {
	st, err := wantStrings(types, 2, 2)
	if err != nil {
		return nil, err
	}
	if args != nil {
		if p, ok := literalString(args[1]); ok {
			if _, err := parseJSONPath(p); err != nil {
				return nil, err
			}
		}
	}
	return st, nil
}

// jsonPaths selects paths in the documents of one batch: each distinct
// path is parsed once, and the bytes decoded are counted, so that a row
// past maxJSONPathWork fails and a batch of costly rows stops when the
// query is cancelled.
type jsonPaths struct {
	ctx             context.Context
	paths           map[string][]jsonStep
	work, checkedAt int64
}

func newJSONPaths(ctx context.Context) *jsonPaths {
	return &jsonPaths{ctx: ctx, paths: map[string][]jsonStep{}}
}

// find returns the raw JSON path selects in doc, or false.
func (j *jsonPaths) find(doc []byte, path string) (json.RawMessage, bool, error) {
	steps, ok := j.paths[path]
	if !ok {
		var err error
		if steps, err = parseJSONPath(path); err != nil {
			return nil, false, err
		}
		j.paths[path] = steps
	}
	v, found, err := jsonSelect(doc, steps, &j.work)
	if err == nil && j.work-j.checkedAt >= cancelCheckWork {
		j.checkedAt = j.work
		err = j.ctx.Err()
	}
	return v, found, err
}

func jsonResolver(query bool) resolver {
	return func(types []arrow.DataType, args []Expr) (*impl, error) {
		st, err := jsonArgs(types, args)
		if err != nil {
			return nil, err
		}
		return &impl{ret: strType, args: st, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			paths := newJSONPaths(ctx)
			return mapNullableStrings(ec, a, n, false, func(i int) (string, bool, error) {
				v, ok, err := paths.find([]byte(vectorized.StringAt(a[0], i)), vectorized.StringAt(a[1], i))
				if err != nil {
					return "", false, err
				}
				if !ok {
					return "", false, nil
				}
				v = bytes.TrimSpace(v)
				isContainer := v[0] == '{' || v[0] == '['
				switch {
				case query != isContainer, string(v) == "null":
					return "", false, nil
				case query:
					var out bytes.Buffer
					if json.Compact(&out, v) != nil {
						return "", false, nil
					}
					return out.String(), true, nil
				case v[0] == '"':
					var s string
					if json.Unmarshal(v, &s) != nil {
						return "", false, nil
					}
					return s, true, nil
				}
				return string(v), true, nil
			})
		}}, nil
	}
}

// jsonConstructors are the functions whose results JSON_OBJECT and
// JSON_ARRAY insert as JSON rather than as strings (the parser's names for
// the ON NULL variants included).
var jsonConstructors = map[string]bool{"json_object": true, "json_object_absent_on_null": true, "json_array": true, "json_array_null_on_null": true}

// rawJSONArgs reports, per argument, whether it is a JSON constructor call.
func rawJSONArgs(args []Expr) []bool {
	raw := make([]bool, len(args))
	for i, a := range args {
		c, ok := a.(*CallExpr)
		raw[i] = ok && jsonConstructors[c.Name]
	}
	return raw
}

// jsonText writes row i of a as a JSON value: numbers and booleans bare,
// JSON constructors' results as they are, everything else a string.
func jsonText(sb *strings.Builder, a arrow.Array, i int, raw bool) {
	switch {
	case a.IsNull(i):
		sb.WriteString("null")
	case raw:
		sb.WriteString(vectorized.StringAt(a, i))
	case a.DataType().ID() == arrow.BOOL:
		sb.WriteString(vectorized.FormatValue(a, i))
	case vectorized.IsInteger(a.DataType()) || a.DataType().ID() == arrow.DECIMAL128:
		sb.WriteString(vectorized.FormatValue(a, i))
	case vectorized.IsFloat(a.DataType()):
		s := vectorized.CastString(a, i)
		if _, err := strconv.ParseFloat(s, 64); err != nil || strings.ContainsAny(s, "IN") {
			jsonString(sb, s) // NaN and infinities are not JSON numbers
			return
		}
		sb.WriteString(jsonDouble(s))
	case vectorized.IsString(a.DataType()):
		jsonString(sb, vectorized.StringAt(a, i))
	default:
		jsonString(sb, vectorized.FormatValue(a, i))
	}
}

// jsonDouble writes a double, given as Java writes it (Double.toString:
// 2.0, 1.0E20, 1.5E-7), as Flink 2.3 does in JSON: as Java's BigDecimal of
// that text prints itself (2.0, 1.0E+20, 1.5E-7, and 1.23456789E8 as
// 123456789): scientific notation, with a signed exponent, where the
// number's scale is negative or its adjusted exponent below -6.
func jsonDouble(s string) string {
	mant, exp, ok := strings.Cut(s, "E")
	if !ok {
		return s
	}
	e, err := strconv.Atoi(exp)
	if err != nil {
		return s
	}
	sign := ""
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		digits = "0"
	}
	scale := len(frac) - e
	adjusted := len(digits) - 1 - scale
	if scale >= 0 && adjusted >= -6 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		if scale == 0 {
			return sign + digits
		}
		return sign + digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	coef := digits[:1]
	if len(digits) > 1 {
		coef += "." + digits[1:]
	}
	if adjusted >= 0 {
		return sign + coef + "E+" + strconv.Itoa(adjusted)
	}
	return sign + coef + "E" + strconv.Itoa(adjusted)
}

// jsonString writes s quoted, without escaping <, > and & as encoding/json
// does by default.
func jsonString(sb *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	sb.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// jsonObjectResolver is JSON_OBJECT(k1, v1, ...): NULL values written as
// null, or left out when absentOnNull. A NULL key is an error.
func jsonObjectResolver(absentOnNull bool) resolver {
	return func(types []arrow.DataType, args []Expr) (*impl, error) {
		if len(types)%2 != 0 {
			return nil, fmt.Errorf("needs key/value pairs")
		}
		for i := 0; i < len(types); i += 2 {
			if !vectorized.IsString(types[i]) && types[i].ID() != arrow.NULL {
				return nil, fmt.Errorf("key %d must be a string, not %s", i/2+1, types[i])
			}
		}
		raw := rawJSONArgs(args)
		return &impl{ret: strType, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			var sb strings.Builder
			return vectorized.MapStrings(ec.Mem, nil, n, func(i int) (string, error) {
				sb.Reset()
				sb.WriteByte('{')
				first := true
				for k := 0; k < len(a); k += 2 {
					if a[k].IsNull(i) {
						return "", fmt.Errorf("%w: JSON_OBJECT key %d is NULL", vectorized.ErrInvalidValue, k/2+1)
					}
					if absentOnNull && a[k+1].IsNull(i) {
						continue
					}
					if !first {
						sb.WriteByte(',')
					}
					first = false
					jsonString(&sb, vectorized.StringAt(a[k], i))
					sb.WriteByte(':')
					jsonText(&sb, a[k+1], i, len(raw) > k+1 && raw[k+1])
					if err := vectorized.CheckComputedString("JSON_OBJECT", int64(sb.Len())); err != nil {
						return "", err
					}
				}
				sb.WriteByte('}')
				return sb.String(), nil
			})
		}}, nil
	}
}

// jsonArrayResolver is JSON_ARRAY(v, ...): NULL elements left out when
// absentOnNull (the default), else written as null.
func jsonArrayResolver(absentOnNull bool) resolver {
	return func(_ []arrow.DataType, args []Expr) (*impl, error) {
		raw := rawJSONArgs(args)
		return &impl{ret: strType, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			var sb strings.Builder
			return vectorized.MapStrings(ec.Mem, nil, n, func(i int) (string, error) {
				sb.Reset()
				sb.WriteByte('[')
				first := true
				for k, x := range a {
					if absentOnNull && x.IsNull(i) {
						continue
					}
					if !first {
						sb.WriteByte(',')
					}
					first = false
					jsonText(&sb, x, i, len(raw) > k && raw[k])
					// Checked as it grows: the values of many arguments
					// can make a string far larger than any of them.
					if err := vectorized.CheckComputedString("JSON_ARRAY", int64(sb.Len())); err != nil {
						return "", err
					}
				}
				sb.WriteByte(']')
				return sb.String(), nil
			})
		}}, nil
	}
}
