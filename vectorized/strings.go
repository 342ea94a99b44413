package vectorized

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// StringAt returns a[i] of a string, large string or binary array.
func StringAt(a arrow.Array, i int) string {
	switch x := a.(type) {
	case *array.String:
		return x.Value(i)
	case *array.LargeString:
		return x.Value(i)
	case *array.Binary:
		return string(x.Value(i))
	}
	return FormatValue(a, i)
}

// AnyNull reports whether row i is NULL in any of arrs.
func AnyNull(arrs []arrow.Array, i int) bool {
	for _, a := range arrs {
		if a.IsNull(i) {
			return true
		}
	}
	return false
}

// MaxComputedString bounds one string a function computes and
// MaxComputedStrings the strings one function computes for a batch: a
// function whose result grows faster than its input (REPEAT, REPLACE,
// REGEXP_REPLACE with a long replacement) must not let one row, or one
// batch of rows each under the first limit, make the server allocate
// gigabytes. Values read from storage are not bounded by these.
const (
	MaxComputedString  = 64 << 20
	MaxComputedStrings = 512 << 20
)

// CheckComputedString refuses a computed string of size bytes over
// MaxComputedString; fn names the function.
func CheckComputedString(fn string, size int64) error {
	if size > MaxComputedString {
		return fmt.Errorf("%w: %s would make a string of %d bytes, over the limit of %d for a computed value", ErrTooLarge, fn, size, MaxComputedString)
	}
	return nil
}

// ComputedStrings counts the strings one function computes for a batch of
// Rows rows against MaxComputedString and MaxComputedStrings.
type ComputedStrings struct {
	Rows  int
	total int
}

// Add counts a computed string of size bytes, refusing it over the limits.
func (c *ComputedStrings) Add(size int) error {
	if err := CheckComputedString("a function", int64(size)); err != nil {
		return err
	}
	if c.total += size; c.total > MaxComputedStrings {
		return fmt.Errorf("%w: a function computed more than %d bytes of strings for one batch of %d rows", ErrTooLarge, MaxComputedStrings, c.Rows)
	}
	return nil
}

// MapStrings builds a string array of n rows: NULL where any arg is NULL,
// else f(i). f may return an error, which aborts, and so does a result over
// MaxComputedString or results over MaxComputedStrings in all.
func MapStrings(mem memory.Allocator, args []arrow.Array, n int, f func(i int) (string, error)) (arrow.Array, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	sizes := ComputedStrings{Rows: n}
	for i := 0; i < n; i++ {
		if AnyNull(args, i) {
			b.AppendNull()
			continue
		}
		s, err := f(i)
		if err != nil {
			return nil, err
		}
		if err := sizes.Add(len(s)); err != nil {
			return nil, err
		}
		b.Append(s)
	}
	return b.NewArray(), nil
}

// MapInt64s builds an int64 array of n rows, NULL where any arg is NULL.
func MapInt64s(mem memory.Allocator, args []arrow.Array, n int, f func(i int) (int64, error)) (arrow.Array, error) {
	return MapFixed(mem, arrow.PrimitiveTypes.Int64, args, n, f)
}

// MapFixed builds an array of fixed-width type typ (whose values are T) of
// n rows, NULL where any arg is NULL, else f(i).
func MapFixed[T Fixed](mem memory.Allocator, typ arrow.DataType, args []arrow.Array, n int, f func(i int) (T, error)) (arrow.Array, error) {
	v := AndValidity(mem, n, args...)
	out := NewFixedOut[T](mem, n)
	for i := 0; i < n; i++ {
		if !v.IsValid(i) {
			out.Vals[i] = 0
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
	return out.Finish(typ, v.Buf, v.Nulls), nil
}

// MapBools builds a boolean array of n rows, NULL where any arg is NULL.
func MapBools(mem memory.Allocator, args []arrow.Array, n int, f func(i int) (bool, error)) (arrow.Array, error) {
	v := AndValidity(mem, n, args...)
	vals := newBitmap(mem, n)
	vb := vals.Bytes()
	for i := 0; i < n; i++ {
		if !v.IsValid(i) {
			continue
		}
		x, err := f(i)
		if err != nil {
			vals.Release()
			v.Release()
			return nil, err
		}
		if x {
			bitutil.SetBit(vb, i)
		}
	}
	return FinishBool(n, vals, v), nil
}

// MaxPatternWork bounds one row's match against a regular expression
// (the REGEXP functions, SIMILAR TO, and LIKE with _ or ILIKE, which
// match through one): the string's bytes times the pattern's compiled
// instructions. Go's regexp takes time in that product, up to about 10 ns
// a unit, and one row's match cannot be interrupted: a 10 MB string
// against a 1,000-character pattern ran 90 s. At the bound a row takes
// a few seconds at most.
const MaxPatternWork = 1 << 28

// PatternInsts is the size of re's compiled program, which bounds what
// one byte of input costs to match.
func PatternInsts(re *regexp.Regexp) int {
	sre, err := syntax.Parse(re.String(), syntax.Perl) // regexp.Compile's flags
	if err != nil {
		return len(re.String()) // unreachable: re was compiled from it
	}
	prog, err := syntax.Compile(sre.Simplify())
	if err != nil {
		return len(re.String()) // unreachable, as above
	}
	return len(prog.Inst)
}

// CheckPatternWork refuses matching a string of n bytes against a
// pattern of insts instructions when that is over MaxPatternWork; fn
// names the function.
func CheckPatternWork(fn string, n, insts int) error {
	if int64(n)*int64(insts) > MaxPatternWork {
		return fmt.Errorf("%w: %s of a string of %d bytes against a pattern of %d instructions is over the limit of %d (bytes times instructions) for one match", ErrTooLarge, fn, n, insts, MaxPatternWork)
	}
	return nil
}

// LikeMatcher matches SQL LIKE patterns: % any sequence, _ one character,
// the escape character makes the next one literal.
type LikeMatcher struct {
	// Common shapes are matched without a regexp.
	kind   int // 0 exact, 1 prefix, 2 suffix, 3 contains, 4 regexp, 5 segments
	lit    string
	re     *regexp.Regexp
	segs   []string // kind 5: the literal runs around the %s, "" at an end that is a %
	insts  int      // kind 4: PatternInsts(re)
	Source string
}

// NewLikeMatcher compiles pattern with escape character esc (0 = none).
func NewLikeMatcher(pattern string, esc rune, caseInsensitive bool) (*LikeMatcher, error) {
	var sb strings.Builder
	var lit strings.Builder
	simple := !caseInsensitive
	wild := []int{} // positions (in literal runes) where % occurred: 0 start, 1 end
	segs, seg, underscore := []string{}, strings.Builder{}, false
	runes := []rune(pattern)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case esc != 0 && r == esc:
			if i+1 >= len(runes) {
				return nil, fmt.Errorf("%w: LIKE pattern %q ends with the escape character", ErrInvalidValue, pattern)
			}
			i++
			sb.WriteString(regexp.QuoteMeta(string(runes[i])))
			lit.WriteRune(runes[i])
			seg.WriteRune(runes[i])
			if len(wild) > 0 && wild[len(wild)-1] == 1 {
				simple = false
			}
		case r == '%':
			sb.WriteString(".*")
			segs = append(segs, seg.String())
			seg.Reset()
			if lit.Len() == 0 {
				wild = append(wild, 0)
			} else {
				wild = append(wild, 1)
			}
		case r == '_':
			sb.WriteString(".")
			simple, underscore = false, true
		default:
			sb.WriteString(regexp.QuoteMeta(string(r)))
			lit.WriteRune(r)
			seg.WriteRune(r)
			if len(wild) > 0 && wild[len(wild)-1] == 1 {
				simple = false
			}
		}
	}
	m := &LikeMatcher{Source: pattern, lit: lit.String()}
	switch {
	case simple && len(wild) == 0:
		m.kind = 0
	case simple && len(wild) == 1 && wild[0] == 1:
		m.kind = 1
	case simple && len(wild) == 1 && wild[0] == 0:
		m.kind = 2
	case simple && len(wild) == 2 && wild[0] == 0 && wild[1] == 1:
		m.kind = 3
	case !caseInsensitive && !underscore:
		// Literals between %s: the regexp costs string length times
		// pattern length (a 100 KB string against '%a' 1,000 times then
		// 'b' took 15 s, which no cancel interrupts); each literal at its
		// first place after the one before is linear.
		m.kind, m.segs = 5, append(segs, seg.String())
	default:
		prefix := "(?s)^"
		if caseInsensitive {
			prefix = "(?is)^"
		}
		re, err := regexp.Compile(prefix + sb.String() + "$")
		if err != nil {
			return nil, fmt.Errorf("%w: LIKE pattern %q: %v", ErrInvalidValue, pattern, err)
		}
		m.kind, m.re, m.insts = 4, re, PatternInsts(re)
	}
	return m, nil
}

// Insts is the size of the regexp a pattern with _ or a case-insensitive
// one is matched with (see MaxPatternWork), 0 for the others, matched in
// time linear in the string.
func (m *LikeMatcher) Insts() int { return m.insts }

// Match reports whether s matches the pattern.
func (m *LikeMatcher) Match(s string) bool {
	switch m.kind {
	case 0:
		return s == m.lit
	case 1:
		return strings.HasPrefix(s, m.lit)
	case 2:
		return strings.HasSuffix(s, m.lit)
	case 3:
		return strings.Contains(s, m.lit)
	case 5:
		return matchSegments(s, m.segs)
	}
	return m.re.MatchString(s)
}

// matchSegments matches s against segs[0]%segs[1]%...%segs[n-1] (n >= 2):
// the first must begin s and the last end it, without overlapping; the
// others, in order, may go anywhere between, and taking each at its first
// place leaves the most room for the rest.
func matchSegments(s string, segs []string) bool {
	first, last := segs[0], segs[len(segs)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, seg := range segs[1 : len(segs)-1] {
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
	}
	return true
}

// Substr returns the SQL SUBSTRING(s FROM start FOR length) in characters;
// start is 1-based and may be <= 0; length < 0 is an error, and hasLen false
// means to the end.
func Substr(s string, start, length int64, hasLen bool) (string, error) {
	if hasLen && length < 0 {
		return "", fmt.Errorf("%w: negative substring length %d", ErrInvalidValue, length)
	}
	end := int64(1 << 62)
	if hasLen {
		end = start + length
	}
	if start < 1 {
		start = 1
	}
	if end <= start {
		return "", nil
	}
	// Walk runes, ASCII fast path.
	pos := int64(1)
	bstart, bend := len(s), len(s)
	for bi := range s {
		if pos == start {
			bstart = bi
		}
		if pos == end {
			bend = bi
			break
		}
		pos++
	}
	if bstart > bend {
		return "", nil
	}
	return s[bstart:bend], nil
}

// CharLength returns the number of characters of s.
func CharLength(s string) int64 { return int64(utf8.RuneCountInString(s)) }

// Position returns the 1-based character position of sub in s, 0 if absent.
func Position(sub, s string) int64 {
	i := strings.Index(s, sub)
	if i < 0 {
		return 0
	}
	return int64(utf8.RuneCountInString(s[:i])) + 1
}
