package exec

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// externalSort reads the batches pre (owned, input that came before the
// child's), then the child; whenever the execution is over its memory
// budget it sorts what it holds into a run on disk. It returns either an
// in-memory table (nothing spilled) or a merger over the runs.
func (s *sortOp) externalSort(ctx context.Context, pre []arrow.RecordBatch) (*table, *runMerger, error) {
	defer func() {
		releaseBatches(pre)
	}()
	keys := sortExprs(s.keys)
	base := s.ec.allocated()
	var batches []arrow.RecordBatch
	var keyCols [][]arrow.Array
	var runs []*spillFile
	var held int64
	release := func() {
		held = 0
		releaseBatches(batches)
		for _, k := range keyCols {
			releaseArrays(k)
		}
		batches, keyCols = nil, nil
	}
	fail := func(err error) (*table, *runMerger, error) {
		release()
		for _, r := range runs {
			r.remove()
		}
		return nil, nil, err
	}
	spillRun := func() error {
		t, err := buildTable(s.ec, s.child.Schema(), batches, keyCols, keys)
		release()
		if err != nil {
			return err
		}
		defer func() {
			t.release()
			s.mem.resize(0)
		}()
		run, err := s.writeRun(ctx, t)
		if err != nil {
			return err
		}
		runs = append(runs, run)
		return nil
	}
	for {
		var b arrow.RecordBatch
		var err error
		if len(pre) > 0 {
			b, pre = pre[0], pre[1:]
		} else if b, err = Next(ctx, s.child); err == nil {
			b.Retain()
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(err)
		}
		batches = append(batches, b)
		k, err := evalAll(ctx, s.ec, keys, b)
		if err != nil {
			return fail(err)
		}
		keyCols = append(keyCols, k)
		// Key columns count even when they share the batch's buffers: a
		// run concatenates them separately.
		held += batchBytes(b) + arraysBytes(k)
		// A run or the output concatenates the held batches and keys
		// before they go: reserve both.
		if s.ec.overBudget(&s.mem, base, held, 2*held) {
			if err := spillRun(); err != nil {
				return fail(err)
			}
		}
	}
	if len(runs) == 0 {
		t, err := buildTable(s.ec, s.child.Schema(), batches, keyCols, keys)
		release()
		if err == nil {
			s.mem.resize(t.bytes())
		}
		return t, nil, err
	}
	if len(batches) > 0 {
		if err := spillRun(); err != nil {
			return fail(err)
		}
	}
	for _, r := range runs {
		if err := r.finish(); err != nil {
			return fail(err)
		}
	}
	return nil, newRunMerger(s.ec, s.child.Schema(), s.keys, runs), nil
}

// writeRun writes t sorted, with its key columns appended, to a spill file.
func (s *sortOp) writeRun(ctx context.Context, t *table) (*spillFile, error) {
	idx, err := sortedIndices(t, s.keys)
	if err != nil {
		return nil, err
	}
	fields := append([]arrow.Field(nil), s.child.Schema().Fields()...)
	for i, k := range t.keys {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("__key%d", i), Type: k.DataType(), Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	run, err := newSpillFile(s.ec, schema)
	if err != nil {
		return nil, err
	}
	all := append(append([]arrow.Array(nil), t.cols...), t.keys...)
	for lo := 0; lo < len(idx); lo += s.ec.batchSize() {
		hi := min(lo+s.ec.batchSize(), len(idx))
		cols, err := vectorized.TakeColumns(ctx, s.ec.Mem, all, idx[lo:hi])
		if err != nil {
			run.remove()
			return nil, err
		}
		b := array.NewRecordBatch(schema, cols, int64(hi-lo))
		releaseArrays(cols)
		err = run.write(b)
		b.Release()
		if err != nil {
			run.remove()
			return nil, err
		}
	}
	return run, nil
}

// runMerger merges sorted runs. Ties go to the earlier run, so the merge is
// stable like the in-memory sort.
type runMerger struct {
	ec     *Context
	schema *arrow.Schema
	keys   []SortKey
	ncols  int
	srcs   []BatchSource
	cur    []arrow.RecordBatch
	pos    []int
	h      mergeHeap
	inited bool
	out    current
}

func newRunMerger(ec *Context, schema *arrow.Schema, keys []SortKey, runs []*spillFile) *runMerger {
	m := &runMerger{ec: ec, schema: schema, keys: keys, ncols: schema.NumFields()}
	for _, r := range runs {
		m.srcs = append(m.srcs, r.source())
	}
	m.cur = make([]arrow.RecordBatch, len(runs))
	m.pos = make([]int, len(runs))
	m.h.m = m
	return m
}

func (m *runMerger) less(a, b int) bool {
	ba, bb := m.cur[a], m.cur[b]
	i, j := m.pos[a], m.pos[b]
	for k, key := range m.keys {
		x, y := ba.Column(m.ncols+k), bb.Column(m.ncols+k)
		xn, yn := x.IsNull(i), y.IsNull(j)
		var c int
		switch {
		case xn && yn:
			continue
		case xn || yn:
			if xn == key.NullsFirst {
				return true
			}
			return false
		default:
			c = vectorized.CompareAt(x, i, y, j)
		}
		if key.Descending {
			c = -c
		}
		if c != 0 {
			return c < 0
		}
	}
	return a < b
}

// advance loads the next batch of run r; it reports false at its end.
func (m *runMerger) advance(ctx context.Context, r int) (bool, error) {
	b, err := m.srcs[r].Next(ctx)
	if errors.Is(err, io.EOF) {
		m.cur[r] = nil
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m.cur[r], m.pos[r] = b, 0
	return true, nil
}

func (m *runMerger) next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !m.inited {
		m.inited = true
		for r := range m.srcs {
			ok, err := m.advance(ctx, r)
			if err != nil {
				return nil, err
			}
			if ok {
				m.h.runs = append(m.h.runs, r)
			}
		}
		heap.Init(&m.h)
	}
	if len(m.h.runs) == 0 {
		return nil, io.EOF
	}
	rb := array.NewRecordBuilder(m.ec.Mem, m.schema)
	defer rb.Release()
	n := 0
	for n < m.ec.batchSize() && len(m.h.runs) > 0 {
		r := m.h.runs[0]
		b, i := m.cur[r], m.pos[r]
		for c := 0; c < m.ncols; c++ {
			vectorized.AppendValue(rb.Field(c), b.Column(c), i)
		}
		n++
		m.pos[r]++
		if m.pos[r] >= int(b.NumRows()) {
			ok, err := m.advance(ctx, r)
			if err != nil {
				return nil, err
			}
			if !ok {
				heap.Pop(&m.h)
				continue
			}
		}
		heap.Fix(&m.h, 0)
	}
	return m.out.set(rb.NewRecordBatch()), nil
}

func (m *runMerger) close() {
	m.out.release()
	for _, s := range m.srcs {
		s.Close()
	}
	m.srcs = nil
}

type mergeHeap struct {
	m    *runMerger
	runs []int
}

func (h *mergeHeap) Len() int           { return len(h.runs) }
func (h *mergeHeap) Less(i, j int) bool { return h.m.less(h.runs[i], h.runs[j]) }
func (h *mergeHeap) Swap(i, j int)      { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *mergeHeap) Push(x any)         { h.runs = append(h.runs, x.(int)) }
func (h *mergeHeap) Pop() any {
	x := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return x
}
