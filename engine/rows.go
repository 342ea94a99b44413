package engine

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
)

// StreamObserver follows a streaming query's progress (see plan): Rows
// labels the next batch, Image frames a full read, CaughtUp marks a
// position. Calls happen on the goroutine that reads the rows, in order
// with the batches.
type StreamObserver = plan.StreamObserver

// MultiStreamObserver is a StreamObserver that also wants the position of
// every table of a query streaming several (a join).
type MultiStreamObserver = plan.MultiStreamObserver

// Rows is a running query's result. Batches are pulled from the query as
// the caller reads and are borrowed until the next Next; Err reports what
// ended the stream early (nil at its end). Release closes the query.
type Rows interface {
	array.RecordReader
	Err() error
}

// Rows starts a query statement under ctx, which cancels it. params holds
// one row per execution (nil or zero rows: no parameters). obs, if not
// nil, is told a streaming query's progress.
func (st *Statement) Rows(ctx context.Context, params arrow.RecordBatch, obs StreamObserver) (Rows, error) {
	if obs != nil {
		ctx = plan.WithStreamObserver(ctx, obs)
	}
	op, err := st.Query(ctx, params)
	if err != nil {
		return nil, err
	}
	return exec.NewRecordReader(ctx, op).(Rows), nil // exec's reader reports Err (exec/reader.go)
}
