package engine

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Endpoints bounds how a session's queries split into parts that clients
// read independently (Flight endpoints).
type Endpoints struct {
	// Max is the most parts a query splits into; 1 or less: one part.
	Max int
	// MinBytes is the least stored data a part reads, so small results
	// stay one part.
	MinBytes int64
}

// SetEndpoints sets how the session's queries split into parts.
func (s *Session) SetEndpoints(e Endpoints) {
	s.mu.Lock()
	s.endpoints = e
	s.mu.Unlock()
}

func (s *Session) endpointLimits() Endpoints {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoints
}

// TablePin is a table read at one snapshot.
type TablePin struct {
	Table    Ident `json:"t"`
	Snapshot int64 `json:"s"`
	// Time is the snapshot's commit time (Unix ms): a table dropped and
	// created again numbers its snapshots from 1 again.
	Time int64 `json:"ms"`
}

// Partitions is a query split into parts (plan.Partitioning says which
// queries split and how): each part is prepared on its own with
// PreparePartition, in any order and concurrently, and reads every table
// at the snapshot in Pins, so the parts together give the query's rows at
// those snapshots however many commits come between.
type Partitions struct {
	Parts int
	Pins  []TablePin
	// Plan identifies the physical plan the parts compute.
	Plan []byte
	// Expires is when the parts' tickets expire: this process keeps the
	// pinned snapshots from expiring until then (not sent in tickets).
	Expires time.Time `json:"-"`
	// Rows is the number of rows of the result when known exactly (a
	// projection of an append table), else -1.
	Rows int64
}

// Partition splits a query statement into parts within the session's
// Endpoints, with every table pinned at its latest snapshot; nil when the
// query stays one part (an ordered result, an aggregation, little data:
// EXPLAIN says why). The parts are redeemable for lifetime: the pinned
// snapshots do not expire in this process before (another node's expiry
// does not know of them).
func (st *Statement) Partition(ctx context.Context, lifetime time.Duration) (_ *Partitions, err error) {
	defer recoverInternal(&err)
	if _, ok := st.bound.(*plan.Query); !ok {
		return nil, nil // EXPLAIN, SHOW: a few rows
	}
	p, _, err := st.partition(ctx, st.ast)
	if p == nil || err != nil {
		return nil, err
	}
	p.Expires = time.UnixMilli(time.Now().Add(lifetime).UnixMilli())
	for _, pin := range p.Pins {
		t, err := st.s.e.store.Table(ctx, pin.Table)
		if err != nil {
			return nil, err
		}
		if err := t.HoldUntil(pin.Snapshot, p.Expires); err != nil {
			return nil, fmt.Errorf("snapshot %d of %s expired while the query was planned: %w", pin.Snapshot, pin.Table, err)
		}
	}
	return p, nil
}

// partition is Partition of query ast, and why the query stays one part.
func (st *Statement) partition(ctx context.Context, ast sql.Statement) (*Partitions, string, error) {
	lim := st.s.endpointLimits()
	switch {
	case lim.Max <= 1:
		return nil, "one asked for", nil
	case st.tx != nil:
		return nil, "inside a transaction, which has its own snapshots", nil
	case st.Streaming():
		return nil, "a streaming query does not end", nil
	}
	if q, ok := st.bound.(*plan.Query); ok && q.Params() != nil && q.Params().NumFields() > 0 {
		return nil, "the query has parameters", nil
	}
	pins := map[tablestore.Ident]int64{}
	q, err := st.s.bindPinned(ctx, ast, pins)
	if err != nil {
		// It bound unpinned: time travel and tags choose their own
		// snapshots, and do not go with a pinned one.
		return nil, fmt.Sprintf("not at pinned snapshots: %v", err), nil
	}
	pt, why := q.Partitioning()
	if pt == nil {
		return nil, why, nil
	}
	p := &Partitions{Plan: pt.Digest()}
	for id, snap := range pins {
		if snap == 0 {
			return nil, fmt.Sprintf("%s has no snapshot yet", id), nil
		}
		t, err := st.s.e.store.Table(ctx, id)
		if err != nil {
			return nil, "", err
		}
		ms, err := t.SnapshotTime(ctx, snap)
		if err != nil {
			return nil, "", err
		}
		p.Pins = append(p.Pins, TablePin{Table: id, Snapshot: snap, Time: ms})
	}
	slices.SortFunc(p.Pins, func(a, b TablePin) int {
		return cmp.Or(cmp.Compare(a.Table.Database, b.Table.Database), cmp.Compare(a.Table.Table, b.Table.Table))
	})
	splits, size, rows, why, err := pt.ScanSize(ctx)
	if err != nil || why != "" {
		return nil, why, err
	}
	p.Parts, p.Rows = min(lim.Max, splits), rows
	if lim.MinBytes > 0 {
		p.Parts = int(min(int64(p.Parts), size/lim.MinBytes))
	}
	if p.Parts < 2 {
		return nil, fmt.Sprintf("%s has %d splits and %d stored bytes read (at least %d per part)", pt.Table().Ident(), splits, size, lim.MinBytes), nil
	}
	return p, pt.Split(p.Parts).Describe(), nil
}

// bindPinned binds query ast reading each table at its snapshot in pins,
// or at its latest, which it adds to pins.
func (s *Session) bindPinned(ctx context.Context, ast sql.Statement, pins map[tablestore.Ident]int64) (*plan.Query, error) {
	bound, err := s.bind(ctx, ast, &catalog{s: s, db: s.Database(), pins: pins})
	if err != nil {
		return nil, err
	}
	if err := s.allowStatement(bound); err != nil {
		return nil, err
	}
	q, ok := bound.(*plan.Query)
	if !ok {
		return nil, fmt.Errorf("a part of a result must be a query, not %T: %w", bound, ErrInvalid)
	}
	return q, nil
}

// PreparePartition prepares part (0 <= part < p.Parts) of query text,
// which Statement.Partition split into p: the query bound again at p's
// snapshots. It fails if a pinned snapshot has expired since (KindNotFound)
// or the query no longer plans as it did, its tables or views replaced
// (KindConflict): the parts would not add up to one result.
func (s *Session) PreparePartition(ctx context.Context, text string, p *Partitions, part int) (_ *Statement, err error) {
	defer recoverInternal(&err)
	if p.Parts < 2 || part < 0 || part >= p.Parts {
		return nil, fmt.Errorf("part %d of %d parts: %w", part, p.Parts, ErrInvalid)
	}
	ast, err := sql.ParseOne(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	pins := map[tablestore.Ident]int64{}
	for _, pin := range p.Pins {
		t, err := s.e.store.Table(ctx, pin.Table)
		if err != nil {
			return nil, err
		}
		ms, err := t.SnapshotTime(ctx, pin.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d of %s, which the query was planned on, is gone (expired): plan it again: %w", pin.Snapshot, pin.Table, err)
		}
		if ms != pin.Time {
			return nil, fmt.Errorf("%s was replaced since the query was planned: plan it again: %w", pin.Table, errPlanChanged)
		}
		pins[pin.Table] = pin.Snapshot
	}
	q, err := s.bindPinned(ctx, ast, pins)
	if err != nil {
		return nil, err
	}
	pt, _ := q.Partitioning()
	if len(pins) != len(p.Pins) || pt == nil || !bytes.Equal(pt.Digest(), p.Plan) {
		return nil, fmt.Errorf("the query plans differently than when it was split (a view or table redefined): plan it again: %w", errPlanChanged)
	}
	return &Statement{s: s, ast: ast, bound: q, part: pt.Split(p.Parts), partIndex: part}, nil
}

var errPlanChanged = NewError(KindConflict, "plan changed")

// endpointsLine is EXPLAIN's account of how the query splits into parts
// under the session's Endpoints ("" when the session asks for one).
func (st *Statement) endpointsLine(ctx context.Context, target sql.Statement) (string, error) {
	if st.s.endpointLimits().Max <= 1 {
		return "", nil
	}
	p, how, err := st.partition(ctx, target)
	if err != nil {
		return "", err
	}
	if p == nil {
		return "Endpoints: 1 (" + how + ")", nil
	}
	return fmt.Sprintf("Endpoints: %s, at snapshots %s", how, pinsString(p.Pins)), nil
}

func pinsString(pins []TablePin) string {
	var b bytes.Buffer
	for i, p := range pins {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s@%d", p.Table, p.Snapshot)
	}
	return b.String()
}
