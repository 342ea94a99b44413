package tablestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strconv"
)

// sortedRun is one sorted run of a bucket: a level-0 file, or all files of
// one level >= 1.
type sortedRun struct {
	level int
	files []*manifestEntry
	size  int64
}

// bucketRuns orders a bucket's runs newest first: level-0 files by
// descending sequence number, then levels 1, 2, ...
func bucketRuns(files []*manifestEntry) []sortedRun {
	var runs []sortedRun
	levels := map[int]*sortedRun{}
	for _, f := range files {
		if f.File.Level == 0 {
			runs = append(runs, sortedRun{level: 0, files: []*manifestEntry{f}, size: f.File.FileSize})
			continue
		}
		r := levels[f.File.Level]
		if r == nil {
			r = &sortedRun{level: f.File.Level}
			levels[f.File.Level] = r
		}
		r.files = append(r.files, f)
		r.size += f.File.FileSize
	}
	slices.SortFunc(runs, func(a, b sortedRun) int {
		return -cmp.Compare(a.files[0].File.MaxSeq, b.files[0].File.MaxSeq)
	})
	lv := slices.Sorted(func(yield func(int) bool) {
		for l := range levels {
			if !yield(l) {
				return
			}
		}
	})
	for _, l := range lv {
		runs = append(runs, *levels[l])
	}
	return runs
}

type compactUnit struct {
	files       []*manifestEntry
	outputLevel int
	dropDeletes bool
}

// pickUniversal chooses runs to compact like RocksDB's universal compaction
// (Paimon's UniversalCompaction): size amplification, then size ratio, then
// run count. runs are newest first; nil means nothing to do.
func pickUniversal(o tableOptions, runs []sortedRun) *compactUnit {
	maxLevel := o.compactionTrigger // num-levels = trigger + 1
	n := len(runs)
	if n < o.compactionTrigger {
		return nil
	}
	// 1. Size amplification: everything but the oldest run vs the oldest.
	var younger int64
	for _, r := range runs[:n-1] {
		younger += r.size
	}
	if younger*100 > int64(o.maxSizeAmp)*runs[n-1].size {
		return makeUnit(runs, n, maxLevel)
	}
	// 2. Size ratio, then 3. run count.
	if u := pickSizeRatio(o, runs, 1, false, maxLevel); u != nil {
		return u
	}
	if n > o.compactionTrigger {
		return pickSizeRatio(o, runs, n-o.compactionTrigger+1, true, maxLevel)
	}
	return nil
}

func pickSizeRatio(o tableOptions, runs []sortedRun, count int, force bool, maxLevel int) *compactUnit {
	var size int64
	for _, r := range runs[:count] {
		size += r.size
	}
	for ; count < len(runs); count++ {
		if size*int64(100+o.sizeRatio)/100 < runs[count].size {
			break
		}
		size += runs[count].size
	}
	if force || count > 1 {
		return makeUnit(runs, count, maxLevel)
	}
	return nil
}

// makeUnit compacts the newest count runs into the level just above the
// next older run (never level 0), or the last level when all are taken.
func makeUnit(runs []sortedRun, count, maxLevel int) *compactUnit {
	out := maxLevel
	if count < len(runs) {
		out = max(0, runs[count].level-1)
		for out == 0 && count < len(runs) {
			next := runs[count]
			count++
			if next.level != 0 {
				out = next.level
			}
		}
		if count == len(runs) {
			out = maxLevel
		}
	}
	u := &compactUnit{outputLevel: out, dropDeletes: count == len(runs)}
	for _, r := range runs[:count] {
		u.files = append(u.files, r.files...)
	}
	return u
}

// Compact compacts every bucket now: with full, each bucket becomes one
// sorted run without deletes (append tables: small files are merged);
// otherwise it runs the universal picker. It waits for running background
// compaction first.
func (t *Table) Compact(ctx context.Context, full bool) error {
	return t.st.compactAll(ctx, full)
}

// compactAll runs one compaction pass over all buckets.
func (st *tableState) compactAll(ctx context.Context, full bool) error {
	st.compactMu.Lock()
	defer st.compactMu.Unlock()
	sn, err := st.resolveSnapshot(0)
	if err != nil || sn == nil {
		return err
	}
	// The schema after the snapshot: no file of the snapshot can have a
	// newer one, so no column is lost in the rewrite.
	sch, err := st.latestSchema()
	if err != nil {
		return err
	}
	files, err := st.liveFiles(sn)
	if err != nil {
		return err
	}
	groups := map[string][]*manifestEntry{}
	var keys []string
	for _, f := range files {
		k := partitionKey(f.Partition) + "/" + strconv.Itoa(f.Bucket)
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], f)
	}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		g := groups[k]
		var u *compactUnit
		switch {
		case !sch.hasPK():
			u = pickAppend(sch.opts, g, full)
		case full:
			if len(g) > 1 || g[0].File.DeleteRowCount > 0 || g[0].File.Level != sch.opts.compactionTrigger || g[0].File.SchemaID != sch.ID {
				u = &compactUnit{files: g, outputLevel: sch.opts.compactionTrigger, dropDeletes: true}
			}
		default:
			u = pickUniversal(sch.opts, bucketRuns(g))
		}
		if u == nil {
			continue
		}
		if err := st.compactUnit(ctx, sch, sn.ID, u); err != nil && !errors.Is(err, ErrConflict) {
			return err
		}
	}
	if full && sch.hasPK() && sch.opts.producer == producerFullCompaction {
		return st.fullCompactionChangelog(ctx)
	}
	return nil
}

// pickAppend merges the small files of an append-table bucket once there
// are compaction.min.file-num of them (any two with full).
func pickAppend(o tableOptions, files []*manifestEntry, full bool) *compactUnit {
	var small []*manifestEntry
	for _, f := range files {
		if f.File.FileSize < o.targetFileSize/2 {
			small = append(small, f)
		}
	}
	if len(small) < o.minFileNum && !(full && len(small) > 1) {
		return nil
	}
	return &compactUnit{files: small}
}

// compactUnit rewrites the files of u and commits the result. Inputs are
// streamed (k-way merged for key tables), so memory stays bounded by the
// number of input files, and outputs roll at the target file size.
func (st *tableState) compactUnit(ctx context.Context, sch *tableSchema, baseID int64, u *compactUnit) error {
	all := allColumns(sch)
	// Compaction reads like an unfiltered scan of every column, but
	// uncached: it reads each file once, right before it is replaced, so
	// its columns would only push hot data out of the cache.
	s := &Scan{st: st, sch: sch, proj: all, noCache: true}
	for _, e := range u.files {
		if _, err := st.fs().Stat(joinPath(st.dir, e.File.Path)); errors.Is(err, fs.ErrNotExist) {
			// Removed by a later overwrite and expiry: our commit would
			// conflict anyway.
			return fmt.Errorf("%w: compaction input %s is gone", ErrConflict, e.File.Path)
		}
	}
	var r BatchReader
	if sch.hasPK() {
		mr, err := newMergeReader(ctx, s, u.files, anyColumn, true, !u.dropDeletes)
		if err != nil {
			return err
		}
		r = mr
	} else {
		r = &chainReader{s: s, files: u.files, allowed: anyColumn, rt: newReadTarget(sch, all, false), raw: true}
	}
	defer r.Close()
	first := u.files[0]
	dirs := map[string]bool{}
	dw := st.newDataWriter(sch, first.Partition, first.Bucket, u.outputLevel, "COMPACT", sch.opts.targetFileSize, dirs)
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = dw.write(ctx, b)
		}
		if err != nil {
			dw.abort()
			return err
		}
	}
	adds, err := dw.finish()
	if err != nil {
		return err
	}
	req := &commitRequest{kind: commitCompact, adds: adds, deletes: u.files, baseID: baseID,
		dirs: slices.Collect(maps.Keys(dirs))}
	if _, err := st.commit(ctx, req); err != nil {
		if !errors.Is(err, errCommitAmbiguous) {
			for _, a := range adds {
				_ = st.fs().Remove(joinPath(st.dir, a.File.Path))
			}
		}
		return err
	}
	return nil
}

// afterCommit schedules background compaction of the table and stalls the
// writer while one of the buckets it wrote has too many sorted runs.
func (st *tableState) afterCommit(ctx context.Context, touched []*manifestEntry) {
	sch, err := st.latestSchema()
	if err != nil {
		return
	}
	if sch.opts.writeOnly {
		st.triggerCompaction() // expiry only
		return
	}
	for range 3 {
		done := st.triggerCompaction()
		if done == nil || !st.mustStall(sch, touched) {
			return
		}
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

// mustStall reports whether a touched bucket reached the stop trigger.
func (st *tableState) mustStall(sch *tableSchema, touched []*manifestEntry) bool {
	if !sch.hasPK() {
		return false
	}
	st.mu.Lock()
	live := st.live
	st.mu.Unlock()
	for _, t := range touched {
		var g []*manifestEntry
		for _, f := range live {
			if f.Bucket == t.Bucket && partitionKey(f.Partition) == partitionKey(t.Partition) {
				g = append(g, f)
			}
		}
		if len(bucketRuns(g)) >= sch.opts.stopTrigger {
			return true
		}
	}
	return false
}

// maintain is one background pass: compaction (unless write-only), then
// snapshot expiry.
func (st *tableState) maintain(ctx context.Context) error {
	sch, err := st.latestSchema()
	if err != nil {
		return err
	}
	if !sch.opts.writeOnly {
		full := false
		if sch.hasPK() && sch.opts.producer == producerFullCompaction {
			_, commits, err := st.lastFullChangelog()
			if err != nil {
				return err
			}
			full = commits >= sch.opts.fullDeltaCommits
		}
		if err := st.compactAll(ctx, full); err != nil {
			return err
		}
	}
	_, err = st.expire(ctx, ExpireOptions{})
	return err
}

// triggerCompaction starts a background pass, or asks the running one to
// go again; it returns a channel closed when the pass ends (nil once the
// store is closed).
func (st *tableState) triggerCompaction() <-chan struct{} {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	if st.s.closed || st.bgCtx.Err() != nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.bgRunning {
		st.bgPending = true
		return st.bgDone
	}
	st.bgRunning = true
	done := make(chan struct{})
	st.bgDone = done
	st.s.bgWG.Add(1)
	st.bgWG.Add(1)
	go func() {
		defer st.s.bgWG.Done()
		defer st.bgWG.Done()
		for {
			err := st.maintain(st.bgCtx)
			if err != nil && st.bgCtx.Err() == nil {
				st.mu.Lock()
				st.bgErr = err
				st.mu.Unlock()
			}
			st.mu.Lock()
			if !st.bgPending || st.bgCtx.Err() != nil {
				st.bgRunning = false
				close(done)
				st.mu.Unlock()
				return
			}
			st.bgPending = false
			st.mu.Unlock()
		}
	}()
	return done
}
