package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/tablestore"
)

// endOfTime is the watermark of an input that has ended.
var endOfTime = time.Unix(1<<40, 0)

// minWatermark is the watermark of two inputs: the smaller, or none (zero)
// while either has none.
func minWatermark(a, b time.Time) time.Time {
	if a.IsZero() || b.IsZero() {
		return time.Time{}
	}
	if a.Before(b) {
		return a
	}
	return b
}

// watermarkGen computes a source's watermark as Flink's bounded
// out-of-orderness strategy does: the largest event time of the rows read
// that add (+I/+U) minus the delay. It never goes back.
type watermarkGen struct {
	ec      *exec.Context
	rowtime exec.Expr // over the source's batches
	delay   time.Duration
	max     time.Time
	seen    bool
}

// observe takes the event times of a batch of the source.
func (w *watermarkGen) observe(ctx context.Context, b arrow.RecordBatch) error {
	ts, err := w.rowtime.Eval(ctx, w.ec, b)
	if err != nil {
		return fmt.Errorf("watermark: %w", err)
	}
	defer ts.Release()
	kinds, ok := b.Column(0).(*array.String)
	if !ok {
		return fmt.Errorf("%w: row kind column is %s, not a string", exec.ErrInvalid, b.Column(0).DataType())
	}
	return eachTime(ts, func(i int, t time.Time) {
		if k, _ := tablestore.ParseRowKind(kinds.Value(i)); !k.IsRetract() && (!w.seen || t.After(w.max)) {
			w.max, w.seen = t, true
		}
	})
}

// current is the watermark (zero: no event time read yet).
func (w *watermarkGen) current() time.Time {
	if !w.seen {
		return time.Time{}
	}
	return w.max.Add(-w.delay)
}

// eachTime calls fn with the non-NULL values of a timestamp array.
func eachTime(a arrow.Array, fn func(i int, t time.Time)) error {
	ts, ok := a.(*array.Timestamp)
	if !ok {
		return fmt.Errorf("%w: event time is %s, not a timestamp", exec.ErrInvalid, a.DataType())
	}
	toTime, err := ts.DataType().(*arrow.TimestampType).GetToTimeFunc()
	if err != nil {
		return err
	}
	for i := 0; i < ts.Len(); i++ {
		if ts.IsValid(i) {
			fn(i, toTime(ts.Value(i)))
		}
	}
	return nil
}
