package stream

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// eventTimeJoin drives an operator that joins two inputs by event time
// (interval, window and event-time temporal joins): it hands the operator
// each input's rows, moves the watermark at markers (the smaller of the
// inputs', as twoInputs reports it) and has the operator emit what the
// watermark completes, everything at the end.
type eventTimeJoin struct {
	budget *Budget
	two    twoInputs
	q      *outQueue
	pos    Pos
	wm     time.Time
	late   int64  // input rows dropped as late
	marker *Chunk // passed on once q is empty
	ended  bool
}

// eventTimeJoiner is what an eventTimeJoin drives.
type eventTimeJoiner interface {
	// addSide takes a batch of input side's rows.
	addSide(ctx context.Context, side int, b arrow.RecordBatch) error
	// advance emits what watermark wm completes (endOfTime: everything).
	advance(wm time.Time) error
	// evict moves state to disk until half the budget is free.
	evict() error
}

func (d *eventTimeJoin) next(ctx context.Context, op eventTimeJoiner) (Chunk, error) {
	for {
		if b := d.q.pop(); b != nil {
			return Chunk{Batch: b, Pos: d.pos}, nil
		}
		if m := d.marker; m != nil {
			d.marker = nil
			return *m, nil
		}
		if d.ended {
			return Chunk{}, io.EOF
		}
		side, c, err := d.two.next(ctx)
		if errors.Is(err, io.EOF) {
			d.ended = true
			if err := op.advance(endOfTime); err != nil {
				return Chunk{}, err
			}
			continue
		}
		if err != nil {
			return Chunk{}, err
		}
		d.pos = c.Pos
		if c.Batch == nil {
			if !c.Watermark.IsZero() && c.Watermark.After(d.wm) {
				d.wm = c.Watermark
				if err := op.advance(d.wm); err != nil {
					return Chunk{}, err
				}
			}
			c.LateRows += d.late
			d.marker = &c
			if d.budget.over() {
				if err := op.evict(); err != nil {
					return Chunk{}, err
				}
			}
			continue
		}
		err = op.addSide(ctx, side, c.Batch)
		c.Batch.Release()
		if err != nil {
			return Chunk{}, err
		}
		d.q.seal()
	}
}
