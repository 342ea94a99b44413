package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/flightd/flightd/tablestore/meta"
)

// errCommitAmbiguous: publication failed in a way that leaves unknown
// whether the snapshot exists; the caller must not delete its files.
var errCommitAmbiguous = errors.New("commit outcome unknown")

type commitRequest struct {
	kind string
	// adds is the Write's list of pending files (or compaction's
	// outputs): rebase replaces resequenced files in place, so that the
	// Write aborts the right ones.
	adds    []*meta.ManifestEntry
	deletes []*meta.ManifestEntry // compaction inputs; must still be live
	// overwrite selects live files the commit replaces (INSERT OVERWRITE).
	overwrite func(*meta.ManifestEntry) bool
	// baseID: commits after it are concurrent with this one. For a
	// read-modify-write it is the snapshot the rows were computed from;
	// otherwise the latest snapshot when the first sequence number was
	// taken (every row committed before has a smaller one).
	baseID int64
	// checked: req was fitted onto this snapshot (rebase); later attempts
	// check only the commits after it.
	checked int64
	// strict: the rows were computed from baseID (read-modify-write), so
	// a concurrent commit that wrote one of their keys (key tables), or
	// changed the overwritten scope, is a serialization failure.
	strict  bool
	nextSeq int64
	dirs    []string // directories of new files, to sync
	// changelog are changelog files written before the commit (input
	// producer); produce writes more against the snapshot the commit lands
	// on, the files it adds and the files it deletes (lookup,
	// full-compaction), again on every attempt.
	changelog []*meta.ManifestEntry
	produce   func(ctx context.Context, latest *meta.Snapshot, live, adds, deletes []*meta.ManifestEntry) ([]*meta.ManifestEntry, error)
	// properties annotate the snapshot; a commit with them is not grouped.
	properties map[string]string
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
//
// Plain appends (no overwrite, no changelog files) are committed in groups:
// a writer queues its request, and whoever holds the table's commit lock
// next publishes every queued request in one snapshot, as if each had
// committed alone in queue order. Publication (a few fsyncs) then costs
// once per group, not once per writer.
func (st *tableState) commit(ctx context.Context, req *commitRequest) (int64, error) {
	if err := st.syncReqDirs(req); err != nil {
		return 0, err
	}
	q := &queuedCommit{req: req}
	groupable := req.kind == meta.CommitAppend && req.properties == nil && req.overwrite == nil && req.replace == nil && req.produce == nil && len(req.changelog) == 0
	if groupable {
		st.mu.Lock()
		st.queue = append(st.queue, q)
		st.mu.Unlock()
	}
	st.commitMu.Lock()
	defer st.commitMu.Unlock()
	if q.done {
		return q.id, q.err // published (or failed) in another writer's group
	}
	group := []*queuedCommit{q}
	if groupable {
		st.mu.Lock()
		group, st.queue = st.queue, nil
		st.mu.Unlock()
		// The group is published for every writer in it: one writer
		// giving up must not fail the others.
		ctx = context.WithoutCancel(ctx)
	}
	st.publish(ctx, group)
	return q.id, q.err
}

// syncReqDirs syncs the directories of req's new files (syncDirs), an
// error because the table was dropped meanwhile being ErrTableNotFound.
func (st *tableState) syncReqDirs(req *commitRequest) error {
	if err := st.syncDirs(req.dirs); errors.Is(err, fs.ErrNotExist) {
		// Its directories went with the table: dropped, maybe created
		// again since (which droppedOr would not see).
		return st.notFound(err)
	} else if err != nil {
		return st.droppedOr(err)
	}
	return nil
}

// syncDirs makes the directory entries of new data files (in dirs and
// their parents up to the table's directory) durable, as they must be
// before a snapshot can reference them.
func (st *tableState) syncDirs(dirs []string) error {
	synced := map[string]bool{}
	var all []string
	for _, d := range dirs {
		for ; len(d) >= len(st.dir) && !synced[d]; d = path.Dir(d) {
			all = append(all, d)
			synced[d] = true
		}
	}
	return syncAll(st.fs(), nil, all...)
}

// errDroppedHere fails a read, write or expiry of a table this process
// dropped under it.
var errDroppedHere = errors.New("dropped by this process while in use")

// errMovedAway fails a read or write of a table whose directory, pinned by
// this process's state of it, is no longer at its path: another process
// dropped the table (and perhaps created it again), or a DROP DATABASE
// moved it, this process's too when it did not lock it (a table not yet
// in effect).
var errMovedAway = errors.New("dropped while in use (its directory was moved away)")

// queuedCommit is a request and, once done, its outcome.
type queuedCommit struct {
	req  *commitRequest
	done bool
	id   int64
	err  error
}

// maxPublishAttempts bounds the lost races of one commit.
const maxPublishAttempts = 100

// publish commits a group of requests (several only if plain appends),
// retrying lost races, and records each one's outcome. commitMu is held.
func (st *tableState) publish(ctx context.Context, group []*queuedCommit) {
	reqs := make([]*commitRequest, len(group))
	for i, q := range group {
		reqs[i] = q.req
	}
	for attempt := 0; ; attempt++ {
		// A caller that gave up never publishes on a retry: a job whose
		// lease was lost cancels its commit, and its rows, computed from
		// older inputs, must not land on top of the new holder's commit
		// that won the race (engine TestJobStaleCommitNeverLands).
		err := ctx.Err()
		if st.dropped.Load() {
			err = st.notFound(errDroppedHere)
		} else if st.movedAway() {
			err = st.notFound(errMovedAway)
		}
		if err != nil {
			for _, q := range group {
				q.done, q.err = true, err
			}
			return
		}
		id, errs, retry, err := st.tryCommit(ctx, reqs)
		if retry && attempt+1 >= maxPublishAttempts {
			err = fmt.Errorf("%w: %d other commits published first: %v", ErrConflict, maxPublishAttempts, err)
		}
		if err == nil || !retry || attempt+1 >= maxPublishAttempts {
			published := false
			if err != nil {
				err = st.gone(err) // once for the group: it stats and lists
			}
			for i, q := range group {
				q.done, q.id, q.err = true, id, err
				if err == nil {
					q.err = errs[i]
					published = published || errs[i] == nil
					if q.err != nil {
						q.err = st.gone(q.err)
					}
				}
				if q.err != nil {
					q.id = 0
				}
			}
			if published {
				st.notifyPublished()
			}
			return
		}
		// Another process published first. Back off a random while (up
		// to 64 ms) so that committers in several processes, which do not
		// share commitMu, stop colliding.
		time.Sleep(rand.N(time.Duration(1<<min(attempt, 6)) * time.Millisecond))
	}
}

// expiredUnder tells whether err, met reading the files of the latest
// snapshot latestID, is the doing of another process's expiry (two more
// commits landed, and it removed latestID's files): the attempt is then
// retried on the new latest, as after a lost race. Without it a blind write
// on one node failed with "corrupt file: manifest-list-... is missing"
// while another node expired snapshots (engine TestWriteHistoryModel).
func (st *tableState) expiredUnder(latestID int64, err error) (bool, error) {
	if !errors.Is(err, errMissing) && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrSnapshotNotFound) {
		return false, err
	}
	if newest, lerr := st.latestSnapshotID(); lerr != nil || newest <= latestID {
		return false, err
	}
	return true, fmt.Errorf("%w: snapshot %d was expired while being committed on: %v", ErrConflict, latestID, err)
}

// tryCommit makes one attempt to publish reqs as one snapshot. Only the
// first request may overwrite, delete or bring changelog files; a request
// that does not fit on the latest snapshot fails alone (errs), and the
// snapshot holds the others. id is 0 when none was published.
func (st *tableState) tryCommit(ctx context.Context, reqs []*commitRequest) (id int64, errs []error, retry bool, err error) {
	req := reqs[0]
	if req.replace != nil {
		unlock, err := st.lockSchemaChange()
		if err != nil {
			return 0, nil, false, err
		}
		defer unlock()
	}
	sch, err := st.latestSchema()
	switch {
	case req.replace != nil && err == nil && req.create:
		return 0, nil, false, fmt.Errorf("create table %s: %w", st.id, ErrTableExists)
	case req.replace != nil && err == nil && sch.ID > req.replace.ID:
		return 0, nil, false, fmt.Errorf("%w: table %s was replaced or altered while being replaced", ErrConflict, st.id)
	case req.replace != nil && errors.Is(err, ErrTableNotFound):
	case err != nil:
		return 0, nil, false, err
	}
	if req.replace != nil {
		sch = req.replace
	}
	latestID, err := st.latestSnapshotID()
	if err != nil {
		return 0, nil, false, err
	}
	var latest *meta.Snapshot
	var live []*meta.ManifestEntry
	if latestID > 0 {
		if latest, err = st.readSnapshot(latestID); err != nil {
			retry, err := st.expiredUnder(latestID, err)
			return 0, nil, retry, err
		}
		if live, err = st.liveFiles(latest); err != nil {
			retry, err := st.expiredUnder(latestID, err)
			return 0, nil, retry, err
		}
	}
	liveByName := make(map[string]*meta.ManifestEntry, len(live))
	for _, e := range live {
		liveByName[e.File.FileName] = e
	}
	deletes := req.deletes
	for _, d := range deletes {
		if _, ok := liveByName[d.File.FileName]; !ok {
			return 0, nil, false, fmt.Errorf("%w: file %s was removed by a concurrent commit", ErrConflict, d.File.Path)
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
	errs = make([]error, len(reqs))
	var adds []*meta.ManifestEntry
	var nextSeq int64
	included := 0
	deltas := commitDeltas{}
	for i, r := range reqs {
		if errs[i] = st.fits(ctx, r, sch, latest, adds, deltas); errs[i] != nil {
			continue
		}
		adds = append(adds, r.adds...)
		nextSeq = max(nextSeq, r.nextSeq)
		included++
	}
	if included == 0 {
		return 0, errs, false, nil
	}

	changelog := req.changelog
	var produced []*meta.ManifestEntry
	if req.produce != nil {
		if produced, err = req.produce(ctx, latest, live, adds, deletes); err != nil {
			return 0, nil, false, fmt.Errorf("changelog: %w", err)
		}
		changelog = append(slices.Clip(changelog), produced...)
	}

	// Manifests: the delta of this commit; the base is the previous base
	// plus the previous delta, rewritten as one manifest when it grows long.
	prefix := newUUID()
	var written []string
	var pending []File // manifests written, synced at once before the snapshot
	cleanup := func() {
		for _, f := range pending {
			_ = f.Close()
		}
		pending = nil
		for _, n := range written {
			_ = st.fs().Remove(st.manifestPath(n))
		}
		for _, e := range produced {
			_ = st.fs().Remove(joinPath(st.dir, e.File.Path))
		}
	}
	writeManifest := func(ents []*meta.ManifestEntry) (meta.ManifestFile, error) {
		name := "manifest-" + prefix + "-" + strconv.Itoa(len(written))
		data, err := st.encodeManifest(ents)
		if err != nil {
			return meta.ManifestFile{}, err
		}
		stats, err := st.partitionStats(sch, ents)
		if err != nil {
			return meta.ManifestFile{}, err
		}
		if err := st.writeManifestFile(name, data, &pending); err != nil {
			return meta.ManifestFile{}, err
		}
		written = append(written, name)
		m := meta.ManifestFile{FileName: name, FileSize: int64(len(data)), SchemaID: sch.ID, PartitionStats: stats}
		for _, e := range ents {
			if e.Kind == meta.KindAdd {
				m.NumAddedFiles++
			} else {
				m.NumDeletedFile++
			}
		}
		return m, nil
	}
	writeList := func(l []meta.ManifestFile) (string, int64, error) {
		name := "manifest-list-" + prefix + "-" + strconv.Itoa(len(written))
		data, err := st.encodeManifestList(l)
		if err != nil {
			return "", 0, err
		}
		if err := st.writeManifestFile(name, data, &pending); err != nil {
			return "", 0, err
		}
		written = append(written, name)
		return name, int64(len(data)), nil
	}
	var delta []*meta.ManifestEntry
	var rows, delRows int64
	for _, d := range deletes {
		c := *d
		c.Kind = meta.KindDelete
		delta = append(delta, &c)
		delRows += d.File.RowCount
	}
	for _, a := range adds {
		delta = append(delta, a)
		rows += a.File.RowCount
	}
	var base []meta.ManifestFile
	if latest != nil {
		b, err := st.readManifestList(latest.BaseManifestList)
		if err != nil {
			retry, err := st.expiredUnder(latestID, err)
			return 0, nil, retry, err
		}
		d, err := st.readManifestList(latest.DeltaManifestList)
		if err != nil {
			retry, err := st.expiredUnder(latestID, err)
			return 0, nil, retry, err
		}
		base = append(b, d...)
	}
	// A base with manifests of flightd's former JSON format is rewritten
	// whole, so that the new snapshot is readable by Paimon's readers.
	if len(base) > maxManifests || slices.ContainsFunc(base, func(m meta.ManifestFile) bool { return m.Legacy }) {
		full := make([]*meta.ManifestEntry, len(live))
		copy(full, live)
		m, err := writeManifest(full)
		if err != nil {
			cleanup()
			return 0, nil, false, err
		}
		base = []meta.ManifestFile{m}
	}
	dm, err := writeManifest(delta)
	if err != nil {
		cleanup()
		return 0, nil, false, err
	}
	baseName, baseSize, err := writeList(base)
	if err != nil {
		cleanup()
		return 0, nil, false, err
	}
	deltaName, deltaSize, err := writeList([]meta.ManifestFile{dm})
	if err != nil {
		cleanup()
		return 0, nil, false, err
	}
	var changelogName string
	var changelogSize, changelogRows int64
	if len(changelog) > 0 {
		if err := st.syncFileDirs(produced); err != nil {
			cleanup()
			return 0, nil, false, err
		}
		cm, err := writeManifest(changelog)
		if err == nil {
			changelogName, changelogSize, err = writeList([]meta.ManifestFile{cm})
		}
		for _, e := range changelog {
			changelogRows += e.File.RowCount
		}
		if err != nil {
			cleanup()
			return 0, nil, false, err
		}
	}
	err = syncAll(st.fs(), pending, joinPath(st.dir, "manifest"))
	pending = nil
	if err != nil {
		cleanup()
		return 0, nil, false, err
	}
	sn := &meta.Snapshot{
		Version: 3, ID: latestID + 1, SchemaID: sch.ID,
		BaseManifestList: baseName, BaseManifestListSize: baseSize,
		DeltaManifestList: deltaName, DeltaManifestListSize: deltaSize,
		ChangelogManifestList: changelogName, ChangelogManifestListSize: changelogSize, ChangelogRecordCount: changelogRows,
		CommitUser: st.s.opts.CommitUser, CommitIdentifier: st.s.nextCommitID(),
		CommitKind: req.kind, TimeMillis: st.s.opts.Now().UnixMilli(),
		DeltaRecordCount: rows, NextSequenceNumber: nextSeq, Properties: req.properties,
	}
	if latest != nil {
		sn.TotalRecordCount, sn.Parent = latest.TotalRecordCount, latest.Checksum
		next, err := st.nextSequenceNumber(latest)
		if err != nil {
			cleanup()
			return 0, nil, false, err
		}
		sn.NextSequenceNumber = max(sn.NextSequenceNumber, next)
		if sn.TimeMillis < latest.TimeMillis {
			sn.TimeMillis = latest.TimeMillis // keep times monotonic for time travel
		}
	}
	sn.TotalRecordCount += rows - delRows
	if sn.Checksum, err = sn.Sum(); err != nil { // kept as the latest: the next one's Parent
		cleanup()
		return 0, nil, false, err
	}
	// Published through the table state's pin, the snapshot goes into the
	// directory the commit read, wherever that is now.
	fsys := st.fs()
	if st.s.beforePublish != nil {
		st.s.beforePublish()
	}
	tmp := joinPath(st.dir, "snapshot", ".tmp-"+prefix)
	if _, err := writePaimonJSON(fsys, tmp, sn); err != nil {
		_ = fsys.Remove(tmp)
		cleanup()
		return 0, nil, false, err
	}
	final := st.snapshotPath(sn.ID)
	// Once published, sn was the newest snapshot from this moment on: one
	// committed before it would have taken its id, unless expiry freed
	// the id again (checked below).
	publishing := time.Now()
	if err := fsys.RenameNoReplace(tmp, final); err != nil {
		_ = fsys.Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			cleanup()
			return 0, nil, true, err // lost the race: retry on the new latest
		}
		switch ours, verr := st.isOurSnapshot(sn); {
		case verr != nil:
			return 0, nil, false, fmt.Errorf("%w: publish %s: %v (verify: %v)", errCommitAmbiguous, final, err, verr)
		case !ours:
			cleanup()
			return 0, nil, false, fmt.Errorf("publish %s: %w", final, err)
		}
	}
	if err := fsys.SyncDir(joinPath(st.dir, "snapshot")); err != nil {
		return 0, nil, false, fmt.Errorf("%w: sync snapshot directory: %v", errCommitAmbiguous, err)
	}
	// Read back: a publication the file system acknowledged but lost must
	// not be acknowledged to the caller.
	if ours, err := st.isOurSnapshot(sn); err != nil || !ours {
		if err == nil {
			cleanup()
			return 0, nil, false, fmt.Errorf("publish %s: snapshot missing after rename", final)
		}
		return 0, nil, false, fmt.Errorf("%w: verify %s: %v", errCommitAmbiguous, final, err)
	}
	// A writer that stalled between reading latest and publishing can
	// find its id free again: committed by another, then expired (tight
	// retention). Published below the newest snapshot, no reader would
	// ever see it: take it back and retry on the new latest
	// (TestStaleCommitAfterExpiry). A newer snapshot alone does not tell:
	// another writer may have committed on this one at once
	// (TestCommitBuiltOnAtOnce; taking it back then removed manifests the
	// newer snapshot named).
	ids, err := st.listSnapshots()
	if err != nil {
		return 0, nil, false, fmt.Errorf("%w: list snapshots after publishing %s: %v", errCommitAmbiguous, final, err)
	}
	stale := false
	if len(ids) > 0 && ids[len(ids)-1] > sn.ID {
		if stale, err = st.publishedStale(sn); err != nil {
			return 0, nil, false, fmt.Errorf("%w: check %s below snapshot %d: %v", errCommitAmbiguous, final, ids[len(ids)-1], err)
		}
	}
	if stale {
		if err := st.fs().Remove(final); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, nil, false, fmt.Errorf("%w: take back %s, published below snapshot %d: %v", errCommitAmbiguous, final, ids[len(ids)-1], err)
		}
		cleanup()
		return 0, nil, true, fmt.Errorf("%w: snapshot %d was published below snapshot %d (its id was expired)", fs.ErrExist, sn.ID, ids[len(ids)-1])
	}
	st.writeHint("LATEST", sn.ID)
	st.keepCommitted(sn, publishing)
	newLive := make([]*meta.ManifestEntry, 0, len(live)+len(adds))
	gone := map[string]bool{}
	for _, d := range deletes {
		gone[d.File.FileName] = true
	}
	for _, e := range live {
		if !gone[e.File.FileName] {
			newLive = append(newLive, e)
		}
	}
	newLive = append(newLive, adds...)
	st.cacheLive(sn.ID, newLive)
	st.keepLists(sn.ID, map[string][]meta.ManifestFile{baseName: base, deltaName: {dm}})
	return sn.ID, errs, false, nil
}

// nextSequenceNumber is above every sequence number in the table at sn.
// Snapshots of Paimon's writers do not record it (nor flightd's checksum):
// then it is found from the files, as Paimon's writers find theirs.
func (st *tableState) nextSequenceNumber(sn *meta.Snapshot) (int64, error) {
	if sn.NextSequenceNumber > 0 || sn.Checksum != 0 {
		return sn.NextSequenceNumber, nil
	}
	live, err := st.liveFiles(sn)
	if err != nil {
		return 0, err
	}
	var next int64
	for _, e := range live {
		next = max(next, e.File.MaxSeq+1)
	}
	return next, nil
}

// fits checks that r can follow latest (with sch in effect) and earlier,
// the files of requests published before it in the same snapshot.
func (st *tableState) fits(ctx context.Context, r *commitRequest, sch *tableSchema, latest *meta.Snapshot, earlier []*meta.ManifestEntry, deltas commitDeltas) error {
	switch {
	case r.replace != nil:
		return nil // a replace supersedes whatever committed meanwhile
	case r.schema != nil && r.schema.ID < sch.Origin:
		return fmt.Errorf("%w: table %s was replaced after the write began", ErrConflict, st.id)
	}
	return st.rebase(ctx, r, sch, latest, earlier, deltas)
}

// syncFileDirs makes the directory entries of files durable.
func (st *tableState) syncFileDirs(files []*meta.ManifestEntry) error {
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
// publishedStale reports whether sn, just published with newer snapshots
// after it, took an id that expiry had freed rather than being committed
// on: the snapshot after it names another parent, or is missing while sn
// is there (expiry removes the oldest first, so a successor goes only
// after sn). A successor of Paimon's writers names none: not stale.
func (st *tableState) publishedStale(sn *meta.Snapshot) (bool, error) {
	next, err := st.readSnapshot(sn.ID + 1)
	if err == nil {
		return !next.Follows(sn), nil
	}
	if !errors.Is(err, ErrSnapshotNotFound) {
		return false, err
	}
	return st.isOurSnapshot(sn)
}

func (st *tableState) isOurSnapshot(sn *meta.Snapshot) (bool, error) {
	got, err := st.readSnapshot(sn.ID)
	if errors.Is(err, ErrSnapshotNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return got.CommitUser == sn.CommitUser && got.CommitIdentifier == sn.CommitIdentifier, nil
}

// writeManifestFile writes a manifest or manifest list, not yet synced:
// its open file joins pending.
func (st *tableState) writeManifestFile(name string, data []byte, pending *[]File) error {
	f, err := createWritten(st.fs(), st.manifestPath(name), data)
	if err != nil {
		return fmt.Errorf("write %s: %w", st.manifestPath(name), err)
	}
	*pending = append(*pending, f)
	return nil
}

// writeHint updates a LATEST/EARLIEST hint; hints may be stale, so
// failures are ignored. It is not synced (a sync is a device wait on
// every commit): after a crash a hint may be empty or old, and readers
// then probe or list the snapshots (latestSnapshot).
//
// Where the FS swaps names (exchanger), the id is written into this
// table state's spare file of the hint, which is then swapped with the
// hint: a reader opens the old hint or the new one, each written whole.
// The next update rewrites the spare (the old hint) in place, so a reader
// still reading that file may find it empty or holding a newer id, never
// an id not yet published: every id written is published, and one writer
// per hint and process writes its spare (commitMu for LATEST, expireMu for
// EARLIEST). Only the first two updates create a file (the first spare
// becomes the hint), and none is freed (a freed inode also slows the next
// creations on ext4 without a journal). Otherwise the hint is replaced by
// a new file, renamed.
func (st *tableState) writeHint(name string, id int64) {
	dir := joinPath(st.dir, "snapshot")
	data := []byte(strconv.FormatInt(id, 10))
	hint := joinPath(dir, name)
	if x, ok := st.fs().(exchanger); ok && !st.noExchange.Load() {
		spare := joinPath(dir, spareName(name, st.spare))
		err := writeClosed(st.fs(), spare, data)
		if err == nil {
			err = x.Exchange(spare, hint)
			if errors.Is(err, fs.ErrNotExist) {
				err = st.fs().Rename(spare, hint) // the first hint
			} else if err != nil {
				st.noExchange.Store(true) // not supported here
			}
		}
		if err == nil {
			return
		}
		_ = st.fs().Remove(spare)
	}
	tmp := joinPath(dir, ".tmp-"+name+"-"+newUUID())
	if err := writeClosed(st.fs(), tmp, data); err != nil {
		_ = st.fs().Remove(tmp)
		return
	}
	if err := st.fs().Rename(tmp, hint); err != nil {
		_ = st.fs().Remove(tmp)
	}
}

// spareName is the name of a spare file of hint name (writeHint).
func spareName(name, spare string) string { return ".tmp-" + name + "-" + spare }

// ownSpare reports whether n names one of this table state's spare hint
// files.
func (st *tableState) ownSpare(n string) bool {
	return n == spareName("LATEST", st.spare) || n == spareName("EARLIEST", st.spare)
}
