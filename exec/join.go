package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// JoinType selects which rows a join returns.
type JoinType int

// Join types. Semi and anti joins return left columns only. NullAwareAntiJoin
// is the anti join of NOT IN: a NULL key on either side makes the predicate
// unknown, so if the right side has a NULL key no row qualifies, and a left
// row with a NULL key qualifies only when the right side is empty.
const (
	InnerJoin JoinType = iota
	LeftJoin
	RightJoin
	FullJoin
	SemiJoin
	AntiJoin
	NullAwareAntiJoin
)

func (t JoinType) String() string {
	return [...]string{"inner", "left", "right", "full", "semi", "anti", "null-aware anti"}[t]
}

func (t JoinType) leftOnly() bool { return t == SemiJoin || t == AntiJoin || t == NullAwareAntiJoin }

// joinSchema is left ++ right (right nullable for left/full, left nullable
// for right/full); semi and anti joins keep the left schema.
func joinSchema(typ JoinType, l, r *arrow.Schema) *arrow.Schema {
	if typ.leftOnly() {
		return l
	}
	var fields []arrow.Field
	for _, f := range l.Fields() {
		f.Nullable = f.Nullable || typ == RightJoin || typ == FullJoin
		fields = append(fields, f)
	}
	for _, f := range r.Fields() {
		f.Nullable = f.Nullable || typ == LeftJoin || typ == FullJoin
		fields = append(fields, f)
	}
	return arrow.NewSchema(fields, nil)
}

// CoerceJoinKeys casts each key pair to a common type so equal values
// encode alike (vectorized.KeyEncoder), as the hash join does.
func CoerceJoinKeys(leftKeys, rightKeys []Expr) ([]Expr, []Expr, error) {
	return coerceKeys(leftKeys, rightKeys)
}

// coerceKeys casts each key pair to a common type so equal values encode
// alike.
func coerceKeys(leftKeys, rightKeys []Expr) ([]Expr, []Expr, error) {
	if len(leftKeys) != len(rightKeys) {
		return nil, nil, fmt.Errorf("%w: join has %d left keys and %d right keys", ErrInvalid, len(leftKeys), len(rightKeys))
	}
	lk, rk := make([]Expr, len(leftKeys)), make([]Expr, len(rightKeys))
	for i := range leftKeys {
		t, ok := CommonType(leftKeys[i].DataType(), rightKeys[i].DataType())
		if !ok || !vectorized.Comparable(t) {
			return nil, nil, fmt.Errorf("%w: join key %d: cannot compare %s (%s) with %s (%s)", ErrInvalid, i+1,
				leftKeys[i], leftKeys[i].DataType(), rightKeys[i], rightKeys[i].DataType())
		}
		var err error
		if lk[i], err = castTo(leftKeys[i], t); err != nil {
			return nil, nil, err
		}
		if rk[i], err = castTo(rightKeys[i], t); err != nil {
			return nil, nil, err
		}
	}
	return lk, rk, nil
}

// candidates enumerates, for a left row, the right rows it may match.
type candidates interface {
	// first returns the first candidate of left row i (-1 = none).
	first(i int) int32
	// next returns the candidate after r for the same left row (-1 = end).
	next(r int32) int32
}

// hashIndex chains build rows with equal keys. Built once, then only
// read: the probers of a parallel probe share it.
type hashIndex struct {
	heads   *vectorized.BytesTable // encoded keys
	heads64 *vectorized.IntTable   // integer keys packed by packer
	packer  *keyPacker
	// dense replaces heads64 for keys in [denseMin, denseMin+len(dense)).
	dense    []int32
	denseMin int64
	chain    []int32
	// unique: no two build rows share a key (every chain is one row long),
	// so the probe needs no chain walk.
	unique bool
}

// hashProbe is one prober's lookups into a shared hashIndex: the first
// candidate of each row of its current batch, and its key scratch.
type hashProbe struct {
	*hashIndex
	probe []int32
	keys  keyScratch
	enc   vectorized.KeyEncoder
}

// maxDenseSpan bounds the key span of a dense table relative to the
// build rows: at most 4 bytes per key value, 8 per build row (+ a little).
func maxDenseSpan(n int) uint64 { return 2*uint64(n) + 1024 }

// buildInts indexes build rows by their packed integer keys and reports
// whether a key is NULL. Keys spanning a range of at most maxDenseSpan
// (dense surrogate keys, as dimension tables have) index an array by key
// minus the minimum: a probe is one load, no hashing.
func (h *hashIndex) buildInts(p *keyPacker, keys []arrow.Array, n int) (hasNull bool) {
	h.packer = p
	var sc keyScratch
	vals, st := p.pack(keys, n, &sc)
	lo, hi, seen := int64(0), int64(0), false
	for r, v := range vals {
		if st[r] == keyNull {
			hasNull = true
			continue
		}
		if !seen || v < lo {
			lo = v
		}
		if !seen || v > hi {
			hi = v
		}
		seen = true
	}
	// hi >= lo, so the unsigned difference is the exact span.
	if span := uint64(hi) - uint64(lo); seen && span < maxDenseSpan(n) {
		h.dense, h.denseMin = make([]int32, span+1), lo
		for i := range h.dense {
			h.dense[i] = -1
		}
	} else {
		h.heads64 = vectorized.NewIntTable(n)
	}
	h.unique = true
	// Insert in reverse so chains list rows in input order.
	for r := n - 1; r >= 0; r-- {
		h.chain[r] = -1
		if st[r] == keyNull {
			continue
		}
		var head int32
		var ok bool
		if h.dense != nil {
			d := uint64(vals[r]) - uint64(lo)
			head, ok = h.dense[d], h.dense[d] >= 0
			h.dense[d] = int32(r)
		} else {
			head, ok = h.heads64.Get(vals[r])
			h.heads64.Put(vals[r], int32(r))
		}
		if ok {
			h.chain[r] = head
			h.unique = false
		}
	}
	return hasNull
}

// probeInts sets h.probe (first candidate, -1 = none) and nulls (NULL key)
// for rows [0, n) of the probe side's key columns.
func (h *hashProbe) probeInts(keys []arrow.Array, n int, nulls []bool) {
	vals, st := h.packer.pack(keys, n, &h.keys)
	probe := h.probe[:n]
	if h.dense != nil {
		lo, span := uint64(h.denseMin), uint64(len(h.dense))
		for i, k := range vals {
			p := int32(-1)
			if d := uint64(k) - lo; d < span && st[i] == keyOK {
				p = h.dense[d]
			}
			probe[i] = p
		}
	} else {
		for i, k := range vals {
			p := int32(-1)
			if st[i] == keyOK {
				if r, ok := h.heads64.Get(k); ok {
					p = r
				}
			}
			probe[i] = p
		}
	}
	for i, s := range st {
		nulls[i] = s == keyNull
	}
}

func (h *hashProbe) first(i int) int32  { return h.probe[i] }
func (h *hashProbe) next(r int32) int32 { return h.chain[r] }

// allCandidates makes every right row a candidate (nested-loop join).
type allCandidates struct{ n int32 }

func (a *allCandidates) first(int) int32 {
	if a.n == 0 {
		return -1
	}
	return 0
}

func (a *allCandidates) next(r int32) int32 {
	if r+1 >= a.n {
		return -1
	}
	return r + 1
}

// joinOp is the shared probe loop of the hash and nested-loop joins: the
// right input is materialized, each left batch is matched against it in
// chunks of at most BatchSize candidate pairs, the residual filters the
// pairs, and outer/semi/anti rows are added per left batch. A hash join
// may probe on several goroutines (join_parallel.go).
type joinOp struct {
	ec          *Context
	mem         memAccount // the build side
	left, right Operator
	typ         JoinType
	leftKeys    []Expr
	rightKeys   []Expr
	residual    Expr
	// resExpr is residual rewritten over resSchema: only the columns
	// resCols (indexes into left ++ right) it reads; nil if unknown.
	resExpr   Expr
	resCols   []int
	resSchema *arrow.Schema
	// resEval is resExpr, else residual: what each prober's predicate
	// evaluates.
	resEval    Expr
	schema     *arrow.Schema
	pairSchema *arrow.Schema // left ++ right, for the residual

	opened bool
	build  *table
	hash   *hashIndex
	merge  *mergeCandidates
	// matched marks build rows that found a partner (right/full joins).
	matched      []bool
	buildHasNull bool
	// ranges[i], when set, receives the range of build key i.
	ranges []*KeyRange

	// p probes the left batches on the caller's goroutine.
	p         prober
	leftDone  bool
	rightTail int // position when emitting unmatched build rows
	cur       current

	// parallel: the probe may run on several goroutines (a hash join
	// whose left order nothing needs, KeepLeftOrder); par runs it once
	// started.
	parallel bool
	par      *parallelProbe
	probed   int // left batches probed serially

	// Grace mode: when the build side exceeds the memory budget both inputs
	// are partitioned to disk by key hash and joined partition by partition.
	depth  int
	graced bool
	subs   subQueue

	// Block mode: a nested-loop join whose build side passed the budget.
	block *blockJoin
	// leftSeen, when set, receives which rows of each left batch matched,
	// in input order (block joins gather them across blocks).
	leftSeen func(matched []bool)
}

// prober is the state of probing left batches, one after another: the
// current batch, its candidates and match flags, scratch, the residual's
// predicate (not safe for concurrent use) and the output coalescer. The
// join's build table and index are shared and only read.
type prober struct {
	j     *joinOp
	cands candidates
	hash  *hashProbe // cands, for a hash join
	// resPred evaluates j.resEval.
	resPred *predicate

	lb       arrow.RecordBatch
	lrow     int
	lcand    int32
	lmatched []bool
	lnullKey []bool
	// Scratch reused across left batches: the null-key flags, the pairs
	// of nextPairs and the rows of leftTail.
	nullKeys []bool
	li, ri   []int64
	tailRows []int64
	tail     bool // emitting unmatched left rows of lb
	out      coalescer
}

func newProber(j *joinOp, c candidates) prober {
	p := prober{j: j, cands: c}
	p.hash, _ = c.(*hashProbe)
	if j.resEval != nil {
		p.resPred = newPredicate(j.resEval)
	}
	return p
}

// release drops what the prober holds.
func (p *prober) release() {
	p.endLeft()
	p.out.release()
}

// NewHashJoin joins left and right on leftKeys[i] = rightKeys[i] (NULL keys
// never match) and an optional residual predicate over left ++ right columns.
// The right input is the build side. Past the first left batch, the left
// batches may be probed on several goroutines, so the output order is
// arbitrary (KeepLeftOrder keeps it). If the build side exceeds
// Context.MemoryLimit, both inputs are hash-partitioned to disk and joined
// partition by partition (grace hash join; the null-aware anti join, whose
// answer depends on the whole build side, notes a NULL build key while
// partitioning).
func NewHashJoin(ec *Context, left, right Operator, typ JoinType, leftKeys, rightKeys []Expr, residual Expr) (Operator, error) {
	if len(leftKeys) == 0 {
		return nil, fmt.Errorf("%w: hash join needs at least one key (use a nested-loop join)", ErrInvalid)
	}
	lk, rk, err := coerceKeys(leftKeys, rightKeys)
	if err != nil {
		return nil, err
	}
	j, err := newJoinOp(ec, left, right, typ, lk, rk, residual)
	if err != nil {
		return nil, err
	}
	j.parallel = true
	return j, nil
}

// NewNestedLoopJoin joins left and right on an arbitrary condition over
// left ++ right columns (nil = cross join). A right input larger than
// Context.MemoryLimit goes to disk and is joined in blocks of half of it,
// each with the whole left input, which a Spool replays.
func NewNestedLoopJoin(ec *Context, left, right Operator, typ JoinType, cond Expr) (Operator, error) {
	if typ == NullAwareAntiJoin {
		return nil, fmt.Errorf("%w: null-aware anti join needs equality keys", ErrInvalid)
	}
	return newJoinOp(ec, left, right, typ, nil, nil, cond)
}

func newJoinOp(ec *Context, left, right Operator, typ JoinType, lk, rk []Expr, residual Expr) (*joinOp, error) {
	if typ < InnerJoin || typ > NullAwareAntiJoin {
		return nil, fmt.Errorf("%w: unknown join type %d", ErrInvalid, typ)
	}
	if residual != nil && residual.DataType().ID() != arrow.BOOL {
		return nil, fmt.Errorf("%w: join condition %s has type %s, not boolean", ErrInvalid, residual, residual.DataType())
	}
	j := &joinOp{
		ec: ec, left: left, right: right, typ: typ, leftKeys: lk, rightKeys: rk, residual: residual,
		schema:     joinSchema(typ, left.Schema(), right.Schema()),
		pairSchema: joinSchema(InnerJoin, left.Schema(), right.Schema()),
	}
	if residual != nil {
		if cols, schema, re, ok := NarrowExpr(residual, j.pairSchema); ok && len(cols) > 0 {
			// Left columns come first in cols (they have lower indexes),
			// matching compactPairs' order.
			j.resCols, j.resSchema, j.resExpr = cols, schema, re
		}
		j.resEval = residual
		if j.resExpr != nil {
			j.resEval = j.resExpr
		}
	}
	return j, nil
}

func (j *joinOp) Schema() *arrow.Schema { return j.schema }

func (j *joinOp) Open(ctx context.Context) error {
	if j.opened {
		return nil
	}
	j.opened = true
	// With key ranges to publish, the probe side opens after the build, so
	// its scans see them. Otherwise first: a parallel scan there starts
	// reading while the build runs.
	openLeft := j.ranges == nil
	if openLeft {
		if err := j.left.Open(ctx); err != nil {
			return err
		}
	}
	if j.reducible() {
		if err := j.reduceBuild(ctx); err != nil {
			return err
		}
	}
	if err := j.right.Open(ctx); err != nil {
		return err
	}
	var t *table
	var err error
	if j.canSpill() {
		if t, j.graced, err = j.buildOrSpill(ctx); err != nil {
			return err
		}
		if j.graced {
			return nil // grace partitioned the probe side
		}
	} else {
		// Past maxSpillDepth a hash join finishes in memory; a nested-loop
		// join over the budget joins its build side block by block.
		var over []arrow.RecordBatch
		if t, over, err = materialize(ctx, j.ec, &j.mem, j.right, j.rightKeys, len(j.leftKeys) == 0 && j.depth < maxSpillDepth); err != nil {
			return err
		}
		if over != nil {
			return j.startBlocks(ctx, over)
		}
	}
	j.build = t
	for i, r := range j.ranges {
		if r != nil {
			r.publish(t.keys[i])
		}
	}
	if !openLeft {
		if err := j.left.Open(ctx); err != nil {
			return err
		}
	}
	if j.typ == RightJoin || j.typ == FullJoin {
		j.matched = make([]bool, t.n)
	}
	if len(j.leftKeys) == 0 {
		j.p = newProber(j, &allCandidates{n: int32(t.n)})
		return nil
	}
	if j.merge != nil {
		j.p = newProber(j, j.merge)
		return j.merge.init(t)
	}
	h, hasNull, err := newHashIndex(t.keys, t.n)
	if err != nil {
		return err
	}
	j.buildHasNull = hasNull
	j.hash = h
	j.p = newProber(j, &hashProbe{hashIndex: h})
	return nil
}

// newHashIndex indexes n rows by their key columns and reports whether a
// key is NULL.
func newHashIndex(keys []arrow.Array, n int) (*hashIndex, bool, error) {
	h := &hashIndex{chain: make([]int32, n)}
	if p, ok := newKeyPacker(keys, n); ok {
		// Integer keys packed into one int64: an integer table, no key
		// encoding.
		return h, h.buildInts(p, keys, n), nil
	}
	h.heads = vectorized.NewBytesTable(n)
	h.unique = true
	var enc vectorized.KeyEncoder
	if err := enc.Encode(keys, n); err != nil {
		return nil, false, err
	}
	hasNull := false
	// Insert in reverse so chains list rows in input order.
	for r := n - 1; r >= 0; r-- {
		h.chain[r] = -1
		if enc.HasNull[r] {
			hasNull = true
			continue
		}
		if head, ok := h.heads.Put(enc.Key(r), int32(r)); ok {
			h.chain[r] = head
			h.unique = false
		}
	}
	return h, hasNull, nil
}

// lookup sets h.probe (the first candidate of each row, -1 = none) and
// nulls (the row's key is NULL) for n rows of probe-side key columns.
func (h *hashProbe) lookup(keys []arrow.Array, n int, nulls []bool) error {
	h.probe = resized(h.probe, n)
	if h.packer != nil {
		h.probeInts(keys, n, nulls)
		return nil
	}
	if err := h.enc.Encode(keys, n); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		h.probe[i] = -1
		nulls[i] = h.enc.HasNull[i]
		if nulls[i] {
			continue
		}
		if r, ok := h.heads.Get(h.enc.Key(i)); ok {
			h.probe[i] = r
		}
	}
	return nil
}

// startLeft installs a new left batch for probing.
func (p *prober) startLeft(ctx context.Context, b arrow.RecordBatch) error {
	j := p.j
	n := int(b.NumRows())
	p.lnullKey = nil
	if j.merge != nil {
		keys, err := evalAll(ctx, j.ec, j.leftKeys, b)
		if err != nil {
			return err
		}
		nulls, err := j.merge.probe(keys, n)
		releaseArrays(keys)
		if err != nil {
			return err
		}
		p.lnullKey = nulls
	}
	if p.hash != nil {
		keys, err := evalAll(ctx, j.ec, j.leftKeys, b)
		if err != nil {
			return err
		}
		p.nullKeys = resized(p.nullKeys, n)
		err = p.hash.lookup(keys, n, p.nullKeys)
		releaseArrays(keys)
		if err != nil {
			return err
		}
		p.lnullKey = p.nullKeys
	}
	b.Retain()
	p.lb = b
	p.lrow, p.tail = 0, false
	p.lcand = -2
	p.lmatched = resized(p.lmatched, n)
	clear(p.lmatched)
	return nil
}

func (p *prober) endLeft() {
	if p.lb != nil {
		p.lb.Release()
		p.lb = nil
	}
}

// nextPairs collects up to BatchSize candidate pairs of the current left
// batch. The slices are scratch, valid until the next call.
func (p *prober) nextPairs() (li, ri []int64) {
	bs := p.j.ec.batchSize()
	n := int(p.lb.NumRows())
	li, ri = p.li[:0], p.ri[:0]
	if h := p.hash; h != nil && h.unique {
		// At most one candidate per row: no chain to walk.
		for ; p.lrow < n && len(li) < bs; p.lrow++ {
			if r := h.probe[p.lrow]; r >= 0 {
				li = append(li, int64(p.lrow))
				ri = append(ri, int64(r))
			}
		}
		p.li, p.ri = li, ri
		return li, ri
	}
	for p.lrow < n && len(li) < bs {
		if p.lcand == -2 {
			p.lcand = p.cands.first(p.lrow)
		}
		for p.lcand >= 0 && len(li) < bs {
			li = append(li, int64(p.lrow))
			ri = append(ri, int64(p.lcand))
			p.lcand = p.cands.next(p.lcand)
		}
		if p.lcand < 0 {
			p.lrow++
			p.lcand = -2
		}
	}
	p.li, p.ri = li, ri
	return li, ri
}

// pairBatch gathers left rows li and build rows ri (-1 = NULL) into a batch
// of schema.
func (p *prober) pairBatch(ctx context.Context, schema *arrow.Schema, li, ri []int64, withRight bool) (arrow.RecordBatch, error) {
	j := p.j
	lcols, err := p.leftColumns(ctx, li)
	if err != nil {
		return nil, err
	}
	cols := lcols
	if withRight {
		rcols, err := vectorized.TakeColumns(ctx, j.ec.Mem, j.build.cols, ri)
		if err != nil {
			releaseArrays(lcols)
			return nil, err
		}
		cols = append(cols, rcols...)
	}
	b := array.NewRecordBatch(schema, cols, int64(len(li)))
	releaseArrays(cols)
	return b, nil
}

// leftColumns gathers rows li of the left batch. A run of consecutive rows
// (every probe row matching once, as in a join with a dimension table) is
// sliced instead of copied; the slice holds at most one input batch.
func (p *prober) leftColumns(ctx context.Context, li []int64) ([]arrow.Array, error) {
	run := len(li) > 0 && li[0] >= 0
	for k := 1; run && k < len(li); k++ {
		run = li[k] == li[0]+int64(k)
	}
	if !run {
		return vectorized.TakeColumns(ctx, p.j.ec.Mem, p.lb.Columns(), li)
	}
	cols := make([]arrow.Array, p.lb.NumCols())
	for c, a := range p.lb.Columns() {
		cols[c] = array.NewSlice(a, li[0], li[0]+int64(len(li)))
	}
	return cols, nil
}

func (j *joinOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if !j.opened {
		return nil, fmt.Errorf("%w: join read before Open", ErrInvalid)
	}
	if j.graced {
		return j.subs.next(ctx, j.schema, &j.cur)
	}
	if j.block != nil {
		return j.block.next(ctx)
	}
	if j.build == nil {
		return nil, fmt.Errorf("%w: join read after a failed Open", ErrInvalid)
	}
	if j.build.n == 0 && (j.typ == InnerJoin || j.typ == SemiJoin || j.typ == RightJoin) {
		return nil, io.EOF // nothing can match: do not read the left side
	}
	if j.par != nil {
		return j.nextParallel(ctx)
	}
	p := &j.p
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if j.leftDone {
			if out, err := p.out.flush(j.ec); out != nil || err != nil {
				return j.cur.set(out), err
			}
			return j.nextUnmatchedRight(ctx)
		}
		if p.lb == nil {
			if j.canProbeInParallel() {
				j.par = startParallelProbe(ctx, j)
				return j.nextParallel(ctx)
			}
			b, err := Next(ctx, j.left)
			if errors.Is(err, io.EOF) {
				j.leftDone = true
				continue
			}
			if err != nil {
				return nil, err
			}
			if err := p.startLeft(ctx, b); err != nil {
				return nil, err
			}
			j.probed++
		}
		if !p.tail {
			out, err := p.probeChunk(ctx)
			if err != nil {
				return nil, err
			}
			if out, err = j.emit(out); out != nil || err != nil {
				return out, err
			}
			continue
		}
		if j.leftSeen != nil {
			j.leftSeen(p.lmatched)
		}
		out, err := p.leftTail(ctx)
		p.endLeft()
		if err != nil {
			return nil, err
		}
		if out, err = j.emit(out); out != nil || err != nil {
			return out, err
		}
	}
}

// emit passes an output batch (nil: none) through the coalescer and
// returns what Next should return, if anything yet.
func (j *joinOp) emit(b arrow.RecordBatch) (arrow.RecordBatch, error) {
	if b == nil {
		return nil, nil
	}
	out, err := j.p.out.add(j.ec, b)
	if out == nil || err != nil {
		return nil, err
	}
	return j.cur.set(out), nil
}

// probeChunk matches the next chunk of pairs; it returns nil (and switches
// to the tail) when the left batch is exhausted.
func (p *prober) probeChunk(ctx context.Context) (arrow.RecordBatch, error) {
	j := p.j
	if j.typ.leftOnly() && j.residual == nil {
		// Existence is all that matters: no pairs to build.
		for i := range p.lmatched {
			p.lmatched[i] = p.cands.first(i) >= 0
		}
		p.tail = true
		return nil, nil
	}
	for {
		li, ri := p.nextPairs()
		if len(li) == 0 {
			p.tail = true
			return nil, nil
		}
		mask, keep, err := p.residualMask(ctx, li, ri)
		if err != nil {
			return nil, err
		}
		if j.typ != InnerJoin || j.matched != nil || j.leftSeen != nil {
			for k := range li {
				if mask == nil || mask[k] {
					p.lmatched[li[k]] = true
					if j.matched != nil {
						j.matched[ri[k]] = true
					}
				}
			}
		}
		if j.typ.leftOnly() || keep == 0 {
			continue
		}
		if mask != nil {
			// Gather the output columns of the surviving pairs only.
			n := 0
			for k, m := range mask {
				if m {
					li[n], ri[n] = li[k], ri[k]
					n++
				}
			}
			li, ri = li[:n], ri[:n]
		}
		return p.pairBatch(ctx, j.schema, li, ri, true)
	}
}

// residualMask evaluates the residual over candidate pairs (nil mask: no
// residual). When the residual's columns are known it gathers only those,
// so rejected pairs never have their other columns copied.
func (p *prober) residualMask(ctx context.Context, li, ri []int64) ([]bool, int, error) {
	j := p.j
	if j.residual == nil {
		return nil, len(li), nil
	}
	var b arrow.RecordBatch
	var err error
	if j.resExpr != nil {
		b, err = p.compactPairs(ctx, li, ri)
	} else {
		b, err = p.pairBatch(ctx, j.pairSchema, li, ri, true)
	}
	if err != nil {
		return nil, 0, err
	}
	defer b.Release()
	return evalMask(ctx, j.ec, p.resPred, b)
}

// compactPairs gathers the residual's columns of the pairs.
func (p *prober) compactPairs(ctx context.Context, li, ri []int64) (arrow.RecordBatch, error) {
	j := p.j
	nl := j.left.Schema().NumFields()
	lsrc, rsrc := make([]arrow.Array, 0, len(j.resCols)), make([]arrow.Array, 0, len(j.resCols))
	for _, c := range j.resCols {
		if c < nl {
			lsrc = append(lsrc, p.lb.Column(c))
		} else {
			rsrc = append(rsrc, j.build.cols[c-nl])
		}
	}
	lcols, err := vectorized.TakeColumns(ctx, j.ec.Mem, lsrc, li)
	if err != nil {
		return nil, err
	}
	rcols, err := vectorized.TakeColumns(ctx, j.ec.Mem, rsrc, ri)
	if err != nil {
		releaseArrays(lcols)
		return nil, err
	}
	cols := append(lcols, rcols...)
	b := array.NewRecordBatch(j.resSchema, cols, int64(len(li)))
	releaseArrays(cols)
	return b, nil
}

// leftTail returns the left rows a left/full/semi/anti join adds after the
// pairs of the current batch, or nil.
func (p *prober) leftTail(ctx context.Context) (arrow.RecordBatch, error) {
	j := p.j
	if j.typ == InnerJoin || j.typ == RightJoin {
		return nil, nil
	}
	li := p.tailRows[:0]
	defer func() { p.tailRows = li }()
	for i, m := range p.lmatched {
		var want bool
		switch j.typ {
		case LeftJoin, FullJoin, AntiJoin:
			want = !m
		case SemiJoin:
			want = m
		case NullAwareAntiJoin:
			switch {
			case j.build.n == 0:
				want = true
			case j.buildHasNull, p.lnullKey[i]:
				want = false
			default:
				want = !m
			}
		}
		if want {
			li = append(li, int64(i))
		}
	}
	if len(li) == 0 {
		return nil, nil
	}
	if j.typ.leftOnly() {
		if len(li) == int(p.lb.NumRows()) {
			// Every row qualifies: pass the batch on, no copy.
			p.lb.Retain()
			return p.lb, nil
		}
		return p.pairBatch(ctx, j.schema, li, nil, false)
	}
	ri := resized(p.ri, len(li))
	for i := range ri {
		ri[i] = -1
	}
	p.ri = ri
	return p.pairBatch(ctx, j.schema, li, ri, true)
}

// nextUnmatchedRight emits build rows no left row matched (right/full).
func (j *joinOp) nextUnmatchedRight(ctx context.Context) (arrow.RecordBatch, error) {
	if j.matched == nil {
		return nil, io.EOF
	}
	var li, ri []int64
	for j.rightTail < len(j.matched) && len(ri) < j.ec.batchSize() {
		if !j.matched[j.rightTail] {
			li = append(li, -1)
			ri = append(ri, int64(j.rightTail))
		}
		j.rightTail++
	}
	if len(ri) == 0 {
		return nil, io.EOF
	}
	lcols := make([]arrow.Array, j.left.Schema().NumFields())
	for i, f := range j.left.Schema().Fields() {
		lcols[i] = vectorized.NullArray(j.ec.Mem, f.Type, len(ri))
	}
	rcols, err := vectorized.TakeColumns(ctx, j.ec.Mem, j.build.cols, ri)
	if err != nil {
		releaseArrays(lcols)
		return nil, err
	}
	cols := append(lcols, rcols...)
	b := array.NewRecordBatch(j.schema, cols, int64(len(ri)))
	releaseArrays(cols)
	return j.cur.set(b), nil
}

func (j *joinOp) Close() error {
	// The workers read the left input and the build: stop them first.
	j.par.stop()
	j.cur.release()
	j.p.release()
	if j.build != nil {
		j.build.release()
		j.build = nil
	}
	j.mem.free()
	if j.merge != nil {
		j.merge.release()
	}
	var berr error
	if j.block != nil {
		berr = j.block.close()
		j.block = nil
	}
	return errors.Join(berr, j.left.Close(), j.right.Close(), j.subs.close())
}

// Key read status of keyPacker.reader.
const (
	keyOK = iota
	keyNull
	keyOutOfRange // cannot equal any build key
)

// keyPacker packs integer key columns into one int64: each column's value
// minus the build side's minimum, in as many bits as the build side's range
// needs. It applies when the ranges fit in 63 bits together (always for a
// single key, which is used as is).
type keyPacker struct {
	mins, maxs []int64
	widths     []uint
}

func newKeyPacker(keys []arrow.Array, n int) (*keyPacker, bool) {
	for _, k := range keys {
		if !vectorized.IsIntKeyType(k.DataType()) {
			return nil, false
		}
	}
	p := &keyPacker{}
	if len(keys) == 1 {
		return p, true
	}
	getters := make([]func(int) int64, len(keys))
	for c, k := range keys {
		getters[c], _ = vectorized.IntKey(k)
	}
	p.mins, p.maxs = make([]int64, len(keys)), make([]int64, len(keys))
	seen := false
	for r := 0; r < n; r++ {
		if vectorized.AnyNull(keys, r) {
			continue
		}
		for c, g := range getters {
			v := g(r)
			if !seen || v < p.mins[c] {
				p.mins[c] = v
			}
			if !seen || v > p.maxs[c] {
				p.maxs[c] = v
			}
		}
		seen = true
	}
	total := uint(0)
	for c := range keys {
		// max >= min, so the unsigned difference is the exact span.
		w := uint(bits.Len64(uint64(p.maxs[c]) - uint64(p.mins[c])))
		p.widths = append(p.widths, w)
		total += w
	}
	return p, total <= 63
}

// keyScratch holds pack's per-batch buffers, reused across batches.
type keyScratch struct {
	vals, wide []int64
	st         []uint8
}

// pack returns the packed key of every row of keys (of the build side's
// types) and its status: keyOK, keyNull or keyOutOfRange. The slices stay
// valid until the next pack with the same scratch.
func (p *keyPacker) pack(keys []arrow.Array, n int, sc *keyScratch) ([]int64, []uint8) {
	sc.st = resized(sc.st, n)
	clear(sc.st)
	sc.wide = resized(sc.wide, n) // IntKeyValues widens into it without growing
	var vals []int64
	if p.widths == nil {
		vals = vectorized.IntKeyValues(keys[0], sc.wide)
	} else {
		sc.vals = resized(sc.vals, n)
		clear(sc.vals)
		vals = sc.vals
		for c, k := range keys {
			lo, hi, w := p.mins[c], p.maxs[c], p.widths[c]
			for i, v := range vectorized.IntKeyValues(k, sc.wide) {
				if v < lo || v > hi {
					sc.st[i] = keyOutOfRange
				}
				vals[i] = int64(uint64(vals[i])<<w | (uint64(v) - uint64(lo)))
			}
		}
	}
	// NULL wins over out of range: a NULL key never matches, and the
	// null-aware anti join must know it.
	for _, k := range keys {
		if !vectorized.MayHaveNulls(k.Data()) {
			continue
		}
		for i := 0; i < n; i++ {
			if k.IsNull(i) {
				sc.st[i] = keyNull
			}
		}
	}
	return vals, sc.st
}

// resized returns s with length n, reallocated only when too small.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
