package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"

	"github.com/flightd/flightd/tablestore/maintenance"
	"github.com/flightd/flightd/tablestore/merge"
	"github.com/flightd/flightd/tablestore/meta"
)

func (o tableOptions) universal() maintenance.Universal {
	return maintenance.Universal{Trigger: o.compactionTrigger, MaxSizeAmp: o.maxSizeAmp, SizeRatio: o.sizeRatio}
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
	// newer one, so no column is lost in the rewrite. Unless it is the
	// snapshot's own table's: a replace published since, whose files the
	// snapshot does not hold.
	sch, err := st.schema(sn.SchemaID)
	if err != nil {
		return err
	}
	latest, err := st.latestSchema()
	if err != nil {
		return err
	}
	if latest.Origin == sch.Origin && latest.ID > sch.ID {
		sch = latest
	}
	files, err := st.liveFiles(sn)
	if err != nil {
		return err
	}
	groups := map[string][]*meta.ManifestEntry{}
	var keys []string
	for _, f := range files {
		k := bucketOf(f)
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
		var u *maintenance.Unit[*meta.ManifestEntry]
		switch {
		case !sch.hasPK():
			u = maintenance.PickAppend(g, sch.opts.targetFileSize, sch.opts.minFileNum, full)
		case full:
			if len(g) > 1 || g[0].File.DeleteRowCount > 0 || g[0].File.Level != sch.opts.compactionTrigger || g[0].File.SchemaID != sch.ID {
				u = &maintenance.Unit[*meta.ManifestEntry]{Files: g, OutputLevel: sch.opts.compactionTrigger, DropDeletes: true}
			}
		case sch.opts.merge.Engine == merge.FirstRow:
			u = maintenance.PickFirstRow(sch.opts.universal(), maintenance.SortedRuns(g))
		default:
			u = maintenance.PickUniversal(sch.opts.universal(), maintenance.SortedRuns(g))
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

// compactUnit rewrites the files of u and commits the result. Inputs are
// streamed (k-way merged for key tables), so memory stays bounded by the
// number of input files, and outputs roll at the target file size.
func (st *tableState) compactUnit(ctx context.Context, sch *tableSchema, baseID int64, u *maintenance.Unit[*meta.ManifestEntry]) error {
	for _, e := range u.Files {
		if _, err := st.fs().Stat(joinPath(st.dir, e.File.Path)); errors.Is(err, fs.ErrNotExist) {
			// Removed by a later overwrite and expiry: our commit would
			// conflict anyway.
			return fmt.Errorf("%w: compaction input %s is gone", ErrConflict, e.File.Path)
		}
	}
	dirs := map[string]bool{}
	if !sch.hasPK() {
		adds, ok, err := st.copyRowGroups(ctx, sch, u.Files, u.OutputLevel, dirs)
		if err != nil {
			return err
		}
		if ok {
			return st.commitCompaction(ctx, baseID, u, adds, dirs)
		}
	}
	adds, err := st.rewrite(ctx, sch, u.Files, u.OutputLevel, u.DropDeletes, "COMPACT", dirs)
	if err != nil {
		return err
	}
	return st.commitCompaction(ctx, baseID, u, adds, dirs)
}

// rewrite merges files (one partition's bucket) into new files of level:
// k-way merged by key for key tables, keeping deletes unless dropDeletes,
// concatenated for append tables. Outputs roll at the target file size;
// on error nothing written is left.
func (st *tableState) rewrite(ctx context.Context, sch *tableSchema, files []*meta.ManifestEntry, level int, dropDeletes bool, source string, dirs map[string]bool) ([]*meta.ManifestEntry, error) {
	// It reads like an unfiltered scan of every column, but uncached: it
	// reads each file once, right before it is replaced, so its columns
	// would only push hot data out of the cache.
	s := &Scan{st: st, sch: sch, proj: allColumns(sch), noCache: true}
	var r BatchReader
	if sch.hasPK() {
		mr, err := newMergeReader(ctx, s, files, anyColumn, true, !dropDeletes)
		if err != nil {
			return nil, err
		}
		r = mr
	} else {
		r = &chainReader{s: s, files: files, allowed: anyColumn, rt: newReadTarget(sch, s.proj, false), raw: true}
	}
	defer r.Close()
	first := files[0]
	dw := st.newDataWriter(sch, first.Partition, first.Bucket, level, source, sch.opts.targetFileSize, dirs)
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
			return nil, err
		}
	}
	return dw.finish()
}

// commitCompaction commits the files written for u in place of its
// inputs, or removes them.
func (st *tableState) commitCompaction(ctx context.Context, baseID int64, u *maintenance.Unit[*meta.ManifestEntry], adds []*meta.ManifestEntry, dirs map[string]bool) error {
	req := &commitRequest{kind: meta.CommitCompact, adds: adds, deletes: u.Files, baseID: baseID,
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
func (st *tableState) afterCommit(ctx context.Context, touched []*meta.ManifestEntry) {
	sch, err := st.latestSchema()
	if err != nil {
		return
	}
	if sch.opts.writeOnly {
		st.triggerCompaction() // expiry only
		return
	}
	if sch.hasPK() && sch.opts.merge.Engine == merge.FirstRow {
		// Paimon's readers skip level 0 of first-row tables, so the commit
		// moves it out before the writer goes on, as Paimon's writers do
		// (maintenance.PickFirstRow): they see the rows at the
		// compaction's snapshot, right after this one. A failure leaves it
		// to the background pass.
		if err := st.compactAll(ctx, false); err != nil && ctx.Err() == nil {
			st.mu.Lock()
			st.bgErr = err
			st.mu.Unlock()
		}
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
func (st *tableState) mustStall(sch *tableSchema, touched []*meta.ManifestEntry) bool {
	if !sch.hasPK() {
		return false
	}
	st.mu.Lock()
	live := st.live
	st.mu.Unlock()
	for _, t := range touched {
		var g []*meta.ManifestEntry
		for _, f := range live {
			if f.Bucket == t.Bucket && meta.PartitionKey(f.Partition) == meta.PartitionKey(t.Partition) {
				g = append(g, f)
			}
		}
		if len(maintenance.SortedRuns(g)) >= sch.opts.stopTrigger {
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
