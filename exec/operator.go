package exec

import (
	"context"

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
