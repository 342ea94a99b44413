package exec

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// AggregateSpec is one aggregate of a GROUP BY.
type AggregateSpec struct {
	Func     string
	Args     []Expr
	Distinct bool
	Filter   Expr // nil = every row
	Name     string
}

// aggCore is what hash and sort aggregation share: the group and aggregate
// expressions, the accumulators, and the output schema.
type aggCore struct {
	ec      *Context
	mem     memAccount
	child   Operator
	groups  []Expr
	aggs    []AggregateSpec
	defs    []*aggDef
	filters []*predicate // per aggregate, nil without FILTER; built once to keep their narrowings
	sets    [][]int      // nil = one set of all groups
	schema  *arrow.Schema
	accs    []accumulator
	ngroups int
	// keyParts holds, per produced chunk, the group key columns of new groups.
	keyParts [][]arrow.Array
	gid      []int64 // grouping id per group (grouping sets only)
}

// MaxGroupingColumns is the most group expressions an aggregation with
// grouping sets may have: each has a bit of the int64 grouping id.
const MaxGroupingColumns = 62

func newAggCore(ec *Context, child Operator, groups []Expr, groupNames []string, aggs []AggregateSpec, sets [][]int) (*aggCore, error) {
	c := &aggCore{ec: ec, child: child, groups: groups, aggs: aggs, sets: sets}
	var fields []arrow.Field
	for i, g := range groups {
		name := g.String()
		if i < len(groupNames) && groupNames[i] != "" {
			name = groupNames[i]
		}
		if !vectorized.Comparable(g.DataType()) && !vectorized.IsNested(g.DataType()) {
			return nil, fmt.Errorf("%w: cannot group by %s of type %s", ErrInvalid, g, g.DataType())
		}
		fields = append(fields, arrow.Field{Name: name, Type: g.DataType(), Nullable: true})
	}
	for _, s := range sets {
		for _, i := range s {
			if i < 0 || i >= len(groups) {
				return nil, fmt.Errorf("%w: grouping set refers to group %d of %d", ErrInvalid, i, len(groups))
			}
		}
	}
	if len(sets) > 0 && len(groups) > MaxGroupingColumns {
		return nil, fmt.Errorf("%w: at most %d grouping columns with grouping sets", ErrInvalid, MaxGroupingColumns)
	}
	for _, a := range aggs {
		types := make([]arrow.DataType, len(a.Args))
		for i, e := range a.Args {
			types[i] = e.DataType()
		}
		d, err := resolveAgg(a.Func, types, a.Args)
		if err != nil {
			return nil, err
		}
		if a.Filter != nil && a.Filter.DataType().ID() != arrow.BOOL {
			return nil, fmt.Errorf("%w: FILTER of %s must be boolean, not %s", ErrInvalid, a.Func, a.Filter.DataType())
		}
		// LISTAGG's second argument is its constant separator.
		if a.Distinct && d.arity != 1 && a.Func != "listagg" {
			return nil, fmt.Errorf("%w: %s(DISTINCT) needs one argument", ErrInvalid, a.Func)
		}
		c.defs = append(c.defs, d)
		var f *predicate
		if a.Filter != nil {
			f = newPredicate(a.Filter)
		}
		c.filters = append(c.filters, f)
		name := a.Name
		if name == "" {
			name = a.Func + "(" + exprsString(a.Args) + ")"
		}
		fields = append(fields, arrow.Field{Name: name, Type: d.ret, Nullable: true})
	}
	if sets != nil {
		fields = append(fields, arrow.Field{Name: "grouping_id", Type: i64Type})
	}
	c.schema = arrow.NewSchema(fields, nil)
	c.resetAccs()
	return c, nil
}

func (c *aggCore) resetAccs() {
	c.releaseAccs()
	c.accs = make([]accumulator, len(c.defs))
	for i, d := range c.defs {
		c.accs[i] = d.make()
		if c.aggs[i].Distinct {
			c.accs[i] = newDistinctAcc(c.ec, c.accs[i], c.aggs[i].Args[0].DataType(), d.distinctNulls)
		}
	}
}

// releaseAccs removes the spill files of DISTINCT aggregates.
func (c *aggCore) releaseAccs() {
	for _, a := range c.accs {
		if d, ok := a.(*distinctAcc); ok {
			d.set.remove()
		}
	}
}

// accBytes estimates the memory of accumulator state beyond a fixed size
// per group: DISTINCT sets and min/max strings.
func (c *aggCore) accBytes() int64 {
	var n int64
	for _, a := range c.accs {
		if s, ok := a.(sizedAcc); ok {
			n += s.bytes()
		}
	}
	return n
}

// heldBytes is the accumulator state that spilling cannot move: the values
// LISTAGG, ARRAY_AGG, COLLECT, the JSON aggregates and PERCENTILE keep and
// MIN/MAX strings, of the groups in memory (a DISTINCT set stops growing
// once it spills, its inner aggregate's values do not).
func (c *aggCore) heldBytes() int64 {
	var n int64
	for _, a := range c.accs {
		if d, ok := a.(*distinctAcc); ok {
			a = d.inner
		}
		if s, ok := a.(sizedAcc); ok {
			n += s.bytes()
		}
	}
	return n
}

// checkHeld fails once heldBytes, counted share times (a worker of a
// parallel aggregation holds about 1/share of the groups), passes times
// the query budget. Spilling moves new groups to disk, never the values
// the groups in memory have collected, and those keep growing with their
// rows: a global aggregate's one group, a sort aggregation's open group, a
// hash aggregation's few huge groups. Failing here bounds the process.
func (c *aggCore) checkHeld(share, times int) error {
	if c.ec.MemoryLimit <= 0 {
		return nil
	}
	bound := c.ec.MemoryLimit * int64(times)
	if held := c.heldBytes() * int64(max(share, 1)); held > bound {
		return fmt.Errorf("%w: the values the aggregates of the groups in memory keep (LISTAGG, ARRAY_AGG, COLLECT, JSON, PERCENTILE, MIN/MAX strings) hold %d bytes, over %d bytes (the query memory budget is %d bytes)", ErrMemoryLimit, held, bound, c.ec.MemoryLimit)
	}
	return nil
}

// spillDistinct freezes the DISTINCT aggregates' sets: from now on pairs
// they do not hold go to disk.
func (c *aggCore) spillDistinct() error {
	for _, a := range c.accs {
		if d, ok := a.(*distinctAcc); ok {
			if err := d.set.freeze(); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishDistinct feeds the spilled DISTINCT pairs of groups [0, n) to their
// aggregates; output(n) needs it first.
func (c *aggCore) finishDistinct(ctx context.Context, n int) error {
	for i, a := range c.accs {
		if d, ok := a.(*distinctAcc); ok {
			if err := d.finish(ctx, n); err != nil {
				return fmt.Errorf("%s: %w", c.aggs[i].Func, err)
			}
		}
	}
	return nil
}

func (c *aggCore) grow(n int) {
	c.ngroups = n
	for _, a := range c.accs {
		a.grow(n)
	}
}

// update evaluates the aggregate inputs over b and folds them into groups.
// rows, when not nil, limits the update to the rows where it is true.
func (c *aggCore) update(ctx context.Context, b arrow.RecordBatch, groups []uint32, rows []bool) error {
	return c.updateWith(ctx, c.aggs, c.filters, b, groups, rows)
}

// updateWith is update with the aggregates (the accumulators' own, or
// those remapped to the columns an ownArgs takes) and their filters.
func (c *aggCore) updateWith(ctx context.Context, aggs []AggregateSpec, filters []*predicate, b arrow.RecordBatch, groups []uint32, rows []bool) error {
	for i, a := range aggs {
		mask := rows
		if f := filters[i]; f != nil {
			m, _, err := evalMask(ctx, c.ec, f, b)
			if err != nil {
				return err
			}
			for r := range rows {
				m[r] = m[r] && rows[r]
			}
			mask = m
		}
		args, err := evalAllWhere(ctx, c.ec, a.Args, b, mask)
		if err != nil {
			return err
		}
		if d, ok := c.accs[i].(*distinctAcc); ok {
			err = d.add(ctx, groups, args, mask)
		} else {
			err = c.accs[i].update(groups, args, mask)
		}
		releaseArrays(args)
		if err != nil {
			return fmt.Errorf("%s: %w", a.Func, err)
		}
	}
	return nil
}

// output builds the result rows for groups [0, n): keys ++ aggregates ++
// grouping id.
func (c *aggCore) output(n int) (arrow.RecordBatch, error) {
	var cols []arrow.Array
	fail := func(err error) (arrow.RecordBatch, error) {
		releaseArrays(cols)
		return nil, err
	}
	for g := range c.groups {
		if len(c.keyParts) == 0 {
			cols = append(cols, vectorized.NullArray(c.ec.Mem, c.groups[g].DataType(), n))
			continue
		}
		parts := make([]arrow.Array, len(c.keyParts))
		for i, p := range c.keyParts {
			parts[i] = p[g]
		}
		a, err := array.Concatenate(parts, c.ec.Mem)
		if err != nil {
			return fail(err)
		}
		if a.Len() != n {
			s := array.NewSlice(a, 0, int64(n))
			a.Release()
			a = s
		}
		cols = append(cols, a)
	}
	for _, a := range c.accs {
		r, err := a.result(c.ec.Mem, n)
		if err != nil {
			return fail(err)
		}
		cols = append(cols, r)
	}
	if c.sets != nil {
		out := vectorized.NewFixedOut[int64](c.ec.Mem, n)
		copy(out.Vals, c.gid[:n])
		cols = append(cols, out.Finish(i64Type, nil, 0))
	}
	b := array.NewRecordBatch(c.schema, cols, int64(n))
	releaseArrays(cols)
	return b, nil
}

func (c *aggCore) releaseKeys() {
	for _, p := range c.keyParts {
		releaseArrays(p)
	}
	c.keyParts = nil
}

// setKeys returns the group key columns as seen by grouping set s: the
// columns absent from s are all NULL. The caller releases them.
func (c *aggCore) setKeys(keys []arrow.Array, s []int, n int) ([]arrow.Array, int64) {
	out := make([]arrow.Array, len(keys))
	present := make([]bool, len(keys))
	for _, i := range s {
		present[i] = true
	}
	var gid int64
	for i, k := range keys {
		if present[i] {
			k.Retain()
			out[i] = k
		} else {
			out[i] = vectorized.NullArray(c.ec.Mem, k.DataType(), n)
			gid |= 1 << i
		}
	}
	return out, gid
}

type hashAggOp struct {
	*aggCore
	depth int
	table *vectorized.BytesTable // encoded keys, prefixed by the grouping set
	// With nparts > 1 this is worker part of a parallel aggregation and
	// handles only the rows whose key hashes to it (see owned), reading
	// its batches and their keys from in; the workers' tables share seed,
	// so that hash serves the lookup too.
	part, nparts int
	seed         maphash.Seed
	in           *chanSource
	// own: the aggregates' arguments compute something, so a worker
	// takes its own rows before evaluating them (updateOwn).
	own     *ownArgs
	ownRows []int64
	ownIDs  []uint32
	// A single integer group key uses table64 (NULL key: nullGroup), and
	// so do several whose packed key fits (pack; the rows that do not fit
	// use table).
	table64   *vectorized.IntTable
	nullGroup int64
	pack      *groupPack
	packOf    []arrow.DataType // the key types pack was made for
	packed    packScratch
	// partSets is, per chunk of keyParts, the grouping set of its groups
	// (grouping sets only): each chunk holds new groups of one set.
	partSets []int
	// Scratch reused across batches.
	wide   []int64
	ids    []uint32
	srcIDs []uint32
	mine   []bool
	hashes []uint64
	// touched keeps the sum Touch returns, so its loads are not dropped.
	touched uint64
	opened  bool
	out     batchesOp
	// spills holds, per grouping set, the input rows of its groups that did
	// not fit in memory, partitioned by key; each partition is aggregated
	// (for its set alone) by a child hashAggOp after the in-memory groups
	// are returned.
	spills []*partitioner
	subs   subQueue
}

// NewHashAggregate groups its input by groups and computes aggs per group.
// Output: group columns, then one column per aggregate, then (with grouping
// sets) an int64 grouping id whose bit i is set when group i is absent from
// the row's set. Without groups it returns exactly one row. Past
// Context.MemoryLimit, rows of new groups spill to disk by key hash and are
// aggregated partition by partition (with grouping sets, partitions of each
// set apart).
func NewHashAggregate(ec *Context, child Operator, groups []Expr, groupNames []string, aggs []AggregateSpec, groupingSets [][]int) (Operator, error) {
	c, err := newAggCore(ec, child, groups, groupNames, aggs, groupingSets)
	if err != nil {
		return nil, err
	}
	return &hashAggOp{aggCore: c, out: batchesOp{schema: c.schema}}, nil
}

func (h *hashAggOp) Schema() *arrow.Schema { return h.schema }

// makeTable makes the hash table keys of this kind go to, on first use:
// an aggregation uses one of the two, and a query runs many small ones.
func (h *hashAggOp) makeTable(intKey bool) {
	const hint = 1024
	switch {
	case intKey && h.table64 == nil:
		h.table64 = vectorized.NewIntTable(hint)
	case !intKey && h.table == nil && h.nparts > 1:
		h.table = vectorized.NewBytesTableSeed(hint, h.seed)
	case !intKey && h.table == nil:
		h.table = vectorized.NewBytesTable(hint)
	}
}

// stateBytes estimates the Go memory of the hash table and accumulators,
// DISTINCT sets and strings included. A worker of a parallel aggregation holds about
// 1/nparts of the groups: it counts its state nparts times, so that the
// workers together stay within the budget.
func (h *hashAggOp) stateBytes(keyBytes int) int64 {
	return (int64(keyBytes) + int64(h.ngroups)*int64(64+16*len(h.aggs)) + h.accBytes()) * int64(max(h.nparts, 1))
}

func (h *hashAggOp) Open(ctx context.Context) error {
	if h.opened {
		return nil
	}
	h.opened = true
	if err := h.child.Open(ctx); err != nil {
		return err
	}
	h.nullGroup = -1
	sets := h.sets
	if sets == nil {
		all := make([]int, len(h.groups))
		for i := range all {
			all[i] = i
		}
		sets = [][]int{all}
	}
	canSpill := len(h.groups) > 0 && h.depth < maxSpillDepth
	base := h.ec.allocated()
	var enc vectorized.KeyEncoder
	var keyBuf []byte
	keyBytes := 0
	setSeen := make([]bool, len(sets))
	// Sets with a source are computed from its groups, not from the rows,
	// once the input ends or before the first spill (derive).
	from := h.setSources(sets)
	derive := func() error {
		err := h.deriveSets(ctx, sets, from, &enc, &keyBuf, &keyBytes, setSeen)
		from = nil
		return err
	}
	for {
		b, err := Next(ctx, h.child)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		n := int(b.NumRows())
		keys, routed, err := h.keys(ctx, b)
		if err != nil {
			return err
		}
		for si, s := range sets {
			if from != nil && from[si] >= 0 {
				continue
			}
			skeys, gid := h.setKeys(keys, s, n)
			// One integer key: read as a vector of int64s, no encoding.
			intKey := h.sets == nil && len(skeys) == 1 && vectorized.IsIntKeyType(skeys[0].DataType())
			packed := h.sets == nil && h.packFor(skeys) != nil
			h.makeTable(intKey || packed)
			// A plain global aggregate (no keys and no grouping sets, so
			// nothing spills and no worker owns a part) puts every row in
			// the group of its first: the lookups per row and their
			// encoding were 10% of q09's CPU.
			look := n
			if len(skeys) == 0 && h.sets == nil && h.spills == nil && h.nparts <= 1 {
				look = min(n, 1)
			}
			var ints []int64
			var wide []bool // rows whose keys do not pack
			nullable := false
			encp := &enc
			switch {
			case intKey:
				h.wide = resized(h.wide, n)
				ints = vectorized.IntKeyValues(skeys[0], h.wide)
				nullable = vectorized.MayHaveNulls(skeys[0].Data())
			case routed != nil:
				ints, wide, encp = routed.ints, routed.wide, routed.enc
			case packed:
				ints, wide = h.pack.pack(skeys, n, &h.packed)
				if wide == nil {
					break
				}
				if err := enc.Encode(skeys, n); err != nil {
					releaseArrays(skeys)
					releaseArrays(keys)
					return err
				}
			default:
				if err := enc.Encode(skeys, look); err != nil {
					releaseArrays(skeys)
					releaseArrays(keys)
					return err
				}
			}
			h.ids = resized(h.ids, n)
			ids := h.ids
			clear(ids)
			var fresh []int64
			var spilled []bool // rows sent to disk
			setSeen[si] = setSeen[si] || n > 0
			mine := h.owned(skeys, ints, intKey, routed, n)
			// Without keys (a global aggregate, a grand total) every row is
			// in one group: looked up once per batch, not hashed per row.
			oneGroup, oneFound := len(skeys) == 0, false
			var oneID int32
			// The keys' hashes, computed before the lookups so that each run
			// of TouchRows keys can touch its slots first (routed batches
			// come hashed).
			var hashes []uint64
			switch {
			case routed != nil:
				hashes = routed.hashes
			case !intKey && !packed && !oneGroup && h.sets == nil:
				h.hashes = resized(h.hashes, n)
				hashes = h.hashes
				for i := range hashes {
					hashes[i] = h.table.Hash(encp.Key(i))
				}
			}
			if wide != nil {
				h.makeTable(false)
			}
			byInt := intKey || packed
			touch := byInt && h.table64.OutgrowsCache() || !byInt && hashes != nil && h.table.OutgrowsCache()
			for i := 0; i < look; i++ {
				if touch && i%vectorized.TouchRows == 0 {
					h.touch(ints, hashes, mine, byInt, i, min(i+vectorized.TouchRows, n))
				}
				if mine != nil && !mine[i] {
					continue
				}
				var g uint32
				var ok bool
				null := nullable && skeys[0].IsNull(i)
				asInt := byInt && (wide == nil || !wide[i])
				var g32 int32
				var key []byte
				var spot vectorized.Spot
				switch {
				case null:
					g32, ok = int32(h.nullGroup), h.nullGroup >= 0
				case asInt:
					g32, ok = h.table64.Get(ints[i])
				case oneGroup && oneFound:
					g32, ok = oneID, true
				default:
					key = encp.Key(i)
					if h.sets != nil {
						keyBuf = append(append(keyBuf[:0], byte(si), byte(si>>8)), key...)
						key = keyBuf
					}
					var hash uint64
					if hashes != nil {
						hash = hashes[i]
					} else {
						hash = h.table.Hash(key)
					}
					g32, ok, spot = h.table.Find(key, hash)
				}
				g = uint32(g32)
				if !ok && h.spills != nil {
					if spilled == nil {
						spilled = make([]bool, n)
					}
					spilled[i] = true
					continue
				}
				if !ok {
					g = uint32(h.ngroups + len(fresh))
					switch {
					case null:
						h.nullGroup = int64(g)
					case asInt:
						h.table64.Put(ints[i], int32(g))
						keyBytes += 8
					default:
						h.table.Insert(spot, key, int32(g))
						keyBytes += len(key)
					}
					fresh = append(fresh, int64(i))
					h.gid = append(h.gid, gid)
				}
				ids[i] = g
				oneID, oneFound = int32(g), oneGroup
			}
			for i := look; i < n; i++ {
				ids[i] = ids[0]
			}
			if len(fresh) > 0 {
				part, err := vectorized.TakeColumns(ctx, h.ec.Mem, skeys, fresh)
				if err != nil {
					releaseArrays(skeys)
					releaseArrays(keys)
					return err
				}
				h.keyParts = append(h.keyParts, part)
				h.partSets = append(h.partSets, si)
				h.grow(h.ngroups + len(fresh))
			}
			var inMem []bool
			if spilled != nil {
				err := error(nil)
				if byInt {
					err, encp = enc.Encode(skeys, n), &enc
				}
				if err == nil {
					err = h.spills[si].write(ctx, b, encp, spilled)
				}
				if err != nil {
					releaseArrays(skeys)
					releaseArrays(keys)
					return err
				}
				inMem = make([]bool, n)
				for i, sp := range spilled {
					inMem[i] = !sp && (mine == nil || mine[i])
				}
			} else if mine != nil {
				inMem = mine
			}
			releaseArrays(skeys)
			if err := h.updateOwn(ctx, b, ids, inMem); err != nil {
				releaseArrays(keys)
				return err
			}
		}
		releaseArrays(keys)
		if sb := h.stateBytes(keyBytes); h.ec.overBudget(&h.mem, base, sb, sb) {
			// Spilled rows would be missing from the groups the derived
			// sets are computed from: from here on every set reads the
			// rows.
			if from != nil {
				if err := derive(); err != nil {
					return err
				}
			}
			// New groups go to disk, and existing groups' DISTINCT sets
			// stop growing.
			for canSpill && len(h.spills) < len(sets) {
				p, err := newPartitioner(h.ec, h.child.Schema(), maphash.MakeSeed())
				if err != nil {
					return err
				}
				h.spills = append(h.spills, p)
			}
			if err := h.spillDistinct(); err != nil {
				return err
			}
			// Grouped, twice the budget: the groups that filled it keep
			// their share of the input, and spread evenly they end near
			// the budget; only skew past that (few groups collecting most
			// values) is refused.
			times := 1
			if len(h.groups) > 0 {
				times = 2
			}
			if err := h.checkHeld(h.nparts, times); err != nil {
				return err
			}
		}
	}
	if from != nil {
		if err := derive(); err != nil {
			return err
		}
	}
	// The empty grouping set (and a global aggregate) yields a row even
	// for empty input.
	for si, s := range sets {
		if len(s) > 0 || setSeen[si] {
			continue
		}
		nulls := make([]arrow.Array, len(h.groups))
		for i, g := range h.groups {
			nulls[i] = vectorized.NullArray(h.ec.Mem, g.DataType(), 1)
		}
		h.keyParts = append(h.keyParts, nulls)
		h.gid = append(h.gid, int64(1)<<len(h.groups)-1)
		h.grow(h.ngroups + 1)
	}
	h.table, h.table64, h.partSets = nil, nil, nil
	for si, p := range h.spills {
		if err := p.finish(); err != nil {
			return err
		}
		var subSets [][]int
		if h.sets != nil {
			subSets = [][]int{sets[si]}
		}
		for _, f := range p.files {
			if f.rows == 0 {
				f.remove()
				continue
			}
			sub, err := NewHashAggregate(h.ec, spillOperator(h.ec, f), h.groups, nil, h.aggs, subSets)
			if err != nil {
				return err
			}
			sub.(*hashAggOp).depth = h.depth + 1
			h.subs.ops = append(h.subs.ops, sub)
		}
	}
	h.spills = nil // the sub-aggregates own the files now
	if h.ngroups == 0 {
		return nil
	}
	if err := h.finishDistinct(ctx, h.ngroups); err != nil {
		return err
	}
	res, err := h.output(h.ngroups)
	h.releaseKeys()
	h.resetAccs()
	if err != nil {
		return err
	}
	defer res.Release()
	bs := h.ec.batchSize()
	for lo := int64(0); lo < res.NumRows(); lo += int64(bs) {
		h.out.batches = append(h.out.batches, res.NewSlice(lo, min(lo+int64(bs), res.NumRows())))
	}
	return nil
}

func (h *hashAggOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := h.out.next()
	if !errors.Is(err, io.EOF) {
		return b, err
	}
	return h.subs.next(ctx, h.schema, &h.out.cur)
}

func (h *hashAggOp) Close() error {
	h.out.close()
	h.releaseKeys()
	h.releaseAccs()
	for _, p := range h.spills {
		p.remove()
	}
	h.spills = nil
	h.mem.free()
	return errors.Join(h.subs.close(), h.child.Close())
}

// keys returns the group keys of b, and b's routedBatch when this is a
// worker of a parallel aggregation (which computed them once for all); the
// caller releases them.
func (h *hashAggOp) keys(ctx context.Context, b arrow.RecordBatch) ([]arrow.Array, *routedBatch, error) {
	if h.in == nil {
		keys, err := evalAll(ctx, h.ec, h.groups, b)
		return keys, nil, err
	}
	r := h.in.cur
	if err := r.keysOf(ctx, h); err != nil {
		return nil, nil, err
	}
	for _, k := range r.keys {
		k.Retain()
	}
	return slices.Clone(r.keys), r, nil
}

// touch touches the slots of rows [i, end)'s keys (see BytesTable.Touch),
// of h's own rows only when mine is not nil.
func (h *hashAggOp) touch(ints []int64, hashes []uint64, mine []bool, intKey bool, i, end int) {
	var only []bool
	if mine != nil {
		only = mine[i:end]
	}
	switch {
	case intKey:
		h.touched += h.table64.Touch(ints[i:end], only)
	case hashes != nil:
		h.touched += h.table.Touch(hashes[i:end], only)
	}
}

// owned returns which rows belong to this worker of a parallel aggregation
// (nil = all). Every worker computes the same function of the key: of the
// integer (or packed integers), or the routed batch's hash of the encoded
// key.
func (h *hashAggOp) owned(keys []arrow.Array, ints []int64, intKey bool, routed *routedBatch, n int) []bool {
	if h.nparts <= 1 {
		return nil
	}
	h.mine = resized(h.mine, n)
	mine := h.mine
	intPart := func(v int64) int { return int(uint64(v) * 0x9E3779B97F4A7C15 >> 32 % uint64(h.nparts)) }
	switch {
	case intKey:
		for i, v := range ints {
			w := 0
			if keys[0].IsValid(i) {
				w = intPart(v)
			}
			mine[i] = w == h.part
		}
	case routed.ints != nil:
		for i, v := range routed.ints {
			if routed.wide != nil && routed.wide[i] {
				mine[i] = int(routed.hashes[i]%uint64(h.nparts)) == h.part
			} else {
				mine[i] = intPart(v) == h.part
			}
		}
	default:
		for i, hash := range routed.hashes {
			mine[i] = int(hash%uint64(h.nparts)) == h.part
		}
	}
	return mine
}

// packFor returns the packing of keys (nil: they do not pack), made once
// per key types.
func (h *hashAggOp) packFor(keys []arrow.Array) *groupPack {
	same := len(h.packOf) == len(keys)
	for i := 0; same && i < len(keys); i++ {
		same = arrow.TypeEqual(h.packOf[i], keys[i].DataType())
	}
	if !same {
		h.packOf = h.packOf[:0]
		for _, k := range keys {
			h.packOf = append(h.packOf, k.DataType())
		}
		h.pack = newGroupPack(keys)
	}
	return h.pack
}

// setSources returns, per grouping set, the set its groups are computed
// from (-1: from the input rows), or nil when every set reads the rows. A
// set is computed from the smallest other set that holds all its columns
// (ROLLUP's (a, b) from (a, b, c)): a coarser group's aggregates are those
// of the finer groups it covers folded together, which fewer groups than
// rows make cheaper. Only aggregates whose states fold do (COUNT, SUM,
// AVG, MIN, MAX; not DISTINCT; see mergeGroups).
func (h *hashAggOp) setSources(sets [][]int) []int {
	if h.sets == nil || len(sets) < 2 || len(h.groups) == 0 {
		return nil
	}
	for _, a := range h.accs {
		if !mergeable(a) {
			return nil
		}
	}
	cols := make([]uint64, len(sets))
	for i, s := range sets {
		for _, c := range s {
			cols[i] |= 1 << c
		}
	}
	from := make([]int, len(sets))
	derived := false
	for i := range sets {
		from[i] = -1
		for j := range sets {
			// A source has more columns, or as many (a repeated set) and
			// comes first, so that no set is its own source's source.
			covers := cols[j]&cols[i] == cols[i] && j != i
			before := len(sets[j]) > len(sets[i]) || len(sets[j]) == len(sets[i]) && j < i
			if !covers || !before {
				continue
			}
			if from[i] < 0 || len(sets[j]) < len(sets[from[i]]) {
				from[i] = j
			}
		}
		derived = derived || from[i] >= 0
	}
	if !derived {
		return nil
	}
	return from
}

// deriveSets computes the sets with a source (setSources) from their
// source's groups, sources first. Nothing has spilled yet, so the source's
// groups in memory hold all the rows read so far.
func (h *hashAggOp) deriveSets(ctx context.Context, sets [][]int, from []int, enc *vectorized.KeyEncoder, keyBuf *[]byte, keyBytes *int, setSeen []bool) error {
	order := make([]int, 0, len(sets))
	for si := range sets {
		if from[si] >= 0 {
			order = append(order, si)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(sets[b]) - len(sets[a]) })
	for _, si := range order {
		src := from[si]
		setSeen[si] = setSeen[src]
		start := 0
		for p, nparts := 0, len(h.keyParts); p < nparts; p++ {
			n := h.keyParts[p][0].Len()
			if h.partSets[p] == src {
				if err := h.deriveChunk(ctx, si, sets[si], h.keyParts[p], start, enc, keyBuf, keyBytes); err != nil {
					return err
				}
			}
			start += n
		}
	}
	return nil
}

// deriveChunk folds the groups [start, start+len) of one chunk of keyParts
// into the groups of set si.
func (h *hashAggOp) deriveChunk(ctx context.Context, si int, set []int, part []arrow.Array, start int, enc *vectorized.KeyEncoder, keyBuf *[]byte, keyBytes *int) error {
	n := part[0].Len()
	skeys, gid := h.setKeys(part, set, n)
	defer releaseArrays(skeys)
	if err := enc.Encode(skeys, n); err != nil {
		return err
	}
	h.ids, h.srcIDs = resized(h.ids, n), resized(h.srcIDs, n)
	h.makeTable(false)
	var fresh []int64
	for i := 0; i < n; i++ {
		*keyBuf = append(append((*keyBuf)[:0], byte(si), byte(si>>8)), enc.Key(i)...)
		g, ok, spot := h.table.Find(*keyBuf, h.table.Hash(*keyBuf))
		if !ok {
			g = int32(h.ngroups + len(fresh))
			h.table.Insert(spot, *keyBuf, g)
			*keyBytes += len(*keyBuf)
			fresh = append(fresh, int64(i))
			h.gid = append(h.gid, gid)
		}
		h.ids[i], h.srcIDs[i] = uint32(g), uint32(start+i)
	}
	if len(fresh) > 0 {
		keys, err := vectorized.TakeColumns(ctx, h.ec.Mem, skeys, fresh)
		if err != nil {
			return err
		}
		h.keyParts = append(h.keyParts, keys)
		h.partSets = append(h.partSets, si)
		h.grow(h.ngroups + len(fresh))
	}
	for i, a := range h.accs {
		if _, err := mergeGroups(a, h.srcIDs, h.ids); err != nil {
			return fmt.Errorf("%s: %w", h.aggs[i].Func, err)
		}
	}
	return nil
}

// updateOwn is update; a worker of a parallel aggregation with own first
// takes the rows it keeps, of the columns the aggregates read, so that it
// does not evaluate the arguments (q59's and q99's CASE pivots) over the
// other workers' rows too, nor copy columns only the keys read.
func (h *hashAggOp) updateOwn(ctx context.Context, b arrow.RecordBatch, ids []uint32, rows []bool) error {
	if h.own == nil || rows == nil {
		return h.update(ctx, b, ids, rows)
	}
	h.ownRows, h.ownIDs = h.ownRows[:0], h.ownIDs[:0]
	for i, r := range rows {
		if r {
			h.ownRows = append(h.ownRows, int64(i))
			h.ownIDs = append(h.ownIDs, ids[i])
		}
	}
	if len(h.ownRows) == 0 {
		return nil
	}
	cols := make([]arrow.Array, len(h.own.cols))
	for i, c := range h.own.cols {
		cols[i] = b.Column(c)
	}
	taken, err := vectorized.TakeColumns(ctx, h.ec.Mem, cols, h.ownRows)
	if err != nil {
		return err
	}
	own := array.NewRecordBatch(h.own.schema, taken, int64(len(h.ownRows)))
	releaseArrays(taken)
	defer own.Release()
	return h.updateWith(ctx, h.own.aggs, h.own.filters, own, h.ownIDs, nil)
}

// ownArgs is what a worker of a parallel aggregation takes of its own rows
// to evaluate the aggregates' arguments and filters: the columns they read,
// and the aggregates remapped to those columns.
type ownArgs struct {
	cols    []int
	schema  *arrow.Schema
	aggs    []AggregateSpec
	filters []*predicate
}

// newOwnArgs returns the ownArgs of aggs over input, or nil when their
// arguments and filters are only columns and constants (evaluated over
// every row, they cost nothing). Arguments exprColumns does not know take
// every column.
func newOwnArgs(input *arrow.Schema, aggs []AggregateSpec) *ownArgs {
	var es []Expr
	computes := false
	for _, a := range aggs {
		for _, e := range append(slices.Clone(a.Args), a.Filter) {
			switch e.(type) {
			case nil:
				continue
			case *ColumnExpr, *LiteralExpr:
			default:
				computes = true
			}
			es = append(es, e)
		}
	}
	if !computes {
		return nil
	}
	o := &ownArgs{aggs: slices.Clone(aggs), filters: make([]*predicate, len(aggs))}
	cols, narrow, nes, ok := narrowExprs(input, es...)
	if !ok {
		o.schema, nes = input, es
		for i := range input.NumFields() {
			o.cols = append(o.cols, i)
		}
	} else {
		o.cols, o.schema = cols, narrow
	}
	for i, a := range o.aggs {
		args := make([]Expr, 0, len(a.Args))
		for range a.Args {
			args, nes = append(args, nes[0]), nes[1:]
		}
		o.aggs[i].Args = args
		if a.Filter != nil {
			o.aggs[i].Filter, nes = nes[0], nes[1:]
			o.filters[i] = newPredicate(o.aggs[i].Filter)
		}
	}
	return o
}
