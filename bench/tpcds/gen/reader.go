package gen

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Reader yields the batches of one table in row order, generating them on
// several goroutines. Next returns io.EOF at the end; the caller owns every
// batch it returns. Close must be called (it is safe to call twice).
type Reader struct {
	schema  *arrow.Schema
	results chan chan arrow.RecordBatch
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
	pending []chan arrow.RecordBatch // slots taken by a cancelled Next; Close drains them
}

// NewReader starts generating table in batches of batchSize rows on
// workers goroutines (at least 1), keeping at most 2*workers batches ahead.
func (g *Generator) NewReader(ctx context.Context, mem memory.Allocator, name string, batchSize, workers int) (*Reader, error) {
	t, err := g.table(name)
	if err != nil {
		return nil, err
	}
	if batchSize <= 0 {
		return nil, fmt.Errorf("table %s: batch size %d must be positive", name, batchSize)
	}
	workers = max(workers, 1)
	ctx, cancel := context.WithCancel(ctx)
	r := &Reader{schema: t.schema, results: make(chan chan arrow.RecordBatch, 2*workers), cancel: cancel}
	type job struct {
		start, n int64
		out      chan arrow.RecordBatch
	}
	jobs := make(chan job)
	r.wg.Add(workers + 1)
	for range workers {
		go func() {
			defer r.wg.Done()
			for j := range jobs {
				j.out <- g.build(mem, t, j.start, j.n) // out has room for one
			}
		}()
	}
	go func() {
		defer r.wg.Done()
		defer close(jobs)
		defer close(r.results)
		for start := int64(0); start < t.rows; start += int64(batchSize) {
			j := job{start: start, n: min(int64(batchSize), t.rows-start), out: make(chan arrow.RecordBatch, 1)}
			// Queue the result slot first so the consumer sees batches in order.
			select {
			case r.results <- j.out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				close(j.out)
				return
			}
		}
	}()
	return r, nil
}

// Schema returns the table's Arrow schema.
func (r *Reader) Schema() *arrow.Schema { return r.schema }

// Next returns the next batch, io.EOF after the last one, or the context's
// error once it is cancelled.
func (r *Reader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.closed {
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case out, ok := <-r.results:
		if !ok {
			return nil, io.EOF
		}
		select {
		case b, ok := <-out:
			if !ok {
				return nil, context.Canceled
			}
			return b, nil
		case <-ctx.Done():
			r.pending = append(r.pending, out)
			return nil, ctx.Err()
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops the workers and releases batches generated but not returned.
func (r *Reader) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.cancel()
	done := make(chan struct{})
	go func() {
		for out := range r.results {
			drain(out)
		}
		close(done)
	}()
	for _, out := range r.pending {
		drain(out)
	}
	r.wg.Wait()
	<-done
}

// drain releases the batch of a result slot, if one arrives.
func drain(out chan arrow.RecordBatch) {
	if b, ok := <-out; ok {
		b.Release()
	}
}
