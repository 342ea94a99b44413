package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// gatherOp runs each child pipeline in its own goroutine (at most
// Context.Parallelism at a time) and returns their rows as they come, in no
// particular order. It is how a plan uses both cores: the planner splits a
// scan into partitions (files, buckets) and builds one pipeline per
// partition under a Gather. With one child it is a prefetching pipeline
// break: the child runs ahead on another core.
//
// Batches cross goroutines Retained; the consumer's borrowed batch is
// released on the next call, like any operator's.
type gatherOp struct {
	ec       *Context
	children []Operator
	schema   *arrow.Schema

	opened bool
	cancel context.CancelFunc
	ch     chan gatherItem
	wg     sync.WaitGroup
	done   int
	cur    current
	closed bool
}

type gatherItem struct {
	b   arrow.RecordBatch
	err error // io.EOF marks one child's end
}

// NewGather returns the unordered union of children computed in parallel.
// All children must have the same column types.
func NewGather(ec *Context, children ...Operator) (Operator, error) {
	if len(children) == 0 {
		return nil, fmt.Errorf("%w: gather needs at least one input", ErrInvalid)
	}
	for i, c := range children[1:] {
		if err := sameTypes(children[0].Schema(), c.Schema()); err != nil {
			return nil, fmt.Errorf("%w: gather input %d: %v", ErrInvalid, i+2, err)
		}
	}
	return &gatherOp{ec: ec, children: children, schema: children[0].Schema()}, nil
}

func (g *gatherOp) Schema() *arrow.Schema { return g.schema }

func (g *gatherOp) Open(ctx context.Context) error {
	if g.opened {
		return nil
	}
	g.opened = true
	ctx, g.cancel = context.WithCancel(ctx)
	// A small buffer per child keeps producers busy without holding much.
	g.ch = make(chan gatherItem, 2*len(g.children))
	workers := g.ec.Workers()
	sem := make(chan struct{}, workers)
	for _, c := range g.children {
		g.wg.Add(1)
		go func(c Operator) {
			defer g.wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				g.send(ctx, gatherItem{err: ctx.Err()})
				return
			}
			defer func() { <-sem }()
			g.run(ctx, c)
		}(c)
	}
	return nil
}

// run pulls one child to its end.
func (g *gatherOp) run(ctx context.Context, c Operator) {
	if err := safely("gather input Open", func() error { return c.Open(ctx) }); err != nil {
		g.send(ctx, gatherItem{err: err})
		return
	}
	for {
		b, err := Next(ctx, c)
		if err != nil {
			g.send(ctx, gatherItem{err: err})
			return
		}
		b.Retain()
		if !g.send(ctx, gatherItem{b: b}) {
			b.Release()
			return
		}
	}
}

func (g *gatherOp) send(ctx context.Context, it gatherItem) bool {
	select {
	case g.ch <- it:
		return true
	case <-ctx.Done():
		return false
	}
}

func (g *gatherOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if !g.opened {
		return nil, fmt.Errorf("%w: gather read before Open", ErrInvalid)
	}
	g.cur.release()
	for g.done < len(g.children) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case it := <-g.ch:
			if errors.Is(it.err, io.EOF) {
				g.done++
				continue
			}
			if it.err != nil {
				g.done = len(g.children)
				return nil, it.err
			}
			if !it.b.Schema().Equal(g.schema) {
				out := array.NewRecordBatch(g.schema, it.b.Columns(), it.b.NumRows())
				it.b.Release()
				return g.cur.set(out), nil
			}
			return g.cur.set(it.b), nil
		}
	}
	return nil, io.EOF
}

func (g *gatherOp) Close() error {
	g.cur.release()
	if g.closed {
		return nil
	}
	g.closed = true
	if g.opened {
		g.cancel()
		// Drain until every producer has stopped, releasing what they sent.
		stopped := make(chan struct{})
		go func() { g.wg.Wait(); close(stopped) }()
	drain:
		for {
			select {
			case it := <-g.ch:
				if it.b != nil {
					it.b.Release()
				}
			case <-stopped:
				break drain
			}
		}
		for {
			select {
			case it := <-g.ch:
				if it.b != nil {
					it.b.Release()
				}
				continue
			default:
			}
			break
		}
	}
	var errs []error
	for _, c := range g.children {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
