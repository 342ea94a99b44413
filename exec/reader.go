package exec

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

type recordReader struct {
	refs   atomic.Int64
	ctx    context.Context
	op     Operator
	opened bool
	done   bool
	cur    arrow.RecordBatch
	err    error
}

// NewRecordReader adapts op to arrow's RecordReader (for Flight DoGet). The
// reader opens op on the first Next and closes it at the end, on error, or
// on the last Release. Err reports the error that ended the stream.
func NewRecordReader(ctx context.Context, op Operator) array.RecordReader {
	r := &recordReader{ctx: ctx, op: op}
	r.refs.Store(1)
	return r
}

func (r *recordReader) Retain() { r.refs.Add(1) }

func (r *recordReader) Release() {
	if r.refs.Add(-1) == 0 {
		r.finish(nil)
	}
}

func (r *recordReader) Schema() *arrow.Schema { return r.op.Schema() }

func (r *recordReader) finish(err error) {
	if r.err == nil && err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if !r.done {
		r.done = true
		if cerr := r.op.Close(); cerr != nil && r.err == nil {
			r.err = cerr
		}
	}
}

func (r *recordReader) Next() bool {
	if r.done {
		return false
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if !r.opened {
		r.opened = true
		if err := r.op.Open(r.ctx); err != nil {
			r.finish(err)
			return false
		}
	}
	b, err := Next(r.ctx, r.op)
	if err != nil {
		r.finish(err)
		return false
	}
	// The reader's batch must outlive the operator's next call only until
	// our next Next, but Retain keeps it valid even if the operator is closed.
	b.Retain()
	r.cur = b
	return true
}

func (r *recordReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated alias of RecordBatch required by the interface.
func (r *recordReader) Record() arrow.RecordBatch { return r.cur }

func (r *recordReader) Err() error { return r.err }

// Collect opens op, reads all its batches (retained) and closes it. The
// caller releases the batches.
func Collect(ctx context.Context, op Operator) (out []arrow.RecordBatch, err error) {
	defer func() {
		if cerr := op.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			releaseBatches(out)
			out = nil
		}
	}()
	if err := op.Open(ctx); err != nil {
		return nil, err
	}
	for {
		b, err := Next(ctx, op)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		b.Retain()
		out = append(out, b)
	}
}

// Drain opens op, reads and discards all its rows, closes it, and returns
// the row count.
func Drain(ctx context.Context, op Operator) (rows int64, err error) {
	defer func() {
		if cerr := op.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := op.Open(ctx); err != nil {
		return 0, err
	}
	for {
		b, err := Next(ctx, op)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		rows += b.NumRows()
	}
}

// OpStats are the counters Instrument records.
type OpStats struct {
	Label   string
	Rows    int64
	Batches int64
	// Wall is the time spent in Open and Next, children included.
	Wall time.Duration
}

// Instrumented is an operator wrapped by Instrument.
type Instrumented struct {
	Operator
	stats OpStats
}

// Instrument wraps op to count rows, batches and wall time for EXPLAIN
// ANALYZE; read them with Stats after execution.
func Instrument(op Operator, label string) Operator {
	return &Instrumented{Operator: op, stats: OpStats{Label: label}}
}

// Stats returns the counters so far.
func (in *Instrumented) Stats() OpStats { return in.stats }

// Open implements Operator.
func (in *Instrumented) Open(ctx context.Context) error {
	start := time.Now()
	err := in.Operator.Open(ctx)
	in.stats.Wall += time.Since(start)
	return err
}

// Next implements Operator.
func (in *Instrumented) Next(ctx context.Context) (arrow.RecordBatch, error) {
	start := time.Now()
	b, err := in.Operator.Next(ctx)
	in.stats.Wall += time.Since(start)
	if err == nil {
		in.stats.Rows += b.NumRows()
		in.stats.Batches++
	}
	return b, err
}
