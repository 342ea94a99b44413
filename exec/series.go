package exec

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// Series is what range and generate_series count over: integers from
// Start by Step, or timestamps from Start by an interval (Postgres and
// DuckDB add the interval to the previous value, so Jan 31 + 1 month goes
// on from Feb 29, not from Jan 31).
type Series struct {
	Start, Stop int64 // integers, or timestamps in Type's unit
	Step        int64 // integers
	Interval    arrow.MonthDayNanoInterval
	Inclusive   bool           // generate_series: Stop is in the series
	Type        arrow.DataType // INT64 or a TIMESTAMP
}

// Ascending reports the series' direction, and false with an error for a
// step that goes nowhere. An interval's direction is its sign with a month
// taken as 30 days, as Postgres compares intervals.
func (s Series) Ascending() (bool, error) {
	if _, ok := s.Type.(*arrow.TimestampType); !ok {
		if s.Step == 0 {
			return false, fmt.Errorf("%w: the step of a series cannot be zero", vectorized.ErrInvalidValue)
		}
		return s.Step > 0, nil
	}
	iv := s.Interval
	const day = int64(24 * time.Hour)
	// In float64: months of 30 days in nanoseconds pass int64 past 3,558
	// years.
	sign := (float64(iv.Months)*30+float64(iv.Days))*float64(day) + float64(iv.Nanoseconds)
	if sign == 0 {
		return false, fmt.Errorf("%w: the step of a series cannot be a zero interval", vectorized.ErrInvalidValue)
	}
	return sign > 0, nil
}

type seriesOp struct {
	ec     *Context
	schema *arrow.Schema
	s      Series
	up     bool
	next   int64
	done   bool
	cur    current
}

// NewSeries emits the values of s in one column named name, a batch of
// Context.BatchSize at a time: a range of any length streams in bounded
// memory.
func NewSeries(ec *Context, name string, s Series) Operator {
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: s.Type}}, nil)
	return &seriesOp{ec: ec, schema: schema, s: s}
}

func (o *seriesOp) Schema() *arrow.Schema { return o.schema }

func (o *seriesOp) Open(context.Context) error {
	up, err := o.s.Ascending()
	if err != nil {
		return err
	}
	o.up, o.next, o.done = up, o.s.Start, false
	return nil
}

// in reports whether v is still in the series.
func (o *seriesOp) in(v int64) bool {
	switch {
	case o.up && o.s.Inclusive:
		return v <= o.s.Stop
	case o.up:
		return v < o.s.Stop
	case o.s.Inclusive:
		return v >= o.s.Stop
	}
	return v > o.s.Stop
}

func (o *seriesOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.done || !o.in(o.next) {
		return nil, io.EOF
	}
	b := array.NewBuilder(o.ec.Mem, o.s.Type)
	defer b.Release()
	add := func(v int64) { b.(*array.Int64Builder).Append(v) }
	if tb, ok := b.(*array.TimestampBuilder); ok {
		add = func(v int64) { tb.Append(arrow.Timestamp(v)) }
	}
	for n := o.ec.batchSize(); n > 0 && !o.done && o.in(o.next); n-- {
		add(o.next)
		next, ok := o.step(o.next)
		// A step that would leave int64 (or the timestamps' range), or an
		// interval that does not move the value (1 month -29 days from
		// Feb 1) ends the series instead of wrapping or repeating.
		o.next, o.done = next, !ok || next == o.next || (next > o.next) != o.up
	}
	col := b.NewArray()
	defer col.Release()
	return o.cur.set(array.NewRecordBatch(o.schema, []arrow.Array{col}, int64(col.Len()))), nil
}

// step returns the value after v and whether there is one.
func (o *seriesOp) step(v int64) (int64, bool) {
	ts, ok := o.s.Type.(*arrow.TimestampType)
	if !ok {
		return v + o.s.Step, true // a wrap around is caught by its direction
	}
	t := arrow.Timestamp(v).ToTime(ts.Unit)
	iv := o.s.Interval
	t, err := vectorized.DateAdd("month", int64(iv.Months), t)
	if err != nil {
		return 0, false
	}
	if t, err = vectorized.DateAdd("day", int64(iv.Days), t); err != nil {
		return 0, false
	}
	t = t.Add(time.Duration(iv.Nanoseconds))
	next, err := arrow.TimestampFromTime(t, ts.Unit)
	return int64(next), err == nil
}

func (o *seriesOp) Close() error {
	o.cur.release()
	return nil
}
