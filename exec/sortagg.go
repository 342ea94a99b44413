package exec

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

type sortAggOp struct {
	*aggCore
	base   int64 // allocations at Open, for the DISTINCT sets' budget
	opened bool
	eof    bool
	// last is the key of the open group (one-row arrays), nil before the
	// first row.
	last []arrow.Array
	cur  current
}

// NewSortAggregate is NewHashAggregate for input already ordered (or at
// least clustered) by the group keys: it detects group boundaries by
// comparing adjacent rows and streams finished groups, without a hash
// table. Grouping sets are not supported here (use NewHashAggregate).
func NewSortAggregate(ec *Context, child Operator, groups []Expr, groupNames []string, aggs []AggregateSpec, groupingSets [][]int) (Operator, error) {
	if groupingSets != nil {
		return nil, fmt.Errorf("%w: sort aggregation with grouping sets", ErrNotImplemented)
	}
	if len(groups) == 0 {
		// Nothing to be sorted on: a global aggregate is a hash aggregate.
		return nil, fmt.Errorf("%w: sort aggregation needs group keys", ErrInvalid)
	}
	c, err := newAggCore(ec, child, groups, groupNames, aggs, nil)
	if err != nil {
		return nil, err
	}
	return &sortAggOp{aggCore: c}, nil
}

func (s *sortAggOp) Schema() *arrow.Schema { return s.schema }

func (s *sortAggOp) Open(ctx context.Context) error {
	if s.opened {
		return nil
	}
	s.opened = true
	s.base = s.ec.allocated()
	return s.child.Open(ctx)
}

// sameKey reports whether row i of a and row j of b are equal keys (NULL
// equal to NULL).
func sameKey(a []arrow.Array, i int, b []arrow.Array, j int) (bool, error) {
	eq, err := newKeyEq(a, b)
	if err != nil {
		return false, err
	}
	return eq.same(i, j), nil
}

// keyEq compares rows of the key columns a with rows of b (NULL equal to
// NULL) through comparators made once: making them per row was a tenth
// of q47's CPU (window partition boundaries).
type keyEq struct {
	a, b []arrow.Array
	cmps []func(i, j int) int
}

func newKeyEq(a, b []arrow.Array) (*keyEq, error) {
	e := &keyEq{a: a, b: b, cmps: make([]func(i, j int) int, len(a))}
	for k := range a {
		c, err := vectorized.NewComparator(a[k], b[k])
		if err != nil {
			return nil, err
		}
		e.cmps[k] = c
	}
	return e, nil
}

// same reports whether row i of a and row j of b are equal keys.
func (e *keyEq) same(i, j int) bool {
	for k, c := range e.cmps {
		an, bn := e.a[k].IsNull(i), e.b[k].IsNull(j)
		if an || bn {
			if an != bn {
				return false
			}
			continue
		}
		if c(i, j) != 0 {
			return false
		}
	}
	return true
}

func (s *sortAggOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if !s.opened {
		return nil, fmt.Errorf("%w: aggregate read before Open", ErrInvalid)
	}
	for !s.eof {
		b, err := Next(ctx, s.child)
		if errors.Is(err, io.EOF) {
			s.eof = true
			break
		}
		if err != nil {
			return nil, err
		}
		if err := s.consume(ctx, b); err != nil {
			return nil, err
		}
		// Over the budget, finished groups are emitted at once; with only
		// the open group left, its DISTINCT pairs go to disk and the
		// values it collects must fit.
		ab := s.accBytes()
		over := s.ec.overBudget(&s.mem, s.base, ab, ab)
		if over && s.ngroups <= 1 {
			if err := s.spillDistinct(); err != nil {
				return nil, err
			}
			if err := s.checkHeld(1, 1); err != nil {
				return nil, err
			}
		}
		// Emit once a batch worth of groups is finished (all but the open
		// one), or sooner when their state is over the budget.
		if s.ngroups-1 >= s.ec.batchSize() || over && s.ngroups > 1 {
			out, err := s.flush(ctx, s.ngroups-1)
			if err != nil {
				return nil, err
			}
			return s.cur.set(out), nil
		}
	}
	if s.ngroups == 0 && len(s.groups) == 0 {
		s.grow(1) // a global aggregate has one row even for empty input
		s.keyParts = append(s.keyParts, nil)
	}
	if s.ngroups == 0 {
		return nil, io.EOF
	}
	out, err := s.flush(ctx, s.ngroups)
	if err != nil {
		return nil, err
	}
	return s.cur.set(out), nil
}

func (s *sortAggOp) consume(ctx context.Context, b arrow.RecordBatch) error {
	n := int(b.NumRows())
	keys, err := evalAll(ctx, s.ec, s.groups, b)
	if err != nil {
		return err
	}
	defer releaseArrays(keys)
	eq, err := newKeyEq(keys, keys)
	if err != nil {
		return err
	}
	ids := make([]uint32, n)
	var fresh []int64
	g := s.ngroups - 1
	for i := 0; i < n; i++ {
		var same bool
		switch {
		case i == 0 && s.last != nil:
			if same, err = sameKey(s.last, 0, keys, 0); err != nil {
				return err
			}
		case i > 0:
			same = eq.same(i-1, i)
		}
		if !same {
			g++
			fresh = append(fresh, int64(i))
		}
		ids[i] = uint32(g)
	}
	if len(fresh) > 0 {
		part, err := vectorized.TakeColumns(ctx, s.ec.Mem, keys, fresh)
		if err != nil {
			return err
		}
		s.keyParts = append(s.keyParts, part)
		s.grow(g + 1)
	}
	releaseArrays(s.last)
	s.last = make([]arrow.Array, len(keys))
	for k, a := range keys {
		s.last[k] = array.NewSlice(a, int64(n-1), int64(n))
	}
	return s.update(ctx, b, ids, nil)
}

// flush outputs the first n groups and keeps the remaining open group (if
// any) as group 0.
func (s *sortAggOp) flush(ctx context.Context, n int) (arrow.RecordBatch, error) {
	if len(s.groups) == 0 {
		s.keyParts = nil
	}
	if err := s.finishDistinct(ctx, n); err != nil {
		return nil, err
	}
	out, err := s.output(n)
	if err != nil {
		return nil, err
	}
	open := s.ngroups - n
	s.releaseKeys()
	if open == 1 {
		keys := make([]arrow.Array, len(s.last))
		for k, a := range s.last {
			a.Retain()
			keys[k] = a
		}
		s.keyParts = [][]arrow.Array{keys}
		for _, a := range s.accs {
			a.moveTo(s.ngroups-1, 0)
		}
		s.ngroups = 1
	} else {
		s.resetAccs()
		s.ngroups = 0
	}
	return out, nil
}

func (s *sortAggOp) Close() error {
	s.cur.release()
	s.releaseKeys()
	s.releaseAccs()
	releaseArrays(s.last)
	s.last = nil
	s.mem.free()
	return s.child.Close()
}
