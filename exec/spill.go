package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowshare"
	"github.com/flightd/flightd/vectorized"
)

// AccountingAllocator counts the bytes currently allocated through it so
// that operators can compare a query's usage with Context.MemoryLimit.
type AccountingAllocator struct {
	mem memory.Allocator
	cur atomic.Int64
	max atomic.Int64
}

// NewAccountingAllocator wraps mem.
func NewAccountingAllocator(mem memory.Allocator) *AccountingAllocator {
	return &AccountingAllocator{mem: mem}
}

// Allocate implements memory.Allocator.
func (a *AccountingAllocator) Allocate(size int) []byte {
	n := a.cur.Add(int64(size))
	for {
		m := a.max.Load()
		if n <= m || a.max.CompareAndSwap(m, n) {
			break
		}
	}
	return a.mem.Allocate(size)
}

// Reallocate implements memory.Allocator.
func (a *AccountingAllocator) Reallocate(size int, b []byte) []byte {
	a.cur.Add(int64(size - len(b)))
	return a.mem.Reallocate(size, b)
}

// Free implements memory.Allocator.
func (a *AccountingAllocator) Free(b []byte) {
	a.cur.Add(-int64(len(b)))
	a.mem.Free(b)
}

// CurrentAlloc returns the bytes allocated and not yet freed.
func (a *AccountingAllocator) CurrentAlloc() int { return int(a.cur.Load()) }

// PeakAlloc returns the highest CurrentAlloc seen.
func (a *AccountingAllocator) PeakAlloc() int { return int(a.max.Load()) }

// allocated returns the execution's current Arrow memory, if its allocator
// reports it (AccountingAllocator and memory.CheckedAllocator do).
func (ec *Context) allocated() int64 {
	if a, ok := ec.Mem.(interface{ CurrentAlloc() int }); ok {
		return int64(a.CurrentAlloc())
	}
	return 0
}

// overBudget reports whether an operator must spill: it is over
// MemoryLimit, either the execution's allocations grew by more than the
// limit since the operator started (base) or the operator itself holds more
// than the limit (held: retained batches, which may have been allocated
// before it started, plus Go-side state); or the pool refused to reserve
// the reserve bytes it needs for what it holds (held, or more where the
// operator copies what it holds before letting it go). Measuring from base
// lets a re-partitioning pass work within the budget while its parent still
// holds finished output.
func (ec *Context) overBudget(m *memAccount, base, held, reserve int64) bool {
	if ec.MemoryLimit > 0 && max(ec.allocated()-base, held) > ec.MemoryLimit {
		return true
	}
	return !m.reservation(ec).TryResize(reserve)
}

// limited reports whether operators may have to spill: a per-operator
// budget or a pool is set.
func (ec *Context) limited() bool { return ec.MemoryLimit > 0 || ec.Pool != nil }

// batchBytes is the memory a batch's rows take (see arrowshare.Bytes).
func batchBytes(b arrow.RecordBatch) int64 { return arraysBytes(b.Columns()) }

// arraysBytes is the memory the arrays' rows take (see arrowshare.Bytes).
func arraysBytes(as []arrow.Array) int64 {
	var n int64
	for _, a := range as {
		n += arrowshare.Bytes(a.Data())
	}
	return n
}

// spillFile is a temporary Arrow IPC stream of batches of one schema.
type spillFile struct {
	ec     *Context
	schema *arrow.Schema
	f      *os.File
	buf    *bufio.Writer
	w      *ipc.Writer
	rows   int64
}

func newSpillFile(ec *Context, schema *arrow.Schema) (*spillFile, error) {
	f, err := os.CreateTemp(ec.TempDir, "flightd-spill-*.arrows")
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	s := &spillFile{ec: ec, schema: schema, f: f, buf: bufio.NewWriterSize(f, 1<<16)}
	s.w = ipc.NewWriter(s.buf, ipc.WithSchema(schema), ipc.WithAllocator(ec.Mem))
	return s, nil
}

func (s *spillFile) write(b arrow.RecordBatch) error {
	if b.NumRows() == 0 {
		return nil
	}
	s.rows += b.NumRows()
	s.ec.spilledRows.Add(b.NumRows())
	if err := s.w.Write(b); err != nil {
		return fmt.Errorf("spill %s: %w", s.f.Name(), err)
	}
	return nil
}

// finish flushes the file and rewinds it for reading.
func (s *spillFile) finish() error {
	if s.w == nil {
		return nil
	}
	err := s.w.Close()
	s.w = nil
	if err == nil {
		err = s.buf.Flush()
	}
	if err == nil {
		_, err = s.f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return fmt.Errorf("spill %s: %w", s.f.Name(), err)
	}
	return nil
}

// remove closes and deletes the file.
func (s *spillFile) remove() {
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
}

// source returns a BatchSource reading the finished file; closing it
// deletes the file.
func (s *spillFile) source() BatchSource { return &spillReader{file: s} }

type spillReader struct {
	file *spillFile
	r    *ipc.Reader
}

func (r *spillReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.file.f == nil {
		return nil, io.EOF
	}
	if r.r == nil {
		if r.file.rows == 0 {
			return nil, io.EOF
		}
		rd, err := ipc.NewReader(bufio.NewReaderSize(r.file.f, 1<<16), ipc.WithAllocator(r.file.ec.Mem), ipc.WithSchema(r.file.schema))
		if err != nil {
			return nil, fmt.Errorf("spill %s: %w", r.file.f.Name(), err)
		}
		r.r = rd
	}
	if r.r.Next() {
		return r.r.RecordBatch(), nil
	}
	if err := r.r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("spill %s: %w", r.file.f.Name(), err)
	}
	return nil, io.EOF
}

func (r *spillReader) Close() error {
	if r.r != nil {
		r.r.Release()
		r.r = nil
	}
	r.file.remove()
	return nil
}

// spillOperator reads a finished spill file as an Operator.
func spillOperator(ec *Context, s *spillFile) Operator {
	return NewSource(ec, s.schema, func(context.Context) (BatchSource, error) { return s.source(), nil })
}

// spillPartitions is the fan-out of hash partitioning when an operator
// spills, and maxSpillDepth bounds recursive re-partitioning (past it the
// operator finishes in memory).
const (
	spillPartitions = 8
	maxSpillDepth   = 4
)

// partitioner writes rows to spillPartitions files by the hash of their
// encoded key, NULLs included: keys with a NULL (one group to DISTINCT,
// set operations and GROUP BY) spread and re-partition like the others, and
// join keys with a NULL, which never match, may go anywhere.
type partitioner struct {
	ec    *Context
	seed  maphash.Seed
	files []*spillFile
}

// newPartitioner creates the partition files; both sides of a join pass the
// same seed so that equal keys meet in the same partition.
func newPartitioner(ec *Context, schema *arrow.Schema, seed maphash.Seed) (*partitioner, error) {
	p := &partitioner{ec: ec, seed: seed}
	for i := 0; i < spillPartitions; i++ {
		f, err := newSpillFile(ec, schema)
		if err != nil {
			p.remove()
			return nil, err
		}
		p.files = append(p.files, f)
	}
	return p, nil
}

// write partitions the rows of b where rows is nil or rows[i] is true.
func (p *partitioner) write(ctx context.Context, b arrow.RecordBatch, enc *vectorized.KeyEncoder, rows []bool) error {
	idx := make([][]int64, len(p.files))
	for i := 0; i < int(b.NumRows()); i++ {
		if rows != nil && !rows[i] {
			continue
		}
		part := maphash.Bytes(p.seed, enc.Key(i)) % uint64(len(p.files))
		idx[part] = append(idx[part], int64(i))
	}
	for part, ix := range idx {
		if len(ix) == 0 {
			continue
		}
		sub, err := vectorized.TakeBatch(ctx, p.ec.Mem, b, p.files[part].schema, ix)
		if err != nil {
			return err
		}
		err = p.files[part].write(sub)
		sub.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *partitioner) finish() error {
	for _, f := range p.files {
		if err := f.finish(); err != nil {
			return err
		}
	}
	return nil
}

func (p *partitioner) remove() {
	for _, f := range p.files {
		f.remove()
	}
}

// mapEntryBytes estimates the Go map overhead of one set entry beyond its
// key bytes (bucket slot, string header, tophash, load factor).
const mapEntryBytes = 48

// tableEntryBytes estimates a BytesTable's overhead of one key beyond its
// bytes in the arena: a 40-byte slot, the table 3/8 to 3/4 full.
const tableEntryBytes = 80

// Outcomes of spillSet.admit.
const (
	keyDup   = iota // already in the set
	keyFresh        // added to the set
	keySpill        // not in the frozen set: the caller spills its row
)

// spillSet is a set of row keys whose Go memory counts against the query
// budget. Past it the owner freezes the set: rows whose key it does not
// hold go to hash partitions of their key, which drain then deduplicates
// one partition at a time (each with a set of its own that freezes and
// partitions again past the budget, up to maxSpillDepth). A key is thus
// either in the frozen set or in exactly one partition, never both.
type spillSet struct {
	ec     *Context
	schema *arrow.Schema // of the spilled rows, all of whose columns are the key
	depth  int
	seen   *vectorized.BytesTable // values unused
	bytes  int64
	spill  *partitioner
	mem    memAccount
}

func newSpillSet(ec *Context, schema *arrow.Schema, depth int) *spillSet {
	return &spillSet{ec: ec, schema: schema, depth: depth, seen: vectorized.NewBytesTable(0)}
}

// admit looks key up in the set once, adding it when it is new and the set
// is not frozen. The set is a BytesTable, not a Go map: the map's lookups
// and hashing were a third of q87's CPU.
func (s *spillSet) admit(key []byte) int {
	_, ok, spot := s.seen.Find(key, s.seen.Hash(key))
	if ok {
		return keyDup
	}
	if s.spill != nil {
		return keySpill
	}
	s.seen.Insert(spot, key, 0)
	s.bytes += int64(len(key)) + tableEntryBytes
	return keyFresh
}

// freeze starts spilling; past maxSpillDepth the set keeps growing instead.
func (s *spillSet) freeze() error {
	if s.spill != nil || s.depth >= maxSpillDepth {
		return nil
	}
	p, err := newPartitioner(s.ec, s.schema, maphash.MakeSeed())
	s.spill = p
	return err
}

// write spills the rows of b (of s.schema, keys encoded in enc) marked in
// rows.
func (s *spillSet) write(ctx context.Context, b arrow.RecordBatch, enc *vectorized.KeyEncoder, rows []bool) error {
	return s.spill.write(ctx, b, enc, rows)
}

// drain deduplicates the spilled rows partition by partition and passes
// every batch read to emit with the rows whose key is new; it removes the
// files.
func (s *spillSet) drain(ctx context.Context, emit func(b arrow.RecordBatch, fresh []bool) error) error {
	p := s.spill
	if p == nil {
		return nil
	}
	s.spill = nil
	defer p.remove()
	if err := p.finish(); err != nil {
		return err
	}
	for _, f := range p.files {
		if err := s.drainFile(ctx, f, emit); err != nil {
			return err
		}
	}
	return nil
}

func (s *spillSet) drainFile(ctx context.Context, f *spillFile, emit func(arrow.RecordBatch, []bool) error) error {
	sub := newSpillSet(s.ec, s.schema, s.depth+1)
	defer sub.remove()
	src := f.source()
	defer src.Close()
	base := s.ec.allocated()
	var enc vectorized.KeyEncoder
	for {
		b, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		n := int(b.NumRows())
		if err := enc.Encode(b.Columns(), n); err != nil {
			return err
		}
		fresh, out := make([]bool, n), []bool(nil)
		for i := range fresh {
			switch sub.admit(enc.Key(i)) {
			case keyFresh:
				fresh[i] = true
			case keySpill:
				out = markRow(out, n, i)
			}
		}
		if out != nil {
			if err := sub.write(ctx, b, &enc, out); err != nil {
				return err
			}
		}
		if err := emit(b, fresh); err != nil {
			return err
		}
		if s.ec.overBudget(&sub.mem, base, sub.bytes, sub.bytes) {
			if err := sub.freeze(); err != nil {
				return err
			}
		}
	}
	return sub.drain(ctx, emit)
}

// remove deletes the partitions, if any.
func (s *spillSet) remove() {
	s.mem.free()
	if s.spill != nil {
		s.spill.remove()
		s.spill = nil
	}
}

// markRow sets rows[i], allocating rows (of n) on first use.
func markRow(rows []bool, n, i int) []bool {
	if rows == nil {
		rows = make([]bool, n)
	}
	rows[i] = true
	return rows
}

// subQueue reads, one after another, the operators an operator split its
// spilled work into (partition by partition), as batches of its schema.
type subQueue struct {
	ops []Operator
	pos int
}

func (q *subQueue) next(ctx context.Context, schema *arrow.Schema, cur *current) (arrow.RecordBatch, error) {
	for q.pos < len(q.ops) {
		sub := q.ops[q.pos]
		if err := sub.Open(ctx); err != nil {
			return nil, err
		}
		b, err := Next(ctx, sub)
		if errors.Is(err, io.EOF) {
			sub.Close()
			q.pos++
			continue
		}
		if err != nil {
			return nil, err
		}
		// Sub-operators name (and null-flag) their columns alike, not
		// necessarily the same.
		return cur.set(array.NewRecordBatch(schema, b.Columns(), b.NumRows())), nil
	}
	return nil, io.EOF
}

func (q *subQueue) close() error {
	var errs []error
	for _, s := range q.ops {
		errs = append(errs, s.Close())
	}
	q.ops = nil
	return errors.Join(errs...)
}
