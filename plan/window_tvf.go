package plan

import (
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/sql"
)

// maxWindowsPerRow bounds SIZE / SLIDE (HOP) and SIZE / STEP (CUMULATE).
const maxWindowsPerRow = 1000

// bindWindowTVF binds Flink's window table functions over a table in batch
// mode: TUMBLE(TABLE t, DESCRIPTOR(ts), size [, offset]),
// HOP(TABLE t, DESCRIPTOR(ts), slide, size [, offset]) and
// CUMULATE(TABLE t, DESCRIPTOR(ts), step, size [, offset]). The result is
// the table's columns plus window_start, window_end and window_time; a row
// belongs to every window that contains its time. Sizes are whole
// milliseconds; bounds are computed in seconds since the epoch when every
// size is whole seconds, else in microseconds.
// SESSION(TABLE t [PARTITION BY k | (k, ...)], DESCRIPTOR(ts), gap) is
// bindSession's.
func (b *binder) bindWindowTVF(f *sql.TableFunc, outer, left *scope) (Node, *scope) {
	call := f.Call
	kind := strings.ToUpper(call.Name)
	names := map[string][]string{
		"TUMBLE":   {"data", "timecol", "size", "offset"},
		"HOP":      {"data", "timecol", "slide", "size", "offset"},
		"CUMULATE": {"data", "timecol", "step", "size", "offset"},
		"SESSION":  {"data", "timecol", "gap"},
	}[kind]
	if names == nil {
		b.notImplemented(f.Pos, "table function "+kind)
	}
	args := map[string]sql.Expr{}
	for i, a := range call.Args {
		if na, ok := a.(*sql.NamedArg); ok {
			args[strings.ToLower(na.Name)] = na.Value
			continue
		}
		if i >= len(names) {
			b.fail(a.Position(), "%s takes at most %d arguments", kind, len(names))
		}
		args[names[i]] = a
	}
	for _, n := range names {
		if args[n] == nil && n != "offset" {
			b.fail(call.Pos, "%s needs a %s argument", kind, strings.ToUpper(n))
		}
	}
	data, ok := args["data"].(*sql.TableArg)
	if !ok {
		b.fail(args["data"].Position(), "%s: the first argument must be TABLE name", kind)
	}
	desc, ok := args["timecol"].(*sql.Descriptor)
	if !ok || len(desc.Columns) != 1 {
		b.fail(args["timecol"].Position(), "%s: the time column must be DESCRIPTOR(column)", kind)
	}
	if data.PartitionBy != nil && kind != "SESSION" {
		b.fail(data.PartitionBy[0].Position(), "%s: PARTITION BY applies to SESSION windows only", kind)
	}
	table := &sql.TableName{Pos: data.Pos, Name: data.Name, Hints: data.Hints}
	in, sc := b.bindFrom(table, outer, left)
	ts := b.lookup(sc, &sql.Ident{Pos: desc.Pos, Parts: desc.Columns})
	if ts.Typ.ID() != arrow.TIMESTAMP {
		b.fail(desc.Pos, "%s: time column %q must be a TIMESTAMP, got %s", kind, ts.Name, SQLTypeName(ts.Typ))
	}
	proc := isProctime(in, ts.ID)
	if proc && kind == "SESSION" {
		b.failWrap(desc.Pos, ErrNotImplemented, "SESSION over %s: SESSION windows over processing time (a PROCTIME() attribute) are not supported", ts.Name)
	}
	micros := func(name string) int64 {
		e := args[name]
		if e == nil {
			return 0
		}
		c := b.constExpr(e, arrow.FixedWidthTypes.MonthDayNanoInterval)
		iv := c.Value.(*scalar.MonthDayNanoInterval).Value
		if iv.Months != 0 {
			b.notImplemented(e.Position(), "window sizes in months or years")
		}
		if iv.Nanoseconds%1e6 != 0 {
			b.fail(e.Position(), "%s: window sizes are whole milliseconds", kind)
		}
		us, ok := intervalMicros(iv)
		if !ok {
			b.fail(e.Position(), "%s: %s is too long", kind, sql.Format(e))
		}
		return us
	}
	qual := f.Alias
	if qual == "" {
		qual = data.Name.Parts[len(data.Name.Parts)-1]
	}
	if kind == "SESSION" {
		gap := micros("gap")
		if gap <= 0 {
			b.fail(args["gap"].Position(), "SESSION: the gap must be positive")
		}
		var parts []*ColRef
		for _, e := range data.PartitionBy {
			id, ok := e.(*sql.Ident)
			if !ok {
				b.fail(e.Position(), "SESSION: PARTITION BY takes columns of %s", strings.Join(data.Name.Parts, "."))
			}
			parts = append(parts, b.lookup(sc, id))
		}
		if scan := streamScanOf(in); scan != nil {
			return b.tvfScope(f, qual, b.bindStreamWindowTVF(call.Pos, in, scan, ts, kind, gap, gap, 0, desc.Pos, parts...))
		}
		return b.tvfScope(f, qual, b.bindSession(call.Pos, in, ts, parts, gap))
	}
	size, offset := micros("size"), micros("offset")
	if size <= 0 {
		b.fail(args["size"].Position(), "%s: SIZE must be positive", kind)
	}
	step := size
	switch kind {
	case "HOP":
		step = micros("slide")
	case "CUMULATE":
		step = micros("step")
	}
	if step <= 0 || size%step != 0 {
		b.fail(call.Pos, "%s: SIZE must be a positive multiple of the %s", kind, map[bool]string{true: "SLIDE", false: "STEP"}[kind == "HOP"])
	}
	if size/step > maxWindowsPerRow {
		// Each is a branch of the batch plan and a window state per row
		// in a stream: a request must not be able to ask for billions.
		b.fail(call.Pos, "%s: SIZE is %d times the %s; at most %d windows can hold a row", kind, size/step, map[bool]string{true: "SLIDE", false: "STEP"}[kind == "HOP"], maxWindowsPerRow)
	}
	pos := call.Pos
	if proc && readsStream(in) {
		return b.tvfScope(f, qual, b.bindStreamWindowTVF(pos, in, nil, ts, kind, size, step, offset, desc.Pos))
	}
	if scan := streamScanOf(in); scan != nil {
		return b.tvfScope(f, qual, b.bindStreamWindowTVF(pos, in, scan, ts, kind, size, step, offset, desc.Pos))
	}
	// Bounds in seconds (functions a Substrait plan can carry) unless a
	// size needs microseconds.
	unit, toUnits, fromUnits := int64(1e6), "unix_timestamp", "from_unixtime"
	if size%1e6 != 0 || step%1e6 != 0 || offset%1e6 != 0 {
		unit, toUnits, fromUnits = 1, exec.EpochMicrosFn, exec.FromEpochMicrosFn
	}
	i64 := func(v int64) Expr { return int64Const(v / unit) }
	// floor(t, w) = t - ((t - offset) mod w + w) mod w, in units.
	t := b.call(pos, toUnits, ts)
	if proc {
		// A batch query is processed at one time, its statement's: every
		// row falls into the windows holding it (PROCTIME() itself reads
		// the wall clock per batch, which a query could see cross a
		// window's end).
		t = b.call(pos, toUnits, b.call(pos, "current_timestamp"))
	}
	floor := func(w int64) Expr {
		m := b.call(pos, "modulo", b.call(pos, "subtract", t, i64(offset)), i64(w))
		return b.call(pos, "subtract", t, b.call(pos, "modulo", b.call(pos, "add", m, i64(w)), i64(w)))
	}
	toTS := func(s Expr) Expr { return b.castTo(b.call(pos, fromUnits, s), ts.Typ, pos) }
	inCols := in.Columns()
	// One projection per window a row can fall into, unioned.
	var start, end []Expr
	var keep []Expr
	switch kind {
	case "TUMBLE":
		s := floor(size)
		start, end, keep = []Expr{s}, []Expr{b.call(pos, "add", s, i64(size))}, []Expr{nil}
	case "HOP":
		last := floor(step)
		for k := int64(0); k < size/step; k++ {
			s := b.call(pos, "subtract", last, i64(k*step))
			start = append(start, s)
			end = append(end, b.call(pos, "add", s, i64(size)))
			keep = append(keep, nil)
		}
	case "CUMULATE":
		s := floor(size)
		for j := int64(1); j <= size/step; j++ {
			e := b.call(pos, "add", s, i64(j*step))
			start = append(start, s)
			end = append(end, e)
			keep = append(keep, b.call(pos, "less", t, e))
		}
	}
	outCols := make([]Column, 0, len(inCols)+3)
	for _, c := range inCols {
		outCols = append(outCols, b.newCol(c.Name, c.Type, c.Nullable))
	}
	for _, n := range []string{"window_start", "window_end", "window_time"} {
		outCols = append(outCols, b.newCol(n, ts.Typ, true))
	}
	var node Node
	for i := range start {
		exprs := make([]Expr, 0, len(outCols))
		for _, c := range inCols {
			exprs = append(exprs, colRef(c))
		}
		we := toTS(end[i])
		exprs = append(exprs, toTS(start[i]), we,
			b.call(pos, "subtract", we, &Const{Value: scalar.NewMonthDayNanoIntervalScalar(arrow.MonthDayNanoInterval{Nanoseconds: 1e6})}))
		var src Node = in
		if i > 0 {
			// Each branch scans again: plans are trees.
			src, _ = b.bindFrom(table, outer, left)
			exprs = remapCols(exprs, inCols, src.Columns())
		}
		if keep[i] != nil {
			cond := keep[i]
			if i > 0 {
				cond = remapCols([]Expr{cond}, inCols, src.Columns())[0]
			}
			src = &FilterNode{Input: src, Pred: cond}
		}
		cols := outCols
		if i > 0 {
			cols = make([]Column, len(outCols))
			for j, c := range outCols {
				cols[j] = b.newCol(c.Name, c.Type, c.Nullable)
			}
		}
		p := &ProjectNode{Input: src, Exprs: exprs, Cols: cols}
		if node == nil {
			node = p
		} else {
			node = &SetOpNode{Kind: Union, All: true, Left: node, Right: p, Cols: b.freshCols(outCols)}
			outCols = node.Columns()
		}
	}
	return b.tvfScope(f, qual, node)
}

// bindSession binds a batch SESSION TVF: per partition, rows (of non-NULL
// ts) ordered by ts are in one session while each follows the one before
// by at most gap microseconds; a session is [its first ts, its last ts +
// gap).
// It numbers the sessions with window functions: a row starts one when
// the previous row of its partition is more than gap before it, a
// running sum of these starts is the session's number, and min/max of ts
// over (partition, number) bound it. The streaming
// stream.SessionAggregate forms the same sessions.
func (b *binder) bindSession(pos sql.Pos, in Node, ts *ColRef, parts []*ColRef, gap int64) Node {
	inCols := in.Columns()
	partExprs := make([]Expr, len(parts))
	for i, p := range parts {
		partExprs[i] = p
	}
	order := []SortKey{{Expr: ts}}
	gapIv := &Const{Value: scalar.NewMonthDayNanoIntervalScalar(arrow.MonthDayNanoInterval{Nanoseconds: gap * 1e3})}
	window := func(input Node, parts []Expr, order []SortKey, fn string, arg Expr) (*WindowNode, Expr) {
		typ, err := resolveWindow(fn, []arrow.DataType{arg.Type()})
		if err != nil {
			b.fail(pos, "%v", err)
		}
		c := b.newCol("_session_"+fn, typ, true)
		return &WindowNode{Input: input, PartitionBy: parts, OrderBy: order, Funcs: []WindowFunc{{Fn: fn, Args: []Expr{arg}, Col: c}}}, colRef(c)
	}
	valid := &FilterNode{Input: in, Pred: b.call(pos, "not", b.call(pos, "is_null", ts))}
	prevNode, prev := window(valid, partExprs, order, "lag", ts)
	starts := &Case{Whens: []CaseWhen{{
		Cond: b.call(pos, "or", b.call(pos, "is_null", prev), b.call(pos, "greater", ts, b.call(pos, "add", prev, gapIv))),
		Then: int64Const(1),
	}}, Else: int64Const(0), Typ: arrow.PrimitiveTypes.Int64}
	startCol := b.newCol("_session_starts", arrow.PrimitiveTypes.Int64, false)
	flagged := &ProjectNode{Input: prevNode, Exprs: []Expr{starts}, Cols: []Column{startCol}}
	for _, c := range prevNode.Columns() {
		flagged.Exprs = append(flagged.Exprs, colRef(c))
		flagged.Cols = append(flagged.Cols, c)
	}
	// The default frame (RANGE to the current row) gives rows tied on ts
	// one number: only the first of them can start a session.
	numbered, number := window(flagged, partExprs, order, "sum", colRef(startCol))
	sessionParts := append(slices.Clone(partExprs), number)
	firstNode, first := window(numbered, sessionParts, nil, "min", ts)
	lastNode, last := window(firstNode, sessionParts, nil, "max", ts)
	exprs := make([]Expr, 0, len(inCols)+3)
	for _, c := range inCols {
		exprs = append(exprs, colRef(c))
	}
	end := b.call(pos, "add", last, gapIv)
	exprs = append(exprs, first, end, b.call(pos, "subtract", end, &Const{Value: scalar.NewMonthDayNanoIntervalScalar(arrow.MonthDayNanoInterval{Nanoseconds: 1e6})}))
	cols := make([]Column, 0, len(exprs))
	for _, c := range inCols {
		cols = append(cols, b.newCol(c.Name, c.Type, c.Nullable))
	}
	for _, n := range []string{"window_start", "window_end", "window_time"} {
		cols = append(cols, b.newCol(n, ts.Typ, true))
	}
	return &ProjectNode{Input: lastNode, Exprs: exprs, Cols: cols}
}

// tvfScope is the scope of a window TVF's result node.
func (b *binder) tvfScope(f *sql.TableFunc, qual string, node Node) (Node, *scope) {
	if f.ColAliases != nil {
		return node, b.aliasScope(node, qual, f.ColAliases, f.Pos)
	}
	s := &scope{}
	for _, c := range node.Columns() {
		s.cols = append(s.cols, scopeCol{qual: qual, name: c.Name, col: c})
	}
	return node, s
}

func (b *binder) freshCols(cols []Column) []Column {
	out := make([]Column, len(cols))
	for i, c := range cols {
		out[i] = b.newCol(c.Name, c.Type, c.Nullable)
	}
	return out
}

// remapCols rewrites references to from[i] as references to to[i].
func remapCols(es []Expr, from, to []Column) []Expr {
	m := map[ColumnID]Expr{}
	for i, c := range from {
		m[c.ID] = colRef(to[i])
	}
	out := make([]Expr, len(es))
	for i, e := range es {
		out[i] = substitute(e, m)
	}
	return out
}

// intervalMicros is a day-time interval in microseconds; ok is false past
// int64 (about 292,000 years), where multiplying out wrapped: INTERVAL
// '213503983' DAY became 16 hours.
func intervalMicros(iv arrow.MonthDayNanoInterval) (int64, bool) {
	const dayMicros = 86_400_000_000
	d, n := int64(iv.Days), iv.Nanoseconds/1e3
	if d > (math.MaxInt64-max(n, 0))/dayMicros || d < (math.MinInt64-min(n, 0))/dayMicros {
		return 0, false
	}
	return d*dayMicros + n, true
}
