package exec

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

func init() {
	register(likeResolver(false, false), "like")
	register(likeResolver(true, false), "not_like")
	register(likeResolver(false, true), "ilike")
	register(likeResolver(true, true), "not_ilike")
	register(resolveSubstr, "substr", "substring")
	register(strMap(strings.ToUpper), "upper")
	register(strMap(strings.ToLower), "lower")
	register(trimResolver(true, true), "trim", "btrim")
	register(trimResolver(true, false), "ltrim")
	register(trimResolver(false, true), "rtrim")
	register(resolveConcat, "concat")
	register(resolveLength, "length", "char_length", "character_length")
	register(resolveReplace, "replace")
	register(resolveRegexpLike, "regexp_like")
	// POSITION(sub IN s) binds as position(sub, s); strpos(s, sub) takes
	// them the other way round, as in Postgres and DuckDB.
	register(positionResolver(false), "position")
	register(positionResolver(true), "strpos")
}

// stringArgs checks that the arguments are strings (or NULL) and returns
// them all as string.
func stringArgs(types []arrow.DataType) ([]arrow.DataType, error) {
	out := make([]arrow.DataType, len(types))
	for i, t := range types {
		if !vectorized.IsString(t) && t.ID() != arrow.NULL && t.ID() != arrow.BINARY {
			return nil, fmt.Errorf("argument %d must be a string, not %s", i+1, t)
		}
		out[i] = strType
	}
	return out, nil
}

// wantStrings checks that there are lo to hi arguments, all strings, and
// returns the types they are cast to.
func wantStrings(types []arrow.DataType, lo, hi int) ([]arrow.DataType, error) {
	if err := wantArgs(types, lo, hi); err != nil {
		return nil, err
	}
	return stringArgs(types)
}

func likeResolver(negate, ci bool) resolver {
	return func(types []arrow.DataType, args []Expr) (*impl, error) {
		st, err := wantStrings(types, 2, 3)
		if err != nil {
			return nil, err
		}
		escOf := func(s string) (rune, error) {
			if utf8.RuneCountInString(s) != 1 {
				return 0, fmt.Errorf("%w: LIKE escape must be one character, got %q", vectorized.ErrInvalidValue, s)
			}
			r, _ := utf8.DecodeRuneInString(s)
			return r, nil
		}
		// A literal pattern is compiled once.
		var fixed *vectorized.LikeMatcher
		if args != nil {
			pat, ok := literalString(args[1])
			esc, eok := rune(0), true
			if len(args) == 3 {
				var s string
				if s, eok = literalString(args[2]); eok {
					if esc, err = escOf(s); err != nil {
						return nil, err
					}
				}
			}
			if ok && eok {
				if fixed, err = vectorized.NewLikeMatcher(pat, esc, ci); err != nil {
					return nil, err
				}
			}
		}
		fn := "LIKE"
		if ci {
			fn = "ILIKE"
		}
		return &impl{ret: boolType, args: st, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			cache := map[[2]string]*vectorized.LikeMatcher{}
			res := newRegexps(ctx, fn, nil)
			return vectorized.MapBools(ec.Mem, a, n, func(i int) (bool, error) {
				m := fixed
				if m == nil {
					key := [2]string{vectorized.StringAt(a[1], i), ""}
					esc := rune(0)
					if len(a) == 3 {
						key[1] = vectorized.StringAt(a[2], i)
						var err error
						if esc, err = escOf(key[1]); err != nil {
							return false, err
						}
					}
					if m = cache[key]; m == nil {
						var err error
						if m, err = vectorized.NewLikeMatcher(key[0], esc, ci); err != nil {
							return false, err
						}
						cache[key] = m
					}
				}
				s := vectorized.StringAt(a[0], i)
				if insts := m.Insts(); insts > 0 {
					if err := res.spend(len(s), insts); err != nil {
						return false, err
					}
				}
				return m.Match(s) != negate, nil
			})
		}}, nil
	}
}

func resolveSubstr(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 3); err != nil {
		return nil, err
	}
	if _, err := stringArgs(types[:1]); err != nil {
		return nil, err
	}
	for _, t := range types[1:] {
		if !vectorized.IsInteger(t) && t.ID() != arrow.NULL {
			return nil, fmt.Errorf("start and length must be integers")
		}
	}
	args := []arrow.DataType{strType, i64Type, i64Type}[:len(types)]
	return &impl{ret: strType, args: args, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		start := a[1].(*array.Int64)
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			if len(a) == 3 {
				return vectorized.Substr(vectorized.StringAt(a[0], i), start.Value(i), a[2].(*array.Int64).Value(i), true)
			}
			return vectorized.Substr(vectorized.StringAt(a[0], i), start.Value(i), 0, false)
		})
	}}, nil
}

func strMap(f func(string) string) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		st, err := wantStrings(types, 1, 1)
		if err != nil {
			return nil, err
		}
		return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) { return f(vectorized.StringAt(a[0], i)), nil })
		}}, nil
	}
}

func trimResolver(left, right bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		st, err := wantStrings(types, 1, 2)
		if err != nil {
			return nil, err
		}
		return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
				s := vectorized.StringAt(a[0], i)
				cut := func(r rune) bool { return r == ' ' }
				if len(a) == 2 {
					set := vectorized.StringAt(a[1], i)
					cut = func(r rune) bool { return strings.ContainsRune(set, r) }
				}
				if left {
					s = strings.TrimLeftFunc(s, cut)
				}
				if right {
					s = strings.TrimRightFunc(s, cut)
				}
				return s, nil
			})
		}}, nil
	}
}

// resolveConcat concatenates strings; any NULL argument makes the result
// NULL (SQL || semantics, as Flink's CONCAT). Non-string arguments are cast.
func resolveConcat(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) == 0 {
		return nil, fmt.Errorf("needs at least one argument")
	}
	for _, t := range types {
		if !vectorized.CanCast(t, strType) {
			return nil, fmt.Errorf("cannot concatenate %s", t)
		}
	}
	return &impl{ret: strType, args: repeatType(strType, len(types)), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		var sb strings.Builder
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			sb.Reset()
			for _, x := range a {
				if err := writeBounded(&sb, "concat", vectorized.StringAt(x, i)); err != nil {
					return "", err
				}
			}
			return sb.String(), nil
		})
	}}, nil
}

func resolveLength(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 1, 1)
	if err != nil {
		return nil, err
	}
	// INT as in Flink: a string's length fits.
	return &impl{ret: i32Type, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapFixed(ec.Mem, i32Type, a, n, func(i int) (int32, error) {
			return int32(vectorized.CharLength(vectorized.StringAt(a[0], i))), nil
		})
	}}, nil
}

func resolveReplace(types []arrow.DataType, _ []Expr) (*impl, error) {
	st, err := wantStrings(types, 2, 3)
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			to := ""
			if len(a) == 3 {
				to = vectorized.StringAt(a[2], i)
			}
			from := vectorized.StringAt(a[1], i)
			if from == "" {
				return vectorized.StringAt(a[0], i), nil
			}
			s := vectorized.StringAt(a[0], i)
			if len(to) > len(from) {
				grown := int64(strings.Count(s, from)) * int64(len(to)-len(from))
				if err := vectorized.CheckComputedString("REPLACE", int64(len(s))+grown); err != nil {
					return "", err
				}
			}
			return strings.ReplaceAll(s, from, to), nil
		})
	}}, nil
}

func resolveRegexpLike(types []arrow.DataType, args []Expr) (*impl, error) {
	st, err := wantStrings(types, 2, 2)
	if err != nil {
		return nil, err
	}
	var fixed *regexp.Regexp
	if args != nil {
		if p, ok := literalString(args[1]); ok {
			if fixed, err = regexp.Compile(p); err != nil {
				return nil, fmt.Errorf("bad regular expression %q: %v", p, err)
			}
		}
	}
	return &impl{ret: boolType, args: st, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		res := newRegexps(ctx, "REGEXP", fixed)
		return vectorized.MapBools(ec.Mem, a, n, func(i int) (bool, error) {
			re, err := res.get(vectorized.StringAt(a[1], i))
			if err != nil {
				return false, err
			}
			s := vectorized.StringAt(a[0], i)
			if err := res.meter(re, s); err != nil {
				return false, err
			}
			return re.MatchString(s), nil
		})
	}}, nil
}

// positionResolver is position(substring, string), or strpos(string,
// substring) when haystackFirst: 1-based, 0 if absent.
func positionResolver(haystackFirst bool) resolver {
	sub, s := 0, 1
	if haystackFirst {
		sub, s = 1, 0
	}
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		st, err := wantStrings(types, 2, 2)
		if err != nil {
			return nil, err
		}
		// INT as in Flink.
		return &impl{ret: i32Type, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			return vectorized.MapFixed(ec.Mem, i32Type, a, n, func(i int) (int32, error) {
				return int32(vectorized.Position(vectorized.StringAt(a[sub], i), vectorized.StringAt(a[s], i))), nil
			})
		}}, nil
	}
}
