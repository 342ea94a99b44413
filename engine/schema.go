package engine

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
)

// withSchema makes an operator's batches carry exactly the schema the plan
// announced (GetFlightInfo sent it to the client, and clients such as ADBC
// check the stream against it). Operators may report looser nullability or
// other field names than the plan: batches are relabelled without copying.
// A difference in types is a planner bug and fails the query.
func withSchema(op exec.Operator, want *arrow.Schema) exec.Operator {
	if op.Schema().Equal(want) {
		return op
	}
	return &relabel{Operator: op, want: want}
}

type relabel struct {
	exec.Operator
	want *arrow.Schema
	cur  arrow.RecordBatch
}

func (r *relabel) Schema() *arrow.Schema { return r.want }

func (r *relabel) Next(ctx context.Context) (arrow.RecordBatch, error) {
	r.release()
	b, err := r.Operator.Next(ctx)
	if err != nil {
		return nil, err
	}
	if int(b.NumCols()) != r.want.NumFields() {
		return nil, fmt.Errorf("%w: result has %d columns, the plan announced %d", ErrInternal, b.NumCols(), r.want.NumFields())
	}
	for i, f := range r.want.Fields() {
		if got := b.Column(i).DataType(); !arrow.TypeEqual(got, f.Type) {
			return nil, fmt.Errorf("%w: result column %d (%s) has type %s, the plan announced %s", ErrInternal, i, f.Name, got, f.Type)
		}
	}
	r.cur = array.NewRecordBatch(r.want, b.Columns(), b.NumRows())
	return r.cur, nil
}

func (r *relabel) Close() error {
	r.release()
	return r.Operator.Close()
}

func (r *relabel) release() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
