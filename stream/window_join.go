package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// WindowBound names a window column a WindowJoin computes.
type WindowBound int

const (
	WindowEnd  WindowBound = iota // window_end
	WindowTime                    // window_time: window_end minus 1 ms
)

// WindowJoinSide is one input of a WindowJoin.
type WindowJoinSide struct {
	Keys []exec.Expr
	// Time is the event time; column Start (an index among the side's
	// columns after the row kind) carries it in and the window's start
	// out.
	Time  exec.Expr
	Start int
	// Bounds are the window columns appended to the output after both
	// sides' columns (left's first).
	Bounds []WindowBound
}

// WindowJoin is an inner window join (Flink's window join): rows of both
// inputs are assigned to the windows of their event time, and when the
// watermark (the smaller of the inputs') passes a window's end, the
// window's rows join by key and are emitted once, as +I, and the window's
// state is freed. +I/+U add a row to its windows and -U/-D take it away
// until then; a change whose event time's earliest window has closed at
// its arrival is late: dropped and counted in the LateRows of the markers.
// Rows with a NULL key or event time join nothing. When both inputs end,
// every window is emitted.
//
// An outer window join (LEFT, RIGHT, FULL) also emits, when a window
// closes, each row of a side it keeps that found no row of the other
// side's with its key in that window (a NULL key included), padded with
// NULLs: the other side's columns and window bounds. The window is final
// then, so the padded row is never retracted.
//
// Output columns: row kind, left columns, right columns (window_start
// holding the window's start), then the Bounds of left and right.
//
// State past the budget spills as a window aggregation's does: at a
// marker, a window's rows of one join key (both sides) go to a spillStore
// keyed by window end, start and join key until half the budget is free;
// a change of a spilled key in a window reads it back, and the windows a
// watermark closes are one range of keys, read back before they join.
type WindowJoin struct {
	eventTimeJoin
	ec      *exec.Context
	kind    exec.JoinType
	windows Windows
	sides   [2]WindowJoinSide
	schema  *arrow.Schema
	units   [2]arrow.TimeUnit

	get   [2]rowGetter
	dec   [2][]orderedDecoder
	store *spillStore // nil until something spills
	enc   [2]vectorized.KeyEncoder
	open  map[[2]int64]*joinWindow
	held  int64
	signs []int8
	wins  [][2]int64
}

// joinWindow is one open window: each side's rows by join key.
type joinWindow struct {
	bounds [2]int64
	bytes  int64
	rows   [2]map[string][]*windowRow
}

type windowRow struct {
	vals []any
	n    int64
}

// NewWindowJoin joins left and right by the windows of their event times
// and keys.
func NewWindowJoin(ec *exec.Context, kind exec.JoinType, left, right Operator, windows Windows, sides [2]WindowJoinSide, budget *Budget) (*WindowJoin, error) {
	if len(sides[0].Keys) != len(sides[1].Keys) {
		return nil, fmt.Errorf("%w: window join of %d left and %d right keys", exec.ErrInvalid, len(sides[0].Keys), len(sides[1].Keys))
	}
	switch kind {
	case exec.InnerJoin, exec.LeftJoin, exec.RightJoin, exec.FullJoin:
	default:
		return nil, fmt.Errorf("%w: window join of kind %d", exec.ErrInvalid, kind)
	}
	j := &WindowJoin{eventTimeJoin: eventTimeJoin{budget: budget}, ec: ec, kind: kind, windows: windows, sides: sides, open: map[[2]int64]*joinWindow{}}
	j.two = twoInputs{in: [2]Operator{left, right}, lock: -1}
	var fields, bounds []arrow.Field
	for s, op := range []Operator{left, right} {
		f := op.Schema().Fields()[1:]
		tt, ok := sides[s].Time.DataType().(*arrow.TimestampType)
		if !ok {
			return nil, fmt.Errorf("%w: window join time is %s, not a timestamp", exec.ErrInvalid, sides[s].Time.DataType())
		}
		if sides[s].Start < 0 || sides[s].Start >= len(f) || !arrow.TypeEqual(f[sides[s].Start].Type, tt) {
			return nil, fmt.Errorf("%w: window join start column %d", exec.ErrInvalid, sides[s].Start)
		}
		j.units[s] = tt.Unit
		get, err := rowGetterFor(f)
		if err != nil {
			return nil, err
		}
		j.get[s] = get
		for _, fd := range f {
			d, err := orderedDecoderFor(fd.Type)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", fd.Name, err)
			}
			j.dec[s] = append(j.dec[s], d)
		}
		fields = append(fields, f...)
		for _, b := range sides[s].Bounds {
			name := "window_end"
			if b == WindowTime {
				name = "window_time"
			}
			bounds = append(bounds, arrow.Field{Name: name, Type: tt, Nullable: true})
		}
	}
	j.schema = withKind(append(fields, bounds...))
	q, err := newOutQueue(ec, j.schema)
	if err != nil {
		return nil, err
	}
	j.q = q
	return j, nil
}

func (j *WindowJoin) Schema() *arrow.Schema { return j.schema }

func (j *WindowJoin) Open(ctx context.Context) error { return j.two.open(ctx) }

func (j *WindowJoin) Next(ctx context.Context) (Chunk, error) { return j.next(ctx, j) }

func (j *WindowJoin) addSide(ctx context.Context, side int, b arrow.RecordBatch) (err error) {
	signs, err := kindSigns(b, j.signs)
	if err != nil {
		return err
	}
	j.signs = signs
	s := j.sides[side]
	n := int(b.NumRows())
	ev := newBatchEval(ctx, j.ec, b)
	defer ev.release()
	keys, err := ev.evalAll(s.Keys)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		if err := j.enc[side].Encode(keys, n); err != nil {
			return err
		}
	}
	ts, err := ev.eval(s.Time)
	if err != nil {
		return err
	}
	times := make([]int64, n)
	valid := make([]bool, n)
	if err := eachTime(ts, func(i int, t time.Time) { times[i], valid[i] = t.UnixMicro(), true }); err != nil {
		return err
	}
	cols := b.Columns()[1:]
	kept := j.keeps(side)
	var grow int64
	for i, sign := range signs {
		nullKey := slices.ContainsFunc(keys, func(k arrow.Array) bool { return k.IsNull(i) })
		if !valid[i] || nullKey && !kept {
			continue // joins nothing, and is not padded (no window holds a NULL time)
		}
		if !j.wm.IsZero() && j.windows.firstEnd(times[i]) <= j.wm.UnixMicro() {
			j.late++
			continue
		}
		// Keys are "k" and the encoding; a NULL key, "n", matches none.
		k := nullJoinKey
		if !nullKey {
			k = "k"
			if len(keys) > 0 {
				k += string(j.enc[side].Key(i))
			}
		}
		vals := j.get[side].row(cols, i)
		j.wins = j.windows.of(times[i], j.wins[:0])
		for _, bounds := range j.wins {
			win := j.open[bounds]
			if win == nil {
				win = &joinWindow{bounds: bounds, bytes: 96, rows: [2]map[string][]*windowRow{{}, {}}}
				j.open[bounds] = win
				grow += 96
			}
			if err := j.load(win, k, &grow); err != nil {
				return err
			}
			rows := win.rows[side][k]
			at := slices.IndexFunc(rows, func(r *windowRow) bool { return sameRow(r.vals, vals) })
			var d int64
			switch {
			case sign > 0 && at >= 0:
				rows[at].n++
			case sign > 0:
				win.rows[side][k] = append(rows, &windowRow{vals: vals, n: 1})
				d = windowRowBytes(k, vals)
			case at < 0:
				return fmt.Errorf("%w: window join input retracts a row it never added", exec.ErrInvalid)
			case rows[at].n == 1:
				win.rows[side][k] = slices.Delete(rows, at, at+1)
				d = -windowRowBytes(k, vals)
			default:
				rows[at].n--
			}
			win.bytes += d
			grow += d
		}
	}
	j.held += grow
	j.budget.add(grow)
	return nil
}

func windowRowBytes(k string, vals []any) int64 { return int64(len(k)) + rowBytes(vals) + 64 }

// evict moves a window's rows of a join key to disk, key by key, until
// half the budget is free.
func (j *WindowJoin) evict() error {
	if j.store == nil {
		j.store = newSpillStore(j.ec, j.budget)
	}
	var out []stateEntry
	var freed int64
	target := j.budget.evictTarget()
	for _, win := range j.open {
		for s := range win.rows {
			for k := range win.rows[s] {
				if freed >= target {
					break
				}
				b, n := encodeWindowJoinKey(win, k)
				for side := range win.rows {
					delete(win.rows[side], k)
				}
				out = append(out, stateEntry{key: windowStateKey(win.bounds, k), val: b})
				win.bytes -= n
				freed += n
			}
		}
	}
	j.held -= freed
	j.budget.add(-freed)
	return j.store.write(out)
}

// encodeWindowJoinKey encodes window win's rows of join key k, both
// sides, for the spill store, with the bytes they account.
func encodeWindowJoinKey(win *joinWindow, k string) (b []byte, n int64) {
	for side := range win.rows {
		rows := win.rows[side][k]
		b = binary.AppendUvarint(b, uint64(len(rows)))
		for _, r := range rows {
			b = binary.AppendVarint(appendRow(b, r.vals), r.n)
			n += windowRowBytes(k, r.vals)
		}
	}
	return b, n
}

// SaveState saves the inputs' positions, the watermark, the late rows
// and the rows of every open window by join key, in memory and spilled
// (keyed as evict keys them).
func (j *WindowJoin) SaveState(w *StateWriter) error {
	j.two.saveProgress(w, j.wm, j.late)
	for _, win := range j.open {
		for side := range win.rows {
			for k := range win.rows[side] {
				if _, done := win.rows[0][k]; side == 1 && done {
					continue // saved with the left side's
				}
				b, _ := encodeWindowJoinKey(win, k)
				w.Entry(windowStateKey(win.bounds, k), b)
			}
		}
	}
	err := w.spilled(j.store, func(key string) bool {
		bounds, k, err := windowStateBounds(key)
		if err != nil || j.open[bounds] == nil {
			return false
		}
		_, left := j.open[bounds].rows[0][k]
		_, right := j.open[bounds].rows[1][k]
		return left || right
	})
	w.EndEntries()
	return err
}

// RestoreState loads the saved windows into memory, spilling past the
// budget.
func (j *WindowJoin) RestoreState(r *StateReader) (err error) {
	if j.wm, j.late, err = j.two.restoreProgress(r); err != nil {
		return err
	}
	err = r.entriesWithin(j.budget, &j.held, j.evict, func(key string, v []byte) (grow int64, err error) {
		bounds, k, err := windowStateBounds(key)
		if err != nil {
			return 0, err
		}
		win := j.open[bounds]
		if win == nil {
			win = &joinWindow{bounds: bounds, bytes: 96, rows: [2]map[string][]*windowRow{{}, {}}}
			j.open[bounds] = win
			grow += 96
		}
		err = j.decode(win, k, v, &grow)
		return grow, err
	})
	if err != nil {
		return err
	}
	return r.end()
}

// load reads window win's rows of join key k back from disk when neither
// side holds them in memory, adding their bytes to grow; the disk's copy
// stays, shadowed by memory.
func (j *WindowJoin) load(win *joinWindow, k string, grow *int64) error {
	if j.store == nil {
		return nil
	}
	if _, ok := win.rows[0][k]; ok {
		return nil
	}
	if _, ok := win.rows[1][k]; ok {
		return nil
	}
	b, ok, err := j.store.take(windowStateKey(win.bounds, k))
	if err != nil || !ok {
		return err
	}
	return j.decode(win, k, b, grow)
}

// decode puts the rows of join key k that evict encoded as b into win.
func (j *WindowJoin) decode(win *joinWindow, k string, b []byte, grow *int64) error {
	for side := range win.rows {
		n, m := binary.Uvarint(b)
		if m <= 0 {
			return errCorruptState
		}
		b = b[m:]
		rows := make([]*windowRow, 0, n)
		for range n {
			r := &windowRow{}
			var err error
			if r.vals, b, err = decodeRow(b, j.dec[side]); err != nil {
				return err
			}
			if r.n, m = binary.Varint(b); m <= 0 {
				return errCorruptState
			}
			b = b[m:]
			rows = append(rows, r)
			d := windowRowBytes(k, r.vals)
			win.bytes += d
			*grow += d
		}
		// Present (if empty) on both sides: the rows are in memory now.
		win.rows[side][k] = rows
	}
	return nil
}

// unspill brings back the spilled rows of the windows that end at or
// before wm (those in memory are newer).
func (j *WindowJoin) unspill(wm time.Time) error {
	if j.store == nil {
		return nil
	}
	entries, err := j.store.takeBelow(windowStateKey([2]int64{-1 << 63, wm.UnixMicro() + 1}, ""))
	if err != nil {
		return err
	}
	var grow int64
	for _, e := range entries {
		bounds := [2]int64{int64(binary.BigEndian.Uint64([]byte(e.key[8:16])) ^ 1<<63), int64(binary.BigEndian.Uint64([]byte(e.key[:8])) ^ 1<<63)}
		win, k := j.open[bounds], e.key[16:]
		if win == nil {
			continue
		}
		_, left := win.rows[0][k]
		_, right := win.rows[1][k]
		if left || right {
			continue
		}
		if err := j.decode(win, k, e.val, &grow); err != nil {
			return err
		}
	}
	j.held += grow
	j.budget.add(grow)
	return nil
}

// nullJoinKey is the state key of rows with a NULL join key.
const nullJoinKey = "n"

// keeps reports whether the join pads the unmatched rows of side.
func (j *WindowJoin) keeps(side int) bool {
	return j.kind == exec.FullJoin || side == 0 && j.kind == exec.LeftJoin || side == 1 && j.kind == exec.RightJoin
}

// advance joins, emits and frees the windows that end at or before wm, in
// order of their end, then start.
func (j *WindowJoin) advance(wm time.Time) error {
	if err := j.unspill(wm); err != nil {
		return err
	}
	closed := closedWindows(j.open, wm)
	lw, rw := len(j.get[0]), len(j.get[1])
	var freed int64
	for _, win := range closed {
		var bounds [2][]any
		for s := range j.sides {
			for _, b := range j.sides[s].Bounds {
				end := win.bounds[1]
				if b == WindowTime {
					end -= 1000
				}
				bounds[s] = append(bounds[s], toUnit(end, j.units[s]))
			}
		}
		// out emits l joined with r, either nil for a padded side.
		out := func(l, r *windowRow, n int64) {
			row := make([]any, len(j.schema.Fields())-1)
			if l != nil {
				copy(row, l.vals)
				row[j.sides[0].Start] = toUnit(win.bounds[0], j.units[0])
			}
			if r != nil {
				copy(row[lw:], r.vals)
				row[lw+j.sides[1].Start] = toUnit(win.bounds[0], j.units[1])
			}
			if l != nil {
				copy(row[lw+rw:], bounds[0])
			}
			if r != nil {
				copy(row[lw+rw+len(bounds[0]):], bounds[1])
			}
			for range n {
				j.q.add(kindInsert, row)
			}
		}
		for k, left := range win.rows[0] {
			right := win.rows[1][k]
			if k == nullJoinKey {
				right = nil
			}
			for _, l := range left {
				if len(right) == 0 && j.keeps(0) {
					out(l, nil, l.n)
				}
				for _, r := range right {
					out(l, r, l.n*r.n)
				}
			}
		}
		if j.keeps(1) {
			for k, right := range win.rows[1] {
				if k != nullJoinKey && len(win.rows[0][k]) > 0 {
					continue
				}
				for _, r := range right {
					out(nil, r, r.n)
				}
			}
		}
		freed += win.bytes
		delete(j.open, win.bounds)
	}
	j.q.seal()
	j.held -= freed
	j.budget.add(-freed)
	return nil
}

// Close frees the state, spilled included.
func (j *WindowJoin) Close() error {
	if j.store != nil {
		j.store.close()
	}
	j.q.release()
	j.budget.add(-j.held)
	j.held = 0
	return j.two.close()
}
