package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/flightd/flightd/internal/arrowshare"
)

// Spool computes its input once and replays it to any number of readers
// (a common table expression referenced several times). The first reader
// to ask for a batch drains the input: batches stay in memory up to
// Context.MemoryLimit, the rest goes to a spill file that every reader
// reads through its own handle. The input is closed, and the memory and
// file released, when the last reader closes.
//
// Readers may run on different goroutines; each reader is used by one.
type Spool struct {
	ec     *Context
	input  Operator
	schema *arrow.Schema

	mu      sync.Mutex
	filled  bool
	err     error
	batches []arrow.RecordBatch // owned
	file    *spillFile          // finished, or nil
	readers int                 // open readers
	mem     memAccount
}

// NewSpool takes ownership of input.
func NewSpool(ec *Context, input Operator) *Spool {
	return &Spool{ec: ec, input: input, schema: input.Schema()}
}

// Reader returns an operator that replays the spool from the start. Every
// reader must be closed; the last Close releases the spool.
func (s *Spool) Reader() Operator {
	s.mu.Lock()
	s.readers++
	s.mu.Unlock()
	return &spoolReader{s: s}
}

// fill drains the input once; later calls return the first call's error.
func (s *Spool) fill(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filled {
		return s.err
	}
	s.filled = true
	s.err = s.drain(ctx)
	return s.err
}

func (s *Spool) drain(ctx context.Context) error {
	if err := s.input.Open(ctx); err != nil {
		return err
	}
	// Small batches are merged before they are kept: a CTE doubling itself
	// by UNION ALL fed its spools one-row batches, and millions of them
	// cost batch headers the budget does not count.
	var co coalescer
	defer co.release()
	base, held := s.ec.allocated(), int64(0)
	keep := func(b arrow.RecordBatch) error { // takes ownership of b
		if s.file == nil && !s.ec.overBudget(&s.mem, base, held+batchBytes(b), held+batchBytes(b)) {
			arrowshare.SettleBatch(b) // readers may be on other goroutines
			s.batches = append(s.batches, b)
			held += batchBytes(b)
			return nil
		}
		defer b.Release()
		if s.file == nil {
			var err error
			if s.file, err = newSpillFile(s.ec, s.schema); err != nil {
				return err
			}
		}
		return s.file.write(b)
	}
	for {
		b, err := Next(ctx, s.input)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		b.Retain()
		if b, err = co.add(s.ec, b); err != nil {
			return err
		}
		if b != nil {
			if err := keep(b); err != nil {
				return err
			}
		}
	}
	b, err := co.flush(s.ec)
	if err != nil {
		return err
	}
	if b != nil {
		if err := keep(b); err != nil {
			return err
		}
	}
	if s.file != nil {
		return s.file.finish()
	}
	return nil
}

// release drops one reader; the last one frees everything.
func (s *Spool) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readers--
	if s.readers > 0 {
		return nil
	}
	releaseBatches(s.batches)
	s.batches = nil
	s.mem.free()
	if s.file != nil {
		s.file.remove()
		s.file = nil
	}
	return s.input.Close()
}

// spoolReader replays a Spool: its memory batches (borrowed from the
// spool, which keeps them until the last reader closes), then its file.
type spoolReader struct {
	s      *Spool
	pos    int
	f      *os.File
	r      *ipc.Reader
	done   bool
	closed bool
}

var _ Operator = (*spoolReader)(nil)

func (r *spoolReader) Schema() *arrow.Schema { return r.s.schema }

func (r *spoolReader) Open(context.Context) error { return nil }

func (r *spoolReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.closed {
		return nil, fmt.Errorf("%w: spool read after Close", ErrInvalid)
	}
	if err := r.s.fill(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// After fill the batches and file no longer change until release.
	if r.pos < len(r.s.batches) {
		r.pos++
		return r.s.batches[r.pos-1], nil
	}
	if r.done || r.s.file == nil || r.s.file.rows == 0 {
		return nil, io.EOF
	}
	if r.r == nil {
		f, err := os.Open(r.s.file.f.Name())
		if err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		r.f = f
		rd, err := ipc.NewReader(bufio.NewReaderSize(f, 1<<16), ipc.WithAllocator(r.s.ec.Mem), ipc.WithSchema(r.s.schema))
		if err != nil {
			return nil, fmt.Errorf("spool %s: %w", f.Name(), err)
		}
		r.r = rd
	}
	if r.r.Next() {
		return r.r.RecordBatch(), nil
	}
	r.done = true
	if err := r.r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("spool %s: %w", r.f.Name(), err)
	}
	return nil, io.EOF
}

func (r *spoolReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.r != nil {
		r.r.Release()
		r.r = nil
	}
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	return r.s.release()
}
