package exec

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/vectorized"
)

// KeyRange carries the smallest and largest key of a hash join's build
// side to a scan on its probe side, which then skips the files and row
// groups whose statistics lie outside it (a runtime filter: date_dim's
// few days select the row groups of a fact table clustered by date). The
// join publishes it after its build and before it opens its probe side.
//
// When the range spans at most maxKeySetSpan values it also carries the
// set of build keys as a bitmap, so that the scan drops the rows no build
// key matches before they reach the join (KeySetExpr).
type KeyRange struct {
	mu     sync.Mutex
	known  bool
	lo, hi int64
	set    []byte // bit k-lo is set when k is a build key; nil when the span is wider
}

// maxKeySetSpan bounds the bitmap of build keys (1 MiB): the keys of
// TPC-DS's dimensions at SF10 span at most a few million values.
const maxKeySetSpan = 1 << 23

// Get returns the range once published; lo > hi means no key (nothing on
// the probe side can match). ok is false before publication, or when the
// keys were not integers or the build spilled.
func (r *KeyRange) Get() (lo, hi int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lo, r.hi, r.known
}

func (r *KeyRange) publish(keys arrow.Array) {
	lo, hi, ok := intRange(keys)
	if !ok {
		return
	}
	var set []byte
	if lo <= hi && uint64(hi-lo) < maxKeySetSpan {
		// One bit more than the span, left zero, for keySetBits.
		set = make([]byte, bitutil.BytesForBits(hi-lo+2))
		for i, v := range vectorized.IntKeyValues(keys, nil) {
			if keys.IsValid(i) {
				bitutil.SetBit(set, int(v-lo))
			}
		}
	}
	r.mu.Lock()
	r.lo, r.hi, r.set, r.known = lo, hi, set, true
	r.mu.Unlock()
}

func (r *KeyRange) get() (lo, hi int64, set []byte, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lo, r.hi, r.set, r.known
}

// KeySetExpr is the row-level half of a runtime filter, on a probe-side
// scan column: false on the rows whose key is NULL, outside the published
// range or (with a key set) not a build key, none of which the join
// matches; true on the others, and on every row while nothing is
// published (the build spilled, or its keys are not integers).
type KeySetExpr struct {
	Index int
	Name  string
	Range *KeyRange
}

// DataType implements Expr.
func (e *KeySetExpr) DataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

// String implements Expr.
func (e *KeySetExpr) String() string { return fmt.Sprintf("%s IN join build keys", e.Name) }

// Eval implements Expr: a boolean array without NULLs.
func (e *KeySetExpr) Eval(_ context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	n := int(b.NumRows())
	buf := memory.NewResizableBuffer(ec.Mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	out := buf.Bytes()
	clear(out)
	bitutil.SetBitsTo(out, 0, int64(n), true)
	if err := e.and(out, b); err != nil {
		buf.Release()
		return nil, err
	}
	return vectorized.FinishBool(n, buf, vectorized.Validity{}), nil
}

// and clears the bits of out (one per row of b) of the rows e is false
// on, reading only the groups of eight rows out still has a bit set in:
// the cheaper way once an earlier key set dropped most rows. While nothing
// is published it leaves out as it is.
func (e *KeySetExpr) and(out []byte, b arrow.RecordBatch) error {
	if e.Index < 0 || e.Index >= int(b.NumCols()) {
		return fmt.Errorf("%w: column %s (#%d) out of range of a %d-column input", ErrInvalid, e.Name, e.Index, b.NumCols())
	}
	lo, hi, set, ok := e.Range.get()
	col := b.Column(e.Index)
	switch {
	case !ok:
		return nil
	case !vectorized.IsIntKeyType(col.DataType()):
		return fmt.Errorf("%w: join key column %s is %s, not an integer", ErrInvalid, e.Name, col.DataType())
	}
	switch col.DataType().ID() {
	case arrow.INT32, arrow.DATE32:
		keySetBits(out, vectorized.Values[int32](col), col, lo, hi, set)
	default:
		keySetBits(out, vectorized.IntKeyValues(col, nil), col, lo, hi, set)
	}
	return nil
}

// KeySetsExpr is the AND of several key sets on one scan (a fact table
// probed by several joins). It tries the set that dropped the largest
// share of rows so far first, and each later one only on the groups of
// eight rows still in: a date key set that keeps 2% of store_sales spares
// the other sets almost all their reads, with no rows copied.
type KeySetsExpr struct {
	Sets  []*KeySetExpr
	stats *keySetStats // shared by the copies remapColumns makes
}

// keySetStats counts, per set, the rows it was tried on and kept. The
// parallel copies of a pipeline share it: atomics.
type keySetStats struct {
	tried, kept []atomic.Int64
}

// NewKeySets returns the AND of sets.
func NewKeySets(sets []*KeySetExpr) *KeySetsExpr {
	return &KeySetsExpr{Sets: sets, stats: &keySetStats{
		tried: make([]atomic.Int64, len(sets)), kept: make([]atomic.Int64, len(sets)),
	}}
}

// DataType implements Expr.
func (e *KeySetsExpr) DataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

// String implements Expr.
func (e *KeySetsExpr) String() string {
	parts := make([]string, len(e.Sets))
	for i, s := range e.Sets {
		parts[i] = s.String()
	}
	return strings.Join(parts, " AND ")
}

// Eval implements Expr: a boolean array without NULLs.
func (e *KeySetsExpr) Eval(_ context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	n := int64(b.NumRows())
	buf := memory.NewResizableBuffer(ec.Mem)
	buf.Resize(int(bitutil.BytesForBits(n)))
	out := buf.Bytes()
	clear(out)
	bitutil.SetBitsTo(out, 0, n, true)
	left := n
	for _, i := range e.order() {
		if left == 0 {
			break
		}
		if err := e.Sets[i].and(out, b); err != nil {
			buf.Release()
			return nil, err
		}
		kept := int64(bitutil.CountSetBits(out, 0, int(n)))
		e.stats.tried[i].Add(left)
		e.stats.kept[i].Add(kept)
		left = kept
	}
	return vectorized.FinishBool(int(n), buf, vectorized.Validity{}), nil
}

// order returns the sets' indexes by the share of the rows they kept so
// far, smallest first (an untried set counts as keeping half).
func (e *KeySetsExpr) order() []int {
	share := make([]float64, len(e.Sets))
	idx := make([]int, len(e.Sets))
	for i := range e.Sets {
		idx[i] = i
		share[i] = float64(e.stats.kept[i].Load()+1) / float64(e.stats.tried[i].Load()+2)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(share[a], share[b]) })
	return idx
}

// keySetBits clears bit i of out for each vals[i] that is NULL, outside
// [lo, hi] or not in set (when set is not nil). It builds each byte from
// eight keys without branches and applies the validity bitmap afterwards:
// a per-row branch and IsValid cost 12-18 ns a row, and the probe sides it
// filters hold millions of rows. It skips the bytes of out that are
// already zero.
func keySetBits[T int32 | int64](out []byte, vals []T, col arrow.Array, lo, hi int64, set []byte) {
	n := len(vals)
	if lo > hi {
		bitutil.SetBitsTo(out, 0, int64(n), false)
		return
	}
	// v is in [lo, hi] when v-lo, as unsigned, is at most hi-lo: the
	// differences wrap around 2^64, never onto [0, hi-lo].
	base, span := uint64(lo), uint64(hi-lo)
	in := func(v T) byte {
		d := uint64(int64(v)) - base
		if set == nil {
			return vectorized.BoolByte(d <= span)
		}
		// Bit span+1 of set is zero (publish sizes it so): every key
		// outside the range reads it.
		k := min(d, span+1)
		return set[k>>3] >> (k & 7) & 1
	}
	for b := range n / 8 {
		if out[b] == 0 {
			continue
		}
		v := vals[b*8 : b*8+8]
		out[b] &= in(v[0]) | in(v[1])<<1 | in(v[2])<<2 | in(v[3])<<3 | in(v[4])<<4 | in(v[5])<<5 | in(v[6])<<6 | in(v[7])<<7
	}
	if i := n &^ 7; i < n {
		last := ^byte(0) << (n & 7) // the bits past the end stay
		for ; i < n; i++ {
			last |= in(vals[i]) << (i & 7)
		}
		out[n>>3] &= last
	}
	if col.NullN() > 0 {
		bitutil.BitmapAnd(out, col.NullBitmapBytes(), 0, int64(col.Data().Offset()), out, 0, int64(n))
	}
}

// WithKeyRanges makes the hash join op publish, for each key i with
// ranges[i] non-nil, the range of its build keys. Other operators are
// returned unchanged.
func WithKeyRanges(op Operator, ranges []*KeyRange) Operator {
	if j, ok := op.(*joinOp); ok && j.merge == nil {
		j.ranges = ranges
	}
	return op
}

// intRange is the range of the non-NULL values of an integer or date
// array; lo > hi when there are none.
func intRange(a arrow.Array) (lo, hi int64, ok bool) {
	switch a.DataType().ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32:
	default:
		return 0, 0, false
	}
	lo, hi = math.MaxInt64, math.MinInt64
	for i, v := range vectorized.IntKeyValues(a, nil) {
		if a.IsValid(i) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return lo, hi, true
}
