package stream

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
)

// SessionAggregate is a SESSION window aggregation (GROUP BY window_start,
// window_end and the TVF's PARTITION BY keys): per key, rows ordered by
// event time are in one session while each is at most Gap after the one
// before; a session is [its first time, its last time + Gap). A session is
// emitted once, as +I rows, at the first marker whose watermark is at or
// past its end, and its rows are freed then.
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
	gap   int64 // microseconds
	parts map[string]*sessionPart
}

// sessionPart is the state of one key: its rows of open sessions.
type sessionPart struct {
	vals []any
	rows []*sessionRow // in no order
}

// sessionRow is n copies of an input row: its event time and the input
// of each aggregate (noInput where the aggregate skips the row).
type sessionRow struct {
	t      int64
	inputs []any
	n      int64
}

// noInput marks an aggregate input the aggregate skips (NULL, or its
// FILTER fails); nil is count(*)'s input.
type noInput struct{}

// NewSessionAggregate aggregates in by the sessions of rowtime (a
// timestamp over in's batches) per keys, sessions ending gap after their
// last row.
func NewSessionAggregate(ec *exec.Context, in Operator, gap time.Duration, rowtime exec.Expr, keys []exec.Expr, keyNames []string, aggs []AggSpec, budget *Budget) (*SessionAggregate, error) {
	if gap <= 0 {
		return nil, fmt.Errorf("%w: session gap %s is not positive", exec.ErrInvalid, gap)
	}
	s := &SessionAggregate{gap: gap.Microseconds(), parts: map[string]*sessionPart{}}
	if err := s.init(ec, in, "session", rowtime, keys, keyNames, aggs, budget); err != nil {
		return nil, err
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
	var grow int64
	for i, sign := range e.signs {
		if !e.valid[i] || !s.wm.IsZero() && e.times[i] <= s.wm.UnixMicro() {
			s.late++
			continue
		}
		k := string(s.enc.Key(i))
		part := s.parts[k]
		if part == nil {
			part = &sessionPart{vals: make([]any, len(e.keys))}
			for c, get := range s.keyGet {
				part.vals[c] = get(e.keys[c], i)
			}
			s.parts[k] = part
			grow += partBytes(k, part)
		}
		inputs := make([]any, len(s.aggs))
		for j := range s.aggs {
			v, ok := e.in.value(j, i)
			if !ok {
				v = noInput{}
			}
			inputs[j] = v
		}
		d, err := s.change(k, part, e.times[i], inputs, sign)
		if err != nil {
			return err
		}
		grow += d
	}
	s.held += grow
	return s.budget.grow(grow, "a session window aggregation")
}

// change adds or retracts one copy of a row of part (key k) and returns
// the bytes of state added.
func (s *SessionAggregate) change(k string, part *sessionPart, t int64, inputs []any, sign int8) (int64, error) {
	i := slices.IndexFunc(part.rows, func(r *sessionRow) bool { return r.t == t && sameRow(r.inputs, inputs) })
	if i < 0 {
		if sign < 0 {
			return 0, fmt.Errorf("%w: session aggregation input retracts a row it never added", exec.ErrInvalid)
		}
		r := &sessionRow{t: t, inputs: inputs, n: 1}
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

func partBytes(k string, part *sessionPart) int64 { return int64(len(k)) + rowBytes(part.vals) + 64 }

func sessionRowBytes(r *sessionRow) int64 { return rowBytes(r.inputs) + 48 }

// fire emits and frees the sessions that end at or before wm, in order of
// their end, then start.
func (s *SessionAggregate) fire(wm time.Time) error {
	limit := wm.UnixMicro()
	type closed struct {
		start, end int64
		row        []any
	}
	var out []closed
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
			row, err := s.aggregate(part, part.rows[i:j])
			if err != nil {
				return err
			}
			out = append(out, closed{start, end, row})
			for _, r := range part.rows[i:j] {
				freed += sessionRowBytes(r)
			}
			i = j
		}
		part.rows = slices.Delete(part.rows, 0, i)
		if len(part.rows) == 0 {
			delete(s.parts, k)
			freed += partBytes(k, part)
		}
	}
	slices.SortFunc(out, func(a, b closed) int { return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.start, b.start)) })
	for _, c := range out {
		c.row[0], c.row[1] = toUnit(c.start, s.unit), toUnit(c.end, s.unit)
		s.q.add(kindInsert, c.row)
	}
	s.q.seal()
	s.held -= freed
	return s.budget.grow(-freed, "a session window aggregation")
}

// aggregate computes the output row of a session of part's rows, its
// window bounds left for the caller.
func (s *SessionAggregate) aggregate(part *sessionPart, rows []*sessionRow) ([]any, error) {
	accs := make([]accumulator, len(s.aggs))
	for j, spec := range s.aggs {
		accs[j], _ = newAccumulator(spec) // checked by NewSessionAggregate
	}
	for _, r := range rows {
		for j, v := range r.inputs {
			if _, skip := v.(noInput); skip {
				continue
			}
			for range r.n {
				accs[j].add(v, 1)
			}
		}
	}
	row := append(make([]any, 2, 2+len(part.vals)+len(accs)), part.vals...)
	for _, acc := range accs {
		v, err := acc.result()
		if err != nil {
			return nil, err
		}
		row = append(row, v)
	}
	return row, nil
}
