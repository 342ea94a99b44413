package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/vectorized"
)

// Flink's predicates with SQL syntax of their own (the parser names them:
// x IS JSON kind is is_json(x, kind), x SIMILAR TO p [ESCAPE e] is
// similar_to(x, p [, e]), (a, b) OVERLAPS (c, d) is overlaps(a, b, c, d)),
// MAP_ENTRIES, MAP_FROM_ARRAYS and the seeded RAND and RAND_INTEGER.
func init() {
	register(resolveIsJSON, "is_json")
	register(resolveSimilarTo, "similar_to")
	register(resolveOverlaps, "overlaps")
	register(resolveMapEntries, "map_entries")
	register(resolveMapFromArrays, "map_from_arrays")
}

// resolveIsJSON is x IS JSON [VALUE | OBJECT | ARRAY | SCALAR]: whether x
// parses as JSON of that kind; FALSE for NULL, as in Flink.
func resolveIsJSON(types []arrow.DataType, args []Expr) (*impl, error) {
	if _, err := wantStrings(types, 2, 2); err != nil {
		return nil, err
	}
	return &impl{ret: boolType, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		out := make([]bool, n)
		for i := range n {
			if a[0].IsNull(i) || a[1].IsNull(i) {
				continue
			}
			s, kind := vectorized.StringAt(a[0], i), vectorized.StringAt(a[1], i)
			if !json.Valid([]byte(s)) {
				continue
			}
			first := strings.TrimLeft(s, " \t\r\n")[0]
			switch strings.ToUpper(kind) {
			case "VALUE":
				out[i] = true
			case "OBJECT":
				out[i] = first == '{'
			case "ARRAY":
				out[i] = first == '['
			case "SCALAR":
				out[i] = first != '{' && first != '['
			default:
				return nil, fmt.Errorf("%w: IS JSON %s: want VALUE, OBJECT, ARRAY or SCALAR", vectorized.ErrInvalidValue, kind)
			}
		}
		return vectorized.BoolsToArray(ec.Mem, out, nil), nil
	}}, nil
}

// resolveSimilarTo is x SIMILAR TO pattern [ESCAPE e] as Flink (Calcite)
// reads the pattern: % and _ are LIKE's, the escape character makes the
// next one literal, and the rest is a Java regular expression (so '.'
// matches any character), matched against the whole string.
func resolveSimilarTo(types []arrow.DataType, _ []Expr) (*impl, error) {
	if _, err := wantStrings(types, 2, 3); err != nil {
		return nil, err
	}
	return &impl{ret: boolType, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		res := newRegexps(ctx, "SIMILAR TO", nil)
		return vectorized.MapBools(ec.Mem, a, n, func(i int) (bool, error) {
			esc := ""
			if len(a) == 3 {
				esc = vectorized.StringAt(a[2], i)
			}
			re, err := similarRegexp(vectorized.StringAt(a[1], i), esc)
			if err != nil {
				return false, err
			}
			r, err := res.get(re)
			if err != nil {
				return false, fmt.Errorf("%w: SIMILAR TO pattern %q is no regular expression", vectorized.ErrInvalidValue, vectorized.StringAt(a[1], i))
			}
			if err := res.meter(r, vectorized.StringAt(a[0], i)); err != nil {
				return false, err
			}
			return r.MatchString(vectorized.StringAt(a[0], i)), nil
		})
	}}, nil
}

// similarRegexp translates a SIMILAR TO pattern into an anchored regular
// expression.
func similarRegexp(p, esc string) (string, error) {
	if len([]rune(esc)) > 1 {
		return "", fmt.Errorf("%w: SIMILAR TO escape %q is not one character", vectorized.ErrInvalidValue, esc)
	}
	var sb strings.Builder
	sb.WriteString("^(?:")
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case esc != "" && string(r) == esc:
			if i+1 == len(rs) {
				return "", fmt.Errorf("%w: SIMILAR TO pattern %q ends with its escape character", vectorized.ErrInvalidValue, p)
			}
			i++
			sb.WriteString(regexpQuote(rs[i]))
		case r == '%':
			sb.WriteString(".*")
		case r == '_':
			sb.WriteString(".")
		case r == '\\':
			sb.WriteString(`\\`)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteString(")$")
	return sb.String(), nil
}

func regexpQuote(r rune) string {
	if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
		return `\` + string(r)
	}
	return string(r)
}

// resolveOverlaps is (s1, e1) OVERLAPS (s2, e2) over one date/time type
// (the binder adds an interval second element to its start): each period's
// ends are put in order and the periods overlap when each starts no later
// than the other ends, touching ends included, as in Flink; NULL if any
// end is NULL.
func resolveOverlaps(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 4, 4); err != nil {
		return nil, err
	}
	t := types[0]
	for i, u := range types {
		if !arrow.TypeEqual(u, t) && u.ID() != arrow.NULL {
			return nil, fmt.Errorf("argument %d is %s, not %s like argument 1", i+1, u, t)
		}
	}
	switch t.ID() {
	case arrow.DATE32, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64, arrow.NULL:
	default:
		return nil, fmt.Errorf("the periods must be of DATE, TIME or TIMESTAMP values, not %s", t)
	}
	return &impl{ret: boolType, args: repeatType(t, 4), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapBools(ec.Mem, a, n, func(i int) (bool, error) {
			cmp := func(x, y int) int { return vectorized.CompareAt(a[x], i, a[y], i) }
			s1, e1, s2, e2 := 0, 1, 2, 3
			if cmp(s1, e1) > 0 {
				s1, e1 = e1, s1
			}
			if cmp(s2, e2) > 0 {
				s2, e2 = e2, s2
			}
			return cmp(e1, s2) >= 0 && cmp(e2, s1) >= 0, nil
		})
	}}, nil
}

// resolveMapEntries is MAP_ENTRIES(m): the map's entries as an ARRAY of
// ROW(key, value), in the map's order.
func resolveMapEntries(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	mt, ok := types[0].(*arrow.MapType)
	if !ok {
		return nil, fmt.Errorf("argument 1 must be a MAP, not %s", types[0])
	}
	ret := arrow.ListOf(mt.Elem())
	return &impl{ret: ret, fn: func(_ context.Context, _ *Context, a []arrow.Array, _ int) (arrow.Array, error) {
		d := a[0].Data()
		// The map's own layout, read as a list of its entry rows.
		ld := array.NewData(ret, d.Len(), d.Buffers()[:2], d.Children(), d.NullN(), d.Offset())
		defer ld.Release()
		return array.MakeFromData(ld), nil
	}}, nil
}

// resolveMapFromArrays is MAP_FROM_ARRAYS(keys, values): the map of each
// key to the value at its position; a later equal key wins, as in Flink.
// Arrays of different lengths are an error, as is a NULL key (a flightd MAP
// has none; Flink's may).
func resolveMapFromArrays(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	kt, err := listArg(types, 2)
	if err != nil {
		return nil, err
	}
	vt, ok := types[1].(*arrow.ListType)
	if !ok {
		return nil, fmt.Errorf("argument 2 must be an ARRAY, not %s", types[1])
	}
	if vectorized.IsNested(kt.Elem()) || kt.Elem().ID() == arrow.NULL {
		return nil, fmt.Errorf("map keys cannot be of type %s", kt.Elem())
	}
	ret := arrow.MapOf(kt.Elem(), vt.Elem())
	return &impl{ret: ret, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		kl, vl := a[0].(*array.List), a[1].(*array.List)
		keys, vals := kl.ListValues(), vl.ListValues()
		var kidx, vidx []int64
		offs := make([]int32, n+1)
		valid := make([]bool, n)
		for i := range n {
			offs[i+1] = offs[i]
			if kl.IsNull(i) || vl.IsNull(i) {
				continue
			}
			klo, khi := kl.ValueOffsets(i)
			vlo, vhi := vl.ValueOffsets(i)
			if khi-klo != vhi-vlo {
				return nil, fmt.Errorf("%w: MAP_FROM_ARRAYS of %d keys and %d values", vectorized.ErrInvalidValue, khi-klo, vhi-vlo)
			}
			start := len(kidx)
		next:
			for j := klo; j < khi; j++ {
				if keys.IsNull(int(j)) {
					return nil, fmt.Errorf("%w: map key is NULL", vectorized.ErrInvalidValue)
				}
				v := vlo + j - klo
				for k := start; k < len(kidx); k++ {
					if vectorized.CompareAt(keys, int(kidx[k]), keys, int(j)) == 0 {
						vidx[k] = v
						continue next
					}
				}
				kidx, vidx = append(kidx, j), append(vidx, v)
			}
			if len(kidx) > math.MaxInt32 {
				return nil, fmt.Errorf("%w: a MAP of more than %d entries", vectorized.ErrOverflow, math.MaxInt32)
			}
			offs[i+1], valid[i] = int32(len(kidx)), true
		}
		ka, err := vectorized.Take(ctx, ec.Mem, keys, kidx)
		if err != nil {
			return nil, err
		}
		defer ka.Release()
		va, err := vectorized.Take(ctx, ec.Mem, vals, vidx)
		if err != nil {
			return nil, err
		}
		defer va.Release()
		entries := array.NewData(ret.Elem(), len(kidx), []*memory.Buffer{nil}, []arrow.ArrayData{ka.Data(), va.Data()}, 0, 0)
		defer entries.Release()
		return listFromOffsets(ec.Mem, ret, entries, offs, valid), nil
	}}, nil
}

// javaRandom is java.util.Random, whose sequence Flink's seeded RAND and
// RAND_INTEGER return: the same seed gives the same values as there.
type javaRandom struct{ seed int64 }

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (seed ^ 0x5DEECE66D) & (1<<48 - 1)}
}

func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*0x5DEECE66D + 0xB) & (1<<48 - 1)
	return int32(r.seed >> (48 - bits))
}

func (r *javaRandom) float64() float64 {
	return float64(int64(r.next(26))<<27+int64(r.next(27))) * (1.0 / (1 << 53))
}

// intn is Random.nextInt(bound), bound > 0.
func (r *javaRandom) intn(bound int32) int32 {
	if bound&(-bound) == bound {
		return int32((int64(bound) * int64(r.next(31))) >> 31)
	}
	for {
		bits := r.next(31)
		val := bits % bound
		if bits-val+(bound-1) >= 0 {
			return val
		}
	}
}

// seededRandom is the state of one seeded RAND or RAND_INTEGER call of a
// compiled plan: one sequence from the seed, as Flink keeps one per
// parallel instance; a row with another seed starts that seed's sequence.
// Operators running the call on several goroutines share it.
type seededRandom struct {
	mu     sync.Mutex
	rnd    *javaRandom
	seed   int64
	seeded bool
}

func (s *seededRandom) at(seed int64) *javaRandom {
	if !s.seeded || seed != s.seed {
		s.rnd, s.seed, s.seeded = newJavaRandom(seed), seed, true
	}
	return s.rnd
}

// seededRand is RAND(seed).
func seededRand(types []arrow.DataType) (*impl, error) {
	if !vectorized.IsInteger(types[0]) && types[0].ID() != arrow.NULL {
		return nil, fmt.Errorf("the seed must be an integer, not %s", types[0])
	}
	state := &seededRandom{}
	return &impl{ret: f64Type, args: []arrow.DataType{i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		seed := vectorized.Values[int64](a[0])
		state.mu.Lock()
		defer state.mu.Unlock()
		return vectorized.MapFixed(ec.Mem, f64Type, a, n, func(i int) (float64, error) {
			return state.at(seed[i]).float64(), nil
		})
	}}, nil
}

// seededRandInteger is RAND_INTEGER(seed, bound).
func seededRandInteger(types []arrow.DataType) (*impl, error) {
	for i, t := range types {
		if !vectorized.IsInteger(t) && t.ID() != arrow.NULL {
			return nil, fmt.Errorf("argument %d must be an integer, not %s", i+1, t)
		}
	}
	state := &seededRandom{}
	return &impl{ret: i32Type, args: []arrow.DataType{i64Type, i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		seed, bound := vectorized.Values[int64](a[0]), vectorized.Values[int64](a[1])
		state.mu.Lock()
		defer state.mu.Unlock()
		return vectorized.MapFixed(ec.Mem, i32Type, a, n, func(i int) (int32, error) {
			if bound[i] <= 0 || bound[i] > math.MaxInt32 {
				return 0, fmt.Errorf("%w: RAND_INTEGER bound %d must be between 1 and %d", vectorized.ErrInvalidValue, bound[i], math.MaxInt32)
			}
			return state.at(seed[i]).intn(int32(bound[i])), nil
		})
	}}, nil
}
