package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/tablestore/maintenance"
	"github.com/flightd/flightd/tablestore/meta"
)

func (st *tableState) tagPath(name string) string { return joinPath(st.dir, "tag", "tag-"+name) }

func (st *tableState) consumerPath(id string) string {
	return joinPath(st.dir, "consumer", "consumer-"+id)
}

// CreateTag pins a snapshot (0 = latest) under a name; the snapshot and its
// files survive expiry until the tag is deleted.
func (t *Table) CreateTag(ctx context.Context, name string, snapshotID int64) error {
	st := t.st
	if err := validateName("tag", name); err != nil {
		return err
	}
	sn, err := st.resolveSnapshot(snapshotID)
	if err != nil {
		return err
	}
	if sn == nil {
		return fmt.Errorf("tag %q on %s: %w: the table has no snapshot", name, st.id, ErrSnapshotNotFound)
	}
	// The tag lock keeps expiry from deleting the snapshot's files between
	// reading it and publishing the tag.
	st.expireMu.Lock()
	defer st.expireMu.Unlock()
	if _, err := st.readSnapshot(sn.ID); err != nil {
		return err
	}
	if err := st.fs().MkdirIn(st.dir, "tag"); err != nil {
		return err
	}
	tmp := joinPath(st.dir, "tag", ".tmp-"+newUUID())
	if _, err := writePaimonJSON(st.fs(), tmp, sn); err != nil {
		_ = st.fs().Remove(tmp)
		return err
	}
	if err := st.fs().RenameNoReplace(tmp, st.tagPath(name)); err != nil {
		_ = st.fs().Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: tag %q of %s already exists", ErrInvalid, name, st.id)
		}
		return err
	}
	if err := st.fs().SyncDir(joinPath(st.dir, "tag")); err != nil {
		return err
	}
	// Read back before acknowledging (a lost rename must not look done).
	got, err := st.readTag(name)
	if err != nil {
		return err
	}
	if got.ID != sn.ID {
		return fmt.Errorf("%w: tag %q of %s was created concurrently", ErrConflict, name, st.id)
	}
	return nil
}

// DeleteTag removes a tag; its files are reclaimed by a later expiry.
func (t *Table) DeleteTag(ctx context.Context, name string) error {
	if err := validateName("tag", name); err != nil {
		return err
	}
	st := t.st
	st.expireMu.Lock()
	defer st.expireMu.Unlock()
	sn, err := st.readTag(name)
	if err != nil {
		return err
	}
	if err := st.fs().Remove(st.tagPath(name)); err != nil {
		return err
	}
	earliest, err := st.earliestSnapshotID()
	if err != nil || sn.ID >= earliest {
		return err // the snapshot still exists: expiry reclaims its files
	}
	// The tag outlived its snapshot: reclaim what nothing else needs. A
	// file not live in the earliest snapshot was deleted before it, so no
	// retained snapshot needs it.
	keepFiles, keepManifests, err := st.referenced([]int64{earliest})
	if err != nil {
		return err
	}
	live, err := st.liveFiles(sn)
	if err != nil {
		return err
	}
	logs, lists, err := st.changelogFiles(sn)
	if err != nil {
		return err
	}
	var gone, cached []string
	for _, e := range append(live, logs...) {
		if !keepFiles[e.File.FileName] {
			gone = append(gone, joinPath(st.dir, e.File.Path))
			cached = append(cached, gone[len(gone)-1]+"#")
		}
	}
	st.s.forgetColumns(cached...)
	for _, f := range gone {
		if err := st.fs().Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, n := range lists {
		if !keepManifests[n] {
			if err := st.fs().Remove(st.manifestPath(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	for _, l := range []string{sn.BaseManifestList, sn.DeltaManifestList} {
		ms, err := st.readManifestList(l)
		if err != nil {
			return err
		}
		for _, m := range append(ms, meta.ManifestFile{FileName: l}) {
			if !keepManifests[m.FileName] {
				if err := st.fs().Remove(st.manifestPath(m.FileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
		}
	}
	return nil
}

// referenced returns the data files live in the given snapshots or any
// tag, and the manifests (and lists) those snapshots and every retained
// snapshot from the first given one on reference.
func (st *tableState) referenced(snaps []int64) (files, manifests map[string]bool, err error) {
	files, manifests = map[string]bool{}, map[string]bool{}
	keepLists := func(sn *meta.Snapshot) error {
		for _, l := range []string{sn.BaseManifestList, sn.DeltaManifestList} {
			manifests[l] = true
			ms, err := st.readManifestList(l)
			if err != nil {
				return err
			}
			for _, m := range ms {
				manifests[m.FileName] = true
			}
		}
		// Changelog files belong to the one snapshot that lists them.
		logs, lists, err := st.changelogFiles(sn)
		for _, n := range lists {
			manifests[n] = true
		}
		for _, e := range logs {
			files[e.File.FileName] = true
		}
		return err
	}
	tags, err := st.readTags()
	if err != nil {
		return nil, nil, err
	}
	var all []*meta.Snapshot
	for _, tag := range tags {
		all = append(all, tag)
	}
	ids, err := st.listSnapshots()
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if len(snaps) > 0 && id >= snaps[0] {
			sn, err := st.readSnapshot(id)
			if err != nil {
				return nil, nil, err
			}
			if err := keepLists(sn); err != nil {
				return nil, nil, err
			}
			if slices.Contains(snaps, id) {
				all = append(all, sn)
			}
		}
	}
	for _, sn := range all {
		if err := keepLists(sn); err != nil {
			return nil, nil, err
		}
		live, err := st.liveFiles(sn)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range live {
			files[e.File.FileName] = true
		}
	}
	return files, manifests, nil
}

// Tags returns the tags and their snapshot ids.
func (t *Table) Tags(ctx context.Context) (map[string]int64, error) {
	tags, err := t.st.readTags()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for n, sn := range tags {
		out[n] = sn.ID
	}
	return out, nil
}

func (st *tableState) readTags() (map[string]*meta.Snapshot, error) {
	names, err := st.fs().List(joinPath(st.dir, "tag"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]*meta.Snapshot{}
	for _, n := range names {
		tag, ok := strings.CutPrefix(n, "tag-")
		if !ok {
			continue
		}
		sn, err := st.readTag(tag)
		if err != nil {
			return nil, err
		}
		out[tag] = sn
	}
	return out, nil
}

func (st *tableState) readTag(name string) (*meta.Snapshot, error) {
	sn := &meta.Snapshot{}
	if err := readMeta(st.fs(), st.tagPath(name), sn); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("table %s: tag %q: %w", st.id, name, ErrSnapshotNotFound)
		}
		return nil, err
	}
	return sn, nil
}

// SetConsumer records that consumer id will read from nextSnapshot on;
// expiry keeps that snapshot and every later one until the consumer makes
// no commit for consumer.expiration-time.
func (t *Table) SetConsumer(ctx context.Context, id string, nextSnapshot int64) error {
	if err := validateName("consumer", id); err != nil {
		return err
	}
	if nextSnapshot < 1 {
		return fmt.Errorf("consumer %q of %s: %w: next snapshot must be positive, got %d", id, t.st.id, ErrInvalid, nextSnapshot)
	}
	st := t.st
	if err := st.fs().MkdirIn(st.dir, "consumer"); err != nil {
		return err
	}
	want := meta.Consumer{NextSnapshot: nextSnapshot, UpdateMillis: st.s.opts.Now().UnixMilli()}
	tmp := joinPath(st.dir, "consumer", ".tmp-"+newUUID())
	if _, err := writePaimonJSON(st.fs(), tmp, want); err != nil {
		_ = st.fs().Remove(tmp)
		return err
	}
	if err := st.fs().Rename(tmp, st.consumerPath(id)); err != nil {
		_ = st.fs().Remove(tmp)
		return err
	}
	if err := st.fs().SyncDir(joinPath(st.dir, "consumer")); err != nil {
		return err
	}
	// Read back: expiry trusts this position.
	var c meta.Consumer
	if err := readMeta(st.fs(), st.consumerPath(id), &c); err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("%w: consumer %q of %s was updated concurrently", ErrConflict, id, st.id)
	}
	return nil
}

// Consumer returns the recorded next snapshot of consumer id (ok false:
// no such consumer).
func (t *Table) Consumer(ctx context.Context, id string) (next int64, ok bool, err error) {
	if err := validateName("consumer", id); err != nil {
		return 0, false, err
	}
	return t.st.consumerPosition(id)
}

func (st *tableState) consumerPosition(id string) (int64, bool, error) {
	var c meta.Consumer
	if err := readMeta(st.fs(), st.consumerPath(id), &c); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	return c.NextSnapshot, true, nil
}

// DeleteConsumer forgets a consumer.
func (t *Table) DeleteConsumer(ctx context.Context, id string) error {
	if err := validateName("consumer", id); err != nil {
		return err
	}
	if err := t.st.fs().Remove(t.st.consumerPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// minConsumer returns the smallest next snapshot of any live consumer (0:
// none), removing consumers idle for longer than expire.
func (st *tableState) minConsumer(expire time.Duration) (int64, error) {
	names, err := st.fs().List(joinPath(st.dir, "consumer"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	cutoff := st.s.opts.Now().Add(-expire).UnixMilli()
	var lo int64
	for _, n := range names {
		if !strings.HasPrefix(n, "consumer-") {
			continue
		}
		var c meta.Consumer
		p := joinPath(st.dir, "consumer", n)
		if err := readMeta(st.fs(), p, &c); err != nil {
			return 0, err
		}
		if c.UpdateMillis > 0 && c.UpdateMillis < cutoff {
			if err := st.fs().Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return 0, err
			}
			continue
		}
		if v := c.NextSnapshot; lo == 0 || v < lo {
			lo = v
		}
	}
	return lo, nil
}

// lease keeps snapshot id (and later ones) from expiring while a scan
// reads it; the returned func releases it (idempotent).
func (st *tableState) lease(id int64) func() {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.leaseLocked(id)
}

// leaseLocked is lease with st.mu held.
func (st *tableState) leaseLocked(id int64) func() {
	if st.leases == nil {
		st.leases = map[int64]int{}
	}
	st.leases[id]++
	var done bool
	return func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if done {
			return
		}
		done = true
		if st.leases[id]--; st.leases[id] <= 0 {
			delete(st.leases, id)
		}
	}
}

// Hold keeps snapshot id (and later ones) from expiring in this process
// until the returned func is called (it is idempotent): a transaction
// reads each table at one snapshot from its first read to its end, a
// lookup index its snapshot while a lookup reads. It fails
// (ErrSnapshotNotFound) when this process's expiry took the snapshot
// already; another node's expiry it does not see. Unlike a scan's hold,
// it waits only for an expiry deciding what to expire, not for one
// deleting files (seconds on an object store): lookups take it at a high
// rate. An expiry past its decision leaves every snapshot after
// expiredThrough alone, and Hold refuses the others.
func (t *Table) Hold(id int64) (release func(), err error) {
	st := t.st
	st.mu.Lock()
	if st.expiring {
		// Its decision may miss a lease taken now: wait for it.
		st.mu.Unlock()
		st.expireMu.Lock()
		defer st.expireMu.Unlock()
		st.mu.Lock()
	}
	defer st.mu.Unlock()
	if id <= st.expiredThrough {
		return nil, fmt.Errorf("table %s: snapshot %d: %w", st.id, id, ErrSnapshotExpired)
	}
	return st.leaseLocked(id), nil
}

// HoldUntil keeps snapshot id (and later ones) from expiring in this
// process until the given time, with no scan open: a split result's
// tickets read their pinned snapshot up to their expiry. It fails
// (ErrSnapshotNotFound) when the snapshot is gone already.
func (t *Table) HoldUntil(id int64, until time.Time) error {
	st := t.st
	st.expireMu.Lock()
	defer st.expireMu.Unlock()
	if _, err := st.readSnapshot(id); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.heldUntil == nil {
		st.heldUntil = map[int64]time.Time{}
	}
	if until.After(st.heldUntil[id]) {
		st.heldUntil[id] = until
	}
	return nil
}

// Close releases the scan's hold on its snapshot; an unclosed scan releases
// it when garbage collected. Readers already open keep working.
func (s *Scan) Close() {
	s.points.close()
	if s.release != nil {
		s.release()
	}
}

// Unhold releases the scan's hold on its snapshot and keeps it usable:
// expiry may take the snapshot, so the caller holds it (Table.Hold)
// whenever it reads through the scan. A lookup index keeps its scan for
// the next lookups without keeping the table's later snapshots from
// expiring meanwhile.
func (s *Scan) Unhold() {
	if s.release != nil {
		s.release()
	}
}

// hold leases snapshot id and later ones under expireMu, so a running
// expiry either finished (the caller then re-checks what it needs) or will
// see the lease.
func (st *tableState) hold(id int64) func() {
	st.expireMu.Lock()
	defer st.expireMu.Unlock()
	return st.lease(id)
}

func (s *Scan) holdSnapshot() {
	rel := s.st.hold(s.snapID)
	s.release = rel
	runtime.AddCleanup(s, func(f func()) { f() }, rel)
}

// ExpireSnapshots deletes snapshots beyond the table's retention
// (snapshot.num-retained.min/max, snapshot.time-retained) and the files
// only they reference. Snapshots from the oldest one still leased by an
// open scan, held (HoldUntil) or needed by a consumer on are kept, and tagged snapshots keep
// their files. It returns the number of snapshots expired.
func (t *Table) ExpireSnapshots(ctx context.Context) (int, error) {
	return t.st.expire(ctx, ExpireOptions{})
}

// ExpireOptions override a table's retention for one expiry (the
// arguments of Paimon's sys.expire_snapshots); zero values keep the
// table's options.
type ExpireOptions struct {
	RetainMax int       // instead of snapshot.num-retained.max
	RetainMin int       // instead of snapshot.num-retained.min
	OlderThan time.Time // instead of now minus snapshot.time-retained
	// MaxDeletes bounds the snapshots expired by this call (0: no bound).
	MaxDeletes int
}

// ExpireSnapshotsWith is ExpireSnapshots with retention overridden by opts.
// Leases, consumers, tags and the latest snapshot are protected all the
// same.
func (t *Table) ExpireSnapshotsWith(ctx context.Context, opts ExpireOptions) (int, error) {
	if opts.RetainMax < 0 || opts.RetainMin < 0 || opts.MaxDeletes < 0 {
		return 0, fmt.Errorf("%w: expire: negative retention %+v", ErrInvalid, opts)
	}
	return t.st.expire(ctx, opts)
}

func (st *tableState) expire(ctx context.Context, opts ExpireOptions) (_ int, err error) {
	st.expireMu.Lock()
	defer st.expireMu.Unlock()
	var first int64
	defer func() {
		// Another node expiring at once removes files this one reads: a
		// conflict, not the corrupt table a missing file means otherwise.
		if err != nil && expiredFile(err) && first > 0 {
			ids, lerr := st.listSnapshots()
			if lerr != nil || len(ids) == 0 {
				return
			}
			if broken, berr := st.brokenPrefix(ids); berr == nil && (ids[0] > first || broken > 0) {
				err = fmt.Errorf("%w: expire: another expiry removed snapshots from %d at once: %v", ErrConflict, first, err)
			}
		}
	}()
	if st.dropped.Load() {
		return 0, st.notFound(errDroppedHere)
	}
	sch, err := st.latestSchema()
	if err != nil {
		return 0, err
	}
	o := sch.opts
	if opts.RetainMin > 0 {
		o.retainedMin = opts.RetainMin
	}
	if opts.RetainMax > 0 {
		o.retainedMax = opts.RetainMax
	}
	if o.retainedMax < o.retainedMin {
		return 0, fmt.Errorf("%w: expire: retain_max %d is below retain_min %d", ErrInvalid, o.retainedMax, o.retainedMin)
	}
	ids, err := st.listSnapshots()
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	first = ids[0]
	doomed := st.earliestHint()
	if len(ids) <= o.retainedMin && doomed <= ids[0] {
		return 0, nil
	}
	protect := ids[len(ids)-1] // never the latest
	if o.producer == producerFullCompaction {
		// Change streams of the table start from its last full compaction,
		// and the next full-compaction changelog diffs against it.
		if c, _, err := st.lastFullChangelog(); err != nil {
			return 0, err
		} else if c > 0 {
			protect = min(protect, c)
		}
	}
	if c, err := st.minConsumer(o.consumerExpire); err != nil {
		return 0, err
	} else if c > 0 {
		protect = min(protect, c)
	}
	now := st.s.opts.Now()
	st.mu.Lock()
	st.expiring = true
	defer func() {
		st.mu.Lock()
		st.expiring = false
		st.mu.Unlock()
	}()
	for id := range st.leases {
		protect = min(protect, id)
	}
	for id, until := range st.heldUntil {
		if now.Before(until) {
			protect = min(protect, id)
		} else {
			delete(st.heldUntil, id)
		}
	}
	st.mu.Unlock()
	r := maintenance.Retention{Min: o.retainedMin, Max: o.retainedMax, Protect: protect, MaxDeletes: opts.MaxDeletes,
		Before: now.Add(-o.timeRetained).UnixMilli()}
	if !opts.OlderThan.IsZero() {
		r.Before = opts.OlderThan.UnixMilli()
	}
	n, err := maintenance.Expirable(ids, r, func(id int64) (int64, error) {
		sn, err := st.readSnapshot(id)
		if err != nil {
			if expiredFile(err) && id < doomed {
				return 0, nil // being removed: as old as can be
			}
			return 0, err
		}
		return sn.TimeMillis, nil
	})
	if err != nil {
		return 0, err
	}
	// An expiry interrupted after it began removing files (a crash) left
	// the snapshots below its EARLIEST hint without some of their files:
	// they go first, whatever the retention, since none of them reads.
	for n < len(ids)-1 && ids[n] < doomed {
		n++
	}
	if n == 0 {
		return 0, nil
	}
	expired, retained := ids[:n], ids[n:]
	// Manifests still referenced by retained snapshots or tags, and files
	// of tags.
	tagFiles, keepManifest, err := st.referenced(retained[:1])
	if err != nil && expiredFile(err) {
		// An interrupted expiry that expired more left the oldest
		// snapshot kept here without some of its manifests: its
		// snapshots go, whatever the retention (none of them reads).
		broken, berr := st.brokenPrefix(ids)
		if berr != nil || broken <= n {
			return 0, err
		}
		n = broken
		expired, retained = ids[:n], ids[n:]
		tagFiles, keepManifest, err = st.referenced(retained[:1])
	}
	if err != nil {
		return 0, err
	}
	// Data files deleted by a snapshot up to the new earliest are needed by
	// none of the retained snapshots.
	var dataFiles []string
	for _, id := range append(expired[1:], retained[0]) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		// A file of an expired snapshot found missing was removed by an
		// interrupted expiry, after the data files it deleted (or by
		// another node's expiry running at once): nothing left to remove.
		sn, err := st.readSnapshot(id)
		if err != nil {
			if id != retained[0] && expiredFile(err) {
				continue
			}
			return 0, err
		}
		ml, err := st.readManifestList(sn.DeltaManifestList)
		if err != nil {
			if id != retained[0] && expiredFile(err) {
				continue
			}
			return 0, err
		}
		for _, m := range ml {
			ents, err := st.readManifest(m.FileName)
			if err != nil {
				if id != retained[0] && expiredFile(err) {
					continue
				}
				return 0, err
			}
			for _, e := range ents {
				if e.Kind == meta.KindDelete && !tagFiles[e.File.FileName] {
					dataFiles = append(dataFiles, joinPath(st.dir, e.File.Path))
				}
			}
		}
	}
	var manifests []string
	for _, id := range expired {
		sn, err := st.readSnapshot(id)
		if err != nil {
			if expiredFile(err) {
				continue
			}
			return 0, err
		}
		logs, lists, err := st.changelogFiles(sn)
		if err != nil {
			if !expiredFile(err) {
				return 0, err
			}
			logs, lists = nil, []string{sn.ChangelogManifestList}
		}
		for _, e := range logs {
			if !tagFiles[e.File.FileName] {
				dataFiles = append(dataFiles, joinPath(st.dir, e.File.Path))
			}
		}
		for _, n := range lists {
			if !keepManifest[n] {
				manifests = append(manifests, n)
			}
		}
		for _, l := range []string{sn.BaseManifestList, sn.DeltaManifestList} {
			ms, err := st.readManifestList(l)
			if err != nil && !expiredFile(err) {
				return 0, err
			}
			for _, m := range ms {
				if !keepManifest[m.FileName] {
					manifests = append(manifests, m.FileName)
				}
			}
			if !keepManifest[l] {
				manifests = append(manifests, l)
			}
		}
	}
	// Data files, then manifests, then snapshots: a crash in between leaves
	// old snapshots that fail to read, never a retained one. The EARLIEST
	// hint names the first kept one before anything is removed, so the
	// next expiry finishes this one (above) after a crash.
	st.writeHint("EARLIEST", retained[0])
	st.mu.Lock()
	st.expiredThrough = max(st.expiredThrough, slices.Max(expired))
	st.expiring = false
	st.mu.Unlock()
	gone := make([]string, len(dataFiles))
	for i, f := range dataFiles {
		gone[i] = f + "#"
	}
	st.s.forgetColumns(gone...)
	for _, f := range dataFiles {
		if err := st.fs().Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("expire: %w", err)
		}
	}
	slices.Sort(manifests)
	for _, m := range slices.Compact(manifests) {
		if err := st.fs().Remove(st.manifestPath(m)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("expire: %w", err)
		}
	}
	for _, id := range expired {
		if err := st.fs().Remove(st.snapshotPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("expire: %w", err)
		}
	}
	return len(expired), nil
}

// earliestHint is the EARLIEST hint: the oldest snapshot the last expiry
// kept (0: none or unreadable). Hints may be stale, never ahead of an
// expiry's decision.
func (st *tableState) earliestHint() int64 {
	data, err := readFileAll(st.fs(), joinPath(st.dir, "snapshot", "EARLIEST"))
	if err != nil {
		return 0
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0
	}
	return id
}

// expiredFile tells whether err is a file of a snapshot found missing.
func expiredFile(err error) bool {
	return errors.Is(err, errMissing) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSnapshotNotFound)
}

// brokenPrefix counts the snapshots at the start of ids (never the
// latest) through the last one that an interrupted expiry left without some
// of its manifest lists or manifests. That expiry removed manifests in
// name order, so any of the snapshots it expired may be broken, and it
// expired a prefix of the snapshots: every one before a broken one was
// being expired too. It reads every snapshot's lists: only for an expiry
// that found one broken.
func (st *tableState) brokenPrefix(ids []int64) (int, error) {
	n := 0
	for i, id := range ids[:len(ids)-1] {
		sn, err := st.readSnapshot(id)
		if err != nil {
			if expiredFile(err) {
				n = i + 1
				continue
			}
			return 0, err
		}
		whole := true
		for _, l := range []string{sn.BaseManifestList, sn.DeltaManifestList, sn.ChangelogManifestList} {
			ms, err := st.readManifestList(l)
			if err != nil {
				if !expiredFile(err) {
					return 0, err
				}
				whole = false
				break
			}
			for _, m := range ms {
				if _, err := st.fs().Stat(st.manifestPath(m.FileName)); err != nil {
					if !errors.Is(err, fs.ErrNotExist) {
						return 0, err
					}
					whole = false
					break
				}
			}
			if !whole {
				break
			}
		}
		if !whole {
			n = i + 1
		}
	}
	return n, nil
}

// earliestSnapshotID is the oldest snapshot still present (0: none).
func (st *tableState) earliestSnapshotID() (int64, error) {
	ids, err := st.listSnapshots()
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}
