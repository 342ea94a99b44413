package stream

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// SessionAggregate is a SESSION window aggregation (GROUP BY window_start,
// window_end and any keys): per partition (the TVF's PARTITION BY
// columns), rows ordered by event time are in one session while each is at
// most Gap after the one before; a session is [its first time, its last
// time + Gap). At the first marker whose watermark is at or past a
// session's end its rows are aggregated by window_start, window_end and
// the keys, together with the rows of every other partition's session of
// the same bounds closing then (the keys need not be the partition
// columns, as in the batch GROUP BY over the TVF's rows), emitted once as
// +I rows, and freed. Sessions of equal bounds close at the same marker,
// and a row that could still join one is not late, so each output row is
// final.
//
// A change (+I/+U adds, -U/-D retracts) whose event time is at or before
// the watermark of the last marker is late: dropped and counted in the
// LateRows of the markers (so are NULL event times). This is stricter than
// Flink, which accepts a row up to Gap before the watermark, but it makes
// every emitted session final: a row that is not late is more than Gap
// after the end of every session emitted, so it can neither join nor
// bridge them, and the sessions emitted are exactly the batch SESSION
// TVF's over the rows that were not late. Retractions may split an open
// session: the state holds each key's rows (their event time and
// aggregate inputs), not running aggregates, and a session's aggregates
// are computed when it closes.
//
// Output columns: row kind, window_start, window_end, the keys, the
// aggregates; window bounds have the event time's type.
//
// State past the budget spills: at a marker, partitions go whole to a
// spillStore keyed by the end of their first session (the earliest time
// one of them can close; every partition left in memory then ends its
// first session after the watermark) until half the budget is free. A
// change of a spilled partition reads it back (its record is forgotten:
// the partition is keyed again when it next goes), and the partitions
// whose first session the watermark closes are one range of keys, read
// back before the sessions fire. Which partitions are on disk, and under
// which key, stays in memory.
type SessionAggregate struct {
	windowAgg
	gap        int64 // microseconds
	partitions []exec.Expr
	partEnc    vectorized.KeyEncoder
	parts      map[string]*sessionPart
	store      *spillStore // nil until something spills
	spilled    spilledKeys // keyed by the end of their first session
	keyDec     []orderedDecoder
	inputDec   []orderedDecoder // nil for count(*)
}

// sessionPart is the state of one partition: its rows of open sessions
// and the values of the keys they have (by their encoding).
type sessionPart struct {
	keys map[string][]any
	rows []*sessionRow // in no order
}

// sessionRow is n copies of an input row: its event time, its keys'
// encoding and the input of each aggregate (noInput where the aggregate
// skips the row).
type sessionRow struct {
	t      int64
	key    string
	inputs []any
	n      int64
}

// noInput marks an aggregate input the aggregate skips (NULL, or its
// FILTER fails); nil is count(*)'s input.
type noInput struct{}

// NewSessionAggregate aggregates in by the sessions of rowtime (a
// timestamp over in's batches) per partitions, sessions ending gap after
// their last row, and keys.
func NewSessionAggregate(ec *exec.Context, in Operator, gap time.Duration, rowtime exec.Expr, partitions, keys []exec.Expr, keyNames []string, aggs []AggSpec, budget *Budget) (*SessionAggregate, error) {
	if gap <= 0 {
		return nil, fmt.Errorf("%w: session gap %s is not positive", exec.ErrInvalid, gap)
	}
	s := &SessionAggregate{}
	if err := s.init(ec, in, "session", rowtime, keys, keyNames, aggs, budget); err != nil {
		return nil, err
	}
	s.gap, s.partitions, s.parts, s.spilled = gap.Microseconds(), partitions, map[string]*sessionPart{}, spilledKeys{}
	for _, k := range keys {
		d, err := orderedDecoderFor(k.DataType())
		if err != nil {
			return nil, err
		}
		s.keyDec = append(s.keyDec, d)
	}
	for _, a := range aggs {
		var d orderedDecoder
		if a.Arg != nil {
			var err error
			if d, err = orderedDecoderFor(a.Arg.DataType()); err != nil {
				return nil, fmt.Errorf("%s: %w", a.Name, err)
			}
		}
		s.inputDec = append(s.inputDec, d)
	}
	return s, nil
}

// Next returns the sessions closed by the last marker's watermark,
// labelled with its position, then the marker.
func (s *SessionAggregate) Next(ctx context.Context) (Chunk, error) { return s.firing.next(ctx, s) }

func (s *SessionAggregate) add(ctx context.Context, b arrow.RecordBatch) error {
	e, err := s.read(ctx, b)
	if err != nil {
		return err
	}
	defer e.release()
	partCols, err := e.evalAll(s.partitions)
	if err != nil {
		return err
	}
	if err := s.partEnc.Encode(partCols, e.n); err != nil {
		return err
	}
	var grow int64
	for i, sign := range e.signs {
		if !e.valid[i] || !s.wm.IsZero() && e.times[i] <= s.wm.UnixMicro() {
			s.late++
			continue
		}
		k := string(s.partEnc.Key(i))
		part := s.parts[k]
		if part == nil {
			if part, err = s.load(k); err != nil {
				return err
			}
			if part != nil {
				grow += stateBytes(k, part)
				s.reloaded += stateBytes(k, part)
			} else {
				part = &sessionPart{keys: map[string][]any{}}
				grow += int64(len(k)) + 64
			}
			s.parts[k] = part
		}
		key := string(s.enc.Key(i))
		if _, ok := part.keys[key]; !ok {
			vals := make([]any, len(e.keys))
			for c, get := range s.keyGet {
				vals[c] = get(e.keys[c], i)
			}
			part.keys[key] = vals
			grow += int64(len(key)) + rowBytes(vals)
		}
		inputs := make([]any, len(s.aggs))
		for j := range s.aggs {
			v, ok := e.in.value(j, i)
			if !ok {
				v = noInput{}
			}
			inputs[j] = v
		}
		d, err := s.change(k, part, e.times[i], key, inputs, sign)
		if err != nil {
			return err
		}
		grow += d
	}
	s.held += grow
	s.budget.add(grow)
	return nil
}

// change adds or retracts one copy of a row of part (partition k) with
// keys key and returns the bytes of state added.
func (s *SessionAggregate) change(k string, part *sessionPart, t int64, key string, inputs []any, sign int8) (int64, error) {
	i := slices.IndexFunc(part.rows, func(r *sessionRow) bool { return r.t == t && r.key == key && sameRow(r.inputs, inputs) })
	if i < 0 {
		if sign < 0 {
			return 0, fmt.Errorf("%w: session aggregation input retracts a row it never added", exec.ErrInvalid)
		}
		r := &sessionRow{t: t, key: key, inputs: inputs, n: 1}
		part.rows = append(part.rows, r)
		return sessionRowBytes(r), nil
	}
	r := part.rows[i]
	if r.n += int64(sign); r.n > 0 {
		return 0, nil
	}
	part.rows[i] = part.rows[len(part.rows)-1]
	part.rows = part.rows[:len(part.rows)-1]
	freed := sessionRowBytes(r)
	if len(part.rows) == 0 {
		delete(s.parts, k)
		freed += partBytes(k, part)
	}
	return -freed, nil
}

func partBytes(k string, part *sessionPart) int64 {
	n := int64(len(k)) + 64
	for key, vals := range part.keys {
		n += int64(len(key)) + rowBytes(vals)
	}
	return n
}

func sessionRowBytes(r *sessionRow) int64 { return rowBytes(r.inputs) + 48 }

// fire emits and frees the sessions that end at or before wm, their rows
// aggregated by bounds and keys, in order of their end, then start.
func (s *SessionAggregate) fire(wm time.Time) error {
	if err := s.unspill(wm); err != nil {
		return err
	}
	limit := wm.UnixMicro()
	type group struct {
		start, end int64
		key        string
	}
	type groupRows struct {
		keys []any
		accs []accumulator
	}
	out := map[group]*groupRows{}
	var freed int64
	for k, part := range s.parts {
		first := slices.MinFunc(part.rows, func(a, b *sessionRow) int { return cmp.Compare(a.t, b.t) })
		if first.t+s.gap > limit {
			continue // its first session is open, and so are the others
		}
		slices.SortFunc(part.rows, func(a, b *sessionRow) int { return cmp.Compare(a.t, b.t) })
		i := 0
		for i < len(part.rows) {
			j := i + 1
			for j < len(part.rows) && part.rows[j].t <= part.rows[j-1].t+s.gap {
				j++
			}
			start, end := part.rows[i].t, part.rows[j-1].t+s.gap
			if end > limit {
				break // the later sessions end later
			}
			for _, r := range part.rows[i:j] {
				g := group{start, end, r.key}
				rows := out[g]
				if rows == nil {
					rows = &groupRows{keys: part.keys[r.key], accs: make([]accumulator, len(s.aggs))}
					for a, spec := range s.aggs {
						rows.accs[a], _ = newAccumulator(spec) // checked by init
					}
					out[g] = rows
				}
				for a, v := range r.inputs {
					if _, skip := v.(noInput); skip {
						continue
					}
					for range r.n {
						rows.accs[a].add(v, 1)
					}
				}
				freed += sessionRowBytes(r)
			}
			i = j
		}
		part.rows = slices.Delete(part.rows, 0, i)
		if len(part.rows) == 0 {
			delete(s.parts, k)
			freed += partBytes(k, part)
		} else if i > 0 {
			freed += dropUnusedKeys(part)
		}
	}
	groups := slices.Collect(maps.Keys(out))
	slices.SortFunc(groups, func(a, b group) int {
		return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.start, b.start), cmp.Compare(a.key, b.key))
	})
	for _, g := range groups {
		rows := out[g]
		row := append(make([]any, 2, 2+len(rows.keys)+len(rows.accs)), rows.keys...)
		row[0], row[1] = toUnit(g.start, s.unit), toUnit(g.end, s.unit)
		for _, acc := range rows.accs {
			v, err := acc.result()
			if err != nil {
				return err
			}
			row = append(row, v)
		}
		s.q.add(kindInsert, row)
	}
	s.q.seal()
	s.held -= freed
	s.budget.add(-freed)
	return nil
}

// stateBytes is what a partition and its rows account.
func stateBytes(k string, part *sessionPart) int64 {
	n := partBytes(k, part)
	for _, r := range part.rows {
		n += sessionRowBytes(r)
	}
	return n
}

// spilledBytes is what the memory of a spilled partition accounts.
func spilledBytes(k string) int64 { return int64(len(k)) + 48 }

// firstEnd is the end of part's first session.
func (s *SessionAggregate) firstEnd(part *sessionPart) int64 {
	slices.SortFunc(part.rows, func(a, b *sessionRow) int { return cmp.Compare(a.t, b.t) })
	i := 1
	for i < len(part.rows) && part.rows[i].t <= part.rows[i-1].t+s.gap {
		i++
	}
	return part.rows[i-1].t + s.gap
}

// evict moves partitions to disk until half the budget is free. It runs
// after fire: every partition's first session ends after the watermark,
// above the keys fire ended.
func (s *SessionAggregate) evict() error {
	return evictMap(s.parts, s.ec, s.budget, &s.store, &s.held, func(k string, part *sessionPart) (stateEntry, int64, bool) {
		end := s.firstEnd(part)
		if end <= s.wm.UnixMicro() {
			return stateEntry{}, 0, false // a retraction split it since the last fire: it fires at the next marker
		}
		return s.spilled.entry(k, end, s.encode(part)), stateBytes(k, part) - spilledBytes(k), true
	})
}

// encode writes a partition's keys and rows for the spill store.
func (s *SessionAggregate) encode(part *sessionPart) []byte {
	b := binary.AppendUvarint(nil, uint64(len(part.keys)))
	for key, vals := range part.keys {
		b = binary.AppendUvarint(b, uint64(len(key)))
		b = appendRow(append(b, key...), vals)
	}
	b = binary.AppendUvarint(b, uint64(len(part.rows)))
	for _, r := range part.rows {
		b = binary.AppendVarint(b, r.t)
		b = binary.AppendUvarint(b, uint64(len(r.key)))
		b = append(b, r.key...)
		for _, v := range r.inputs {
			switch v.(type) {
			case noInput:
				b = append(b, 0)
			case nil:
				b = append(b, 1) // count(*)'s
			default:
				b = appendOrdered(append(b, 2), v, false, true)
			}
		}
		b = binary.AppendVarint(b, r.n)
	}
	return b
}

func (s *SessionAggregate) decode(b []byte) (*sessionPart, error) {
	str := func() (string, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return "", errCorruptState
		}
		v := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return v, nil
	}
	part := &sessionPart{keys: map[string][]any{}}
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errCorruptState
	}
	b = b[k:]
	for range n {
		key, err := str()
		if err != nil {
			return nil, err
		}
		if part.keys[key], b, err = decodeRow(b, s.keyDec); err != nil {
			return nil, err
		}
	}
	if n, k = binary.Uvarint(b); k <= 0 {
		return nil, errCorruptState
	}
	b = b[k:]
	for range n {
		r := &sessionRow{inputs: make([]any, len(s.inputDec))}
		if r.t, k = binary.Varint(b); k <= 0 {
			return nil, errCorruptState
		}
		b = b[k:]
		var err error
		if r.key, err = str(); err != nil {
			return nil, err
		}
		for j, d := range s.inputDec {
			if len(b) == 0 {
				return nil, errCorruptState
			}
			flag := b[0]
			b = b[1:]
			switch {
			case flag == 0:
				r.inputs[j] = noInput{}
			case flag == 2 && d != nil:
				if r.inputs[j], b, err = d(b, false); err != nil {
					return nil, err
				}
			case flag != 1:
				return nil, errCorruptState
			}
		}
		if r.n, k = binary.Varint(b); k <= 0 {
			return nil, errCorruptState
		}
		b = b[k:]
		part.rows = append(part.rows, r)
	}
	return part, nil
}

// load reads spilled partition k back (nil if it is not on disk).
func (s *SessionAggregate) load(k string) (*sessionPart, error) {
	b, ok, err := s.spilled.take(s.store, k)
	if !ok || err != nil {
		return nil, err
	}
	s.held -= spilledBytes(k)
	s.budget.add(-spilledBytes(k))
	return s.decode(b)
}

// unspill brings back the spilled partitions whose first session ends at
// or before wm.
func (s *SessionAggregate) unspill(wm time.Time) error {
	var grow int64
	err := s.spilled.takeClosed(s.store, wm, func(k string, b []byte) error {
		part, err := s.decode(b)
		if err != nil {
			return err
		}
		s.parts[k] = part
		grow += stateBytes(k, part) - spilledBytes(k)
		return nil
	})
	s.held += grow
	s.budget.add(grow)
	return err
}

// Close frees the state, spilled included.
func (s *SessionAggregate) Close() error {
	if s.store != nil {
		s.store.close()
	}
	return s.firing.Close()
}

// dropUnusedKeys forgets the keys of part no row has any more and
// returns their bytes.
func dropUnusedKeys(part *sessionPart) int64 {
	used := map[string]bool{}
	for _, r := range part.rows {
		used[r.key] = true
	}
	var freed int64
	for key, vals := range part.keys {
		if !used[key] {
			delete(part.keys, key)
			freed += int64(len(key)) + rowBytes(vals)
		}
	}
	return freed
}

// SaveState saves the watermark, the late rows and every partition's rows
// of open sessions, in memory and spilled, each keyed as evict keys it.
func (s *SessionAggregate) SaveState(w *StateWriter) error {
	s.firing.save(w)
	for k, part := range s.parts {
		w.Entry(windowStateKey([2]int64{0, s.firstEnd(part)}, k), s.encode(part))
	}
	err := w.spilled(s.store, func(key string) bool { return s.parts[key[16:]] != nil })
	w.EndEntries()
	return err
}

// RestoreState loads the saved partitions into memory, spilling past the
// budget.
func (s *SessionAggregate) RestoreState(r *StateReader) error {
	if err := s.firing.restore(r); err != nil {
		return err
	}
	err := r.entriesWithin(s.budget, &s.held, s.evict, func(key string, v []byte) (int64, error) {
		if len(key) < 16 {
			return 0, errCorruptCheckpoint
		}
		part, err := s.decode(v)
		if err != nil {
			return 0, err
		}
		if len(part.rows) == 0 {
			return 0, errCorruptCheckpoint // a partition without rows is never held
		}
		k := key[16:]
		s.parts[k] = part
		return stateBytes(k, part), nil
	})
	if err != nil {
		return err
	}
	return r.end()
}
