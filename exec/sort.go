package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/internal/arrowstr"
	"github.com/flightd/flightd/vectorized"
)

// SortKey orders rows by Expr.
type SortKey struct {
	Expr       Expr
	Descending bool
	NullsFirst bool
}

func (k SortKey) String() string {
	s := k.Expr.String()
	if k.Descending {
		s += " DESC"
	}
	if k.NullsFirst {
		s += " NULLS FIRST"
	} else {
		s += " NULLS LAST"
	}
	return s
}

// table is a materialized input: its columns concatenated, plus the sort
// key columns evaluated over it.
type table struct {
	cols []arrow.Array
	keys []arrow.Array
	n    int
}

// bytes is the memory t's rows take.
func (t *table) bytes() int64 { return arraysBytes(t.cols) + arraysBytes(t.keys) }

func (t *table) release() {
	releaseArrays(t.cols)
	releaseArrays(t.keys)
	t.cols, t.keys, t.n = nil, nil, 0
}

// concatColumns concatenates column c of every batch.
func concatColumns(ec *Context, schema *arrow.Schema, batches []arrow.RecordBatch, keyCols [][]arrow.Array) ([]arrow.Array, error) {
	ncols := schema.NumFields()
	if keyCols != nil {
		ncols = len(keyCols[0])
	}
	out := make([]arrow.Array, ncols)
	for c := 0; c < ncols; c++ {
		parts := make([]arrow.Array, len(batches))
		for i, b := range batches {
			if keyCols != nil {
				parts[i] = keyCols[i][c]
			} else {
				parts[i] = b.Column(c)
			}
		}
		var err error
		if len(parts) == 0 {
			dt := schema.Field(c).Type
			out[c] = vectorized.NullArray(ec.Mem, dt, 0)
			continue
		}
		if out[c], err = array.Concatenate(parts, ec.Mem); err != nil {
			releaseArrays(out)
			return nil, err
		}
	}
	return out, nil
}

// materialize reads all of child into a table with sort keys keys
// evaluated. With limited set, past Context.MemoryLimit it stops and
// returns the batches read so far (owned) instead.
func materialize(ctx context.Context, ec *Context, m *memAccount, child Operator, keys []Expr, limited bool) (*table, []arrow.RecordBatch, error) {
	base, held := ec.allocated(), int64(0)
	var batches []arrow.RecordBatch
	var keyCols [][]arrow.Array
	defer func() {
		releaseBatches(batches)
		for _, k := range keyCols {
			releaseArrays(k)
		}
	}()
	for {
		b, err := Next(ctx, child)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		k, err := evalAll(ctx, ec, keys, b)
		if err != nil {
			return nil, nil, err
		}
		b.Retain()
		batches = append(batches, b)
		keyCols = append(keyCols, k)
		if held += batchBytes(b); limited && ec.overBudget(m, base, held, 2*held) {
			over := batches
			batches = nil
			return nil, over, nil
		}
	}
	t, err := buildTable(ec, child.Schema(), batches, keyCols, keys)
	if err == nil {
		m.resize(t.bytes())
	}
	return t, nil, err
}

func buildTable(ec *Context, schema *arrow.Schema, batches []arrow.RecordBatch, keyCols [][]arrow.Array, keys []Expr) (*table, error) {
	t := &table{}
	for _, b := range batches {
		t.n += int(b.NumRows())
	}
	var err error
	if t.cols, err = concatColumns(ec, schema, batches, nil); err != nil {
		return nil, err
	}
	if len(keys) > 0 {
		if t.keys, err = concatKeys(ec, schema, batches, keyCols, keys); err != nil {
			t.release()
			return nil, err
		}
	}
	return t, nil
}

// concatKeys concatenates the key columns keyCols of batches (of keys).
func concatKeys(ec *Context, schema *arrow.Schema, batches []arrow.RecordBatch, keyCols [][]arrow.Array, keys []Expr) ([]arrow.Array, error) {
	if len(batches) > 0 {
		return concatColumns(ec, schema, batches, keyCols)
	}
	out := make([]arrow.Array, len(keys))
	for i, k := range keys {
		out[i] = vectorized.NullArray(ec.Mem, k.DataType(), 0)
	}
	return out, nil
}

// rowComparator compares rows i and j of key columns under keys' order.
func rowComparator(keys []SortKey, cols []arrow.Array) (func(i, j int) int, error) {
	cmps := make([]func(i, j int) int, len(cols))
	for k, c := range cols {
		f, err := vectorized.NewComparator(c, c)
		if err != nil {
			return nil, fmt.Errorf("%w: ORDER BY %s: %v", ErrInvalid, keys[k].Expr, err)
		}
		cmps[k] = f
	}
	return func(i, j int) int {
		for k, c := range cols {
			in, jn := c.IsNull(i), c.IsNull(j)
			var r int
			switch {
			case in && jn:
				continue
			case in || jn:
				r = 1
				if in == keys[k].NullsFirst {
					r = -1
				}
				return r
			}
			r = cmps[k](i, j)
			if r != 0 {
				if keys[k].Descending {
					return -r
				}
				return r
			}
		}
		return 0
	}, nil
}

// sortedIndices returns the row order of t by keys (stable).
func sortedIndices(t *table, keys []SortKey) ([]int64, error) {
	norms := make([][]int64, len(keys))
	for k := range keys {
		norm, ok := normalizedKey(t.keys[k])
		if !ok {
			norms = nil
			break
		}
		norms[k] = norm
	}
	if norms != nil && len(keys) > 0 {
		// One stable radix pass per key, the least significant first: the
		// window sorts of TPC-DS (PARTITION BY item ORDER BY date) spent
		// most of their time comparing rows through closures.
		if order, ok := sortComposite(t.keys, norms, keys); ok {
			return order, nil
		}
		var order []int64
		for k := len(keys) - 1; k >= 0; k-- {
			order = sortByKey(t.keys[k], norms[k], keys[k], order)
		}
		return order, nil
	}
	cmp, err := rowComparator(keys, t.keys)
	if err != nil {
		return nil, err
	}
	idx := make([]int64, t.n)
	for i := range idx {
		idx[i] = int64(i)
	}
	slices.SortStableFunc(idx, func(a, b int64) int { return cmp(int(a), int(b)) })
	return idx, nil
}

// normalizedKey maps an integer, temporal, float, string, binary or
// decimal column to int64 values whose order is the column's order
// (floats: NaN last, as floatCmp; strings: see valueRanks; decimals: see
// decimalKey).
func normalizedKey(a arrow.Array) ([]int64, bool) {
	if ranks, ok := valueRanks(a); ok {
		return ranks, true
	}
	n := a.Len()
	if get, ok := vectorized.IntKey(a); ok {
		out := make([]int64, n)
		for i := range out {
			out[i] = get(i)
		}
		return out, true
	}
	if a.DataType().ID() == arrow.DECIMAL128 {
		return decimalKey(a)
	}
	var f func(int) float64
	switch a.DataType().ID() {
	case arrow.FLOAT64:
		v := vectorized.Values[float64](a)
		f = func(i int) float64 { return v[i] }
	case arrow.FLOAT32:
		v := vectorized.Values[float32](a)
		f = func(i int) float64 { return float64(v[i]) }
	default:
		return nil, false
	}
	out := make([]int64, n)
	for i := range out {
		x := f(i)
		if x != x {
			x = math.NaN()
		} else if x == 0 {
			x = 0 // -0 sorts with 0
		}
		u := math.Float64bits(x)
		if u>>63 == 1 {
			u = ^u
		} else {
			u |= 1 << 63
		}
		out[i] = int64(u ^ 1<<63)
	}
	return out, true
}

// decimalKey returns a decimal column's values as int64s, which are in
// the decimals' order (one scale per column), when every value fits in 64
// bits: sums of prices (q67's window orders by one) do; ok is false
// otherwise.
func decimalKey(a arrow.Array) (_ []int64, ok bool) {
	v := vectorized.DecimalValues(a)
	if len(v) < a.Len() {
		return nil, false
	}
	out := make([]int64, a.Len())
	for i := range out {
		lo := int64(v[i].LowBits())
		if v[i].HighBits() != lo>>63 && a.IsValid(i) {
			return nil, false
		}
		out[i] = lo
	}
	return out, true
}

// valueRanks maps each row of a string or binary column to the rank of its
// value among the column's distinct values in byte order (the order of
// vectorized.NewComparator), so that the window sorts of TPC-DS over
// string partition keys (q47, q57: category, brand, store) take the radix
// sort instead of comparing rows through closures. NULL rows get a rank
// too, which sortByKey ignores. ok is false for other types and when the
// values are mostly distinct (more than a quarter of the rows and over
// 4096): their index would cost more memory than the comparison sort.
func valueRanks(a arrow.Array) (_ []int64, ok bool) {
	value, ok := arrowstr.Viewer(a)
	if !ok {
		return nil, false
	}
	n := a.Len()
	limit := max(4096, n/4)
	ids := map[string]int64{}
	var distinct []string
	out := make([]int64, n)
	for i := range out {
		if a.IsNull(i) {
			continue
		}
		v := value(i)
		id, seen := ids[v]
		if !seen {
			if len(distinct) == limit {
				return nil, false
			}
			id = int64(len(distinct))
			ids[v] = id
			distinct = append(distinct, v)
		}
		out[i] = id
	}
	if len(distinct) == 0 {
		return out, true
	}
	byValue := make([]int64, len(distinct))
	for id := range byValue {
		byValue[id] = int64(id)
	}
	slices.SortFunc(byValue, func(x, y int64) int { return strings.Compare(distinct[x], distinct[y]) })
	rank := make([]int64, len(distinct))
	for r, id := range byValue {
		rank[id] = int64(r)
	}
	for i, id := range out {
		out[i] = rank[id]
	}
	return out, true
}

// sortByKey reorders the rows of order (nil: all rows in input order) by
// one normalized key with an LSD radix sort, which is stable (ties keep
// their order in order) and skips byte positions where all keys agree;
// 2-4x faster than a comparison sort on 1M rows (BenchmarkSort).
func sortByKey(col arrow.Array, norm []int64, key SortKey, order []int64) []int64 {
	pairs := make([]radixPair, 0, len(norm))
	var nulls []int64
	add := func(i int64) {
		if col.IsNull(int(i)) {
			nulls = append(nulls, i)
			return
		}
		u := uint64(norm[i]) ^ 1<<63 // signed order as unsigned
		if key.Descending {
			u = ^u
		}
		pairs = append(pairs, radixPair{u, i})
	}
	if order == nil {
		for i := range norm {
			add(int64(i))
		}
	} else {
		for _, i := range order {
			add(i)
		}
	}
	pairs = radixSort(pairs)
	out := make([]int64, 0, len(norm))
	if key.NullsFirst {
		out = append(out, nulls...)
	}
	for _, p := range pairs {
		out = append(out, p.i)
	}
	if !key.NullsFirst {
		out = append(out, nulls...)
	}
	return out
}

// radixPair is a row and its sort key, ordered as unsigned.
type radixPair struct {
	k uint64
	i int64
}

// radixSort sorts pairs by k with a stable LSD radix sort, skipping the
// bytes where every key agrees; it may return its own scratch buffer.
func radixSort(pairs []radixPair) []radixPair {
	var diff uint64 // the bits where some key differs from the first
	for _, p := range pairs {
		diff |= p.k ^ pairs[0].k
	}
	var tmp []radixPair
	var counts [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		if byte(diff>>shift) == 0 {
			continue // every key has the same byte here
		}
		if tmp == nil {
			tmp = make([]radixPair, len(pairs))
		}
		clear(counts[:])
		for _, p := range pairs {
			counts[byte(p.k>>shift)]++
		}
		pos := 0
		for d, c := range counts {
			counts[d] = pos
			pos += c
		}
		for _, p := range pairs {
			d := byte(p.k >> shift)
			tmp[counts[d]] = p
			counts[d]++
		}
		pairs, tmp = tmp, pairs
	}
	return pairs
}

// sortComposite sorts all rows by keys at once when their normalized
// values, offset by each key's minimum and with a code for NULL where a
// key has NULLs, fit in 64 bits together: one radix sort of one key per
// row instead of a pass per key, each reading the rows in the previous
// pass's order (a window's PARTITION BY item ORDER BY date: 15 and 9
// bits). ok is false when they do not fit.
func sortComposite(cols []arrow.Array, norms [][]int64, keys []SortKey) (_ []int64, ok bool) {
	if len(keys) < 2 {
		return nil, false
	}
	type code struct {
		lo, hi  int64
		null    uint64 // the code of NULL
		offset  uint64 // added to non-NULL values' codes
		shift   uint
		desc    bool
		hasNull bool
	}
	codes := make([]code, len(keys))
	width := uint(0)
	for k := len(keys) - 1; k >= 0; k-- {
		c := &codes[k]
		c.lo, c.hi, c.desc = math.MaxInt64, math.MinInt64, keys[k].Descending
		col, norm := cols[k], norms[k]
		c.hasNull = vectorized.MayHaveNulls(col.Data())
		for i, v := range norm {
			if c.hasNull && col.IsNull(i) {
				continue
			}
			c.lo, c.hi = min(c.lo, v), max(c.hi, v)
		}
		var span uint64 // distinct codes - 1
		if c.lo <= c.hi {
			span = uint64(c.hi) - uint64(c.lo)
			if span == math.MaxUint64 {
				return nil, false
			}
		}
		if c.hasNull {
			if span == math.MaxUint64-1 {
				return nil, false
			}
			span++
			if keys[k].NullsFirst {
				c.offset = 1
			} else {
				c.null = span
			}
		}
		c.shift = width
		width += uint(bits.Len64(span))
		if width > 64 {
			return nil, false
		}
	}
	n := len(norms[0])
	pairs := make([]radixPair, n)
	for i := range pairs {
		pairs[i].i = int64(i)
	}
	for k, c := range codes {
		col, norm := cols[k], norms[k]
		for i, v := range norm {
			var u uint64
			switch {
			case c.hasNull && col.IsNull(i):
				u = c.null
			case c.desc:
				u = uint64(c.hi) - uint64(v) + c.offset
			default:
				u = uint64(v) - uint64(c.lo) + c.offset
			}
			pairs[i].k |= u << c.shift
		}
	}
	pairs = radixSort(pairs)
	out := make([]int64, n)
	for i, p := range pairs {
		out[i] = p.i
	}
	return out, true
}

func sortExprs(keys []SortKey) []Expr {
	out := make([]Expr, len(keys))
	for i, k := range keys {
		out[i] = k.Expr
	}
	return out
}

// emitter hands out rows idx of a table in batches.
type emitter struct {
	ec     *Context
	schema *arrow.Schema
	t      *table
	idx    []int64
	pos    int
	cur    current
}

func (e *emitter) next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if e.t == nil || e.pos >= len(e.idx) {
		return nil, io.EOF
	}
	end := min(e.pos+e.ec.batchSize(), len(e.idx))
	cols, err := vectorized.TakeColumns(ctx, e.ec.Mem, e.t.cols, e.idx[e.pos:end])
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBatch(e.schema, cols, int64(end-e.pos))
	releaseArrays(cols)
	e.pos = end
	return e.cur.set(b), nil
}

func (e *emitter) close() {
	e.cur.release()
	if e.t != nil {
		e.t.release()
		e.t = nil
	}
}

type sortOp struct {
	ec     *Context
	child  Operator
	keys   []SortKey
	offset int64
	count  int64 // < 0: all (Sort); else TopN
	opened bool
	out    emitter
	merger *runMerger // set when the sort spilled
	// skip and left apply TopN's offset and count to the merger's output.
	skip, left int64
	lim        current
	mem        memAccount // what it holds, from the first batch to Close
}

// NewSort sorts its input by keys (stable: equal rows keep input order).
// Past Context.MemoryLimit it writes sorted runs to disk and merges them.
func NewSort(ec *Context, child Operator, keys []SortKey) Operator {
	return &sortOp{ec: ec, child: child, keys: keys, count: -1, out: emitter{ec: ec, schema: child.Schema()}}
}

// NewTopN returns rows [offset, offset+count) of the sorted input, keeping
// only about 2*(offset+count) rows in memory; when those pass
// Context.MemoryLimit it sorts externally like Sort.
func NewTopN(ec *Context, child Operator, keys []SortKey, offset, count int64) Operator {
	// No input has maxTopNRows rows: bounding offset and count by it keeps
	// offset+count, and twice it, from overflowing.
	const maxTopNRows = 1 << 40
	offset, count = min(max(offset, 0), maxTopNRows), min(max(count, 0), maxTopNRows)
	return &sortOp{ec: ec, child: child, keys: keys, offset: offset, count: count, out: emitter{ec: ec, schema: child.Schema()}}
}

func (s *sortOp) Schema() *arrow.Schema { return s.child.Schema() }

func (s *sortOp) Open(ctx context.Context) error {
	if s.opened {
		return nil
	}
	s.opened = true
	if err := s.child.Open(ctx); err != nil {
		return err
	}
	var t *table
	var err error
	if s.count >= 0 {
		t, s.merger, err = s.topN(ctx)
		s.skip, s.left = s.offset, s.count
	} else {
		t, s.merger, err = s.externalSort(ctx, nil)
	}
	if err != nil || s.merger != nil {
		return err
	}
	idx, err := sortedIndices(t, s.keys)
	if err != nil {
		t.release()
		return err
	}
	if s.count >= 0 {
		lo := min(int(s.offset), len(idx))
		idx = idx[lo:min(lo+int(s.count), len(idx))]
	}
	s.out.t, s.out.idx = t, idx
	return nil
}

// topN keeps the best offset+count rows, compacting whenever twice that
// many have accumulated or the memory budget is passed. If the kept rows
// alone pass the budget, it hands them and the rest of the input to
// externalSort.
func (s *sortOp) topN(ctx context.Context) (*table, *runMerger, error) {
	keep := int(s.offset + s.count)
	keys := sortExprs(s.keys)
	base, held := s.ec.allocated(), int64(0)
	var acc *table
	var batches []arrow.RecordBatch
	var keyCols [][]arrow.Array
	pending := 0
	release := func() {
		releaseBatches(batches)
		for _, k := range keyCols {
			releaseArrays(k)
		}
		batches, keyCols, pending = nil, nil, 0
	}
	defer release()
	compact := func() error {
		if acc != nil {
			// The kept rows go first so that ties keep input order.
			b := array.NewRecordBatch(s.child.Schema(), acc.cols, int64(acc.n))
			batches = append([]arrow.RecordBatch{b}, batches...)
			keyCols = append([][]arrow.Array{acc.keys}, keyCols...)
			acc.keys = nil
			releaseArrays(acc.cols)
			acc = nil
		}
		t, err := buildTable(s.ec, s.child.Schema(), batches, keyCols, keys)
		release()
		if err != nil {
			return err
		}
		idx, err := sortedIndices(t, s.keys)
		if err != nil {
			t.release()
			return err
		}
		idx = idx[:min(keep, len(idx))]
		slices.Sort(idx) // keep input order among the survivors
		cols, err := vectorized.TakeColumns(ctx, s.ec.Mem, t.cols, idx)
		if err != nil {
			t.release()
			return err
		}
		kcols, err := vectorized.TakeColumns(ctx, s.ec.Mem, t.keys, idx)
		t.release()
		if err != nil {
			releaseArrays(cols)
			return err
		}
		acc = &table{cols: cols, keys: kcols, n: len(idx)}
		held = arraysBytes(acc.cols) + arraysBytes(acc.keys)
		return nil
	}
	for keep > 0 {
		b, err := Next(ctx, s.child)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if acc != nil {
				acc.release()
			}
			return nil, nil, err
		}
		k, err := evalAll(ctx, s.ec, keys, b)
		if err != nil {
			if acc != nil {
				acc.release()
			}
			return nil, nil, err
		}
		b.Retain()
		batches = append(batches, b)
		keyCols = append(keyCols, k)
		pending += int(b.NumRows())
		held += batchBytes(b) + arraysBytes(k)
		// compact concatenates what is held: reserve it twice.
		over := s.ec.overBudget(&s.mem, base, held, 2*held)
		if over || pending >= 2*keep && pending >= 1024 {
			if err := compact(); err != nil {
				return nil, nil, err
			}
		}
		if over && s.ec.overBudget(&s.mem, base, held, 2*held) {
			// The kept rows alone pass the budget: sort externally.
			pre := []arrow.RecordBatch{array.NewRecordBatch(s.child.Schema(), acc.cols, int64(acc.n))}
			acc.release()
			return s.externalSort(ctx, pre)
		}
	}
	if err := compact(); err != nil {
		return nil, nil, err
	}
	return acc, nil, nil
}

func (s *sortOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if !s.opened {
		return nil, fmt.Errorf("%w: sort read before Open", ErrInvalid)
	}
	if s.merger != nil && s.count >= 0 {
		return s.nextLimited(ctx)
	}
	if s.merger != nil {
		return s.merger.next(ctx)
	}
	return s.out.next(ctx)
}

// nextLimited applies TopN's offset and count to the merged runs.
func (s *sortOp) nextLimited(ctx context.Context) (arrow.RecordBatch, error) {
	for s.left > 0 {
		b, err := s.merger.next(ctx)
		if err != nil {
			return nil, err
		}
		n := b.NumRows()
		lo := min(s.skip, n)
		hi := min(n, lo+s.left)
		s.skip -= lo
		s.left -= hi - lo
		if lo < hi {
			return s.lim.set(b.NewSlice(lo, hi)), nil
		}
	}
	return nil, io.EOF
}

func (s *sortOp) Close() error {
	s.lim.release()
	s.out.close()
	s.mem.free()
	if s.merger != nil {
		s.merger.close()
		s.merger = nil
	}
	return s.child.Close()
}
