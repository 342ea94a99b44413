package exec

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/internal/arrowshare"
)

// KeepLeftOrder makes the hash join op return its rows in its left
// input's order (the planner asks for it where an operator above relies on
// that order): it then probes on the caller's goroutine only. Other
// operators are returned unchanged.
func KeepLeftOrder(op Operator) Operator {
	if j, ok := op.(*joinOp); ok {
		j.parallel = false
	}
	return op
}

// canProbeInParallel reports whether the rest of the left input may be
// probed by parallel workers: a hash join probed in memory (not grace,
// block or merge mode) whose output rows each come from one probe row
// (not right or full joins, which mark the build rows matched; the
// null-aware anti join's NULL build key is known by now), with more than
// one core and no order to keep, once it has probed one left batch. That
// threshold keeps a probe side of a single batch (a point query, a small
// dimension) on the caller's goroutine: it has nothing to overlap, so
// goroutines and channel hand-offs would only add to it.
func (j *joinOp) canProbeInParallel() bool {
	switch j.typ {
	case InnerJoin, LeftJoin, SemiJoin, AntiJoin, NullAwareAntiJoin:
	default:
		return false
	}
	return j.parallel && j.probed > 0 && j.hash != nil && j.merge == nil && j.matched == nil &&
		j.leftSeen == nil && j.ec.Workers() > 1
}

// parallelProbe probes a hash join's left batches on Context.Workers
// goroutines against the join's build table and index, which they share
// and only read (as DuckDB probes on every thread). Each worker owns a
// prober (candidates, scratch, residual predicate, output coalescer); the
// workers take turns reading the left input and send coalesced batches
// on a channel of one slot per worker, so what is in flight stays a few
// batches per worker. Output order is arbitrary. The first error wins and
// cancels the others; stop waits for every worker.
type parallelProbe struct {
	cancel context.CancelFunc
	left   Operator
	// mu serializes the reads of left; leftDone is set at its end or
	// first error, after which no worker reads it again.
	mu       sync.Mutex
	leftDone bool
	out      chan arrow.RecordBatch // closed when every worker has ended
	errMu    sync.Mutex
	err      error
}

// startParallelProbe starts the workers of j's probe under ctx.
func startParallelProbe(ctx context.Context, j *joinOp) *parallelProbe {
	for _, c := range j.build.cols { // the workers read them at once
		arrowshare.Settle(c)
	}
	n := j.ec.Workers()
	ctx, cancel := context.WithCancel(ctx)
	pp := &parallelProbe{cancel: cancel, left: j.left, out: make(chan arrow.RecordBatch, n)}
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		p := newProber(j, &hashProbe{hashIndex: j.hash})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.release()
			if err := safely("hash join probe", func() error { return pp.run(ctx, &p) }); err != nil {
				pp.fail(err)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(pp.out)
	}()
	return pp
}

// run probes left batches with p until the left input ends.
func (pp *parallelProbe) run(ctx context.Context, p *prober) error {
	ec := p.j.ec
	for {
		b, err := pp.nextLeft(ctx)
		if errors.Is(err, io.EOF) {
			out, err := p.out.flush(ec)
			if out == nil || err != nil {
				return err
			}
			return pp.send(ctx, out)
		}
		if err != nil {
			return err
		}
		err = p.startLeft(ctx, b)
		b.Release()
		for err == nil && !p.tail {
			var out arrow.RecordBatch
			if out, err = p.probeChunk(ctx); err == nil {
				err = pp.emit(ctx, p, out)
			}
		}
		if err == nil {
			var out arrow.RecordBatch
			if out, err = p.leftTail(ctx); err == nil {
				err = pp.emit(ctx, p, out)
			}
		}
		p.endLeft()
		if err != nil {
			return err
		}
	}
}

// nextLeft reads the next left batch (retained) for one worker.
func (pp *parallelProbe) nextLeft(ctx context.Context) (arrow.RecordBatch, error) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.leftDone {
		return nil, io.EOF
	}
	b, err := Next(ctx, pp.left)
	if err != nil {
		pp.leftDone = true
		return nil, err
	}
	b.Retain()
	return b, nil
}

// emit passes b (nil: none) through p's coalescer and sends what it
// completes.
func (pp *parallelProbe) emit(ctx context.Context, p *prober, b arrow.RecordBatch) error {
	if b == nil {
		return ctx.Err()
	}
	out, err := p.out.add(p.j.ec, b)
	if out == nil || err != nil {
		return err
	}
	return pp.send(ctx, out)
}

// send hands b (owned) to the consumer.
func (pp *parallelProbe) send(ctx context.Context, b arrow.RecordBatch) error {
	select {
	case pp.out <- b:
		return nil
	case <-ctx.Done():
		b.Release()
		return ctx.Err()
	}
}

// fail records the first error and stops the other workers.
func (pp *parallelProbe) fail(err error) {
	pp.errMu.Lock()
	if pp.err == nil {
		pp.err = err
	}
	pp.errMu.Unlock()
	pp.cancel()
}

func (pp *parallelProbe) failure() error {
	pp.errMu.Lock()
	defer pp.errMu.Unlock()
	return pp.err
}

// nextParallel returns the workers' batches, through the coalescer of the
// serial probe before them: it joins their last, small batches.
func (j *joinOp) nextParallel(ctx context.Context) (arrow.RecordBatch, error) {
	j.cur.release()
	for {
		b, err := j.par.next(ctx)
		if errors.Is(err, io.EOF) {
			out, err := j.p.out.flush(j.ec)
			if out == nil && err == nil {
				return nil, io.EOF
			}
			return j.cur.set(out), err
		}
		if err != nil {
			return nil, err
		}
		if out, err := j.emit(b); out != nil || err != nil {
			return out, err
		}
	}
}

// next returns the workers' next batch (owned), the first error, or io.EOF
// once they have all ended.
func (pp *parallelProbe) next(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case b, ok := <-pp.out:
		if err := pp.failure(); err != nil {
			if ok {
				b.Release()
			}
			return nil, err
		}
		if !ok {
			return nil, io.EOF
		}
		return b, nil
	}
}

// stop cancels the workers and waits for them, releasing what they sent.
func (pp *parallelProbe) stop() {
	if pp == nil {
		return
	}
	pp.cancel()
	for b := range pp.out {
		b.Release()
	}
}
