package tablestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore/merge"
	"github.com/flightd/flightd/tablestore/meta"
)

// AppendKey appends the normalized encoding of row i of key columns cols
// (in primary-key order, stored types) to dst: equal keys encode equally
// and the encodings sort like the keys. It is the identity of a key in a
// point read (Scan.Lookup, Table.ChangedKeys).
func AppendKey(dst []byte, cols []arrow.Array, i int) []byte {
	for _, c := range cols {
		dst = merge.AppendNormalized(dst, c, i)
	}
	return dst
}

// Lookup reads the live rows of the given primary keys at the scan's
// snapshot: keys are arrays of the key columns in primary-key order, of the
// stored types, one key per row. It returns the scan's columns for every
// distinct key found (rows, in key order) and, per input row, its row in
// rows or -1 (not found, or a NULL in the key). Only files whose key range
// holds a key are opened, only row groups whose statistics may hold one are
// read, and each key is found by binary search in each such sorted run; the
// versions found are merged by the table's merge engine like a scan's.
// Safe for concurrent use; the caller releases rows.
func (s *Scan) Lookup(ctx context.Context, keys []arrow.Array) (rows arrow.RecordBatch, idx []int, err error) {
	sch := s.sch
	if !sch.hasPK() {
		return nil, nil, fmt.Errorf("lookup %s: %w: the table has no primary key", s.st.id, ErrInvalid)
	}
	if len(keys) != len(sch.PrimaryKeys) {
		return nil, nil, fmt.Errorf("lookup %s: %w: %d key columns given, the primary key (%s) has %d", s.st.id, ErrInvalid, len(keys), joinNames(sch.PrimaryKeys), len(sch.PrimaryKeys))
	}
	n := keys[0].Len()
	for c, k := range sch.PrimaryKeys {
		want := sch.types[sch.fieldIndex(k)]
		if !arrow.TypeEqual(keys[c].DataType(), want) {
			return nil, nil, fmt.Errorf("lookup %s: %w: key column %d (%s) is %s, the table stores %s", s.st.id, ErrInvalid, c+1, k, keys[c].DataType(), want)
		}
		if keys[c].Len() != n {
			return nil, nil, fmt.Errorf("lookup %s: %w: key column %d (%s) has %d rows, column 1 has %d", s.st.id, ErrInvalid, c+1, k, keys[c].Len(), n)
		}
	}
	// Distinct non-NULL keys, sorted: the order of every run.
	idx = make([]int, n)
	seen := map[string]bool{}
	var want []pointKey
	var buf []byte
	for i := range n {
		idx[i] = -1
		if anyNull(keys, i) {
			continue
		}
		buf = AppendKey(buf[:0], keys, i)
		if seen[string(buf)] {
			continue
		}
		seen[string(buf)] = true
		want = append(want, pointKey{enc: string(buf), row: i})
	}
	slices.SortFunc(want, func(a, b pointKey) int { return cmpStrings(a.enc, b.enc) })
	// A key lives in the bucket its bucket key hashes to: other buckets'
	// files are not read (their key ranges overlap every key).
	buckets := bucketsOf(sch, n, func(name string) arrow.Array { return keys[slices.Index(sch.PrimaryKeys, name)] })
	byBucket := sch.opts.buckets > 1
	var runs []BatchReader
	defer func() {
		for _, r := range runs {
			r.Close()
		}
	}()
	pk := make([]int, len(sch.PrimaryKeys))
	for c, k := range sch.PrimaryKeys {
		pk[c] = sch.fieldIndex(k)
	}
	need := mergeColumns(sch, s.proj)
	rt := newReadTarget(sch, need, true)
	keyPos := make([]int, len(pk)) // key columns in the raw batches
	for c, i := range pk {
		keyPos[c] = 2 + slices.Index(need, i)
	}
	for _, sp := range s.splits {
		for _, e := range sp.(*pkSplit).files {
			cand := candidates(e, want, keys, buckets, byBucket)
			if len(cand) == 0 {
				continue
			}
			r, err := s.pointRun(ctx, e, cand, keys, rt, keyPos)
			if err != nil {
				return nil, nil, err
			}
			if r != nil {
				runs = append(runs, r)
			}
		}
	}
	out, err := s.mergePoints(ctx, runs, keyPos, keys, idx)
	runs = nil // the merge reader closed them
	return out, idx, err
}

type pointKey struct {
	enc string
	row int // first input row with the key
}

func anyNull(cols []arrow.Array, i int) bool {
	for _, c := range cols {
		if c.IsNull(i) {
			return true
		}
	}
	return false
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func joinNames(names []string) string {
	var b bytes.Buffer
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}

// mergeColumns are the schema indexes a merge of the projection proj reads:
// the projection first, then what merging needs (sequence groups, the key,
// sequence.field).
func mergeColumns(sch *tableSchema, proj []int) []int {
	need := mergeNeeds(sch, slices.Clone(proj))
	for _, c := range append(slices.Clone(sch.PrimaryKeys), sch.opts.sequenceField...) {
		if i := sch.fieldIndex(c); !slices.Contains(need, i) {
			need = append(need, i)
		}
	}
	return need
}

// candidates returns the keys of want (sorted) that e may hold: of its
// bucket (byBucket) and in its key range.
func candidates(e *meta.ManifestEntry, want []pointKey, keys []arrow.Array, buckets []int32, byBucket bool) []pointKey {
	var out []pointKey
	for _, w := range want {
		if byBucket && int(buckets[w.row]) != e.Bucket {
			continue
		}
		k := make([]meta.Datum, len(keys))
		ok := true
		for c := range keys {
			if k[c], ok = meta.DatumAt(keys[c], w.row); !ok {
				break
			}
		}
		if ok {
			lo, ok1 := compareKeys(e.File.MinKey, k)
			hi, ok2 := compareKeys(k, e.File.MaxKey)
			if ok1 && ok2 && (lo > 0 || hi > 0) {
				continue
			}
		}
		out = append(out, w)
	}
	return out
}

// pointRun reads the rows of cand (sorted) from one data file as a sorted
// run in the merge reader's raw layout, or nil when the file holds none.
func (s *Scan) pointRun(ctx context.Context, e *meta.ManifestEntry, cand []pointKey, keys []arrow.Array, rt *readTarget, keyPos []int) (BatchReader, error) {
	df, err := s.points.open(s.st, e)
	if err != nil {
		return nil, err
	}
	// Row groups by the first key column's statistics.
	vals := make([]scalar.Scalar, 0, len(cand))
	for _, w := range cand {
		v, err := scalar.GetScalar(keys[0], w.row)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	pred := In{Column: s.sch.PrimaryKeys[0], Values: vals}
	var rgs []int
	for rg := range df.numRowGroups() {
		if mayMatch(pred, df.rowGroupStats(rg, s.sch, s.sch.isPrimaryKey)) {
			rgs = append(rgs, rg)
		}
	}
	if len(rgs) == 0 {
		return nil, nil
	}
	if len(rgs) == df.numRowGroups() {
		if err := df.verify(ctx); err != nil {
			return nil, err
		}
	}
	cols, pos, err := df.fileColumns(rt)
	if err != nil {
		return nil, err
	}
	mem := s.st.s.opts.Mem
	// Whole row groups (slices of the cached columns, when cached) searched
	// in place, so a lookup costs its keys' searches, not the run's size.
	src := &chunkSource{ctx: ctx, cache: s.st.s.columns, decoders: s.decoders, df: df, cols: cols, rgs: rgs, batch: math.MaxInt, mem: mem}
	defer src.Release()
	found := &sliceReader{}
	var enc []byte
	for len(cand) > 0 {
		rec, err := src.Read()
		if errors.Is(err, io.EOF) || (err == nil && rec == nil) {
			break
		}
		if err != nil {
			found.Close()
			return nil, corruptf(df.path, err)
		}
		b, err := conform(ctx, mem, rt, pos, rec.Columns(), int(rec.NumRows()))
		if err != nil {
			found.Close()
			return nil, err
		}
		cand, err = searchBatch(ctx, mem, b, keyPos, cand, found, &enc)
		b.Release()
		if err != nil {
			found.Close()
			return nil, err
		}
	}
	if len(found.batches) == 0 {
		return nil, nil
	}
	return found, nil
}

// searchBatch binary-searches a batch of a sorted run for the keys of cand
// (sorted) up to its last key, adds the rows found to found (one batch),
// and returns the keys left for later batches.
func searchBatch(ctx context.Context, mem memory.Allocator, b arrow.RecordBatch, keyPos []int, cand []pointKey, found *sliceReader, enc *[]byte) ([]pointKey, error) {
	nb := int(b.NumRows())
	if nb == 0 {
		return cand, nil
	}
	cols := make([]arrow.Array, len(keyPos))
	for c, p := range keyPos {
		cols[c] = b.Column(p)
	}
	rowKey := func(j int) string {
		*enc = AppendKey((*enc)[:0], cols, j)
		return string(*enc)
	}
	last := rowKey(nb - 1)
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	j := 0
	for len(cand) > 0 && cand[0].enc <= last {
		k := cand[0].enc
		cand = cand[1:]
		j += sort.Search(nb-j, func(x int) bool { return rowKey(j+x) >= k })
		if j < nb && rowKey(j) == k {
			ib.Append(int64(j))
		}
	}
	if ib.Len() == 0 {
		return cand, nil
	}
	idx := ib.NewInt64Array()
	defer idx.Release()
	if idx.Len() == 1 { // a slice is cheaper than a take kernel
		r := idx.Value(0)
		found.add(b.NewSlice(r, r+1))
		return cand, nil
	}
	out, err := compute.Take(compute.WithAllocator(ctx, mem), *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(b), compute.NewDatumWithoutOwning(idx))
	if err != nil {
		return nil, err
	}
	found.add(out.(*compute.RecordDatum).Value)
	return cand, nil
}

// pointFiles are the data files a scan's lookups opened, kept open (data
// files are immutable) until the scan closes.
type pointFiles struct {
	mu    sync.Mutex
	files map[string]*dataFile
}

func (p *pointFiles) open(st *tableState, e *meta.ManifestEntry) (*dataFile, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if df := p.files[e.File.Path]; df != nil {
		return df, nil
	}
	df, err := st.openDataFile(e)
	if err != nil {
		return nil, err
	}
	if p.files == nil {
		p.files = map[string]*dataFile{}
	}
	p.files[e.File.Path] = df
	return df, nil
}

func (p *pointFiles) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, df := range p.files {
		df.Close()
	}
	p.files = nil
}

// sliceReader yields batches it owns, in order.
type sliceReader struct {
	batches []arrow.RecordBatch
	cur     arrow.RecordBatch
}

func (r *sliceReader) add(b arrow.RecordBatch) { r.batches = append(r.batches, b) }

func (r *sliceReader) Next(context.Context) (arrow.RecordBatch, error) {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if len(r.batches) == 0 {
		return nil, io.EOF
	}
	r.cur, r.batches = r.batches[0], r.batches[1:]
	return r.cur, nil
}

func (r *sliceReader) Close() error {
	for {
		if _, err := r.Next(context.Background()); err != nil {
			return nil
		}
	}
}

// mergePoints merges the runs by the table's merge engine and gathers the
// projection of the live rows; it fills idx for the input rows found.
func (s *Scan) mergePoints(ctx context.Context, runs []BatchReader, keyPos []int, keys []arrow.Array, idx []int) (arrow.RecordBatch, error) {
	mem := s.st.s.opts.Mem
	m, err := newMergeReader(ctx, s, nil, anyColumn, true, false, runs...)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	proj := make([]int, len(s.proj))
	for k := range s.proj {
		proj[k] = 2 + k // the projection comes first in need
	}
	var parts [][]arrow.Array
	at := map[string]int{} // encoded key -> output row
	var enc []byte
	total := 0
	for {
		b, err := m.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			releaseParts(parts)
			return nil, err
		}
		cols := make([]arrow.Array, len(keyPos))
		for c, p := range keyPos {
			cols[c] = b.Column(p)
		}
		for j := range int(b.NumRows()) {
			enc = AppendKey(enc[:0], cols, j)
			at[string(enc)] = total + j
		}
		total += int(b.NumRows())
		part := make([]arrow.Array, len(proj))
		for k, p := range proj {
			part[k] = b.Column(p)
			part[k].Retain()
		}
		parts = append(parts, part)
	}
	defer releaseParts(parts)
	cols := make([]arrow.Array, len(proj))
	for k := range proj {
		chunks := make([]arrow.Array, len(parts))
		for p := range parts {
			chunks[p] = parts[p][k]
		}
		if len(chunks) == 0 {
			cols[k] = array.MakeArrayOfNull(mem, s.out.Field(k).Type, 0)
			continue
		}
		if cols[k], err = array.Concatenate(chunks, mem); err != nil {
			for _, c := range cols[:k] {
				c.Release()
			}
			return nil, err
		}
	}
	out := array.NewRecordBatch(s.out, cols, int64(total))
	for _, c := range cols {
		c.Release()
	}
	// Every input row of a found key points at its row.
	var buf []byte
	for i := range idx {
		if anyNull(keys, i) {
			continue
		}
		buf = AppendKey(buf[:0], keys, i)
		if r, ok := at[string(buf)]; ok {
			idx[i] = r
		}
	}
	return out, nil
}

func releaseParts(parts [][]arrow.Array) {
	for _, p := range parts {
		for _, a := range p {
			a.Release()
		}
	}
}

// ChangedKeys reports the keys snapshot id may have changed, calling fn
// with each one's encoding (AppendKey; a key may come more than once): the
// keys of the rows an APPEND commit wrote. A COMPACT commit changes no row
// (nothing is reported); after an OVERWRITE any key may have changed, and
// all is true.
func (t *Table) ChangedKeys(ctx context.Context, id int64, fn func(key []byte)) (all bool, err error) {
	st := t.st
	sn, err := st.readSnapshot(id)
	if err != nil {
		return false, err
	}
	switch sn.CommitKind {
	case meta.CommitCompact:
		return false, nil
	case meta.CommitAppend:
	default:
		return true, nil
	}
	sch, err := st.schema(sn.SchemaID)
	if err != nil {
		return false, err
	}
	if !sch.hasPK() {
		return true, nil
	}
	ents, _, err := st.listEntries(sn.DeltaManifestList)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if e.Kind != meta.KindAdd {
			continue
		}
		if err := st.fileKeys(ctx, sch, e, func(k []byte) bool { fn(k); return true }); err != nil {
			return false, err
		}
	}
	return false, nil
}

// Published returns a channel closed at the next commit of this process to
// the table, through any handle: a reader that takes it before reading the
// latest snapshot id misses no commit acknowledged after that.
func (t *Table) Published() <-chan struct{} { return t.st.nextPublish() }

// SameVersion reports whether o is a handle on the same table as t with the
// same schema version: a table altered, replaced or dropped and created
// again since t was opened is not.
func (t *Table) SameVersion(o *Table) bool {
	return t.st == o.st && t.schema.ID == o.schema.ID && t.schema.TimeMillis == o.schema.TimeMillis
}
