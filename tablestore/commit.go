package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
)

// errCommitAmbiguous: publication failed in a way that leaves unknown
// whether the snapshot exists; the caller must not delete its files.
var errCommitAmbiguous = errors.New("commit outcome unknown")

type commitRequest struct {
	kind    string
	adds    []*manifestEntry
	deletes []*manifestEntry // compaction inputs; must still be live
	// overwrite selects live files the commit replaces (INSERT OVERWRITE).
	overwrite func(*manifestEntry) bool
	baseID    int64
	// minSeq is the smallest sequence number of the added key-table rows
	// (-1: none); a file added to one of the same buckets after baseID with
	// a sequence number >= minSeq is a conflicting concurrent write.
	minSeq int64
	// strict: any non-compaction commit after baseID that added files to
	// one of our buckets conflicts (read-modify-write).
	strict  bool
	nextSeq int64
	dirs    []string // directories of new files, to sync
	// changelog are changelog files written before the commit (input
	// producer); produce writes more against the snapshot the commit lands
	// on and the files it deletes (lookup, full-compaction), again on every
	// attempt.
	changelog []*manifestEntry
	produce   func(ctx context.Context, latest *snapshot, live, deletes []*manifestEntry) ([]*manifestEntry, error)
	// schema is the version the rows were written with (nil: compaction);
	// a table replaced since then refuses them.
	schema *tableSchema
	// replace publishes a staged table (Store.StageTable): this snapshot
	// carries its schema version and replaces all data; create: only if no
	// table is in effect.
	replace *tableSchema
	create  bool
}

// maxManifests bounds a base manifest list before it is rewritten as one
// manifest (Paimon's manifest.merge-min-count).
const maxManifests = 30

// commit publishes req as the next snapshot: manifests first, then
// snapshot-N by put-if-absent. A lost race is retried against the new
// latest snapshot unless it conflicts.
func (st *tableState) commit(ctx context.Context, req *commitRequest) (int64, error) {
	st.commitMu.Lock()
	defer st.commitMu.Unlock()
	// Directory entries of the new data files must be durable before a
	// snapshot can reference them.
	synced := map[string]bool{}
	for _, d := range req.dirs {
		for ; len(d) >= len(st.dir) && !synced[d]; d = path.Dir(d) {
			if err := st.fs().SyncDir(d); err != nil {
				return 0, st.droppedOr(fmt.Errorf("sync %s: %w", d, err))
			}
			synced[d] = true
		}
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		id, retry, err := st.tryCommit(ctx, req)
		if err == nil {
			st.notifyPublished()
			return id, nil
		}
		if !retry || attempt >= 20 {
			return 0, st.droppedOr(err)
		}
	}
}

func (st *tableState) tryCommit(ctx context.Context, req *commitRequest) (id int64, retry bool, err error) {
	sch, err := st.latestSchema()
	switch {
	case req.replace != nil && err == nil && req.create:
		return 0, false, fmt.Errorf("create table %s: %w", st.id, ErrTableExists)
	case req.replace != nil && err == nil && sch.ID > req.replace.ID:
		return 0, false, fmt.Errorf("%w: table %s was replaced or altered while being replaced", ErrConflict, st.id)
	case req.replace != nil && errors.Is(err, ErrTableNotFound):
	case err != nil:
		return 0, false, err
	case req.schema != nil && req.schema.ID < sch.Origin:
		return 0, false, fmt.Errorf("%w: table %s was replaced after the write began", ErrConflict, st.id)
	}
	if req.replace != nil {
		sch = req.replace
	}
	latestID, err := st.latestSnapshotID()
	if err != nil {
		return 0, false, err
	}
	var latest *snapshot
	var live []*manifestEntry
	if latestID > 0 {
		if latest, err = st.readSnapshot(latestID); err != nil {
			return 0, false, err
		}
		if live, err = st.liveFiles(latest); err != nil {
			return 0, false, err
		}
	}
	liveByName := make(map[string]*manifestEntry, len(live))
	for _, e := range live {
		liveByName[e.File.FileName] = e
	}
	deletes := req.deletes
	for _, d := range deletes {
		if _, ok := liveByName[d.File.FileName]; !ok {
			return 0, false, fmt.Errorf("%w: file %s was removed by a concurrent commit", ErrConflict, d.File.Path)
		}
	}
	if req.overwrite != nil {
		deletes = nil
		for _, e := range live {
			if req.overwrite(e) {
				deletes = append(deletes, e)
			}
		}
	}
	// A replace supersedes whatever committed meanwhile.
	if req.replace == nil {
		if err := st.checkConflicts(req, latestID); err != nil {
			return 0, false, err
		}
	}

	changelog := req.changelog
	var produced []*manifestEntry
	if req.produce != nil {
		if produced, err = req.produce(ctx, latest, live, deletes); err != nil {
			return 0, false, fmt.Errorf("changelog: %w", err)
		}
		changelog = append(slices.Clip(changelog), produced...)
	}

	// Manifests: the delta of this commit; the base is the previous base
	// plus the previous delta, rewritten as one manifest when it grows long.
	prefix := newUUID()
	var written []string
	cleanup := func() {
		for _, n := range written {
			_ = st.fs().Remove(st.manifestPath(n))
		}
		for _, e := range produced {
			_ = st.fs().Remove(joinPath(st.dir, e.File.Path))
		}
	}
	writeManifest := func(ents []*manifestEntry) (manifestMeta, error) {
		name := "manifest-" + prefix + "-" + strconv.Itoa(len(written))
		size, err := writeMeta(st.fs(), st.manifestPath(name), ents)
		if err != nil {
			return manifestMeta{}, err
		}
		written = append(written, name)
		m := manifestMeta{FileName: name, FileSize: size, SchemaID: sch.ID}
		for _, e := range ents {
			if e.Kind == kindAdd {
				m.NumAddedFiles++
			} else {
				m.NumDeletedFile++
			}
		}
		return m, nil
	}
	writeList := func(l []manifestMeta) (string, error) {
		name := "manifest-list-" + prefix + "-" + strconv.Itoa(len(written))
		if _, err := writeMeta(st.fs(), st.manifestPath(name), l); err != nil {
			return "", err
		}
		written = append(written, name)
		return name, nil
	}
	var delta []*manifestEntry
	var rows, delRows int64
	for _, d := range deletes {
		c := *d
		c.Kind = kindDelete
		delta = append(delta, &c)
		delRows += d.File.RowCount
	}
	for _, a := range req.adds {
		delta = append(delta, a)
		rows += a.File.RowCount
	}
	var base []manifestMeta
	if latest != nil {
		b, err := st.readManifestList(latest.BaseManifestList)
		if err != nil {
			return 0, false, err
		}
		d, err := st.readManifestList(latest.DeltaManifestList)
		if err != nil {
			return 0, false, err
		}
		base = append(b, d...)
	}
	if len(base) > maxManifests {
		full := make([]*manifestEntry, len(live))
		copy(full, live)
		m, err := writeManifest(full)
		if err != nil {
			cleanup()
			return 0, false, err
		}
		base = []manifestMeta{m}
	}
	dm, err := writeManifest(delta)
	if err != nil {
		cleanup()
		return 0, false, err
	}
	baseName, err := writeList(base)
	if err != nil {
		cleanup()
		return 0, false, err
	}
	deltaName, err := writeList([]manifestMeta{dm})
	if err != nil {
		cleanup()
		return 0, false, err
	}
	var changelogName string
	if len(changelog) > 0 {
		if err := st.syncFileDirs(produced); err != nil {
			cleanup()
			return 0, false, err
		}
		cm, err := writeManifest(changelog)
		if err == nil {
			changelogName, err = writeList([]manifestMeta{cm})
		}
		if err != nil {
			cleanup()
			return 0, false, err
		}
	}
	if err := st.fs().SyncDir(joinPath(st.dir, "manifest")); err != nil {
		cleanup()
		return 0, false, err
	}
	sn := &snapshot{
		Version: 3, ID: latestID + 1, SchemaID: sch.ID,
		BaseManifestList: baseName, DeltaManifestList: deltaName, ChangelogManifestList: changelogName,
		CommitUser: st.s.opts.CommitUser, CommitIdentifier: st.s.nextCommitID(),
		CommitKind: req.kind, TimeMillis: st.s.opts.Now().UnixMilli(),
		DeltaRecordCount: rows, NextSequenceNumber: req.nextSeq,
	}
	if latest != nil {
		sn.TotalRecordCount = latest.TotalRecordCount
		sn.NextSequenceNumber = max(sn.NextSequenceNumber, latest.NextSequenceNumber)
		if sn.TimeMillis < latest.TimeMillis {
			sn.TimeMillis = latest.TimeMillis // keep times monotonic for time travel
		}
	}
	sn.TotalRecordCount += rows - delRows
	tmp := joinPath(st.dir, "snapshot", ".tmp-"+prefix)
	if _, err := writeMeta(st.fs(), tmp, sn); err != nil {
		_ = st.fs().Remove(tmp)
		cleanup()
		return 0, false, err
	}
	final := st.snapshotPath(sn.ID)
	if err := st.fs().RenameNoReplace(tmp, final); err != nil {
		_ = st.fs().Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			cleanup()
			return 0, true, err // lost the race: retry on the new latest
		}
		switch ours, verr := st.isOurSnapshot(sn); {
		case verr != nil:
			return 0, false, fmt.Errorf("%w: publish %s: %v (verify: %v)", errCommitAmbiguous, final, err, verr)
		case !ours:
			cleanup()
			return 0, false, fmt.Errorf("publish %s: %w", final, err)
		}
	}
	if err := st.fs().SyncDir(joinPath(st.dir, "snapshot")); err != nil {
		return 0, false, fmt.Errorf("%w: sync snapshot directory: %v", errCommitAmbiguous, err)
	}
	// Read back: a publication the file system acknowledged but lost must
	// not be acknowledged to the caller.
	if ours, err := st.isOurSnapshot(sn); err != nil || !ours {
		if err == nil {
			cleanup()
			return 0, false, fmt.Errorf("publish %s: snapshot missing after rename", final)
		}
		return 0, false, fmt.Errorf("%w: verify %s: %v", errCommitAmbiguous, final, err)
	}
	st.writeHint("LATEST", sn.ID)
	newLive := make([]*manifestEntry, 0, len(live)+len(req.adds))
	gone := map[string]bool{}
	for _, d := range deletes {
		gone[d.File.FileName] = true
	}
	for _, e := range live {
		if !gone[e.File.FileName] {
			newLive = append(newLive, e)
		}
	}
	newLive = append(newLive, req.adds...)
	st.cacheLive(sn.ID, newLive)
	return sn.ID, false, nil
}

// syncFileDirs makes the directory entries of files durable.
func (st *tableState) syncFileDirs(files []*manifestEntry) error {
	done := map[string]bool{}
	for _, e := range files {
		d := path.Dir(joinPath(st.dir, e.File.Path))
		if done[d] {
			continue
		}
		if err := st.fs().SyncDir(d); err != nil {
			return fmt.Errorf("sync %s: %w", d, err)
		}
		done[d] = true
	}
	return nil
}

// isOurSnapshot reports whether the published snapshot-N is sn.
func (st *tableState) isOurSnapshot(sn *snapshot) (bool, error) {
	got, err := st.readSnapshot(sn.ID)
	if errors.Is(err, ErrSnapshotNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return got.CommitUser == sn.CommitUser && got.CommitIdentifier == sn.CommitIdentifier, nil
}

// checkConflicts fails when a commit after baseID (other than compaction,
// which never changes contents) added files that make ours wrong: in an
// overwritten scope (we would delete rows we never saw); in one of our
// buckets when strict; or, for key tables, in one of our buckets with
// sequence numbers not below ours (merging by sequence number could then
// let our rows lose although we commit later).
func (st *tableState) checkConflicts(req *commitRequest, latestID int64) error {
	if latestID <= req.baseID || (len(req.adds) == 0 && req.overwrite == nil) || req.kind == commitCompact {
		return nil
	}
	ours := map[string]bool{}
	for _, a := range req.adds {
		ours[partitionKey(a.Partition)+"/"+strconv.Itoa(a.Bucket)] = true
	}
	for id := req.baseID + 1; id <= latestID; id++ {
		sn, err := st.readSnapshot(id)
		if err != nil {
			return fmt.Errorf("%w: cannot check concurrent commit %d: %v", ErrConflict, id, err)
		}
		if sn.CommitKind == commitCompact {
			continue
		}
		l, err := st.readManifestList(sn.DeltaManifestList)
		if err != nil {
			return err
		}
		for _, m := range l {
			ents, err := st.readManifest(m.FileName)
			if err != nil {
				return err
			}
			for _, e := range ents {
				if e.Kind != kindAdd {
					continue
				}
				if req.overwrite != nil && req.overwrite(e) {
					return fmt.Errorf("%w: snapshot %d added data to the overwritten partitions concurrently", ErrConflict, id)
				}
				if !ours[partitionKey(e.Partition)+"/"+strconv.Itoa(e.Bucket)] {
					continue
				}
				if req.strict || (req.minSeq >= 0 && e.File.MaxSeq >= req.minSeq) {
					return fmt.Errorf("%w: snapshot %d wrote bucket %d of partition %s concurrently", ErrConflict, id, e.Bucket, partitionKey(e.Partition))
				}
			}
		}
	}
	return nil
}

// writeHint updates a LATEST/EARLIEST hint; hints may be stale, so
// failures are ignored.
func (st *tableState) writeHint(name string, id int64) {
	dir := joinPath(st.dir, "snapshot")
	tmp := joinPath(dir, ".tmp-"+name+"-"+newUUID())
	if err := writeFileSync(st.fs(), tmp, []byte(strconv.FormatInt(id, 10))); err != nil {
		_ = st.fs().Remove(tmp)
		return
	}
	if err := st.fs().Rename(tmp, joinPath(dir, name)); err != nil {
		_ = st.fs().Remove(tmp)
	}
}
