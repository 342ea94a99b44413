package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
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
	if b.streamPos != nil {
		b.fail(mode.Pos, "a query can read only one table as a stream")
	}
	if !b.query {
		b.fail(mode.Pos, "a streaming scan (scan.mode) can only be queried: its changes never end")
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
	b.streamPos = &mode.Pos
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

// checkStream checks a bound streaming query can run as a stream
// (projections, filters and a limit over the one streaming scan) and makes
// its result carry the row kind.
func (b *binder) checkStream(root Node) {
	pos := *b.streamPos
	var scan *ScanNode
	filtered := map[ColumnID]bool{}
	var walk func(n Node)
	walk = func(n Node) {
		switch x := n.(type) {
		case *ProjectNode:
			walk(x.Input)
		case *FilterNode:
			maps.Copy(filtered, colsOf(x.Pred))
			walk(x.Input)
		case *LimitNode:
			walk(x.Input)
		case *ScanNode:
			if x.Stream == nil {
				b.fail(pos, "a streaming query reads only its streaming table, not %s", x.Label)
			}
			scan = x
		default:
			b.fail(pos, "a streaming query can only project, filter and limit the changes of its table: %s is not supported yet", nodeKind(n))
		}
	}
	walk(root)
	if scan.Filter != nil {
		maps.Copy(filtered, colsOf(scan.Filter))
	}
	b.checkStreamFilter(scan, filtered)
	kind := scan.Cols[slices.Index(scan.Names, tablestore.RowKindColumn)]
	// The topmost projection must pass the row kind on; without one the
	// scan's own output has it.
	for n := root; ; {
		switch x := n.(type) {
		case *LimitNode:
			n = x.Input
			continue
		case *ProjectNode:
			if slices.ContainsFunc(x.Exprs, func(e Expr) bool { r, ok := e.(*ColRef); return ok && r.ID == kind.ID }) {
				return
			}
			if !slices.ContainsFunc(x.Input.Columns(), func(c Column) bool { return c.ID == kind.ID }) {
				b.fail(pos, "the row kind of the stream is not visible to the select list")
			}
			x.Exprs = append([]Expr{colRef(kind)}, x.Exprs...)
			x.Cols = append([]Column{b.newCol(kind.Name, kind.Type, kind.Nullable)}, x.Cols...)
		}
		return
	}
}

// checkStreamFilter refuses filters on value columns of a key table whose
// changes are upserts without before-images (changelog-producer none or
// input): a row updated out of the filter would send nothing, and the
// consumer would keep the old row.
func (b *binder) checkStreamFilter(scan *ScanNode, filtered map[ColumnID]bool) {
	t := scan.Table
	pk := t.PrimaryKey()
	switch t.Options()["changelog-producer"] {
	case "lookup", "full-compaction":
		return
	}
	if len(pk) == 0 {
		return // append tables stream whole rows: +I, and -D of rows removed
	}
	for i, c := range scan.Cols {
		name := scan.Names[i]
		if filtered[c.ID] && name != tablestore.RowKindColumn && !slices.Contains(pk, name) {
			b.fail(*b.streamPos, "cannot filter the changes of %s on %s: without before-images (changelog-producer none or input) a row updated out of the filter would stay with the consumer; filter on the primary key, or set changelog-producer to lookup", t.Ident(), name)
		}
	}
}

// withoutGather removes parallelism: a stream is read in commit order by
// one reader.
func withoutGather(n Node) Node {
	if g, ok := n.(*GatherNode); ok {
		return withoutGather(g.Input)
	}
	for i, in := range n.Inputs() {
		setInput(n, i, withoutGather(in))
	}
	return n
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

// streamScan reads the changes of n.Table from n.Stream: the reader's
// columns (row kind first) rearranged to n's column order.
func (bd *builder) streamScan(n *ScanNode, schema *arrow.Schema) exec.Operator {
	spec := *n.Stream
	spec.Filter = n.Pushed
	spec.Columns = nil
	perm := make([]int, len(n.Names))
	for i, name := range n.Names {
		if name == tablestore.RowKindColumn {
			perm[i] = 0
			continue
		}
		spec.Columns = append(spec.Columns, name)
		perm[i] = len(spec.Columns)
	}
	if spec.Columns == nil {
		spec.Columns = []string{} // only the row kind
	}
	return exec.NewSource(bd.ec, schema, func(ctx context.Context) (exec.BatchSource, error) {
		r, err := n.Table.NewChangeReader(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", n.Table.Ident(), err)
		}
		obs, _ := ctx.Value(observerKey{}).(StreamObserver)
		return &changeSource{r: r, obs: obs, schema: schema, perm: perm}, nil
	})
}

// changeSource adapts a ChangeReader to an operator source: progress
// markers go to the observer, batches on.
type changeSource struct {
	r      *tablestore.ChangeReader
	obs    StreamObserver
	schema *arrow.Schema
	perm   []int
	cur    arrow.RecordBatch
}

func (s *changeSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	for {
		ch, err := s.r.Next(ctx)
		if err != nil {
			return nil, err
		}
		if ch.Batch == nil {
			if s.obs != nil {
				if ch.Image != tablestore.NoImage {
					err = s.obs.Image(ch.Snapshot, ch.Image == tablestore.ImageStart)
				} else {
					err = s.obs.CaughtUp(ch.Snapshot)
				}
				if err != nil {
					return nil, err
				}
			}
			continue
		}
		if ch.Batch.NumRows() == 0 {
			continue
		}
		if s.obs != nil {
			s.obs.Rows(ch.Snapshot, ch.Image == tablestore.ImageRows)
		}
		cols := make([]arrow.Array, len(s.perm))
		for i, p := range s.perm {
			cols[i] = ch.Batch.Column(p)
		}
		s.cur = array.NewRecordBatch(s.schema, cols, ch.Batch.NumRows())
		return s.cur, nil
	}
}

func (s *changeSource) Close() error {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	err := s.r.Close()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}
