package plan

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/tablestore"
)

// Partitioning is how a batch query splits into parts computed
// independently (a Flight endpoint each) whose rows, together, are the
// query's rows as a multiset: every part reads its own stripe of the
// splits of one scan, the partitioned scan, and all of every other scan.
// That holds when each output row depends on one row of the partitioned
// scan and on whole other inputs: filters and projections over it, and
// the side of hash and nested-loop joins whose rows they keep or drop one
// by one (joinSplitScan), the other side read whole by each part. Orders, limits, aggregations, windows, set
// operations and right or full joins need all rows in one place, so their
// queries stay one part. Parts agree only when every scan reads the same
// snapshot in each of them: the caller binds them all at pinned snapshots.
type Partitioning struct {
	q     *Query
	scan  *TableScan
	parts int
}

// Partitioning returns how q splits into parts, or nil and why it cannot
// (for EXPLAIN).
func (q *Query) Partitioning() (*Partitioning, string) {
	if q.batch == nil {
		return nil, "a streaming query does not end"
	}
	if why := unpinnable(q.batch, map[PhysicalNode]bool{}); why != "" {
		return nil, why
	}
	scan, why := splitScan(q.batch)
	if scan == nil {
		return nil, why
	}
	return &Partitioning{q: q, scan: scan}, ""
}

// splitScan finds the scan whose splits the parts of n may divide, or
// says why there is none.
func splitScan(n PhysicalNode) (*TableScan, string) {
	switch x := n.(type) {
	case *TableScan:
		return x, ""
	case *Gather:
		return splitScan(x.Input)
	case *PlainOp:
		switch x.logical.(type) {
		case *FilterNode, *ProjectNode:
			return splitScan(x.Inputs[0])
		case *SortNode:
			return nil, "ORDER BY: the result is ordered"
		}
	case *HashJoin:
		return joinSplitScan(x.Join.Kind, x.Left, x.Right)
	case *NestedLoopJoin:
		return joinSplitScan(x.Join.Kind, x.Left, x.Right)
	case *TopN:
		return nil, "ORDER BY: the result is ordered"
	}
	return nil, strings.Fields(physicalLine(n))[0] + " needs all of its input in one place"
}

// joinSplitScan finds the scan the parts of a join may divide: on the
// side whose rows the join outputs one by one, each with what the whole
// other side gives (the left of inner, left, semi and anti joins, the
// right of inner and right joins), the other side read whole by each part.
func joinSplitScan(k JoinKind, left, right PhysicalNode) (*TableScan, string) {
	var why string
	switch k {
	case InnerJoin, LeftJoin, SemiJoin, AntiJoin, AntiNullAwareJoin:
		var scan *TableScan
		if scan, why = splitScan(left); scan != nil || k != InnerJoin {
			return scan, why
		}
		fallthrough
	case RightJoin:
		if scan, whyRight := splitScan(right); scan != nil || why == "" {
			return scan, whyRight
		}
		return nil, why
	}
	return nil, fmt.Sprintf("a %s join needs every row of both sides", k)
}

// unpinnable says why some input of n cannot be read at a pinned
// snapshot by every part ("" when all can): change streams, tags, reads
// by key through the lookup index (the latest snapshot), and constant
// rows, which information_schema lists when binding. Each spool body is
// looked at once (seen): CTEs reading CTEs twice make 2^n paths to one.
func unpinnable(n PhysicalNode, seen map[PhysicalNode]bool) string {
	switch x := n.(type) {
	case *TableScan:
		if x.Scan.Stream != nil {
			return "a change stream does not end"
		}
		if x.Scan.Read != ReadRows {
			return "t$ro and t$audit_log read their splits apart from the table's"
		}
		if x.Scan.Tag != "" {
			return "a tag's snapshot is read by its name" // and may be expired as a snapshot
		}
	case *LookupScan, *LookupJoin:
		return "reads by key use the lookup index at the latest snapshot"
	case *SpoolScan:
		if seen[x.Body] {
			return ""
		}
		seen[x.Body] = true
		return unpinnable(x.Body, seen)
	case *PlainOp:
		if _, ok := x.logical.(*ValuesNode); ok {
			return "constant rows are listed when the query is bound"
		}
	}
	for _, c := range n.Children() {
		if why := unpinnable(c, seen); why != "" {
			return why
		}
	}
	return ""
}

// Table is the partitioned scan's table.
func (p *Partitioning) Table() *tablestore.Table { return p.scan.Scan.Table }

// Digest identifies the physical plan: parts planned again must compute
// the plan the partitioning was chosen for (a view redefined since would
// not).
func (p *Partitioning) Digest() []byte {
	d := sha256.Sum256([]byte(p.q.Explain()))
	return d[:16]
}

// ScanSize is what the partitioned scan reads, for choosing the number of
// parts: its splits, the stored bytes of its files (the table's bytes
// scaled by the share of files it selects), and its rows when they are
// exactly the query's rows (-1 otherwise: a filter, a join, or a
// primary-key table whose files hold versions of rows). Every scan of the
// plan is opened at its snapshot: one whose snapshot has other columns
// than the plan reads (a column added since the table's last commit:
// binding takes the current schema) cannot be pinned, and why says so.
func (p *Partitioning) ScanSize(ctx context.Context) (splits int, bytes, rows int64, why string, err error) {
	var scans []*TableScan
	walkScans(p.q.batch, &scans, map[PhysicalNode]bool{})
	for _, ts := range scans {
		n := ts.Scan
		spec, err := scanSpec(n, nil)
		if err != nil {
			return 0, 0, 0, "", err
		}
		s, err := n.Table.NewScan(ctx, spec)
		if err != nil {
			return 0, 0, 0, fmt.Sprintf("%s cannot be read at snapshot %d: %v", n.Table.Ident(), n.Snapshot, err), nil
		}
		same := s.Schema().NumFields() == len(n.Cols)
		for i, f := range s.Schema().Fields() {
			same = same && f.Name == n.Names[i] && arrow.TypeEqual(f.Type, n.Cols[i].Type)
		}
		st := s.Stats()
		if ts == p.scan {
			splits = len(s.Splits())
		}
		s.Close()
		if !same {
			return 0, 0, 0, fmt.Sprintf("%s changed its columns after snapshot %d", n.Table.Ident(), n.Snapshot), nil
		}
		if ts != p.scan {
			continue
		}
		tstats, err := n.Table.Stats(ctx, st.SnapshotID)
		if err != nil {
			return 0, 0, 0, "", err
		}
		if st.FilesTotal > 0 {
			bytes = tstats.Bytes * int64(st.FilesSelected) / int64(st.FilesTotal)
		}
		rows = -1
		if len(n.Table.PrimaryKey()) == 0 && n.Pushed == nil && n.Filter == nil && !n.Table.Uncommitted() && onlyProjections(p.q.batch) {
			rows = tstats.Rows
		}
	}
	return splits, bytes, rows, "", nil
}

// walkScans appends the table scans of n to scans, those of each spool
// body once (seen).
func walkScans(n PhysicalNode, scans *[]*TableScan, seen map[PhysicalNode]bool) {
	switch x := n.(type) {
	case *TableScan:
		*scans = append(*scans, x)
	case *SpoolScan:
		if !seen[x.Body] {
			seen[x.Body] = true
			walkScans(x.Body, scans, seen)
		}
	}
	for _, c := range n.Children() {
		walkScans(c, scans, seen)
	}
}

// onlyProjections reports whether n is projections (and gathers) over a
// scan: its rows are the scan's.
func onlyProjections(n PhysicalNode) bool {
	switch x := n.(type) {
	case *TableScan:
		return true
	case *Gather:
		return onlyProjections(x.Input)
	case *PlainOp:
		if _, ok := x.logical.(*ProjectNode); ok {
			return onlyProjections(x.Inputs[0])
		}
	}
	return false
}

// Split sets the number of parts.
func (p *Partitioning) Split(parts int) *Partitioning {
	return &Partitioning{q: p.q, scan: p.scan, parts: parts}
}

// Describe renders the partitioning for EXPLAIN.
func (p *Partitioning) Describe() string {
	return fmt.Sprintf("%d parts, part i reading splits i, i+%d, ... of %s", p.parts, p.parts, p.scan.Scan.Label)
}

// Build creates the operators of part (0 <= part < the number of parts)
// for one execution, as Query.Build does for the whole query.
func (p *Partitioning) Build(ec *exec.Context, params arrow.RecordBatch, part int) (exec.Operator, error) {
	if p.parts < 1 || part < 0 || part >= p.parts {
		return nil, fmt.Errorf("%w: part %d of %d", errInternal, part, p.parts)
	}
	if err := p.q.checkParams(params); err != nil {
		return nil, err
	}
	b := &builder{ec: ec, params: params, bucket: -1, spools: newSpoolSet(), ranges: &rangeSet{}, part: p, partIndex: part}
	return b.build(p.q.batch)
}

// partSplits keeps the splits of part: every parts-th, from the part-th.
// Splits come in the order of the snapshot's manifests, the same in every
// part (or gathered stripe) that reads that snapshot.
func partSplits(splits []tablestore.Split, part, parts int) []tablestore.Split {
	var mine []tablestore.Split
	for i := part; i < len(splits); i += parts {
		mine = append(mine, splits[i])
	}
	return mine
}
