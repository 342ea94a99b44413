package changefeed

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/internal/arrowshare"
)

// Reader is a stream of batches (tablestore.BatchReader is one): Next
// returns io.EOF at the end, and a batch borrowed until the next Next or
// Close.
type Reader interface {
	Next(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

// Unit is a piece of a snapshot's changes to read (a file, or a bucket's
// merged rows) with what a reader needs to prune it. The units of a
// snapshot are independent, so they can be read in parallel.
type Unit[M any] struct {
	Meta M
	Open func(ctx context.Context) (Reader, error)
}

// Load reads every unit into memory, up to GOMAXPROCS at once, for a
// Feed's Loader; the parts keep the units' order. On an error it returns
// no part and holds no batch.
func Load[M any](ctx context.Context, units []Unit[M]) ([]Part[M], error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := make([]Part[M], len(units))
	errs := make([]error, len(units))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(units)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(units); i = int(next.Add(1)) - 1 {
				parts[i] = Part[M]{Meta: units[i].Meta}
				if parts[i].Batches, errs[i] = readAll(ctx, units[i]); errs[i] != nil {
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, p := range parts {
			releaseAll(p.Batches)
		}
		return nil, err
	}
	return parts, nil
}

// readAll returns the batches of one unit, retained and settled: the feed
// shares them among streams reading on their own goroutines.
func readAll[M any](ctx context.Context, u Unit[M]) (out []arrow.RecordBatch, err error) {
	rd, err := u.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := rd.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			releaseAll(out)
			out = nil
		}
	}()
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		b.Retain()
		arrowshare.SettleBatch(b)
		out = append(out, b)
	}
}

func releaseAll(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}

// prefetchBatches is how many batches a unit read ahead of the reader
// holds.
const prefetchBatches = 2

// Prefetch returns the batches of units in order while reading the next
// ones on up to GOMAXPROCS goroutines, each holding at most
// prefetchBatches+1 batches (its buffer and the one it hands over): the
// parallel read of what a stream reads itself (a full read, a snapshot the
// feed does not hold or that is too large to share), in bounded memory. It
// is a Reader; not safe for concurrent use.
type Prefetch[M any] struct {
	ctx    context.Context // the workers', cancelled by Close
	cancel context.CancelFunc
	units  []Unit[M]
	outs   []chan unitBatch // per started unit, closed at its end
	cur    int              // unit whose batches are returned
	last   arrow.RecordBatch
	wg     sync.WaitGroup
}

type unitBatch struct {
	b   arrow.RecordBatch
	err error
}

// NewPrefetch starts reading units; Close stops it.
func NewPrefetch[M any](units []Unit[M]) *Prefetch[M] {
	p := &Prefetch[M]{units: units}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for range min(runtime.GOMAXPROCS(0), len(units)) {
		p.start()
	}
	return p
}

// start reads the next unit not started.
func (p *Prefetch[M]) start() {
	u := p.units[len(p.outs)]
	ch := make(chan unitBatch, prefetchBatches)
	p.outs = append(p.outs, ch)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(ch)
		send := func(ub unitBatch) bool {
			select {
			case ch <- ub:
				return true
			case <-p.ctx.Done():
				return false
			}
		}
		rd, err := u.Open(p.ctx)
		if err != nil {
			send(unitBatch{err: err})
			return
		}
		for {
			b, err := rd.Next(p.ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rd.Close()
				send(unitBatch{err: err})
				return
			}
			b.Retain()
			if !send(unitBatch{b: b}) {
				b.Release()
				break
			}
		}
		if err := rd.Close(); err != nil {
			send(unitBatch{err: err})
		}
	}()
}

// Next returns the next batch, borrowed until the next Next or Close.
func (p *Prefetch[M]) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if p.last != nil {
		p.last.Release()
		p.last = nil
	}
	for p.cur < len(p.units) {
		select {
		case ub, ok := <-p.outs[p.cur]:
			if !ok {
				p.cur++
				if len(p.outs) < len(p.units) {
					p.start()
				}
				continue
			}
			if ub.err != nil {
				return nil, ub.err
			}
			p.last = ub.b
			return ub.b, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, io.EOF
}

// Close stops the workers and releases what they read ahead.
func (p *Prefetch[M]) Close() error {
	p.cancel()
	for _, ch := range p.outs[min(p.cur, len(p.outs)):] {
		for ub := range ch {
			if ub.b != nil {
				ub.b.Release()
			}
		}
	}
	p.wg.Wait()
	if p.last != nil {
		p.last.Release()
		p.last = nil
	}
	return nil
}
