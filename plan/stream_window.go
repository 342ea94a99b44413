package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/stream"
	"github.com/flightd/flightd/tablestore"
)

// Window TVFs over a stream. The batch TVFs (window_tvf.go) are a union of
// projections, one per window a row can fall into; over a stream that
// would read the stream once per branch. A streaming TVF is instead one
// projection whose window_start, window_end and window_time are calls of
// the functions below (Args: the time column, then the kind, size, step
// and offset in microseconds, 1 for processing time (0: event time), then
// a SESSION's PARTITION BY columns). They
// have no kernel: the streaming planner
// accepts them only under a window aggregation (GROUP BY window_start,
// window_end), which assigns the windows itself (stream.WindowAggregate);
// up to it, window_start carries the row's event time.
const (
	windowStartFn = "$window_start"
	windowEndFn   = "$window_end"
	windowTimeFn  = "$window_time"
)

// readsStream reports whether n reads a stream scan.
func readsStream(n Node) bool {
	if s, ok := n.(*ScanNode); ok && s.Stream != nil {
		return true
	}
	return slices.ContainsFunc(n.Inputs(), readsStream)
}

// streamScanOf returns the stream scan n reads directly (through the
// projection of its table's computed columns), or nil.
func streamScanOf(n Node) *ScanNode {
	if p, ok := n.(*ProjectNode); ok {
		n = p.Input
	}
	if s, ok := n.(*ScanNode); ok && s.Stream != nil {
		return s
	}
	return nil
}

// bindStreamWindowTVF binds a window TVF over a stream scan (or, scan
// nil, over processing time: ts is a PROCTIME() attribute of a stream):
// in's columns plus window_start, window_end and window_time as window
// calls over ts; size, step and offset are microseconds.
func (b *binder) bindStreamWindowTVF(pos sql.Pos, in Node, scan *ScanNode, ts *ColRef, kind string, size, step, offset int64, descPos sql.Pos, parts ...*ColRef) Node {
	proc := int64(1)
	if scan != nil {
		proc = 0
		_, wm := tableComputed(scan.Table.Options())
		if wm == nil || wm.rowtime != ts.Name {
			b.fail(descPos, "%s over a stream: DESCRIPTOR(%s) must be the WATERMARK column of %s (declare WATERMARK FOR %s AS %s - INTERVAL ... in its CREATE TABLE) or a PROCTIME() attribute", kind, ts.Name, scan.Table.Ident(), ts.Name, ts.Name)
		}
	}
	b.streamTVFs++
	args := []Expr{ts, int64Const(int64(windowKinds[kind])), int64Const(size), int64Const(step), int64Const(offset), int64Const(proc)}
	for _, c := range parts {
		args = append(args, c)
	}
	p := &ProjectNode{Input: in}
	for _, c := range in.Columns() {
		p.Exprs = append(p.Exprs, colRef(c))
		p.Cols = append(p.Cols, b.newCol(c.Name, c.Type, c.Nullable))
	}
	for _, fn := range []string{windowStartFn, windowEndFn, windowTimeFn} {
		p.Exprs = append(p.Exprs, &Call{Fn: fn, Args: args, Typ: ts.Typ})
		p.Cols = append(p.Cols, b.newCol(strings.TrimPrefix(fn, "$"), ts.Typ, true))
	}
	return p
}

var windowKinds = map[string]stream.WindowKind{"TUMBLE": stream.Tumble, "HOP": stream.Hop, "CUMULATE": stream.Cumulate, "SESSION": stream.Session}

// windowCol is a window column of a streaming TVF as the planner follows
// it: which bound it is, the call that defines it and, for SESSION, its
// PARTITION BY columns (passed on to the aggregation by passHidden; 0: a
// rule rewrote one).
type windowCol struct {
	fn    string
	call  *Call
	parts []ColumnID
}

// windowCall returns e as a window call, or nil.
func windowCall(e Expr) *Call {
	if c, ok := e.(*Call); ok && strings.HasPrefix(c.Fn, "$window_") {
		return c
	}
	return nil
}

// readsWindow reports whether e reads a window column or calls a window
// function.
func (p *streamPlanner) readsWindow(e Expr) bool {
	found := false
	if e != nil {
		walkExpr(e, func(x Expr) {
			if r, ok := x.(*ColRef); ok && p.windows[r.ID] != nil || windowCall(x) != nil {
				found = true
			}
		})
	}
	return found
}

// refuseWindow refuses es when they read window columns anywhere but in
// a window aggregation.
func (p *streamPlanner) refuseWindow(where string, es ...Expr) {
	for _, e := range es {
		if p.readsWindow(e) {
			p.refuse("window_start, window_end and window_time of a window TVF over a stream can only be grouped by in a window aggregation (GROUP BY window_start, window_end, ...), not used in %s", where)
		}
	}
}

// sWindowAgg is a window aggregation; its columns are window_start,
// window_end, the other groups, the aggregates.
type sWindowAgg struct {
	in         sNode
	n          *AggNode
	call       *Call      // the window call of window_start
	start, end int        // indexes of window_start and window_end in n.Groups
	parts      []ColumnID // a SESSION's PARTITION BY columns in in's
	cs         []Column
}

func (s *sWindowAgg) cols() []Column { return s.cs }

// planWindowAgg plans an aggregation that groups by window columns; nil
// when it groups by none.
func (p *streamPlanner) planWindowAgg(x *AggNode, in sNode) sNode {
	w := &sWindowAgg{in: in, n: x, start: -1, end: -1}
	for i, g := range x.Groups {
		r, ok := g.(*ColRef)
		if !ok || p.windows[r.ID] == nil {
			p.refuseWindow("a GROUP BY expression", g)
			continue
		}
		wc := p.windows[r.ID]
		switch {
		case wc.fn == windowStartFn && w.start < 0:
			w.start, w.call = i, wc.call
		case wc.fn == windowEndFn && w.end < 0:
			w.end = i
		default:
			p.refuse("a window aggregation groups by window_start and window_end once each (window_time is not supported yet)")
		}
	}
	if w.start < 0 && w.end < 0 {
		return nil
	}
	if w.start < 0 || w.end < 0 || !sameWindows(p.windows[x.Groups[w.end].(*ColRef).ID].call, w.call) {
		p.refuse("a window aggregation over a stream groups by both window_start and window_end of one window TVF")
	}
	if windowSpec(w.call).Kind == stream.Session {
		w.parts = p.windows[x.Groups[w.start].(*ColRef).ID].parts
		if slices.Contains(w.parts, 0) {
			p.refuse("a SESSION window aggregation over a stream needs the TVF's PARTITION BY columns passed on to it unchanged")
		}
		p.checkSessionUnfiltered(in)
	}
	if x.Sets != nil || x.GroupingID != nil {
		p.refuse("grouping sets are not supported yet")
	}
	for _, a := range x.Aggs {
		p.refuseWindow("an aggregate", a.Args...)
		p.refuseWindow("an aggregate", a.Filter)
		p.checkKind(a.Args...)
		p.checkKind(a.Filter)
		if why := streamAggSupported(a); why != "" {
			p.refuse("%s: %s", aggString(a), why)
		}
	}
	w.cs = []Column{x.GroupCols[w.start], x.GroupCols[w.end]}
	for i, c := range x.GroupCols {
		if i != w.start && i != w.end {
			w.cs = append(w.cs, c)
		}
	}
	for _, a := range x.Aggs {
		w.cs = append(w.cs, a.Col)
	}
	// Above the aggregation they are plain columns (which may keep the
	// IDs of the input's window columns).
	delete(p.windows, x.GroupCols[w.start].ID)
	delete(p.windows, x.GroupCols[w.end].ID)
	p.windowAggs++
	p.eventTime = p.eventTime || !procTimeWindow(w.call)
	return w
}

// checkSessionUnfiltered refuses a filter between a SESSION TVF's stream
// and its aggregation (the scan's pushed filters included): a streaming
// session forms over the rows that pass it, a batch SESSION TVF over all
// rows, before the WHERE.
func (p *streamPlanner) checkSessionUnfiltered(in sNode) {
	for {
		switch x := in.(type) {
		case *sProject:
			in = x.in
			continue
		case *sFilter:
			p.refuse("a WHERE over the rows of a SESSION TVF over a stream is not supported yet: the batch TVF forms sessions over all rows before the filter, the stream would over the rows it passes")
		}
		return
	}
}

// sWindowAssign is a TUMBLE, HOP or CUMULATE window TVF whose rows a
// window top-N ranks: stream.WindowAssign. Its columns are in's, the one
// at start (the event time below) holding window_start, then window_end
// and window_time.
type sWindowAssign struct {
	in    sNode
	call  *Call
	start ColumnID
	cs    []Column
}

func (s *sWindowAssign) cols() []Column { return s.cs }

// assignWindows plans the input of a top-N partitioned by window_start
// and window_end of a window TVF over a stream that nothing aggregates:
// the TVF's rows, one per window (Flink's window top-N over a TVF). It
// returns in unchanged and 0 for other top-Ns, else the rows and the
// window_end column.
func (p *streamPlanner) assignWindows(w *WindowNode, in sNode) (sNode, ColumnID) {
	var start, end *ColRef
	for _, e := range w.PartitionBy {
		r, ok := e.(*ColRef)
		if !ok || p.windows[r.ID] == nil {
			continue
		}
		switch p.windows[r.ID].fn {
		case windowStartFn:
			start = r
		case windowEndFn:
			end = r
		}
	}
	if start == nil || end == nil || !sameWindows(p.windows[start.ID].call, p.windows[end.ID].call) {
		return in, 0
	}
	call := p.windows[start.ID].call
	switch {
	case windowSpec(call).Kind == stream.Session:
		p.refuse("a window top-N over SESSION windows is not supported yet: rank the rows of a SESSION aggregation instead")
	case procTimeWindow(call):
		p.refuse("a window top-N over processing-time windows (PROCTIME()) is not supported yet: it closes its windows by the watermark")
	}
	a := &sWindowAssign{in: in, call: call, start: start.ID, cs: slices.Clone(in.cols())}
	cols := w.Input.Columns()
	endCol := cols[slices.IndexFunc(cols, func(c Column) bool { return c.ID == end.ID })]
	timeCol := p.b.newCol("window_time", endCol.Type, true)
	for _, c := range cols {
		if wc := p.windows[c.ID]; wc != nil && wc.fn == windowTimeFn && sameWindows(wc.call, call) {
			timeCol = c
		}
	}
	a.cs = append(a.cs, endCol, timeCol)
	for _, c := range a.cs {
		delete(p.windows, c.ID) // plain columns from here
	}
	p.windowAggs++
	p.eventTime = true
	return a, end.ID
}

// planWindowProject plans a projection that defines or passes on window
// columns: window_start becomes its time column, the other window columns
// are not computed (the window aggregation computes them).
func (p *streamPlanner) planWindowProject(x *ProjectNode, pr *sProject, i int) bool {
	e := x.Exprs[i]
	var wc *windowCol
	if c := windowCall(e); c != nil {
		var parts []ColumnID
		for _, a := range c.Args[windowPartsArg:] {
			var id ColumnID // 0 (refused by planWindowAgg) if a rule rewrote the column
			if r, ok := a.(*ColRef); ok {
				id = r.ID
			}
			parts = append(parts, id)
		}
		wc = &windowCol{fn: c.Fn, call: c, parts: parts}
	} else if r, ok := e.(*ColRef); ok && p.windows[r.ID] != nil {
		moved := *p.windows[r.ID]
		wc = &moved
	}
	if wc == nil {
		p.refuseWindow("an expression", e)
		return false
	}
	p.windows[x.Cols[i].ID] = wc
	if wc.fn == windowStartFn {
		if c := windowCall(e); c != nil {
			e = c.Args[0]
		}
		pr.exprs = append(pr.exprs, e)
		pr.cs = append(pr.cs, x.Cols[i])
		passHidden(pr, wc.parts)
	}
	return true
}

// passHidden passes the columns ids of pr's input on under their own IDs
// (once), whether or not the logical projection keeps them: a SESSION's
// PARTITION BY columns reach its aggregation so, even when the query reads
// them nowhere else and the optimizer pruned them.
func passHidden(pr *sProject, ids []ColumnID) {
	for _, c := range pr.in.cols() {
		if slices.Contains(ids, c.ID) && !slices.ContainsFunc(pr.cs, func(o Column) bool { return o.ID == c.ID }) {
			pr.exprs = append(pr.exprs, colRef(c))
			pr.cs = append(pr.cs, c)
		}
	}
}

// sameWindows reports whether two window calls are of the same windows
// (rewrites may have copied the calls).
func sameWindows(a, b *Call) bool {
	return slices.EqualFunc(a.Args, b.Args, func(x, y Expr) bool { return x.String() == y.String() })
}

// windowPartsArg is where a window call's SESSION PARTITION BY columns
// start.
const windowPartsArg = 6

// procTimeWindow reports whether a window call is over processing time.
func procTimeWindow(c *Call) bool { return c.Args[5].(*Const).Value.(*scalar.Int64).Value == 1 }

// windowSpec is the stream.Windows of a window call (ProcTime unset).
func windowSpec(c *Call) stream.Windows {
	arg := func(i int) int64 { return c.Args[i].(*Const).Value.(*scalar.Int64).Value }
	return stream.Windows{
		Kind:   stream.WindowKind(arg(1)),
		Size:   time.Duration(arg(2)) * time.Microsecond,
		Step:   time.Duration(arg(3)) * time.Microsecond,
		Offset: time.Duration(arg(4)) * time.Microsecond,
	}
}

func windowString(c *Call) string {
	ws := windowSpec(c)
	if ws.Kind == stream.Session {
		s := fmt.Sprintf("SESSION(%s, gap %s", c.Args[0], ws.Size)
		if len(c.Args) > windowPartsArg {
			s += fmt.Sprintf(", partition by %s", exprList(c.Args[windowPartsArg:]))
		}
		return s + ")"
	}
	kind := map[stream.WindowKind]string{stream.Tumble: "TUMBLE", stream.Hop: "HOP", stream.Cumulate: "CUMULATE"}[ws.Kind]
	s := fmt.Sprintf("%s(%s, size %s", kind, c.Args[0], ws.Size)
	if ws.Kind != stream.Tumble {
		s += fmt.Sprintf(", step %s", ws.Step)
	}
	if ws.Offset != 0 {
		s += fmt.Sprintf(", offset %s", ws.Offset)
	}
	if procTimeWindow(c) {
		s += ", processing time"
	}
	return s + ")"
}

// sourceWatermark is the watermark of a stream scan's table: rowtime
// bound over cols, the table's physical columns.
type sourceWatermark struct {
	rowtime Expr
	cols    []Column
	delay   time.Duration
}

// watermarkOf binds the watermark of a stream scan's table.
func (p *streamPlanner) watermarkOf(scan *ScanNode) *sourceWatermark {
	cc, wm := tableComputed(scan.Table.Options())
	if wm == nil {
		return nil
	}
	b := p.b
	sw := &sourceWatermark{}
	for _, f := range scan.Table.Schema().Fields() {
		sw.cols = append(sw.cols, b.newCol(f.Name, f.Type, f.Nullable))
	}
	sc := newScope(sw.cols, "")
	if i := slices.IndexFunc(cc, func(c computedCol) bool { return c.name == wm.rowtime }); i >= 0 {
		sw.rowtime = b.storedComputed(scan.Table, cc[i].name, cc[i].expr, sc)
	} else {
		sw.rowtime = b.lookup(sc, &sql.Ident{Parts: []string{wm.rowtime}})
	}
	e, err := parseStoredExpr(wm.expr)
	if err != nil {
		p.refuse("table %s: WATERMARK %q: %v", scan.Table.Ident(), wm.expr, err)
	}
	sw.delay = time.Duration(b.watermarkDelay(e, wm.rowtime)) * time.Microsecond
	return sw
}

// watermarkColumns adds the physical columns sw reads to the source's
// columns and returns its rowtime compiled over the source's batches (row
// kind, then columns).
func watermarkColumns(sw *sourceWatermark, t *tablestore.Table, columns *[]string, fields *[]arrow.Field, perm *[]int, params arrow.RecordBatch) (exec.Expr, error) {
	lay := layout{}
	for id := range colsOf(sw.rowtime) {
		i := slices.IndexFunc(sw.cols, func(c Column) bool { return c.ID == id })
		name := sw.cols[i].Name
		j := slices.Index(*columns, name)
		if j < 0 {
			*columns = append(*columns, name)
			schema := t.Schema()
			*fields = append(*fields, schema.Field(schema.FieldIndices(name)[0]))
			*perm = append(*perm, len(*columns))
			j = len(*columns) - 1
		}
		lay[id] = j + 1
	}
	return compile(sw.rowtime, lay, params)
}

// sWindowJoin is a window join; its columns are the left's, the right's
// (window_start holding the window's start), then the window_end and
// window_time columns of each side the join outputs.
type sWindowJoin struct {
	l, r   sNode
	n      *JoinNode
	call   *Call // the left window_start's call
	keys   [2][]Expr
	start  [2]ColumnID
	bounds [2][]stream.WindowBound
	cs     []Column
}

func (s *sWindowJoin) cols() []Column { return s.cs }

// sameWindowSpec reports whether two window calls, maybe over different
// time columns, are of the same kind, size, step and offset.
func sameWindowSpec(a, b *Call) bool {
	return sameWindows(&Call{Args: a.Args[1:]}, &Call{Args: b.Args[1:]})
}

// windowOf returns the window column e reads directly, or nil.
func (p *streamPlanner) windowOf(e Expr) *windowCol {
	if r, ok := e.(*ColRef); ok {
		return p.windows[r.ID]
	}
	return nil
}

// planWindowJoin plans a join of two window TVFs on window_start and
// window_end (and keys).
func (p *streamPlanner) planWindowJoin(x *JoinNode, l, r sNode) *sWindowJoin {
	switch x.Kind {
	case InnerJoin:
	case LeftJoin, RightJoin, FullJoin:
		if x.Residual != nil {
			p.refuse("an outer window join's condition beyond its equality keys is not supported yet: it decides which rows are padded, and the join applies it after matching")
		}
	default:
		p.refuse("window joins other than inner, left, right and full outer joins are not supported yet")
	}
	for _, c := range x.Columns() {
		if wc := p.windows[c.ID]; wc != nil && windowSpec(wc.call).Kind == stream.Session {
			p.refuse("window joins of SESSION windows are not supported yet")
		}
		if wc := p.windows[c.ID]; wc != nil && procTimeWindow(wc.call) {
			p.refuse("window joins over processing time (PROCTIME()) are not supported: the two sides' windows would close on two readings of the clock")
		}
	}
	w := &sWindowJoin{l: l, r: r, n: x}
	var found [2]bool
	for i := range x.LeftKeys {
		lk, rk := x.LeftKeys[i], x.RightKeys[i]
		lw, rw := p.windowOf(lk), p.windowOf(rk)
		switch {
		case lw == nil && rw == nil:
			p.refuseWindow("a join key", lk, rk)
			w.keys[0] = append(w.keys[0], lk)
			w.keys[1] = append(w.keys[1], rk)
		case lw != nil && rw != nil && lw.fn == rw.fn && lw.fn != windowTimeFn && sameWindowSpec(lw.call, rw.call):
			if lw.fn == windowStartFn {
				found[0], w.call = true, lw.call
				w.start = [2]ColumnID{lk.(*ColRef).ID, rk.(*ColRef).ID}
			} else {
				found[1] = true
			}
		default:
			p.refuse("a window join matches the window_start and window_end of windows of one kind and size")
		}
	}
	if !found[0] || !found[1] {
		p.refuse("a window join of streams joins on both window_start and window_end")
	}
	p.refuseWindow("a join condition beyond the keys", x.Residual)
	w.cs = append(slices.Clone(l.cols()), r.cols()...)
	var extra []Column
	for s, in := range []Node{x.Left, x.Right} {
		for _, c := range in.Columns() {
			wc := p.windows[c.ID]
			switch {
			case wc == nil:
				continue
			case wc.fn == windowEndFn:
				w.bounds[s] = append(w.bounds[s], stream.WindowEnd)
				extra = append(extra, c)
			case wc.fn == windowTimeFn:
				w.bounds[s] = append(w.bounds[s], stream.WindowTime)
				extra = append(extra, c)
			}
			delete(p.windows, c.ID) // above the join, a plain column
		}
	}
	w.cs = append(w.cs, extra...)
	p.windowAggs += 2 // the two TVFs are consumed
	p.eventTime = true
	return w
}

// windowJoin builds a window join and the filter of its condition beyond
// the keys.
func (sb *streamBuilder) windowJoin(x *sWindowJoin, l, r stream.Operator) (stream.Operator, error) {
	var sides [2]stream.WindowJoinSide
	for s, cols := range [][]Column{x.l.cols(), x.r.cols()} {
		lay := sb.layout(cols)
		var err error
		if sides[s].Keys, err = compileAll(x.keys[s], lay, sb.params); err != nil {
			return nil, err
		}
		i := slices.IndexFunc(cols, func(c Column) bool { return c.ID == x.start[s] })
		if sides[s].Time, err = compile(colRef(cols[i]), lay, sb.params); err != nil {
			return nil, err
		}
		sides[s].Start, sides[s].Bounds = i, x.bounds[s]
	}
	if x.n.Residual == nil {
		return stream.NewWindowJoin(sb.ec, exec.JoinType(x.n.Kind), l, r, windowSpec(x.call), sides, sb.budget)
	}
	// Tracked here: build tracks the filter above it, which keeps nothing.
	j, err := sb.track(stream.NewWindowJoin(sb.ec, exec.JoinType(x.n.Kind), l, r, windowSpec(x.call), sides, sb.budget))
	if err != nil {
		return nil, err
	}
	pred, err := sb.compile(x.n.Residual, concatCols(x.l.cols(), x.r.cols()))
	if err != nil {
		_ = j.Close()
		return nil, err
	}
	return stream.NewFilter(sb.ec, j, pred), nil
}
