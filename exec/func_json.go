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

// JSON_VALUE and JSON_QUERY in Flink's default forms (no RETURNING, NULL
// ON EMPTY and NULL ON ERROR): a path selects one value of a JSON text;
// JSON_VALUE returns a scalar as a string, JSON_QUERY an object or array
// as compact JSON, and either gives NULL where the path finds nothing,
// the text is not JSON, or the value is of the other kind.
func init() {
	register(jsonResolver(false), "json_value")
	register(jsonResolver(true), "json_query")
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

// jsonSelect returns the raw JSON the path selects, or false.
func jsonSelect(doc []byte, steps []jsonStep) (json.RawMessage, bool) {
	cur := json.RawMessage(doc)
	for _, st := range steps {
		if st.index < 0 {
			var obj map[string]json.RawMessage
			if json.Unmarshal(cur, &obj) != nil {
				return nil, false
			}
			v, ok := obj[st.key]
			if !ok {
				return nil, false
			}
			cur = v
			continue
		}
		var arr []json.RawMessage
		if json.Unmarshal(cur, &arr) != nil || st.index >= len(arr) {
			return nil, false
		}
		cur = arr[st.index]
	}
	if !json.Valid(cur) {
		return nil, false
	}
	return cur, true
}

func jsonResolver(query bool) resolver {
	return func(types []arrow.DataType, args []Expr) (*impl, error) {
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
		return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			paths := map[string][]jsonStep{}
			return mapNullableStrings(ec, a, n, false, func(i int) (string, bool, error) {
				p := vectorized.StringAt(a[1], i)
				steps, ok := paths[p]
				if !ok {
					var err error
					if steps, err = parseJSONPath(p); err != nil {
						return "", false, err
					}
					paths[p] = steps
				}
				v, ok := jsonSelect([]byte(vectorized.StringAt(a[0], i)), steps)
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
