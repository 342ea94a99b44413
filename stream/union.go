package stream

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
)

// UnionAll passes on the changes of two inputs with the same column types,
// read as a Join reads them: a snapshot of one side whole before the
// other's changes.
type UnionAll struct {
	schema *arrow.Schema
	two    twoInputs
	out    arrow.RecordBatch
}

// NewUnionAll unions left and right; the result has left's column names.
func NewUnionAll(left, right Operator) (*UnionAll, error) {
	l, r := left.Schema().Fields(), right.Schema().Fields()
	if len(l) != len(r) {
		return nil, fmt.Errorf("%w: UNION ALL of %d and %d columns", exec.ErrInvalid, len(l)-1, len(r)-1)
	}
	fields := make([]arrow.Field, len(l))
	for i := range l {
		if !arrow.TypeEqual(l[i].Type, r[i].Type) {
			return nil, fmt.Errorf("%w: UNION ALL column %s is %s on the left and %s on the right", exec.ErrInvalid, l[i].Name, l[i].Type, r[i].Type)
		}
		fields[i] = l[i]
		fields[i].Nullable = l[i].Nullable || r[i].Nullable
	}
	return &UnionAll{schema: arrow.NewSchema(fields, nil), two: twoInputs{in: [2]Operator{left, right}, lock: -1}}, nil
}

func (u *UnionAll) Schema() *arrow.Schema { return u.schema }

func (u *UnionAll) Open(ctx context.Context) error { return u.two.open(ctx) }

func (u *UnionAll) Next(ctx context.Context) (Chunk, error) {
	if u.out != nil {
		u.out.Release()
		u.out = nil
	}
	_, c, err := u.two.next(ctx)
	if err != nil || c.Batch == nil {
		return c, err
	}
	u.out = array.NewRecordBatch(u.schema, c.Batch.Columns(), c.Batch.NumRows())
	c.Batch.Release()
	// Two tables' rows are not one table's full read: no image marks.
	return Chunk{Batch: u.out, Pos: c.Pos}, nil
}

// SaveState saves the inputs' positions.
func (u *UnionAll) SaveState(w *StateWriter) error {
	u.two.save(w)
	return nil
}

func (u *UnionAll) RestoreState(r *StateReader) error {
	if err := u.two.restore(r); err != nil {
		return err
	}
	return r.end()
}

func (u *UnionAll) Close() error {
	if u.out != nil {
		u.out.Release()
		u.out = nil
	}
	return u.two.close()
}
