package stream

import (
	"cmp"
	"context"
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
type SessionAggregate struct {
	windowAgg
	gap        int64 // microseconds
	partitions []exec.Expr
	partEnc    vectorized.KeyEncoder
	parts      map[string]*sessionPart
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
	s.gap, s.partitions, s.parts = gap.Microseconds(), partitions, map[string]*sessionPart{}
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
			part = &sessionPart{keys: map[string][]any{}}
			s.parts[k] = part
			grow += int64(len(k)) + 64
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
	return s.budget.grow(grow, "a session window aggregation")
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
	return s.budget.grow(-freed, "a session window aggregation")
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
