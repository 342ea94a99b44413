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

// WindowKind is a window table function.
type WindowKind int

const (
	Tumble   WindowKind = iota // TUMBLE(size)
	Hop                        // HOP(slide = Step, size)
	Cumulate                   // CUMULATE(step, size)
	Session                    // SESSION(gap = Size): SessionAggregate's
)

// Windows describes the windows of a window TVF, as the batch TVFs compute
// them: windows are aligned to Offset from the epoch. Step is Size for
// Tumble; Size is a multiple of Step.
//
// ProcTime, when set, makes them processing-time windows (a TVF over a
// PROCTIME() attribute): a change falls into the windows holding
// ProcTime() when the operator reads it, whatever its columns hold, and a
// window closes at the first marker at which ProcTime() is at or past its
// end. No change is late. The clock is a field so that tests drive it.
type Windows struct {
	Kind               WindowKind
	Size, Step, Offset time.Duration
	ProcTime           func() time.Time
}

// floor is the start of the w-aligned interval holding t (microseconds).
func (ws Windows) floor(t, w int64) int64 {
	off := ws.Offset.Microseconds()
	return t - ((t-off)%w+w)%w
}

// of appends the windows [start, end) holding t (microseconds) to dst.
func (ws Windows) of(t int64, dst [][2]int64) [][2]int64 {
	size, step := ws.Size.Microseconds(), ws.Step.Microseconds()
	switch ws.Kind {
	case Hop:
		last := ws.floor(t, step)
		for k := int64(0); k < size/step; k++ {
			s := last - k*step
			dst = append(dst, [2]int64{s, s + size})
		}
	case Cumulate:
		s := ws.floor(t, size)
		for e := s + step; e <= s+size; e += step {
			if t < e {
				dst = append(dst, [2]int64{s, e})
			}
		}
	default:
		s := ws.floor(t, size)
		dst = append(dst, [2]int64{s, s + size})
	}
	return dst
}

// firstEnd is the earliest end of the windows holding t: once the
// watermark passes it, a row at t is late.
func (ws Windows) firstEnd(t int64) int64 {
	step := ws.Step.Microseconds()
	return ws.floor(t, step) + step
}

// WindowAggregate is a window TVF aggregation (GROUP BY window_start,
// window_end, keys), as Flink's window aggregate: every row adds to (+I/+U)
// or retracts from (-U/-D) the windows holding its event time; a window
// emits its groups once, as +I rows, at the first marker whose watermark is
// at or past its end, and its state is freed then. A row is late when the
// earliest window holding it has closed at its arrival (its event time's
// first window end is at or before the watermark of the last marker): it
// is dropped from all its windows, as Flink's slicing window operator
// drops it, and counted in the LateRows of the markers. A NULL event time
// is dropped and counted the same way: its window never closes. When the
// input ends every window is emitted (Flink's end of input).
//
// Over processing time (Windows.ProcTime) a change, retractions included,
// counts in the windows open when it arrives, as in Flink's processing-time
// window aggregation; a group whose changes in a window net to no row
// emits nothing.
//
// Output columns: row kind, window_start, window_end, the keys, the
// aggregates; window bounds have the event time's type.
//
// State past the budget spills: at a marker, groups of open windows go to
// a spillStore keyed by window end, start and group (so the windows a
// watermark closes are one range of keys, read back when they fire), and
// a group comes back when a change reaches it.
type WindowAggregate struct {
	windowAgg
	windows  Windows
	open     map[[2]int64]*window
	wins     [][2]int64
	store    *spillStore // nil until something spills
	groupDec []orderedDecoder
	accDec   []orderedDecoder
}

// firing drives an event-time operator: its mini-batches (see
// miniBatchNext) end at markers, and a marker whose watermark has advanced
// fires what that watermark closed (emitted before the marker, labelled
// with its position); at the end of a bounded input everything fires.
type firing struct {
	what   string // the operator, for errors
	in     Operator
	q      *outQueue
	schema *arrow.Schema
	budget *Budget
	held   int64 // bytes accounted in budget
	// reloaded counts the bytes of state read back from disk, ever.
	reloaded int64
	wm       time.Time // the last marker's watermark, or the clock's at it
	late     int64
	mb       miniBatch
	// clock, when set, closes on processing time: at each marker what its
	// reading closes, whatever the marker's watermark.
	clock func() time.Time
}

func (f *firing) Schema() *arrow.Schema { return f.schema }

func (f *firing) Open(ctx context.Context) error { return f.in.Open(ctx) }

func (f *firing) Close() error {
	f.q.release()
	f.budget.add(-f.held)
	f.held = 0
	return f.in.Close()
}

// firer is an event-time operator: add takes changes, fire queues what a
// watermark of wm closes.
type firer interface {
	add(ctx context.Context, b arrow.RecordBatch) error
	fire(wm time.Time) error
}

func (f *firing) next(ctx context.Context, op firer) (Chunk, error) {
	return miniBatchNext(ctx, f.in, firingBatches{f, op}, f.q, &f.mb)
}

// firingBatches is a firer as a miniBatched op.
type firingBatches struct {
	f *firing
	firer
}

func (fb firingBatches) flush(_ context.Context, m *Chunk) error {
	f := fb.f
	if m == nil {
		return fb.fire(endOfTime)
	}
	wm := m.Watermark
	if f.clock != nil {
		wm = f.clock()
	}
	if !wm.IsZero() && wm.After(f.wm) {
		f.wm = wm
		if err := fb.fire(f.wm); err != nil {
			return err
		}
	}
	m.LateRows += f.late
	if s, ok := fb.firer.(spiller); ok && f.budget.over() {
		return s.evict()
	}
	return nil
}

func (fb firingBatches) heldState() (string, int64, *Budget) {
	return fb.f.what, fb.f.held - fb.f.reloaded, fb.f.budget
}

// spiller is a firer whose state moves to disk past the budget, at
// markers.
type spiller interface{ evict() error }

// window is the state of one open window: its groups by key.
type window struct {
	bounds [2]int64
	bytes  int64 // the state accounted to the budget
	groups map[string]*windowGroup
	order  []*windowGroup // in order of arrival, for a stable output
}

type windowGroup struct {
	key  string
	vals []any
	rows int64
	accs []accumulator
}

// NewWindowAggregate aggregates in by the windows of rowtime (a timestamp
// over in's batches) and keys.
func NewWindowAggregate(ec *exec.Context, in Operator, windows Windows, rowtime exec.Expr, keys []exec.Expr, keyNames []string, aggs []AggSpec, budget *Budget) (*WindowAggregate, error) {
	step, size := windows.Step.Microseconds(), windows.Size.Microseconds()
	if step <= 0 || size%step != 0 || windows.Kind == Tumble && step != size {
		return nil, fmt.Errorf("%w: window size %s is not a positive multiple of its step %s", exec.ErrInvalid, windows.Size, windows.Step)
	}
	w := &WindowAggregate{windows: windows, open: map[[2]int64]*window{}}
	if err := w.init(ec, in, "window", rowtime, keys, keyNames, aggs, budget); err != nil {
		return nil, err
	}
	w.clock = windows.ProcTime
	for _, k := range keys {
		dec, _ := orderedDecoderFor(k.DataType()) // as getterFor
		w.groupDec = append(w.groupDec, dec)
	}
	w.accDec = accDecoders(aggs)
	return w, nil
}

// windowAgg is what window and session aggregations share: the event
// time, keys and aggregates they read, and their output.
type windowAgg struct {
	firing
	ec      *exec.Context
	rowtime exec.Expr
	keys    []exec.Expr
	aggs    []AggSpec
	unit    arrow.TimeUnit
	keyGet  []getter
	argGet  []getter
	enc     vectorized.KeyEncoder
	signs   []int8
}

func (w *windowAgg) init(ec *exec.Context, in Operator, what string, rowtime exec.Expr, keys []exec.Expr, keyNames []string, aggs []AggSpec, budget *Budget) error {
	tt, ok := rowtime.DataType().(*arrow.TimestampType)
	if !ok {
		return fmt.Errorf("%w: %s time column is %s, not a timestamp", exec.ErrInvalid, what, rowtime.DataType())
	}
	*w = windowAgg{firing: firing{what: "a " + what + " aggregation", in: in, budget: budget}, ec: ec, rowtime: rowtime, keys: keys, aggs: aggs, unit: tt.Unit}
	var err error
	if w.keyGet, w.argGet, w.schema, err = windowAggSchema(tt, keys, keyNames, aggs); err != nil {
		return err
	}
	w.q, err = newOutQueue(ec, w.schema)
	return err
}

// eventBatch is a batch of changes as a window or session aggregation
// reads it; release frees its arrays.
type eventBatch struct {
	*batchEval
	n     int
	signs []int8
	times []int64 // microseconds
	valid []bool  // false: NULL event time
	keys  []arrow.Array
	in    aggInputs
}

// read evaluates b's signs, event times, keys (encoded in w.enc) and
// aggregate inputs.
func (w *windowAgg) read(ctx context.Context, b arrow.RecordBatch) (_ *eventBatch, err error) {
	signs, err := kindSigns(b, w.signs)
	if err != nil {
		return nil, err
	}
	w.signs = signs
	n := int(b.NumRows())
	e := &eventBatch{batchEval: newBatchEval(ctx, w.ec, b), n: n, signs: signs, times: make([]int64, n), valid: make([]bool, n)}
	defer func() {
		if err != nil {
			e.release()
		}
	}()
	ts, err := e.eval(w.rowtime)
	if err != nil {
		return nil, err
	}
	if err := eachTime(ts, func(i int, t time.Time) { e.times[i], e.valid[i] = t.UnixMicro(), true }); err != nil {
		return nil, err
	}
	if e.keys, err = e.evalAll(w.keys); err != nil {
		return nil, err
	}
	if err := w.enc.Encode(e.keys, n); err != nil {
		return nil, err
	}
	if e.in, err = evalAggInputs(w.aggs, w.argGet, e.batchEval); err != nil {
		return nil, err
	}
	return e, nil
}

// windowAggSchema is the output of a window or session aggregation:
// window_start, window_end (of type tt), the group keys and the aggregates,
// with the getters reading the keys and the aggregates' arguments.
func windowAggSchema(tt arrow.DataType, keys []exec.Expr, keyNames []string, aggs []AggSpec) (keyGet, argGet []getter, _ *arrow.Schema, _ error) {
	fields := []arrow.Field{{Name: "window_start", Type: tt, Nullable: true}, {Name: "window_end", Type: tt, Nullable: true}}
	for i, k := range keys {
		get, err := getterFor(k.DataType())
		if err != nil {
			return nil, nil, nil, fmt.Errorf("group %s: %w", keyNames[i], err)
		}
		keyGet = append(keyGet, get)
		fields = append(fields, arrow.Field{Name: keyNames[i], Type: k.DataType(), Nullable: true})
	}
	argGet, aggFields, err := aggGetters(aggs)
	if err != nil {
		return nil, nil, nil, err
	}
	return keyGet, argGet, withKind(append(fields, aggFields...)), nil
}

// Next returns the windows closed by the last marker's watermark, labelled
// with its position, then the marker.
func (w *WindowAggregate) Next(ctx context.Context) (Chunk, error) { return w.firing.next(ctx, w) }

// toUnit converts microseconds to a timestamp value of unit.
func toUnit(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v / 1e6
	case arrow.Millisecond:
		return v / 1e3
	case arrow.Nanosecond:
		return v * 1e3
	}
	return v
}

// toMicros converts a timestamp value of unit to microseconds.
func toMicros(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v * 1e6
	case arrow.Millisecond:
		return v * 1e3
	case arrow.Nanosecond:
		return v / 1e3
	}
	return v
}

func (w *WindowAggregate) add(ctx context.Context, b arrow.RecordBatch) error {
	e, err := w.read(ctx, b)
	if err != nil {
		return err
	}
	defer e.release()
	times, keys := e.times, e.keys
	wm := int64(0)
	if !w.wm.IsZero() {
		wm = w.wm.UnixMicro()
	}
	if w.clock != nil {
		// Never before what the last marker closed: a clock that steps
		// back must not put rows into emitted windows.
		now := max(w.clock().UnixMicro(), wm)
		for i := range times {
			times[i], e.valid[i] = now, true
		}
	}
	var grow int64
	for i, sign := range e.signs {
		if !e.valid[i] || w.clock == nil && !w.wm.IsZero() && w.windows.firstEnd(times[i]) <= wm {
			w.late++
			continue
		}
		k := w.enc.Key(i)
		w.wins = w.windows.of(times[i], w.wins[:0])
		for _, bounds := range w.wins {
			win := w.open[bounds]
			if win == nil {
				win = &window{bounds: bounds, bytes: 96, groups: map[string]*windowGroup{}}
				w.open[bounds] = win
				grow += 96
			}
			var d int64
			g := win.groups[string(k)]
			if g == nil && w.store != nil {
				if g, err = w.load(bounds, string(k)); err != nil {
					return err
				}
				if g != nil {
					w.adopt(win, g)
					d = w.groupBytes(g)
					w.reloaded += d
				}
			}
			if g == nil {
				g = w.newGroup(string(k), make([]any, len(keys)))
				for c, get := range w.keyGet {
					g.vals[c] = get(keys[c], i)
				}
				w.adopt(win, g)
				d = w.groupBytes(g)
			}
			g.rows += int64(sign)
			d += e.in.addRow(g.accs, i, sign)
			win.bytes += d
			grow += d
		}
	}
	w.held += grow
	w.budget.add(grow)
	return nil
}

func (w *WindowAggregate) newGroup(key string, vals []any) *windowGroup {
	g := &windowGroup{key: key, vals: vals, accs: make([]accumulator, len(w.aggs))}
	for j, s := range w.aggs {
		g.accs[j], _ = newAccumulator(s) // checked by NewWindowAggregate
	}
	return g
}

// adopt puts g into win.
func (w *WindowAggregate) adopt(win *window, g *windowGroup) {
	win.groups[g.key] = g
	win.order = append(win.order, g)
}

// groupBytes is what a group accounts.
func (w *WindowAggregate) groupBytes(g *windowGroup) int64 {
	n := int64(len(g.key)) + rowBytes(g.vals) + 48*int64(len(g.accs)) + 64
	for _, acc := range g.accs {
		n += acc.size()
	}
	return n
}

// windowStateKey orders spilled groups by window end, start, then group:
// the groups of the windows a watermark closes come first.
func windowStateKey(bounds [2]int64, group string) string {
	b := make([]byte, 16, 16+len(group))
	binary.BigEndian.PutUint64(b, uint64(bounds[1])^1<<63)
	binary.BigEndian.PutUint64(b[8:], uint64(bounds[0])^1<<63)
	return string(append(b, group...))
}

// evict moves groups of open windows to disk until half the budget is
// free.
func (w *WindowAggregate) evict() error {
	if w.store == nil {
		w.store = newSpillStore(w.ec, w.budget)
	}
	var out []stateEntry
	var freed int64
	target := w.budget.evictTarget()
	for _, win := range w.open {
		if freed >= target {
			break
		}
		for key, g := range win.groups {
			if freed >= target {
				break
			}
			out = append(out, stateEntry{key: windowStateKey(win.bounds, key), val: encodeWindowGroup(g)})
			n := w.groupBytes(g)
			win.bytes -= n
			freed += n
			delete(win.groups, key)
		}
		win.order = slices.DeleteFunc(win.order, func(g *windowGroup) bool { return win.groups[g.key] != g })
	}
	w.held -= freed
	w.budget.add(-freed)
	return w.store.write(out)
}

// encodeWindowGroup encodes a group's values, row count and accumulator
// states.
func encodeWindowGroup(g *windowGroup) []byte {
	var b []byte
	for _, v := range g.vals {
		b = appendOrdered(b, v, false, true)
	}
	b = binary.AppendVarint(b, g.rows)
	for _, acc := range g.accs {
		b = acc.encode(b)
	}
	return b
}

// SaveState saves the watermark, the late rows and the groups of the open
// windows, in memory and spilled (by their spill keys).
func (w *WindowAggregate) SaveState(wr *StateWriter) error {
	w.firing.save(wr)
	for _, win := range w.open {
		for _, g := range win.order {
			wr.Entry(windowStateKey(win.bounds, g.key), encodeWindowGroup(g))
		}
	}
	err := wr.spilled(w.store, func(k string) bool {
		bounds, key, err := windowStateBounds(k)
		return err == nil && w.open[bounds] != nil && w.open[bounds].groups[key] != nil
	})
	wr.EndEntries()
	return err
}

// RestoreState loads the saved windows into memory, spilling past the
// budget.
func (w *WindowAggregate) RestoreState(r *StateReader) error {
	if err := w.firing.restore(r); err != nil {
		return err
	}
	err := r.entriesWithin(w.budget, &w.held, w.evict, func(k string, v []byte) (int64, error) {
		bounds, key, err := windowStateBounds(k)
		if err != nil {
			return 0, err
		}
		g, err := w.decodeGroup(key, v)
		if err != nil {
			return 0, err
		}
		win := w.open[bounds]
		grow := w.groupBytes(g)
		if win == nil {
			win = &window{bounds: bounds, bytes: 96, groups: map[string]*windowGroup{}}
			w.open[bounds] = win
			grow += 96
		}
		w.adopt(win, g)
		win.bytes += w.groupBytes(g)
		return grow, nil
	})
	if err != nil {
		return err
	}
	return r.end()
}

// windowStateBounds reads a windowStateKey.
func windowStateBounds(k string) ([2]int64, string, error) {
	if len(k) < 16 {
		return [2]int64{}, "", errCorruptCheckpoint
	}
	return [2]int64{int64(binary.BigEndian.Uint64([]byte(k[8:16])) ^ 1<<63), int64(binary.BigEndian.Uint64([]byte(k[:8])) ^ 1<<63)}, k[16:], nil
}

// save writes the last watermark and the late rows.
func (f *firing) save(w *StateWriter) { w.progress(f.wm, f.late) }

func (f *firing) restore(r *StateReader) (err error) {
	f.wm, f.late, err = r.progress()
	return err
}

// load reads group key of window bounds back from disk (nil if none).
func (w *WindowAggregate) load(bounds [2]int64, key string) (*windowGroup, error) {
	b, ok, err := w.store.take(windowStateKey(bounds, key))
	if !ok || err != nil {
		return nil, err
	}
	// The disk's copy stays, shadowed: fire prefers the group in memory.
	return w.decodeGroup(key, b)
}

func (w *WindowAggregate) decodeGroup(key string, b []byte) (*windowGroup, error) {
	vals := make([]any, len(w.groupDec))
	var err error
	for i, d := range w.groupDec {
		if vals[i], b, err = d(b, false); err != nil {
			return nil, err
		}
	}
	g := w.newGroup(key, vals)
	var n int
	if g.rows, n = binary.Varint(b); n <= 0 {
		return nil, errCorruptState
	}
	b = b[n:]
	for i, acc := range g.accs {
		if b, err = acc.decode(b, w.accDec[i]); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// unspill brings back the spilled groups of the windows that end at or
// before wm (those in memory are newer).
func (w *WindowAggregate) unspill(wm time.Time) error {
	if w.store == nil {
		return nil
	}
	limit := wm.UnixMicro() + 1
	entries, err := w.store.takeBelow(windowStateKey([2]int64{-1 << 63, limit}, ""))
	if err != nil {
		return err
	}
	var grow int64
	for _, e := range entries {
		bounds, key, err := windowStateBounds(e.key)
		if err != nil {
			return err
		}
		win := w.open[bounds]
		if win == nil || win.groups[key] != nil {
			continue
		}
		g, err := w.decodeGroup(key, e.val)
		if err != nil {
			return err
		}
		w.adopt(win, g)
		n := w.groupBytes(g)
		win.bytes += n
		grow += n
	}
	w.held += grow
	w.budget.add(grow)
	return nil
}

// fire emits and frees the windows that end at or before wm, in order of
// their end, then start.
func (w *WindowAggregate) fire(wm time.Time) error {
	if err := w.unspill(wm); err != nil {
		return err
	}
	closed := closedWindows(w.open, wm)
	var freed int64
	for _, win := range closed {
		start, end := toUnit(win.bounds[0], w.unit), toUnit(win.bounds[1], w.unit)
		for _, g := range win.order {
			if g.rows < 0 && w.clock == nil {
				return fmt.Errorf("%w: window aggregation input retracted more rows than it added", exec.ErrInvalid)
			}
			if g.rows > 0 {
				row := append(make([]any, 0, 2+len(g.vals)+len(g.accs)), start, end)
				row = append(row, g.vals...)
				for _, acc := range g.accs {
					v, err := acc.result()
					if err != nil {
						return err
					}
					row = append(row, v)
				}
				w.q.add(kindInsert, row)
			}
		}
		freed += win.bytes
		delete(w.open, win.bounds)
	}
	w.q.seal()
	w.held -= freed
	w.budget.add(-freed)
	return nil
}

// Close frees the state, spilled included.
func (w *WindowAggregate) Close() error {
	if w.store != nil {
		w.store.close()
	}
	return w.firing.Close()
}

// closedWindows returns the windows of open (keyed by their start and end,
// in microseconds) that end at or before wm, in order of their end, then
// start.
func closedWindows[W any](open map[[2]int64]W, wm time.Time) []W {
	limit := wm.UnixMicro()
	var bounds [][2]int64
	for b := range open {
		if b[1] <= limit {
			bounds = append(bounds, b)
		}
	}
	slices.SortFunc(bounds, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[1], b[1]), cmp.Compare(a[0], b[0])) })
	closed := make([]W, len(bounds))
	for i, b := range bounds {
		closed[i] = open[b]
	}
	return closed
}
