package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/vectorized"
)

// FrameBoundKind is the kind of one end of a window frame.
type FrameBoundKind int

// Frame bound kinds.
const (
	UnboundedPreceding FrameBoundKind = iota
	Preceding
	CurrentRow
	Following
	UnboundedFollowing
)

// FrameBound is one end of a frame; Offset is used by Preceding/Following.
type FrameBound struct {
	Kind   FrameBoundKind
	Offset int64
}

// Frame is a window frame. Rows selects ROWS (physical offsets); otherwise
// RANGE, where CURRENT ROW includes the row's peers and offsets apply to the
// value of the single ORDER BY key, which must then be an integer, date
// (days) or timestamp (in its unit).
type Frame struct {
	Rows       bool
	Start, End FrameBound
}

// WindowFunc is one window function: row_number rank dense_rank
// percent_rank cume_dist ntile lag lead first_value last_value nth_value,
// or any aggregate of ResolveAggregate (not DISTINCT). Frame nil means the
// SQL default: RANGE UNBOUNDED PRECEDING to CURRENT ROW with ORDER BY, the
// whole partition without.
type WindowFunc struct {
	Func  string
	Args  []Expr
	Frame *Frame
	Name  string
}

// ResolveWindow returns the result type of a window function.
func ResolveWindow(name string, argTypes []arrow.DataType) (arrow.DataType, error) {
	switch strings.ToLower(name) {
	case "row_number", "rank", "dense_rank":
		return i64Type, nil
	case "percent_rank", "cume_dist":
		return f64Type, nil
	case "ntile":
		if len(argTypes) != 1 || !vectorized.IsInteger(argTypes[0]) {
			return nil, fmt.Errorf("%w: ntile takes one integer argument", ErrInvalid)
		}
		return i64Type, nil
	case "lag", "lead":
		if len(argTypes) < 1 || len(argTypes) > 3 || len(argTypes) >= 2 && !vectorized.IsInteger(argTypes[1]) {
			return nil, fmt.Errorf("%w: %s(value [, offset [, default]])", ErrInvalid, name)
		}
		if len(argTypes) == 3 {
			if t, ok := CommonType(argTypes[0], argTypes[2]); !ok || !arrow.TypeEqual(t, argTypes[0]) {
				return nil, fmt.Errorf("%w: %s default of type %s does not fit %s", ErrInvalid, name, argTypes[2], argTypes[0])
			}
		}
		return argTypes[0], nil
	case "first_value", "last_value":
		if len(argTypes) != 1 {
			return nil, fmt.Errorf("%w: %s takes one argument", ErrInvalid, name)
		}
		return argTypes[0], nil
	case "nth_value":
		if len(argTypes) != 2 || !vectorized.IsInteger(argTypes[1]) {
			return nil, fmt.Errorf("%w: nth_value(value, n)", ErrInvalid)
		}
		return argTypes[0], nil
	}
	return ResolveAggregate(name, argTypes)
}

type windowOp struct {
	ec        *Context
	child     Operator
	partition []Expr
	order     []SortKey
	funcs     []WindowFunc
	types     []arrow.DataType
	schema    *arrow.Schema
	opened    bool
	out       batchesOp

	// Past the memory budget the input is sorted on disk and merger reads
	// it back in order. pending holds the rows read and not yet computed;
	// carry is the state of a partition that an earlier chunk began.
	merger  *runMerger
	mem     memAccount // the sorted input in memory, or the pending rows
	pending []arrow.RecordBatch
	held    int64
	// retry is what held must pass before the next try to cut a chunk,
	// after one that could not (a peer group or lookahead spanning the
	// pending rows): it doubles, up to the budget, so that such rows are
	// not concatenated and scanned again for every batch read.
	retry int64
	carry *windowCarry
	eof   bool
	// halo is how many rows at the start of pending an earlier chunk
	// already output: kept for functions that look back (lag, frames), and
	// at least one to tell whether the carried partition goes on.
	halo int
	// big is set while a partition larger than the budget whose functions
	// need its size or totals is read back from disk (the second pass).
	big *bigPartition
}

// bigPartition is the second pass over one partition: its rows on disk,
// and the rows after it that the first pass read.
type bigPartition struct {
	src  BatchSource
	rest arrow.RecordBatch
}

// windowCarry is what a partition computed in several chunks carries from
// one chunk to the next: its rows and peer groups so far, and per function
// the running aggregate after its last row or its first value (first_value
// from the partition start), else nil. In a second pass it also knows the
// partition's size and, per whole-partition aggregate, its one-row result.
type windowCarry struct {
	rows, dense int64
	accs        []accumulator
	firsts      []arrow.Array
	n           int64
	totals      []arrow.Array
}

// setCarry replaces w.carry, releasing its arrays (next holds its own
// references).
func (w *windowOp) setCarry(next *windowCarry) {
	if w.carry != nil {
		releaseArrays(w.carry.totals)
		releaseArrays(w.carry.firsts)
	}
	w.carry = next
}

// retainArrays returns a copy of as with each array retained.
func retainArrays(as []arrow.Array) []arrow.Array {
	out := append([]arrow.Array(nil), as...)
	for _, a := range out {
		if a != nil {
			a.Retain()
		}
	}
	return out
}

// NewWindow computes funcs over partitions of its input ordered by orderBy.
// Output: the input columns then one column per function, rows grouped by
// partition and ordered within it. Past Context.MemoryLimit the input is
// sorted on disk and computed a few partitions at a time. A partition
// larger than a quarter of the budget is computed in chunks: functions that
// look back to its start carry their state (row_number, rank, dense_rank,
// and aggregates, first_value and last_value from UNBOUNDED PRECEDING to
// CURRENT ROW), functions that look a constant number of rows around
// overlap the chunks (lag and lead with a constant offset, ROWS frames
// with offsets), and functions that need its size or totals (percent_rank,
// cume_dist, ntile, aggregates over the whole partition) read it from disk
// after a first pass. Others fail with ErrMemoryLimit: frames reaching
// UNBOUNDED FOLLOWING (but aggregates over the whole partition), RANGE
// offsets, frames from UNBOUNDED PRECEDING to a following row, nth_value
// from UNBOUNDED PRECEDING, lag/lead with a varying offset.
func NewWindow(ec *Context, child Operator, partitionBy []Expr, orderBy []SortKey, funcs []WindowFunc) (Operator, error) {
	w := &windowOp{ec: ec, child: child, partition: partitionBy, order: orderBy, funcs: funcs}
	fields := append([]arrow.Field(nil), child.Schema().Fields()...)
	for _, f := range funcs {
		types := make([]arrow.DataType, len(f.Args))
		for i, a := range f.Args {
			types[i] = a.DataType()
		}
		t, err := ResolveWindow(f.Func, types)
		if err != nil {
			return nil, err
		}
		if fr := f.Frame; fr != nil {
			if !fr.Rows && (fr.Start.Kind == Preceding || fr.Start.Kind == Following || fr.End.Kind == Preceding || fr.End.Kind == Following) &&
				(len(orderBy) != 1 || !vectorized.IsIntKeyType(orderBy[0].Expr.DataType())) {
				return nil, fmt.Errorf("%w: RANGE frames with offsets need one integer, date or timestamp ORDER BY key", ErrNotImplemented)
			}
			if fr.Start.Kind == UnboundedFollowing || fr.End.Kind == UnboundedPreceding || fr.Start.Kind > fr.End.Kind {
				return nil, fmt.Errorf("%w: window frame of %s starts after it ends", ErrInvalid, f.Func)
			}
			if fr.Start.Offset < 0 || fr.End.Offset < 0 {
				return nil, fmt.Errorf("%w: negative window frame offset", ErrInvalid)
			}
		}
		w.types = append(w.types, t)
		name := f.Name
		if name == "" {
			name = f.Func
		}
		fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: true})
	}
	w.schema = arrow.NewSchema(fields, nil)
	w.out.schema = w.schema
	return w, nil
}

func (w *windowOp) Schema() *arrow.Schema { return w.schema }

// sortKeys orders rows by partition, then by the ORDER BY keys.
func (w *windowOp) sortKeys() []SortKey {
	keys := make([]SortKey, 0, len(w.partition)+len(w.order))
	for _, p := range w.partition {
		keys = append(keys, SortKey{Expr: p, NullsFirst: true})
	}
	return append(keys, w.order...)
}

func (w *windowOp) Open(ctx context.Context) error {
	if w.opened {
		return nil
	}
	w.opened = true
	if err := w.child.Open(ctx); err != nil {
		return err
	}
	keys := w.sortKeys()
	sorter := &sortOp{ec: w.ec, child: w.child, keys: keys, count: -1}
	t, merger, err := sorter.externalSort(ctx, nil)
	w.mem = sorter.mem
	if err != nil || merger != nil {
		w.merger = merger
		return err
	}
	defer t.release()
	// The rows are copied once more in order: reserve both copies.
	if n := 2 * t.bytes(); !w.mem.reservation(w.ec).TryResize(n) {
		return w.mem.r.poolError("a window's sorted input", n)
	}
	if t.n == 0 {
		return nil
	}
	idx, err := sortedIndices(t, keys)
	if err != nil {
		return err
	}
	cols, err := vectorized.TakeColumns(ctx, w.ec.Mem, t.cols, idx)
	if err != nil {
		return err
	}
	defer releaseArrays(cols)
	skeys, err := vectorized.TakeColumns(ctx, w.ec.Mem, t.keys, idx)
	if err != nil {
		return err
	}
	defer releaseArrays(skeys)
	return w.compute(ctx, cols, skeys, t.n, 0, t.n, false)
}

// compute computes the functions over n sorted rows (cols, with the sort
// keys skeys) and queues the result of rows [lo, hi): rows before lo are
// w.halo, rows from hi on are lookahead. The first partition continues
// w.carry if set; with cont the last partition continues in the next
// chunk, and w.carry becomes its state after row hi-1.
func (w *windowOp) compute(ctx context.Context, cols, skeys []arrow.Array, n, lo, hi int, cont bool) error {
	sorted := array.NewRecordBatch(w.child.Schema(), cols, int64(n))
	defer sorted.Release()
	np := len(w.partition)
	changed := make([]bool, n)
	parts, err := runStarts(skeys[:np], changed)
	if err != nil {
		return err
	}
	peers, err := runStarts(skeys[np:], changed)
	if err != nil {
		return err
	}
	env := &windowEnv{ec: w.ec, n: n, partStart: parts, peerStart: peers, hasOrder: len(w.order) > 0, carry: w.carry, halo: lo}
	env.index()
	if len(w.order) == 1 {
		ok := skeys[np]
		if get, isInt := vectorized.IntKey(ok); isInt {
			env.okey, env.onull, env.odesc = make([]int64, n), make([]bool, n), w.order[0].Descending
			for r := 0; r < n; r++ {
				env.onull[r] = ok.IsNull(r)
				env.okey[r] = get(r)
			}
		}
	}
	var next *windowCarry
	if cont {
		next = &windowCarry{rows: env.before(hi-1) + int64(hi), dense: env.denseBefore(hi-1) + int64(env.dense[hi-1]),
			accs: make([]accumulator, len(w.funcs)), firsts: make([]arrow.Array, len(w.funcs))}
		if w.carry != nil {
			next.n, next.totals = w.carry.n, retainArrays(w.carry.totals)
		}
	}
	out := append([]arrow.Array(nil), cols...)
	for _, c := range cols {
		c.Retain()
	}
	defer func() { releaseArrays(out) }()
	// fail drops what the functions before a failing one carried for the
	// next chunk.
	fail := func(err error) error {
		if next != nil {
			releaseArrays(next.totals)
			releaseArrays(next.firsts)
		}
		return err
	}
	for i, f := range w.funcs {
		args, err := evalAll(ctx, w.ec, f.Args, sorted)
		if err != nil {
			return fail(err)
		}
		a, err := env.compute(ctx, i, f, w.types[i], args, hi, next)
		releaseArrays(args)
		if err != nil {
			return fail(fmt.Errorf("window %s: %w", f.Func, err))
		}
		out = append(out, a)
	}
	w.setCarry(next)
	all := array.NewRecordBatch(w.schema, out, int64(n))
	defer all.Release()
	res := all.NewSlice(int64(lo), int64(hi))
	defer res.Release()
	bs := int64(w.ec.batchSize())
	for lo := int64(0); lo < res.NumRows(); lo += bs {
		w.out.batches = append(w.out.batches, res.NewSlice(lo, min(lo+bs, res.NumRows())))
	}
	return nil
}

// chunkNeeds is what computing one partition in chunks needs: chunks that
// end at a peer group boundary, the partition's size or totals first, and
// how many rows before and after a chunk its functions look at.
type chunkNeeds struct {
	peers, totals bool
	behind, ahead int
}

// streamable returns what computing one partition in chunks needs, or
// ErrMemoryLimit if a function needs the whole partition's rows.
func (w *windowOp) streamable() (chunkNeeds, error) {
	var c chunkNeeds
	for _, f := range w.funcs {
		name := strings.ToLower(f.Func)
		fr := f.Frame
		behind, ahead, bounded := frameReach(f)
		switch {
		case name == "row_number":
		case name == "rank" || name == "dense_rank":
			c.peers = true
		case name == "percent_rank" || name == "cume_dist":
			c.peers, c.totals = true, true
		case name == "ntile":
			c.totals = true
		case w.wholePartition(f):
			c.totals = true
		case running(f, len(w.order) > 0) && (isWindowAggregate(name) || name == "first_value" || name == "last_value"):
			// RANGE: CURRENT ROW takes in its peers.
			c.peers = c.peers || (fr == nil || !fr.Rows) && name != "first_value"
		case bounded:
			c.behind, c.ahead = max(c.behind, behind), max(c.ahead, ahead)
		default:
			return c, fmt.Errorf("%w: window %s over a partition larger than the query memory budget (%d bytes) would need the whole partition in memory",
				ErrMemoryLimit, f.Func, w.ec.MemoryLimit)
		}
	}
	return c, nil
}

// running reports whether f's frame runs from the partition start to the
// current row (the SQL default with ORDER BY).
func running(f WindowFunc, hasOrder bool) bool {
	fr := f.Frame
	return fr == nil && hasOrder || fr != nil && fr.Start.Kind == UnboundedPreceding && fr.End.Kind == CurrentRow
}

// frameReach returns how many rows before and after a row f looks at when
// that is a constant: lag and lead with a constant offset, and ROWS frames
// with offsets or CURRENT ROW at both ends.
func frameReach(f WindowFunc) (behind, ahead int, ok bool) {
	switch name := strings.ToLower(f.Func); name {
	case "lag", "lead":
		o := int64(1)
		if len(f.Args) >= 2 {
			l, isLit := f.Args[1].(*LiteralExpr)
			if !isLit || !l.Value.IsValid() {
				return 0, 0, false
			}
			v, err := l.Value.CastTo(i64Type)
			if err != nil {
				return 0, 0, false
			}
			o = v.(*scalar.Int64).Value
		}
		if name == "lag" {
			o = -o
		}
		if o < -(1<<20) || o > 1<<20 {
			return 0, 0, false
		}
		return int(max(-o, 0)), int(max(o, 0)), true
	case "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile":
		return 0, 0, false
	}
	fr := f.Frame
	if fr == nil || !fr.Rows {
		return 0, 0, false
	}
	for _, b := range []FrameBound{fr.Start, fr.End} {
		switch {
		case b.Kind == CurrentRow:
		case (b.Kind == Preceding || b.Kind == Following) && b.Offset <= 1<<20:
			if b.Kind == Preceding {
				behind = max(behind, int(b.Offset))
			} else {
				ahead = max(ahead, int(b.Offset))
			}
		default:
			return 0, 0, false
		}
	}
	return behind, ahead, true
}

// wholePartition reports whether f is an aggregate over its whole
// partition.
func (w *windowOp) wholePartition(f WindowFunc) bool {
	fr := f.Frame
	return isWindowAggregate(strings.ToLower(f.Func)) &&
		(fr == nil && len(w.order) == 0 || fr != nil && fr.Start.Kind == UnboundedPreceding && fr.End.Kind == UnboundedFollowing)
}

func isWindowAggregate(name string) bool {
	switch name {
	case "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value":
		return false
	}
	return true
}

// readChunk reads the sorted input until it can compute a chunk: the
// complete partitions read once they pass a quarter of the budget, or a
// partition that alone passes it up to its last chunk boundary (a peer
// group's end, lookahead rows before the end).
func (w *windowOp) readChunk(ctx context.Context) error {
	for {
		var b arrow.RecordBatch
		var err error
		if w.big != nil {
			b, err = w.big.src.Next(ctx)
		} else {
			b, err = w.merger.next(ctx)
		}
		if errors.Is(err, io.EOF) {
			w.eof, w.retry = w.big == nil, 0
			if _, err := w.computePending(ctx, true); err != nil {
				return err
			}
			w.endBig()
			return nil
		}
		if err != nil {
			return err
		}
		b.Retain()
		w.pending = append(w.pending, b)
		w.held += batchBytes(b)
		limit := w.ec.MemoryLimit
		if limit <= 0 {
			limit = math.MaxInt64 // only the pool bounds it
		}
		if w.held <= max(limit/4, w.retry) && w.mem.reservation(w.ec).TryResize(w.held) {
			continue
		}
		done, err := w.computePending(ctx, false)
		if err != nil || done {
			w.retry = 0
			return err
		}
		if w.held > limit {
			return fmt.Errorf("%w: a window peer group or frame is larger than the query memory budget (%d bytes)", ErrMemoryLimit, w.ec.MemoryLimit)
		}
		if !w.mem.reservation(w.ec).TryResize(w.held) {
			return w.mem.r.poolError("a window peer group or frame", w.held)
		}
		w.retry = min(2*w.held, limit)
	}
}

// endBig ends a second pass, if any: the rows after the partition become
// pending.
func (w *windowOp) endBig() {
	if w.big == nil {
		return
	}
	w.big.src.Close()
	if r := w.big.rest; r != nil {
		w.pending, w.held = []arrow.RecordBatch{r}, batchBytes(r)
	}
	w.big = nil
}

// firstPass writes the partition that all begins to disk, reading the
// merged input up to its end, and computes its size and the whole-partition
// aggregates; the second pass then reads it back.
func (w *windowOp) firstPass(ctx context.Context, all arrow.RecordBatch, skeys []arrow.Array) error {
	f, err := newSpillFile(w.ec, w.child.Schema())
	if err != nil {
		return err
	}
	big := &bigPartition{src: f.source()}
	accs := make([]accumulator, len(w.funcs))
	var totals []arrow.Array
	ok := false
	defer func() {
		if !ok {
			big.src.Close()
			if big.rest != nil {
				big.rest.Release()
			}
			releaseArrays(totals)
		}
	}()
	for i, fn := range w.funcs {
		if w.wholePartition(fn) {
			def, err := resolveAgg(fn.Func, argTypes(fn.Args), fn.Args)
			if err != nil {
				return err
			}
			accs[i] = def.make()
			accs[i].grow(1)
		}
	}
	feed := func(b arrow.RecordBatch) error {
		if err := f.write(b); err != nil {
			return err
		}
		groups := make([]uint32, b.NumRows())
		for i, acc := range accs {
			if acc == nil {
				continue
			}
			args, err := evalAll(ctx, w.ec, w.funcs[i].Args, b)
			if err != nil {
				return err
			}
			if len(args) == 0 { // count_star: any column of the right length
				args = []arrow.Array{vectorized.NullArray(w.ec.Mem, arrow.Null, len(groups))}
			}
			err = acc.update(groups, args, nil)
			releaseArrays(args)
			if err != nil {
				return fmt.Errorf("window %s: %w", w.funcs[i].Func, err)
			}
		}
		return nil
	}
	if err := feed(all); err != nil {
		return err
	}
	np := len(w.partition)
	key := sliceArrays(skeys[:np], 0, 1)
	defer releaseArrays(key)
	for big.rest == nil {
		b, err := w.merger.next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		pk, err := evalAll(ctx, w.ec, w.partition, b)
		if err != nil {
			return err
		}
		n, end := int(b.NumRows()), 0
		for end < n {
			same, err := sameKey(key, 0, pk, end)
			if err != nil {
				releaseArrays(pk)
				return err
			}
			if !same {
				break
			}
			end++
		}
		releaseArrays(pk)
		if end < n {
			big.rest = b.NewSlice(int64(end), int64(n))
			b = b.NewSlice(0, int64(end))
			defer b.Release()
		}
		if err := feed(b); err != nil {
			return err
		}
	}
	if err := f.finish(); err != nil {
		return err
	}
	totals = make([]arrow.Array, len(w.funcs))
	for i, acc := range accs {
		if acc != nil {
			if totals[i], err = acc.result(w.ec.Mem, 1); err != nil {
				return err
			}
		}
	}
	ok = true
	w.big = big
	w.setCarry(&windowCarry{n: f.rows, totals: totals, accs: make([]accumulator, len(w.funcs))})
	return nil
}

func argTypes(args []Expr) []arrow.DataType {
	types := make([]arrow.DataType, len(args))
	for i, a := range args {
		types[i] = a.DataType()
	}
	return types
}

// computePending computes the pending rows (final: all of them) and keeps
// the rest pending; it reports false when no chunk could be cut.
func (w *windowOp) computePending(ctx context.Context, final bool) (bool, error) {
	if len(w.pending) == 0 {
		return true, nil
	}
	schema := w.child.Schema()
	cols, err := concatColumns(w.ec, schema, w.pending, nil)
	if err != nil {
		return false, err
	}
	defer releaseArrays(cols)
	releaseBatches(w.pending)
	w.pending, w.held = nil, 0
	all := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
	defer all.Release()
	n := int(all.NumRows())
	skeys, err := evalAll(ctx, w.ec, sortExprs(w.sortKeys()), all)
	if err != nil {
		return false, err
	}
	defer releaseArrays(skeys)
	// Rows [h, cut) are output; the rest stays pending.
	h, cut, cont, keep := w.halo, n, false, 0
	if h > 0 && h < n {
		if same, err := sameKey(skeys[:len(w.partition)], h-1, skeys[:len(w.partition)], h); err != nil || !same {
			if err != nil {
				return false, err
			}
			// The carried partition ended with the halo: drop both.
			rest := all.NewSlice(int64(h), int64(n))
			w.pending, w.held, w.halo = []arrow.RecordBatch{rest}, batchBytes(rest), 0
			w.setCarry(nil)
			return w.computePending(ctx, final)
		}
	}
	if !final {
		parts, err := boundaries(skeys[:len(w.partition)], n)
		if err != nil {
			return false, err
		}
		if cut = parts[len(parts)-1]; cut == 0 {
			// One partition past a quarter of the budget: computed in
			// chunks, carrying its state.
			needs, err := w.streamable()
			if err != nil {
				return false, err
			}
			if needs.totals && (w.carry == nil || w.carry.n == 0) {
				return false, w.firstPass(ctx, all, skeys)
			}
			cut, cont = n-needs.ahead, true
			if needs.peers {
				pb, err := boundaries(skeys, n)
				if err != nil {
					return false, err
				}
				i := len(pb) - 1
				for i > 0 && pb[i] > cut {
					i--
				}
				cut = pb[i]
			}
			// At least one row stays: the next chunk checks against it
			// whether the partition goes on.
			keep = min(max(needs.behind, 1), cut)
		}
	}
	if cut > h {
		m := cut // rows the functions see
		if cont {
			m = n
		}
		head, hkeys := sliceArrays(cols, 0, m), sliceArrays(skeys, 0, m)
		err := w.compute(ctx, head, hkeys, m, h, cut, cont)
		releaseArrays(head)
		releaseArrays(hkeys)
		if err != nil {
			return false, err
		}
	}
	if final {
		w.halo = 0
		w.setCarry(nil)
		return true, nil
	}
	if cut <= h {
		// Nothing new to output yet: everything stays pending.
		cut, keep = h, h
	}
	w.halo = keep
	if from := cut - keep; from < n {
		// Copy the rest so that the computed rows' buffers can go.
		rest := all.NewSlice(int64(from), int64(n))
		defer rest.Release()
		kept, err := concatColumns(w.ec, schema, []arrow.RecordBatch{rest}, nil)
		if err != nil {
			return false, err
		}
		b := array.NewRecordBatch(schema, kept, int64(n-from))
		releaseArrays(kept)
		w.pending, w.held = []arrow.RecordBatch{b}, batchBytes(b)
	}
	return cut > h, nil
}

func sliceArrays(cols []arrow.Array, lo, hi int) []arrow.Array {
	out := make([]arrow.Array, len(cols))
	for i, c := range cols {
		out[i] = array.NewSlice(c, int64(lo), int64(hi))
	}
	return out
}

// boundaries returns the rows where the key columns change (including 0).
func boundaries(keys []arrow.Array, n int) ([]int, error) {
	return runStarts(keys, make([]bool, n))
}

// runStarts marks in changed the rows whose keys differ from the row
// before, and returns the first row of each run no mark so far splits.
func runStarts(keys []arrow.Array, changed []bool) ([]int, error) {
	for _, k := range keys {
		if err := vectorized.MarkChanges(k, changed); err != nil {
			return nil, err
		}
	}
	out := []int{0}
	for i := 1; i < len(changed); i++ {
		if changed[i] {
			out = append(out, i)
		}
	}
	return out, nil
}

// windowEnv holds partition and peer-group extents of the sorted rows.
type windowEnv struct {
	ec                   *Context
	n                    int
	partStart, peerStart []int
	hasOrder             bool
	// Per row: partition [ps, pe), peer group [gs, ge), peer group ordinal
	// within the partition.
	ps, pe, gs, ge, dense []int
	// The single integer ORDER BY key, for RANGE frames with offsets.
	okey  []int64
	onull []bool
	odesc bool
	// carry continues the first partition from an earlier chunk (nil: it
	// starts here), whose last halo rows come first again.
	carry *windowCarry
	halo  int
}

// before returns how many rows of row r's partition come before these rows.
func (e *windowEnv) before(r int) int64 {
	if e.carry == nil || e.ps[r] > 0 {
		return 0
	}
	return e.carry.rows - int64(e.halo)
}

// size returns the size of row r's partition.
func (e *windowEnv) size(r int) int64 {
	if e.carry != nil && e.carry.n > 0 && e.ps[r] == 0 {
		return e.carry.n
	}
	return int64(e.pe[r] - e.ps[r])
}

// denseBefore returns how many peer groups of row r's partition come
// before these rows (chunks end at peer group boundaries when it matters).
func (e *windowEnv) denseBefore(r int) int64 {
	if e.carry == nil || e.ps[r] > 0 {
		return 0
	}
	if e.halo > 0 {
		return e.carry.dense - int64(e.dense[e.halo-1])
	}
	return e.carry.dense
}

// rangeBound finds, for RANGE offset frames, the first row of r's partition
// whose order key is past v + delta in sort order (strictly past when
// inclusive is false, i.e. for an end bound).
func (e *windowEnv) rangeBound(r int, delta int64, end bool) int {
	ps, pe := e.ps[r], e.pe[r]
	v := e.okey[r]
	target := v + delta
	if (delta > 0 && target < v) || (delta < 0 && target > v) {
		// Saturate on overflow: the bound is past every row.
		if (delta > 0) != e.odesc {
			return pe
		}
		return ps
	}
	// Non-NULL keys are contiguous within the partition (NULLs sort to one
	// end); search among them.
	lo, hi := ps, pe
	for lo < hi && e.onull[lo] {
		lo++
	}
	for hi > lo && e.onull[hi-1] {
		hi--
	}
	before := func(k int64) bool { // k comes before target in sort order
		if e.odesc {
			return k > target || (end && k == target)
		}
		return k < target || (end && k == target)
	}
	return lo + sort.Search(hi-lo, func(i int) bool { return !before(e.okey[lo+i]) })
}

func (e *windowEnv) index() {
	e.ps, e.pe = make([]int, e.n), make([]int, e.n)
	e.gs, e.ge, e.dense = make([]int, e.n), make([]int, e.n), make([]int, e.n)
	fill := func(starts []int, lo, hi []int) {
		for k, s := range starts {
			end := e.n
			if k+1 < len(starts) {
				end = starts[k+1]
			}
			for r := s; r < end; r++ {
				lo[r], hi[r] = s, end
			}
		}
	}
	fill(e.partStart, e.ps, e.pe)
	fill(e.peerStart, e.gs, e.ge)
	for r := 0; r < e.n; r++ {
		switch {
		case r == e.ps[r]:
			e.dense[r] = 1
		case r == e.gs[r]:
			e.dense[r] = e.dense[r-1] + 1
		default:
			e.dense[r] = e.dense[r-1]
		}
	}
}

// frame returns row r's frame [lo, hi).
func (e *windowEnv) frame(f *Frame, r int) (int, int) {
	ps, pe := e.ps[r], e.pe[r]
	if f == nil {
		if e.hasOrder {
			return ps, e.ge[r]
		}
		return ps, pe
	}
	bound := func(b FrameBound, start bool) int {
		switch b.Kind {
		case UnboundedPreceding:
			return ps
		case UnboundedFollowing:
			return pe
		case CurrentRow:
			if f.Rows {
				if start {
					return r
				}
				return r + 1
			}
			if start {
				return e.gs[r]
			}
			return e.ge[r]
		case Preceding, Following:
			if !f.Rows {
				if e.onull[r] {
					// A NULL key's RANGE offset frame is its NULL peers.
					if start {
						return e.gs[r]
					}
					return e.ge[r]
				}
				delta := b.Offset
				if b.Kind == Preceding {
					delta = -delta
				}
				if e.odesc {
					delta = -delta
				}
				return e.rangeBound(r, delta, !start)
			}
		}
		if b.Kind == Preceding {
			x := r - int(min(b.Offset, int64(e.n)))
			if !start {
				x++
			}
			return max(x, ps)
		}
		x := r + int(min(b.Offset, int64(e.n)))
		if !start {
			x++
		}
		return min(x, pe)
	}
	lo, hi := bound(f.Start, true), bound(f.End, false)
	lo, hi = min(max(lo, ps), pe), min(max(hi, ps), pe)
	return lo, max(lo, hi)
}

func (e *windowEnv) ints(f func(r int) int64) arrow.Array {
	out := vectorized.NewFixedOut[int64](e.ec.Mem, e.n)
	for r := range out.Vals {
		out.Vals[r] = f(r)
	}
	return out.Finish(i64Type, nil, 0)
}

// compute computes function i; with next set (the last partition continues
// in the next chunk) it saves an aggregate's running state after row hi-1
// there.
func (e *windowEnv) compute(ctx context.Context, i int, f WindowFunc, typ arrow.DataType, args []arrow.Array, hi int, next *windowCarry) (arrow.Array, error) {
	switch strings.ToLower(f.Func) {
	case "row_number":
		return e.ints(func(r int) int64 { return int64(r-e.ps[r]+1) + e.before(r) }), nil
	case "rank":
		return e.ints(func(r int) int64 { return int64(e.gs[r]-e.ps[r]+1) + e.before(r) }), nil
	case "dense_rank":
		return e.ints(func(r int) int64 { return int64(e.dense[r]) + e.denseBefore(r) }), nil
	case "percent_rank", "cume_dist":
		cume := strings.ToLower(f.Func) == "cume_dist"
		out := vectorized.NewFixedOut[float64](e.ec.Mem, e.n)
		for r := range out.Vals {
			n, before := float64(e.size(r)), float64(e.before(r))
			switch {
			case cume:
				out.Vals[r] = (float64(e.ge[r]-e.ps[r]) + before) / n
			case n > 1:
				out.Vals[r] = (float64(e.gs[r]-e.ps[r]) + before) / (n - 1)
			default:
				out.Vals[r] = 0
			}
		}
		return out.Finish(f64Type, nil, 0), nil
	case "ntile":
		k := int64View(args[0])
		for r := 0; r < e.n; r++ {
			if args[0].IsNull(r) || k(r) <= 0 {
				return nil, fmt.Errorf("%w: ntile bucket count must be a positive integer", ErrInvalid)
			}
		}
		return e.ints(func(r int) int64 {
			n, b, i := e.size(r), k(r), int64(r-e.ps[r])+e.before(r)
			size, rem := n/b, n%b
			if size == 0 {
				return i + 1
			}
			if i < rem*(size+1) {
				return i/(size+1) + 1
			}
			return rem + (i-rem*(size+1))/size + 1
		}), nil
	case "lag", "lead":
		sign := int64(-1)
		if strings.ToLower(f.Func) == "lead" {
			sign = 1
		}
		var off func(int) int64
		if len(args) >= 2 {
			off = int64View(args[1])
		}
		idx := make([]int64, e.n)
		useDefault := make([]bool, e.n)
		for r := range idx {
			o := int64(1)
			if off != nil {
				if args[1].IsNull(r) {
					idx[r] = -1
					continue
				}
				o = off(r)
			}
			t := int64(r) + sign*o
			if t < int64(e.ps[r]) || t >= int64(e.pe[r]) {
				idx[r], useDefault[r] = -1, len(args) == 3
				continue
			}
			idx[r] = t
		}
		vals, err := vectorized.Take(ctx, e.ec.Mem, args[0], idx)
		if err != nil || len(args) < 3 {
			return vals, err
		}
		defer vals.Release()
		def, err := vectorized.Cast(e.ec.Mem, args[2], typ)
		if err != nil {
			return nil, err
		}
		defer def.Release()
		b := array.NewBuilder(e.ec.Mem, typ)
		defer b.Release()
		for r := 0; r < e.n; r++ {
			if useDefault[r] {
				vectorized.AppendValue(b, def, r)
			} else {
				vectorized.AppendValue(b, vals, r)
			}
		}
		return b.NewArray(), nil
	case "first_value", "last_value", "nth_value":
		name := strings.ToLower(f.Func)
		if name == "nth_value" {
			return e.nthValue(ctx, f, args)
		}
		// FIRST_VALUE and LAST_VALUE skip NULL values, as in Flink: the
		// frame's first or last non-NULL value.
		n := e.n
		nextValid, prevValid := make([]int, n+1), make([]int, n)
		nextValid[n] = n
		for r := n - 1; r >= 0; r-- {
			nextValid[r] = r
			if !args[0].IsValid(r) {
				nextValid[r] = nextValid[r+1]
			}
		}
		for r := range n {
			prevValid[r] = r
			if !args[0].IsValid(r) {
				prevValid[r] = -1
				if r > 0 {
					prevValid[r] = prevValid[r-1]
				}
			}
		}
		src := args[0]
		// A frame from the partition start of a partition an earlier chunk
		// began: the value the earlier rows give (first_value: their first
		// non-NULL value, last_value: their last), carried and appended as
		// row n; NULL if they had none.
		fromStart := f.Frame == nil || f.Frame.Start.Kind == UnboundedPreceding
		var carried arrow.Array
		if fromStart && e.carry != nil && e.carry.firsts != nil {
			carried = e.carry.firsts[i]
		}
		if carried != nil {
			var err error
			if src, err = array.Concatenate([]arrow.Array{args[0], carried}, e.ec.Mem); err != nil {
				return nil, err
			}
			defer src.Release()
		}
		hasCarried := carried != nil && carried.IsValid(0)
		if fromStart && next != nil {
			p := e.ps[hi-1]
			at := nextValid[p] // first_value's
			if name == "last_value" {
				at = prevValid[hi-1]
			}
			switch {
			case at >= p && at < hi && (name == "last_value" || p > 0 || !hasCarried):
				next.firsts[i] = array.NewSlice(args[0], int64(at), int64(at+1))
			case p == 0 && carried != nil:
				carried.Retain()
				next.firsts[i] = carried
			default:
				// None yet: a NULL.
				next.firsts[i] = array.NewSlice(args[0], int64(p), int64(p+1))
			}
		}
		idx := make([]int64, n)
		for r := range idx {
			lo, fhi := e.frame(f.Frame, r)
			idx[r] = -1
			if lo >= fhi {
				continue
			}
			earlier := hasCarried && e.ps[r] == 0 && fromStart
			switch {
			case name == "first_value" && earlier:
				idx[r] = int64(n)
			case name == "first_value" && nextValid[lo] < fhi:
				idx[r] = int64(nextValid[lo])
			case name == "last_value" && prevValid[fhi-1] >= lo:
				idx[r] = int64(prevValid[fhi-1])
			case name == "last_value" && earlier:
				idx[r] = int64(n)
			}
		}
		return vectorized.Take(ctx, e.ec.Mem, src, idx)
	}
	if e.carry != nil && e.carry.totals != nil && e.carry.totals[i] != nil {
		// A second pass over one partition: its total on every row.
		return vectorized.Take(ctx, e.ec.Mem, e.carry.totals[i], make([]int64, e.n))
	}
	return e.aggregate(ctx, i, f, args, hi, next)
}

// nthValue is NTH_VALUE(x, n): the frame's nth row's value, NULL too.
func (e *windowEnv) nthValue(ctx context.Context, f WindowFunc, args []arrow.Array) (arrow.Array, error) {
	nth := int64View(args[1])
	idx := make([]int64, e.n)
	for r := range idx {
		lo, hi := e.frame(f.Frame, r)
		idx[r] = -1
		if lo < hi && args[1].IsValid(r) && nth(r) >= 1 && int64(lo)+nth(r)-1 < int64(hi) {
			idx[r] = int64(lo) + nth(r) - 1
		}
	}
	return vectorized.Take(ctx, e.ec.Mem, args[0], idx)
}

// minWindowHeld is the least a window aggregate's collected values may
// hold (see aggregate).
const minWindowHeld = 64 << 20

// aggregate computes an aggregate over each row's frame, one accumulator
// group per row. Frames that start at the partition start extend a copy of
// the previous row's state, frames that end at the partition end do the
// same backwards, and other frames are folded from scratch.
func (e *windowEnv) aggregate(ctx context.Context, fi int, f WindowFunc, args []arrow.Array, last int, next *windowCarry) (arrow.Array, error) {
	def, err := resolveAgg(f.Func, argTypes(f.Args), f.Args)
	if err != nil {
		return nil, err
	}
	startsAtPart := f.Frame == nil || f.Frame.Start.Kind == UnboundedPreceding
	endsAtPart := f.Frame != nil && f.Frame.End.Kind == UnboundedFollowing
	acc := def.make()
	if startsAtPart && e.carry != nil && e.carry.accs[fi] != nil {
		// A running aggregate: group 0 starts from the state the partition
		// had at the end of the previous chunk.
		acc = e.carry.accs[fi]
	}
	acc.grow(e.n)
	if def.arity == -1 {
		// count_star: feed any column of the right length.
		args = []arrow.Array{vectorized.NullArray(e.ec.Mem, arrow.Null, e.n)}
		defer args[0].Release()
	}
	groups := make([]uint32, 0, 64)
	fed := 0
	// Each row's frame keeps its own copy of the values LISTAGG,
	// ARRAY_AGG and the like collect: over running or sliding frames they
	// hold rows times frame width values (a running LISTAGG of 100-byte
	// strings over 5,000 rows took 2.5 GB), which the budget must bound.
	// A budget small enough to chunk the partition bounds the rows at once,
	// hence the floor. MIN/MAX keep one value per row, as the input does.
	held, _ := acc.(sizedAcc)
	if _, ok := acc.(*minMaxAcc); ok || e.ec.MemoryLimit <= 0 {
		held = nil
	}
	heldLimit := max(e.ec.MemoryLimit, minWindowHeld)
	feed := func(g, lo, hi int) error {
		if lo >= hi {
			return nil
		}
		// A sliding frame folds rows times frame width values (6e11 for a
		// frame of 200,001 rows over 3M): look at ctx between folds so a
		// cancelled query stops.
		if fed += hi - lo; fed >= 1<<16 {
			fed = 0
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		groups = groups[:0]
		for i := lo; i < hi; i++ {
			groups = append(groups, uint32(g))
		}
		sl := make([]arrow.Array, len(args))
		for i, a := range args {
			sl[i] = array.NewSlice(a, int64(lo), int64(hi))
		}
		err := acc.update(groups, sl, nil)
		releaseArrays(sl)
		if err == nil && held != nil && held.bytes() > heldLimit {
			err = fmt.Errorf("%w: the values %s keeps for each row's window frame hold %d bytes, over %d bytes (the query memory budget is %d bytes)", ErrMemoryLimit, f.Func, held.bytes(), heldLimit, e.ec.MemoryLimit)
		}
		return err
	}
	switch {
	case startsAtPart && foldsForward(acc):
		if err := e.runningAggregate(f, acc, args); err != nil {
			return nil, err
		}
	case startsAtPart:
		err := e.eachRunningFrame(f.Frame, func(r int, start runStart, from, hi int) error {
			switch start {
			case fromCarried:
				acc.copyGroup(0, r)
			case fromPrevious:
				acc.copyGroup(r-1, r)
			}
			return feed(r, from, hi)
		})
		if err != nil {
			return nil, err
		}
	case endsAtPart:
		prevLo := 0
		for r := e.n - 1; r >= 0; r-- {
			lo, hi := e.frame(f.Frame, r)
			if r == e.pe[r]-1 {
				prevLo = hi
			} else {
				acc.copyGroup(r+1, r)
			}
			if err := feed(r, lo, min(prevLo, hi)); err != nil {
				return nil, err
			}
			prevLo = min(prevLo, lo)
		}
	case mergeable(acc):
		if err := e.slidingAggregate(ctx, f.Frame, acc, args); err != nil {
			return nil, err
		}
	default:
		for r := 0; r < e.n; r++ {
			lo, hi := e.frame(f.Frame, r)
			if err := feed(r, lo, hi); err != nil {
				return nil, err
			}
		}
	}
	res, err := acc.result(e.ec.Mem, e.n)
	if startsAtPart && next != nil && err == nil {
		acc.moveTo(last-1, 0)
		next.accs[fi] = acc
	}
	return res, err
}

// runningAggregate computes a running aggregate (frames from the partition
// start) as aggregate does, in one update: every row folds into the group
// of the first row whose frame takes it in, and each row's state is then
// the previous row's folded into its own (mergeGroups). aggregate's slices
// and update call per row were a fifth of q51's CPU, a mergeGroups call
// per row 3%.
func (e *windowEnv) runningAggregate(f WindowFunc, acc accumulator, args []arrow.Array) error {
	groups := make([]uint32, e.n)
	in := make([]bool, e.n)
	starts := make([]runStart, e.n)
	_ = e.eachRunningFrame(f.Frame, func(r int, start runStart, from, hi int) error {
		starts[r] = start
		for i := from; i < hi; i++ {
			groups[i], in[i] = uint32(r), true
		}
		return nil
	})
	if err := acc.update(groups, args, in); err != nil {
		return err
	}
	// One fold of every row into the next: mergeGroups folds the pairs in
	// order, so row r's state is complete when row r+1 reads it.
	src, dst := make([]uint32, 0, e.n), make([]uint32, 0, e.n)
	for r := e.halo; r < e.n; r++ {
		switch starts[r] {
		case fromNothing:
			continue
		case fromCarried:
			src = append(src, 0)
		case fromPrevious:
			src = append(src, uint32(r-1))
		}
		dst = append(dst, uint32(r))
	}
	_, err := mergeGroups(acc, src, dst)
	return err
}

// slidingAggregate computes a mergeable aggregate (mergeGroups) over
// frames bounded at both ends by offsets or the current row in O(rows)
// folds: folding each row's frame from scratch costs rows times frame
// width (SUM over ROWS BETWEEN 100000 PRECEDING AND 100000 FOLLOWING of
// 100,000 rows took 74 s). The frames of a partition slide forward, so the
// rows in frame are a queue, kept as two stacks: rows [lo, mid) as their
// suffix states (group n+i holds rows [i, mid)), rows [mid, back) as one
// state (group 2n) folded as they come. A row's state is its frame start's
// suffix merged with that one; once the frame start passes mid, the
// suffixes are built again over the rows in frame, so each row is folded
// into the queue once and into a suffix once. A frame that moves back
// (RANGE offsets next to NULL keys) starts the queue again.
func (e *windowEnv) slidingAggregate(ctx context.Context, fr *Frame, acc accumulator, args []arrow.Array) error {
	n := e.n
	backG, empty := uint32(2*n), 2*n+1 // group empty stays empty: copied to clear
	acc.grow(2*n + 2)
	groups := make([]uint32, 0, 64)
	fold := func(lo, hi int, group func(i int) uint32) error {
		groups = groups[:0]
		for i := lo; i < hi; i++ {
			groups = append(groups, group(i))
		}
		sl := sliceArrays(args, lo, hi)
		err := acc.update(groups, sl, nil)
		releaseArrays(sl)
		return err
	}
	var src, dst []uint32
	one, at := []uint32{backG}, []uint32{0}
	prevLo, mid, back := 0, 0, 0
	for r := 0; r < n; r++ {
		if r&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		lo, hi := e.frame(fr, r)
		if r == e.ps[r] || lo < prevLo || hi < back || lo > back {
			mid, back = lo, lo
			acc.copyGroup(empty, int(backG))
		}
		prevLo = lo
		if hi > back {
			if err := fold(back, hi, func(int) uint32 { return backG }); err != nil {
				return err
			}
			back = hi
		}
		if lo > mid {
			for i := lo; i < back; i++ {
				acc.copyGroup(empty, n+i)
			}
			if err := fold(lo, back, func(i int) uint32 { return uint32(n + i) }); err != nil {
				return err
			}
			src, dst = src[:0], dst[:0]
			for i := back - 2; i >= lo; i-- {
				src, dst = append(src, uint32(n+i+1)), append(dst, uint32(n+i))
			}
			if _, err := mergeGroups(acc, src, dst); err != nil {
				return err
			}
			mid = back
			acc.copyGroup(empty, int(backG))
		}
		if lo < mid {
			acc.copyGroup(n+lo, r)
		}
		if mid < back {
			at[0] = uint32(r)
			if _, err := mergeGroups(acc, one, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// runStart says what a row's running state (a frame from the partition
// start) begins as.
type runStart uint8

const (
	fromNothing  runStart = iota // a partition's first row
	fromCarried                  // the state carried from the previous chunk (group 0)
	fromPrevious                 // the previous row's state
)

// eachRunningFrame calls fn for each row after the carried ones (the
// halo, whose rows are in group 0's state) with what its running state
// begins as and the rows [from, hi) its frame adds to that.
func (e *windowEnv) eachRunningFrame(fr *Frame, fn func(r int, start runStart, from, hi int) error) error {
	prevHi := 0
	for r := e.halo; r < e.n; r++ {
		lo, hi := e.frame(fr, r)
		start := fromPrevious
		switch {
		case r == e.halo && r > 0:
			start, prevHi = fromCarried, r
		case r == e.ps[r]:
			start, prevHi = fromNothing, lo
		}
		if err := fn(r, start, max(prevHi, lo), hi); err != nil {
			return err
		}
		prevHi = max(prevHi, hi)
	}
	return nil
}

// foldsForward reports whether runningAggregate can compute a's running
// states: mergeGroups folds them, and not ANY_VALUE's, whose state keeps
// the first value it sees.
func foldsForward(a accumulator) bool {
	if m, ok := a.(*minMaxAcc); ok && m.mode == 0 {
		return false
	}
	return mergeable(a)
}

func (w *windowOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for {
		b, err := w.out.next()
		if !errors.Is(err, io.EOF) || w.merger == nil || w.eof {
			return b, err
		}
		w.out.batches, w.out.pos = w.out.batches[:0], 0
		if err := w.readChunk(ctx); err != nil {
			return nil, err
		}
	}
}

func (w *windowOp) Close() error {
	w.out.close()
	releaseBatches(w.pending)
	w.pending = nil
	if w.merger != nil {
		w.merger.close()
		w.merger = nil
	}
	if w.big != nil {
		w.big.src.Close()
		if w.big.rest != nil {
			w.big.rest.Release()
		}
		w.big = nil
	}
	w.setCarry(nil)
	w.mem.free()
	return w.child.Close()
}
