package stream

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// WindowRank is a window top-N (Flink's window rank): ROW_NUMBER() OVER
// (PARTITION BY window_start, window_end, ... ORDER BY ...) bounded by
// spec.Lo and spec.Hi over the output of a window aggregation. Rows are
// held per partition until the watermark reaches their window's end; the
// marker that closes the window emits the partition's rows numbered Lo to
// Hi, once, as +I (with the number as the last column when spec.Number),
// and frees the partition. Rows tied on the ORDER BY keys rank by their
// values, as in Rank. Retractions are applied while the window is open; a
// change of a window the watermark of the last marker has closed is late:
// dropped and counted (a window aggregation emits a window before the
// marker that closes it, so none is late there).
//
// Output columns: those of the input, then the row number when
// spec.Number.
//
// State past the budget spills as a window aggregation's does: at a
// marker, partitions go to a spillStore keyed by window end and partition
// (their rows' sort keys and counts, as Rank spills them) until half the
// budget is free; a change of a spilled partition reads it back whole, and
// the partitions a watermark closes are one range of keys, read back when
// they fire and then dropped from disk.
type WindowRank struct {
	ec   *exec.Context
	spec RankSpec
	end  int // the input column (after the row kind) of window_end
	unit arrow.TimeUnit

	firing
	endGet   getter
	rowEnc   rowEncoder
	codec    rankCodec
	out      rankEmitter
	store    *spillStore // nil until something spills
	order    []exec.Expr // spec.Order's expressions
	orderEnc []encoder
	parts    map[string]*windowRankPart
	enc      vectorized.KeyEncoder
	signs    []int8
	sortBuf  []byte
}

type windowRankPart struct {
	end  int64     // microseconds
	rows []rankRow // by sort, ascending
}

// NewWindowRank ranks in's rows by spec per window; end is the index of
// window_end among in's columns after the row kind (a timestamp), and
// spec.Partition must hold it.
func NewWindowRank(ec *exec.Context, in Operator, spec RankSpec, end int, budget *Budget) (*WindowRank, error) {
	if spec.Lo < 1 || spec.Hi < spec.Lo {
		return nil, fmt.Errorf("%w: top-N keeps row numbers %d to %d", exec.ErrInvalid, spec.Lo, spec.Hi)
	}
	fields := in.Schema().Fields()[1:]
	if end < 0 || end >= len(fields) {
		return nil, fmt.Errorf("%w: window top-N window_end column %d of %d", exec.ErrInvalid, end, len(fields))
	}
	tt, ok := fields[end].Type.(*arrow.TimestampType)
	if !ok {
		return nil, fmt.Errorf("%w: window_end is %s, not a timestamp", exec.ErrInvalid, fields[end].Type)
	}
	endGet, err := getterFor(tt)
	if err != nil {
		return nil, err
	}
	enc, err := rowEncoderFor(fields)
	if err != nil {
		return nil, err
	}
	w := &WindowRank{ec: ec, spec: spec, end: end, unit: tt.Unit, firing: firing{what: "a window top-N", in: in, budget: budget}, endGet: endGet, rowEnc: enc, parts: map[string]*windowRankPart{}}
	if w.codec, err = newRankCodec(fields, spec.Order); err != nil {
		return nil, err
	}
	if w.order, w.orderEnc, err = orderEncoders(spec.Order); err != nil {
		return nil, err
	}
	if spec.Number {
		fields = append(slices.Clip(fields), arrow.Field{Name: "row_number", Type: arrow.PrimitiveTypes.Int64})
	}
	w.schema = withKind(fields)
	if w.q, err = newOutQueue(ec, w.schema); err != nil {
		return nil, err
	}
	w.out = w.codec.emitter(w.q, spec.Number)
	return w, nil
}

// Next returns the top rows of the windows closed by the last marker's
// watermark, labelled with its position, then the marker.
func (w *WindowRank) Next(ctx context.Context) (Chunk, error) { return w.firing.next(ctx, w) }

func (w *WindowRank) add(ctx context.Context, b arrow.RecordBatch) error {
	signs, err := kindSigns(b, w.signs)
	if err != nil {
		return err
	}
	w.signs = signs
	ev := newBatchEval(ctx, w.ec, b)
	defer ev.release()
	if _, err := ev.encodeKeys(w.spec.Partition, &w.enc); err != nil {
		return err
	}
	order, err := ev.evalAll(w.order)
	if err != nil {
		return err
	}
	cols := b.Columns()[1:]
	var grow int64
	for i, sign := range signs {
		end, ok := w.endGet(cols[w.end], i).(int64)
		if !ok || !w.wm.IsZero() && toMicros(end, w.unit) <= w.wm.UnixMicro() {
			w.late++
			continue
		}
		var keyLen int
		w.sortBuf, keyLen = appendSortKey(w.sortBuf[:0], w.spec.Order, w.orderEnc, order, w.rowEnc, cols, i)
		sort := w.sortBuf
		k := string(w.enc.Key(i))
		p := w.parts[k]
		if p == nil {
			if p, err = w.load(k, toMicros(end, w.unit)); err != nil {
				return err
			}
			if p != nil {
				grow += w.partBytes(k, p)
				w.reloaded += w.partBytes(k, p)
			} else {
				p = &windowRankPart{end: toMicros(end, w.unit)}
				grow += rankPartBytes + int64(len(k))
			}
			w.parts[k] = p
		}
		var g int64
		if p.rows, g, err = applyRankRow(p.rows, sort, keyLen, sign, "window top-N"); err != nil {
			return err
		}
		grow += g
	}
	w.held += grow
	w.budget.add(grow)
	return nil
}

func (w *WindowRank) partBytes(k string, p *windowRankPart) int64 {
	n := rankPartBytes + int64(len(k))
	for _, row := range p.rows {
		n += rankRowBytes(row)
	}
	return n
}

// evict moves partitions to disk until half the budget is free.
func (w *WindowRank) evict() error {
	if w.store == nil {
		w.store = newSpillStore(w.ec, w.budget)
	}
	var out []stateEntry
	var freed int64
	target := w.budget.evictTarget()
	for k, p := range w.parts {
		if freed >= target {
			break
		}
		out = append(out, stateEntry{key: windowStateKey([2]int64{0, p.end}, k), val: encodeRankRows(p.rows)})
		freed += w.partBytes(k, p)
		delete(w.parts, k)
	}
	w.held -= freed
	w.budget.add(-freed)
	return w.store.write(out)
}

// load reads spilled partition k of the window ending at end back (nil if
// none); the disk's copy stays, shadowed by memory.
func (w *WindowRank) load(k string, end int64) (*windowRankPart, error) {
	if w.store == nil {
		return nil, nil
	}
	b, ok, err := w.store.take(windowStateKey([2]int64{0, end}, k))
	if !ok || err != nil {
		return nil, err
	}
	rows, err := w.codec.decode(b)
	if err != nil {
		return nil, err
	}
	return &windowRankPart{end: end, rows: rows}, nil
}

// unspill brings back the spilled partitions of the windows that end at or
// before wm (those in memory are newer).
func (w *WindowRank) unspill(wm time.Time) error {
	entries, err := w.store.takeClosed(wm)
	if err != nil {
		return err
	}
	var grow int64
	for _, e := range entries {
		k := e.key[16:]
		if w.parts[k] != nil {
			continue
		}
		rows, err := w.codec.decode(e.val)
		if err != nil {
			return err
		}
		p := &windowRankPart{end: int64(binary.BigEndian.Uint64([]byte(e.key[:8])) ^ 1<<63), rows: rows}
		w.parts[k] = p
		grow += w.partBytes(k, p)
	}
	w.held += grow
	w.budget.add(grow)
	return nil
}

// fire emits and frees the partitions whose window ends at or before wm,
// in order of their end, then partition key.
func (w *WindowRank) fire(wm time.Time) error {
	if err := w.unspill(wm); err != nil {
		return err
	}
	limit := wm.UnixMicro()
	var closed []string
	for k, p := range w.parts {
		if p.end <= limit {
			closed = append(closed, k)
		}
	}
	slices.SortFunc(closed, func(a, b string) int { return cmp.Or(cmp.Compare(w.parts[a].end, w.parts[b].end), cmp.Compare(a, b)) })
	var freed int64
	for _, k := range closed {
		p := w.parts[k]
		for _, row := range topRows(p.rows, w.spec.Func, w.spec.Lo, w.spec.Hi) {
			if err := w.out.emit(kindInsert, row, row.n); err != nil {
				return err
			}
		}
		freed += rankPartBytes + int64(len(k))
		for _, row := range p.rows {
			freed += rankRowBytes(row)
		}
		delete(w.parts, k)
	}
	w.q.seal()
	w.held -= freed
	w.budget.add(-freed)
	return nil
}

// Close frees the state, spilled included.
func (w *WindowRank) Close() error {
	if w.store != nil {
		w.store.close()
	}
	return w.firing.Close()
}

// SaveState saves the watermark, the late rows and the rows of every
// partition of an open window, in memory and spilled, keyed as evict keys
// them.
func (w *WindowRank) SaveState(wr *StateWriter) error {
	w.firing.save(wr)
	for k, p := range w.parts {
		wr.Entry(windowStateKey([2]int64{0, p.end}, k), encodeRankRows(p.rows))
	}
	err := wr.spilled(w.store, func(key string) bool { return w.parts[key[16:]] != nil })
	wr.EndEntries()
	return err
}

// RestoreState loads the saved partitions into memory, spilling past the
// budget.
func (w *WindowRank) RestoreState(r *StateReader) error {
	if err := w.firing.restore(r); err != nil {
		return err
	}
	err := r.entriesWithin(w.budget, &w.held, w.evict, func(key string, v []byte) (int64, error) {
		bounds, k, err := windowStateBounds(key)
		if err != nil {
			return 0, err
		}
		rows, err := w.codec.decode(v)
		if err != nil {
			return 0, err
		}
		p := &windowRankPart{end: bounds[1], rows: rows}
		w.parts[k] = p
		return w.partBytes(k, p), nil
	})
	if err != nil {
		return err
	}
	return r.end()
}
