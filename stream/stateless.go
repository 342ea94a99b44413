package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// Filter keeps the changes whose row satisfies a predicate. A row's kind
// passes through unchanged: a -U whose +U is filtered out still retracts
// the row the consumer has, and a +U without its -U adds one.
type Filter struct {
	ec   *exec.Context
	in   Operator
	pred exec.Expr
	out  arrow.RecordBatch
	// imageStart: a chunk that began a full read was filtered out whole;
	// the next chunk begins it.
	imageStart bool
}

// NewFilter filters in by pred, compiled over in's schema.
func NewFilter(ec *exec.Context, in Operator, pred exec.Expr) *Filter {
	return &Filter{ec: ec, in: in, pred: pred}
}

func (f *Filter) Schema() *arrow.Schema { return f.in.Schema() }

func (f *Filter) Open(ctx context.Context) error { return f.in.Open(ctx) }

func (f *Filter) Next(ctx context.Context) (Chunk, error) {
	f.release()
	for {
		c, err := f.in.Next(ctx)
		if err != nil {
			return c, err
		}
		c.ImageStart = c.ImageStart || f.imageStart
		f.imageStart = false
		if c.Batch == nil {
			return c, nil
		}
		m, err := f.pred.Eval(ctx, f.ec, c.Batch)
		if err != nil {
			return Chunk{}, err
		}
		mask, n := vectorized.TrueBits(f.ec.Mem, m)
		m.Release()
		if n == 0 {
			mask.Release()
			f.imageStart = c.ImageStart
			continue
		}
		out, err := vectorized.FilterMask(ctx, f.ec.Mem, c.Batch, mask, n)
		mask.Release()
		if err != nil {
			return Chunk{}, err
		}
		f.out = out
		c.Batch = out
		return c, nil
	}
}

func (f *Filter) release() {
	if f.out != nil {
		f.out.Release()
		f.out = nil
	}
}

func (f *Filter) Close() error {
	f.release()
	return f.in.Close()
}

// Project computes expressions over each change, keeping its row kind.
type Project struct {
	ec     *exec.Context
	in     Operator
	exprs  []exec.Expr
	schema *arrow.Schema
	out    arrow.RecordBatch
}

// NewProject computes exprs (compiled over in's schema) named names.
func NewProject(ec *exec.Context, in Operator, exprs []exec.Expr, names []string) *Project {
	fields := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		fields[i] = arrow.Field{Name: names[i], Type: e.DataType(), Nullable: true}
	}
	return &Project{ec: ec, in: in, exprs: exprs, schema: withKind(fields)}
}

func (p *Project) Schema() *arrow.Schema { return p.schema }

func (p *Project) Open(ctx context.Context) error { return p.in.Open(ctx) }

func (p *Project) Next(ctx context.Context) (Chunk, error) {
	if p.out != nil {
		p.out.Release()
		p.out = nil
	}
	c, err := p.in.Next(ctx)
	if err != nil || c.Batch == nil {
		return c, err
	}
	cols := make([]arrow.Array, 0, len(p.exprs)+1)
	defer func() {
		for _, a := range cols {
			a.Release()
		}
	}()
	kind := c.Batch.Column(0)
	kind.Retain()
	cols = append(cols, kind)
	for _, e := range p.exprs {
		a, err := e.Eval(ctx, p.ec, c.Batch)
		if err != nil {
			return Chunk{}, err
		}
		cols = append(cols, a)
	}
	p.out = array.NewRecordBatch(p.schema, cols, c.Batch.NumRows())
	c.Batch = p.out
	return c, nil
}

func (p *Project) Close() error {
	if p.out != nil {
		p.out.Release()
		p.out = nil
	}
	return p.in.Close()
}

// Observer follows the progress of a query's result (plan.StreamObserver
// over positions).
type Observer interface {
	// Rows: the next batch holds changes up to pos, or with image rows of
	// a full read (Chunk.Image).
	Rows(pos Pos, image bool)
	// CaughtUp: every change up to pos has been returned.
	CaughtUp(pos Pos) error
	// Image: a full read of a snapshot starts (start) or is complete.
	Image(pos Pos, start bool) error
}

// EventTimeObserver is an Observer told, before each CaughtUp of a query
// with event time, the watermark (zero: none yet) and how many rows were
// dropped as late.
type EventTimeObserver interface {
	EventTime(watermark time.Time, lateRows int64)
}

// Sink turns a changelog into the batches of an exec.Operator: the row
// kind stays column 0 unless perm rearranges the columns (output column i
// is column perm[i]); markers go to the observer that observe finds in the
// context, in order with the batches.
type Sink struct {
	in      Operator
	schema  *arrow.Schema
	perm    []int
	observe func(context.Context) Observer
	out     arrow.RecordBatch
}

// NewSink ends a streaming plan; schema is the result schema.
func NewSink(in Operator, schema *arrow.Schema, perm []int, observe func(context.Context) Observer) *Sink {
	return &Sink{in: in, schema: schema, perm: perm, observe: observe}
}

func (s *Sink) Schema() *arrow.Schema { return s.schema }

func (s *Sink) Open(ctx context.Context) error { return s.in.Open(ctx) }

func (s *Sink) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.out != nil {
		s.out.Release()
		s.out = nil
	}
	obs := s.observe(ctx)
	for {
		c, err := s.in.Next(ctx)
		if err != nil {
			return nil, err
		}
		if c.ImageStart && obs != nil {
			if err := obs.Image(c.Pos, true); err != nil {
				return nil, err
			}
		}
		if c.Batch == nil {
			var err error
			switch {
			case obs == nil:
			case c.Image == tablestore.ImageEnd:
				err = obs.Image(c.Pos, false)
			case c.CaughtUp:
				if eo, ok := obs.(EventTimeObserver); ok && (!c.Watermark.IsZero() || c.LateRows > 0) {
					eo.EventTime(c.Watermark, c.LateRows)
				}
				err = obs.CaughtUp(c.Pos)
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		if obs != nil {
			obs.Rows(c.Pos, c.Image == tablestore.ImageRows)
		}
		if len(s.perm) != len(s.schema.Fields()) {
			return nil, fmt.Errorf("%w: sink permutation of %d columns for %d", exec.ErrInvalid, len(s.perm), len(s.schema.Fields()))
		}
		cols := make([]arrow.Array, len(s.perm))
		for i, p := range s.perm {
			cols[i] = c.Batch.Column(p)
		}
		s.out = array.NewRecordBatch(s.schema, cols, c.Batch.NumRows())
		return s.out, nil
	}
}

func (s *Sink) Close() error {
	if s.out != nil {
		s.out.Release()
		s.out = nil
	}
	return s.in.Close()
}
