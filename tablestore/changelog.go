package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore/merge"
	"github.com/flightd/flightd/tablestore/meta"
)

// Changelog producers (changelog-producer) write changelog files: the
// data-file layout, named changelog-*.parquet in the bucket directory,
// listed in the ChangelogManifestList of the snapshot that publishes them
// (see doc.go for the contract readers rely on).
//
//   - input: at flush, the input rows of each bucket in the order written
//     (write.go).
//   - lookup: at commit, under the commit lock and against the snapshot the
//     commit lands on, the diff of the merged rows of every bucket the
//     commit changes, before and after it (lookupChangelog).
//   - full-compaction: after a full compaction, a COMPACT snapshot whose
//     changelog is the diff between the merged content at the previous such
//     snapshot and now (fullCompactionChangelog).
//
// Both diffs merge-join the merged rows of a bucket before and after, in
// key order, and emit per key whose merged row differs: +I new, -U old and
// +U new, or -D old. For a commit that only adds files, the rows after are
// the rows before merged with its files, so the bucket is read once;
// otherwise (overwrites, full compaction) both sides are merge reads. Only
// files whose key range overlaps the changed files are read, and when a
// commit adds few distinct keys, only row groups whose key statistics
// admit one of them: keys outside merge from the same files before and
// after, so they cannot differ.

// lookupChangelog is the lookup producer of a commit.
func (st *tableState) lookupChangelog() func(context.Context, *meta.Snapshot, []*meta.ManifestEntry, []*meta.ManifestEntry, []*meta.ManifestEntry) ([]*meta.ManifestEntry, error) {
	return func(ctx context.Context, _ *meta.Snapshot, live, adds, deletes []*meta.ManifestEntry) ([]*meta.ManifestEntry, error) {
		gone := map[string]bool{}
		for _, d := range deletes {
			gone[d.File.FileName] = true
		}
		var after []*meta.ManifestEntry
		for _, e := range live {
			if !gone[e.File.FileName] {
				after = append(after, e)
			}
		}
		after = append(after, adds...)
		changed := slices.Clone(adds)
		for _, d := range deletes {
			c := *d
			c.Kind = meta.KindDelete
			changed = append(changed, &c)
		}
		return st.diffChangelog(ctx, live, after, changed, "APPEND")
	}
}

// diffChangelog writes the changelog from the content of the files before
// to that of after, for the buckets of changed (all buckets when changed is
// nil), and returns the changelog files.
func (st *tableState) diffChangelog(ctx context.Context, before, after, changed []*meta.ManifestEntry, source string) (out []*meta.ManifestEntry, err error) {
	sch, err := st.latestSchema()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, e := range out {
				_ = st.fs().Remove(joinPath(st.dir, e.File.Path))
			}
			out = nil
		}
	}()
	type bucket struct {
		part                   []meta.Datum
		bucket                 int
		before, after, changed []*meta.ManifestEntry
	}
	var order []string
	buckets := map[string]*bucket{}
	get := func(e *meta.ManifestEntry) *bucket {
		k := bucketOf(e)
		b := buckets[k]
		if b == nil {
			b = &bucket{part: e.Partition, bucket: e.Bucket}
			buckets[k] = b
			order = append(order, k)
		}
		return b
	}
	for _, e := range changed {
		b := get(e)
		b.changed = append(b.changed, e)
	}
	all := changed == nil
	for _, e := range before {
		if _, ok := buckets[bucketOf(e)]; ok || all {
			b := get(e)
			b.before = append(b.before, e)
		}
	}
	for _, e := range after {
		if _, ok := buckets[bucketOf(e)]; ok || all {
			b := get(e)
			b.after = append(b.after, e)
		}
	}
	dirs := map[string]bool{}
	for _, k := range order {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		b := buckets[k]
		bf, af := b.before, b.after
		var probe Predicate
		if !all {
			bf, af = overlapping(bf, b.changed), overlapping(af, b.changed)
			if probe, err = st.probeKeys(ctx, sch, b.changed); err != nil {
				return out, err
			}
		}
		// A commit that only adds files: the rows after are the rows
		// before merged with its files, so the bucket is read once.
		var added []*meta.ManifestEntry
		if !all && !slices.ContainsFunc(b.changed, func(e *meta.ManifestEntry) bool { return e.Kind != meta.KindAdd }) {
			added = b.changed
		}
		ents, err := st.diffBucket(ctx, sch, b.part, b.bucket, bf, af, added, probe, source, dirs)
		out = append(out, ents...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// maxProbeKeys bounds the IN list of probeKeys: beyond it, row-group
// statistics would rarely rule anything out.
const maxProbeKeys = 256

// probeKeys returns key IN (the distinct first-key-column values of the
// added files), or nil when there are too many or files are deleted (an
// overwrite changes every key of the deleted files).
func (st *tableState) probeKeys(ctx context.Context, sch *tableSchema, changed []*meta.ManifestEntry) (Predicate, error) {
	var rows int64
	for _, e := range changed {
		if e.Kind != meta.KindAdd {
			return nil, nil
		}
		rows += e.File.RowCount
	}
	if rows > 4*maxProbeKeys {
		return nil, nil
	}
	k := sch.fieldIndex(sch.PrimaryKeys[0])
	s := &Scan{st: st, sch: sch, proj: []int{k}}
	in := In{Column: sch.PrimaryKeys[0]}
	seen := map[string]bool{}
	var enc []byte
	for _, e := range changed {
		df, err := st.openDataFile(e)
		if err != nil {
			return nil, err
		}
		rgs := make([]int, df.numRowGroups())
		for i := range rgs {
			rgs[i] = i
		}
		r, err := newStreamReader(ctx, s, df, rgs, newReadTarget(sch, []int{k}, false))
		if err != nil {
			return nil, err
		}
		for {
			b, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return nil, err
			}
			col := b.Column(0)
			for i := range col.Len() {
				if enc = merge.AppendNormalized(enc[:0], col, i); seen[string(enc)] {
					continue
				}
				seen[string(enc)] = true
				v, err := scalar.GetScalar(col, i)
				if err != nil {
					r.Close()
					return nil, err
				}
				in.Values = append(in.Values, v)
			}
		}
		if err := r.Close(); err != nil {
			return nil, err
		}
	}
	if len(in.Values) > maxProbeKeys {
		return nil, nil
	}
	return in, nil
}

// overlapping returns the files whose key range meets that of a changed
// file (all files when a range is unknown).
func overlapping(files, changed []*meta.ManifestEntry) []*meta.ManifestEntry {
	if len(changed) == 0 {
		return nil
	}
	lo, hi := changed[0].File.MinKey, changed[0].File.MaxKey
	for _, c := range changed[1:] {
		l, ok1 := compareKeys(c.File.MinKey, lo)
		h, ok2 := compareKeys(c.File.MaxKey, hi)
		if !ok1 || !ok2 {
			return files
		}
		if l < 0 {
			lo = c.File.MinKey
		}
		if h > 0 {
			hi = c.File.MaxKey
		}
	}
	var out []*meta.ManifestEntry
	for _, f := range files {
		a, ok1 := compareKeys(f.File.MaxKey, lo)
		b, ok2 := compareKeys(f.File.MinKey, hi)
		if !ok1 || !ok2 {
			return files
		}
		if a >= 0 && b <= 0 {
			out = append(out, f)
		}
	}
	return out
}

// diffBucket writes the changelog of one bucket from the merged content of
// before to that of after; with added (after = before + added) the rows
// after are the rows before merged with the added files. probe (on key
// columns, may be nil) skips row groups without a changed key.
func (st *tableState) diffBucket(ctx context.Context, sch *tableSchema, part []meta.Datum, bucket int, before, after, added []*meta.ManifestEntry, probe Predicate, source string, dirs map[string]bool) ([]*meta.ManifestEntry, error) {
	all := allColumns(sch)
	s := &Scan{st: st, sch: sch, proj: all, filter: probe}
	merged := func(files []*meta.ManifestEntry, extra ...BatchReader) (*mergeReader, error) {
		return newMergeReader(ctx, s, files, sch.isPrimaryKey, true, false, extra...)
	}
	bc, ac := &diffCursor{sch: sch}, &diffCursor{sch: sch}
	defer bc.close()
	defer ac.close()
	if added != nil {
		tee := &teeReader{}
		bc.tee = tee
		if len(before) > 0 {
			r, err := merged(before)
			if err != nil {
				return nil, err
			}
			tee.r = r
		}
		var extra []BatchReader
		if tee.r != nil {
			extra = append(extra, tee)
		}
		r, err := merged(added, extra...)
		if err != nil {
			return nil, err
		}
		ac.r = r
	} else {
		for _, c := range []struct {
			cur   *diffCursor
			files []*meta.ManifestEntry
		}{{bc, before}, {ac, after}} {
			if len(c.files) == 0 {
				continue
			}
			r, err := merged(c.files)
			if err != nil {
				return nil, err
			}
			c.cur.r = r
		}
	}
	w := &changelogBatcher{st: st, sch: sch, cw: st.newChangelogWriter(sch, part, bucket, source, dirs)}
	defer w.release()
	fail := func(err error) ([]*meta.ManifestEntry, error) {
		w.cw.abort()
		return nil, err
	}
	for {
		// The after side first: reading it pulls the rows before.
		for _, c := range []*diffCursor{ac, bc} {
			if err := c.fill(ctx); err != nil {
				return fail(err)
			}
		}
		if bc.b == nil && ac.b == nil {
			break
		}
		// A missing row on one side means no row with a smaller key will
		// come: the after reader pulls the rows before up to its key.
		c := 0
		switch {
		case bc.b == nil:
			c = 1
		case ac.b == nil:
			c = -1
		default:
			c = strings.Compare(bc.keys[bc.i], ac.keys[ac.i])
		}
		switch {
		case c < 0:
			w.add(bc, Delete)
		case c > 0:
			w.add(ac, Insert)
		case !bc.sameRow(ac):
			w.add(bc, UpdateBefore)
			w.add(ac, UpdateAfter)
		}
		if c <= 0 {
			bc.advance()
		}
		if c >= 0 {
			ac.advance()
		}
		if len(w.refs) >= st.s.opts.BatchSize {
			if err := w.flush(ctx); err != nil {
				return fail(err)
			}
		}
	}
	if err := w.flush(ctx); err != nil {
		return fail(err)
	}
	return w.cw.finish()
}

// teeReader passes the merged rows before a commit to the after merge and
// keeps them (retained) for the diff.
type teeReader struct {
	r     BatchReader
	queue []arrow.RecordBatch
}

func (t *teeReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := t.r.Next(ctx)
	if err == nil {
		b.Retain()
		t.queue = append(t.queue, b)
	}
	return b, err
}

func (t *teeReader) Close() error {
	if t.r == nil {
		return nil
	}
	return t.r.Close()
}

// diffCursor walks merged rows (system columns, then every table column)
// with their normalized keys: read from r, or taken from tee as the after
// merge reads them.
type diffCursor struct {
	sch  *tableSchema
	r    BatchReader
	tee  *teeReader
	b    arrow.RecordBatch // retained; nil: no row now
	i    int
	keys []string
	row  []byte // scratch for sameRow
}

// fill loads the next batch when the cursor has no row.
func (c *diffCursor) fill(ctx context.Context) error {
	if c.b != nil {
		return nil
	}
	switch {
	case c.tee != nil:
		if len(c.tee.queue) == 0 {
			return nil
		}
		c.b = c.tee.queue[0]
		c.tee.queue = c.tee.queue[1:]
	case c.r != nil:
		b, err := c.r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		b.Retain()
		c.b = b
	default:
		return nil
	}
	c.i = 0
	n := int(c.b.NumRows())
	var buf []byte
	ends := make([]int, n)
	for i := range ends {
		for _, k := range c.sch.PrimaryKeys {
			buf = merge.AppendNormalized(buf, c.b.Column(2+c.sch.fieldIndex(k)), i)
		}
		ends[i] = len(buf)
	}
	all := string(buf)
	c.keys = make([]string, n)
	start := 0
	for i, e := range ends {
		c.keys[i] = all[start:e]
		start = e
	}
	return nil
}

func (c *diffCursor) advance() {
	if c.i++; c.i >= int(c.b.NumRows()) {
		c.b.Release()
		c.b = nil
	}
}

// sameRow reports whether the current rows of c and o (of one key) hold
// equal values: the same version (sequence number) always does.
func (c *diffCursor) sameRow(o *diffCursor) bool {
	seq := func(x *diffCursor) int64 { return x.b.Column(0).(*array.Int64).Value(x.i) }
	if seq(c) == seq(o) {
		return true
	}
	for col := 2; col < int(c.b.NumCols()); col++ {
		c.row = merge.AppendNormalized(c.row[:0], c.b.Column(col), c.i)
		o.row = merge.AppendNormalized(o.row[:0], o.b.Column(col), o.i)
		if string(c.row) != string(o.row) {
			return false
		}
	}
	return true
}

func (c *diffCursor) close() {
	if c.b != nil {
		c.b.Release()
		c.b = nil
	}
	if c.tee != nil {
		for _, b := range c.tee.queue {
			b.Release()
		}
		c.tee.queue = nil
	}
	if c.r != nil {
		c.r.Close()
	}
}

// changelogBatcher gathers changelog rows referenced in the cursors'
// batches (retained while referenced) and writes them.
type changelogBatcher struct {
	st    *tableState
	sch   *tableSchema
	cw    *dataWriter
	srcs  []arrow.RecordBatch
	refs  []merge.Ref
	kinds []int8
}

func (w *changelogBatcher) add(c *diffCursor, kind RowKind) {
	src := -1
	for j, b := range w.srcs {
		if b == c.b {
			src = j
		}
	}
	if src < 0 {
		c.b.Retain()
		w.srcs = append(w.srcs, c.b)
		src = len(w.srcs) - 1
	}
	w.refs = append(w.refs, merge.Ref{Src: int32(src), Row: int32(c.i)})
	w.kinds = append(w.kinds, int8(kind))
}

// flush writes the gathered rows.
func (w *changelogBatcher) flush(ctx context.Context) error {
	if len(w.refs) > 0 {
		mem := w.st.s.opts.Mem
		fsch := fileSchema(w.sch)
		cols := make([]arrow.Array, fsch.NumFields())
		arrs := make([]arrow.Array, len(w.srcs))
		for c := range cols {
			if c == 1 {
				cols[c] = int8Array(mem, w.kinds)
				continue
			}
			for j, b := range w.srcs {
				arrs[j] = b.Column(c)
			}
			cols[c] = merge.Gather(mem, fsch.Field(c).Type, arrs, w.refs)
		}
		rec := array.NewRecordBatch(fsch, cols, int64(len(w.refs)))
		for _, c := range cols {
			c.Release()
		}
		err := w.cw.write(ctx, rec)
		rec.Release()
		if err != nil {
			return err
		}
		w.refs, w.kinds = w.refs[:0], w.kinds[:0]
	}
	w.release()
	return nil
}

func (w *changelogBatcher) release() {
	for _, b := range w.srcs {
		b.Release()
	}
	w.srcs = nil
}

// fullCompactionChangelog publishes a COMPACT snapshot whose changelog is
// the diff between the content at the previous such snapshot (or empty)
// and now, unless no data was committed since.
func (st *tableState) fullCompactionChangelog(ctx context.Context) error {
	if _, commits, err := st.lastFullChangelog(); err != nil || commits == 0 {
		return err
	}
	req := &commitRequest{kind: meta.CommitCompact}
	req.produce = func(ctx context.Context, latest *meta.Snapshot, live, _, _ []*meta.ManifestEntry) ([]*meta.ManifestEntry, error) {
		// Another process may have published one since: diff from the
		// newest.
		prev, _, err := st.lastFullChangelog()
		if err != nil {
			return nil, err
		}
		var before []*meta.ManifestEntry
		if prev > 0 {
			sn, err := st.readSnapshot(prev)
			if err != nil {
				return nil, err
			}
			if before, err = st.liveFiles(sn); err != nil {
				return nil, err
			}
		}
		return st.diffChangelog(ctx, before, live, nil, "COMPACT")
	}
	_, err := st.commit(ctx, req)
	return err
}

// lastFullChangelog returns the newest snapshot that published a
// full-compaction changelog (0: none) and the number of data commits
// since.
func (st *tableState) lastFullChangelog() (id int64, commits int, err error) {
	return st.fullChangelogAtOrBefore(math.MaxInt64)
}

// fullChangelogAtOrBefore returns the newest snapshot up to upTo that
// published a full-compaction changelog (0: none) and the number of data
// commits after it up to upTo. A change stream of a full-compaction table
// must start from such a snapshot's content (or the empty table when there
// is none): the next changelog is the diff from it.
func (st *tableState) fullChangelogAtOrBefore(upTo int64) (id int64, commits int, err error) {
	ids, err := st.listSnapshots()
	if err != nil {
		return 0, 0, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if ids[i] > upTo {
			continue
		}
		sn, err := st.readSnapshot(ids[i])
		if errors.Is(err, ErrSnapshotNotFound) {
			break // expired meanwhile
		}
		if err != nil {
			return 0, 0, err
		}
		if sn.CommitKind == meta.CommitCompact {
			if sn.ChangelogManifestList != "" {
				return sn.ID, commits, nil
			}
			continue
		}
		commits++
	}
	return 0, commits, nil
}

// ChangelogComplete reports whether the table's changes can be streamed
// completely from its snapshots, or why not (the message a streaming reader
// should report). Key tables with changelog-producer lookup or
// full-compaction are complete with before-images (-U/+U, -D). With
// changelog-producer none or input, merge-engine deduplicate is complete
// as upserts without before-images: the delta data files (or input rows)
// carry every upsert and -D; rows an INSERT OVERWRITE replaces are not in
// them. Append tables are complete as inserts; their OVERWRITE snapshots
// replace data and carry no changelog.
func (t *Table) ChangelogComplete() (bool, string) {
	sch := t.schema
	o := sch.opts
	if !sch.hasPK() || o.producer == producerLookup || o.producer == producerFullCompaction {
		return true, ""
	}
	if o.merge.Engine == merge.Deduplicate {
		if len(o.sequenceField) > 0 {
			// A late row with an older sequence.field value loses the merge
			// but would still go out as an upsert.
			return false, fmt.Sprintf("table %s orders versions by sequence.field with changelog-producer %s: a late, older row would stream as an upsert although the merge discards it; set changelog-producer to lookup", t.st.id, o.producer)
		}
		return true, ""
	}
	what := map[string]string{
		merge.PartialUpdate: "its changes are partial rows",
		merge.Aggregation:   "its changes are inputs to aggregates, not the aggregated rows",
		merge.FirstRow:      "its level-0 files hold later versions of keys that the merge discards",
	}[o.merge.Engine]
	fix := "lookup or full-compaction"
	if o.merge.Engine == merge.FirstRow {
		fix = "lookup"
	}
	return false, fmt.Sprintf("table %s has merge-engine %s with changelog-producer %s: %s; set changelog-producer to %s", t.st.id, o.merge.Engine, o.producer, what, fix)
}

// changelogFiles returns the changelog files a snapshot publishes and the
// names of its changelog manifest list and manifests.
func (st *tableState) changelogFiles(sn *meta.Snapshot) ([]*meta.ManifestEntry, []string, error) {
	return st.listEntries(sn.ChangelogManifestList)
}

// listEntries returns the entries of the manifests of a manifest list, in
// order, and the names of the list and its manifests ("": none).
func (st *tableState) listEntries(list string) ([]*meta.ManifestEntry, []string, error) {
	if list == "" {
		return nil, nil, nil
	}
	ms, err := st.readManifestList(list)
	if err != nil {
		return nil, nil, err
	}
	names := []string{list}
	var files []*meta.ManifestEntry
	for _, m := range ms {
		names = append(names, m.FileName)
		ents, err := st.readManifest(m.FileName)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, ents...)
	}
	return files, names, nil
}
