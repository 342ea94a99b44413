package exec

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// NewMergeJoin joins inputs that are both ordered ascending on their keys
// (NULL keys may come first or last; they never match). The right input is
// materialized; the left streams while a cursor moves forward through the
// right rows, so no hash table is built. Out-of-order input is an error.
func NewMergeJoin(ec *Context, left, right Operator, typ JoinType, leftKeys, rightKeys []Expr, residual Expr) (Operator, error) {
	if len(leftKeys) == 0 {
		return nil, fmt.Errorf("%w: merge join needs at least one key", ErrInvalid)
	}
	lk, rk, err := coerceKeys(leftKeys, rightKeys)
	if err != nil {
		return nil, err
	}
	j, err := newJoinOp(ec, left, right, typ, lk, rk, residual)
	if err != nil {
		return nil, err
	}
	j.merge = &mergeCandidates{}
	return j, nil
}

// mergeCandidates gives each left row the run of right rows with an equal
// key: [start[i], end[i]).
type mergeCandidates struct {
	rkeys      []arrow.Array
	rn         int
	rnull      []bool
	cursor     int // first right row whose key may be >= the next left key
	start, end []int32
	curEnd     int32
	// prev holds the previous left key (one-row slices) to check order
	// across batches.
	prev []arrow.Array
}

func (m *mergeCandidates) init(t *table) error {
	m.rkeys, m.rn = t.keys, t.n
	m.rnull = make([]bool, t.n)
	for r := 0; r < t.n; r++ {
		m.rnull[r] = vectorized.AnyNull(t.keys, r)
	}
	cmp, err := keyComparator(t.keys, t.keys)
	if err != nil {
		return err
	}
	last := -1
	for r := 0; r < t.n; r++ {
		if m.rnull[r] {
			continue
		}
		if last >= 0 && cmp(last, r) > 0 {
			return fmt.Errorf("%w: merge join right input is not ordered on its keys (row %d)", ErrInvalid, r)
		}
		last = r
	}
	return nil
}

// keyComparator compares non-NULL key rows a[i] and b[j] column by column.
func keyComparator(a, b []arrow.Array) (func(i, j int) int, error) {
	cmps := make([]func(i, j int) int, len(a))
	for k := range a {
		c, err := vectorized.NewComparator(a[k], b[k])
		if err != nil {
			return nil, err
		}
		cmps[k] = c
	}
	return func(i, j int) int {
		for _, c := range cmps {
			if r := c(i, j); r != 0 {
				return r
			}
		}
		return 0
	}, nil
}

// probe computes the right run of every row of a left batch and returns
// which left rows have a NULL key.
func (m *mergeCandidates) probe(lkeys []arrow.Array, n int) ([]bool, error) {
	cmp, err := keyComparator(lkeys, m.rkeys)
	if err != nil {
		return nil, err
	}
	self, err := keyComparator(lkeys, lkeys)
	if err != nil {
		return nil, err
	}
	var prevCmp func(i, j int) int
	if m.prev != nil {
		if prevCmp, err = keyComparator(m.prev, lkeys); err != nil {
			return nil, err
		}
	}
	m.start, m.end = make([]int32, n), make([]int32, n)
	nulls := make([]bool, n)
	lastL := -1
	for i := 0; i < n; i++ {
		m.start[i], m.end[i] = -1, -1
		if vectorized.AnyNull(lkeys, i) {
			nulls[i] = true
			continue
		}
		if lastL >= 0 && self(lastL, i) > 0 || lastL < 0 && prevCmp != nil && prevCmp(0, i) > 0 {
			return nil, fmt.Errorf("%w: merge join left input is not ordered on its keys", ErrInvalid)
		}
		if lastL >= 0 && self(lastL, i) == 0 {
			m.start[i], m.end[i] = m.start[lastL], m.end[lastL]
			lastL = i
			continue
		}
		lastL = i
		// Rows with a NULL key (at either end, or inside a run of a shorter
		// key prefix) never match: step over them.
		for m.cursor < m.rn && (m.rnull[m.cursor] || cmp(i, m.cursor) > 0) {
			m.cursor++
		}
		// The run may enclose NULL-key rows (input sorted on a key prefix
		// only); next skips them.
		e := m.cursor
		for e < m.rn && (m.rnull[e] || cmp(i, e) == 0) {
			e++
		}
		if e > m.cursor {
			m.start[i], m.end[i] = int32(m.cursor), int32(e)
		}
	}
	if lastL >= 0 {
		releaseArrays(m.prev)
		m.prev = make([]arrow.Array, len(lkeys))
		for k, a := range lkeys {
			m.prev[k] = sliceOne(a, lastL)
		}
	}
	return nulls, nil
}

func sliceOne(a arrow.Array, i int) arrow.Array {
	return array.NewSlice(a, int64(i), int64(i+1))
}

// first starts iterating left row i's run; the join loop iterates one left
// row at a time, so next can use the remembered run end.
func (m *mergeCandidates) first(i int) int32 {
	m.curEnd = m.end[i]
	return m.start[i]
}

func (m *mergeCandidates) next(r int32) int32 {
	for r++; r < m.curEnd; r++ {
		if !m.rnull[r] {
			return r
		}
	}
	return -1
}

func (m *mergeCandidates) release() {
	releaseArrays(m.prev)
	m.prev = nil
}
