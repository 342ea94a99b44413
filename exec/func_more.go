package exec

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

func init() {
	register(padResolver(true), "lpad")
	register(padResolver(false), "rpad")
	register(strIntFunc(func(s string, n int64) (string, error) {
		r := []rune(s)
		return string(r[:clamp(n, len(r))]), nil
	}), "left")
	register(strIntFunc(func(s string, n int64) (string, error) {
		r := []rune(s)
		return string(r[len(r)-clamp(n, len(r)):]), nil
	}), "right")
	register(strIntFunc(func(s string, n int64) (string, error) {
		if n < 0 {
			return "", fmt.Errorf("%w: repeat count %d", vectorized.ErrInvalidValue, n)
		}
		size := n * int64(len(s))
		if len(s) > 0 && n > math.MaxInt64/int64(len(s)) {
			size = math.MaxInt64
		}
		if err := vectorized.CheckComputedString("REPEAT", size); err != nil {
			return "", err
		}
		return strings.Repeat(s, int(n)), nil
	}), "repeat")
	register(strMap(func(s string) string {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r)
	}), "reverse")
	register(strMap(initcap), "initcap")
	register(strPredicate(strings.HasPrefix), "starts_with")
	register(strPredicate(strings.HasSuffix), "ends_with")
	register(resolveSplitPart, "split_part")
	register(resolveRegexpReplace, "regexp_replace")
	register(resolveRegexpExtract, "regexp_extract")
	register(resolveRegexpExtractAll, "regexp_extract_all")
	register(floatFunc(func(x float64) (float64, error) {
		if x <= 0 {
			return 0, fmt.Errorf("%w: log10 of non-positive number %v", vectorized.ErrInvalidValue, x)
		}
		return math.Log10(x), nil
	}), "log10")
	register(floatFunc(func(x float64) (float64, error) { return math.Cbrt(x), nil }), "cbrt")
	register(floatFunc(func(x float64) (float64, error) {
		switch {
		case x > 0:
			return 1, nil
		case x < 0:
			return -1, nil
		}
		return x, nil
	}), "sign")
	register(floatFunc(func(x float64) (float64, error) { return math.Trunc(x), nil }), "trunc")
	register(resolveRandom, "rand", "random")
	register(resolveCurrentTime, "current_time")
	register(resolveToDate, "to_date")
	register(resolveToTimestamp, "to_timestamp")
	register(resolveUnixTimestamp, "unix_timestamp")
	register(resolveFromUnixtime, "from_unixtime")
	register(resolveEpochMicros, EpochMicrosFn)
	register(resolveFromEpochMicros, FromEpochMicrosFn)
}

// EpochMicrosFn and FromEpochMicrosFn name internal functions between a
// timestamp and its microseconds since the epoch (UTC), for window bounds
// finer than a second. No SQL name reaches them: '$' starts no identifier.
const (
	EpochMicrosFn     = "$epoch_micros"
	FromEpochMicrosFn = "$from_epoch_micros"
)

func clamp(n int64, l int) int {
	if n < 0 {
		return max(l+int(max(n, int64(-l))), 0)
	}
	return int(min(n, int64(l)))
}

func initcap(s string) string {
	var sb strings.Builder
	up := true
	for _, r := range s {
		if up {
			sb.WriteRune(unicode.ToUpper(r))
		} else {
			sb.WriteRune(unicode.ToLower(r))
		}
		up = !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}
	return sb.String()
}

// strIntFunc is f(string, integer) -> string.
func strIntFunc(f func(string, int64) (string, error)) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if err := wantArgs(types, 2, 2); err != nil {
			return nil, err
		}
		if _, err := stringArgs(types[:1]); err != nil {
			return nil, err
		}
		if !vectorized.IsInteger(types[1]) && types[1].ID() != arrow.NULL {
			return nil, fmt.Errorf("argument 2 must be an integer")
		}
		return &impl{ret: strType, args: []arrow.DataType{strType, i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			k := a[1].(*array.Int64)
			return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) { return f(vectorized.StringAt(a[0], i), k.Value(i)) })
		}}, nil
	}
}

func strPredicate(f func(s, p string) bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		st, err := wantStrings(types, 2, 2)
		if err != nil {
			return nil, err
		}
		return &impl{ret: boolType, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			return vectorized.MapBools(ec.Mem, a, n, func(i int) (bool, error) {
				return f(vectorized.StringAt(a[0], i), vectorized.StringAt(a[1], i)), nil
			})
		}}, nil
	}
}

// maxGeneratedChars bounds what one value of a function that generates
// text from a number (a pad length, a PRINTF width) may ask for, so that
// one row cannot make the server allocate gigabytes.
const maxGeneratedChars = 1 << 20

// padResolver is lpad/rpad(s, length [, fill]); the result has exactly
// length characters (s is truncated when longer), fill defaults to ' '.
func padResolver(left bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if err := wantArgs(types, 2, 3); err != nil {
			return nil, err
		}
		if _, err := stringArgs(types[:1]); err != nil {
			return nil, err
		}
		if !vectorized.IsInteger(types[1]) && types[1].ID() != arrow.NULL {
			return nil, fmt.Errorf("argument 2 must be an integer")
		}
		args := []arrow.DataType{strType, i64Type, strType}[:len(types)]
		return &impl{ret: strType, args: args, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			k := a[1].(*array.Int64)
			return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
				s, l := []rune(vectorized.StringAt(a[0], i)), k.Value(i)
				if l < 0 || l > maxGeneratedChars {
					return "", fmt.Errorf("%w: pad length %d", vectorized.ErrInvalidValue, l)
				}
				if int64(len(s)) >= l {
					return string(s[:l]), nil
				}
				fill := []rune(" ")
				if len(a) == 3 {
					fill = []rune(vectorized.StringAt(a[2], i))
				}
				if len(fill) == 0 {
					return string(s), nil
				}
				pad := make([]rune, 0, l-int64(len(s)))
				for int64(len(pad)) < l-int64(len(s)) {
					pad = append(pad, fill[len(pad)%len(fill)])
				}
				if left {
					return string(pad) + string(s), nil
				}
				return string(s) + string(pad), nil
			})
		}}, nil
	}
}

// resolveSplitPart is split_part(s, delimiter, n): the 1-based n-th field,
// the empty string past the end.
func resolveSplitPart(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 3, 3); err != nil {
		return nil, err
	}
	if _, err := stringArgs(types[:2]); err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: []arrow.DataType{strType, strType, i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		k := a[2].(*array.Int64)
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			idx := k.Value(i)
			if idx < 1 {
				return "", fmt.Errorf("%w: split_part field %d (fields count from 1)", vectorized.ErrInvalidValue, idx)
			}
			parts := strings.Split(vectorized.StringAt(a[0], i), vectorized.StringAt(a[1], i))
			if idx > int64(len(parts)) {
				return "", nil
			}
			return parts[idx-1], nil
		})
	}}, nil
}

// regexps compiles the patterns of one function call over a batch, each
// once (fixed, when set: a literal pattern compiled when the call was
// resolved), and meters their matches: one row's is bounded by
// vectorized.MaxPatternWork, since no cancel interrupts it, and the call
// stops between rows once its context is cancelled.
type regexps struct {
	ctx   context.Context
	fn    string
	fixed *regexp.Regexp
	cache map[string]*regexp.Regexp
	insts map[*regexp.Regexp]int
	work  int64 // since the context was last checked
}

// cancelCheckWork is the matching work (bytes times instructions, about
// 0.1 s) between two looks at the context.
const cancelCheckWork = 1 << 24

func newRegexps(ctx context.Context, fn string, fixed *regexp.Regexp) *regexps {
	return &regexps{ctx: ctx, fn: fn, fixed: fixed, cache: map[string]*regexp.Regexp{}, insts: map[*regexp.Regexp]int{}}
}

// get compiles p (or returns the fixed pattern).
func (r *regexps) get(p string) (*regexp.Regexp, error) {
	if r.fixed != nil {
		return r.fixed, nil
	}
	if re := r.cache[p]; re != nil {
		return re, nil
	}
	re, err := compileRegexp(p)
	if err != nil {
		return nil, err
	}
	r.cache[p] = re
	return re, nil
}

// meter comes before matching s against re.
func (r *regexps) meter(re *regexp.Regexp, s string) error {
	insts, ok := r.insts[re]
	if !ok {
		insts = vectorized.PatternInsts(re)
		r.insts[re] = insts
	}
	return r.spend(len(s), insts)
}

// spend counts matching n bytes against a pattern of insts instructions.
func (r *regexps) spend(n, insts int) error {
	if err := vectorized.CheckPatternWork(r.fn, n, insts); err != nil {
		return err
	}
	if r.work += int64(n) * int64(insts); r.work >= cancelCheckWork {
		r.work = 0
		if err := r.ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", r.fn, err)
		}
	}
	return nil
}

// compileRegexp compiles a pattern a row gave.
func compileRegexp(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("%w: bad regular expression %q: %v", vectorized.ErrInvalidValue, p, err)
	}
	return re, nil
}

func literalRegexp(args []Expr, i int) (*regexp.Regexp, error) {
	if args == nil {
		return nil, nil
	}
	p, ok := literalString(args[i])
	if !ok {
		return nil, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("bad regular expression %q: %v", p, err)
	}
	return re, nil
}

func resolveRegexpReplace(types []arrow.DataType, args []Expr) (*impl, error) {
	st, err := wantStrings(types, 3, 3)
	if err != nil {
		return nil, err
	}
	fixed, err := literalRegexp(args, 1)
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: st, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		res := newRegexps(ctx, "REGEXP_REPLACE", fixed)
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			re, err := res.get(vectorized.StringAt(a[1], i))
			if err != nil {
				return "", err
			}
			s := vectorized.StringAt(a[0], i)
			if err := res.meter(re, s); err != nil {
				return "", err
			}
			return boundedRegexpReplace(re, s, vectorized.StringAt(a[2], i))
		})
	}}, nil
}

// boundedRegexpReplace is re.ReplaceAllString(s, repl) that stops as soon
// as the result passes vectorized.MaxComputedString: a short input with
// many matches and a long replacement would otherwise be built whole first.
func boundedRegexpReplace(re *regexp.Regexp, s, repl string) (string, error) {
	// Each match adds at least repl's literal bytes (repl expanded with
	// no group), so no more matches than fit in the bound are looked for:
	// finding all of a million matches first took most of the time of a
	// statement the bound refuses after 6,700.
	n := -1
	none := make([]int, 2*(re.NumSubexp()+1))
	for i := range none {
		none[i] = -1
	}
	if lit := len(re.ExpandString(nil, repl, "", none)); lit > 0 {
		n = vectorized.MaxComputedString/lit + 2
	}
	var out []byte
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, n) {
		out = append(out, s[last:m[0]]...)
		out = re.ExpandString(out, repl, s, m)
		last = m[1]
		if err := vectorized.CheckComputedString("REGEXP_REPLACE", int64(len(out))); err != nil {
			return "", err
		}
	}
	return string(append(out, s[last:]...)), nil
}

// resolveRegexpExtract is regexp_extract(s, pattern [, group]): the group's
// text of the first match (group 0 = whole match), NULL without a match.
func resolveRegexpExtract(types []arrow.DataType, args []Expr) (*impl, error) {
	fixed, argTypes, err := regexpExtractArgs(types, args)
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: argTypes, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		res := newRegexps(ctx, "REGEXP_EXTRACT", fixed)
		memo := newMatchMemo(fixed != nil)
		b := array.NewStringBuilder(ec.Mem)
		defer b.Release()
		for i := 0; i < n; i++ {
			if vectorized.AnyNull(a, i) {
				b.AppendNull()
				continue
			}
			re, g, err := regexpGroup(res.get, a, i, 0, "regexp_extract")
			if err != nil {
				return nil, err
			}
			if err := res.meter(re, vectorized.StringAt(a[0], i)); err != nil {
				return nil, err
			}
			m := memo.find(re, vectorized.StringAt(a[0], i))
			if m == nil || m[2*g] < 0 {
				b.AppendNull()
				continue
			}
			b.Append(vectorized.StringAt(a[0], i)[m[2*g]:m[2*g+1]])
		}
		return b.NewArray(), nil
	}}, nil
}

// matchMemo matches one fixed pattern once per distinct string of a
// batch: strings repeat (a channel's URL on each of its bids) and a match
// costs far more than a lookup. It stops remembering when fewer than a
// quarter of the first memoProbe strings repeated.
type matchMemo struct {
	seen        map[string][]int // nil: not remembering
	looks, hits int
}

const memoProbe = 64

func newMatchMemo(fixed bool) *matchMemo {
	if !fixed {
		return &matchMemo{}
	}
	return &matchMemo{seen: map[string][]int{}}
}

// find is re.FindStringSubmatchIndex(s); re must be the same every call
// while the memo remembers.
func (m *matchMemo) find(re *regexp.Regexp, s string) []int {
	if m.seen == nil {
		return re.FindStringSubmatchIndex(s)
	}
	m.looks++
	if r, ok := m.seen[s]; ok {
		m.hits++
		return r
	}
	r := re.FindStringSubmatchIndex(s)
	if m.looks >= memoProbe && m.hits < memoProbe/4 {
		m.seen = nil
	} else {
		m.seen[s] = r
	}
	return r
}

// regexpExtractArgs checks (s, pattern [, group]) and returns the pattern
// when it is a literal and the argument types to cast to.
func regexpExtractArgs(types []arrow.DataType, args []Expr) (*regexp.Regexp, []arrow.DataType, error) {
	if err := wantArgs(types, 2, 3); err != nil {
		return nil, nil, err
	}
	if _, err := stringArgs(types[:2]); err != nil {
		return nil, nil, err
	}
	fixed, err := literalRegexp(args, 1)
	if err != nil {
		return nil, nil, err
	}
	return fixed, []arrow.DataType{strType, strType, i64Type}[:len(types)], nil
}

// regexpGroup returns row i's pattern (a[1]) and group (a[2], def when not
// given), checked against the pattern's groups.
func regexpGroup(get func(string) (*regexp.Regexp, error), a []arrow.Array, i int, def int64, fn string) (*regexp.Regexp, int64, error) {
	re, err := get(vectorized.StringAt(a[1], i))
	if err != nil {
		return nil, 0, err
	}
	g := def
	if len(a) == 3 {
		g = a[2].(*array.Int64).Value(i)
	}
	if g < 0 || g > int64(re.NumSubexp()) {
		return nil, 0, fmt.Errorf("%w: %s group %d of a pattern with %d groups", vectorized.ErrInvalidValue, fn, g, re.NumSubexp())
	}
	return re, g, nil
}

// resolveRegexpExtractAll is Flink's REGEXP_EXTRACT_ALL(s, pattern [,
// group]): the group's text (1 by default, 0 the whole match) of every
// match as an ARRAY<STRING>, NULL for a match without the group.
func resolveRegexpExtractAll(types []arrow.DataType, args []Expr) (*impl, error) {
	fixed, argTypes, err := regexpExtractArgs(types, args)
	if err != nil {
		return nil, err
	}
	ret := arrow.ListOf(strType)
	return &impl{ret: ret, args: argTypes, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		res := newRegexps(ctx, "REGEXP_EXTRACT_ALL", fixed)
		b := array.NewListBuilder(ec.Mem, strType)
		defer b.Release()
		vb := b.ValueBuilder().(*array.StringBuilder)
		for i := 0; i < n; i++ {
			if vectorized.AnyNull(a, i) {
				b.AppendNull()
				continue
			}
			re, g, err := regexpGroup(res.get, a, i, 1, "regexp_extract_all")
			if err != nil {
				return nil, err
			}
			s := vectorized.StringAt(a[0], i)
			if err := res.meter(re, s); err != nil {
				return nil, err
			}
			b.Append(true)
			for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
				if m[2*g] < 0 {
					vb.AppendNull()
					continue
				}
				vb.Append(s[m[2*g]:m[2*g+1]])
			}
		}
		return b.NewArray(), nil
	}}, nil
}

func resolveRandom(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) == 1 {
		return seededRand(types)
	}
	if err := wantArgs(types, 0, 1); err != nil {
		return nil, err
	}
	return &impl{ret: f64Type, fn: func(_ context.Context, ec *Context, _ []arrow.Array, n int) (arrow.Array, error) {
		out := vectorized.NewFixedOut[float64](ec.Mem, n)
		for i := range out.Vals {
			out.Vals[i] = rand.Float64()
		}
		return out.Finish(f64Type, nil, 0), nil
	}}, nil
}

// TimeType is the type of current_time: microseconds since midnight.
var TimeType = arrow.FixedWidthTypes.Time64us

func resolveCurrentTime(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 0, 0); err != nil {
		return nil, err
	}
	return &impl{ret: TimeType, fn: func(_ context.Context, ec *Context, _ []arrow.Array, n int) (arrow.Array, error) {
		t := ec.now().UTC()
		us := int64(t.Hour())*3600e6 + int64(t.Minute())*60e6 + int64(t.Second())*1e6 + int64(t.Nanosecond()/1e3)
		out := vectorized.NewFixedOut[int64](ec.Mem, n)
		for i := range out.Vals {
			out.Vals[i] = us
		}
		return out.Finish(TimeType, nil, 0), nil
	}}, nil
}

// parseWithFormat parses s by a Java/MySQL format, or as a SQL literal.
func parseWithFormat(a []arrow.Array, i int, layouts map[string]string) (time.Time, error) {
	s := strings.TrimSpace(vectorized.StringAt(a[0], i))
	if len(a) < 2 {
		return vectorized.ParseTimestamp(s, time.UTC)
	}
	f := vectorized.StringAt(a[1], i)
	l, ok := layouts[f]
	if !ok {
		var err error
		if l, err = vectorized.DateFormatLayout(f); err != nil {
			return time.Time{}, err
		}
		layouts[f] = l
	}
	t, err := time.ParseInLocation(l, s, time.UTC)
	if err != nil {
		return t, fmt.Errorf("%w: %q does not match format %q", vectorized.ErrInvalidValue, s, f)
	}
	return t, nil
}

func toTemporal(ret arrow.DataType) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		st, err := wantStrings(types, 1, 2)
		if err != nil {
			return nil, err
		}
		return &impl{ret: ret, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			layouts := map[string]string{}
			b := array.NewBuilder(ec.Mem, ret)
			defer b.Release()
			for i := 0; i < n; i++ {
				if vectorized.AnyNull(a, i) {
					b.AppendNull()
					continue
				}
				t, err := parseWithFormat(a, i, layouts)
				if err != nil {
					return nil, err
				}
				if err := appendTime(b, t, ret); err != nil {
					return nil, err
				}
			}
			return b.NewArray(), nil
		}}, nil
	}
}

var (
	resolveToDate      = toTemporal(dateType)
	resolveToTimestamp = toTemporal(&arrow.TimestampType{Unit: arrow.Microsecond})
)

// resolveUnixTimestamp is unix_timestamp(ts or date): seconds since epoch;
// or Flink's UNIX_TIMESTAMP(string [, format]), the string read in UTC,
// the session's zone (by default as 'yyyy-MM-dd HH:mm:ss').
func resolveUnixTimestamp(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) > 0 && vectorized.IsString(types[0]) {
		st, err := wantStrings(types, 1, 2)
		if err != nil {
			return nil, err
		}
		return &impl{ret: i64Type, args: st, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			layouts := map[string]string{}
			return vectorized.MapInt64s(ec.Mem, a, n, func(i int) (int64, error) {
				t, err := parseWithFormat(a, i, layouts)
				if err != nil && len(a) == 1 {
					return 0, fmt.Errorf("%w: %q is not a timestamp (yyyy-MM-dd HH:mm:ss)", vectorized.ErrInvalidValue, vectorized.StringAt(a[0], i))
				}
				return t.Unix(), err
			})
		}}, nil
	}
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	if !isDateTime(types[0]) {
		return nil, fmt.Errorf("argument must be a date, timestamp or string")
	}
	return &impl{ret: i64Type, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapInt64s(ec.Mem, a, n, func(i int) (int64, error) { return vectorized.TimeAt(a[0], i).Unix(), nil })
	}}, nil
}

// resolveEpochMicros is $epoch_micros(ts): ts's microseconds since the
// epoch, rounded down (a nanosecond timestamp before the epoch too).
func resolveEpochMicros(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	tt, ok := types[0].(*arrow.TimestampType)
	if !ok {
		return nil, fmt.Errorf("argument must be a timestamp")
	}
	return &impl{ret: i64Type, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		vals := vectorized.Values[int64](a[0])
		return vectorized.MapInt64s(ec.Mem, a, n, func(i int) (int64, error) {
			v := vals[i]
			switch tt.Unit {
			case arrow.Second:
				return v * 1e6, nil // timestamps are within ±292,000 years: no overflow
			case arrow.Millisecond:
				return v * 1e3, nil
			case arrow.Nanosecond:
				m := v / 1e3
				if v%1e3 < 0 {
					m--
				}
				return m, nil
			}
			return v, nil
		})
	}}, nil
}

// resolveFromEpochMicros is $from_epoch_micros(micros): the timestamp
// (microseconds, UTC) that many microseconds after the epoch.
func resolveFromEpochMicros(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	ret := &arrow.TimestampType{Unit: arrow.Microsecond}
	return &impl{ret: ret, args: []arrow.DataType{i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		out := vectorized.NewFixedOut[int64](ec.Mem, n)
		copy(out.Vals, vectorized.Values[int64](a[0]))
		v := vectorized.AndValidity(ec.Mem, n, a[0])
		return out.Finish(ret, v.Buf, v.Nulls), nil
	}}, nil
}

// resolveFromUnixtime is from_unixtime(seconds): a timestamp (UTC).
func resolveFromUnixtime(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	if !vectorized.IsInteger(types[0]) && types[0].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument must be an integer number of seconds")
	}
	ret := &arrow.TimestampType{Unit: arrow.Microsecond}
	return &impl{ret: ret, args: []arrow.DataType{i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		secs := vectorized.Values[int64](a[0])
		v := vectorized.AndValidity(ec.Mem, n, a[0])
		out := vectorized.NewFixedOut[int64](ec.Mem, n)
		for i := range out.Vals {
			if vectorized.CheckTimestamp(secs[i], arrow.Second) != nil {
				if v.IsValid(i) {
					out.Release()
					v.Release()
					return nil, fmt.Errorf("%w: from_unixtime(%d) is outside years 0000 to 9999", vectorized.ErrDateRange, secs[i])
				}
				continue
			}
			out.Vals[i] = secs[i] * 1e6
		}
		return out.Finish(ret, v.Buf, v.Nulls), nil
	}}, nil
}
