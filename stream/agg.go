package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// AggSpec is one aggregate of an Aggregate.
type AggSpec struct {
	// Func is count_star, count, sum, avg, min, max, bool_and, bool_or,
	// var_pop, var_samp, stddev_pop or stddev_samp.
	Func string
	Arg  exec.Expr // nil for count_star
	// Distinct: count, sum or avg of the distinct values (the others
	// ignore it).
	Distinct bool
	Filter   exec.Expr // FILTER (WHERE ...); nil: every row
	Type     arrow.DataType
	Name     string
}

// Aggregate is GROUP BY with retraction (Flink's GroupAggFunction,
// mini-batched): +I/+U rows add to their group, -U/-D rows take away, and
// at each marker every group changed since the previous one emits +I
// (new group), -U old/+U new (changed values), -D old (no rows left, or it
// left HAVING) or nothing (same values). min and max keep a count per
// value, so retracting the current minimum finds the next one. Without
// GROUP BY there is one group, which exists with no rows (count 0, sums
// NULL), as in batch SQL.
//
// State past the Budget spills: at a marker, groups go to disk (a
// spillStore: group values, row count, last emitted row and accumulator
// states, encoded) until half the budget is free, and come back when a
// change reaches them. The changes of one mini-batch must fit.
type Aggregate struct {
	ec     *exec.Context
	in     Operator
	groups []exec.Expr
	aggs   []AggSpec
	having exec.Expr // over the output schema; nil: none
	budget *Budget
	schema *arrow.Schema

	groupGet []getter
	groupDec []orderedDecoder
	outDec   []orderedDecoder // the output columns after the groups
	accDec   []orderedDecoder // what each accumulator keeps values as
	argGet   []getter
	store    *spillStore // nil until something spills
	table    map[string]*aggGroup
	// sets are the grouping sets (SetGroupingSets), nil without; kept
	// are the keys of groups that exist with no rows (a global
	// aggregate's, a set without groups).
	sets  [][]int
	kept  map[string]bool
	dirty []*aggGroup
	enc   vectorized.KeyEncoder
	signs []int8
	q     *outQueue
	mb    miniBatch
	held  int64
	// reloaded counts the bytes of state read back from disk, ever.
	reloaded int64

	changed changedKeys // the groups changed since the last save
}

type aggGroup struct {
	key     string
	vals    []any // the group's values
	rows    int64
	accs    []accumulator
	emitted []any // the row last emitted (nil: none)
	dirty   bool
}

// NewAggregate groups in by groups and computes aggs; having, when set, is
// compiled over the output schema (row kind, groups, aggregates).
func NewAggregate(ec *exec.Context, in Operator, groups []exec.Expr, groupNames []string, aggs []AggSpec, budget *Budget) (*Aggregate, error) {
	a := &Aggregate{ec: ec, in: in, groups: groups, aggs: aggs, budget: budget, table: map[string]*aggGroup{}, kept: map[string]bool{}}
	var fields []arrow.Field
	for i, g := range groups {
		get, err := getterFor(g.DataType())
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", groupNames[i], err)
		}
		a.groupGet = append(a.groupGet, get)
		dec, _ := orderedDecoderFor(g.DataType()) // as getterFor
		a.groupDec = append(a.groupDec, dec)
		fields = append(fields, arrow.Field{Name: groupNames[i], Type: g.DataType(), Nullable: true})
	}
	argGet, aggFields, err := aggGetters(aggs)
	if err != nil {
		return nil, err
	}
	for _, s := range aggs {
		out, err := orderedDecoderFor(s.Type)
		if err != nil {
			return nil, fmt.Errorf("aggregate %s: %w", s.Name, err)
		}
		a.outDec = append(a.outDec, out)
	}
	a.accDec = accDecoders(aggs)
	a.argGet = argGet
	a.schema = withKind(append(fields, aggFields...))
	q, err := newOutQueue(ec, a.schema)
	if err != nil {
		return nil, err
	}
	a.q = q
	if len(groups) == 0 {
		// The one group of a global aggregate exists from the start, and
		// the first marker emits its row over no input.
		a.keep("", nil)
	}
	return a, nil
}

// keep adds a group that exists from the start, with no rows: the first
// marker emits its row over no input.
func (a *Aggregate) keep(key string, vals []any) {
	g, _ := a.newGroup(key, vals) // a few bytes, left out of the budget
	g.dirty = true
	a.dirty = append(a.dirty, g)
	a.kept[key] = true
}

// SetGroupingSets makes the aggregation GROUP BY GROUPING SETS: each row
// adds to one group per set (indexes into the groups but the last), the
// groups absent from the set NULL, so the input is read once for all
// sets. The last group is then the grouping id (bit i set when group i is
// absent, as exec's aggregation sets it), its expression not evaluated. A
// set without groups has its group from the start, as a global aggregate.
func (a *Aggregate) SetGroupingSets(sets [][]int) error {
	n := len(a.groups) - 1
	if n < 0 || a.groups[n].DataType().ID() != arrow.INT64 {
		return fmt.Errorf("%w: grouping sets need the grouping id as the last group", exec.ErrInvalid)
	}
	a.sets = sets
	for i, set := range sets {
		if len(set) > 0 {
			continue
		}
		keys, release := a.setKeys(nil, i, 1)
		err := a.enc.Encode(keys, 1)
		vals := make([]any, len(a.groups))
		vals[n] = int64(1)<<n - 1
		key := string(a.enc.Key(0))
		release()
		if err != nil {
			return err
		}
		a.keep(key, vals)
	}
	return nil
}

// setKeys returns the keys of grouping set s for rows of which keys
// holds the evaluated groups (nil when there are none): the absent ones
// NULL, then the grouping id, then s itself, which keeps the groups of a
// set listed twice apart (GROUPING SETS ((a), (a)) gives each row twice,
// as in batch). release frees the arrays it made.
func (a *Aggregate) setKeys(keys []arrow.Array, s, rows int) (out []arrow.Array, release func()) {
	n := len(a.groups) - 1
	out = make([]arrow.Array, n+2)
	gid := int64(1)<<n - 1
	for _, i := range a.sets[s] {
		out[i] = keys[i]
		gid &^= 1 << i
	}
	var made []arrow.Array
	for i := range n {
		if out[i] == nil {
			out[i] = vectorized.NullArray(a.ec.Mem, a.groups[i].DataType(), rows)
			made = append(made, out[i])
		}
	}
	for j, v := range []int64{gid, int64(s)} {
		c := vectorized.NewFixedOut[int64](a.ec.Mem, rows)
		for i := range c.Vals {
			c.Vals[i] = v
		}
		out[n+j] = c.Finish(arrow.PrimitiveTypes.Int64, nil, 0)
		made = append(made, out[n+j])
	}
	return out, func() {
		for _, m := range made {
			m.Release()
		}
	}
}

// aggGetters checks aggs and returns the getters of their arguments and
// their output fields.
func aggGetters(aggs []AggSpec) ([]getter, []arrow.Field, error) {
	var gets []getter
	var fields []arrow.Field
	for _, s := range aggs {
		if _, err := newAccumulator(s); err != nil {
			return nil, nil, err
		}
		var get getter
		if s.Arg != nil {
			var err error
			if get, err = getterFor(s.Arg.DataType()); err != nil {
				return nil, nil, fmt.Errorf("aggregate %s: %w", s.Name, err)
			}
			if s.Func == "count" && !s.Distinct {
				get = notNull // count needs no value: no copy, no boxing
			}
		}
		gets = append(gets, get)
		fields = append(fields, arrow.Field{Name: s.Name, Type: s.Type, Nullable: true})
	}
	return gets, fields, nil
}

// aggInputs are the arguments and FILTERs of aggregates evaluated over a
// batch (nil where an aggregate has none).
type aggInputs struct {
	aggs    []AggSpec
	get     []getter
	args    []arrow.Array
	filters []*array.Boolean
}

// evalAggInputs evaluates the arguments and filters of aggs over ev's
// batch; ev owns the arrays. An argument is evaluated only on the rows its
// FILTER keeps (see exec.EvalWhere).
func evalAggInputs(aggs []AggSpec, get []getter, ev *batchEval) (aggInputs, error) {
	in := aggInputs{aggs: aggs, get: get, args: make([]arrow.Array, len(aggs)), filters: make([]*array.Boolean, len(aggs))}
	for j, s := range aggs {
		if s.Filter != nil {
			f, err := ev.eval(s.Filter)
			if err != nil {
				return in, err
			}
			if in.filters[j], _ = f.(*array.Boolean); in.filters[j] == nil {
				return in, fmt.Errorf("%w: FILTER of %s is %s, not boolean", exec.ErrInvalid, s.Name, f.DataType())
			}
		}
		if s.Arg == nil {
			continue
		}
		a, err := ev.eval(s.Arg)
		if err != nil && in.filters[j] != nil {
			// Perhaps only on rows the FILTER drops: the mask is made
			// only then, not for every batch.
			mask, _ := vectorized.TrueMask(in.filters[j])
			a, err = ev.evalWhere(s.Arg, mask)
		}
		if err != nil {
			return in, err
		}
		in.args[j] = a
	}
	return in, nil
}

// addRow adds row i with sign to accs, one accumulator per aggregate, and
// returns the bytes of state added.
func (in aggInputs) addRow(accs []accumulator, i int, sign int8) int64 {
	var grow int64
	for j := range in.aggs {
		if v, ok := in.value(j, i); ok {
			grow += accs[j].add(v, sign)
		}
	}
	return grow
}

// value is aggregate j's input of row i, false when the aggregate skips
// the row (its FILTER fails, or its argument is NULL); nil for count(*).
func (in aggInputs) value(j, i int) (any, bool) {
	if f := in.filters[j]; f != nil && (f.IsNull(i) || !f.Value(i)) {
		return nil, false
	}
	if in.aggs[j].Arg == nil {
		return nil, true
	}
	v := in.get[j](in.args[j], i)
	return v, v != nil // aggregates skip NULLs
}

// SetHaving filters the groups by pred, compiled over Schema(): a group
// entering HAVING emits +I, leaving it -D.
func (a *Aggregate) SetHaving(pred exec.Expr) { a.having = pred }

func (a *Aggregate) Schema() *arrow.Schema { return a.schema }

func (a *Aggregate) Open(ctx context.Context) error { return a.in.Open(ctx) }

func (a *Aggregate) Next(ctx context.Context) (Chunk, error) {
	return miniBatchNext(ctx, a.in, a, a.q, &a.mb)
}

func (a *Aggregate) newGroup(key string, vals []any) (*aggGroup, int64) {
	g := &aggGroup{key: key, vals: vals, accs: make([]accumulator, len(a.aggs))}
	for i, s := range a.aggs {
		g.accs[i], _ = newAccumulator(s) // checked by NewAggregate
	}
	a.table[key] = g
	return g, int64(len(key)) + rowBytes(vals) + 48*int64(len(a.aggs)) + 64
}

func (a *Aggregate) add(ctx context.Context, b arrow.RecordBatch) (err error) {
	signs, err := kindSigns(b, a.signs)
	if err != nil {
		return err
	}
	a.signs = signs
	ev := newBatchEval(ctx, a.ec, b)
	defer ev.release()
	eval := ev.eval
	n := int(b.NumRows())
	keys := make([]arrow.Array, len(a.groups))
	evaluated := a.groups
	if a.sets != nil {
		evaluated = a.groups[:len(a.groups)-1] // not the grouping id
	}
	for i, g := range evaluated {
		if keys[i], err = eval(g); err != nil {
			return err
		}
	}
	in, err := evalAggInputs(a.aggs, a.argGet, ev)
	if err != nil {
		return err
	}
	if a.sets == nil {
		return a.addRows(keys, n, in, signs)
	}
	for s := range a.sets {
		sk, release := a.setKeys(keys, s, n)
		err := a.addRows(sk, n, in, signs)
		release()
		if err != nil {
			return err
		}
	}
	return nil
}

// addRows adds rows [0, n) with their signs to the groups of keys.
func (a *Aggregate) addRows(keys []arrow.Array, n int, in aggInputs, signs []int8) (err error) {
	if err := a.enc.Encode(keys, n); err != nil {
		return err
	}
	var grow int64
	for i, sign := range signs {
		k := a.enc.Key(i)
		g := a.table[string(k)]
		if g == nil && a.store != nil {
			if g, err = a.load(string(k)); err != nil {
				return err
			}
			if g != nil {
				grow += a.groupBytes(g)
				a.reloaded += a.groupBytes(g)
			}
		}
		if g == nil {
			vals := make([]any, len(a.groupGet)) // keys may end with a grouping set's index
			for c, get := range a.groupGet {
				vals[c] = get(keys[c], i)
			}
			var bytes int64
			g, bytes = a.newGroup(string(k), vals)
			grow += bytes
		}
		if !g.dirty {
			g.dirty = true
			a.dirty = append(a.dirty, g)
		}
		g.rows += int64(sign)
		grow += in.addRow(g.accs, i, sign)
	}
	a.held += grow
	a.budget.add(grow)
	return nil
}

// flush emits the net change of the groups changed since the last marker.
func (a *Aggregate) flush(ctx context.Context, _ *Chunk) error {
	rows := make([][]any, len(a.dirty)) // the new row of each dirty group, nil: none
	for i, g := range a.dirty {
		if g.rows < 0 {
			return fmt.Errorf("%w: aggregation input retracted more rows than it added", exec.ErrInvalid)
		}
		if g.rows == 0 && !a.kept[g.key] {
			continue
		}
		row := make([]any, 0, len(g.vals)+len(g.accs))
		row = append(row, g.vals...)
		for _, acc := range g.accs {
			v, err := acc.result()
			if err != nil {
				return err
			}
			row = append(row, v)
		}
		rows[i] = row
	}
	if a.having != nil {
		if err := a.applyHaving(ctx, rows); err != nil {
			return err
		}
	}
	var grow int64
	for i, g := range a.dirty {
		g.dirty = false
		a.changed.add(g.key)
		old, cur := g.emitted, rows[i]
		switch {
		case old == nil && cur != nil:
			a.q.add(kindInsert, cur)
		case old != nil && cur == nil:
			a.q.add(kindDelete, old)
		case old != nil && !sameRow(old, cur):
			a.q.add(kindUpdateBefore, old)
			a.q.add(kindUpdateAfter, cur)
		default:
			cur = old
		}
		grow += rowBytes(cur) - rowBytes(old)
		g.emitted = cur
		if g.rows == 0 && !a.kept[g.key] {
			grow -= rowBytes(g.vals) + int64(len(g.key)) + 48*int64(len(g.accs)) + 64
			delete(a.table, g.key)
			if a.store != nil {
				a.store.forget(g.key)
			}
		}
	}
	a.dirty = a.dirty[:0]
	a.q.seal()
	a.held += grow
	a.budget.add(grow)
	if a.budget.over() && len(a.groups) > 0 {
		return a.evict()
	}
	return nil
}

// groupBytes is what a group accounts: the sum of what add and flush
// accounted for it (an emitted row counts past an empty one).
func (a *Aggregate) groupBytes(g *aggGroup) int64 {
	n := int64(len(g.key)) + rowBytes(g.vals) + 48*int64(len(a.aggs)) + 64 + rowBytes(g.emitted) - rowBytes(nil)
	for _, acc := range g.accs {
		n += acc.size()
	}
	return n
}

func (a *Aggregate) heldState() (string, int64, *Budget) {
	return "a GROUP BY aggregation", a.held - a.reloaded, a.budget
}

// evict moves groups to disk until half the budget is free.
func (a *Aggregate) evict() error {
	return evictMap(a.table, a.ec, a.budget, &a.store, &a.held, func(k string, g *aggGroup) (stateEntry, int64, bool) {
		return stateEntry{key: k, val: appendGroup(nil, g)}, a.groupBytes(g), true
	})
}

// appendGroup appends a group's values, row count, last emitted row and
// accumulator states.
func appendGroup(b []byte, g *aggGroup) []byte {
	for _, v := range g.vals {
		b = appendOrdered(b, v, false, true)
	}
	b = binary.AppendVarint(b, g.rows)
	if g.emitted == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		for _, v := range g.emitted[len(g.vals):] { // after the group's values
			b = appendOrdered(b, v, false, true)
		}
	}
	for _, acc := range g.accs {
		b = acc.encode(b)
	}
	return b
}

// load reads a spilled group back into the table (nil if none).
func (a *Aggregate) load(key string) (*aggGroup, error) {
	b, ok, err := a.store.take(key)
	if !ok || err != nil {
		return nil, err
	}
	return a.decodeGroup(key, b)
}

// SaveState saves every group, in memory and spilled (in a delta, the
// groups changed).
func (a *Aggregate) SaveState(w *StateWriter) error {
	return w.keyed(&a.changed, func() error {
		for k, g := range a.table {
			w.entryScratch(k, appendGroup(w.scratch(), g))
		}
		return w.spilled(a.store, func(k string) bool { _, ok := a.table[k]; return ok })
	}, func(k string, b []byte) ([]byte, bool, error) {
		if g, ok := a.table[k]; ok {
			return appendGroup(b, g), true, nil
		}
		return a.store.saved(k)
	})
}

func (a *Aggregate) trackChanges() { a.changed.track() }

// RestoreState loads the saved groups into memory, spilling past the
// budget.
func (a *Aggregate) RestoreState(r *StateReader) error {
	clear(a.table) // a global aggregate's empty group, replaced by its saved one
	a.dirty = a.dirty[:0]
	err := r.Entries(func(k string, v []byte) error {
		g, err := a.decodeGroup(k, v)
		if err != nil {
			return err
		}
		grow := a.groupBytes(g)
		a.held += grow
		a.budget.add(grow)
		if a.budget.over() && len(a.groups) > 0 {
			return a.evict()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, ok := a.table[""]; len(a.groups) == 0 && !ok {
		return fmt.Errorf("%w: no group of a global aggregate", errCorruptCheckpoint)
	}
	return r.end()
}

// decodeGroup puts the group appendGroup encoded in b in the table.
func (a *Aggregate) decodeGroup(key string, b []byte) (*aggGroup, error) {
	var err error
	vals := make([]any, len(a.groupDec))
	for i, d := range a.groupDec {
		if vals[i], b, err = d(b, false); err != nil {
			return nil, err
		}
	}
	g, _ := a.newGroup(key, vals)
	var n int
	if g.rows, n = binary.Varint(b); n <= 0 || len(b) == n {
		return nil, errCorruptState
	}
	emitted := b[n]
	b = b[n+1:]
	if emitted == 1 {
		g.emitted = append(make([]any, 0, len(vals)+len(a.outDec)), vals...)
		for _, d := range a.outDec {
			var v any
			if v, b, err = d(b, false); err != nil {
				return nil, err
			}
			g.emitted = append(g.emitted, v)
		}
	}
	for i, acc := range g.accs {
		if b, err = acc.decode(b, a.accDec[i]); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// applyHaving sets rows[i] to nil where the group fails HAVING.
func (a *Aggregate) applyHaving(ctx context.Context, rows [][]any) error {
	q, err := newOutQueue(a.ec, a.schema)
	if err != nil {
		return err
	}
	defer q.release()
	var idx []int
	for i, r := range rows {
		if r != nil {
			q.add(kindInsert, r)
			idx = append(idx, i)
		}
	}
	q.seal()
	for off := 0; ; {
		b := q.pop()
		if b == nil {
			return nil
		}
		m, err := a.having.Eval(ctx, a.ec, b)
		if err != nil {
			return err
		}
		keep, ok := m.(*array.Boolean)
		if !ok {
			m.Release()
			return fmt.Errorf("%w: HAVING is %s, not boolean", exec.ErrInvalid, m.DataType())
		}
		for j := 0; j < keep.Len(); j++ {
			if keep.IsNull(j) || !keep.Value(j) {
				rows[idx[off+j]] = nil
			}
		}
		off += keep.Len()
		m.Release()
	}
}

func (a *Aggregate) Close() error {
	a.q.release()
	a.budget.add(-a.held)
	a.held = 0
	if a.store != nil {
		a.store.close()
	}
	return a.in.Close()
}

// accumulator is one aggregate of one group, with retraction. add takes a
// non-NULL value (nil for count_star) and +1 or -1, and returns the bytes
// of state it added (negative when it freed some).
type accumulator interface {
	add(v any, sign int8) int64
	result() (any, error)
	// size is the bytes add accounted in all (the state beyond the
	// accumulator itself).
	size() int64
	// encode appends the state (to spill it); decode reads it into a new
	// accumulator, dec reading the values it keeps.
	encode(dst []byte) []byte
	decode(b []byte, dec orderedDecoder) ([]byte, error)
}

// readVarints reads len(dst) varints.
func readVarints(b []byte, dst ...*int64) ([]byte, error) {
	for _, d := range dst {
		v, n := binary.Varint(b)
		if n <= 0 {
			return nil, errCorruptState
		}
		*d, b = v, b[n:]
	}
	return b, nil
}

// readFixed reads n bytes.
func readFixed(b []byte, n int) ([]byte, []byte, error) {
	if len(b) < n {
		return nil, nil, errCorruptState
	}
	return b[:n], b[n:], nil
}

// notNull reads a value as true, or nil for NULL.
func notNull(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	return true
}

func newAccumulator(s AggSpec) (accumulator, error) {
	bad := func() (accumulator, error) {
		what := s.Func
		if s.Distinct {
			what += "(DISTINCT)"
		}
		return nil, fmt.Errorf("%w: aggregate %s over %v is not supported in a streaming query yet", exec.ErrInvalid, what, argType(s))
	}
	if s.Distinct {
		switch s.Func {
		case "count":
			return &distinctCount{}, nil
		case "sum", "avg":
			all := s
			all.Distinct = false
			inner, err := newAccumulator(all)
			if err != nil {
				return nil, err
			}
			return &distinctOf{inner: inner}, nil
		case "min", "max", "bool_and", "bool_or":
		default:
			return bad()
		}
	}
	switch s.Func {
	case "count_star", "count":
		return &count{}, nil
	case "bool_and", "bool_or":
		return &boolAgg{or: s.Func == "bool_or"}, nil
	case "var_pop", "var_samp", "stddev_pop", "stddev_samp":
		if t := argType(s); t == nil || !exec.ExactVariance(t) {
			return bad()
		}
		return &variance{pop: strings.HasSuffix(s.Func, "_pop"), sqrt: strings.HasPrefix(s.Func, "stddev")}, nil
	case "sum", "avg":
		var sum accumulator
		switch t := argType(s); {
		case vectorized.IsInteger(t) && s.Type.ID() == arrow.INT64 || s.Func == "avg" && vectorized.IsInteger(t):
			sum = &sumInt{}
		case vectorized.IsFloat(t):
			sum = &sumFloat{}
		case t != nil && t.ID() == arrow.DECIMAL128 && s.Type.ID() == arrow.DECIMAL128:
			in, out := t.(*arrow.Decimal128Type), s.Type.(*arrow.Decimal128Type)
			if s.Func == "avg" {
				// As exec's avg: a sum in DECIMAL(38, s) divided to out's scale.
				return &avg{sum: &sumDecimal{prec: 38}, scale: in.Scale, ret: out}, nil
			}
			if in.Scale != out.Scale {
				return bad()
			}
			sum = &sumDecimal{prec: out.Precision}
		default:
			return bad()
		}
		if s.Func == "avg" {
			// exec's type: an integer argument's own, else DOUBLE.
			if _, ints := sum.(*sumInt); ints && !arrow.TypeEqual(s.Type, argType(s)) || !ints && s.Type.ID() != arrow.FLOAT64 {
				return bad()
			}
			return &avg{sum: sum}, nil
		}
		return sum, nil
	case "min", "max":
		if s.Arg == nil {
			return bad()
		}
		if _, err := getterFor(s.Arg.DataType()); err != nil {
			return bad()
		}
		dir := 1
		if s.Func == "min" {
			dir = -1
		}
		return &minMax{dir: dir, vals: map[any]*valueCount{}}, nil
	}
	return bad()
}

// accDecoders read back the values each accumulator of aggs keeps.
func accDecoders(aggs []AggSpec) []orderedDecoder {
	var decs []orderedDecoder
	for _, s := range aggs {
		var acc orderedDecoder
		if s.Arg != nil {
			kept := s.Arg.DataType()
			if s.Distinct && s.Func != "min" && s.Func != "max" && vectorized.IsFloat(kept) {
				kept = arrow.PrimitiveTypes.Uint64 // a distinctCount's mapKey: the bits
			}
			acc, _ = orderedDecoderFor(kept) // as getterFor
		}
		decs = append(decs, acc)
	}
	return decs
}

func argType(s AggSpec) arrow.DataType {
	if s.Arg == nil {
		return nil
	}
	return s.Arg.DataType()
}

type count struct{ n int64 }

func (c *count) add(_ any, sign int8) int64 { c.n += int64(sign); return 0 }
func (c *count) result() (any, error)       { return c.n, nil }
func (c *count) size() int64                { return 0 }
func (c *count) encode(dst []byte) []byte   { return binary.AppendVarint(dst, c.n) }
func (c *count) decode(b []byte, _ orderedDecoder) ([]byte, error) {
	return readVarints(b, &c.n)
}

// sumInt sums in 128 bits, hi*2^64 + lo, so that the sum is exact in any
// order of additions and retractions and a result beyond int64 is an
// overflow, as in a batch sum (not a wrapped value).
type sumInt struct {
	hi int64
	lo uint64
	n  int64
}

func (s *sumInt) add(v any, sign int8) int64 {
	var xhi int64
	var xlo uint64
	switch x := v.(type) {
	case int64:
		xlo, xhi = uint64(x), x>>63
	case uint64:
		xlo = x
	}
	if sign < 0 { // two's complement negation
		xlo, xhi = ^xlo+1, ^xhi
		if xlo == 0 {
			xhi++
		}
	}
	var carry uint64
	s.lo, carry = bits.Add64(s.lo, xlo, 0)
	s.hi += xhi + int64(carry)
	s.n += int64(sign)
	return 0
}

// sum is the sum as an int64, or an overflow.
func (s *sumInt) sum() (int64, error) {
	if s.hi != int64(s.lo)>>63 {
		return 0, fmt.Errorf("%w: sum exceeds the int64 range", vectorized.ErrOverflow)
	}
	return int64(s.lo), nil
}

func (s *sumInt) size() int64 { return 0 }

func (s *sumInt) encode(dst []byte) []byte {
	return binary.AppendVarint(binary.AppendVarint(binary.AppendVarint(dst, s.hi), int64(s.lo)), s.n)
}

func (s *sumInt) decode(b []byte, _ orderedDecoder) ([]byte, error) {
	var lo int64
	b, err := readVarints(b, &s.hi, &lo, &s.n)
	s.lo = uint64(lo)
	return b, err
}

func (s *sumInt) result() (any, error) {
	if s.n == 0 {
		return nil, nil
	}
	return s.sum()
}

// sumFloat sums in float64: after retractions the last bits may differ
// from a batch sum in another order.
type sumFloat struct {
	sum float64
	n   int64
}

func (s *sumFloat) add(v any, sign int8) int64 {
	s.sum += float64(sign) * v.(float64)
	s.n += int64(sign)
	return 0
}

func (s *sumFloat) size() int64 { return 0 }

func (s *sumFloat) encode(dst []byte) []byte {
	return binary.AppendVarint(binary.BigEndian.AppendUint64(dst, math.Float64bits(s.sum)), s.n)
}

func (s *sumFloat) decode(b []byte, _ orderedDecoder) ([]byte, error) {
	v, b, err := readFixed(b, 8)
	if err != nil {
		return nil, err
	}
	s.sum = math.Float64frombits(binary.BigEndian.Uint64(v))
	return readVarints(b, &s.n)
}

func (s *sumFloat) result() (any, error) {
	if s.n == 0 {
		return nil, nil
	}
	return s.sum, nil
}

type sumDecimal struct {
	sum  decimal128.Num
	n    int64
	prec int32
}

func (s *sumDecimal) add(v any, sign int8) int64 {
	x := v.(decimal128.Num)
	if sign < 0 {
		x = x.Negate()
	}
	s.sum = s.sum.Add(x)
	s.n += int64(sign)
	return 0
}

func (s *sumDecimal) size() int64 { return 0 }

func (s *sumDecimal) encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(s.sum.HighBits()))
	return binary.AppendVarint(binary.BigEndian.AppendUint64(dst, s.sum.LowBits()), s.n)
}

func (s *sumDecimal) decode(b []byte, _ orderedDecoder) ([]byte, error) {
	v, b, err := readFixed(b, 16)
	if err != nil {
		return nil, err
	}
	s.sum = decimal128.New(int64(binary.BigEndian.Uint64(v)), binary.BigEndian.Uint64(v[8:]))
	return readVarints(b, &s.n)
}

func (s *sumDecimal) result() (any, error) {
	if s.n == 0 {
		return nil, nil
	}
	if !s.sum.FitsInPrecision(s.prec) {
		return nil, fmt.Errorf("%w: sum overflows DECIMAL(%d)", exec.ErrInvalid, s.prec)
	}
	return s.sum, nil
}

// avg is sum / count as exec's avg computes it: truncated toward zero for
// integers (Flink's AVG), a float64 for floats, over decimals of scale
// scale as ret (exec.AvgDecimal).
type avg struct {
	sum   accumulator
	scale int32
	ret   *arrow.Decimal128Type
}

func (a *avg) add(v any, sign int8) int64 { return a.sum.add(v, sign) }
func (a *avg) size() int64                { return a.sum.size() }
func (a *avg) encode(dst []byte) []byte   { return a.sum.encode(dst) }
func (a *avg) decode(b []byte, dec orderedDecoder) ([]byte, error) {
	return a.sum.decode(b, dec)
}

func (a *avg) result() (any, error) {
	switch s := a.sum.(type) {
	case *sumInt:
		if s.n == 0 {
			return nil, nil
		}
		sum, err := s.sum()
		if err != nil {
			return nil, err
		}
		return sum / s.n, nil
	case *sumFloat:
		if s.n == 0 {
			return nil, nil
		}
		return s.sum / float64(s.n), nil
	case *sumDecimal:
		if v, err := s.result(); v == nil || err != nil {
			return v, err
		}
		return exec.AvgDecimal(s.sum, a.scale, s.n, a.ret)
	}
	return nil, fmt.Errorf("%w: avg over %T", exec.ErrInvalid, a.sum)
}

type valueCount struct {
	v any
	n int64
}

// minMax keeps how many rows hold each value; the extreme is recomputed
// when its last row goes.
type minMax struct {
	dir   int // -1 min, 1 max
	vals  map[any]*valueCount
	best  any
	stale bool
}

func (m *minMax) add(v any, sign int8) int64 {
	k := mapKey(v)
	e := m.vals[k]
	var grow int64
	if e == nil {
		e = &valueCount{v: v}
		m.vals[k] = e
		grow = rowBytes([]any{v}) + 32
	}
	e.n += int64(sign)
	switch {
	case e.n == 0:
		delete(m.vals, k)
		grow -= rowBytes([]any{v}) + 32
		if m.best != nil && compareValues(v, m.best) == 0 {
			m.stale = true
		}
	case sign > 0 && !m.stale && (m.best == nil || compareValues(v, m.best)*m.dir > 0):
		m.best = e.v
	}
	return grow
}

func (m *minMax) size() int64 {
	var n int64
	for _, e := range m.vals {
		n += rowBytes([]any{e.v}) + 32
	}
	return n
}

func (m *minMax) encode(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(m.vals)))
	for _, e := range m.vals {
		dst = binary.AppendVarint(appendOrdered(dst, e.v, false, true), e.n)
	}
	return dst
}

// decode leaves the extreme to be found again by result.
func (m *minMax) decode(b []byte, dec orderedDecoder) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errCorruptState
	}
	b = b[k:]
	for range n {
		var v any
		var err error
		if v, b, err = dec(b, false); err != nil {
			return nil, err
		}
		e := &valueCount{v: v}
		if b, err = readVarints(b, &e.n); err != nil {
			return nil, err
		}
		m.vals[mapKey(v)] = e
	}
	m.best, m.stale = nil, true
	return b, nil
}

func (m *minMax) result() (any, error) {
	if m.stale {
		m.best, m.stale = nil, false
		for _, e := range m.vals {
			if m.best == nil || compareValues(e.v, m.best)*m.dir > 0 {
				m.best = e.v
			}
		}
	}
	return m.best, nil
}

// distinctCount counts each value's copies. An argument has one type, so
// only one of ints and vals is used: integers (every type a getter reads
// as int64) go to a countTable, not through an interface into a map,
// which made the map about half of a streamed count(DISTINCT bigint)'s
// CPU.
type distinctCount struct {
	ints countTable
	vals map[any]int64 // other values, by mapKey
}

// bump adds sign to k's count, dropping it at zero, and returns the count.
func bump[K comparable](m map[K]int64, k K, sign int64) int64 {
	n := m[k] + sign
	if n == 0 {
		delete(m, k)
	} else {
		m[k] = n
	}
	return n
}

// set adds n to the count of v (n is the sign of a row, or a count read
// back) and returns the new count.
func (d *distinctCount) set(v any, n int64) int64 {
	if x, ok := v.(int64); ok {
		return d.ints.add(x, n)
	}
	if d.vals == nil {
		d.vals = map[any]int64{}
	}
	return bump(d.vals, mapKey(v), n)
}

func (d *distinctCount) add(v any, sign int8) int64 {
	grow, _ := d.change(v, sign)
	return grow
}

// change adds a row of v with sign and returns the bytes the state grew
// by and v's count after.
func (d *distinctCount) change(v any, sign int8) (grow, n int64) {
	switch n = d.set(v, int64(sign)); {
	case n == 0:
		return -(rowBytes([]any{v}) + 16), n
	case n == int64(sign) && sign > 0:
		return rowBytes([]any{v}) + 16, n
	}
	return 0, n
}

func (d *distinctCount) result() (any, error) { return int64(d.ints.n + len(d.vals)), nil }

func (d *distinctCount) size() int64 {
	n := int64(d.ints.n) * (rowBytes([]any{int64(0)}) + 16)
	for k := range d.vals {
		n += rowBytes([]any{k}) + 16
	}
	return n
}

// encode writes the maps' keys (mapKey values: a float's bits).
func (d *distinctCount) encode(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(d.ints.n+len(d.vals)))
	d.ints.each(func(k, n int64) {
		dst = binary.AppendVarint(appendOrdered(dst, k, false, true), n)
	})
	for k, n := range d.vals {
		dst = binary.AppendVarint(appendOrdered(dst, k, false, true), n)
	}
	return dst
}

func (d *distinctCount) decode(b []byte, dec orderedDecoder) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errCorruptState
	}
	b = b[k:]
	for range n {
		var key any
		var cnt int64
		var err error
		if key, b, err = dec(b, false); err != nil {
			return nil, err
		}
		if b, err = readVarints(b, &cnt); err != nil {
			return nil, err
		}
		if cnt == 0 { // encode writes none: a count of 0 is no entry
			return nil, errCorruptState
		}
		d.set(key, cnt)
	}
	return b, nil
}

// distinctOf gives inner each distinct value once: sum(DISTINCT x) and
// avg(DISTINCT x). A value reaches inner when its count becomes positive
// and leaves it when the count drops back.
type distinctOf struct {
	distinctCount
	inner accumulator
}

func (d *distinctOf) add(v any, sign int8) int64 {
	grow, after := d.change(v, sign)
	switch before := after - int64(sign); {
	case before <= 0 && after > 0:
		grow += d.inner.add(v, 1)
	case before > 0 && after <= 0:
		grow += d.inner.add(v, -1)
	}
	return grow
}

func (d *distinctOf) result() (any, error) { return d.inner.result() }
func (d *distinctOf) size() int64          { return d.distinctCount.size() + d.inner.size() }
func (d *distinctOf) encode(dst []byte) []byte {
	return d.inner.encode(d.distinctCount.encode(dst))
}

func (d *distinctOf) decode(b []byte, dec orderedDecoder) ([]byte, error) {
	b, err := d.distinctCount.decode(b, dec)
	if err != nil {
		return nil, err
	}
	return d.inner.decode(b, dec)
}

// boolAgg is bool_and or bool_or: it counts the true and the false rows,
// so that a retraction is exact.
type boolAgg struct {
	or          bool
	trues, fals int64
}

func (b *boolAgg) add(v any, sign int8) int64 {
	if v.(bool) {
		b.trues += int64(sign)
	} else {
		b.fals += int64(sign)
	}
	return 0
}

func (b *boolAgg) result() (any, error) {
	switch {
	case b.trues <= 0 && b.fals <= 0:
		return nil, nil
	case b.or:
		return b.trues > 0, nil
	}
	return b.fals <= 0, nil
}

func (b *boolAgg) size() int64 { return 0 }
func (b *boolAgg) encode(dst []byte) []byte {
	return binary.AppendVarint(binary.AppendVarint(dst, b.trues), b.fals)
}
func (b *boolAgg) decode(buf []byte, _ orderedDecoder) ([]byte, error) {
	return readVarints(buf, &b.trues, &b.fals)
}

// variance is var_* or stddev_* of integers, from exact moments as the
// batch aggregate computes it (exec.IntMoments).
type variance struct {
	pop, sqrt bool
	m         exec.IntMoments
}

func (v *variance) add(x any, sign int8) int64 {
	switch x := x.(type) {
	case int64:
		v.m.Add(x, sign)
	case uint64: // UNSIGNED TINYINT to INT: within int64
		v.m.Add(int64(x), sign)
	}
	return 0
}

func (v *variance) result() (any, error) {
	if r, ok := v.m.Variance(v.pop, v.sqrt); ok {
		return r, nil
	}
	return nil, nil
}

func (v *variance) size() int64 { return 0 }

func (v *variance) encode(dst []byte) []byte {
	for _, x := range []uint64{uint64(v.m.N), uint64(v.m.SumHi), v.m.SumLo, v.m.Sq[0], v.m.Sq[1], v.m.Sq[2]} {
		dst = binary.AppendUvarint(dst, x)
	}
	return dst
}

func (v *variance) decode(b []byte, _ orderedDecoder) ([]byte, error) {
	var xs [6]uint64
	for i := range xs {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errCorruptState
		}
		xs[i], b = x, b[n:]
	}
	v.m = exec.IntMoments{N: int64(xs[0]), SumHi: int64(xs[1]), SumLo: xs[2], Sq: [3]uint64{xs[3], xs[4], xs[5]}}
	return b, nil
}
