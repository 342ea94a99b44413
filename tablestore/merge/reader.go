package merge

import (
	"container/heap"
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Reader streams the k-way merge of a bucket's sorted runs through the
// merge engine, holding one batch per run: memory stays bounded by the run
// count, not the bucket size. Rows come out in key order.
//
// Rows are compared by normalized keys: an order-preserving byte encoding
// of the primary key (and of sequence.field plus sequence number for the
// version), computed once per batch, so rows of different batches compare
// with one string comparison.
type Reader struct {
	l    Layout
	runs []*runCursor
	heap runCursorHeap
	// rm builds merged rows (partial-update, aggregation; nil for picking
	// engines) into out, from the pinned arrays of each position (arrs).
	rm   rowMerger
	out  *output
	arrs [][]arrow.Array
	in   *Input
	// pinned are the batches output rows refer to (retained); refs name
	// the rows of the output batch being assembled.
	pinned []arrow.RecordBatch
	refs   []Ref
	cur    arrow.RecordBatch
	ready  bool
}

type runCursor struct {
	pin   int32 // index of b in pinned
	r     Run
	b     arrow.RecordBatch // borrowed from r until the next r.Next
	i     int
	keys  []string
	vers  []string
	kinds []int8
}

// Run is a sorted run of a bucket (a file, or merged rows): batches of
// rows laid out as the sequence number (Int64) and the kind (Int8), then
// the columns of Layout.Columns, in key order, with one version of a key
// at most. Next returns io.EOF at the end; a batch is borrowed until the
// next Next or Close.
type Run interface {
	Next(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

// Layout describes the runs a Reader merges and what it emits.
type Layout struct {
	Table   string   // names the table in errors
	Options *Options // the merge engine
	// Columns are the columns of the runs after the two system columns.
	Columns []Column
	// Key are the positions (in Columns) of the primary key, in key order;
	// Version those of sequence.field, which orders the versions of a key
	// before the sequence number does.
	Key, Version []int
	// Emit are the run columns emitted, as Schema describes them: all of
	// them in order (0 and 1 the system columns, 2+p position p), or
	// positions only.
	Emit   []int
	Schema *arrow.Schema
	// KeepRetracts keeps retracting survivors (compaction that cannot drop
	// deletes); otherwise a key whose survivor is -U/-D is left out.
	KeepRetracts bool
	BatchSize    int // rows per emitted batch at most
	Mem          memory.Allocator
}

// NewReader merges runs in any order (versions are ordered by Version and
// the sequence number); Close closes them.
func NewReader(runs []Run, l Layout) *Reader {
	m := &Reader{l: l}
	for _, r := range runs {
		m.runs = append(m.runs, &runCursor{r: r})
	}
	if m.rm = newRowMerger(l.Table, l.Options, l.Columns, l.Mem); m.rm != nil {
		types := make([]arrow.DataType, len(l.Columns))
		for p, c := range l.Columns {
			types[p] = c.Type
		}
		m.out = newOutput(types)
		m.arrs = make([][]arrow.Array, len(l.Columns))
		m.in = &Input{
			Arrays: func(p int) []arrow.Array { return m.arrs[p] },
			Seq:    func(r Ref) int64 { return m.pinned[r.Src].Column(0).(*array.Int64).Value(int(r.Row)) },
			Kind:   func(r Ref) RowKind { return RowKind(m.pinned[r.Src].Column(1).(*array.Int8).Value(int(r.Row))) },
		}
	}
	return m
}

// advance moves a run to its next row, loading its next batch when needed;
// false when the run is exhausted.
func (m *Reader) advance(ctx context.Context, rc *runCursor) (bool, error) {
	rc.i++
	for rc.b == nil || rc.i >= int(rc.b.NumRows()) {
		b, err := rc.r.Next(ctx)
		if errors.Is(err, io.EOF) {
			rc.b = nil
			return false, nil
		}
		if err != nil {
			return false, err
		}
		b.Retain()
		m.pinned = append(m.pinned, b)
		for p := range m.arrs {
			m.arrs[p] = append(m.arrs[p], b.Column(2+p))
		}
		rc.b, rc.i, rc.pin = b, 0, int32(len(m.pinned)-1)
		m.encode(rc)
	}
	return true, nil
}

// encode computes the normalized keys and versions of a run's batch.
func (m *Reader) encode(rc *runCursor) {
	var keyCols, verCols []arrow.Array
	for _, p := range m.l.Key {
		keyCols = append(keyCols, rc.b.Column(2+p))
	}
	for _, p := range m.l.Version {
		verCols = append(verCols, rc.b.Column(2+p))
	}
	verCols = append(verCols, rc.b.Column(0))
	n := int(rc.b.NumRows())
	// One allocation per batch: encode everything, then cut substrings.
	var buf []byte
	ends := make([]int, 0, 2*n)
	for i := range n {
		for _, c := range keyCols {
			buf = AppendNormalized(buf, c, i)
		}
		ends = append(ends, len(buf))
		for _, c := range verCols {
			buf = AppendNormalized(buf, c, i)
		}
		ends = append(ends, len(buf))
	}
	all := string(buf)
	rc.keys, rc.vers = make([]string, n), make([]string, n)
	start := 0
	for i := range n {
		rc.keys[i] = all[start:ends[2*i]]
		rc.vers[i] = all[ends[2*i]:ends[2*i+1]]
		start = ends[2*i+1]
	}
	rc.kinds = rc.b.Column(1).(*array.Int8).Int8Values()
}

// Next returns the next batch of merged rows (at most BatchSize, never
// empty) or io.EOF; the batch is borrowed until the next Next or Close.
func (m *Reader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if m.cur != nil {
		m.cur.Release()
		m.cur = nil
	}
	if !m.ready {
		for _, rc := range m.runs {
			rc.i = -1
			ok, err := m.advance(ctx, rc)
			if err != nil {
				return nil, err
			}
			if ok {
				m.heap = append(m.heap, rc)
			}
		}
		heap.Init(&m.heap)
		m.ready = true
	}
	type member struct {
		rc  *runCursor
		i   int
		ver string
	}
	var group []member
	var vers []Ref
	n := 0
	limit := m.l.BatchSize
	for n < limit && m.heap.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		top := m.heap[0]
		key := top.keys[top.i]
		if !m.sharedKey(key) {
			// Fast path: the key is in one run only.
			if m.l.KeepRetracts || !RowKind(top.kinds[top.i]).IsRetract() {
				ref := Ref{Src: top.pin, Row: int32(top.i)}
				if m.out != nil {
					m.out.addRow(ref, m.in.Seq(ref), RowKind(top.kinds[top.i]))
				} else {
					m.refs = append(m.refs, ref)
				}
				n++
			}
			ok, err := m.advance(ctx, top)
			if err != nil {
				return nil, err
			}
			if ok {
				heap.Fix(&m.heap, 0)
			} else {
				heap.Pop(&m.heap)
			}
			continue
		}
		group = group[:0]
		// Every run holds at most one version of a key: gather the runs
		// positioned on it.
		for m.heap.Len() > 0 && m.heap[0].keys[m.heap[0].i] == key {
			rc := heap.Pop(&m.heap).(*runCursor)
			group = append(group, member{rc, rc.i, rc.vers[rc.i]})
		}
		slices.SortFunc(group, func(a, b member) int { return strings.Compare(a.ver, b.ver) })
		if m.rm != nil {
			vers = vers[:0]
			for _, g := range group {
				vers = append(vers, Ref{Src: g.rc.pin, Row: int32(g.i)})
			}
			before := m.out.rows()
			if err := m.rm.merge(m.in, vers, false, m.out); err != nil {
				return nil, err
			}
			if m.out.rows() > before {
				if !m.l.KeepRetracts && m.out.kind(before).IsRetract() {
					m.out.pop()
				} else {
					n++
				}
			}
		} else {
			w := group[m.l.Options.Pick(len(group))]
			if m.l.KeepRetracts || !RowKind(w.rc.kinds[w.i]).IsRetract() {
				m.refs = append(m.refs, Ref{Src: w.rc.pin, Row: int32(w.i)})
				n++
			}
		}
		// Advance every member; pinned batches keep the winner's row.
		for _, g := range group {
			ok, err := m.advance(ctx, g.rc)
			if err != nil {
				return nil, err
			}
			if ok {
				heap.Push(&m.heap, g.rc)
			}
		}
	}
	if n == 0 {
		return nil, io.EOF
	}
	m.cur = m.assemble()
	return m.cur, nil
}

// assemble gathers the referenced rows into a batch and unpins batches no
// run still reads.
func (m *Reader) assemble() arrow.RecordBatch {
	mem := m.l.Mem
	cols := make([]arrow.Array, len(m.l.Emit))
	var rows int
	if m.out != nil {
		rows = m.out.rows()
		seqs, kinds := m.out.sysColumns(mem)
		for k, c := range m.l.Emit {
			switch c {
			case 0:
				cols[k] = seqs
			case 1:
				cols[k] = kinds
			default:
				cols[k] = m.out.gatherColumn(mem, c-2, m.arrs[c-2])
			}
		}
		if m.l.Emit[0] != 0 {
			seqs.Release()
			kinds.Release()
		}
		m.out.release()
	} else {
		rows = len(m.refs)
		srcs := make([]arrow.Array, len(m.pinned))
		for k, c := range m.l.Emit {
			for j, b := range m.pinned {
				srcs[j] = b.Column(c)
			}
			cols[k] = Gather(mem, m.l.Schema.Field(k).Type, srcs, m.refs)
		}
		m.refs = m.refs[:0]
	}
	out := array.NewRecordBatch(m.l.Schema, cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	var keep []arrow.RecordBatch
	for j, b := range m.pinned {
		still := false
		for _, rc := range m.runs {
			if rc.b != nil && rc.pin == int32(j) {
				rc.pin = int32(len(keep))
				still = true
			}
		}
		if still {
			keep = append(keep, b)
		} else {
			b.Release()
		}
	}
	m.pinned = keep
	for p := range m.arrs {
		m.arrs[p] = m.arrs[p][:0]
		for _, b := range keep {
			m.arrs[p] = append(m.arrs[p], b.Column(2+p))
		}
	}
	return out
}

// sharedKey reports whether a run other than the top one is positioned on
// key (in a binary heap, only the top's children can equal the minimum).
func (m *Reader) sharedKey(key string) bool {
	for _, c := range []int{1, 2} {
		if c < len(m.heap) && m.heap[c].keys[m.heap[c].i] == key {
			return true
		}
	}
	return false
}

// Close closes the runs and releases the batches held.
func (m *Reader) Close() error {
	var err error
	if m.cur != nil {
		m.cur.Release()
		m.cur = nil
	}
	for _, rc := range m.runs {
		if cerr := rc.r.Close(); err == nil {
			err = cerr
		}
	}
	m.runs = nil
	for _, b := range m.pinned {
		b.Release()
	}
	m.pinned = nil
	if m.out != nil {
		m.out.release()
	}
	return err
}

type runCursorHeap []*runCursor

func (h runCursorHeap) Len() int { return len(h) }
func (h runCursorHeap) Less(i, j int) bool {
	return h[i].keys[h[i].i] < h[j].keys[h[j].i]
}
func (h runCursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runCursorHeap) Push(x any)   { *h = append(*h, x.(*runCursor)) }
func (h *runCursorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
