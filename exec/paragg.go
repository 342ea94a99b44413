package exec

import (
	"context"
	"errors"
	"hash/maphash"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// parallelAggOp runs a hash aggregation on Context.Parallelism goroutines.
// The calling goroutine reads the input and hands every batch (retained,
// not copied) to all workers; each worker handles only the rows whose group
// key hashes to it, so workers own disjoint groups and run an ordinary
// hashAggOp (DISTINCT, FILTER and spilling work unchanged). The output is
// the workers' outputs one after another.
type parallelAggOp struct {
	ec      *Context
	child   Operator
	schema  *arrow.Schema
	srcs    []*chanSource
	workers []Operator
	opened  bool
	cur     int
	out     current
}

// NewParallelHashAggregate is NewHashAggregate using Context.Parallelism
// cores. It needs at least one group and no grouping sets; otherwise (or
// with Parallelism <= 1) it returns the serial operator.
func NewParallelHashAggregate(ec *Context, child Operator, groups []Expr, groupNames []string, aggs []AggregateSpec, groupingSets [][]int) (Operator, error) {
	serial, err := NewHashAggregate(ec, child, groups, groupNames, aggs, groupingSets)
	if err != nil || ec.Workers() <= 1 || len(groups) == 0 || groupingSets != nil {
		return serial, err
	}
	p := &parallelAggOp{ec: ec, child: child, schema: serial.Schema()}
	seed := maphash.MakeSeed()
	for w := 0; w < ec.Workers(); w++ {
		src := &chanSource{ch: make(chan arrow.RecordBatch, 2)}
		op, err := NewHashAggregate(ec, NewSource(ec, child.Schema(), func(context.Context) (BatchSource, error) { return src, nil }), groups, groupNames, aggs, nil)
		if err != nil {
			return nil, err
		}
		h := op.(*hashAggOp)
		h.part, h.nparts, h.seed = w, ec.Workers(), seed
		h.own = newOwnArgs(child.Schema(), aggs)
		p.srcs = append(p.srcs, src)
		p.workers = append(p.workers, op)
	}
	return p, nil
}

func (p *parallelAggOp) Schema() *arrow.Schema { return p.schema }

func (p *parallelAggOp) Open(ctx context.Context) error {
	if p.opened {
		return nil
	}
	p.opened = true
	if err := p.child.Open(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(p.workers))
	for w, op := range p.workers {
		wg.Add(1)
		go func(w int, op Operator) {
			defer wg.Done()
			if errs[w] = safely("parallel aggregation worker", func() error { return op.Open(wctx) }); errs[w] != nil {
				cancel()
			}
			// Unblock the router if this worker stopped reading early.
			p.srcs[w].drain()
		}(w, op)
	}
	routeErr := p.broadcast(wctx)
	for _, s := range p.srcs {
		s.closeInput()
	}
	wg.Wait()
	if routeErr != nil && !errors.Is(routeErr, context.Canceled) {
		return routeErr
	}
	if err := rootCause(errs); err != nil {
		return err
	}
	return routeErr
}

// rootCause joins the workers' errors without the cancellations that one
// worker's failure caused in the others, so the cause comes first.
func rootCause(errs []error) error {
	var causes []error
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			causes = append(causes, e)
		}
	}
	if len(causes) > 0 {
		return errors.Join(causes...)
	}
	return errors.Join(errs...)
}

// broadcast hands every input batch to every worker.
func (p *parallelAggOp) broadcast(ctx context.Context) error {
	for {
		b, err := Next(ctx, p.child)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, s := range p.srcs {
			b.Retain()
			if err := s.send(ctx, b); err != nil {
				return err
			}
		}
	}
}

func (p *parallelAggOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for p.cur < len(p.workers) {
		b, err := Next(ctx, p.workers[p.cur])
		if errors.Is(err, io.EOF) {
			p.cur++
			continue
		}
		if err != nil {
			return nil, err
		}
		return p.out.set(array.NewRecordBatch(p.schema, b.Columns(), b.NumRows())), nil
	}
	return nil, io.EOF
}

func (p *parallelAggOp) Close() error {
	p.out.release()
	var errs []error
	for _, w := range p.workers {
		errs = append(errs, w.Close())
	}
	for _, s := range p.srcs {
		s.closeInput()
		s.drain()
	}
	errs = append(errs, p.child.Close())
	return errors.Join(errs...)
}

// chanSource is a BatchSource fed through a channel by another goroutine;
// each batch arrives retained and is released when the next is read.
type chanSource struct {
	ch     chan arrow.RecordBatch
	cur    arrow.RecordBatch
	once   sync.Once
	closed sync.Once
}

func (c *chanSource) send(ctx context.Context, b arrow.RecordBatch) error {
	select {
	case c.ch <- b:
		return nil
	case <-ctx.Done():
		b.Release()
		return ctx.Err()
	}
}

func (c *chanSource) closeInput() { c.once.Do(func() { close(c.ch) }) }

func (c *chanSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	select {
	case b, ok := <-c.ch:
		if !ok {
			return nil, io.EOF
		}
		c.cur = b
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// drain discards what is still queued (the reader has stopped).
func (c *chanSource) drain() {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	for {
		select {
		case b, ok := <-c.ch:
			if !ok {
				return
			}
			b.Release()
		default:
			return
		}
	}
}

func (c *chanSource) Close() error { return nil }
