package exec

import (
	"context"
	"errors"
	"hash/maphash"
	"io"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/internal/arrowshare"
	"github.com/flightd/flightd/vectorized"
)

// parallelAggOp runs a hash aggregation on Context.Parallelism goroutines.
// The calling goroutine reads the input and hands every batch (retained,
// not copied) to all workers; each worker handles only the rows whose group
// key hashes to it, so workers own disjoint groups and run an ordinary
// hashAggOp (DISTINCT, FILTER and spilling work unchanged). The group keys
// of a batch are evaluated, encoded and hashed once, by the first worker
// to read it, for all (routedBatch). The output is the workers' outputs
// one after another.
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
		src := &chanSource{ch: make(chan *routedBatch, 2)}
		op, err := NewHashAggregate(ec, NewSource(ec, child.Schema(), func(context.Context) (BatchSource, error) { return src, nil }), groups, groupNames, aggs, nil)
		if err != nil {
			return nil, err
		}
		h := op.(*hashAggOp)
		h.part, h.nparts, h.seed, h.in = w, ec.Workers(), seed, src
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
		b.Retain()
		arrowshare.SettleBatch(b) // the workers read it at once
		r := &routedBatch{b: b}
		r.refs.Store(int32(len(p.srcs)))
		for i, s := range p.srcs {
			if err := s.send(ctx, r); err != nil {
				// The workers not sent to will not release it.
				for range p.srcs[i+1:] {
					r.release()
				}
				return err
			}
		}
	}
}

// routedBatch is one input batch of a parallel aggregation, shared by the
// workers, with its group keys: evaluated, encoded (enc, nil for one
// integer key and for keys that pack into one) and hashed with the workers' seed once, by the first worker
// to need them (keysOf), and only read after that.
type routedBatch struct {
	b      arrow.RecordBatch
	refs   atomic.Int32 // workers that have not released it
	once   sync.Once
	err    error
	keys   []arrow.Array
	enc    *vectorized.KeyEncoder
	hashes []uint64
	// Packed keys (see groupPack) and the rows that did not pack, which
	// enc and hashes then cover.
	ints []int64
	wide []bool
}

var encoders = sync.Pool{New: func() any { return new(vectorized.KeyEncoder) }}

// keysOf returns r's group keys, computing them on the first call; the
// caller must not change them.
func (r *routedBatch) keysOf(ctx context.Context, h *hashAggOp) error {
	r.once.Do(func() {
		if r.keys, r.err = evalAll(ctx, h.ec, h.groups, r.b); r.err != nil {
			return
		}
		for _, k := range r.keys {
			k.NullN() // computes and caches the count here, not racing in the readers
		}
		if len(r.keys) == 1 && vectorized.IsIntKeyType(r.keys[0].DataType()) {
			return // the workers read the integers; their hash is cheap
		}
		n := int(r.b.NumRows())
		if p := h.packFor(r.keys); p != nil {
			var sc packScratch // the batch keeps these slices
			if r.ints, r.wide = p.pack(r.keys, n, &sc); r.wide == nil {
				return // as one integer key
			}
		}
		r.enc = encoders.Get().(*vectorized.KeyEncoder)
		if r.err = r.enc.Encode(r.keys, n); r.err != nil {
			return
		}
		r.hashes = make([]uint64, n)
		for i := range r.hashes {
			r.hashes[i] = maphash.Bytes(h.seed, r.enc.Key(i))
		}
	})
	return r.err
}

// release drops one worker's hold; the last frees the batch and its keys.
func (r *routedBatch) release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	r.b.Release()
	releaseArrays(r.keys)
	if r.enc != nil {
		encoders.Put(r.enc)
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
// each batch arrives held and is released when the next is read. cur is
// the batch last returned, for its keys.
type chanSource struct {
	ch     chan *routedBatch
	cur    *routedBatch
	once   sync.Once
	closed sync.Once
}

func (c *chanSource) send(ctx context.Context, r *routedBatch) error {
	select {
	case c.ch <- r:
		return nil
	case <-ctx.Done():
		r.release()
		return ctx.Err()
	}
}

func (c *chanSource) closeInput() { c.once.Do(func() { close(c.ch) }) }

func (c *chanSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if c.cur != nil {
		c.cur.release()
		c.cur = nil
	}
	select {
	case r, ok := <-c.ch:
		if !ok {
			return nil, io.EOF
		}
		c.cur = r
		return r.b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// drain discards what is still queued (the reader has stopped).
func (c *chanSource) drain() {
	if c.cur != nil {
		c.cur.release()
		c.cur = nil
	}
	for {
		select {
		case r, ok := <-c.ch:
			if !ok {
				return
			}
			r.release()
		default:
			return
		}
	}
}

func (c *chanSource) Close() error { return nil }
