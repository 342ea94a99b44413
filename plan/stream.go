package plan

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Streaming queries: a table read with a 'scan.mode' hint yields its
// changelog (tablestore.ChangeReader) instead of one snapshot, and the
// query never ends on its own. Its rows carry the row kind in the
// tablestore.RowKindColumn column, which the result always includes.

// DefaultHeartbeat is how often an idle streaming query reports progress.
const DefaultHeartbeat = 5 * time.Second

// StreamObserver follows a streaming query's progress. Calls happen on the
// goroutine that pulls the query's batches, in order with them.
type StreamObserver interface {
	// Rows: the next batch holds changes of snapshot, or with image rows
	// of its content (tablestore.ImageRows).
	Rows(snapshot int64, image bool)
	// Image: the full read of snapshot begins (start) or is complete
	// (tablestore.ImageStart, ImageEnd).
	Image(snapshot int64, start bool) error
	// CaughtUp: every change up to snapshot has been returned; called when
	// the stream catches up and then at each heartbeat while it waits.
	CaughtUp(snapshot int64) error
}

type observerKey struct{}

// WithStreamObserver returns a context whose streaming scans report to o.
func WithStreamObserver(ctx context.Context, o StreamObserver) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// Streaming reports whether the query reads a change stream.
func (q *Query) Streaming() bool { return q.streaming }

var streamModes = map[string]tablestore.StreamStart{
	"latest":             tablestore.StreamLatest,
	"latest-full":        tablestore.StreamLatestFull,
	"full":               tablestore.StreamLatestFull, // Paimon's deprecated alias
	"from-snapshot":      tablestore.StreamFromSnapshot,
	"from-snapshot-full": tablestore.StreamFromSnapshotFull,
	"from-timestamp":     tablestore.StreamFromTimestamp,
}

// streamHint turns the options of a table hint into a stream spec; nil when
// the hint asks for no stream (no scan.mode).
func (b *binder) streamHint(t *tablestore.Table, opts []*sql.Property) *tablestore.StreamSpec {
	var mode *sql.Property
	for _, o := range opts {
		if o.Key == "scan.mode" {
			mode = o
		}
	}
	if mode == nil {
		return nil
	}
	spec := &tablestore.StreamSpec{Heartbeat: DefaultHeartbeat}
	var snapPos, tsPos *sql.Property
	for _, o := range opts {
		switch o.Key {
		case "scan.mode":
		case "scan.snapshot-id", "scan.tag-name":
			if snapPos != nil {
				b.fail(o.Pos, "%s does not go with %s", o.Key, snapPos.Key)
			}
			spec.SnapshotID = b.snapshotOption(t, o)
			snapPos = o
			if o.Key == "scan.tag-name" {
				spec.Tag = o.Value
			}
		case "scan.timestamp-millis":
			spec.Timestamp = time.UnixMilli(b.positiveInt(o))
			tsPos = o
		case "scan.timestamp":
			ts, err := time.ParseInLocation("2006-01-02 15:04:05", strings.TrimSpace(o.Value), time.UTC)
			if err != nil {
				b.fail(o.Pos, "scan.timestamp must look like '2024-01-31 12:00:00' (UTC), got %q", o.Value)
			}
			spec.Timestamp, tsPos = ts, o
		case "scan.bounded.snapshot-id":
			spec.EndSnapshot = b.positiveInt(o)
		case "consumer-id":
			if strings.TrimSpace(o.Value) == "" {
				b.fail(o.Pos, "consumer-id must not be empty")
			}
			spec.ConsumerID = o.Value
		case "continuous.discovery-interval":
			spec.Poll = b.duration(o)
		case "stream.heartbeat-interval":
			spec.Heartbeat = b.duration(o)
		default:
			b.fail(o.Pos, "table option %q is not supported with scan.mode (supported: scan.snapshot-id, scan.tag-name, scan.timestamp-millis, scan.timestamp, scan.bounded.snapshot-id, consumer-id, continuous.discovery-interval, stream.heartbeat-interval)", o.Key)
		}
	}
	m := strings.ToLower(strings.TrimSpace(mode.Value))
	if m == "default" {
		switch {
		case snapPos != nil:
			m = "from-snapshot"
		case tsPos != nil:
			m = "from-timestamp"
		default:
			m = "latest-full"
		}
	}
	start, ok := streamModes[m]
	if !ok {
		b.fail(mode.Pos, "unknown scan.mode %q (use latest, latest-full, from-snapshot, from-snapshot-full, from-timestamp or default)", mode.Value)
	}
	spec.Start = start
	needSnap := start == tablestore.StreamFromSnapshot || start == tablestore.StreamFromSnapshotFull
	switch {
	case needSnap && snapPos == nil:
		b.fail(mode.Pos, "scan.mode %s needs scan.snapshot-id or scan.tag-name", m)
	case !needSnap && snapPos != nil:
		b.fail(snapPos.Pos, "%s does not go with scan.mode %s", snapPos.Key, m)
	case start == tablestore.StreamFromTimestamp && tsPos == nil:
		b.fail(mode.Pos, "scan.mode from-timestamp needs scan.timestamp-millis or scan.timestamp")
	case start != tablestore.StreamFromTimestamp && tsPos != nil:
		b.fail(tsPos.Pos, "%s does not go with scan.mode %s", tsPos.Key, m)
	}
	if ok, why := t.ChangelogComplete(); !ok {
		b.fail(mode.Pos, "cannot stream %s: %s", t.Ident(), why)
	}
	if !b.query && !b.insertSource {
		b.fail(mode.Pos, "a streaming scan (scan.mode) can only be queried or inserted from (a continuous job): its changes never end")
	}
	latest, err := t.LatestSnapshotID(b.ctx)
	if err != nil {
		b.failWrap(mode.Pos, err, "stream %s: %v", t.Ident(), err)
	}
	limit := latest
	if start == tablestore.StreamFromSnapshot {
		limit++ // it may name the next snapshot, not yet committed
	}
	if needSnap && spec.SnapshotID > limit {
		b.failWrap(snapPos.Pos, tablestore.ErrSnapshotNotFound, "stream %s: snapshot %d does not exist (latest is %d)", t.Ident(), spec.SnapshotID, latest)
	}
	if b.streamPos == nil {
		b.streamPos = &mode.Pos
	}
	return spec
}

func (b *binder) positiveInt(o *sql.Property) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(o.Value), 10, 64)
	if err != nil || v < 1 {
		b.fail(o.Pos, "%s must be a positive integer, got %q", o.Key, o.Value)
	}
	return v
}

func (b *binder) duration(o *sql.Property) time.Duration {
	d, err := time.ParseDuration(strings.ReplaceAll(strings.TrimSpace(o.Value), " ", ""))
	if err != nil || d <= 0 {
		b.fail(o.Pos, "%s must be a positive duration such as 500ms or 10s, got %q", o.Key, o.Value)
	}
	return d
}

// passStreamKind makes the result of a streaming query whose select list
// sees the row kind carry it first (a query over state, where it does not,
// gets the row kind first from the streaming planner).
func (b *binder) passStreamKind(root Node) {
	for n := root; ; {
		switch x := n.(type) {
		case *LimitNode:
			n = x.Input
			continue
		case *ProjectNode:
			var kind *Column
			for _, c := range x.Input.Columns() {
				if c.Name == tablestore.RowKindColumn && b.isStreamKind(x.Input, c.ID) {
					kind = &c
					break
				}
			}
			if kind == nil || slices.ContainsFunc(x.Exprs, func(e Expr) bool { r, ok := e.(*ColRef); return ok && r.ID == kind.ID }) {
				return
			}
			x.Exprs = append([]Expr{colRef(*kind)}, x.Exprs...)
			x.Cols = append([]Column{b.newCol(kind.Name, kind.Type, kind.Nullable)}, x.Cols...)
		}
		return
	}
}

// isStreamKind reports whether column id of n is the row kind of a stream
// scan below n.
func (b *binder) isStreamKind(n Node, id ColumnID) bool {
	if s, ok := n.(*ScanNode); ok {
		return s.Stream != nil && s.Cols[slices.Index(s.Names, tablestore.RowKindColumn)].ID == id
	}
	if p, ok := n.(*ProjectNode); ok {
		// The projection of a table's computed columns passes it on.
		if i := slices.IndexFunc(p.Cols, func(c Column) bool { return c.ID == id }); i >= 0 {
			r, isRef := p.Exprs[i].(*ColRef)
			return isRef && b.isStreamKind(p.Input, r.ID)
		}
	}
	for _, in := range n.Inputs() {
		if b.isStreamKind(in, id) {
			return true
		}
	}
	return false
}

func nodeKind(n Node) string {
	switch n.(type) {
	case *JoinNode:
		return "a join"
	case *AggNode:
		return "aggregation"
	case *SortNode:
		return "ORDER BY"
	case *DistinctNode:
		return "DISTINCT"
	case *SetOpNode:
		return "a set operation"
	case *WindowNode:
		return "a window function"
	}
	return strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", n), "*plan."), "Node")
}
