package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// IntervalSpec is an interval join: left and right rows join when their
// keys are equal (non-NULL) and right.time + Lower <= left.time <=
// right.time + Upper.
type IntervalSpec struct {
	// Kind is exec.InnerJoin, LeftJoin, RightJoin or FullJoin.
	Kind                exec.JoinType
	LeftKeys, RightKeys []exec.Expr
	LeftTime, RightTime exec.Expr // timestamps over each side's batches
	Lower, Upper        time.Duration
}

// IntervalJoin is an inner interval join by event time (Flink's interval
// join): each input change (+I/+U adds, -U/-D retracts) emits the +I or -D
// of its joined rows with the other side's rows held, and a row is held
// only while a row of the other side that is not late could still join it:
// once the watermark (the smaller of the inputs') passes both its event
// time and the last time a partner could have, it is dropped from state.
// A change whose event time is at or before the watermark of the last
// marker is late: dropped and counted in the LateRows of the markers. Rows
// with a NULL key or event time join nothing and are not held.
//
// An outer interval join (LEFT, RIGHT, FULL) holds the rows of a side it
// keeps with the count of their current partners, and when the watermark
// expires a row that has none, emits it padded with NULLs (+I): no change
// that is not late can join it then, so the padded row is final. A row
// of a kept side with a NULL key is held and padded the same way; one
// with a NULL event time can never join, and is padded (or its padded row
// retracted) as it comes. When both inputs end every held row expires.
//
// Output columns: row kind, left columns, right columns.
//
// State past the budget spills: at a marker (after expiry), a join key's
// rows of both sides go to a spillStore keyed by the earliest time one of
// them expires (every row left in memory then expires after the
// watermark) until half the budget is free. A change of a spilled key
// reads it back (its record is forgotten: the key is written again when
// it next goes), and the keys with rows the watermark expires are one
// range, read back before expiry. Which keys are on disk, and under which
// time, stays in memory.
type IntervalJoin struct {
	eventTimeJoin
	ec     *exec.Context
	spec   IntervalSpec
	schema *arrow.Schema

	sides   [2]*intervalSide
	store   *spillStore // nil until something spills
	spilled spilledKeys // keyed by their earliest expiry
	held    int64
	signs   []int8
	lower   int64 // microseconds
	upper   int64
}

type intervalSide struct {
	keys  []exec.Expr
	time  exec.Expr
	get   rowGetter
	dec   []orderedDecoder
	enc   vectorized.KeyEncoder
	table map[string][]*intervalRow // by join key
}

type intervalRow struct {
	vals    []any
	t       int64 // event time, microseconds
	n       int64 // copies held
	matched int64 // partner copies joined to one copy (outer joins pad at 0)
}

// nullIntervalKey holds a kept side's rows with a NULL key; other keys
// are "k" and their encoding, so it matches none.
const nullIntervalKey = "n"

// NewIntervalJoin joins left and right by spec.
func NewIntervalJoin(ec *exec.Context, left, right Operator, spec IntervalSpec, budget *Budget) (*IntervalJoin, error) {
	if len(spec.LeftKeys) != len(spec.RightKeys) {
		return nil, fmt.Errorf("%w: interval join of %d left and %d right keys", exec.ErrInvalid, len(spec.LeftKeys), len(spec.RightKeys))
	}
	switch spec.Kind {
	case exec.InnerJoin, exec.LeftJoin, exec.RightJoin, exec.FullJoin:
	default:
		return nil, fmt.Errorf("%w: interval join of kind %d", exec.ErrInvalid, spec.Kind)
	}
	if spec.Lower > spec.Upper {
		return nil, fmt.Errorf("%w: interval join bounds %s > %s", exec.ErrInvalid, spec.Lower, spec.Upper)
	}
	j := &IntervalJoin{eventTimeJoin: eventTimeJoin{budget: budget}, ec: ec, spec: spec, lower: spec.Lower.Microseconds(), upper: spec.Upper.Microseconds(), spilled: spilledKeys{}}
	j.two = twoInputs{in: [2]Operator{left, right}, lock: -1}
	var fields []arrow.Field
	for s, op := range []Operator{left, right} {
		f := op.Schema().Fields()[1:]
		get, err := rowGetterFor(f)
		if err != nil {
			return nil, err
		}
		keys, tm := spec.LeftKeys, spec.LeftTime
		if s == 1 {
			keys, tm = spec.RightKeys, spec.RightTime
		}
		if _, ok := tm.DataType().(*arrow.TimestampType); !ok {
			return nil, fmt.Errorf("%w: interval join time is %s, not a timestamp", exec.ErrInvalid, tm.DataType())
		}
		j.sides[s] = &intervalSide{keys: keys, time: tm, get: get, table: map[string][]*intervalRow{}}
		for _, fd := range f {
			d, err := orderedDecoderFor(fd.Type)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", fd.Name, err)
			}
			j.sides[s].dec = append(j.sides[s].dec, d)
		}
		fields = append(fields, f...)
	}
	j.schema = withKind(fields)
	q, err := newOutQueue(ec, j.schema)
	if err != nil {
		return nil, err
	}
	j.q = q
	return j, nil
}

func (j *IntervalJoin) Schema() *arrow.Schema { return j.schema }

func (j *IntervalJoin) Open(ctx context.Context) error { return j.two.open(ctx) }

func (j *IntervalJoin) Next(ctx context.Context) (Chunk, error) { return j.next(ctx, j) }

// matches reports whether a row of side at time t joins a row of the
// other side at time o.
func (j *IntervalJoin) matches(side int, t, o int64) bool {
	l, r := t, o
	if side == 1 {
		l, r = o, t
	}
	return r+j.lower <= l && l <= r+j.upper
}

// keeps reports whether the join pads the unmatched rows of side.
func (j *IntervalJoin) keeps(side int) bool {
	k := j.spec.Kind
	return k == exec.FullJoin || side == 0 && k == exec.LeftJoin || side == 1 && k == exec.RightJoin
}

// padded queues row vals of side with NULLs for the other side's columns.
func (j *IntervalJoin) padded(kind string, side int, vals []any, n int64) {
	row := make([]any, len(j.sides[0].get)+len(j.sides[1].get))
	at := 0
	if side == 1 {
		at = len(j.sides[0].get)
	}
	copy(row[at:], vals)
	for range n {
		j.q.add(kind, row)
	}
}

func (j *IntervalJoin) addSide(ctx context.Context, side int, b arrow.RecordBatch) (err error) {
	signs, err := kindSigns(b, j.signs)
	if err != nil {
		return err
	}
	j.signs = signs
	s, other := j.sides[side], j.sides[1-side]
	n := int(b.NumRows())
	ev := newBatchEval(ctx, j.ec, b)
	defer ev.release()
	keys, err := ev.encodeKeys(s.keys, &s.enc)
	if err != nil {
		return err
	}
	ts, err := ev.eval(s.time)
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
		kind := kindInsert
		if sign < 0 {
			kind = kindDelete
		}
		nullKey := slices.ContainsFunc(keys, func(k arrow.Array) bool { return k.IsNull(i) })
		if !valid[i] && kept {
			j.padded(kind, side, s.get.row(cols, i), 1) // never joins: final now
			continue
		}
		if !valid[i] || nullKey && !kept {
			continue // joins nothing
		}
		t := times[i]
		if !j.wm.IsZero() && t <= j.wm.UnixMicro() {
			j.late++
			continue
		}
		k := nullIntervalKey
		if !nullKey {
			k = "k" + string(s.enc.Key(i))
		}
		vals := s.get.row(cols, i)
		if err := j.load(k, &grow); err != nil {
			return err
		}
		var matched int64
		for _, o := range other.table[k] {
			if k == nullIntervalKey || !j.matches(side, t, o.t) {
				continue
			}
			row := append(slices.Clone(vals), o.vals...)
			if side == 1 {
				row = append(slices.Clone(o.vals), vals...)
			}
			for range o.n {
				j.q.add(kind, row)
			}
			matched += o.n
			o.matched += int64(sign)
		}
		rows := s.table[k]
		at := slices.IndexFunc(rows, func(r *intervalRow) bool { return r.t == t && sameRow(r.vals, vals) })
		switch {
		case sign > 0 && at >= 0:
			rows[at].n++
		case sign > 0:
			s.table[k] = append(rows, &intervalRow{vals: vals, t: t, n: 1, matched: matched})
			grow += intervalRowBytes(k, vals)
		case at < 0:
			return fmt.Errorf("%w: interval join input retracts a row it never added", exec.ErrInvalid)
		case rows[at].n == 1:
			s.table[k] = slices.Delete(rows, at, at+1)
			if len(s.table[k]) == 0 {
				delete(s.table, k)
			}
			grow -= intervalRowBytes(k, vals)
		default:
			rows[at].n--
		}
	}
	j.held += grow
	j.budget.add(grow)
	return nil
}

func intervalRowBytes(k string, vals []any) int64 { return int64(len(k)) + rowBytes(vals) + 64 }

// expiry is when row r of side leaves the state: the watermark has passed
// its time and the last time a partner could have.
func (j *IntervalJoin) expiry(side int, r *intervalRow) int64 {
	last := r.t - j.lower // a right partner's latest time
	if side == 1 {
		last = r.t + j.upper // a left partner's latest time
	}
	return max(r.t, last)
}

// evict moves join keys (the rows of both sides) to disk until half the
// budget is free. It runs after expiry: every row held expires after the
// watermark, above the keys expiry ended.
func (j *IntervalJoin) evict() error {
	if j.store == nil {
		j.store = newSpillStore(j.ec, j.budget)
	}
	var out []stateEntry
	var freed int64
	target := j.budget.evictTarget()
	for side := range j.sides {
		for k := range j.sides[side].table {
			if freed >= target {
				break
			}
			b, first, n := j.encodeKey(k)
			if first <= j.wm.UnixMicro() {
				continue // expires at the next marker
			}
			for _, sd := range j.sides {
				delete(sd.table, k)
			}
			out = append(out, j.spilled.entry(k, first, b))
			freed += n - spilledBytes(k)
		}
	}
	j.held -= freed
	j.budget.add(-freed)
	return j.store.write(out)
}

// encodeKey encodes join key k's rows of both sides for the spill store,
// with the earliest time one of them expires and the bytes they account.
func (j *IntervalJoin) encodeKey(k string) (b []byte, first, n int64) {
	first = math.MaxInt64
	for s, sd := range j.sides {
		rows := sd.table[k]
		b = binary.AppendUvarint(b, uint64(len(rows)))
		for _, r := range rows {
			first = min(first, j.expiry(s, r))
			b = binary.AppendVarint(appendRow(b, r.vals), r.t)
			b = binary.AppendVarint(binary.AppendVarint(b, r.n), r.matched)
			n += intervalRowBytes(k, r.vals)
		}
	}
	return b, first, n
}

// SaveState saves the inputs' positions, the watermark, the late rows
// and every join key's rows (with their partner counts, which decide the
// padding of an outer join), in memory and spilled, keyed as evict keys
// them.
func (j *IntervalJoin) SaveState(w *StateWriter) error {
	j.two.saveProgress(w, j.wm, j.late)
	for side, sd := range j.sides {
		for k := range sd.table {
			if _, done := j.sides[0].table[k]; side == 1 && done {
				continue // saved with the left side's
			}
			b, first, _ := j.encodeKey(k)
			w.Entry(windowStateKey([2]int64{0, first}, k), b)
		}
	}
	err := w.spilled(j.store, func(key string) bool {
		_, left := j.sides[0].table[key[16:]]
		_, right := j.sides[1].table[key[16:]]
		return left || right
	})
	w.EndEntries()
	return err
}

// RestoreState loads the saved rows into memory, spilling past the
// budget.
func (j *IntervalJoin) RestoreState(r *StateReader) (err error) {
	if j.wm, j.late, err = j.two.restoreProgress(r); err != nil {
		return err
	}
	err = r.entriesWithin(j.budget, &j.held, j.evict, func(key string, v []byte) (grow int64, err error) {
		if len(key) < 16 {
			return 0, errCorruptCheckpoint
		}
		err = j.decode(key[16:], v, &grow)
		return grow, err
	})
	if err != nil {
		return err
	}
	return r.end()
}

// load reads spilled join key k back, adding its bytes to grow.
func (j *IntervalJoin) load(k string, grow *int64) error {
	b, ok, err := j.spilled.take(j.store, k)
	if !ok || err != nil {
		return err
	}
	*grow -= spilledBytes(k)
	return j.decode(k, b, grow)
}

// decode puts the rows evict encoded for key k as b back.
func (j *IntervalJoin) decode(k string, b []byte, grow *int64) error {
	for _, sd := range j.sides {
		n, m := binary.Uvarint(b)
		if m <= 0 {
			return errCorruptState
		}
		b = b[m:]
		for range n {
			r := &intervalRow{}
			var err error
			if r.vals, b, err = decodeRow(b, sd.dec); err != nil {
				return err
			}
			for _, v := range []*int64{&r.t, &r.n, &r.matched} {
				if *v, m = binary.Varint(b); m <= 0 {
					return errCorruptState
				}
				b = b[m:]
			}
			sd.table[k] = append(sd.table[k], r)
			*grow += intervalRowBytes(k, r.vals)
		}
	}
	return nil
}

// unspill brings back the spilled keys with rows that expire at or
// before wm.
func (j *IntervalJoin) unspill(wm time.Time) error {
	var grow int64
	err := j.spilled.takeClosed(j.store, wm, func(k string, b []byte) error {
		grow -= spilledBytes(k)
		return j.decode(k, b, &grow)
	})
	j.held += grow
	j.budget.add(grow)
	return err
}

// advance drops the rows no change that is not late can join or retract:
// event time at or before the watermark wm, and so is the last time a
// partner of the other side could have. An outer join pads the rows of a
// kept side that leave without a partner.
func (j *IntervalJoin) advance(wm time.Time) error {
	if err := j.unspill(wm); err != nil {
		return err
	}
	limit := wm.UnixMicro()
	var freed int64
	for side, s := range j.sides {
		kept := j.keeps(side)
		for k, rows := range s.table {
			rows = slices.DeleteFunc(rows, func(r *intervalRow) bool {
				if j.expiry(side, r) <= limit {
					if kept && r.matched == 0 {
						j.padded(kindInsert, side, r.vals, r.n)
					}
					freed += intervalRowBytes(k, r.vals)
					return true
				}
				return false
			})
			if len(rows) == 0 {
				delete(s.table, k)
			} else {
				s.table[k] = rows
			}
		}
	}
	j.q.seal()
	j.held -= freed
	j.budget.add(-freed)
	return nil
}

// Close frees the state, spilled included.
func (j *IntervalJoin) Close() error {
	if j.store != nil {
		j.store.close()
	}
	j.q.release()
	j.budget.add(-j.held)
	j.held = 0
	return j.two.close()
}
