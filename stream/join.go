package stream

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// JoinSpec describes a Join: rows match when their keys are equal (never
// on NULL) and Residual, compiled over the left columns then the right
// ones (after a row kind column), is true.
// Kind is exec's join type (semi and anti joins output the left columns
// only); NullAwareAntiJoin is not supported.
type JoinSpec struct {
	Kind                exec.JoinType
	LeftKeys, RightKeys []exec.Expr
	Residual            exec.Expr
	// InsertOnly marks a side whose input only inserts (an append
	// table's rows): it keeps no index by whole row, which cost a map
	// insert and an encoding of every column per row, and each copy of a
	// row is an entry of its own; a retraction (a DELETE of the append
	// table) finds its row among its key's rows. Its rows are held
	// encoded, not boxed: most are held and never emitted (q20's bids).
	InsertOnly [2]bool
}

// Join is a regular join of two changelogs (Flink's StreamingJoinOperator):
// each side keeps its rows by key with how many rows of the other side
// they match; a change on one side emits +I/-D of its joined rows. In
// outer joins a preserved row without matches is emitted NULL-padded; the
// padded row is retracted when its first match arrives and emitted again
// when its last match goes. Semi and anti joins emit a left row when its
// match count leaves or reaches zero.
//
// The inputs are read concurrently (neither waits for the other's
// commits), but a snapshot of one side is processed whole before the
// other side's changes: every marker is then an exact position of both.
//
// State past the Budget spills: at a marker, join keys of both sides go
// to disk with all their rows (a spillStore per side: each row's values,
// copies and match count) until half the budget is free, and come back
// when a change of either side has their key. The rows one input batch
// touches must fit.
type Join struct {
	ec     *exec.Context
	in     [2]Operator
	spec   JoinSpec
	budget *Budget
	schema *arrow.Schema

	sides [2]*joinSide
	q     *outQueue
	pos   Pos // the position of the rows being emitted
	two   twoInputs
	held  int64
	signs []int8
	res   *joinResidual // nil without a residual
}

// joinResidual evaluates a join's residual over batches of only the pair
// columns it reads: a pair's other columns (a bid's and an auction's
// strings, say) are never copied into a batch.
type joinResidual struct {
	cols   []int         // the pair row's columns the batches hold
	sel    [2][]int      // cols, as columns of each side (nil: all)
	schema *arrow.Schema // of those columns, without the row kind
	expr   exec.Expr     // over schema; over the row kind and every column when whole
	whole  bool          // expr could not be narrowed (or reads the row kind)
	q      *outQueue     // reused, so its builders start at the last batch's size
}

// twoInputs reads two inputs concurrently (neither waits for the other's
// commits) but hands out a snapshot of one side whole before the other
// side's changes, so that a marker is an exact position of both.
type twoInputs struct {
	in    [2]Operator
	done  [2]Pos
	wm    [2]time.Time // each side's last watermark
	late  [2]int64     // each side's last LateRows
	ended [2]bool
	lock  int // the side whose snapshot is being handed out (-1: none)
	// barrier is the last checkpoint barrier of each side; waiting is
	// 1 + the side whose barrier came first, not read until the other
	// side's comes (0: none).
	barrier [2]int64
	waiting int
	pumps   [2]chan pumped
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type joinSide struct {
	keys  []exec.Expr
	width int
	// table holds the rows by join key, each key's behind a pointer so
	// that adding a row to a key takes one map lookup.
	table map[string]*[]*joinRow
	// rows finds a distinct row without scanning its key's rows: by the
	// encoding of all its columns, which folds -0 into 0, so sameRow
	// picks the exact one among the (almost always single) rows there.
	// nil on an insert-only side (JoinSpec.InsertOnly), whose rows are
	// held encoded.
	rows map[string][]*joinRow
	enc  vectorized.KeyEncoder // join keys
	renc vectorized.KeyEncoder // whole rows
	// A boxed side's rows are read by get, decoded by dec and emitted by
	// put; an insert-only side's are encoded by rowEnc and emitted by
	// unpack. Rows of the batch being processed are emitted by copy.
	get     rowGetter
	dec     []orderedDecoder
	put     []appender
	rowEnc  rowEncoder
	unpack  rowUnpacker
	copy    []copier
	scratch []byte
	store   *spillStore // nil until something spills
	// changed: the join keys whose rows changed since the last save
	changed changedKeys
}

// joinRow is a distinct row of one side: n copies, each matching matches
// rows of the other side; idx is its place in its key's table entry, rk
// its whole-row encoding (its key in rows). A boxed side's row is vals,
// an insert-only side's enc (appendRow's encoding).
type joinRow struct {
	vals    []any
	enc     []byte
	rk      string
	n       int64
	matches int64
	idx     int
}

type pumped struct {
	c   Chunk
	err error
}

// NewJoin joins left and right.
func NewJoin(ec *exec.Context, left, right Operator, spec JoinSpec, budget *Budget) (*Join, error) {
	if spec.Kind == exec.NullAwareAntiJoin {
		return nil, fmt.Errorf("%w: a streaming join cannot be a null-aware anti join", exec.ErrInvalid)
	}
	var err error
	if spec.LeftKeys, spec.RightKeys, err = exec.CoerceJoinKeys(spec.LeftKeys, spec.RightKeys); err != nil {
		return nil, err
	}
	j := &Join{ec: ec, in: [2]Operator{left, right}, spec: spec, budget: budget, two: twoInputs{in: [2]Operator{left, right}, lock: -1}}
	var fields []arrow.Field
	for s, op := range j.in {
		fs := op.Schema().Fields()[1:]
		keys := spec.LeftKeys
		if s == 1 {
			keys = spec.RightKeys
		}
		side, err := newJoinSide(keys, fs, spec.InsertOnly[s])
		if err != nil {
			return nil, err
		}
		j.sides[s] = side
		if s == 1 && (spec.Kind == exec.SemiJoin || spec.Kind == exec.AntiJoin) {
			continue
		}
		for _, f := range fs {
			f.Nullable = true
			fields = append(fields, f)
		}
	}
	j.schema = withKind(fields)
	q, err := newOutQueue(ec, j.schema)
	if err != nil {
		return nil, err
	}
	j.q = q
	if spec.Residual != nil {
		if j.res, err = newJoinResidual(ec, j.in, spec.Residual); err != nil {
			q.release()
			return nil, err
		}
	}
	return j, nil
}

func newJoinSide(keys []exec.Expr, fs []arrow.Field, insertOnly bool) (*joinSide, error) {
	s := &joinSide{keys: keys, width: len(fs), table: map[string]*[]*joinRow{}}
	var err error
	if insertOnly {
		if s.rowEnc, err = rowEncoderFor(fs); err != nil {
			return nil, err
		}
		s.unpack, err = rowUnpackerFor(fs)
	} else {
		s.rows = map[string][]*joinRow{}
		s.get, err = rowGetterFor(fs)
	}
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		// Every type has these once it has a getter (or an unpacker).
		c, _ := copierFor(f.Type)
		s.copy = append(s.copy, c)
		if !insertOnly {
			d, _ := orderedDecoderFor(f.Type)
			p, _ := appenderFor(f.Type)
			s.dec, s.put = append(s.dec, d), append(s.put, p)
		}
	}
	return s, nil
}

// newJoinResidual prepares e, compiled over the row kind, the left
// columns then the right ones, for batches of the columns it reads.
func newJoinResidual(ec *exec.Context, in [2]Operator, e exec.Expr) (*joinResidual, error) {
	var pair []arrow.Field
	for _, op := range in {
		pair = append(pair, op.Schema().Fields()[1:]...)
	}
	r := &joinResidual{expr: e}
	cols, narrow, ne, ok := exec.NarrowExpr(e, withKind(pair))
	if ok && (len(cols) == 0 || cols[0] > 0) {
		for _, c := range cols {
			r.cols = append(r.cols, c-1)
		}
		r.schema, r.expr = narrow, ne
	} else {
		r.whole = true
		for c := range pair {
			r.cols = append(r.cols, c)
		}
		r.schema = arrow.NewSchema(pair, nil)
	}
	if !r.whole {
		lw := in[0].Schema().NumFields() - 1
		r.sel = [2][]int{{}, {}} // a side none of whose columns is read adds none
		for _, c := range r.cols {
			if c < lw {
				r.sel[0] = append(r.sel[0], c)
			} else {
				r.sel[1] = append(r.sel[1], c-lw)
			}
		}
	}
	var err error
	r.q, err = newOutQueue(ec, withKind(r.schema.Fields()))
	return r, err
}

func (j *Join) Schema() *arrow.Schema { return j.schema }

// Open opens both inputs and starts reading them.
func (j *Join) Open(ctx context.Context) error { return j.two.open(ctx) }

func (t *twoInputs) open(ctx context.Context) error {
	if t.cancel != nil {
		return nil
	}
	for _, op := range t.in {
		if err := op.Open(ctx); err != nil {
			return err
		}
	}
	ctx, t.cancel = context.WithCancel(ctx)
	for s, op := range t.in {
		ch := make(chan pumped, 1)
		t.pumps[s] = ch
		t.wg.Add(1)
		go t.pump(ctx, op, ch)
	}
	return nil
}

// pump reads an input on its own goroutine (the input is used by nobody
// else until close, which waits for it).
func (t *twoInputs) pump(ctx context.Context, op Operator, ch chan<- pumped) {
	defer t.wg.Done()
	for {
		var p pumped
		func() {
			defer func() {
				if r := recover(); r != nil {
					p = pumped{err: fmt.Errorf("stream: panic in an input: %v", r)}
				}
			}()
			p.c, p.err = op.Next(ctx)
		}()
		if p.c.Batch != nil {
			p.c.Batch.Retain()
		}
		select {
		case ch <- p:
		case <-ctx.Done():
			if p.c.Batch != nil {
				p.c.Batch.Release()
			}
			return
		}
		if p.err != nil {
			return
		}
	}
}

// next returns the next chunk of either side and the side: rows (owned by
// the caller, who releases them) labelled with the other side's complete
// position merged in, or a marker of the position both sides are complete
// to. io.EOF when both sides have ended.
func (t *twoInputs) next(ctx context.Context) (int, Chunk, error) {
	for {
		side, p, err := t.receive(ctx)
		if err != nil {
			return 0, Chunk{}, err
		}
		switch {
		case errors.Is(p.err, io.EOF):
			// An ended input holds back no event time (Flink's end of input).
			t.ended[side], t.wm[side], t.lock = true, endOfTime, -1
			if t.ended[0] && t.ended[1] {
				return 0, Chunk{}, io.EOF
			}
			if t.waiting == 2-side {
				// No barrier comes from an ended input: the other side's
				// is aligned.
				t.waiting = 0
				return 1 - side, Chunk{Pos: t.position(), Watermark: minWatermark(t.wm[0], t.wm[1]), LateRows: t.late[0] + t.late[1], Barrier: t.barrier[1-side]}, nil
			}
		case p.err != nil:
			return 0, Chunk{}, p.err
		case p.c.Batch == nil:
			t.done[side], t.wm[side], t.late[side], t.lock = p.c.Pos, p.c.Watermark, p.c.LateRows, -1
			c := Chunk{Pos: t.position(), CaughtUp: p.c.CaughtUp, Watermark: minWatermark(t.wm[0], t.wm[1]), LateRows: t.late[0] + t.late[1]}
			if p.c.Barrier != 0 {
				t.barrier[side] = p.c.Barrier
				if t.barrier[1-side] < p.c.Barrier && !t.ended[1-side] {
					t.waiting = side + 1 // aligned when the other side's comes
				} else {
					c.Barrier, t.waiting = p.c.Barrier, 0
				}
			}
			return side, c, nil
		default:
			t.lock = side
			if t.done[1-side] != nil {
				p.c.Pos = t.done[1-side].merge(p.c.Pos)
			}
			return side, p.c, nil
		}
	}
}

func (j *Join) Next(ctx context.Context) (Chunk, error) {
	for {
		if b := j.q.pop(); b != nil {
			return Chunk{Batch: b, Pos: j.pos}, nil
		}
		side, c, err := j.two.next(ctx)
		if err == nil && c.Batch == nil && j.budget.over() {
			err = j.evict()
		}
		if err != nil || c.Batch == nil {
			return c, err
		}
		j.pos = c.Pos
		err = j.process(ctx, side, c.Batch)
		c.Batch.Release()
		if err != nil {
			return Chunk{}, err
		}
		j.q.seal()
	}
}

// position is the position both inputs are complete to.
func (t *twoInputs) position() Pos {
	switch {
	case t.done[0] == nil:
		return t.done[1]
	case t.done[1] == nil:
		return t.done[0]
	}
	return t.done[0].merge(t.done[1])
}

// receive takes the next input chunk: from the side whose snapshot is in
// progress, else from whichever side has one.
func (t *twoInputs) receive(ctx context.Context) (int, pumped, error) {
	var p pumped
	var ok bool
	side := t.lock
	switch {
	case side >= 0:
	case t.waiting > 0:
		side = 2 - t.waiting // the side whose barrier has not come
	case t.ended[0]:
		side = 1
	case t.ended[1]:
		side = 0
	default:
		select {
		case p, ok = <-t.pumps[0]:
			side = 0
		case p, ok = <-t.pumps[1]:
			side = 1
		case <-ctx.Done():
			return 0, p, ctx.Err()
		}
		if !ok {
			return 0, p, fmt.Errorf("%w: input %d closed", exec.ErrInvalid, side)
		}
		return side, p, nil
	}
	select {
	case p, ok = <-t.pumps[side]:
	case <-ctx.Done():
		return 0, p, ctx.Err()
	}
	if !ok {
		return 0, p, fmt.Errorf("%w: input %d closed", exec.ErrInvalid, side)
	}
	return side, p, nil
}

// save writes the positions, watermarks and late rows of both sides.
func (t *twoInputs) save(w *StateWriter) {
	for s := range 2 {
		w.Varint(int64(len(t.done[s])))
		for _, p := range t.done[s] {
			w.Varint(p)
		}
		w.progress(t.wm[s], t.late[s])
	}
}

func (t *twoInputs) restore(r *StateReader) error {
	for s := range 2 {
		n, err := r.Varint()
		if err != nil {
			return err
		}
		if n < 0 || n > int64(len(r.b)) {
			return errCorruptCheckpoint
		}
		t.done[s] = nil
		if n > 0 {
			t.done[s] = make(Pos, n)
		}
		for i := range t.done[s] {
			if t.done[s][i], err = r.Varint(); err != nil {
				return err
			}
		}
		if t.wm[s], t.late[s], err = r.progress(); err != nil {
			return err
		}
	}
	return nil
}

// saveProgress writes the inputs' positions, watermarks and late rows,
// then an event-time join's own progress.
func (t *twoInputs) saveProgress(w *StateWriter, wm time.Time, late int64) {
	t.save(w)
	w.progress(wm, late)
}

func (t *twoInputs) restoreProgress(r *StateReader) (wm time.Time, late int64, err error) {
	if err := t.restore(r); err != nil {
		return wm, 0, err
	}
	return r.progress()
}

// SaveState saves both sides' rows by join key (memory and spilled; in a
// delta, of the keys changed) and the inputs' positions.
func (j *Join) SaveState(w *StateWriter) error {
	j.two.save(w)
	for _, s := range j.sides {
		err := w.keyed(&s.changed, func() error {
			for k, l := range s.table {
				w.entryScratch(k, appendJoinRows(w.scratch(), *l))
			}
			return w.spilled(s.store, func(k string) bool { _, ok := s.table[k]; return ok })
		}, s.saved)
		if err != nil {
			return err
		}
	}
	return nil
}

func (j *Join) trackChanges() {
	for _, s := range j.sides {
		s.changed.track()
	}
}

// saved appends join key k's rows to b as SaveState saves them (false:
// the key has none).
func (s *joinSide) saved(k string, b []byte) ([]byte, bool, error) {
	if l, ok := s.table[k]; ok {
		return appendJoinRows(b, *l), true, nil
	}
	return s.store.saved(k)
}

// RestoreState loads the saved rows into memory, spilling past the budget.
func (j *Join) RestoreState(r *StateReader) error {
	if err := j.two.restore(r); err != nil {
		return err
	}
	for _, s := range j.sides {
		if err := r.entriesWithin(j.budget, &j.held, j.evict, s.decodeRows); err != nil {
			return err
		}
	}
	return r.end()
}

// process applies a batch of changes of one side.
func (j *Join) process(ctx context.Context, side int, b arrow.RecordBatch) error {
	own, other := j.sides[side], j.sides[1-side]
	signs, err := kindSigns(b, j.signs)
	if err != nil {
		return err
	}
	j.signs = signs
	n := int(b.NumRows())
	keys := make([]arrow.Array, len(own.keys))
	defer func() {
		for _, k := range keys {
			if k != nil {
				k.Release()
			}
		}
	}()
	for i, e := range own.keys {
		if keys[i], err = e.Eval(ctx, j.ec, b); err != nil {
			return err
		}
	}
	if err := own.enc.Encode(keys, n); err != nil {
		return err
	}
	cols := b.Columns()[1:]
	if own.rows != nil {
		if err := own.renc.Encode(cols, n); err != nil {
			return err
		}
	}
	var grow int64
	if own.store != nil || other.store != nil {
		for i := range n {
			k := string(own.enc.Key(i))
			loaded, err := own.load(k)
			if err == nil && !own.enc.HasNull[i] {
				var more int64
				more, err = other.load(k)
				loaded += more
			}
			if err != nil {
				return err
			}
			grow += loaded
		}
	}
	cands := make([][]*joinRow, n)
	for i := range n {
		if own.enc.HasNull[i] {
			continue
		}
		if l := other.table[string(own.enc.Key(i))]; l != nil {
			cands[i] = *l
		}
	}
	pass, err := j.residual(ctx, side, cols, cands)
	if err != nil {
		return err
	}
	kind := j.spec.Kind
	semi := kind == exec.SemiJoin || kind == exec.AntiJoin
	ownKept := kind == exec.FullJoin || side == 0 && kind == exec.LeftJoin || side == 1 && kind == exec.RightJoin
	otherKept := kind == exec.FullJoin || side == 1 && kind == exec.LeftJoin || side == 0 && kind == exec.RightJoin
	for i, sign := range signs {
		k := string(own.enc.Key(i))
		e, bytes, err := own.change(k, cols, i, sign)
		if err != nil {
			return err
		}
		row := pairPart{cols: cols, row: i}
		own.changed.add(k)
		if len(cands[i]) > 0 && (semi || otherKept) {
			other.changed.add(k) // their match counts change
		}
		grow += bytes
		add := kindInsert
		if sign < 0 {
			add = kindDelete
		}
		var m int64
		for c, cand := range cands[i] {
			if !pass[i][c] {
				continue
			}
			m += cand.n
			kept := pairPart{kept: cand}
			switch {
			case semi && side == 0:
			case semi:
				before := cand.matches
				cand.matches += int64(sign)
				if (before == 0) != (cand.matches == 0) {
					// The left row starts or stops matching.
					kd := kindDelete
					if (kind == exec.SemiJoin) == (before == 0) {
						kd = kindInsert
					}
					err = j.emitN(kd, cand.n, kept, pairPart{})
				}
			case otherKept:
				before := cand.matches
				cand.matches += int64(sign)
				if before == 0 && sign > 0 {
					err = j.emitSide(kindDelete, 1-side, cand.n, kept)
				}
				if err == nil {
					err = j.emitPair(add, side, row, cand)
				}
				if err == nil && cand.matches == 0 && sign < 0 {
					err = j.emitSide(kindInsert, 1-side, cand.n, kept)
				}
			default:
				err = j.emitPair(add, side, row, cand)
			}
			if err != nil {
				return err
			}
		}
		e.matches = m
		switch {
		case semi && side == 0:
			if (kind == exec.SemiJoin) == (m > 0) {
				err = j.emitN(add, 1, row, pairPart{})
			}
		case ownKept && m == 0:
			err = j.emitSide(add, side, 1, row)
		}
		if err != nil {
			return err
		}
		if e.n == 0 {
			grow -= own.remove(k, e)
		}
	}
	j.held += grow
	j.budget.add(grow)
	return nil
}

var errRetractsUnknown = fmt.Errorf("%w: join input retracts a row it never added", exec.ErrInvalid)

// change adds (sign > 0) or removes one copy of row i of cols, whose join
// key is k, and returns its entry and the bytes it added.
func (s *joinSide) change(k string, cols []arrow.Array, i int, sign int8) (*joinRow, int64, error) {
	if s.rows == nil {
		return s.changeEncoded(k, cols, i, sign)
	}
	rk := s.renc.Key(i)
	row := s.get.row(cols, i)
	for _, e := range s.rows[string(rk)] {
		if sameRow(e.vals, row) {
			e.n += int64(sign)
			return e, 0, nil
		}
	}
	if sign < 0 {
		return nil, 0, errRetractsUnknown
	}
	e := &joinRow{vals: row, rk: string(rk), n: 1}
	return e, s.insert(k, e), nil
}

// changeEncoded is change on an insert-only side: each copy of a row is
// an entry of its own, and a retraction (rare) finds its row among its
// key's rows by its encoding, which keeps -0 apart from 0 as sameRow does.
func (s *joinSide) changeEncoded(k string, cols []arrow.Array, i int, sign int8) (*joinRow, int64, error) {
	s.scratch = s.rowEnc.appendRow(s.scratch[:0], cols, i)
	if sign < 0 {
		var l []*joinRow
		if p := s.table[k]; p != nil {
			l = *p
		}
		for _, e := range l {
			if bytes.Equal(e.enc, s.scratch) {
				e.n--
				return e, 0, nil
			}
		}
		return nil, 0, errRetractsUnknown
	}
	e := &joinRow{enc: bytes.Clone(s.scratch), n: 1}
	return e, s.insert(k, e), nil
}

// insert adds distinct row e under key k and returns the bytes it holds.
func (s *joinSide) insert(k string, e *joinRow) int64 {
	l := s.table[k]
	if l == nil {
		l = new([]*joinRow)
		s.table[k] = l
	}
	e.idx = len(*l)
	*l = append(*l, e)
	if s.rows != nil {
		s.rows[e.rk] = append(s.rows[e.rk], e)
	}
	return joinRowBytes(k, e)
}

func joinRowBytes(k string, e *joinRow) int64 {
	return rowBytes(e.vals) + int64(len(k)+len(e.rk)+len(e.enc)) + 80
}

// remove drops entry e, of key k, and returns the bytes it held. A key
// with no rows left is forgotten by the store, so that its spilled rows
// do not come back.
func (s *joinSide) remove(k string, e *joinRow) int64 {
	p := s.table[k]
	l := *p
	last := l[len(l)-1]
	l[e.idx], last.idx = last, e.idx
	if *p = l[:len(l)-1]; len(*p) == 0 {
		delete(s.table, k)
		if s.store != nil {
			s.store.forget(k)
		}
	}
	s.unindex(e)
	return joinRowBytes(k, e)
}

// unindex drops e from rows.
func (s *joinSide) unindex(e *joinRow) {
	if s.rows == nil {
		return
	}
	r := s.rows[e.rk]
	for i, x := range r {
		if x == e {
			r[i] = r[len(r)-1]
			r = r[:len(r)-1]
			break
		}
	}
	if len(r) == 0 {
		delete(s.rows, e.rk)
	} else {
		s.rows[e.rk] = r
	}
}

// evict moves join keys with all their rows, of both sides, to disk until
// half the budget is free.
func (j *Join) evict() error {
	target := j.budget.evictTarget()
	var freed int64
	for _, s := range j.sides {
		var out []stateEntry
		for k, p := range s.table {
			if freed >= target {
				break
			}
			l := *p
			for _, e := range l {
				freed += joinRowBytes(k, e)
				s.unindex(e)
			}
			delete(s.table, k)
			out = append(out, stateEntry{key: k, val: appendJoinRows(nil, l)})
		}
		if len(out) == 0 {
			continue
		}
		if s.store == nil {
			s.store = newSpillStore(j.ec, j.budget)
		}
		if err := s.store.write(out); err != nil {
			return err
		}
	}
	j.held -= freed
	j.budget.add(-freed)
	return nil
}

// load reads key k's spilled rows back into the table and returns the
// bytes they hold (0 when k is in memory or was never spilled).
func (s *joinSide) load(k string) (int64, error) {
	if s.store == nil {
		return 0, nil
	}
	if _, ok := s.table[k]; ok {
		return 0, nil
	}
	b, ok, err := s.store.take(k)
	if !ok || err != nil {
		return 0, err
	}
	return s.decodeRows(k, b)
}

// appendJoinRows appends a join key's rows: each row's whole-row
// encoding, values, copies and match count.
func appendJoinRows(b []byte, l []*joinRow) []byte {
	b = binary.AppendUvarint(b, uint64(len(l)))
	for _, e := range l {
		b = binary.AppendUvarint(b, uint64(len(e.rk)))
		b = append(b, e.rk...)
		if e.enc != nil {
			b = append(b, e.enc...) // appendRow's encoding already
		} else {
			b = appendRow(b, e.vals)
		}
		b = binary.AppendVarint(b, e.n)
		b = binary.AppendVarint(b, e.matches)
	}
	return b
}

// decodeRows puts the rows appendJoinRows encoded in b under key k and
// returns the bytes they hold.
func (s *joinSide) decodeRows(k string, b []byte) (int64, error) {
	var err error
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, errCorruptState
	}
	b = b[n:]
	var grow int64
	for range count {
		rl, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < rl {
			return 0, errCorruptState
		}
		e := &joinRow{rk: string(b[n : n+int(rl)])}
		b = b[n+int(rl):]
		if s.rows == nil {
			var l int
			if l, err = s.unpack.rowLen(b); err != nil {
				return 0, err
			}
			e.enc, b = bytes.Clone(b[:l]), b[l:]
		} else if e.vals, b, err = decodeRow(b, s.dec); err != nil {
			return 0, err
		}
		if b, err = readVarints(b, &e.n, &e.matches); err != nil {
			return 0, err
		}
		grow += s.insert(k, e)
	}
	return grow, nil
}

// pairPart is one side's columns of a joined row: a row of the batch
// being processed, a kept row or, when neither is set, NULLs.
type pairPart struct {
	cols []arrow.Array
	row  int
	kept *joinRow
}

// appendPart appends the columns sel (ascending; nil: all) of p, a row of
// this side, to bs, one builder per column.
func (s *joinSide) appendPart(bs []array.Builder, p pairPart, sel []int) error {
	n := len(sel)
	if sel == nil {
		n = s.width
	}
	col := func(k int) int {
		if sel == nil {
			return k
		}
		return sel[k]
	}
	switch {
	case p.cols != nil:
		for k := range n {
			c := col(k)
			s.copy[c](bs[k], p.cols[c], p.row)
		}
	case p.kept == nil:
		for k := range n {
			bs[k].AppendNull()
		}
	case s.rows == nil:
		return s.unpack.appendRow(bs, p.kept.enc, sel)
	default:
		for k := range n {
			c := col(k)
			s.put[c](bs[k], p.kept.vals[c])
		}
	}
	return nil
}

// emitPair emits copies of a joined row: row, of side, with each copy of
// cand.
func (j *Join) emitPair(kind string, side int, row pairPart, cand *joinRow) error {
	if side == 0 {
		return j.emitN(kind, cand.n, row, pairPart{kept: cand})
	}
	return j.emitN(kind, cand.n, pairPart{kept: cand}, row)
}

// emitSide emits n copies of a row of side padded with NULLs.
func (j *Join) emitSide(kind string, side int, n int64, row pairPart) error {
	if side == 0 {
		return j.emitN(kind, n, row, pairPart{})
	}
	return j.emitN(kind, n, pairPart{}, row)
}

// emitN emits n copies of left ++ right. A semi or anti join emits left
// alone.
func (j *Join) emitN(kind string, n int64, left, right pairPart) error {
	pair := j.spec.Kind != exec.SemiJoin && j.spec.Kind != exec.AntiJoin
	for range n {
		bs := j.q.begin(kind)
		err := j.sides[0].appendPart(bs, left, nil)
		if err == nil && pair {
			err = j.sides[1].appendPart(bs[j.sides[0].width:], right, nil)
		}
		if err != nil {
			return err
		}
		j.q.end(kind)
	}
	return nil
}

// eval evaluates the residual over b, a batch of r.q.
func (r *joinResidual) eval(ctx context.Context, ec *exec.Context, b arrow.RecordBatch) (arrow.Array, error) {
	if r.whole {
		return r.expr.Eval(ctx, ec, b)
	}
	cols := b.Columns()[1:]
	nb := array.NewRecordBatch(r.schema, cols, b.NumRows())
	defer nb.Release()
	return r.expr.Eval(ctx, ec, nb)
}

// residual evaluates the residual condition of every (row i of cols,
// candidate) pair at once.
func (j *Join) residual(ctx context.Context, side int, cols []arrow.Array, cands [][]*joinRow) ([][]bool, error) {
	pass := make([][]bool, len(cands))
	total := 0
	for i, c := range cands {
		pass[i] = make([]bool, len(c))
		total += len(c)
	}
	if j.res == nil || total == 0 {
		for i := range pass {
			for c := range pass[i] {
				pass[i][c] = true
			}
		}
		return pass, nil
	}
	r := j.res
	lw := len(r.sel[0])
	if r.whole {
		lw = j.sides[0].width
	}
	for i, c := range cands {
		for _, cand := range c {
			parts := [2]pairPart{{cols: cols, row: i}, {kept: cand}}
			if side == 1 {
				parts[0], parts[1] = parts[1], parts[0]
			}
			bs := r.q.begin(kindInsert)
			err := j.sides[0].appendPart(bs, parts[0], r.sel[0])
			if err == nil {
				err = j.sides[1].appendPart(bs[lw:], parts[1], r.sel[1])
			}
			if err != nil {
				r.q.release()
				return nil, err
			}
			r.q.end(kindInsert)
		}
	}
	r.q.seal()
	flat := make([]bool, 0, total)
	for {
		b := r.q.pop()
		if b == nil {
			break
		}
		m, err := r.eval(ctx, j.ec, b)
		if err != nil {
			r.q.release()
			return nil, err
		}
		ok, isBool := m.(*array.Boolean)
		if !isBool {
			m.Release()
			r.q.release()
			return nil, fmt.Errorf("%w: join condition is %s, not boolean", exec.ErrInvalid, m.DataType())
		}
		for k := 0; k < ok.Len(); k++ {
			flat = append(flat, ok.IsValid(k) && ok.Value(k))
		}
		m.Release()
	}
	for i := range pass {
		for c := range pass[i] {
			pass[i][c], flat = flat[0], flat[1:]
		}
	}
	return pass, nil
}

func (j *Join) Close() error {
	j.q.release()
	if j.res != nil {
		j.res.q.release()
	}
	j.budget.add(-j.held)
	j.held = 0
	for _, s := range j.sides {
		if s.store != nil {
			s.store.close()
			s.store = nil
		}
	}
	return j.two.close()
}

// close stops the readers and closes both inputs.
func (t *twoInputs) close() error {
	if t.cancel != nil {
		t.cancel()
		t.wg.Wait()
		for _, ch := range t.pumps {
			select {
			case p := <-ch:
				if p.c.Batch != nil {
					p.c.Batch.Release()
				}
			default:
			}
		}
	}
	var err error
	for _, op := range t.in {
		err = errors.Join(err, op.Close())
	}
	return err
}
