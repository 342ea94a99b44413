package exec

import (
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/vectorized"
)

// KeyRange carries the smallest and largest key of a hash join's build
// side to a scan on its probe side, which then skips the files and row
// groups whose statistics lie outside it (a runtime filter: date_dim's
// few days select the row groups of a fact table clustered by date). The
// join publishes it after its build and before it opens its probe side.
type KeyRange struct {
	mu     sync.Mutex
	known  bool
	lo, hi int64
}

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
	r.mu.Lock()
	r.lo, r.hi, r.known = lo, hi, true
	r.mu.Unlock()
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
