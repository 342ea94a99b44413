package stream

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// WindowAssign is a TUMBLE, HOP or CUMULATE window TVF over a stream whose
// rows an operator ranks per window (a window top-N straight over the TVF,
// Flink's window table function under its window rank): each change
// becomes one change per window holding its event time, with the same row
// kind. Its event time column is replaced by window_start, and window_end
// and window_time (the end less 1 ms, as the batch TVF) follow the input's
// columns.
//
// A change is late when the earliest window holding it has closed at the
// last marker's watermark, as WindowAggregate judges it: dropped from all
// its windows and counted in the LateRows of the markers (so are NULL
// event times). A change that is not late then falls into windows that
// are all still open for the operator above.
type WindowAssign struct {
	ec      *exec.Context
	in      Operator
	windows Windows
	timeCol int // the event time's column, after the row kind
	unit    arrow.TimeUnit
	schema  *arrow.Schema
	wm      time.Time
	late    int64
	out     arrow.RecordBatch
	idx     []int64
	bounds  [][2]int64
	wins    [][2]int64
}

// NewWindowAssign puts in's changes into windows by the timestamp column
// timeCol (an index after the row kind).
func NewWindowAssign(ec *exec.Context, in Operator, windows Windows, timeCol int) (*WindowAssign, error) {
	if windows.Kind == Session || windows.ProcTime != nil {
		return nil, fmt.Errorf("%w: window assignment of SESSION or processing-time windows", exec.ErrInvalid)
	}
	if windows.Step <= 0 || windows.Size%windows.Step != 0 {
		return nil, fmt.Errorf("%w: window size %s is not a multiple of step %s", exec.ErrInvalid, windows.Size, windows.Step)
	}
	fields := in.Schema().Fields()
	if timeCol < 0 || timeCol+1 >= len(fields) {
		return nil, fmt.Errorf("%w: window time column %d of %d", exec.ErrInvalid, timeCol, len(fields)-1)
	}
	tt, ok := fields[timeCol+1].Type.(*arrow.TimestampType)
	if !ok {
		return nil, fmt.Errorf("%w: window time column is %s, not a timestamp", exec.ErrInvalid, fields[timeCol+1].Type)
	}
	fields = slices.Clone(fields)
	fields[timeCol+1] = arrow.Field{Name: "window_start", Type: tt, Nullable: true}
	fields = append(fields, arrow.Field{Name: "window_end", Type: tt, Nullable: true}, arrow.Field{Name: "window_time", Type: tt, Nullable: true})
	return &WindowAssign{ec: ec, in: in, windows: windows, timeCol: timeCol, unit: tt.Unit, schema: arrow.NewSchema(fields, nil)}, nil
}

func (w *WindowAssign) Schema() *arrow.Schema { return w.schema }

func (w *WindowAssign) Open(ctx context.Context) error { return w.in.Open(ctx) }

func (w *WindowAssign) Next(ctx context.Context) (Chunk, error) {
	w.release()
	for {
		c, err := w.in.Next(ctx)
		if err != nil {
			return c, err
		}
		if c.Batch == nil {
			// Changes are judged by the watermark before them.
			if c.Watermark.After(w.wm) {
				w.wm = c.Watermark
			}
			c.LateRows += w.late
			return c, nil
		}
		if w.out, err = w.assign(ctx, c.Batch); err != nil {
			return Chunk{}, err
		}
		if w.out == nil {
			continue
		}
		c.Batch = w.out
		return c, nil
	}
}

// assign returns b's rows once per window, or nil when none is in one.
func (w *WindowAssign) assign(ctx context.Context, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	w.idx, w.bounds = w.idx[:0], w.bounds[:0]
	ts := b.Column(w.timeCol + 1)
	w.late += int64(ts.NullN())
	err := eachTime(ts, func(i int, t time.Time) {
		us := t.UnixMicro()
		if !w.wm.IsZero() && w.windows.firstEnd(us) <= w.wm.UnixMicro() {
			w.late++
			return
		}
		w.wins = w.windows.of(us, w.wins[:0])
		for _, win := range w.wins {
			w.idx = append(w.idx, int64(i))
			w.bounds = append(w.bounds, win)
		}
	})
	if err != nil {
		return nil, err
	}
	if len(w.idx) == 0 {
		return nil, nil
	}
	cols, err := vectorized.TakeColumns(ctx, w.ec.Mem, b.Columns(), w.idx)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	tt := w.schema.Field(w.timeCol + 1).Type
	bld := array.NewTimestampBuilder(w.ec.Mem, tt.(*arrow.TimestampType))
	defer bld.Release()
	for k := range 3 {
		for _, win := range w.bounds {
			switch k {
			case 0:
				bld.Append(arrow.Timestamp(toUnit(win[0], w.unit)))
			case 1:
				bld.Append(arrow.Timestamp(toUnit(win[1], w.unit)))
			default:
				bld.Append(arrow.Timestamp(toUnit(win[1]-1000, w.unit)))
			}
		}
		a := bld.NewArray()
		if k == 0 {
			cols[w.timeCol+1].Release()
			cols[w.timeCol+1] = a
		} else {
			cols = append(cols, a)
		}
	}
	return array.NewRecordBatch(w.schema, cols, int64(len(w.idx))), nil
}

// SaveState saves the watermark and the late rows.
func (w *WindowAssign) SaveState(wr *StateWriter) error {
	wr.progress(w.wm, w.late)
	return nil
}

func (w *WindowAssign) RestoreState(r *StateReader) (err error) {
	if w.wm, w.late, err = r.progress(); err != nil {
		return err
	}
	return r.end()
}

func (w *WindowAssign) release() {
	if w.out != nil {
		w.out.Release()
		w.out = nil
	}
}

func (w *WindowAssign) Close() error {
	w.release()
	return w.in.Close()
}
