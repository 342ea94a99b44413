package plan

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/stream"
	"github.com/flightd/flightd/tablestore"
)

// A continuous job is an INSERT whose source reads a stream: its sink
// applies the query's changelog by key (-U/-D delete the key, +I/+U
// upsert it), which is exact only when the sink's primary key is unique in
// the query's result at every step, so the binder checks it here.

// JobCatalog is a Catalog that runs continuous jobs (SHOW JOBS).
type JobCatalog interface {
	// JobRows describes every job with the columns of JobColumns.
	JobRows(ctx context.Context) ([][]string, error)
}

// JobFeedCatalog is a Catalog that runs continuous jobs whose edges the
// materialized tables' cycle check follows: a job writing a table feeds it
// from the tables the job streams.
type JobFeedCatalog interface {
	// JobFeed is the running continuous job writing table id and the
	// tables it streams; "" when none writes id.
	JobFeed(ctx context.Context, id tablestore.Ident) (job string, from []*tablestore.Table, err error)
}

// JobColumns are the columns of SHOW JOBS.
var JobColumns = []string{"job_id", "state", "sink", "sink_snapshot", "source_positions", "lag", "node", "error", "sql", "start", "start_positions", "source_rows"}

// StopJob stops a continuous job (STOP JOB 'id').
type StopJob struct{ ID string }

func (*StopJob) boundStmt() {}

func (b *binder) showJobs(s *sql.Show) Statement {
	jc, ok := b.cat.(JobCatalog)
	if !ok {
		b.notImplemented(s.Pos, "continuous jobs in this catalog")
	}
	rows, err := jc.JobRows(b.ctx)
	if err != nil {
		b.failWrap(s.Pos, err, "SHOW JOBS: %v", err)
	}
	if s.Like != "" {
		rows = slices.DeleteFunc(rows, func(r []string) bool { return !likeMatch(s.Like, r[0]) })
	}
	return b.stringValues(JobColumns, rows)
}

// checkJobSink refuses a streaming INSERT whose target cannot hold the
// query's changelog applied by key.
func (b *binder) checkJobSink(ins *Insert) {
	pos := *b.streamPos
	if ins.Overwrite {
		b.fail(pos, "INSERT OVERWRITE from a stream: a continuous job keeps its target up to date; use INSERT INTO")
	}
	t := ins.Table
	if why := jobSinkProblem(t.Ident(), t.PrimaryKey(), t.Options(), ins.Source); why != "" {
		b.fail(pos, "%s", why)
	}
}

// jobSinkProblem says why a table sink, with primary key pk and options
// opts, cannot hold the changelog of the streaming query src applied by
// key ("" when it can). src's columns are the sink's, by name.
func jobSinkProblem(sink tablestore.Ident, pk []string, opts map[string]string, src *Query) string {
	if len(pk) == 0 {
		return fmt.Sprintf("a continuous job (INSERT from a stream) writes a changelog by key: target %s needs a primary key", sink)
	}
	if e := opts["merge-engine"]; e != "" && e != "deduplicate" {
		return fmt.Sprintf("a continuous job replaces rows by key: target %s has merge-engine %s (use deduplicate)", sink, e)
	}
	for _, o := range []string{"sequence.field", "ignore-delete"} {
		if opts[o] != "" && opts[o] != "false" {
			return fmt.Sprintf("a continuous job applies its changes in order: target %s has %s", sink, o)
		}
	}
	for _, sc := range src.stream.sources {
		// A restart rebuilds the answer from the sources' content at the
		// checkpoint: the answer must be a function of that content.
		if st := sc.Stream.Start; st != tablestore.StreamLatestFull && st != tablestore.StreamFromSnapshotFull {
			return fmt.Sprintf("a continuous job keeps its target equal to the query's answer on its sources' snapshots: read %s with scan.mode latest-full or from-snapshot-full, not %s", sc.Label, st)
		}
		if sc.Stream.ConsumerID != "" {
			return fmt.Sprintf("a continuous job keeps its own positions (in its target's snapshots): %s needs no consumer-id", sc.Label)
		}
	}
	covered := map[ColumnID]bool{}
	for _, c := range src.root.Columns() {
		if slices.Contains(pk, c.Name) {
			covered[c.ID] = true
		}
	}
	for _, k := range uniqueKeys(src.root) {
		if !slices.ContainsFunc(k, func(id ColumnID) bool { return !covered[id] }) {
			return ""
		}
	}
	return fmt.Sprintf("the primary key (%s) of %s must contain a unique key of the query (its GROUP BY columns, or the primary keys of the streamed tables it keeps), so that its changes apply by key", strings.Join(pk, ", "), sink)
}

// uniqueKeys lists column sets of n no two rows share (at every step of
// its changelog, as the stream operators emit retractions first).
func uniqueKeys(n Node) [][]ColumnID {
	switch x := n.(type) {
	case *ScanNode:
		var k []ColumnID
		for _, name := range x.Table.PrimaryKey() {
			i := slices.Index(x.Names, name)
			if i < 0 {
				return nil
			}
			k = append(k, x.Cols[i].ID)
		}
		if k == nil {
			return nil
		}
		return [][]ColumnID{k}
	case *FilterNode:
		if w, ok := x.Input.(*WindowNode); ok && len(w.Funcs) == 1 && w.Funcs[0].Fn == "row_number" {
			return rankKeys(x, w)
		}
		return uniqueKeys(x.Input)
	case *WindowNode:
		return uniqueKeys(x.Input) // a window adds columns to the same rows
	case *ProjectNode:
		out := map[ColumnID]ColumnID{}
		for i, e := range x.Exprs {
			if r, ok := e.(*ColRef); ok {
				out[r.ID] = x.Cols[i].ID
			}
		}
		var keys [][]ColumnID
	next:
		for _, k := range uniqueKeys(x.Input) {
			var m []ColumnID
			for _, id := range k {
				o, ok := out[id]
				if !ok {
					continue next
				}
				m = append(m, o)
			}
			keys = append(keys, m)
		}
		return keys
	case *AggNode:
		if x.Sets != nil {
			return nil
		}
		k := []ColumnID{}
		for _, c := range x.GroupCols {
			k = append(k, c.ID)
		}
		return append([][]ColumnID{k}, fixedWindowKeys(x, k)...)
	case *JoinNode:
		l, r := uniqueKeys(x.Left), uniqueKeys(x.Right)
		switch x.Kind {
		case SemiJoin, AntiJoin:
			return l
		}
		var keys [][]ColumnID
		// A side whose every row matches at most one row of the other
		// (the join keys cover a unique key there) keeps its keys.
		if x.Kind == InnerJoin || x.Kind == LeftJoin {
			if coversKey(x.RightKeys, r) {
				keys = append(keys, l...)
			}
		}
		if x.Kind == InnerJoin || x.Kind == RightJoin {
			if coversKey(x.LeftKeys, l) {
				keys = append(keys, r...)
			}
		}
		for _, a := range l {
			for _, b := range r {
				keys = append(keys, append(slices.Clone(a), b...))
			}
		}
		return keys
	}
	return nil
}

// fixedWindowKeys are the keys of aggregation x, grouped by k, that leave
// out one bound of a TUMBLE or HOP window it groups by: the windows have
// one size, so the start fixes the end and the end the start (a query
// keeping window_start only, as Nexmark q8, is keyed by it). A CUMULATE
// window's start is shared by windows of several ends, and a SESSION's
// bounds both depend on its rows, so theirs are left as they are.
func fixedWindowKeys(x *AggNode, k []ColumnID) [][]ColumnID {
	var keys [][]ColumnID
	for i, s := range x.Groups {
		start := windowBound(x.Input, s)
		if start == nil || start.Fn != windowStartFn {
			continue
		}
		if kind := windowSpec(start).Kind; kind != stream.Tumble && kind != stream.Hop {
			continue
		}
		for j, e := range x.Groups {
			if end := windowBound(x.Input, e); end != nil && end.Fn == windowEndFn && sameWindows(start, end) {
				keys = append(keys, slices.Delete(slices.Clone(k), j, j+1), slices.Delete(slices.Clone(k), i, i+1))
			}
		}
	}
	return keys
}

// windowBound is the streaming window TVF call that computes e in n's
// output (followed through projections, filters and window functions,
// which keep their input's rows), or nil.
func windowBound(n Node, e Expr) *Call {
	r, ok := e.(*ColRef)
	if !ok {
		return windowCall(e)
	}
	switch x := n.(type) {
	case *ProjectNode:
		for i, c := range x.Cols {
			if c.ID == r.ID {
				if call := windowCall(x.Exprs[i]); call != nil {
					return call
				}
				if in, ok := x.Exprs[i].(*ColRef); ok {
					return windowBound(x.Input, in)
				}
				return nil
			}
		}
	case *FilterNode:
		return windowBound(x.Input, r)
	case *WindowNode:
		return windowBound(x.Input, r)
	}
	return nil
}

// rankKeys are the keys of a top-N (see stream.Rank): the partition and
// the row number, as it updates a number's row with -U/+U; the partition
// alone when it keeps one row. The input's keys are not: a row moving up
// holds two numbers between the +U of one and the -U of the other.
func rankKeys(f *FilterNode, w *WindowNode) [][]ColumnID {
	lo, hi := int64(1), int64(math.MaxInt64)
	for _, c := range conjuncts(f.Pred) {
		if l, h, ok := rankBound(c, w.Funcs[0].Col.ID); ok {
			lo, hi = max(lo, l), min(hi, h)
		}
	}
	part := []ColumnID{}
	for _, e := range w.PartitionBy {
		r, ok := e.(*ColRef)
		if !ok {
			return nil
		}
		part = append(part, r.ID)
	}
	keys := [][]ColumnID{append(slices.Clone(part), w.Funcs[0].Col.ID)}
	if lo == hi {
		keys = append(keys, part)
	}
	return keys
}

// coversKey reports whether the join key expressions include every column
// of one of keys.
func coversKey(exprs []Expr, keys [][]ColumnID) bool {
	have := map[ColumnID]bool{}
	for _, e := range exprs {
		if r, ok := e.(*ColRef); ok {
			have[r.ID] = true
		}
	}
	for _, k := range keys {
		if !slices.ContainsFunc(k, func(id ColumnID) bool { return !have[id] }) {
			return true
		}
	}
	return false
}

// Changes is one run of a streaming query for a consumer of its changelog
// other than a Flight stream (a continuous job).
type Changes struct {
	// Op's batches hold the row kind and then the result's columns, result
	// column i being column Perm[i] (the row kind is result column 0).
	Op   stream.Operator
	Perm []int
}

// StreamSources are the tables a streaming query streams, in the order of
// the entries of its stream.Pos.
func (q *Query) StreamSources() []*tablestore.Table {
	var out []*tablestore.Table
	if q.stream != nil {
		for _, s := range q.stream.sources {
			out = append(out, s.Table)
		}
	}
	return out
}

// Changes builds the incremental operators of a streaming query. from[i] >
// 0 starts source i with snapshot from[i] in full instead of its hint
// (a job's restart); from may be nil. Every operator is added to cp when
// it is not nil (restored from it when it was loaded).
func (q *Query) Changes(ec *exec.Context, from []int64, cp *stream.Checkpoints) (*Changes, error) {
	sp := q.stream
	if sp == nil {
		return nil, fmt.Errorf("%w: not a streaming query", errInternal)
	}
	if sp.limit != nil {
		return nil, fmt.Errorf("%w: LIMIT in a continuous job", ErrNotImplemented)
	}
	sb := &streamBuilder{sp: sp, ec: ec, budget: stream.NewQueryBudget(ec), from: from, cp: cp}
	root, err := sb.build(sp.root)
	if err != nil {
		return nil, err
	}
	if cp != nil {
		if err := cp.Restored(); err != nil {
			_ = root.Close()
			return nil, err
		}
	}
	return &Changes{Op: root, Perm: sp.perm}, nil
}
