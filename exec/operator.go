package exec

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultBatchSize is the number of rows operators aim for per batch (the
// MonetDB/X100 value CockroachDB also uses). Tests randomize it.
const DefaultBatchSize = 1024

// Context carries what every operator of one execution shares. Plans are
// immutable; a Context and the operators built with it belong to one
// execution.
type Context struct {
	// Mem allocates every buffer of the execution. Never nil.
	Mem memory.Allocator
	// BatchSize is the target row count of produced batches (>= 1).
	BatchSize int
	// Now is the statement time that current_date and current_timestamp
	// return; NewContext sets it. Zero means the wall clock at each call.
	Now time.Time
	// MemoryLimit is the budget in bytes that one stateful operator may hold
	// before spilling, or failing with ErrMemoryLimit where it cannot (0 =
	// unlimited); see the package documentation.
	MemoryLimit int64
	// Pool, if set, bounds what the operators of all executions sharing it
	// hold together (see MemoryPool); ReleaseMemory frees this execution's
	// share.
	Pool *MemoryPool
	// TempDir is where operators spill (empty = os.TempDir()).
	TempDir string
	// Parallelism is the number of goroutines an operator may use: 0 means
	// runtime.GOMAXPROCS(0), 1 (or less) serial.
	Parallelism int

	spilledRows atomic.Int64

	resMu        sync.Mutex
	reservations []*Reservation
	released     bool

	working workingMemory
}

// SpilledRows returns how many rows operators of this execution wrote to
// spill files.
func (ec *Context) SpilledRows() int64 { return ec.spilledRows.Load() }

// NoteSpilledRows counts n rows (or state entries) spilled by an operator
// outside this package (stream state).
func (ec *Context) NoteSpilledRows(n int64) { ec.spilledRows.Add(n) }

// NewContext returns a Context with the default batch size and the current
// statement time.
func NewContext(mem memory.Allocator) *Context {
	return &Context{Mem: mem, BatchSize: DefaultBatchSize, Now: time.Now()}
}

func (ec *Context) now() time.Time {
	if ec.Now.IsZero() {
		return time.Now()
	}
	return ec.Now
}

// Workers is the number of goroutines Parallelism allows (at least 1).
func (ec *Context) Workers() int {
	if ec.Parallelism == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return max(ec.Parallelism, 1)
}

func (ec *Context) batchSize() int {
	if ec.BatchSize < 1 {
		return DefaultBatchSize
	}
	return ec.BatchSize
}

// Operator is a pull-based physical operator.
//
// Open opens the operator and its children; Next returns the next batch or
// io.EOF at the end and never a batch of zero rows; Close releases all
// resources, is safe without Open and safe to call twice.
//
// A batch returned by Next is borrowed: it stays valid until the next call to
// Next or Close on the same operator. A caller that keeps it longer must
// Retain it (and later Release it).
type Operator interface {
	Schema() *arrow.Schema
	Open(ctx context.Context) error
	Next(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

// safely runs f, turning a panic into an error (for operator work on
// goroutines other than the caller's, where a panic would kill the process).
func safely(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("exec: panic in %s: %v\n%s", what, r, debug.Stack())
		}
	}()
	return f()
}

// Next pulls the next batch from op: it checks cancellation first, turns a
// panic into an error with a stack, and skips zero-row batches defensively.
func Next(ctx context.Context, op Operator) (b arrow.RecordBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("exec: panic in %T: %v\n%s", op, r, debug.Stack())
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err = op.Next(ctx)
		if err != nil {
			return nil, err
		}
		if b == nil {
			return nil, io.EOF
		}
		if b.NumRows() > 0 {
			return b, nil
		}
	}
}
