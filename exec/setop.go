package exec

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/vectorized"
)

// SetOpKind is INTERSECT or EXCEPT.
type SetOpKind int

// Set operations (UNION is NewUnionAll plus NewDistinct).
const (
	Intersect SetOpKind = iota
	Except
)

func (k SetOpKind) String() string { return [...]string{"INTERSECT", "EXCEPT"}[k] }

type setOp struct {
	ec          *Context
	left, right Operator
	op          SetOpKind
	all         bool
	opened      bool
	counts      map[string]int64 // right rows (EXCEPT/INTERSECT ALL: multiplicity)
	emitted     map[string]struct{}
	enc         vectorized.KeyEncoder
	cur         current
}

// NewSetOp returns left INTERSECT/EXCEPT [ALL] right. Rows compare with NULL
// equal to NULL, as SQL set operations do; the output has left's schema.
// Without ALL the output has no duplicates.
func NewSetOp(ec *Context, left, right Operator, op SetOpKind, all bool) (Operator, error) {
	if err := sameTypes(left.Schema(), right.Schema()); err != nil {
		return nil, fmt.Errorf("%w: %s inputs: %v", ErrInvalid, op, err)
	}
	if op != Intersect && op != Except {
		return nil, fmt.Errorf("%w: unknown set operation %d", ErrInvalid, op)
	}
	return &setOp{ec: ec, left: left, right: right, op: op, all: all}, nil
}

func (s *setOp) Schema() *arrow.Schema { return s.left.Schema() }

func (s *setOp) Open(ctx context.Context) error {
	if s.opened {
		return nil
	}
	s.opened = true
	if err := s.left.Open(ctx); err != nil {
		return err
	}
	if err := s.right.Open(ctx); err != nil {
		return err
	}
	s.counts = map[string]int64{}
	s.emitted = map[string]struct{}{}
	for {
		b, err := Next(ctx, s.right)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.enc.Encode(b.Columns(), int(b.NumRows())); err != nil {
			return err
		}
		for i := 0; i < int(b.NumRows()); i++ {
			s.counts[string(s.enc.Key(i))]++
		}
	}
}

func (s *setOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if !s.opened {
		return nil, fmt.Errorf("%w: set operation read before Open", ErrInvalid)
	}
	for {
		b, err := Next(ctx, s.left)
		if err != nil {
			return nil, err
		}
		n := int(b.NumRows())
		if err := s.enc.Encode(b.Columns(), n); err != nil {
			return nil, err
		}
		mask := make([]bool, n)
		cnt := 0
		for i := 0; i < n; i++ {
			k := string(s.enc.Key(i))
			c := s.counts[k]
			var keep bool
			switch {
			case s.all && s.op == Intersect:
				keep = c > 0
				if keep {
					s.counts[k] = c - 1
				}
			case s.all: // EXCEPT ALL
				keep = c == 0
				if !keep {
					s.counts[k] = c - 1
				}
			default:
				if _, done := s.emitted[k]; !done && (c > 0) == (s.op == Intersect) {
					keep = true
					s.emitted[k] = struct{}{}
				}
			}
			if keep {
				mask[i] = true
				cnt++
			}
		}
		if cnt == 0 {
			continue
		}
		out, err := vectorized.FilterBatch(ctx, s.ec.Mem, b, mask, cnt)
		if err != nil {
			return nil, err
		}
		return s.cur.set(out), nil
	}
}

func (s *setOp) Close() error {
	s.cur.release()
	s.counts, s.emitted = nil, nil
	return errors.Join(s.left.Close(), s.right.Close())
}

type distinctOp struct {
	ec    *Context
	child Operator
	seen  map[string]struct{}
	enc   vectorized.KeyEncoder
	cur   current
}

// NewDistinct removes duplicate rows (NULL equal to NULL), streaming: the
// first occurrence of each row is emitted as soon as it is seen.
func NewDistinct(ec *Context, child Operator) Operator {
	return &distinctOp{ec: ec, child: child}
}

func (d *distinctOp) Schema() *arrow.Schema { return d.child.Schema() }

func (d *distinctOp) Open(ctx context.Context) error {
	if d.seen == nil {
		d.seen = map[string]struct{}{}
	}
	return d.child.Open(ctx)
}

func (d *distinctOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		b, err := Next(ctx, d.child)
		if err != nil {
			return nil, err
		}
		n := int(b.NumRows())
		if err := d.enc.Encode(b.Columns(), n); err != nil {
			return nil, err
		}
		mask := make([]bool, n)
		cnt := 0
		for i := 0; i < n; i++ {
			k := d.enc.Key(i)
			if _, ok := d.seen[string(k)]; !ok {
				d.seen[string(k)] = struct{}{}
				mask[i] = true
				cnt++
			}
		}
		if cnt == 0 {
			continue
		}
		out, err := vectorized.FilterBatch(ctx, d.ec.Mem, b, mask, cnt)
		if err != nil {
			return nil, err
		}
		return d.cur.set(out), nil
	}
}

func (d *distinctOp) Close() error {
	d.cur.release()
	d.seen = nil
	return d.child.Close()
}
