package plan

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/lookup"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/stream"
	"github.com/flightd/flightd/tablestore"
)

// The streaming physical planner: a streaming query's logical plan (bound
// and optimized like any other) becomes a tree of incremental operators
// (package stream) instead of batch ones. Its nodes (sNode) are the
// physical choices; the logical nodes stay as they are.
//
// Every streaming batch carries the row kind as column 0 and then the
// node's columns (cols). Logical row kind columns (a stream scan's
// tablestore.RowKindColumn and projections of it) all compile to column 0.

// streamPlan is the physical plan of a streaming query.
type streamPlan struct {
	root    sNode
	schema  *arrow.Schema
	perm    []int // result column i is column perm[i] of root's batches
	limit   *LimitNode
	sources []*ScanNode
	kinds   map[ColumnID]bool
	clock   func() time.Time // of processing-time windows
}

// sNode is a node of a streaming physical plan.
type sNode interface {
	cols() []Column // the columns after the row kind
}

// sSource reads a stream scan; normalize turns its upserts into an exact
// changelog (table without before-images under a stateful operator or a
// filter on a value column).
type sSource struct {
	scan      *ScanNode
	idx       int
	normalize bool
	cs        []Column
	wm        *sourceWatermark // set when an event-time operator needs it
}

type sFilter struct {
	in   sNode
	pred Expr
}

type sProject struct {
	in    sNode
	exprs []Expr
	cs    []Column
}

type sAgg struct {
	in     sNode
	n      *AggNode
	having Expr
}

// sJoin is a regular join; cs are its columns without row kinds.
type sJoin struct {
	l, r sNode
	n    *JoinNode
	cs   []Column
}

func (s *sJoin) cols() []Column { return s.cs }

// sTemporal is a processing-time temporal join: its left side's changes
// looked up in scan's table as they arrive (lookupJoin gives keys and
// residual).
type sTemporal struct {
	l        sNode
	n        *JoinNode
	scan     *ScanNode
	keys     []Expr
	residual Expr
	cs       []Column
	cat      LookupCatalog
}

func (s *sTemporal) cols() []Column { return s.cs }

// sRank is a top-N (ROW_NUMBER() filtered to a range of numbers), a
// deduplication when it keeps number 1 only; number: the row number is
// read above it, the last of cs. windowEnd (0: none) makes it a window
// top-N: the column of in holding the window_end of the window
// aggregation it ranks.
type sRank struct {
	in        sNode
	w         *WindowNode
	fn        stream.RankFunc
	lo, hi    int64
	number    bool
	cs        []Column
	windowEnd ColumnID
	// insertOnly: in only inserts (insertOnlySources), relying on the
	// sources relies names; the top-N then keeps rows 1 to hi only.
	insertOnly bool
	relies     []string
}

func (s *sRank) cols() []Column { return s.cs }

// sUnion is UNION ALL.
type sUnion struct {
	l, r sNode
	cs   []Column
}

func (s *sUnion) cols() []Column   { return s.cs }
func (s *sSource) cols() []Column  { return s.cs }
func (s *sFilter) cols() []Column  { return s.in.cols() }
func (s *sProject) cols() []Column { return s.cs }
func (s *sAgg) cols() []Column {
	if s.n.GroupingID == nil {
		return s.n.Columns()
	}
	// stream.Aggregate keeps the grouping id as its last group.
	out := append(slices.Clone(s.n.GroupCols), *s.n.GroupingID)
	for _, a := range s.n.Aggs {
		out = append(out, a.Col)
	}
	return out
}

// streamPlanner builds a streamPlan, refusing what it cannot maintain.
type streamPlanner struct {
	b        *binder
	kinds    map[ColumnID]bool
	sources  []*sSource
	stateful bool
	what     string                // the stateful operator refusals name ("": an aggregation or join)
	filtered map[ColumnID]bool     // columns some filter reads
	reads    map[ColumnID]bool     // columns the query reads, but for top-N bounds
	unread   map[ColumnID]bool     // row numbers of top-Ns no one reads (not computed)
	passed   map[ColumnID]ColumnID // projection output -> the column it passes on
	// windows are the window columns of streaming window TVFs
	// (stream_window.go); windowAggs counts the TVFs window aggregations
	// and window joins consume.
	windows    map[ColumnID]*windowCol
	windowAggs int
	// rowtimes are the columns that hold a stream's WATERMARK column;
	// eventTime: an operator needs the sources' watermarks.
	rowtimes  map[ColumnID]bool
	eventTime bool
}

// planStream plans root, a bound and optimized streaming query.
func (b *binder) planStream(root Node) *streamPlan {
	p := &streamPlanner{b: b, kinds: map[ColumnID]bool{}, filtered: map[ColumnID]bool{}, passed: map[ColumnID]ColumnID{}, windows: map[ColumnID]*windowCol{}, rowtimes: map[ColumnID]bool{}}
	p.reads, p.unread = readColumns(root), map[ColumnID]bool{}
	sp := &streamPlan{kinds: p.kinds, clock: b.opts.ProcTime}
	if sp.clock == nil {
		sp.clock = time.Now
	}
	n := root
	if l, ok := n.(*LimitNode); ok && !isSortLimit(l) {
		sp.limit, n = l, l.Input
	}
	p.checkWatermarkCalls(n)
	sp.root = p.plan(n)
	if p.windowAggs != b.streamTVFs {
		// One row per window needs the window aggregation: a plain
		// projection would give one row per input row.
		p.refuse("a window TVF over a stream must be aggregated by its windows (GROUP BY window_start, window_end[, ...]), joined on them with another, or ranked per window (ROW_NUMBER() OVER (PARTITION BY window_start, window_end ...) <= N)")
	}
	if sp.limit != nil && p.stateful {
		p.refuse("LIMIT over %s: the first rows of its changelog are not a part of its result", p.statefulWhat())
	}
	for _, s := range p.sources {
		spec := s.scan.Stream
		full := spec.Start == tablestore.StreamLatestFull || spec.Start == tablestore.StreamFromSnapshotFull
		if p.stateful && (!full || spec.ConsumerID != "") {
			// State starts empty: without the table's content first, the
			// retraction of a row from before the start has nothing to
			// retract, and state is not kept for a consumer to resume.
			p.refuse("%s needs the content of %s first: use scan.mode latest-full or from-snapshot-full, without consumer-id", p.statefulWhat(), s.scan.Label)
		}
	}
	outOrigins := map[ColumnID]bool{}
	for _, c := range root.Columns() {
		outOrigins[p.origin(c.ID)] = true
	}
	for _, s := range p.sources {
		sp.sources = append(sp.sources, s.scan)
		// Without before-images the changes are upserts by key: exact only
		// for a consumer that sees the key and nothing filtered on values.
		s.normalize = !hasBeforeImages(s.scan.Table) && (p.stateful || p.filtersValues(s) || !p.keepsKey(s, outOrigins))
		if p.eventTime {
			s.wm = p.watermarkOf(s.scan)
		}
	}
	// The result: the root's columns, with the row kind first unless the
	// select list placed it.
	out := root.Columns()
	pos := map[ColumnID]int{}
	for i, c := range sp.root.cols() {
		pos[c.ID] = i + 1
	}
	var fields []arrow.Field
	if !slices.ContainsFunc(out, func(c Column) bool { return p.kinds[c.ID] }) {
		sp.perm = append(sp.perm, 0)
		fields = append(fields, arrow.Field{Name: tablestore.RowKindColumn, Type: arrow.BinaryTypes.String})
	}
	for _, c := range out {
		sp.perm = append(sp.perm, pos[c.ID]) // kinds are at 0
		fields = append(fields, arrow.Field{Name: c.Name, Type: c.Type, Nullable: c.Nullable})
	}
	sp.schema = arrow.NewSchema(fields, nil)
	return sp
}

// hasBeforeImages reports whether a table's changelog retracts rows with
// their exact values: append tables (+I, and -D of removed rows) and key
// tables with changelog-producer lookup or full-compaction.
func hasBeforeImages(t *tablestore.Table) bool {
	if len(t.PrimaryKey()) == 0 {
		return true
	}
	switch t.Options()["changelog-producer"] {
	case "lookup", "full-compaction":
		return true
	}
	return false
}

// filtersValues reports whether a filter reads a column of s other than
// its primary key: without before-images a row updated out of the filter
// would otherwise stay with the consumer.
func (p *streamPlanner) filtersValues(s *sSource) bool {
	pk := s.scan.Table.PrimaryKey()
	for i, c := range s.scan.Cols {
		if p.filtered[c.ID] && !p.kinds[c.ID] && !slices.Contains(pk, s.scan.Names[i]) {
			return true
		}
	}
	return false
}

// keepsKey reports whether the result shows every primary key column of s.
func (p *streamPlanner) keepsKey(s *sSource, out map[ColumnID]bool) bool {
	for _, k := range s.scan.Table.PrimaryKey() {
		i := slices.Index(s.scan.Names, k)
		if i < 0 || !out[s.scan.Cols[i].ID] {
			return false
		}
	}
	return true
}

// origin follows a column through projections that pass it on unchanged.
func (p *streamPlanner) origin(id ColumnID) ColumnID {
	for {
		o, ok := p.passed[id]
		if !ok {
			return id
		}
		id = o
	}
}

func (p *streamPlanner) refuse(format string, args ...any) {
	p.b.failWrap(*p.b.streamPos, ErrNotImplemented, "streaming query: "+format, args...)
}

func (p *streamPlanner) statefulWhat() string {
	if p.what != "" {
		return p.what
	}
	return "an aggregation or join"
}

// readColumns lists the columns the result of n depends on: its output,
// the inputs of the expressions that compute or filter it (of a
// projection, those of the columns needed) and every input column of
// DISTINCT and set operations, except the row number bounds of a top-N
// (whose operator applies them).
func readColumns(n Node) map[ColumnID]bool {
	need := idSet(n.Columns())
	var walk func(n Node)
	walk = func(n Node) {
		var exprs []Expr
		switch x := n.(type) {
		case *ProjectNode:
			for i, c := range x.Cols {
				if need[c.ID] {
					exprs = append(exprs, x.Exprs[i])
				}
			}
		case *FilterNode:
			exprs = []Expr{x.Pred}
			if under, w, _, ok := rankInput(x); ok && isRankWindow(w) {
				exprs = nil
				for _, c := range conjuncts(under.Pred) {
					if _, _, ok := rankBound(c, w.Funcs[0].Col.ID); !ok {
						exprs = append(exprs, c)
					}
				}
			}
		case *DistinctNode, *SetOpNode:
			// Every column tells rows apart.
			for _, in := range n.Inputs() {
				maps.Copy(need, idSet(in.Columns()))
			}
		default:
			exprs = nodeExprs(n)
		}
		for _, e := range exprs {
			maps.Copy(need, colsOf(e))
		}
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	walk(n)
	return need
}

// rankInput finds the window whose row number a filter may bound:
// directly below it, or below a projection (filters not pushed down). It
// returns the filter as it applies over the window (through the
// projection's definitions) and that projection, if any.
func rankInput(f *FilterNode) (*FilterNode, *WindowNode, *ProjectNode, bool) {
	if w, ok := f.Input.(*WindowNode); ok {
		return f, w, nil, true
	}
	pr, ok := f.Input.(*ProjectNode)
	if !ok {
		return nil, nil, nil, false
	}
	w, ok := pr.Input.(*WindowNode)
	if !ok {
		return nil, nil, nil, false
	}
	defs := map[ColumnID]Expr{}
	for i, c := range pr.Cols {
		defs[c.ID] = pr.Exprs[i]
	}
	return &FilterNode{Input: w, Pred: substitute(f.Pred, defs)}, w, pr, true
}

// rankBound reads a conjunct comparing the row number rn with an integer
// constant: the numbers it keeps, [lo, hi].
func rankBound(e Expr, rn ColumnID) (lo, hi int64, ok bool) {
	c, ok := e.(*Call)
	if !ok || len(c.Args) != 2 {
		return 0, 0, false
	}
	fn, l, r := c.Fn, c.Args[0], c.Args[1]
	if ref, isRef := r.(*ColRef); isRef && ref.ID == rn {
		flip := map[string]string{"equal": "equal", "less": "greater", "less_equal": "greater_equal", "greater": "less", "greater_equal": "less_equal"}
		fn, l, r = flip[fn], r, l
	}
	if ref, isRef := l.(*ColRef); !isRef || ref.ID != rn {
		return 0, 0, false
	}
	v, isConst := constInt64(r)
	if !isConst {
		return 0, 0, false
	}
	const inf = math.MaxInt64
	switch fn {
	case "equal":
		return v, v, true
	case "less":
		if v == math.MinInt64 {
			return inf, math.MinInt64, true // no number
		}
		return math.MinInt64, v - 1, true
	case "less_equal":
		return math.MinInt64, v, true
	case "greater":
		if v == inf {
			return inf, math.MinInt64, true // no number
		}
		return v + 1, inf, true
	case "greater_equal":
		return v, inf, true
	}
	return 0, 0, false
}

// readsKind reports whether e reads a row kind column.
func (p *streamPlanner) readsKind(e Expr) bool {
	for id := range colsOf(e) {
		if p.kinds[id] {
			return true
		}
	}
	return false
}

// checkKind refuses expressions over the row kind above state: what an
// input row's kind means there is not what the query would see.
func (p *streamPlanner) checkKind(es ...Expr) {
	for _, e := range es {
		if e != nil && p.stateful && p.readsKind(e) {
			p.refuse("the row kind can only be selected above an aggregation or join, not computed on (%s)", e)
		}
	}
}

func (p *streamPlanner) plan(n Node) sNode {
	switch x := n.(type) {
	case *ScanNode:
		if x.Stream == nil {
			p.refuse("%s is read as a snapshot: every table of a streaming query must be read as a stream (a scan.mode hint)", x.Label)
		}
		s := &sSource{scan: x, idx: len(p.sources)}
		for i, c := range x.Cols {
			if x.Names[i] == tablestore.RowKindColumn {
				p.kinds[c.ID] = true
			} else {
				s.cs = append(s.cs, c)
			}
		}
		p.sources = append(p.sources, s)
		p.markRowtime(x)
		if x.Filter == nil {
			return s
		}
		p.refuseWindow("a filter", x.Filter)
		maps.Copy(p.filtered, colsOf(x.Filter))
		return p.filter(s, x.Filter)
	case *FilterNode:
		if under, w, pr, ok := rankInput(x); ok && isRankWindow(w) {
			if pr == nil {
				return p.rank(x, w)
			}
			// The filter over the window, then the projection.
			above := *pr
			above.Input = under
			return p.plan(&above)
		}
		in := p.plan(x.Input)
		p.checkKind(x.Pred)
		p.refuseWindow("a filter", x.Pred)
		maps.Copy(p.filtered, colsOf(x.Pred))
		if a, ok := in.(*sAgg); ok && a.having == nil && watermarkCall(x.Pred) == nil {
			a.having = x.Pred
			return a
		}
		return p.filter(in, x.Pred)
	case *ProjectNode:
		in := p.plan(x.Input)
		pr := &sProject{in: in}
		for i, e := range x.Exprs {
			if r, ok := e.(*ColRef); ok && p.kinds[r.ID] {
				p.kinds[x.Cols[i].ID] = true // passes the row kind on
				continue
			}
			if p.planWindowProject(x, pr, i) {
				continue
			}
			if r, ok := e.(*ColRef); ok && p.unread[r.ID] {
				continue // a projection the optimizer did not prune
			}
			if r, ok := e.(*ColRef); ok && r.ID != x.Cols[i].ID { // a column passed on under its own ID is its origin
				p.passed[x.Cols[i].ID] = r.ID
				p.rowtimes[x.Cols[i].ID] = p.rowtimes[r.ID]
			}
			p.checkKind(e)
			pr.exprs = append(pr.exprs, e)
			pr.cs = append(pr.cs, x.Cols[i])
		}
		p.markRowtime(x)
		pr.in, pr.exprs = p.withWatermark(pr.in, pr.exprs)
		return pr
	case *AggNode:
		in := p.plan(x.Input)
		p.stateful = true
		if w := p.planWindowAgg(x, in); w != nil {
			return w
		}
		for _, a := range x.Aggs {
			p.refuseWindow("an aggregate", a.Args...)
			p.refuseWindow("an aggregate", a.Filter)
		}
		p.checkKind(x.Groups...)
		for _, a := range x.Aggs {
			p.checkKind(a.Args...)
			p.checkKind(a.Filter)
			if why := streamAggSupported(a); why != "" {
				p.refuse("%s: %s", aggString(a), why)
			}
		}
		return &sAgg{in: in, n: x}
	case *JoinNode:
		if x.Temporal && x.AsOf != nil {
			return p.planRowtimeTemporal(x)
		}
		if x.Temporal {
			return p.planTemporal(x)
		}
		l, r := p.plan(x.Left), p.plan(x.Right)
		p.stateful = true
		if x.Kind == AntiNullAwareJoin {
			p.refuse("NOT IN over a subquery (a null-aware anti join) is not supported yet; use NOT EXISTS")
		}
		p.checkKind(x.LeftKeys...)
		p.checkKind(x.RightKeys...)
		p.checkKind(x.Residual)
		for _, c := range x.Columns() {
			if p.windows[c.ID] != nil {
				return p.planWindowJoin(x, l, r)
			}
		}
		if ij := p.planIntervalJoin(x, l, r); ij != nil {
			return ij
		}
		j := &sJoin{l: l, r: r, n: x}
		for _, c := range x.Columns() {
			if !p.kinds[c.ID] {
				j.cs = append(j.cs, c)
			}
		}
		return j
	case *SetOpNode:
		if x.Kind != Union {
			if x.All {
				p.refuse("%s ALL is not supported yet: a changelog cannot repeat a row by a count (INTERSECT and EXCEPT without ALL are)", strings.ToUpper(x.Kind.String()))
			}
			return p.plan(p.countedSetOp(x))
		}
		l, r := p.plan(x.Left), p.plan(x.Right)
		lc, rc := x.Left.Columns(), x.Right.Columns()
		u := &sUnion{l: l, r: r}
		for i, c := range x.Cols {
			if p.windows[lc[i].ID] != nil || p.windows[rc[i].ID] != nil {
				p.refuse("a set operation over window columns of a streaming window TVF is not supported yet")
			}
			lk, rk := p.kinds[lc[i].ID], p.kinds[rc[i].ID]
			switch {
			case lk && rk:
				p.kinds[c.ID] = true
			case lk || rk:
				p.refuse("UNION of the row kind with another column: a row kind means a change, not a value")
			default:
				u.cs = append(u.cs, c)
			}
		}
		if x.All {
			return u
		}
		// UNION is UNION ALL then DISTINCT.
		p.stateful = true
		agg := &AggNode{}
		for _, c := range u.cs {
			agg.Groups = append(agg.Groups, colRef(c))
			agg.GroupCols = append(agg.GroupCols, c)
		}
		return &sAgg{in: u, n: agg}
	case *DistinctNode:
		// DISTINCT is a grouping by every column without aggregates.
		in := p.plan(x.Input)
		p.stateful = true
		agg := &AggNode{Input: x.Input}
		for _, c := range x.Input.Columns() {
			if p.windows[c.ID] != nil {
				p.refuse("DISTINCT over window columns of a streaming window TVF is not supported yet")
			}
			if !p.kinds[c.ID] {
				agg.Groups = append(agg.Groups, colRef(c))
				agg.GroupCols = append(agg.GroupCols, c)
			}
		}
		return &sAgg{in: in, n: agg}
	case *SortNode:
		p.refuse("ORDER BY: a changelog has no order; sort the applied result instead (ORDER BY with LIMIT is a top-N)")
	case *WindowNode:
		return p.planOver(x)
	case *LimitNode:
		if isSortLimit(x) {
			return p.sortLimit(x)
		}
		p.refuse("LIMIT without ORDER BY below the top of the query: which rows it keeps would change as rows come and go")
	case *CTEScanNode:
		p.refuse("a WITH query referenced more than once is not supported yet")
	case *Max1RowNode:
		if x.PerKeyCount == nil && oneRow(x.Input) {
			// Always exactly one row: the join above it (Flink's plan of a
			// scalar subquery) retracts and joins again what met the old
			// value when it changes.
			return p.plan(x.Input)
		}
		p.refuse("a scalar subquery is supported only as an aggregate without GROUP BY or HAVING and not correlated (a row that may be missing or repeated has no streaming form yet): join with the subquery instead")
	case *ValuesNode:
		p.refuse("VALUES is not supported yet: it is not a stream (read the rows from a table)")
	}
	p.refuse("%s is not supported yet", nodeKind(n))
	return nil
}

// oneRow reports whether n always has exactly one row: an aggregation
// without GROUP BY (nor grouping sets), under projections.
func oneRow(n Node) bool {
	switch x := n.(type) {
	case *ProjectNode:
		return oneRow(x.Input)
	case *AggNode:
		return len(x.Groups) == 0 && x.Sets == nil
	}
	return false
}

// countedSetOp rewrites INTERSECT or EXCEPT (without ALL) as the
// aggregation Flink maintains for them: the union of both sides, each row
// marked with its side, grouped by every column, keeping the groups with
// rows from both sides (INTERSECT) or from the left only (EXCEPT). NULLs
// group together, as set operations compare them.
func (p *streamPlanner) countedSetOp(x *SetOpNode) Node {
	b := p.b
	one, zero := int64Const(1), int64Const(0)
	side := func(in Node, l, r Expr) *ProjectNode {
		pr := &ProjectNode{Input: in}
		for _, c := range in.Columns() {
			pr.Exprs, pr.Cols = append(pr.Exprs, colRef(c)), append(pr.Cols, c)
		}
		for _, e := range []Expr{l, r} {
			pr.Exprs = append(pr.Exprs, e)
			pr.Cols = append(pr.Cols, b.newCol("side", arrow.PrimitiveTypes.Int64, false))
		}
		return pr
	}
	inL, inR := b.newCol("in_left", arrow.PrimitiveTypes.Int64, false), b.newCol("in_right", arrow.PrimitiveTypes.Int64, false)
	union := &SetOpNode{Kind: Union, All: true, Left: side(x.Left, one, zero), Right: side(x.Right, zero, one),
		Cols: append(slices.Clone(x.Cols), inL, inR)}
	agg := &AggNode{Input: union}
	for _, c := range x.Cols {
		agg.Groups, agg.GroupCols = append(agg.Groups, colRef(c)), append(agg.GroupCols, c)
	}
	left, right := b.newCol("left_rows", arrow.PrimitiveTypes.Int64, true), b.newCol("right_rows", arrow.PrimitiveTypes.Int64, true)
	agg.Aggs = []AggCall{{Fn: "sum", Args: []Expr{colRef(inL)}, Col: left}, {Fn: "sum", Args: []Expr{colRef(inR)}, Col: right}}
	keep := b.call(sql.Pos{}, "greater", colRef(right), zero)
	if x.Kind != Intersect {
		keep = b.call(sql.Pos{}, "equal", colRef(right), zero)
	}
	out := &ProjectNode{Input: &FilterNode{Input: agg, Pred: b.and(b.call(sql.Pos{}, "greater", colRef(left), zero), keep)}}
	for _, c := range x.Cols {
		out.Exprs, out.Cols = append(out.Exprs, colRef(c)), append(out.Cols, c)
	}
	return out
}

// rankedWindowEnd returns the column of in that a top-N partitioned by
// window_start and window_end of a window aggregation below it (through
// projections and filters only: its rows come once per window, when the
// watermark closes it) holds window_end, or 0.
func (p *streamPlanner) rankedWindowEnd(w *WindowNode, in sNode) ColumnID {
	n := in
	for {
		switch x := n.(type) {
		case *sProject:
			n = x.in
			continue
		case *sFilter:
			n = x.in
			continue
		}
		break
	}
	agg, ok := n.(*sWindowAgg)
	if !ok {
		return 0
	}
	origin := func(id ColumnID) ColumnID {
		for {
			next, ok := p.passed[id]
			if !ok || next == id {
				return id
			}
			id = next
		}
	}
	var start, end ColumnID
	for _, e := range w.PartitionBy {
		r, ok := e.(*ColRef)
		if !ok {
			continue
		}
		switch origin(r.ID) {
		case agg.cs[0].ID:
			start = r.ID
		case agg.cs[1].ID:
			end = r.ID
		}
	}
	if start == 0 || end == 0 {
		return 0
	}
	if procTimeWindow(agg.call) {
		p.refuse("a window top-N over processing-time windows (PROCTIME()) is not supported yet: it closes its windows by the watermark")
	}
	return end
}

// rankShape is the window function a streaming query maintains.
const rankShape = "ROW_NUMBER(), RANK() or DENSE_RANK() OVER (PARTITION BY ... ORDER BY ...) filtered by rn <= N (top-N) or rn = 1 (deduplication)"

// rank plans a filter over ROW_NUMBER() as a top-N: the conjuncts that
// bound the row number by constants choose the numbers kept, the others
// filter its output.
func (p *streamPlanner) rank(f *FilterNode, w *WindowNode) sNode {
	fn := rankFuncs[w.Funcs[0].Fn] // isRankWindow
	name := strings.ToUpper(w.Funcs[0].Fn) + "()"
	if len(w.OrderBy) == 0 {
		p.refuse("a top-N needs ORDER BY in its OVER clause: without it the rows kept are arbitrary")
	}
	rn := w.Funcs[0].Col
	lo, hi := int64(1), int64(math.MaxInt64)
	var rest []Expr
	for _, c := range conjuncts(f.Pred) {
		l, h, ok := rankBound(c, rn.ID)
		if !ok {
			rest = append(rest, c)
			continue
		}
		lo, hi = max(lo, l), min(hi, h)
	}
	if hi == math.MaxInt64 {
		p.refuse("a top-N needs an upper bound on its %s (rn <= N): every row of a partition would be in its result, renumbered at every change", name)
	}
	if lo > hi {
		p.refuse("the bounds on %s keep no row number", name)
	}
	in := p.plan(w.Input)
	p.stateful = true
	if p.what == "" {
		p.what = "a top-N"
	}
	for _, e := range w.PartitionBy {
		p.checkKind(e)
	}
	for _, k := range w.OrderBy {
		p.checkKind(k.Expr)
	}
	end := p.rankedWindowEnd(w, in)
	if end == 0 {
		in, end = p.assignWindows(w, in)
	}
	if end != 0 && fn != stream.RowNumber {
		p.refuse("%s in a window top-N is not supported yet: only ROW_NUMBER()", name)
	}
	r := &sRank{in: in, w: w, fn: fn, lo: lo, hi: hi, number: p.reads[rn.ID], cs: slices.Clone(in.cols()), windowEnd: end}
	if end == 0 {
		r.relies, r.insertOnly = insertOnlySources(in)
	}
	if r.number {
		r.cs = append(r.cs, rn)
	} else {
		p.unread[rn.ID] = true
	}
	if rest == nil {
		return r
	}
	pred := andAll(rest)
	maps.Copy(p.filtered, colsOf(pred))
	return &sFilter{in: r, pred: pred}
}

// isSortLimit reports whether l is ORDER BY ... LIMIT (a top-N), maybe
// with the projection that drops ORDER BY keys not selected in between.
func isSortLimit(l *LimitNode) bool {
	in := l.Input
	if p, ok := in.(*ProjectNode); ok {
		in = p.Input
	}
	_, ok := in.(*SortNode)
	return ok && l.Count != nil
}

// sortLimit plans ORDER BY ... LIMIT n OFFSET m as a top-N without
// partitions: the rows numbered m+1 to m+n, in no order (a changelog has
// none).
func (p *streamPlanner) sortLimit(l *LimitNode) sNode {
	if pr, ok := l.Input.(*ProjectNode); ok {
		// A LIMIT commutes with a projection.
		above := *pr
		above.Input = &LimitNode{Input: pr.Input, Offset: l.Offset, Count: l.Count}
		return p.plan(&above)
	}
	s := l.Input.(*SortNode)
	cnt, ok := constInt64(l.Count)
	off, offOK := int64(0), true
	if l.Offset != nil {
		off, offOK = constInt64(l.Offset)
	}
	if !ok || !offOK {
		p.refuse("ORDER BY with LIMIT (a top-N) needs a constant LIMIT and OFFSET")
	}
	if cnt <= 0 || off < 0 || off > math.MaxInt64-cnt {
		p.refuse("ORDER BY with LIMIT %d OFFSET %d keeps no rows", cnt, off)
	}
	in := p.plan(s.Input)
	p.stateful = true
	if p.what == "" {
		p.what = "a top-N"
	}
	for _, k := range s.Keys {
		p.checkKind(k.Expr)
	}
	r := &sRank{in: in, w: &WindowNode{Input: s.Input, OrderBy: s.Keys}, lo: off + 1, hi: off + cnt, cs: in.cols()}
	r.relies, r.insertOnly = insertOnlySources(in)
	return r
}

// insertOnlySources reports whether n's changelog only inserts (+I rows,
// Flink's insert-only changelog mode), and names the sources that makes
// it rely on. The rule:
//   - A stream scan of an append table (no primary key) only inserts, in
//     every scan mode (the content as +I, then the rows appended), as
//     Paimon's append tables are insert-only to Flink; a DELETE, UPDATE or
//     INSERT OVERWRITE of one does retract rows, which an operator relying
//     on this refuses at run time. A primary-key table updates by key.
//   - Filters, projections, window assignment, CURRENT_WATERMARK and
//     temporal joins (a left row meets a version once) only insert when
//     their (left) input does; so do UNION ALL, inner and semi regular
//     joins and inner interval joins when both inputs do.
//   - Window aggregations, window joins and window top-Ns emit each
//     window's rows once, as +I, when it closes: they only insert whatever
//     their input (a late change is dropped).
//   - Regular aggregations, top-Ns, outer and anti joins update.
func insertOnlySources(n sNode) ([]string, bool) {
	both := func(l, r sNode) ([]string, bool) {
		ls, lok := insertOnlySources(l)
		rs, rok := insertOnlySources(r)
		return append(ls, rs...), lok && rok
	}
	switch x := n.(type) {
	case *sSource:
		return []string{x.scan.Label}, len(x.scan.Table.PrimaryKey()) == 0
	case *sFilter:
		return insertOnlySources(x.in)
	case *sProject:
		return insertOnlySources(x.in)
	case *sWindowAssign:
		return insertOnlySources(x.in)
	case *sWatermarkCol:
		return insertOnlySources(x.in)
	case *sTemporal:
		return insertOnlySources(x.l)
	case *sOver:
		return insertOnlySources(x.in)
	case *sRowtimeTemporal:
		return insertOnlySources(x.l)
	case *sUnion:
		return both(x.l, x.r)
	case *sJoin:
		if x.n.Kind == InnerJoin || x.n.Kind == SemiJoin {
			return both(x.l, x.r)
		}
	case *sIntervalJoin:
		if x.n.Kind == InnerJoin {
			return both(x.l, x.r)
		}
	case *sWindowAgg, *sWindowJoin:
		return nil, true
	case *sRank:
		if x.windowEnd != 0 {
			return nil, true
		}
	}
	return nil, false
}

// constInt64 reads an integer constant.
func constInt64(e Expr) (int64, bool) {
	k, ok := e.(*Const)
	if !ok || !k.Value.IsValid() || !isIntegerType(k.Value.DataType()) {
		return 0, false
	}
	v, err := k.Value.CastTo(arrow.PrimitiveTypes.Int64)
	if err != nil {
		return 0, false // beyond int64
	}
	return v.(*scalar.Int64).Value, true
}

// streamAggSupported says why an aggregate cannot be maintained
// incrementally ("" when it can); stream.NewAggregate agrees.
func streamAggSupported(a AggCall) string {
	switch a.Fn {
	case "count_star", "count", "min", "max", "bool_and", "bool_or":
	case "var_pop", "var_samp", "stddev_pop", "stddev_samp":
		if t := a.Args[0].Type(); !exec.ExactVariance(t) {
			return fmt.Sprintf("not over %s yet: only integers have a variance that retracts exactly", SQLTypeName(t))
		}
	case "sum", "avg":
		t := a.Args[0].Type()
		switch {
		case isIntegerType(t), t.ID() == arrow.FLOAT32, t.ID() == arrow.FLOAT64, t.ID() == arrow.DECIMAL128:
		default:
			return fmt.Sprintf("not over %s yet", t)
		}
	default:
		return "not supported in streaming queries yet (count, sum, avg, min, max, bool_and, bool_or, and variances and standard deviations of integers are)"
	}
	return ""
}

func isIntegerType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// explain renders the streaming physical plan.
func (sp *streamPlan) explain(sb *strings.Builder) {
	if sp.limit != nil {
		sb.WriteString(explainLine(sp.limit) + "\n")
	}
	var walk func(n sNode, depth int)
	walk = func(n sNode, depth int) {
		sb.WriteString(strings.Repeat("  ", depth))
		switch x := n.(type) {
		case *sSource:
			s := x.scan
			fmt.Fprintf(sb, "StreamScan %s [%s] from %s", s.Label, colNames(x.cs), s.Stream.Start)
			if x.normalize {
				fmt.Fprintf(sb, " normalized by %s", strings.Join(s.Table.PrimaryKey(), ", "))
			}
			sb.WriteString("\n")
			return
		case *sFilter:
			sb.WriteString("StreamFilter " + x.pred.String() + "\n")
			walk(x.in, depth+1)
		case *sProject:
			sb.WriteString(strings.Replace(explainLine(&ProjectNode{Exprs: x.exprs, Cols: x.cs}), "Project", "StreamProject", 1) + "\n")
			walk(x.in, depth+1)
		case *sTemporal:
			keys := make([]string, len(x.keys))
			for i, k := range x.keys {
				keys[i] = x.scan.Table.PrimaryKey()[i] + " = " + k.String()
			}
			fmt.Fprintf(sb, "TemporalJoin %s %s [%s] keys: %s", x.n.Kind, x.scan.Label, strings.Join(x.scan.Names, ", "), strings.Join(keys, " AND "))
			if x.residual != nil {
				sb.WriteString(" residual: " + x.residual.String())
			}
			sb.WriteString("\n")
			walk(x.l, depth+1)
		case *sWatermarkCol:
			sb.WriteString("CurrentWatermark\n")
			walk(x.in, depth+1)
		case *sRowtimeTemporal:
			sb.WriteString(rowtimeTemporalString(x) + "\n")
			walk(x.l, depth+1)
			walk(x.r, depth+1)
		case *sJoin:
			sb.WriteString("Incremental" + explainLine(x.n) + "\n")
			walk(x.l, depth+1)
			walk(x.r, depth+1)
		case *sUnion:
			sb.WriteString("StreamUnionAll\n")
			walk(x.l, depth+1)
			walk(x.r, depth+1)
		case *sIntervalJoin:
			fmt.Fprintf(sb, "%s between %s\n", "Interval"+explainLine(x.n), intervalString(x))
			walk(x.l, depth+1)
			walk(x.r, depth+1)
		case *sWindowJoin:
			sb.WriteString(strings.Replace(explainLine(x.n), "Join", "WindowJoin "+windowString(x.call), 1) + "\n")
			walk(x.l, depth+1)
			walk(x.r, depth+1)
		case *sWindowAgg:
			s := strings.Replace(explainLine(x.n), "Aggregate", "WindowAggregate "+windowString(x.call), 1)
			sb.WriteString(s + "\n")
			walk(x.in, depth+1)
		case *sWindowAssign:
			sb.WriteString("WindowAssign " + windowString(x.call) + "\n")
			walk(x.in, depth+1)
		case *sOver:
			sb.WriteString(overString(x) + "\n")
			walk(x.in, depth+1)
		case *sRank:
			kind := "Incremental"
			if x.insertOnly {
				kind = "InsertOnly"
			}
			if x.windowEnd != 0 {
				sb.WriteString("WindowTopN")
			} else if x.lo == 1 && x.hi == 1 && len(x.w.PartitionBy) > 0 && x.fn == stream.RowNumber {
				sb.WriteString(kind + "Deduplicate")
			} else {
				sb.WriteString(kind + "TopN")
			}
			if len(x.w.PartitionBy) > 0 {
				sb.WriteString(" partition: " + exprList(x.w.PartitionBy))
			}
			numbers := "rows"
			if x.fn != stream.RowNumber {
				numbers = x.w.Funcs[0].Fn
			}
			fmt.Fprintf(sb, " order: %s %s %d to %d", sortKeysString(x.w.OrderBy), numbers, x.lo, x.hi)
			if x.number {
				sb.WriteString(" numbered " + x.w.Funcs[0].Col.Name)
			}
			sb.WriteString("\n")
			walk(x.in, depth+1)
		case *sAgg:
			s := "Incremental" + explainLine(x.n)
			if x.having != nil {
				s += " having: " + x.having.String()
			}
			sb.WriteString(s + "\n")
			walk(x.in, depth+1)
		}
	}
	walk(sp.root, 0)
}

// streamBuilder creates the operators of one execution of a streamPlan.
type streamBuilder struct {
	sp     *streamPlan
	ec     *exec.Context
	params arrow.RecordBatch
	budget *stream.Budget
	from   []int64 // Query.Changes
	cp     *stream.Checkpoints
}

// build creates the operator tree of one execution.
func (sp *streamPlan) build(ec *exec.Context, params arrow.RecordBatch) (exec.Operator, error) {
	sb := &streamBuilder{sp: sp, ec: ec, params: params, budget: stream.NewQueryBudget(ec)}
	root, err := sb.build(sp.root)
	if err != nil {
		return nil, err
	}
	var op exec.Operator = stream.NewSink(root, sp.schema, sp.perm, sp.observer)
	if sp.limit != nil {
		bd := &builder{ec: ec, params: params}
		off, err := bd.intValue(sp.limit.Offset, 0)
		if err == nil {
			var cnt int64
			if cnt, err = bd.intValue(sp.limit.Count, -1); err == nil {
				return exec.NewLimit(ec, op, off, cnt), nil
			}
		}
		_ = op.Close()
		return nil, err
	}
	return op, nil
}

// observer adapts the context's StreamObserver to stream positions.
func (sp *streamPlan) observer(ctx context.Context) stream.Observer {
	obs, _ := ctx.Value(observerKey{}).(StreamObserver)
	if obs == nil {
		return nil
	}
	po := posObserver{o: obs}
	if len(sp.sources) > 1 {
		po.multi, _ = obs.(MultiStreamObserver)
		po.labels = sp.labels()
	}
	return po
}

// labels names the tables of a query that streams several: their labels
// as in EXPLAIN, numbered when one repeats.
func (sp *streamPlan) labels() []string {
	out := make([]string, len(sp.sources))
	seen := map[string]int{}
	for i, s := range sp.sources {
		seen[s.Label]++
		out[i] = s.Label
		if n := seen[s.Label]; n > 1 {
			out[i] = fmt.Sprintf("%s#%d", s.Label, n)
		}
	}
	return out
}

// MultiStreamObserver is a StreamObserver told the snapshot of every
// table of a query that streams several (a join of streams): Snapshots
// comes before each Rows and CaughtUp call, whose snapshot is then the
// largest of them.
type MultiStreamObserver interface {
	StreamObserver
	Snapshots(tables []string, snapshots []int64)
}

type posObserver struct {
	o      StreamObserver
	multi  MultiStreamObserver
	labels []string
}

func (p posObserver) snapshot(pos stream.Pos) int64 {
	if p.labels == nil {
		return pos[0]
	}
	if p.multi != nil {
		p.multi.Snapshots(p.labels, pos)
	}
	return slices.Max(pos)
}

func (p posObserver) Rows(pos stream.Pos, image bool) { p.o.Rows(p.snapshot(pos), image) }
func (p posObserver) CaughtUp(pos stream.Pos) error   { return p.o.CaughtUp(p.snapshot(pos)) }
func (p posObserver) Image(pos stream.Pos, start bool) error {
	return p.o.Image(p.snapshot(pos), start)
}

// EventTime passes the watermark on to an EventTimeObserver.
func (p posObserver) EventTime(watermark time.Time, lateRows int64) {
	if eo, ok := p.o.(EventTimeObserver); ok {
		eo.EventTime(watermark, lateRows)
	}
}

// EventTimeObserver is a StreamObserver of a query with event time (a
// window aggregation or an interval join) told, before each CaughtUp, the query's watermark
// (zero until its sources have read event times) and the number of input
// rows dropped as late since the start.
type EventTimeObserver interface {
	StreamObserver
	EventTime(watermark time.Time, lateRows int64)
}

// layout maps the columns of a streaming batch: every row kind column to
// 0, cols after it.
func (sb *streamBuilder) layout(cols []Column) layout {
	l := layout{}
	for id := range sb.sp.kinds {
		l[id] = 0
	}
	for i, c := range cols {
		l[c.ID] = i + 1
	}
	return l
}

func (sb *streamBuilder) compile(e Expr, cols []Column) (exec.Expr, error) {
	return compile(e, sb.layout(cols), sb.params)
}

func (sb *streamBuilder) build(n sNode) (stream.Operator, error) {
	if s, ok := n.(*sSource); ok {
		return sb.source(s) // adds its operators to sb.cp itself
	}
	return sb.track(sb.buildNode(n))
}

// track adds op, just built, to the run's checkpoints, if any.
func (sb *streamBuilder) track(op stream.Operator, err error) (stream.Operator, error) {
	if err != nil || sb.cp == nil {
		return op, err
	}
	out, err := sb.cp.Add(op)
	if err != nil {
		_ = op.Close()
		return nil, err
	}
	return out, nil
}

func (sb *streamBuilder) buildNode(n sNode) (op stream.Operator, err error) {
	switch x := n.(type) {
	case *sFilter:
		in, err := sb.build(x.in)
		if err != nil {
			return nil, err
		}
		pred, err := sb.compile(x.pred, x.in.cols())
		if err != nil {
			_ = in.Close()
			return nil, err
		}
		return stream.NewFilter(sb.ec, in, pred), nil
	case *sProject:
		in, err := sb.build(x.in)
		if err != nil {
			return nil, err
		}
		exprs, err := compileAll(x.exprs, sb.layout(x.in.cols()), sb.params)
		if err != nil {
			_ = in.Close()
			return nil, err
		}
		return stream.NewProject(sb.ec, in, exprs, columnNames(x.cs)), nil
	case *sAgg:
		in, err := sb.build(x.in)
		if err != nil {
			return nil, err
		}
		op, err := sb.aggregate(x, in)
		if err != nil {
			_ = in.Close()
		}
		return op, err
	case *sWindowAgg:
		in, err := sb.build(x.in)
		if err != nil {
			return nil, err
		}
		op, err := sb.windowAggregate(x, in)
		if err != nil {
			_ = in.Close()
		}
		return op, err
	case *sWindowAssign:
		in, err := sb.build(x.in)
		if err != nil {
			return nil, err
		}
		op, err := stream.NewWindowAssign(sb.ec, in, windowSpec(x.call), sb.layout(x.in.cols())[x.start]-1)
		if err != nil {
			_ = in.Close()
			return nil, err
		}
		return op, nil
	case *sRank:
		in, err := sb.build(x.in)
		if err != nil {
			return nil, err
		}
		op, err := sb.rank(x, in)
		if err != nil {
			_ = in.Close()
		}
		return op, err
	case *sOver:
		in, err := sb.build(x.in)
		if err != nil {
			return nil, err
		}
		op, err := sb.over(x, in)
		if err != nil {
			_ = in.Close()
		}
		return op, err
	case *sUnion:
		return sb.buildBinary(x.l, x.r, func(l, r stream.Operator) (stream.Operator, error) {
			u, err := stream.NewUnionAll(l, r)
			if err != nil {
				return nil, err
			}
			return u, nil
		})
	case *sWindowJoin:
		return sb.buildBinary(x.l, x.r, func(l, r stream.Operator) (stream.Operator, error) { return sb.windowJoin(x, l, r) })
	case *sIntervalJoin:
		return sb.buildBinary(x.l, x.r, func(l, r stream.Operator) (stream.Operator, error) { return sb.intervalJoin(x, l, r) })
	case *sWatermarkCol:
		return sb.watermarkColumn(x)
	case *sRowtimeTemporal:
		return sb.buildBinary(x.l, x.r, func(l, r stream.Operator) (stream.Operator, error) { return sb.rowtimeTemporal(x, l, r) })
	case *sTemporal:
		in, err := sb.build(x.l)
		if err != nil {
			return nil, err
		}
		op, err := sb.temporal(x, in)
		if err != nil {
			_ = in.Close()
		}
		return op, err
	case *sJoin:
		return sb.buildBinary(x.l, x.r, func(l, r stream.Operator) (stream.Operator, error) { return sb.join(x, l, r) })
	}
	return nil, fmt.Errorf("%w: cannot build streaming %T", errInternal, n)
}

func columnNames(cols []Column) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}

// source reads a stream scan: the reader's columns (row kind first, then
// the primary key columns the scan lacks when it is normalized and the
// columns its watermark reads), normalized, without those extra columns.
func (sb *streamBuilder) source(s *sSource) (stream.Operator, error) {
	n := s.scan
	spec := *n.Stream
	if s.idx < len(sb.from) && sb.from[s.idx] > 0 {
		spec.Start, spec.SnapshotID, spec.Tag = tablestore.StreamFromSnapshotFull, sb.from[s.idx], ""
	}
	spec.Columns = []string{}
	fields := []arrow.Field{{Name: tablestore.RowKindColumn, Type: arrow.BinaryTypes.String}}
	perm := []int{0}
	for i, c := range n.Cols {
		if n.Names[i] == tablestore.RowKindColumn {
			continue
		}
		spec.Columns = append(spec.Columns, n.Names[i])
		fields = append(fields, arrow.Field{Name: n.Names[i], Type: c.Type, Nullable: c.Nullable})
		perm = append(perm, len(spec.Columns))
	}
	var keys []int
	if s.normalize {
		// Pushed predicates skip data by value, which would hide a row's
		// later versions from the normalization.
		spec.Filter = nil
		schema := n.Table.Schema()
		for _, k := range n.Table.PrimaryKey() {
			i := slices.Index(spec.Columns, k)
			if i < 0 {
				spec.Columns = append(spec.Columns, k)
				f := schema.Field(schema.FieldIndices(k)[0])
				fields = append(fields, f)
				perm = append(perm, len(spec.Columns))
				i = len(spec.Columns) - 1
			}
			keys = append(keys, i+1)
		}
	} else if s.wm == nil {
		// Not with a watermark: it comes from every row the source reads,
		// and skipping files by the filter would move it (and which rows
		// are late) with how the rows lie in files.
		spec.Filter = n.Pushed
	}
	var rowtime exec.Expr
	if s.wm != nil {
		var err error
		if rowtime, err = watermarkColumns(s.wm, n.Table, &spec.Columns, &fields, &perm, sb.params); err != nil {
			return nil, err
		}
	}
	src := stream.NewSource(n.Table, spec, arrow.NewSchema(fields, nil), perm, s.idx, len(sb.sp.sources))
	if rowtime != nil {
		src.SetWatermark(sb.ec, rowtime, s.wm.delay)
	}
	op, err := sb.track(src, nil)
	if err != nil {
		return nil, err
	}
	if s.normalize {
		if op, err = sb.track(stream.NewNormalize(sb.ec, op, keys, sb.budget)); err != nil {
			return nil, err
		}
	}
	if extra := len(fields) - 1 - len(s.cs); extra > 0 {
		exprs := make([]exec.Expr, len(s.cs))
		for i, c := range s.cs {
			exprs[i] = exec.NewColumn(i+1, c.Type, c.Name)
		}
		op = stream.NewProject(sb.ec, op, exprs, columnNames(s.cs))
	}
	return op, nil
}

func (sb *streamBuilder) aggregate(x *sAgg, in stream.Operator) (stream.Operator, error) {
	n := x.n
	cols := x.in.cols()
	lay := sb.layout(cols)
	groups, err := compileAll(n.Groups, lay, sb.params)
	if err != nil {
		return nil, err
	}
	specs, err := sb.aggSpecs(n.Aggs, lay)
	if err != nil {
		return nil, err
	}
	names := columnNames(n.GroupCols)
	if n.GroupingID != nil {
		groups, names = append(groups, exec.NewLiteral(scalar.NewInt64Scalar(0))), append(names, n.GroupingID.Name)
	}
	agg, err := stream.NewAggregate(sb.ec, in, groups, names, specs, sb.budget)
	if err != nil {
		return nil, err
	}
	if n.GroupingID != nil {
		if err := agg.SetGroupingSets(n.Sets); err != nil {
			return nil, err
		}
	}
	if x.having != nil {
		h, err := sb.compile(x.having, x.cols())
		if err != nil {
			return nil, err
		}
		agg.SetHaving(h)
	}
	return agg, nil
}

// aggSpecs compiles aggregate calls over lay.
func (sb *streamBuilder) aggSpecs(aggs []AggCall, lay layout) ([]stream.AggSpec, error) {
	specs := make([]stream.AggSpec, len(aggs))
	for i, a := range aggs {
		spec := stream.AggSpec{Func: a.Fn, Distinct: a.Distinct, Type: a.Col.Type, Name: a.Col.Name}
		var err error
		if len(a.Args) > 0 {
			if spec.Arg, err = compile(a.Args[0], lay, sb.params); err != nil {
				return nil, err
			}
		}
		if a.Filter != nil {
			if spec.Filter, err = compile(a.Filter, lay, sb.params); err != nil {
				return nil, err
			}
		}
		specs[i] = spec
	}
	return specs, nil
}

// windowAggregate builds a window aggregation: its input's window_start
// column carries the event time.
func (sb *streamBuilder) windowAggregate(x *sWindowAgg, in stream.Operator) (stream.Operator, error) {
	lay := sb.layout(x.in.cols())
	rowtime, err := compile(x.n.Groups[x.start], lay, sb.params)
	if err != nil {
		return nil, err
	}
	var keys []exec.Expr
	var names []string
	for i, g := range x.n.Groups {
		if i == x.start || i == x.end {
			continue
		}
		k, err := compile(g, lay, sb.params)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
		names = append(names, x.n.GroupCols[i].Name)
	}
	specs, err := sb.aggSpecs(x.n.Aggs, lay)
	if err != nil {
		return nil, err
	}
	if ws := windowSpec(x.call); ws.Kind == stream.Session {
		var parts []exec.Expr
		for _, c := range x.in.cols() {
			if slices.Contains(x.parts, c.ID) {
				p, err := compile(colRef(c), lay, sb.params)
				if err != nil {
					return nil, err
				}
				parts = append(parts, p)
			}
		}
		return stream.NewSessionAggregate(sb.ec, in, ws.Size, rowtime, parts, keys, names, specs, sb.budget)
	}
	ws := windowSpec(x.call)
	if procTimeWindow(x.call) {
		ws.ProcTime = sb.sp.clock
	}
	return stream.NewWindowAggregate(sb.ec, in, ws, rowtime, keys, names, specs, sb.budget)
}

func (sb *streamBuilder) rank(x *sRank, in stream.Operator) (stream.Operator, error) {
	lay := sb.layout(x.in.cols())
	spec := stream.RankSpec{Func: x.fn, Lo: x.lo, Hi: x.hi, Number: x.number}
	if x.insertOnly {
		spec.InsertOnly = "windowed rows"
		if x.relies != nil {
			spec.InsertOnly = strings.Join(x.relies, ", ")
		}
	}
	var err error
	if spec.Partition, err = compileAll(x.w.PartitionBy, lay, sb.params); err != nil {
		return nil, err
	}
	for _, k := range x.w.OrderBy {
		e, err := compile(k.Expr, lay, sb.params)
		if err != nil {
			return nil, err
		}
		spec.Order = append(spec.Order, exec.SortKey{Expr: e, Descending: k.Desc, NullsFirst: k.NullsFirst})
	}
	if x.windowEnd != 0 {
		return stream.NewWindowRank(sb.ec, in, spec, lay[x.windowEnd]-1, sb.budget)
	}
	return stream.NewRank(sb.ec, in, spec, sb.budget)
}

// buildBinary builds a binary operator's two inputs, then the operator
// over them by ctor; on an error it closes what it built.
func (sb *streamBuilder) buildBinary(ln, rn sNode, ctor func(l, r stream.Operator) (stream.Operator, error)) (stream.Operator, error) {
	l, err := sb.build(ln)
	if err != nil {
		return nil, err
	}
	r, err := sb.build(rn)
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	op, err := ctor(l, r)
	if err != nil {
		_ = l.Close()
		_ = r.Close()
		return nil, err
	}
	return op, nil
}

func (sb *streamBuilder) join(x *sJoin, l, r stream.Operator) (stream.Operator, error) {
	n := x.n
	spec := stream.JoinSpec{Kind: exec.JoinType(n.Kind)}
	_, spec.InsertOnly[0] = insertOnlySources(x.l)
	_, spec.InsertOnly[1] = insertOnlySources(x.r)
	var err error
	if spec.LeftKeys, err = compileAll(n.LeftKeys, sb.layout(x.l.cols()), sb.params); err != nil {
		return nil, err
	}
	if spec.RightKeys, err = compileAll(n.RightKeys, sb.layout(x.r.cols()), sb.params); err != nil {
		return nil, err
	}
	// planJoins leaves a join without equality keys its whole condition.
	res := n.Residual
	if len(n.LeftKeys) == 0 {
		res = n.Cond
	}
	if res != nil {
		if spec.Residual, err = sb.compile(res, concatCols(x.l.cols(), x.r.cols())); err != nil {
			return nil, err
		}
	}
	return stream.NewJoin(sb.ec, l, r, spec, sb.budget)
}

// planTemporal plans a temporal join: its left side streams, its table is
// looked up (never streamed), row by row, so the join keeps no state.
func (p *streamPlanner) planTemporal(x *JoinNode) sNode {
	scan, keys, residual, ok := lookupJoin(x)
	if !ok {
		p.refuse("this temporal join: its condition must fix the primary key of the table it looks up")
	}
	cat, ok := p.b.cat.(LookupCatalog)
	if !ok {
		p.refuse("a temporal join here: the catalog cannot look rows up by key")
	}
	if err := lookup.Check(scan.Table); err != nil {
		p.refuse("a temporal join with %s: %v", scan.Label, err)
	}
	l := p.plan(x.Left)
	p.checkKind(keys...)
	t := &sTemporal{l: l, n: x, scan: scan, keys: keys, residual: residual, cat: cat}
	for _, c := range x.Columns() {
		if !p.kinds[c.ID] {
			t.cs = append(t.cs, c)
		}
	}
	return t
}

func (sb *streamBuilder) temporal(x *sTemporal, in stream.Operator) (stream.Operator, error) {
	keys, err := compileAll(x.keys, sb.layout(x.l.cols()), sb.params)
	if err != nil {
		return nil, err
	}
	var residual exec.Expr
	if x.residual != nil {
		if residual, err = sb.compile(x.residual, x.cs); err != nil {
			return nil, err
		}
	}
	cols, err := tableColumns(x.scan)
	if err != nil {
		return nil, err
	}
	fields := slices.Clone(in.Schema().Fields())
	for i, c := range x.scan.Cols {
		fields = append(fields, arrow.Field{Name: x.scan.Names[i], Type: c.Type, Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	cat := x.cat
	ec, t, outer := sb.ec, x.scan.Table, x.n.Kind == LeftJoin
	return stream.NewTemporal(in, schema, func(ctx context.Context) (*exec.LookupJoiner, error) {
		r, err := openIndexReader(ctx, cat, t, cols, 0, true)
		if err != nil {
			return nil, err
		}
		return exec.NewLookupJoiner(ec, r, keys, residual, outer, schema), nil
	}), nil
}
