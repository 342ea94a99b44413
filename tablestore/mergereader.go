package tablestore

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// mergeReader streams the k-way merge of a bucket's sorted runs (files)
// through the merge function, holding one batch per run: memory stays
// bounded by the run count, not the bucket size.
//
// Rows are compared by normalized keys: an order-preserving byte encoding
// of the primary key (and of sequence.field plus sequence number for the
// version), computed once per batch, so rows of different batches compare
// with one string comparison.
type mergeReader struct {
	s    *Scan
	sch  *tableSchema
	need []int // schema indexes read; the projection comes first
	runs []*runCursor
	heap runCursorHeap
	mf   mergeFunction
	// rm builds merged rows (partial-update, aggregation; nil for picking
	// engines) into out, from the pinned arrays of each position (arrs).
	rm   rowMerger
	out  *mergeOut
	arrs [][]arrow.Array
	in   *mergeRows
	// keepRetracts keeps retracting survivors (compaction that cannot drop
	// deletes); outCols are the run-batch columns emitted.
	keepRetracts bool
	outCols      []int
	outSchema    *arrow.Schema
	// pinned are the batches output rows refer to (retained); refs name
	// the rows of the output batch being assembled.
	pinned []arrow.RecordBatch
	refs   []rowRef
	cur    arrow.RecordBatch
	ready  bool
}

type runCursor struct {
	pin   int32             // index of b in pinned
	r     BatchReader       // raw rows: system columns, then the read columns
	b     arrow.RecordBatch // borrowed from r until the next r.Next
	i     int
	keys  []string
	vers  []string
	kinds []int8
}

// newMergeReader merges files for a scan: the projection, live rows only.
// With withSys (compaction) it emits the system columns and every read
// column, and keeps retracting rows when keepRetracts. extra are more runs,
// older than the files, laid out like merged output with withSys (the
// lookup changelog merges the merged rows before a commit with its files);
// the merge reader closes them, also on error.
func newMergeReader(ctx context.Context, s *Scan, files []*manifestEntry, allowed func(string) bool, withSys, keepRetracts bool, extra ...BatchReader) (*mergeReader, error) {
	sch := s.sch
	need := mergeColumns(sch, s.proj)
	m := &mergeReader{s: s, sch: sch, need: need, mf: newMergeFunction(sch), keepRetracts: keepRetracts}
	if m.rm = newRowMerger(s.st.id, sch, need, s.st.s.opts.Mem); m.rm != nil {
		types := make([]arrow.DataType, len(need))
		for p, c := range need {
			types[p] = sch.types[c]
		}
		m.out = newMergeOut(types)
		m.arrs = make([][]arrow.Array, len(need))
		m.in = &mergeRows{
			arrs: func(p int) []arrow.Array { return m.arrs[p] },
			seq:  func(r rowRef) int64 { return m.pinned[r.src].Column(0).(*array.Int64).Value(int(r.row)) },
			kind: func(r rowRef) RowKind { return RowKind(m.pinned[r.src].Column(1).(*array.Int8).Value(int(r.row))) },
		}
	}
	rt := newReadTarget(sch, need, true)
	for _, r := range extra {
		m.runs = append(m.runs, &runCursor{r: r})
	}
	for _, e := range files {
		df, err := s.st.openDataFile(e)
		if err != nil {
			m.Close()
			return nil, err
		}
		rgs := s.selectRowGroups(df, allowed)
		if err := verifyIfFull(ctx, df, rgs); err != nil {
			m.Close()
			return nil, err
		}
		r, err := newStreamReader(ctx, s, df, rgs, rt)
		if err != nil {
			m.Close()
			return nil, err
		}
		r.raw = true
		r.skipPages(allowed)
		m.runs = append(m.runs, &runCursor{r: r})
	}
	if withSys {
		for c := range rt.schema.NumFields() {
			m.outCols = append(m.outCols, c)
		}
	} else {
		for k := range s.proj {
			m.outCols = append(m.outCols, 2+k)
		}
	}
	fields := make([]arrow.Field, len(m.outCols))
	for k, c := range m.outCols {
		fields[k] = rt.schema.Field(c)
	}
	m.outSchema = arrow.NewSchema(fields, nil)
	return m, nil
}

// advance moves a run to its next row, loading its next batch when needed;
// false when the run is exhausted.
func (m *mergeReader) advance(ctx context.Context, rc *runCursor) (bool, error) {
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
func (m *mergeReader) encode(rc *runCursor) {
	sch := m.sch
	colOf := func(name string) arrow.Array {
		return rc.b.Column(2 + slices.Index(m.need, sch.fieldIndex(name)))
	}
	var keyCols, verCols []arrow.Array
	for _, k := range sch.PrimaryKeys {
		keyCols = append(keyCols, colOf(k))
	}
	for _, c := range sch.opts.sequenceField {
		verCols = append(verCols, colOf(c))
	}
	verCols = append(verCols, rc.b.Column(0))
	n := int(rc.b.NumRows())
	// One allocation per batch: encode everything, then cut substrings.
	var buf []byte
	ends := make([]int, 0, 2*n)
	for i := range n {
		for _, c := range keyCols {
			buf = appendNormalized(buf, c, i)
		}
		ends = append(ends, len(buf))
		for _, c := range verCols {
			buf = appendNormalized(buf, c, i)
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

func (m *mergeReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
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
	var rows []int
	var vers []rowRef
	n := 0
	limit := m.s.st.s.opts.BatchSize
	for n < limit && m.heap.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		top := m.heap[0]
		key := top.keys[top.i]
		if !m.sharedKey(key) {
			// Fast path: the key is in one run only.
			if m.keepRetracts || !RowKind(top.kinds[top.i]).IsRetract() {
				ref := rowRef{top.pin, int32(top.i)}
				if m.out != nil {
					m.out.addRow(ref, m.in.seq(ref), top.kinds[top.i])
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
				vers = append(vers, rowRef{g.rc.pin, int32(g.i)})
			}
			before := m.out.rows()
			if err := m.rm.merge(m.in, vers, false, m.out); err != nil {
				return nil, err
			}
			if m.out.rows() > before {
				if !m.keepRetracts && RowKind(m.out.kinds[before]).IsRetract() {
					m.out.pop()
				} else {
					n++
				}
			}
		} else {
			rows = rows[:0]
			for i := range group {
				rows = append(rows, i)
			}
			w := group[m.mf.pick(rows)]
			if m.keepRetracts || !RowKind(w.rc.kinds[w.i]).IsRetract() {
				m.refs = append(m.refs, rowRef{w.rc.pin, int32(w.i)})
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
func (m *mergeReader) assemble() arrow.RecordBatch {
	mem := m.s.st.s.opts.Mem
	cols := make([]arrow.Array, len(m.outCols))
	var rows int
	if m.out != nil {
		rows = m.out.rows()
		seqs, kinds := m.out.sysColumns(mem)
		for k, c := range m.outCols {
			switch c {
			case 0:
				cols[k] = seqs
			case 1:
				cols[k] = kinds
			default:
				cols[k] = m.out.gatherColumn(mem, c-2, m.arrs[c-2])
			}
		}
		if m.outCols[0] != 0 {
			seqs.Release()
			kinds.Release()
		}
		m.out.release()
	} else {
		rows = len(m.refs)
		srcs := make([]arrow.Array, len(m.pinned))
		for k, c := range m.outCols {
			for j, b := range m.pinned {
				srcs[j] = b.Column(c)
			}
			cols[k] = gather(mem, m.outSchema.Field(k).Type, srcs, m.refs)
		}
		m.refs = m.refs[:0]
	}
	out := array.NewRecordBatch(m.outSchema, cols, int64(rows))
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
func (m *mergeReader) sharedKey(key string) bool {
	for _, c := range []int{1, 2} {
		if c < len(m.heap) && m.heap[c].keys[m.heap[c].i] == key {
			return true
		}
	}
	return false
}

func (m *mergeReader) Close() error {
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

// appendNormalized appends an order-preserving encoding of row i of a:
// byte comparison of encodings orders like cmpFunc (nulls first).
func appendNormalized(dst []byte, a arrow.Array, i int) []byte {
	if a.IsNull(i) {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	u64 := func(v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63)) }
	switch a := a.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return append(dst, 1)
		}
		return append(dst, 0)
	case *array.Int8:
		return u64(int64(a.Value(i)))
	case *array.Int16:
		return u64(int64(a.Value(i)))
	case *array.Int32:
		return u64(int64(a.Value(i)))
	case *array.Int64:
		return u64(a.Value(i))
	case *array.Date32:
		return u64(int64(a.Value(i)))
	case *array.Timestamp:
		return u64(int64(a.Value(i)))
	case *array.Time64:
		return u64(int64(a.Value(i)))
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)))
	case *array.Float64:
		return appendFloat(dst, a.Value(i))
	case *array.String:
		return appendEscaped(dst, []byte(a.Value(i)))
	case *array.Binary:
		return appendEscaped(dst, a.Value(i))
	case *array.Decimal128:
		v := a.Value(i)
		return appendDecimal(dst, v)
	case *array.Struct:
		for f := range a.NumField() {
			dst = appendNormalized(dst, a.Field(f), i)
		}
		return dst
	case array.ListLike: // list and map: each element after a 1, then a 0
		lo, hi := a.ValueOffsets(i)
		for j := lo; j < hi; j++ {
			dst = appendNormalized(append(dst, 1), a.ListValues(), int(j))
		}
		return append(dst, 0)
	}
	panic("tablestore: appendNormalized: unsupported type " + a.DataType().String())
}

func appendFloat(dst []byte, f float64) []byte {
	bits := math.Float64bits(f)
	if math.IsNaN(f) {
		bits = 0 // cmp.Compare orders NaN first
		return binary.BigEndian.AppendUint64(dst, bits)
	}
	if bits>>63 == 0 {
		bits ^= 1 << 63
	} else {
		bits = ^bits
	}
	return binary.BigEndian.AppendUint64(dst, bits)
}

func appendDecimal(dst []byte, v decimal128.Num) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.HighBits())^(1<<63))
	return binary.BigEndian.AppendUint64(dst, v.LowBits())
}

// appendEscaped writes b with 0x00 escaped as 0x00 0xFF and a 0x00 0x00
// terminator, so prefixes sort first.
func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, 0, 0)
}
