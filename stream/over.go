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

// OverFrame is the frame of one OVER aggregate: ROWS or RANGE from
// Preceding before the current row (rows, or microseconds of event time)
// or from the partition's start (Unbounded), to the current row.
type OverFrame struct {
	Rows      bool
	Unbounded bool
	Preceding int64
}

// OverSpec is agg(...) OVER (PARTITION BY Partition ORDER BY Rowtime
// frame) for each of Aggs, with its frame in Frames.
type OverSpec struct {
	Partition []exec.Expr
	Rowtime   exec.Expr
	Aggs      []AggSpec
	Frames    []OverFrame
	// Sources names the sources of the insert-only input, for the error
	// a retraction fails the query with.
	Sources string
}

// OverAggregate is an OVER aggregation ordered by event time over an
// insert-only input (Flink's RowTimeRowsBoundedPrecedingFunction and its
// RANGE and UNBOUNDED kin): a row waits in its partition until a marker's
// watermark is at or past its event time, then is emitted once, as +I,
// with its input columns and the aggregates of its frame. Rows leave in
// order of event time; rows of one time leave together: each sees, in a
// ROWS frame, the rows of that time that arrived before it (arrival
// order, as in Flink), in a RANGE frame all of them (its peers).
//
// A row whose event time is at or before the watermark of the last marker
// arrives after rows later than it left, so it is late: dropped and
// counted in the LateRows of the markers, as WindowAggregate drops a row
// whose windows closed (a NULL event time too). A retraction fails the
// query: the input must only insert. When the input ends every waiting
// row is emitted.
//
// State: per partition, the rows waiting for the watermark, the emitted
// rows still in some bounded frame (their event time and aggregate
// inputs: the last N of ROWS N PRECEDING, those within the interval of
// the latest emitted or of the watermark for RANGE) and each aggregate's
// accumulator over its frame (an unbounded frame's never forgets). It is
// accounted in the Budget but does not spill.
type OverAggregate struct {
	firing
	ec     *exec.Context
	spec   OverSpec
	unit   arrow.TimeUnit
	rowGet rowGetter
	rowDec []orderedDecoder
	argGet []getter
	argDec []orderedDecoder
	accDec []orderedDecoder
	enc    vectorized.KeyEncoder
	signs  []int8
	parts  map[string]*overPart
	// bounded: some aggregate's frame forgets rows; ranged: some RANGE
	// frame does, so the watermark expires rows.
	bounded, ranged bool

	changed changedKeys // the partitions changed since the last save
}

// overPart is one partition's state.
type overPart struct {
	key     string
	waiting []overRow // by event time, then arrival
	frame   []overRow // emitted rows in some frame, in order (vals unset)
	accs    []accumulator
	start   []int // per aggregate: its frame's first row in frame
	bytes   int64
}

// overRow is a row: its event time (microseconds), its aggregates' inputs
// (overSkip: the aggregate skips the row) and, while waiting, its values.
type overRow struct {
	t    int64
	args []any
	vals []any
}

// overSkip is the input of an aggregate that skips a row (a NULL
// argument, a FILTER that fails).
type overSkipT struct{}

var overSkip = overSkipT{}

const overPartBytes = 160

// NewOverAggregate computes spec over in's rows.
func NewOverAggregate(ec *exec.Context, in Operator, spec OverSpec, budget *Budget) (*OverAggregate, error) {
	tt, ok := spec.Rowtime.DataType().(*arrow.TimestampType)
	if !ok {
		return nil, fmt.Errorf("%w: OVER's ORDER BY is %s, not a timestamp", exec.ErrInvalid, spec.Rowtime.DataType())
	}
	if len(spec.Frames) != len(spec.Aggs) {
		return nil, fmt.Errorf("%w: %d frames for %d OVER aggregates", exec.ErrInvalid, len(spec.Frames), len(spec.Aggs))
	}
	o := &OverAggregate{firing: firing{what: "an OVER aggregation", in: in, budget: budget}, ec: ec, spec: spec, unit: tt.Unit, parts: map[string]*overPart{}}
	for _, f := range spec.Frames {
		if f.Preceding < 0 {
			return nil, fmt.Errorf("%w: OVER frame of %d preceding", exec.ErrInvalid, f.Preceding)
		}
		o.bounded = o.bounded || !f.Unbounded
		o.ranged = o.ranged || !f.Unbounded && !f.Rows
	}
	fields := in.Schema().Fields()[1:]
	var err error
	if o.rowGet, err = rowGetterFor(fields); err != nil {
		return nil, err
	}
	for _, f := range fields {
		d, _ := orderedDecoderFor(f.Type) // as rowGetterFor
		o.rowDec = append(o.rowDec, d)
	}
	argGet, aggFields, err := aggGetters(spec.Aggs)
	if err != nil {
		return nil, err
	}
	o.argGet = argGet
	for _, s := range spec.Aggs {
		var d orderedDecoder
		if s.Arg != nil {
			if s.Distinct {
				return nil, fmt.Errorf("%w: DISTINCT in an OVER aggregate", exec.ErrInvalid)
			}
			d, _ = orderedDecoderFor(s.Arg.DataType()) // as aggGetters
			if s.Func == "count" {
				d = decodeTrue // count's getter reads true for a value
			}
		}
		o.argDec = append(o.argDec, d)
	}
	o.accDec = accDecoders(spec.Aggs)
	o.schema = withKind(append(slices.Clip(fields), aggFields...))
	if o.q, err = newOutQueue(ec, o.schema); err != nil {
		return nil, err
	}
	return o, nil
}

// decodeTrue reads count's input, which is true whatever the value.
func decodeTrue(b []byte, _ bool) (any, []byte, error) { return true, b, nil }

func (o *OverAggregate) Next(ctx context.Context) (Chunk, error) { return o.firing.next(ctx, o) }

func (o *OverAggregate) newPart(key string) *overPart {
	p := &overPart{key: key, accs: make([]accumulator, len(o.spec.Aggs)), start: make([]int, len(o.spec.Aggs)), bytes: overPartBytes + int64(len(key))}
	for j, s := range o.spec.Aggs {
		p.accs[j], _ = newAccumulator(s) // checked by NewOverAggregate
	}
	return p
}

// rowBytes is what a row accounts: waiting, with its values.
func overRowBytes(r overRow) int64 {
	n := rowBytes(r.args) + 16
	if r.vals != nil {
		n += rowBytes(r.vals)
	}
	return n
}

func (o *OverAggregate) add(ctx context.Context, b arrow.RecordBatch) (err error) {
	signs, err := kindSigns(b, o.signs)
	if err != nil {
		return err
	}
	o.signs = signs
	ev := newBatchEval(ctx, o.ec, b)
	defer ev.release()
	n := int(b.NumRows())
	if _, err := ev.encodeKeys(o.spec.Partition, &o.enc); err != nil {
		return err
	}
	ts, err := ev.eval(o.spec.Rowtime)
	if err != nil {
		return err
	}
	times, valid := make([]int64, n), make([]bool, n)
	if err := eachTime(ts, func(i int, t time.Time) { times[i], valid[i] = t.UnixMicro(), true }); err != nil {
		return err
	}
	in, err := evalAggInputs(o.spec.Aggs, o.argGet, ev)
	if err != nil {
		return err
	}
	cols := b.Columns()[1:]
	var grow int64
	for i, sign := range signs {
		if sign < 0 {
			return fmt.Errorf("%w: an OVER aggregation needs an input that only inserts, but %s retracted a row (a DELETE, UPDATE or INSERT OVERWRITE of an append table it reads): restart the query", exec.ErrInvalid, o.spec.Sources)
		}
		if !valid[i] || !o.wm.IsZero() && times[i] <= o.wm.UnixMicro() {
			o.late++
			continue
		}
		k := o.enc.Key(i)
		p := o.parts[string(k)]
		if p == nil {
			p = o.newPart(string(k))
			o.parts[p.key] = p
			grow += p.bytes
		}
		row := overRow{t: times[i], vals: o.rowGet.row(cols, i), args: make([]any, len(o.spec.Aggs))}
		for j := range o.spec.Aggs {
			v, ok := in.value(j, i)
			if !ok {
				v = overSkip
			}
			row.args[j] = v
		}
		// After the rows of its time that came before it.
		at, _ := slices.BinarySearchFunc(p.waiting, row.t+1, func(r overRow, t int64) int { return cmp.Compare(r.t, t) })
		p.waiting = slices.Insert(p.waiting, at, row)
		d := overRowBytes(row)
		p.bytes += d
		grow += d
		o.changed.add(p.key)
	}
	o.held += grow
	o.budget.add(grow)
	return nil
}

// evict is called past the query memory budget: the state cannot move
// to disk yet, and would grow for as long as the watermark lags (a large
// delay, a source that stopped), so the query fails instead.
func (o *OverAggregate) evict() error {
	return fmt.Errorf("%w: an OVER aggregation holds %d bytes of state (rows waiting for the watermark, rows in its frames) of the %d its query's operators hold, over %s; its state does not spill yet: a smaller watermark delay or narrower frames hold less", exec.ErrMemoryLimit, o.held, o.budget.Used(), o.budget.bound())
}

// fire emits the waiting rows at or before wm, and expires the rows no
// later row's RANGE frame can hold.
func (o *OverAggregate) fire(wm time.Time) error {
	limit := wm.UnixMicro()
	var grow int64
	for key, p := range o.parts {
		before := p.bytes
		n := 0
		for n < len(p.waiting) && p.waiting[n].t <= limit {
			n++
		}
		if n > 0 {
			if err := o.emit(p, p.waiting[:n]); err != nil {
				return err
			}
			p.waiting = slices.Delete(p.waiting, 0, n)
		}
		// Every later row is after wm: a RANGE frame of one starts after
		// wm - preceding.
		if o.ranged && o.expire(p, limit) || n > 0 {
			o.changed.add(key)
		}
		if len(p.waiting) == 0 && len(p.frame) == 0 && o.allBounded() {
			// Every frame is empty: the partition is as new.
			delete(o.parts, key)
			grow -= before
			continue
		}
		grow += p.bytes - before
	}
	o.q.seal()
	o.held += grow
	o.budget.add(grow)
	return nil
}

func (o *OverAggregate) allBounded() bool {
	for _, f := range o.spec.Frames {
		if f.Unbounded {
			return false
		}
	}
	return true
}

// emit emits rows (waiting rows of p, in order) with their aggregates.
func (o *OverAggregate) emit(p *overPart, rows []overRow) error {
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = append(make([]any, 0, len(r.vals)+len(o.spec.Aggs)), r.vals...)
		p.bytes -= rowBytes(r.vals)
	}
	for lo := 0; lo < len(rows); {
		hi := lo + 1
		for hi < len(rows) && rows[hi].t == rows[lo].t {
			hi++
		}
		base := len(p.frame)
		for _, r := range rows[lo:hi] {
			p.frame = append(p.frame, overRow{t: r.t, args: r.args})
		}
		t := rows[lo].t
		for j, f := range o.spec.Frames {
			acc := p.accs[j]
			for i := lo; i < hi; i++ {
				if v := rows[i].args[j]; v != overSkip {
					p.bytes += acc.add(v, 1)
					if f.Unbounded {
						p.bytes += keepExtreme(acc)
					}
				}
				if !f.Rows && i < hi-1 {
					continue // a RANGE frame holds every peer
				}
				cur := base + i - lo
				for !f.Unbounded && p.start[j] <= cur && (f.Rows && int64(cur-p.start[j]) > f.Preceding || !f.Rows && p.frame[p.start[j]].t < t-f.Preceding) {
					if v := p.frame[p.start[j]].args[j]; v != overSkip {
						p.bytes += acc.add(v, -1)
					}
					p.start[j]++
				}
				v, err := acc.result()
				if err != nil {
					return err
				}
				if f.Rows {
					out[i] = append(out[i], v)
					continue
				}
				for k := lo; k < hi; k++ {
					out[k] = append(out[k], v)
				}
			}
		}
		lo = hi
	}
	for _, r := range out {
		o.q.add(kindInsert, r)
	}
	o.trim(p)
	return nil
}

// keepExtreme makes a min or max of an unbounded frame, which nothing
// leaves, keep its extreme value only (Flink's MaxAggFunction rather than
// MaxWithRetractAggFunction), and returns the bytes that freed.
func keepExtreme(acc accumulator) int64 {
	m, ok := acc.(*minMax)
	if !ok || len(m.vals) <= 1 || m.stale || m.best == nil {
		return 0
	}
	var grow int64
	best := mapKey(m.best)
	for k, e := range m.vals {
		if k != best {
			delete(m.vals, k)
			grow -= rowBytes([]any{e.v}) + 32
		}
	}
	return grow
}

// expire moves the bounded RANGE frames of p past the rows before wm less
// their interval, forgets the rows no frame holds then, and reports
// whether any row left a frame.
func (o *OverAggregate) expire(p *overPart, wm int64) bool {
	moved := false
	for j, f := range o.spec.Frames {
		if f.Unbounded || f.Rows {
			continue
		}
		for p.start[j] < len(p.frame) && p.frame[p.start[j]].t < wm-f.Preceding {
			if v := p.frame[p.start[j]].args[j]; v != overSkip {
				p.bytes += p.accs[j].add(v, -1)
			}
			p.start[j]++
			moved = true
		}
	}
	o.trim(p)
	return moved
}

// trim forgets the rows of p's frame before every bounded frame's start
// (all of them without one: an unbounded frame's accumulator holds them).
func (o *OverAggregate) trim(p *overPart) {
	cut := len(p.frame)
	for j, f := range o.spec.Frames {
		if !f.Unbounded {
			cut = min(cut, p.start[j])
		}
	}
	if cut == 0 {
		return
	}
	for _, r := range p.frame[:cut] {
		p.bytes -= overRowBytes(r)
	}
	p.frame = slices.Delete(p.frame, 0, cut)
	for j := range p.start {
		p.start[j] = max(p.start[j]-cut, 0)
	}
}

// SaveState saves the watermark, the late rows and every partition (in a
// delta, the partitions changed).
func (o *OverAggregate) SaveState(w *StateWriter) error {
	o.firing.save(w)
	return w.keyed(&o.changed, func() error {
		for k, p := range o.parts {
			w.entryScratch(k, o.appendPart(w.scratch(), p))
		}
		return nil
	}, func(k string, b []byte) ([]byte, bool, error) {
		if p, ok := o.parts[k]; ok {
			return o.appendPart(b, p), true, nil
		}
		return nil, false, nil
	})
}

func (o *OverAggregate) trackChanges() { o.changed.track() }

// RestoreState loads the saved partitions.
func (o *OverAggregate) RestoreState(r *StateReader) error {
	if err := o.firing.restore(r); err != nil {
		return err
	}
	err := r.Entries(func(k string, v []byte) error {
		p, err := o.decodePart(k, v)
		if err != nil {
			return err
		}
		o.parts[k] = p
		o.held += p.bytes
		o.budget.add(p.bytes)
		return nil
	})
	if err != nil {
		return err
	}
	return r.end()
}

// appendPart encodes p: its accumulators, frame starts, frame rows and
// waiting rows.
func (o *OverAggregate) appendPart(b []byte, p *overPart) []byte {
	for j, acc := range p.accs {
		b = acc.encode(b)
		b = binary.AppendUvarint(b, uint64(p.start[j]))
	}
	b = binary.AppendUvarint(b, uint64(len(p.frame)))
	for _, r := range p.frame {
		b = o.appendRowArgs(b, r)
	}
	b = binary.AppendUvarint(b, uint64(len(p.waiting)))
	for _, r := range p.waiting {
		b = appendRow(o.appendRowArgs(b, r), r.vals)
	}
	return b
}

func (o *OverAggregate) appendRowArgs(b []byte, r overRow) []byte {
	b = binary.AppendVarint(b, r.t)
	for j, v := range r.args {
		if v == overSkip {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		if o.argDec[j] != nil && o.spec.Aggs[j].Func != "count" {
			b = appendOrdered(b, v, false, true)
		}
	}
	return b
}

func (o *OverAggregate) decodeRowArgs(b []byte) (overRow, []byte, error) {
	t, n := binary.Varint(b)
	if n <= 0 {
		return overRow{}, nil, errCorruptState
	}
	b = b[n:]
	r := overRow{t: t, args: make([]any, len(o.spec.Aggs))}
	for j := range r.args {
		if len(b) == 0 || b[0] > 1 {
			return overRow{}, nil, errCorruptState
		}
		present := b[0] == 1
		b = b[1:]
		switch {
		case !present:
			r.args[j] = overSkip
		case o.argDec[j] != nil:
			var err error
			if r.args[j], b, err = o.argDec[j](b, false); err != nil {
				return overRow{}, nil, err
			}
		}
	}
	return r, b, nil
}

func (o *OverAggregate) decodePart(key string, b []byte) (*overPart, error) {
	p := o.newPart(key)
	var err error
	for j, acc := range p.accs {
		if b, err = acc.decode(b, o.accDec[j]); err != nil {
			return nil, err
		}
		p.bytes += acc.size()
		s, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errCorruptState
		}
		p.start[j], b = int(s), b[n:]
	}
	for _, into := range []*[]overRow{&p.frame, &p.waiting} {
		cnt, n := binary.Uvarint(b)
		if n <= 0 || cnt > uint64(len(b)) {
			return nil, errCorruptState
		}
		b = b[n:]
		for range cnt {
			var r overRow
			if r, b, err = o.decodeRowArgs(b); err != nil {
				return nil, err
			}
			if into == &p.waiting {
				if r.vals, b, err = decodeRow(b, o.rowDec); err != nil {
					return nil, err
				}
			}
			*into = append(*into, r)
			p.bytes += overRowBytes(r)
		}
	}
	if len(b) != 0 {
		return nil, errCorruptState
	}
	for _, s := range p.start {
		if s > len(p.frame) {
			return nil, errCorruptState
		}
	}
	return p, nil
}

// Close frees the state.
func (o *OverAggregate) Close() error { return o.firing.Close() }
