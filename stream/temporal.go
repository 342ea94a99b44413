package stream

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
)

// Temporal is a processing-time temporal join (a lookup join): each change
// of its input is joined when it arrives with the row of a primary-key
// table its key finds then (exec.LookupJoiner), keeping its row kind. It
// holds no state: later commits of the table do not retract what it
// emitted, as in Flink's lookup join; the rows that come after see them.
// Markers pass through.
type Temporal struct {
	in     Operator
	schema *arrow.Schema
	open   func(ctx context.Context) (*exec.LookupJoiner, error)
	j      *exec.LookupJoiner
	out    arrow.RecordBatch
}

// NewTemporal joins in's changes through the joiner open makes at Open;
// schema is in's followed by the table's columns.
func NewTemporal(in Operator, schema *arrow.Schema, open func(ctx context.Context) (*exec.LookupJoiner, error)) *Temporal {
	return &Temporal{in: in, schema: schema, open: open}
}

func (t *Temporal) Schema() *arrow.Schema { return t.schema }

func (t *Temporal) Open(ctx context.Context) error {
	if err := t.in.Open(ctx); err != nil {
		return err
	}
	if t.j == nil {
		j, err := t.open(ctx)
		if err != nil {
			return err
		}
		t.j = j
	}
	return nil
}

func (t *Temporal) Next(ctx context.Context) (Chunk, error) {
	t.release()
	for {
		c, err := t.in.Next(ctx)
		if err != nil || c.Batch == nil {
			return c, err
		}
		out, err := t.j.Join(ctx, c.Batch)
		if err != nil {
			return Chunk{}, err
		}
		if out == nil {
			continue
		}
		t.out = out
		c.Batch = out
		return c, nil
	}
}

func (t *Temporal) release() {
	if t.out != nil {
		t.out.Release()
		t.out = nil
	}
}

func (t *Temporal) Close() error {
	t.release()
	if t.j != nil {
		t.j.Close()
		t.j = nil
	}
	return t.in.Close()
}
