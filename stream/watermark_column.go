package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
)

// WatermarkColumn appends to every batch of its input a column holding
// the watermark of the input's last marker (NULL before the first): what
// CURRENT_WATERMARK reads above it. Rows of a snapshot see the watermark
// of the snapshot before, the one lateness is judged by. Markers pass
// through.
type WatermarkColumn struct {
	ec     *exec.Context
	in     Operator
	schema *arrow.Schema
	typ    *arrow.TimestampType
	wm     time.Time
	out    arrow.RecordBatch
}

// NewWatermarkColumn appends to in's batches its watermark, as typ.
func NewWatermarkColumn(ec *exec.Context, in Operator, name string, typ *arrow.TimestampType) *WatermarkColumn {
	fields := append(in.Schema().Fields(), arrow.Field{Name: name, Type: typ, Nullable: true})
	return &WatermarkColumn{ec: ec, in: in, typ: typ, schema: arrow.NewSchema(fields, nil)}
}

func (w *WatermarkColumn) Schema() *arrow.Schema { return w.schema }

func (w *WatermarkColumn) Open(ctx context.Context) error { return w.in.Open(ctx) }

func (w *WatermarkColumn) Next(ctx context.Context) (Chunk, error) {
	w.release()
	c, err := w.in.Next(ctx)
	if err != nil {
		return c, err
	}
	if c.Batch == nil {
		if !c.Watermark.IsZero() {
			w.wm = c.Watermark
		}
		return c, nil
	}
	n := int(c.Batch.NumRows())
	b := array.NewTimestampBuilder(w.ec.Mem, w.typ)
	defer b.Release()
	if w.wm.IsZero() {
		b.AppendNulls(n)
	} else {
		v, err := arrow.TimestampFromTime(w.wm, w.typ.Unit)
		if err != nil {
			return Chunk{}, fmt.Errorf("watermark %s: %w", w.wm, err)
		}
		for range n {
			b.Append(v)
		}
	}
	col := b.NewArray()
	defer col.Release()
	w.out = array.NewRecordBatch(w.schema, append(c.Batch.Columns(), col), int64(n))
	c.Batch = w.out
	return c, nil
}

func (w *WatermarkColumn) release() {
	if w.out != nil {
		w.out.Release()
		w.out = nil
	}
}

// SaveState saves the watermark, which the rows after a restart see
// until the next marker.
func (w *WatermarkColumn) SaveState(s *StateWriter) error {
	s.time(w.wm)
	return nil
}

func (w *WatermarkColumn) RestoreState(r *StateReader) (err error) {
	if w.wm, err = r.time(); err != nil {
		return err
	}
	return r.end()
}

// time appends a time (the zero time too: no watermark yet).
func (w *StateWriter) time(t time.Time) {
	var b []byte
	if !t.IsZero() {
		b, _ = t.MarshalBinary()
	}
	w.Bytes(b)
}

// time reads what StateWriter.time wrote.
func (r *StateReader) time() (time.Time, error) {
	var t time.Time
	b, err := r.Bytes()
	if err != nil || len(b) == 0 {
		return t, err
	}
	if err := t.UnmarshalBinary(b); err != nil {
		return t, fmt.Errorf("%w: %v", errCorruptCheckpoint, err)
	}
	return t, nil
}

func (w *WatermarkColumn) Close() error {
	w.release()
	return w.in.Close()
}
