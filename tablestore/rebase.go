package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/tablestore/merge"
	"github.com/flightd/flightd/tablestore/meta"
)

// maxExactKeys bounds the rows of one bucket whose keys a commit loads to
// compare with a concurrent file; beyond it the key ranges decide, which
// may see a shared key where there is none (a needless failure or rewrite,
// never a missed one).
const maxExactKeys = 1 << 16

func bucketOf(e *meta.ManifestEntry) string {
	return meta.PartitionKey(e.Partition) + "/" + strconv.Itoa(e.Bucket)
}

// rebase fits req onto latest, the snapshot it is about to follow (sch is
// the schema in effect), and earlier, the files of requests published in the same snapshot before it.
// Commits after req.baseID, other than compaction (which never changes
// contents), and those requests are concurrent with it:
//   - a read-modify-write (strict) fails with ErrSerialization when one of
//     them wrote a key it writes (added a row with the key, or removed a
//     file whose key range holds it), or changed the scope it overwrites:
//     first committer wins;
//   - a blind write never fails: where one of them added a key it also
//     writes, with a sequence number not below its own, its files of that
//     bucket are rewritten with sequence numbers above every committed one,
//     so that per key the merge order is the commit order.
func (st *tableState) rebase(ctx context.Context, req *commitRequest, sch *tableSchema, latest *meta.Snapshot, earlier []*meta.ManifestEntry, deltas commitDeltas) error {
	if req.kind == meta.CommitCompact || (len(req.adds) == 0 && req.overwrite == nil) {
		return nil
	}
	if req.strict && (latest == nil && req.baseID > 0 || latest != nil && latest.ID < req.baseID) {
		// The rows were computed from a snapshot the table no longer
		// reaches: it was rolled back, or dropped and created again
		// (perhaps by another process, after this write read it).
		return fmt.Errorf("%w: table %s has no snapshot %d, which this write read (rolled back, or dropped and created again)", ErrSerialization, st.id, req.baseID)
	}
	var next int64 // above every committed sequence number
	var after []int64
	if latest != nil {
		var err error
		if next, err = st.nextSequenceNumber(latest); err != nil {
			return err
		}
		for id := max(req.baseID, req.checked) + 1; id <= latest.ID; id++ {
			after = append(after, id)
		}
	}
	if len(after) == 0 && len(earlier) == 0 {
		return nil
	}
	ours := map[string][]*meta.ManifestEntry{}
	for _, a := range req.adds {
		ours[bucketOf(a)] = append(ours[bucketOf(a)], a)
	}
	keys := map[string]map[string]bool{} // our keys per bucket, loaded when needed
	stale := map[string]bool{}
	check := func(e *meta.ManifestEntry, by string) error {
		if req.strict && req.overwrite != nil && req.overwrite(e) {
			return fmt.Errorf("%w: %s changed the overwritten partitions after snapshot %d, which this write read", ErrSerialization, by, req.baseID)
		}
		b := bucketOf(e)
		mine := ours[b]
		if !sch.hasPK() || len(mine) == 0 || stale[b] {
			return nil
		}
		if !req.strict && (e.Kind != meta.KindAdd || e.File.MaxSeq < minSeqOf(mine)) {
			return nil
		}
		meet, err := st.keysMeet(ctx, sch, e, mine, keys, b)
		if err != nil || !meet {
			return err
		}
		if req.strict {
			return fmt.Errorf("%w: %s wrote a key (bucket %d of partition %s) that this write also writes, after snapshot %d, which it read",
				ErrSerialization, by, e.Bucket, meta.PartitionKey(e.Partition), req.baseID)
		}
		stale[b] = true
		return nil
	}
	for _, id := range after {
		ents, err := deltas.get(st, id)
		if err != nil {
			return err
		}
		by := fmt.Sprintf("snapshot %d", id)
		for _, e := range ents {
			if err := check(e, by); err != nil {
				return err
			}
		}
	}
	for _, e := range earlier {
		if err := check(e, "a write published in the same snapshot"); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		if err := st.resequence(ctx, sch, req, stale, next); err != nil {
			return err
		}
	}
	if latest != nil {
		req.checked = latest.ID
	}
	return nil
}

// commitDeltas caches the entries of the concurrent commits one attempt
// checks, read once for all the requests of a group (nil for compaction,
// which rebase skips).
type commitDeltas map[int64][]*meta.ManifestEntry

func (c commitDeltas) get(st *tableState, id int64) ([]*meta.ManifestEntry, error) {
	if ents, ok := c[id]; ok {
		return ents, nil
	}
	sn, err := st.readSnapshot(id)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot check concurrent commit %d: %v", ErrConflict, id, err)
	}
	// Another process's expiry may remove the snapshot's files while
	// they are read: the same conflict as the snapshot gone, not a corrupt
	// table.
	gone := func(err error) error {
		if errors.Is(err, errMissing) || errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: cannot check concurrent commit %d: %v", ErrConflict, id, err)
		}
		return err
	}
	var ents []*meta.ManifestEntry
	if sn.CommitKind != meta.CommitCompact {
		l, err := st.readManifestList(sn.DeltaManifestList)
		if err != nil {
			return nil, gone(err)
		}
		for _, m := range l {
			es, err := st.readManifest(m.FileName)
			if err != nil {
				return nil, gone(err)
			}
			ents = append(ents, es...)
		}
	}
	c[id] = ents
	return ents, nil
}

func minSeqOf(files []*meta.ManifestEntry) int64 {
	m := files[0].File.MinSeq
	for _, f := range files[1:] {
		m = min(m, f.File.MinSeq)
	}
	return m
}

// keysMeet reports whether the concurrent file e may hold a key of mine
// (our files of its bucket): key ranges first, then the keys themselves
// (for added files; a removed file counts by its range). keys caches our
// key sets by bucket.
func (st *tableState) keysMeet(ctx context.Context, sch *tableSchema, e *meta.ManifestEntry, mine []*meta.ManifestEntry, keys map[string]map[string]bool, bucket string) (bool, error) {
	var rows int64
	inRange := false
	for _, m := range mine {
		rows += m.File.RowCount
		a, ok1 := compareKeys(e.File.MaxKey, m.File.MinKey)
		b, ok2 := compareKeys(e.File.MinKey, m.File.MaxKey)
		if !ok1 || !ok2 || (a >= 0 && b <= 0) {
			inRange = true
		}
	}
	if !inRange {
		return false, nil
	}
	if e.Kind != meta.KindAdd || rows > maxExactKeys {
		return true, nil
	}
	set := keys[bucket]
	if set == nil {
		set = map[string]bool{}
		for _, m := range mine {
			if err := st.fileKeys(ctx, sch, m, func(k []byte) bool { set[string(k)] = true; return true }); err != nil {
				return false, err
			}
		}
		keys[bucket] = set
	}
	meet := false
	err := st.fileKeys(ctx, sch, e, func(k []byte) bool {
		meet = set[string(k)]
		return !meet
	})
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil // expired since: its keys are unknown
	}
	return meet, err
}

// fileKeys calls fn with the normalized primary key of every row of a
// data file, retractions included, until fn returns false.
func (st *tableState) fileKeys(ctx context.Context, sch *tableSchema, e *meta.ManifestEntry, fn func(key []byte) bool) error {
	pk := make([]int, len(sch.PrimaryKeys))
	for i, k := range sch.PrimaryKeys {
		pk[i] = sch.fieldIndex(k)
	}
	df, err := st.openDataFile(e)
	if err != nil {
		return err
	}
	rgs := make([]int, df.numRowGroups())
	for i := range rgs {
		rgs[i] = i
	}
	s := &Scan{st: st, sch: sch, proj: pk, noCache: true}
	r, err := newStreamReader(ctx, s, df, rgs, newReadTarget(sch, pk, false))
	if err != nil {
		return err
	}
	defer r.Close()
	var enc []byte
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range int(b.NumRows()) {
			enc = enc[:0]
			for c := range pk {
				enc = merge.AppendNormalized(enc, b.Column(c), i)
			}
			if !fn(enc) {
				return nil
			}
		}
	}
}

// resequence rewrites req's files in the stale buckets with sequence
// numbers above next (every committed one) and above those handed out,
// keeping their order, and removes the old files (not yet published).
func (st *tableState) resequence(ctx context.Context, sch *tableSchema, req *commitRequest, stale map[string]bool, next int64) error {
	lo, hi := int64(-1), int64(-1)
	for _, a := range req.adds {
		if stale[bucketOf(a)] {
			if lo < 0 || a.File.MinSeq < lo {
				lo = a.File.MinSeq
			}
			hi = max(hi, a.File.MaxSeq)
		}
	}
	st.raiseSeq(next)
	delta := st.allocSeq(hi-lo+1) - lo
	dirs := map[string]bool{}
	var fresh []*meta.ManifestEntry
	for i, a := range req.adds {
		if !stale[bucketOf(a)] {
			continue
		}
		e, err := st.shiftSeq(ctx, sch, a, delta, dirs)
		if err != nil {
			return err
		}
		_ = st.fs().Remove(joinPath(st.dir, a.File.Path))
		req.adds[i] = e
		fresh = append(fresh, e)
	}
	req.nextSeq = max(req.nextSeq, hi+delta+1)
	return st.syncFileDirs(fresh)
}

// shiftSeq copies a data file with delta added to every sequence number.
func (st *tableState) shiftSeq(ctx context.Context, sch *tableSchema, a *meta.ManifestEntry, delta int64, dirs map[string]bool) (*meta.ManifestEntry, error) {
	all := allColumns(sch)
	r := &chainReader{s: &Scan{st: st, sch: sch, proj: all, noCache: true}, files: []*meta.ManifestEntry{a},
		allowed: anyColumn, rt: newReadTarget(sch, all, true), raw: true}
	defer r.Close()
	dw := st.newDataWriter(sch, a.Partition, a.Bucket, a.File.Level, a.File.FileSource, 0, dirs)
	mem := st.s.opts.Mem
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			old := b.Column(0).(*array.Int64).Int64Values()
			seqs := make([]int64, len(old))
			for i, s := range old {
				seqs[i] = s + delta
			}
			sa := int64Array(mem, seqs)
			cols := append([]arrow.Array{sa}, b.Columns()[1:]...)
			out := array.NewRecordBatch(b.Schema(), cols, b.NumRows())
			sa.Release()
			err = dw.write(ctx, out)
			out.Release()
		}
		if err != nil {
			dw.abort()
			return nil, err
		}
	}
	ents, err := dw.finish()
	if err != nil {
		return nil, err
	}
	if len(ents) != 1 {
		dw.abort()
		return nil, fmt.Errorf("resequence %s: %d files written, want 1", a.File.Path, len(ents))
	}
	return ents[0], nil
}
