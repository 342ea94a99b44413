package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// Pos is the snapshot each source of a query has been read to, indexed by
// source number. A Pos is never modified once handed on.
type Pos []int64

// merge returns p with the entries other has set (sources are disjoint
// between the inputs of a join).
func (p Pos) merge(other Pos) Pos {
	out := slices.Clone(p)
	for i, v := range other {
		if v != 0 {
			out[i] = v
		}
	}
	return out
}

// Chunk is one step of a changelog: changes (Batch set, borrowed until the
// next call) that belong to position Pos, or a marker (Batch nil): every
// change up to Pos has been emitted. CaughtUp marks the markers that the
// sources' readers returned on catching up or at a heartbeat; they go to
// the client as progress markers.
type Chunk struct {
	Batch    arrow.RecordBatch
	Pos      Pos
	CaughtUp bool
	// Image marks a source's full read of a snapshot (a *-full start,
	// tablestore.Change.Image): its rows carry ImageRows, the marker that
	// ends it ImageEnd, and the first of these ImageStart, so the client
	// drops its state first. Filter and Project pass the marks on;
	// Normalize, aggregates, joins and unions drop them (their output is
	// not a table's full read as it was framed).
	Image      tablestore.Image
	ImageStart bool
	// Watermark (markers only; zero: none yet) is the event time up to
	// which the inputs are complete: a source's is the largest event time
	// it has read minus its table's WATERMARK delay, an operator's the
	// smallest of its inputs'. Event-time operators close what ends at or
	// before it.
	Watermark time.Time
	// LateRows (markers only) counts the rows the event-time operators
	// below have dropped as late, since the start.
	LateRows int64
	// Barrier (markers only; 0: none) is the checkpoint whose state every
	// operator saves as it hands this marker on (checkpoint.go).
	Barrier int64
}

// Operator is an incremental operator. Next returns the next chunk; a
// stream ends with io.EOF only when its sources are bounded. Close is safe
// without Open and safe twice.
type Operator interface {
	// Schema is the batches' schema: the row kind, then the columns.
	Schema() *arrow.Schema
	Open(ctx context.Context) error
	Next(ctx context.Context) (Chunk, error)
	Close() error
}

// Row kinds as they appear in the row kind column.
const (
	kindInsert       = "+I"
	kindUpdateBefore = "-U"
	kindUpdateAfter  = "+U"
	kindDelete       = "-D"
)

// kindSigns reads a batch's row kind column: +1 for rows that add, -1 for
// rows that retract.
func kindSigns(b arrow.RecordBatch, dst []int8) ([]int8, error) {
	k, ok := b.Column(0).(*array.String)
	if !ok {
		return nil, fmt.Errorf("%w: row kind column is %s, not a string", exec.ErrInvalid, b.Column(0).DataType())
	}
	dst = dst[:0]
	for i := 0; i < k.Len(); i++ {
		kind, ok := tablestore.ParseRowKind(k.Value(i))
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: unknown row kind %q", exec.ErrInvalid, k.Value(i))
		case kind.IsRetract():
			dst = append(dst, -1)
		default:
			dst = append(dst, 1)
		}
	}
	return dst, nil
}

// withKind returns the schema of a changelog of fields.
func withKind(fields []arrow.Field) *arrow.Schema {
	return arrow.NewSchema(append([]arrow.Field{{Name: tablestore.RowKindColumn, Type: arrow.BinaryTypes.String}}, fields...), nil)
}

// Budget is the memory the state of one query's operators may hold: at
// most limit, and what the engine's pool grants (res).
type Budget struct {
	limit int64 // 0: unlimited
	used  atomic.Int64
	res   *exec.Reservation // nil: no pool
}

// NewBudget returns a budget of limit bytes (0: unlimited).
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// NewQueryBudget returns a budget of ec's MemoryLimit whose state is also
// reserved in ec's pool, if any.
func NewQueryBudget(ec *exec.Context) *Budget {
	return &Budget{limit: ec.MemoryLimit, res: ec.NewReservation(true)}
}

// add accounts n more bytes (negative to free) of state that spills: its
// operator checks over at each marker and evicts.
func (b *Budget) add(n int64) { b.used.Add(n) }

// evictTarget is how many bytes an operator over its budget frees: down
// to half the limit, or of what the pool granted when it refused more, so
// that it does not evict again at the next marker.
func (b *Budget) evictTarget() int64 {
	bound := b.limit
	if b.res != nil && (bound <= 0 || b.res.Size() < bound) {
		bound = b.res.Size()
	}
	return b.Used() - bound/2
}

// over reports whether the state accounted exceeds the limit or what the
// pool grants.
func (b *Budget) over() bool {
	used := b.used.Load()
	return b.limit > 0 && used > b.limit || !b.res.TryResize(used)
}

// bound names what over compared with, for errors.
func (b *Budget) bound() string {
	if b.limit > 0 && b.used.Load() > b.limit {
		return fmt.Sprintf("the query memory budget of %d bytes", b.limit)
	}
	return fmt.Sprintf("the %d bytes granted by the query memory pool", b.res.Size())
}

// Used is the number of bytes accounted.
func (b *Budget) Used() int64 { return b.used.Load() }

// outQueue collects emitted rows into batches of the operator's schema.
type outQueue struct {
	ec     *exec.Context
	schema *arrow.Schema
	bld    *array.RecordBuilder
	fields []array.Builder // bld's
	put    []appender
	n      int
	ready  []arrow.RecordBatch
	cur    arrow.RecordBatch // the batch last returned, released on the next call
	// The rows and each column's bytes of variable-length data of the
	// last batch: a new batch's builders start at that size, so that a
	// steady stream of batches does not grow every buffer from nothing
	// (copying each string about twice over).
	lastRows int
	lastData []int
}

func newOutQueue(ec *exec.Context, schema *arrow.Schema) (*outQueue, error) {
	q := &outQueue{ec: ec, schema: schema}
	for _, f := range schema.Fields()[1:] {
		a, err := appenderFor(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		q.put = append(q.put, a)
	}
	return q, nil
}

// add appends one row of kind.
func (q *outQueue) add(kind string, vals []any) {
	bs := q.begin(kind)
	for i, v := range vals {
		q.put[i](bs[i], v)
	}
	q.end(kind)
}

// begin starts a row of kind and returns the builders of its columns,
// which the caller appends one value each to before end(kind).
func (q *outQueue) begin(kind string) []array.Builder {
	if q.bld == nil {
		q.bld = array.NewRecordBuilder(q.ec.Mem, q.schema)
		q.fields = q.bld.Fields()
	}
	if q.n == 0 {
		q.reserve()
	}
	q.fields[0].(*array.StringBuilder).Append(kind)
	return q.fields[1:]
}

// end ends the row begun; a -U stays in one batch with the +U that
// follows it.
func (q *outQueue) end(kind string) {
	q.n++
	if kind != kindUpdateBefore && q.n >= max(q.ec.BatchSize, 1) {
		q.seal()
	}
}

// dataBuilder is a builder of variable-length values (strings, binary).
type dataBuilder interface {
	DataLen() int
	ReserveData(int)
}

// seal turns the rows added so far into a ready batch.
func (q *outQueue) seal() {
	if q.n == 0 {
		return
	}
	fs := q.bld.Fields()
	if q.lastData == nil {
		q.lastData = make([]int, len(fs))
	}
	for i, f := range fs {
		if d, ok := f.(dataBuilder); ok {
			q.lastData[i] = d.DataLen()
		}
	}
	q.lastRows = q.n
	q.ready = append(q.ready, q.bld.NewRecordBatch())
	q.n = 0
}

// reserve sizes the builders of a new batch as the last batch was.
func (q *outQueue) reserve() {
	if q.lastRows == 0 {
		return
	}
	for i, f := range q.bld.Fields() {
		f.Reserve(q.lastRows)
		if d, ok := f.(dataBuilder); ok && q.lastData[i] > 0 {
			d.ReserveData(q.lastData[i])
		}
	}
}

// pop returns the next ready batch (nil if none), owned by the queue until
// the next pop or release.
func (q *outQueue) pop() arrow.RecordBatch {
	q.dropCur()
	if len(q.ready) == 0 {
		return nil
	}
	q.cur, q.ready = q.ready[0], q.ready[1:]
	return q.cur
}

func (q *outQueue) dropCur() {
	if q.cur != nil {
		q.cur.Release()
		q.cur = nil
	}
}

func (q *outQueue) release() {
	q.dropCur()
	for _, b := range q.ready {
		b.Release()
	}
	q.ready = nil
	if q.bld != nil {
		q.bld.Release()
		q.bld, q.fields = nil, nil
	}
}

// miniBatched is an operator that buffers the changes of a mini-batch and
// queues their net effect at the next marker. flush gets that marker,
// which it may annotate, or nil when a bounded input has ended.
type miniBatched interface {
	add(ctx context.Context, b arrow.RecordBatch) error
	flush(ctx context.Context, marker *Chunk) error
}

// miniBatch is where a miniBatched op's Next stands.
type miniBatch struct {
	marker *Chunk // the marker to return once the queue is empty
	pos    Pos    // the last marker's position, labelling the batches after it
	ended  bool   // the input ended and its last changes are queued
	// base is what the op held (stateHolder) after its last marker's
	// flush, or when it first read (started).
	base    int64
	started bool
}

// stateHolder is a miniBatched op whose state counts against a Budget
// and spills only at markers (in flush): held is the bytes it accounts,
// less those it ever read back from disk (a change reaching a spilled key
// brings its state back: state the snapshot did not add).
type stateHolder interface {
	heldState() (what string, held int64, budget *Budget)
}

// checkGrowth fails the query when op's state grew since its last marker,
// but for what it read back from disk, by more than the whole pool: what
// one mini-batch (one snapshot's changes; a full read of a table is one)
// adds stays in memory until the marker, so without this it grew with the
// snapshot whatever the limits, until the process ran out of memory (a
// GROUP BY job over a 2M-row table held 470 MB of groups under an 8 MiB
// budget and a 256 MiB pool).
func (mb *miniBatch) checkGrowth(op miniBatched) error {
	h, ok := op.(stateHolder)
	if !ok {
		return nil
	}
	what, held, budget := h.heldState()
	if pool, grown := budget.res.Pool(), held-mb.base; pool != nil && grown > pool.Capacity() {
		return fmt.Errorf("%w: %s grew its state by %d bytes within one snapshot's changes, more than %s holds: that state spills only at the snapshot's end (a full read of a table is one snapshot)", exec.ErrMemoryLimit, what, grown, pool)
	}
	return nil
}

// marked records op's state after a marker's flush.
func (mb *miniBatch) marked(op miniBatched) {
	if h, ok := op.(stateHolder); ok {
		_, mb.base, _ = h.heldState()
		mb.started = true
	}
}

// miniBatchNext is the Next of a miniBatched op reading in and emitting
// through q: the queued batches of the last mini-batch, labelled with its
// marker's position, then that marker. The marker carries no image marks:
// the output is not the full read of a table, whatever op consumed. When
// a bounded input ends, the changes since its last marker are flushed too
// (a window aggregation emits its open windows there).
func miniBatchNext(ctx context.Context, in Operator, op miniBatched, q *outQueue, mb *miniBatch) (Chunk, error) {
	for {
		if b := q.pop(); b != nil {
			return Chunk{Batch: b, Pos: mb.pos}, nil
		}
		if m := mb.marker; m != nil {
			mb.marker = nil
			return *m, nil
		}
		if mb.ended {
			return Chunk{}, io.EOF
		}
		c, err := in.Next(ctx)
		if errors.Is(err, io.EOF) {
			mb.ended = true
			if err := op.flush(ctx, nil); err != nil {
				return Chunk{}, err
			}
			continue
		}
		if err != nil {
			return Chunk{}, err
		}
		if c.Batch == nil {
			if err := op.flush(ctx, &c); err != nil {
				return Chunk{}, err
			}
			mb.marked(op)
			c.Image, c.ImageStart = tablestore.NoImage, false
			mb.marker, mb.pos = &c, c.Pos
			continue
		}
		if !mb.started {
			mb.marked(op)
		}
		if err := op.add(ctx, c.Batch); err != nil {
			return Chunk{}, err
		}
		if err := mb.checkGrowth(op); err != nil {
			return Chunk{}, err
		}
	}
}

// batchEval evaluates expressions over one batch; release frees every
// array it returned.
type batchEval struct {
	ctx     context.Context
	ec      *exec.Context
	b       arrow.RecordBatch
	owned   []arrow.Array
	working exec.Working // counts owned
}

func newBatchEval(ctx context.Context, ec *exec.Context, b arrow.RecordBatch) *batchEval {
	return &batchEval{ctx: ctx, ec: ec, b: b, working: ec.Working()}
}

func (e *batchEval) eval(x exec.Expr) (arrow.Array, error) {
	return e.evalWhere(x, nil)
}

// evalWhere is eval of the rows where mask is true (exec.EvalWhere).
func (e *batchEval) evalWhere(x exec.Expr, mask []bool) (arrow.Array, error) {
	a, err := exec.EvalWhere(e.ctx, e.ec, x, e.b, mask)
	if err != nil {
		return nil, err
	}
	if err := e.working.Hold(x, a); err != nil {
		a.Release()
		return nil, err
	}
	e.owned = append(e.owned, a)
	return a, nil
}

func (e *batchEval) evalAll(xs []exec.Expr) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(xs))
	for i, x := range xs {
		var err error
		if out[i], err = e.eval(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// encodeKeys evaluates the key expressions xs and encodes the batch's keys
// into enc; it returns the key columns.
func (e *batchEval) encodeKeys(xs []exec.Expr, enc *vectorized.KeyEncoder) ([]arrow.Array, error) {
	keys, err := e.evalAll(xs)
	if err != nil {
		return nil, err
	}
	return keys, enc.Encode(keys, int(e.b.NumRows()))
}

func (e *batchEval) release() {
	for _, a := range e.owned {
		a.Release()
	}
	e.working.Release()
}
