package stream

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// RankFunc is the function a top-N numbers rows by.
type RankFunc int

const (
	RowNumber  RankFunc = iota // 1, 2, 3, ...: rows tied on the ORDER BY keys by value
	RankNumber                 // RANK(): 1 + the rows before in the ORDER BY keys; ties share it
	DenseRank                  // DENSE_RANK(): 1 + the distinct ORDER BY keys before
)

// RankSpec is a top-N: Func() OVER (PARTITION BY Partition ORDER BY
// Order) kept where it is in [Lo, Hi]. Deduplication is Lo = Hi = 1 of
// ROW_NUMBER().
type RankSpec struct {
	Func      RankFunc
	Partition []exec.Expr
	Order     []exec.SortKey
	Lo, Hi    int64 // numbers kept, 1-based, inclusive
	// Number: the row number (or rank) is the last output column, so a
	// row whose number changes is updated (-U/+U: of ROW_NUMBER() at that
	// number, as Flink emits it; of a rank, the row's old and new rank).
	Number bool
	// InsertOnly, when set, names the sources of an input that only
	// inserts (Flink's append-only top-N): a partition keeps the rows
	// numbered up to Hi only, as a number only grows then, and a
	// retraction fails the query with an error naming them.
	InsertOnly string
}

// Rank maintains a top-N per partition over a changelog with retraction
// (Flink's RetractableTopNFunction, mini-batched). Each partition keeps
// every row it holds, in order: when a row of the top N goes, the next one
// must come up, and only the input can say which one that is. Rows equal
// in the ORDER BY keys are ranked by their values, so the answer does not
// depend on arrival order. At each marker a changed partition emits the
// difference between the rows it emitted and its new top N: with Number,
// position by position (-U/+U where the row at a number changed, +I/-D
// where the top grew or shrank); without, -D for rows that left and +I for
// rows that entered, except that a deduplication (top 1) emits -U/+U.
//
// Over an insert-only input (spec.InsertOnly) a partition holds its top
// Hi rows only: a row that does not enter them is dropped at once. A
// ROW_NUMBER() top 1 (a deduplication keeping the first or last row)
// replaces its one row, its partitions held flat (top1Parts).
//
// State past the Budget spills: at a marker, partitions go to disk (a
// spillStore, encoded as their rows' sort keys and counts) until half the
// budget is free, and come back whole when a change reaches them. A
// partition in memory is held whole, so the largest one, and the changes
// of one mini-batch, must fit.
type Rank struct {
	ec     *exec.Context
	in     Operator
	spec   RankSpec
	budget *Budget
	schema *arrow.Schema

	rowEnc   rowEncoder
	codec    rankCodec
	order    []exec.Expr // spec.Order's expressions
	orderEnc []encoder
	store    *spillStore // nil until something spills
	parts    map[string]*rankPart
	dirty    []*rankPart
	enc      vectorized.KeyEncoder
	signs    []int8
	sortBuf  []byte
	// t1, when the input only inserts and the top is ROW_NUMBER() 1:
	// a partition holds one row, which a new row replaces or not
	// (addTop1), and the partitions are held there, not in parts.
	t1  *top1Parts
	out rankEmitter
	// emitErr is the first error of emit since the last flush.
	emitErr error
	// pend: the rows of the batch in add that are their partition's top
	// by their ORDER BY keys, read at the batch's end, so that a row
	// another row of the batch replaces is never read.
	pend     []pendingTop
	pendKeys []byte // pend's ORDER BY keys
	pendSort []byte // readPending's sort key
	q        *outQueue
	mb       miniBatch
	held     int64
	// reloaded counts the bytes of state read back from disk, ever.
	reloaded int64

	changed changedKeys // the partitions changed since the last save
}

type rankPart struct {
	key     string
	rows    []rankRow // by sort, ascending
	count   int64     // the copies in rows, kept for an insert-only input
	emitted []rankRow // the rows last emitted, one per copy, n their number
	dirty   bool
}

// pendingTop is a row of a batch that is its partition's top, not read
// yet: its index in the batch and its ORDER BY keys in Rank.pendKeys.
type pendingTop struct {
	part       uint32 // in Rank.t1
	i          int
	start, end int
}

// rankRow is a distinct row of a partition and how many copies it has.
// Its values are in sort (after the ORDER BY keys), decoded only when it
// is emitted: most rows of a top-N never are.
type rankRow struct {
	// head is sort's first 8 bytes, big-endian and zero-padded: most
	// comparisons end there, without reading sort from elsewhere in memory.
	head uint64
	sort string // the ORDER BY keys, then the whole row: a total order
	// keyLen is the length of sort's ORDER BY keys: rows equal there tie
	// in a rank.
	keyLen int
	n      int64
}

// sameKey reports whether a and b tie on the ORDER BY keys.
func sameKey(a, b rankRow) bool { return a.sort[:a.keyLen] == b.sort[:b.keyLen] }

func sortHead(sort []byte) uint64 {
	var b [8]byte
	copy(b[:], sort)
	return binary.BigEndian.Uint64(b[:])
}

// compareSort orders a held row and a sort key whose head is head.
func compareSort(x rankRow, head uint64, sort []byte) int {
	if c := cmp.Compare(x.head, head); c != 0 {
		return c
	}
	// Comparison operators read sort in place; strings.Compare would copy
	// it to the heap (a sort key is longer than the compiler's stack buffer).
	switch {
	case x.sort == string(sort):
		return 0
	case x.sort < string(sort):
		return -1
	}
	return 1
}

// rankRowBytes is the accounted size of a held row; an emitted one costs
// rankSlotBytes, as it shares the values.
func rankRowBytes(r rankRow) int64 { return int64(len(r.sort)) + 56 }

const (
	rankSlotBytes = 40
	rankPartBytes = 128
)

// NewRank ranks in's rows by spec.
func NewRank(ec *exec.Context, in Operator, spec RankSpec, budget *Budget) (*Rank, error) {
	if spec.Lo < 1 || spec.Hi < spec.Lo {
		return nil, fmt.Errorf("%w: top-N keeps row numbers %d to %d", exec.ErrInvalid, spec.Lo, spec.Hi)
	}
	fields := in.Schema().Fields()[1:]
	enc, err := rowEncoderFor(fields)
	if err != nil {
		return nil, err
	}
	r := &Rank{ec: ec, in: in, spec: spec, budget: budget, rowEnc: enc, parts: map[string]*rankPart{}}
	if spec.InsertOnly != "" && spec.Func == RowNumber && spec.Hi == 1 {
		r.t1 = newTop1Parts()
	}
	if r.codec, err = newRankCodec(fields, spec.Order); err != nil {
		return nil, err
	}
	if r.order, r.orderEnc, err = orderEncoders(spec.Order); err != nil {
		return nil, err
	}
	if spec.Number {
		fields = append(slices.Clip(fields), arrow.Field{Name: "row_number", Type: arrow.PrimitiveTypes.Int64})
	}
	r.schema = withKind(fields)
	if r.q, err = newOutQueue(ec, r.schema); err != nil {
		return nil, err
	}
	r.out = r.codec.emitter(r.q, spec.Number)
	return r, nil
}

func (r *Rank) Schema() *arrow.Schema { return r.schema }

func (r *Rank) Open(ctx context.Context) error { return r.in.Open(ctx) }

func (r *Rank) Next(ctx context.Context) (Chunk, error) {
	return miniBatchNext(ctx, r.in, r, r.q, &r.mb)
}

func (r *Rank) add(ctx context.Context, b arrow.RecordBatch) (err error) {
	signs, err := kindSigns(b, r.signs)
	if err != nil {
		return err
	}
	r.signs = signs
	ev := newBatchEval(ctx, r.ec, b)
	defer ev.release()
	eval := ev.evalAll
	n := int(b.NumRows())
	keys, err := eval(r.spec.Partition)
	if err != nil {
		return err
	}
	if err := r.enc.Encode(keys, n); err != nil {
		return err
	}
	order, err := eval(r.order)
	if err != nil {
		return err
	}
	cols := b.Columns()[1:]
	var grow int64
	for i, sign := range signs {
		r.sortBuf = appendOrderKey(r.sortBuf[:0], r.spec.Order, r.orderEnc, order, i)
		keyLen := len(r.sortBuf)
		if sign < 0 && r.spec.InsertOnly != "" {
			return fmt.Errorf("%w: the top-N over %s keeps only its top %d rows per partition, as its input only inserts, but a row was retracted (a DELETE, UPDATE or INSERT OVERWRITE of an append table it reads): restart the query to rank the table's rows again",
				exec.ErrInvalid, r.spec.InsertOnly, r.spec.Hi)
		}
		k := r.enc.Key(i)
		if r.t1 != nil {
			g, err := r.addTop1(k, cols, i)
			if err != nil {
				return err
			}
			grow += g
			continue
		}
		p := r.parts[string(k)]
		if p == nil {
			key := string(k)
			if p, err = r.load(key); err != nil {
				return err
			}
			if p == nil {
				p = &rankPart{key: key}
			} else {
				r.reloaded += r.partBytes(p)
			}
			r.parts[key] = p
			grow += r.partBytes(p)
		}
		// A row after the top of an insert-only partition can never come
		// up. The ORDER BY keys decide that without reading the row (their
		// encoding is prefix-free), unless the row ties the last one there.
		full := r.spec.InsertOnly != "" && r.spec.Func == RowNumber && p.count >= r.spec.Hi
		if full {
			last := p.rows[len(p.rows)-1]
			if c := strings.Compare(last.sort[:last.keyLen], string(r.sortBuf)); c < 0 {
				continue
			}
		}
		r.sortBuf = r.rowEnc.appendRow(r.sortBuf, cols, i)
		sort := r.sortBuf
		if full && compareSort(p.rows[len(p.rows)-1], sortHead(sort), sort) <= 0 {
			continue
		}
		r.markDirty(p)
		var g int64
		if p.rows, g, err = applyRankRow(p.rows, sort, keyLen, sign, "top-N"); err != nil {
			return err
		}
		grow += g
		if r.spec.InsertOnly != "" {
			p.count++
			grow += p.dropPastTop(r.spec.Func, r.spec.Hi)
		}
	}
	if r.t1 != nil {
		grow += r.readPendings(cols)
	}
	r.held += grow
	r.budget.add(grow)
	return nil
}

// addTop1 adds row i of cols, whose ORDER BY keys are in r.sortBuf, to
// the partition keyed k of a top1 Rank, which holds one row: a row first
// on the ORDER BY keys becomes the partition's pending top (read at the
// end of the batch by readPending), a row tied there with the top is read
// to compare the whole rows, and the others are dropped unread. It
// returns the bytes the state grew by.
func (r *Rank) addTop1(k []byte, cols []arrow.Array, i int) (int64, error) {
	t := r.t1
	pi, added := t.lookup(k)
	var grow int64
	if added {
		g, err := r.loadTop1(pi)
		if err != nil {
			return 0, err
		}
		grow = g
	}
	p := &t.parts[pi]
	c := -1
	switch {
	case p.pend > 0:
		pt := r.pend[p.pend-1]
		c = bytes.Compare(r.sortBuf, r.pendKeys[pt.start:pt.end])
	case p.row.n > 0:
		c = bytes.Compare(r.sortBuf, t.bytes(p.row)[:p.rowKeyLen])
	}
	switch {
	case c > 0:
		return grow, nil
	case c < 0:
		start := len(r.pendKeys)
		r.pendKeys = append(r.pendKeys, r.sortBuf...)
		pt := pendingTop{part: pi, i: i, start: start, end: len(r.pendKeys)}
		if p.pend > 0 {
			r.pend[p.pend-1] = pt
		} else {
			r.pend = append(r.pend, pt)
			p.pend = int32(len(r.pend))
		}
		t.markDirty(pi)
		return grow, nil
	}
	if p.pend > 0 {
		grow += r.readPending(pi, cols)
	}
	keyLen := len(r.sortBuf)
	r.sortBuf = r.rowEnc.appendRow(r.sortBuf, cols, i)
	if bytes.Compare(t.bytes(t.parts[pi].row), r.sortBuf) <= 0 {
		return grow, nil
	}
	t.markDirty(pi)
	return grow + t.setRow(pi, r.sortBuf, keyLen), nil
}

// loadTop1 reads the row of part pi of a top1 Rank, just added, back from
// disk if it spilled, and returns the bytes the state grew by.
func (r *Rank) loadTop1(pi uint32) (int64, error) {
	t := r.t1
	grow := t.partBytes(pi)
	if r.store == nil {
		return grow, nil
	}
	p, err := r.load(string(t.bytes(t.parts[pi].key)))
	if err != nil {
		return 0, err
	}
	if p != nil {
		g := r.restoreTop1(pi, p)
		grow += g
		r.reloaded += grow
	}
	return grow, nil
}

// restoreTop1 makes p's rows, read back from disk or a checkpoint and
// emitted up to them, part pi's, and returns the bytes the state grew by.
func (r *Rank) restoreTop1(pi uint32, p *rankPart) int64 {
	if len(p.rows) == 0 {
		return 0
	}
	t := r.t1
	grow := t.setRow(pi, []byte(p.rows[0].sort), p.rows[0].keyLen)
	t.parts[pi].emitted, t.parts[pi].emKeyLen = t.parts[pi].row, t.parts[pi].rowKeyLen
	return grow
}

// readPending reads the pending top of part pi of a top1 Rank into its
// row and returns the bytes the state grew by.
func (r *Rank) readPending(pi uint32, cols []arrow.Array) int64 {
	p := &r.t1.parts[pi]
	pt := r.pend[p.pend-1]
	p.pend = 0
	r.pendSort = r.rowEnc.appendRow(append(r.pendSort[:0], r.pendKeys[pt.start:pt.end]...), cols, pt.i)
	return r.t1.setRow(pi, r.pendSort, pt.end-pt.start)
}

// readPendings reads the pending tops of the batch in add.
func (r *Rank) readPendings(cols []arrow.Array) int64 {
	var grow int64
	for j, pt := range r.pend {
		if int(r.t1.parts[pt.part].pend) == j+1 {
			grow += r.readPending(pt.part, cols)
		}
	}
	r.pend, r.pendKeys = r.pend[:0], r.pendKeys[:0]
	return grow
}

// markDirty lists p for the next flush.
func (r *Rank) markDirty(p *rankPart) {
	if !p.dirty {
		p.dirty = true
		r.dirty = append(r.dirty, p)
	}
}

// dropPastTop drops the rows of an insert-only partition numbered past hi
// by f (rows kept by another top-N may be more) and returns the bytes the
// state grew by (negative).
func (p *rankPart) dropPastTop(f RankFunc, hi int64) int64 {
	var grow int64
	if f != RowNumber {
		// Copies of a row share its rank: they go together.
		cut := len(p.rows)
		numbered(p.rows, f, func(i int, num int64) bool {
			if num > hi {
				cut = i
				return false
			}
			return true
		})
		for _, row := range p.rows[cut:] {
			grow -= rankRowBytes(row)
			p.count -= row.n
		}
		p.rows = p.rows[:cut]
		return grow
	}
	for p.count > hi {
		last := &p.rows[len(p.rows)-1]
		drop := min(last.n, p.count-hi)
		last.n -= drop
		p.count -= drop
		if last.n == 0 {
			grow -= rankRowBytes(*last)
			p.rows = p.rows[:len(p.rows)-1]
		}
	}
	return grow
}

// appendSortKey appends the encoding of row i's ORDER BY keys (order,
// encoded by enc), then its values (of cols, ascending): rows tied on the
// keys rank by value, and equal rows share one entry. It returns the keys'
// length too.
func appendSortKey(b []byte, keys []exec.SortKey, enc []encoder, order []arrow.Array, row rowEncoder, cols []arrow.Array, i int) ([]byte, int) {
	b = appendOrderKey(b, keys, enc, order, i)
	return row.appendRow(b, cols, i), len(b)
}

// appendOrderKey appends the encoding of row i's ORDER BY keys.
func appendOrderKey(b []byte, keys []exec.SortKey, enc []encoder, order []arrow.Array, i int) []byte {
	for c, k := range keys {
		b = enc[c](b, order[c], i, k.Descending, k.NullsFirst)
	}
	return b
}

// orderEncoders are the expressions of ORDER BY keys and their encoders.
func orderEncoders(keys []exec.SortKey) ([]exec.Expr, []encoder, error) {
	exprs, encs := make([]exec.Expr, len(keys)), make([]encoder, len(keys))
	for i, k := range keys {
		var err error
		if encs[i], err = encoderFor(k.Expr.DataType()); err != nil {
			return nil, nil, fmt.Errorf("ORDER BY %s: %w", k.Expr, err)
		}
		exprs[i] = k.Expr
	}
	return exprs, encs, nil
}

// numbered calls yield with each copy of rows, in order, by the index of
// its row and its number by f, until yield returns false.
func numbered(rows []rankRow, f RankFunc, yield func(i int, num int64) bool) {
	var pos, num int64
	for i, row := range rows {
		if f != RowNumber && (i == 0 || !sameKey(rows[i-1], row)) {
			if f == RankNumber {
				num = pos + 1
			} else {
				num++
			}
		}
		for range row.n {
			pos++
			if f == RowNumber {
				num = pos
			}
			if !yield(i, num) {
				return
			}
		}
	}
}

// topRows lists the rows numbered lo to hi by f, one entry per copy, n
// its number.
func topRows(rows []rankRow, f RankFunc, lo, hi int64) []rankRow {
	var out []rankRow
	numbered(rows, f, func(i int, num int64) bool {
		if num > hi {
			return false // numbers never fall
		}
		if num >= lo {
			row := rows[i]
			row.n = num
			out = append(out, row)
		}
		return true
	})
	return out
}

// flush emits the change of every partition changed since the last marker.
func (r *Rank) flush(context.Context, *Chunk) error {
	var grow int64
	if r.t1 != nil {
		grow = r.flushTop1()
	}
	for _, p := range r.dirty {
		p.dirty = false
		r.changed.add(p.key)
		cur := topRows(p.rows, r.spec.Func, r.spec.Lo, r.spec.Hi)
		switch {
		case r.spec.Number && r.spec.Func == RowNumber:
			r.emitByNumber(p.emitted, cur)
		case r.spec.Number:
			r.emitRanked(p.emitted, cur)
		default:
			r.emitChanged(p.emitted, cur)
		}
		grow += rankSlotBytes * int64(len(cur)-len(p.emitted))
		p.emitted = cur
		if len(p.rows) == 0 {
			grow -= rankPartBytes + int64(len(p.key))
			delete(r.parts, p.key)
			if r.store != nil {
				r.store.forget(p.key)
			}
		}
	}
	r.dirty = r.dirty[:0]
	if err := r.emitErr; err != nil {
		return err
	}
	r.q.seal()
	r.held += grow
	r.budget.add(grow)
	if r.budget.over() {
		return r.evict()
	}
	return nil
}

// flushTop1 emits the change of each changed partition of a top1 Rank,
// as emitByNumber and emitChanged would (an insert-only partition is
// never empty once changed), and returns the bytes the state grew by:
// the rows replaced since the last flush are dropped.
func (r *Rank) flushTop1() int64 {
	t := r.t1
	var grow int64
	for _, pi := range t.dirty {
		p := &t.parts[pi]
		p.dirty = false
		if r.changed.on {
			r.changed.add(string(t.bytes(p.key)))
		}
		row := t.bytes(p.row)
		switch {
		case p.emitted.n == 0:
			r.emitValues(kindInsert, row[p.rowKeyLen:], r.spec.Lo)
		case p.emitted != p.row:
			if old := t.bytes(p.emitted); !bytes.Equal(old, row) {
				r.emitValues(kindUpdateBefore, old[p.emKeyLen:], r.spec.Lo)
				r.emitValues(kindUpdateAfter, row[p.rowKeyLen:], r.spec.Lo)
			}
		}
		grow += t.flushed(pi)
	}
	t.dirty = t.dirty[:0]
	t.compact()
	return grow
}

// partBytes is what a partition accounts: the sum of what add and flush
// accounted for it.
func (r *Rank) partBytes(p *rankPart) int64 {
	n := rankPartBytes + int64(len(p.key)) + rankSlotBytes*int64(len(p.emitted))
	for _, row := range p.rows {
		n += rankRowBytes(row)
	}
	return n
}

func (r *Rank) heldState() (string, int64, *Budget) { return "a top-N", r.held - r.reloaded, r.budget }

// evict moves partitions to disk until half the budget is free. Between
// markers every partition's emitted rows are its top, so a partition is
// its rows.
func (r *Rank) evict() error {
	if r.t1 != nil {
		return r.evictTop1()
	}
	return evictMap(r.parts, r.ec, r.budget, &r.store, &r.held, func(k string, p *rankPart) (stateEntry, int64, bool) {
		return stateEntry{key: k, val: encodeRankRows(p.rows)}, r.partBytes(p), true
	})
}

// evictTop1 is evict of a top1 Rank: it moves partitions in turn, from
// where the last eviction stopped.
func (r *Rank) evictTop1() error {
	t := r.t1
	if r.store == nil {
		r.store = newSpillStore(r.ec, r.budget)
	}
	var out []stateEntry
	var freed int64
	target := r.budget.evictTarget()
	for range len(t.parts) {
		if freed >= target {
			break
		}
		pi := uint32(t.evictAt)
		t.evictAt = (t.evictAt + 1) % len(t.parts)
		p := &t.parts[pi]
		if !p.held {
			continue
		}
		out = append(out, stateEntry{key: string(t.bytes(p.key)), val: t.appendRows(nil, pi)})
		freed += t.partBytes(pi)
		t.remove(pi)
	}
	r.held -= freed
	r.budget.add(-freed)
	return r.store.write(out)
}

// load reads a spilled partition back (nil if none).
func (r *Rank) load(key string) (*rankPart, error) {
	if r.store == nil {
		return nil, nil
	}
	b, ok, err := r.store.take(key)
	if !ok || err != nil {
		return nil, err
	}
	rows, err := r.codec.decode(b)
	if err != nil {
		return nil, err
	}
	return r.part(key, rows), nil
}

// part makes a partition of rows read back from disk or a checkpoint,
// emitted up to them; over an insert-only input it holds their top only
// (a checkpoint of a top-N that kept every row has more).
func (r *Rank) part(key string, rows []rankRow) *rankPart {
	p := &rankPart{key: key, rows: rows}
	if r.spec.InsertOnly != "" {
		for _, row := range rows {
			p.count += row.n
		}
		p.dropPastTop(r.spec.Func, r.spec.Hi)
	}
	p.emitted = topRows(p.rows, r.spec.Func, r.spec.Lo, r.spec.Hi)
	return p
}

// SaveState saves every partition's rows, in memory and spilled (in a
// delta, the partitions changed); what it emitted is its top then, as
// after every marker.
func (r *Rank) SaveState(w *StateWriter) error {
	if r.t1 != nil {
		return r.saveTop1(w)
	}
	return w.keyed(&r.changed, func() error {
		for k, p := range r.parts {
			w.entryScratch(k, appendRankRows(w.scratch(), p.rows))
		}
		return w.spilled(r.store, func(k string) bool { _, ok := r.parts[k]; return ok })
	}, func(k string, b []byte) ([]byte, bool, error) {
		if p, ok := r.parts[k]; ok {
			return appendRankRows(b, p.rows), true, nil
		}
		return r.store.saved(k)
	})
}

// saveTop1 is SaveState of a top1 Rank.
func (r *Rank) saveTop1(w *StateWriter) error {
	t := r.t1
	held := func(k string) (uint32, bool) {
		pi, _, ok := t.find([]byte(k), maphash.String(t.seed, k))
		return pi, ok
	}
	return w.keyed(&r.changed, func() error {
		for pi := range t.parts {
			if t.parts[pi].held {
				w.entryScratch(string(t.bytes(t.parts[pi].key)), t.appendRows(w.scratch(), uint32(pi)))
			}
		}
		return w.spilled(r.store, func(k string) bool { _, ok := held(k); return ok })
	}, func(k string, b []byte) ([]byte, bool, error) {
		if pi, ok := held(k); ok {
			return t.appendRows(b, pi), true, nil
		}
		return r.store.saved(k)
	})
}

func (r *Rank) trackChanges() { r.changed.track() }

// RestoreState loads the saved partitions into memory, spilling past the
// budget.
func (r *Rank) RestoreState(rd *StateReader) error {
	err := rd.Entries(func(k string, v []byte) error {
		rows, err := r.codec.decode(v)
		if err != nil {
			return err
		}
		p := r.part(k, rows)
		var grow int64
		switch {
		case r.t1 != nil && len(p.rows) == 0:
		case r.t1 != nil:
			pi, _ := r.t1.lookup([]byte(k))
			grow = r.t1.partBytes(pi) + r.restoreTop1(pi, p)
		default:
			r.parts[p.key] = p
			grow = r.partBytes(p)
		}
		r.held += grow
		r.budget.add(grow)
		if r.budget.over() {
			return r.evict()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return rd.end()
}

// rankCodec reads back a partition's rows as encodeRankRows wrote them:
// their sort keys (the ORDER BY keys, then the whole row, from which the
// values are decoded) and counts.
type rankCodec struct {
	order    []exec.SortKey
	orderDec []orderedDecoder
	row      rowUnpacker
}

func newRankCodec(fields []arrow.Field, order []exec.SortKey) (rankCodec, error) {
	c := rankCodec{order: order}
	var err error
	if c.row, err = rowUnpackerFor(fields); err != nil {
		return c, err
	}
	for _, k := range order {
		d, err := orderedDecoderFor(k.Expr.DataType())
		if err != nil {
			return c, fmt.Errorf("ORDER BY %s: %w", k.Expr, err)
		}
		c.orderDec = append(c.orderDec, d)
	}
	return c, nil
}

// encodeRankRows encodes rows for a spillStore.
func encodeRankRows(rows []rankRow) []byte { return appendRankRows(nil, rows) }

// appendRankRows appends encodeRankRows' encoding of rows to b.
func appendRankRows(b []byte, rows []rankRow) []byte {
	b = binary.AppendUvarint(b, uint64(len(rows)))
	for _, row := range rows {
		b = appendRankRow(b, row.sort, row.n)
	}
	return b
}

// appendRankRow appends appendRankRows' encoding of one row, with sort
// key sort and n copies.
func appendRankRow[S string | []byte](b []byte, sort S, n int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(sort)))
	b = append(b, sort...)
	return binary.AppendUvarint(b, uint64(n))
}

func (c rankCodec) decode(b []byte) ([]rankRow, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errCorruptState
	}
	b = b[k:]
	var rows []rankRow
	for range n {
		sn, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < sn {
			return nil, errCorruptState
		}
		sort := string(b[k : k+int(sn)])
		b = b[k+int(sn):]
		cnt, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errCorruptState
		}
		b = b[k:]
		keyLen, err := c.keyLen(sort)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rankRow{head: sortHead([]byte(sort)), sort: sort, keyLen: keyLen, n: int64(cnt)})
	}
	return rows, nil
}

// keyLen returns the length of a row's ORDER BY keys in its sort key,
// having checked that the row's values decode, so that a corrupt row is
// found where it is read back, not when it is emitted.
func (c rankCodec) keyLen(sort string) (int, error) {
	b := []byte(sort)
	var err error
	for i, d := range c.orderDec {
		if _, b, err = d(b, c.order[i].Descending); err != nil {
			return 0, err
		}
	}
	keyLen := len(sort) - len(b)
	if n, err := c.row.rowLen(b); err != nil || n != len(b) {
		return 0, cmp.Or(err, errCorruptState)
	}
	return keyLen, nil
}

// emitter returns a rankEmitter of the codec's rows into q.
func (c rankCodec) emitter(q *outQueue, number bool) rankEmitter {
	return rankEmitter{q: q, row: c.row, number: number}
}

// rankEmitter emits the rows of a top-N: their values are unpacked from
// their sort keys straight into the output's builders.
type rankEmitter struct {
	q      *outQueue
	row    rowUnpacker
	number bool // a row_number column follows the row's
	buf    []byte
}

// emit appends row, numbered num if the top-N numbers its rows, to the
// output as kind. After an error the output holds part of a row: the
// operator fails before the next seal.
func (e *rankEmitter) emit(kind string, row rankRow, num int64) error {
	e.buf = append(e.buf[:0], row.sort[row.keyLen:]...)
	return e.emitValues(kind, e.buf, num)
}

// emitValues is emit of a row's values, vals.
func (e *rankEmitter) emitValues(kind string, vals []byte, num int64) error {
	bs := e.q.begin(kind)
	if err := e.row.appendRow(bs, vals, nil); err != nil {
		return err
	}
	if e.number {
		bs[len(e.row)].(*array.Int64Builder).Append(num)
	}
	e.q.end(kind)
	return nil
}

// emitByNumber emits, for each row number, the change of its row.
func (r *Rank) emitByNumber(old, cur []rankRow) {
	for i := range max(len(old), len(cur)) {
		num := r.spec.Lo + int64(i)
		switch {
		case i >= len(cur):
			r.emit(kindDelete, old[i], num)
		case i >= len(old):
			r.emit(kindInsert, cur[i], num)
		case old[i].sort != cur[i].sort:
			r.emit(kindUpdateBefore, old[i], num)
			r.emit(kindUpdateAfter, cur[i], num)
		}
	}
}

// emitRanked emits, for a rank, the numbered rows that left (-D) and
// entered (+I) the top, a row that stays with another number as -U of
// the old and +U of the new (both lists in order of sort, then number).
func (r *Rank) emitRanked(old, cur []rankRow) {
	byNum := func(a, b rankRow) int { return cmp.Or(strings.Compare(a.sort, b.sort), cmp.Compare(a.n, b.n)) }
	var gone, came []rankRow
	for i, j := 0, 0; i < len(old) || j < len(cur); {
		var c int
		switch {
		case j == len(cur):
			c = -1
		case i == len(old):
			c = 1
		default:
			c = byNum(old[i], cur[j])
		}
		switch {
		case c < 0:
			gone = append(gone, old[i])
			i++
		case c > 0:
			came = append(came, cur[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	for i, j := 0, 0; i < len(gone) || j < len(came); {
		switch {
		case j == len(came) || i < len(gone) && gone[i].sort < came[j].sort:
			r.emit(kindDelete, gone[i], gone[i].n)
			i++
		case i == len(gone) || came[j].sort < gone[i].sort:
			r.emit(kindInsert, came[j], came[j].n)
			j++
		default:
			r.emit(kindUpdateBefore, gone[i], gone[i].n)
			r.emit(kindUpdateAfter, came[j], came[j].n)
			i, j = i+1, j+1
		}
	}
}

// emitChanged emits the rows that left and entered the top, as a multiset
// difference (both lists are in sort order, copies side by side); a top 1
// pairs them as an update.
func (r *Rank) emitChanged(old, cur []rankRow) {
	var gone, came []rankRow
	for i, j := 0, 0; i < len(old) || j < len(cur); {
		switch {
		case j == len(cur) || i < len(old) && old[i].sort < cur[j].sort:
			gone = append(gone, old[i])
			i++
		case i == len(old) || cur[j].sort < old[i].sort:
			came = append(came, cur[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	if r.spec.Hi == 1 && len(gone) == 1 && len(came) == 1 {
		r.emit(kindUpdateBefore, gone[0], 0)
		r.emit(kindUpdateAfter, came[0], 0)
		return
	}
	for _, x := range gone {
		r.emit(kindDelete, x, 0)
	}
	for _, x := range came {
		r.emit(kindInsert, x, 0)
	}
}

// emit emits row, numbered num if the top-N numbers its rows; an error
// (a row's values that do not decode) is kept for flush.
func (r *Rank) emit(kind string, row rankRow, num int64) {
	if r.emitErr == nil {
		r.emitErr = r.out.emit(kind, row, num)
	}
}

// emitValues is emit of a row's values, vals.
func (r *Rank) emitValues(kind string, vals []byte, num int64) {
	if r.emitErr == nil {
		r.emitErr = r.out.emitValues(kind, vals, num)
	}
}

func (r *Rank) Close() error {
	r.q.release()
	r.budget.add(-r.held)
	r.held = 0
	if r.store != nil {
		r.store.close()
	}
	return r.in.Close()
}

// applyRankRow adds (sign 1) or retracts (sign -1) a row with sort key sort
// to rows, kept sorted with a count per distinct row, and returns the
// bytes the state grew by. what names the operator in errors.
func applyRankRow(rows []rankRow, sort []byte, keyLen int, sign int8, what string) ([]rankRow, int64, error) {
	head := sortHead(sort)
	at, found := slices.BinarySearchFunc(rows, sort, func(x rankRow, s []byte) int { return compareSort(x, head, s) })
	switch {
	case found:
		rows[at].n += int64(sign)
		if rows[at].n == 0 {
			grow := -rankRowBytes(rows[at])
			return slices.Delete(rows, at, at+1), grow, nil
		}
		return rows, 0, nil
	case sign < 0:
		return rows, 0, fmt.Errorf("%w: %s input retracted a row it does not hold", exec.ErrInvalid, what)
	}
	row := rankRow{head: head, sort: string(sort), keyLen: keyLen, n: 1}
	return slices.Insert(rows, at, row), rankRowBytes(row), nil
}
