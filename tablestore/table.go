package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/meta"
)

// tableState is the per-table state a Store shares between the Table
// handles of one table.
type tableState struct {
	s   *Store
	id  Ident
	dir string

	// commitMu serializes this process's commits to the table; other
	// processes are serialized by put-if-absent publication, and their
	// schema changes by lockSchemaChange.
	commitMu sync.Mutex
	queue    []*queuedCommit // appends waiting to be published in a group (mu)
	// dropped is set, under commitMu, once this process dropped the
	// table: a write that opened it before must not publish afterwards,
	// into the directory a table created again under the name holds (its
	// snapshot would name the dropped table's manifests and files).
	dropped atomic.Bool
	// dropping is set while a drop of this process holds the table's locks:
	// its files go before dropped is set, and a reader finding one gone
	// then is reading a dropped table too.
	dropping atomic.Bool
	// spare names this table state's spare files of the hints
	// (writeHint); noExchange: the FS refused to swap them.
	spare      string
	noExchange atomic.Bool
	// pin holds the table's directory once found (fs).
	pin atomic.Pointer[pinnedDir]

	mu       sync.Mutex
	nextSeq  int64
	schemas  map[int64]*tableSchema
	inEffect map[int64]bool // Replaces schema versions known in effect
	liveSnap int64          // snapshot whose live files are cached
	// latest is the newest snapshot found (latestSnapshot, or committed
	// here), known to be the newest at latestAt; expiredThrough the newest
	// snapshot this process's expiry removed.
	latest         *meta.Snapshot
	latestAt       time.Time
	expiredThrough int64
	// keptSchema is the latest schema as read at keptSchemaAt, for Table
	// within Options.MetadataMaxAge; schemaGen counts this process's
	// schema publications, so a read that raced one is not kept.
	keptSchema   *tableSchema
	keptSchemaAt time.Time
	schemaGen    int64
	live         []*meta.ManifestEntry
	// stats are the column statistics of snapshot statsSnap for schema
	// statsSchema (Table.ColumnStats): the planner asks for them at every
	// query, and they cannot change for the same snapshot and schema.
	statsSnap   *meta.Snapshot
	statsSchema *tableSchema
	stats       *Statistics
	// lists are the decoded manifest lists of the newest snapshot this
	// process committed (listsSnap), so that the next commit, which
	// extends them, need not read and decode them again (mu).
	listsSnap int64
	lists     map[string][]meta.ManifestFile
	// expireMu serializes expiry with tag creation.
	expireMu sync.Mutex
	leases   map[int64]int // snapshot id -> open scans
	// expiring is set (mu) while an expiry that has read the leases
	// decides what to expire: a Hold taken then waits for it.
	expiring bool
	// heldUntil keeps snapshots from expiring until a time: those the
	// tickets of a split result read (HoldUntil).
	heldUntil map[int64]time.Time
	// published is closed at this process's next commit (change streams
	// wait on it); atomic, since every stream of the table asks for the
	// next one at once after a commit.
	published atomic.Pointer[chan struct{}]
	// feeds share change reads among this process's streams (mu).
	feeds map[*tableSchema]*tableFeed
	// compactMu serializes compactions of the table.
	compactMu sync.Mutex
	// Background compaction.
	bgErr     error // last background failure, for CompactionError
	bgRunning bool
	bgPending bool
	bgDone    chan struct{} // closed when the running pass ends
	bgCtx     context.Context
	bgCancel  context.CancelFunc
	bgWG      sync.WaitGroup
}

func newTableState(s *Store, id Ident, dir string) *tableState {
	st := &tableState{s: s, id: id, dir: dir, spare: "spare-" + newUUID(), schemas: map[int64]*tableSchema{}, inEffect: map[int64]bool{}}
	st.bgCtx, st.bgCancel = context.WithCancel(s.bgCtx)
	return st
}

func (st *tableState) stopBackground() {
	// Cancelled under the store's lock, under which triggerCompaction
	// checks the context before it adds to bgWG: an Add after the check
	// would otherwise race the Wait below (go test -race, engine
	// TestRandomDDLAndWrites, a drop beside a commit's trigger).
	st.s.mu.Lock()
	st.bgCancel()
	st.s.mu.Unlock()
	st.bgWG.Wait()
}

// fs is the file system the table's files are read and written through:
// where the store's FS pins directories, its directory pinned when first
// found (dirPinner), so that this state never acts on a table another
// process created again under the name; by path until the directory
// exists.
func (st *tableState) fs() FS {
	if p := st.pin.Load(); p != nil {
		return p
	}
	pinner, ok := st.s.fs.(dirPinner)
	if !ok {
		return st.s.fs
	}
	p, err := pinner.PinDir(st.dir)
	if err != nil {
		return st.s.fs // not created yet, or gone: the operation finds out
	}
	if !st.pin.CompareAndSwap(nil, p) {
		_ = p.root.Close()
	}
	return st.pin.Load()
}

// lockSchemaChange serializes, across the processes of this machine that
// share the warehouse directory, the publications that decide the table's
// schema: a schema (CREATE TABLE, ALTER TABLE) and a snapshot that puts a
// staged schema in effect (CREATE TABLE ... AS, CREATE OR REPLACE). Each
// checks the latest schema, then publishes: without the lock another
// process's schema could land between the two (an append table's rows
// under a key table's schema). commitMu, which the caller holds, does the
// same within this process. An unpinned directory (an object store, or
// past the open-file limit) is not locked.
func (st *tableState) lockSchemaChange() (unlock func(), err error) {
	p, ok := st.fs().(*pinnedDir)
	if !ok {
		return func() {}, nil
	}
	return p.lock()
}

// movedAway reports whether the directory this state pinned is no longer
// the table's: another process dropped the table (and perhaps created it
// again). An error checking counts as not replaced: the operation meets it
// again.
func (st *tableState) movedAway() bool {
	p := st.pin.Load()
	if p == nil {
		return false
	}
	cur, err := p.current()
	return err == nil && !cur
}

// notFound returns err as ErrTableNotFound, once.
func (st *tableState) notFound(err error) error {
	if errors.Is(err, ErrTableNotFound) {
		return err
	}
	return fmt.Errorf("table %s: %w", st.id, errors.Join(ErrTableNotFound, err))
}

// droppedErr says who dropped the table under an operation that found its
// directory moved away.
func (st *tableState) droppedErr() error {
	if st.dropped.Load() || st.dropping.Load() {
		return errDroppedHere
	}
	return errMovedAway
}

// missing returns err, a file of the table found missing, as
// ErrTableNotFound when this process dropped the table under the handle
// that read it (the name may hold a table created again since).
func (st *tableState) missing(err error) error {
	gone := errors.Is(err, fs.ErrNotExist) || errors.Is(err, errMissing)
	if st.dropped.Load() || (st.dropping.Load() || st.movedAway()) && gone {
		return st.notFound(err)
	}
	return err
}

// gone returns a commit's err as ErrTableNotFound when the table was
// dropped, here or by another process: a request failing on its own (a
// file gone with the directory another process dropped and is removing)
// as much as the whole publication.
func (st *tableState) gone(err error) error {
	if st.movedAway() {
		return st.notFound(errors.Join(st.droppedErr(), err))
	}
	return st.droppedOr(err)
}

// droppedOr returns err, as ErrTableNotFound when the table was dropped:
// DropTable moves the directory away under writers.
func (st *tableState) droppedOr(err error) error {
	if st.dropped.Load() {
		return st.notFound(err)
	}
	if _, lerr := st.latestSchema(); errors.Is(lerr, ErrTableNotFound) {
		return st.notFound(err)
	}
	return err
}

// latestSchema reads the newest schema version in effect: a Replaces
// version only once a snapshot carries it (or a later version).
func (st *tableState) latestSchema() (*tableSchema, error) {
	names, err := st.fs().List(joinPath(st.dir, "schema"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("table %s: %w", st.id, ErrTableNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: list schemas: %w", st.id, err)
	}
	ids := schemaIDs(names)
	for i := len(ids) - 1; i >= 0; i-- {
		sch, err := st.schema(ids[i])
		if err != nil {
			return nil, err
		}
		if sch.Replaces {
			ok, err := st.replaced(sch)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // staged or abandoned replace
			}
		}
		// Without schema-0, a directory is the leftover of an interrupted
		// CREATE or DROP, unless a replace started the table later.
		if sch.Origin == 0 && !sch.Replaces && !slices.Contains(names, "schema-0") {
			break
		}
		return sch, nil
	}
	return nil, fmt.Errorf("table %s: %w", st.id, ErrTableNotFound)
}

// latestSchemaKept reads the latest schema and keeps it for recentSchema.
func (st *tableState) latestSchemaKept() (*tableSchema, error) {
	st.mu.Lock()
	gen := st.schemaGen
	st.mu.Unlock()
	at := time.Now()
	sch, err := st.latestSchema()
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	if gen == st.schemaGen {
		st.keptSchema, st.keptSchemaAt = sch, at
	}
	st.mu.Unlock()
	return sch, nil
}

// recentSchema is the kept latest schema when it was read within
// Options.MetadataMaxAge and no snapshot known here carries a later one
// (a replace's schema takes effect with its snapshot); nil otherwise.
func (st *tableState) recentSchema() *tableSchema {
	st.mu.Lock()
	defer st.mu.Unlock()
	sch := st.keptSchema
	if sch == nil || time.Since(st.keptSchemaAt) > st.s.opts.MetadataMaxAge ||
		st.latest != nil && st.latest.SchemaID > sch.ID {
		return nil
	}
	return sch
}

// forgetSchema drops the kept schema: this process published a version.
func (st *tableState) forgetSchema() {
	st.mu.Lock()
	st.keptSchema = nil
	st.schemaGen++
	st.mu.Unlock()
}

// replaced reports whether a Replaces version took effect: every snapshot
// from the replacing one on carries its id or a later one.
func (st *tableState) replaced(sch *tableSchema) (bool, error) {
	st.mu.Lock()
	ok := st.inEffect[sch.ID]
	st.mu.Unlock()
	if ok {
		return true, nil
	}
	id, err := st.latestSnapshotID()
	if err != nil || id == 0 {
		return false, err
	}
	sn, err := st.readSnapshot(id)
	if err != nil || sn.SchemaID < sch.ID {
		return false, err
	}
	st.mu.Lock()
	st.inEffect[sch.ID] = true
	st.schemas[sch.ID] = sch // in effect: never removed
	st.mu.Unlock()
	return true, nil
}

// schemaIDs returns the ids of schema-N names, ascending.
func schemaIDs(names []string) []int64 {
	var ids []int64
	for _, n := range names {
		if v, ok := strings.CutPrefix(n, "schema-"); ok {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// nextSchemaID is one above every schema file, staged ones included.
func (st *tableState) nextSchemaID() (int64, error) {
	names, err := st.fs().List(joinPath(st.dir, "schema"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("table %s: list schemas: %w", st.id, err)
	}
	if ids := schemaIDs(names); len(ids) > 0 {
		return ids[len(ids)-1] + 1, nil
	}
	return 0, nil
}

// schemaMissing explains why schema id, which the caller found listed or
// named, cannot be read: the table was dropped (its directory is gone), a
// staged create or replace was abandoned and removed it (no longer
// listed), or it is lost.
func (st *tableState) schemaMissing(id int64) error {
	names, err := st.fs().List(joinPath(st.dir, "schema"))
	switch {
	case errors.Is(err, fs.ErrNotExist) || st.dropped.Load():
		return st.notFound(fmt.Errorf("dropped while schema %d was read", id))
	case err != nil:
		return err
	case !slices.Contains(names, "schema-"+strconv.FormatInt(id, 10)):
		return fmt.Errorf("table %s: %w: schema %d was removed while read (a create abandoned)", st.id, ErrConflict, id)
	}
	return fmt.Errorf("table %s: %w: schema %d missing", st.id, ErrCorrupt, id)
}

// schema reads one schema version, and caches it unless it is a staged or
// abandoned replace: an abandoned one's file is removed (Write.Abort), and
// its id then taken by the next version published, here or by another
// process, which a cached copy would hide (an ALTER's version read as a
// replace not in effect, so the table's files with the added column did
// not match the schema in effect before it).
func (st *tableState) schema(id int64) (*tableSchema, error) {
	st.mu.Lock()
	sch := st.schemas[id]
	st.mu.Unlock()
	if sch != nil {
		return sch, nil
	}
	name := joinPath(st.dir, "schema", "schema-"+strconv.FormatInt(id, 10))
	data, err := readFileAll(st.fs(), name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, st.schemaMissing(id)
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	sch = &tableSchema{}
	if err := meta.Decode(name, data, sch); err != nil {
		return nil, err
	}
	// Only flightd's former format has the trailer; a schema without a
	// version is not enough to tell, since Paimon 0.7 wrote none.
	legacy := meta.HasTrailer(data)
	if legacy {
		sch.LegacyBucketHash = true // its rows were placed by flightd's old hash
	}
	if err := sch.init(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if legacy {
		st.migrateSchema(name, sch)
	}
	st.mu.Lock()
	if !sch.Replaces || st.inEffect[id] {
		st.schemas[id] = sch
	}
	st.mu.Unlock()
	return sch, nil
}

// migrateSchema rewrites a schema file of flightd's former format in
// Paimon's, with the same content (and the table's bucket hash marked),
// so that Paimon's readers can open the table. The rename replaces the
// file atomically; on failure the old file stays, which flightd reads.
func (st *tableState) migrateSchema(name string, sch *tableSchema) {
	tmp := joinPath(st.dir, "schema", ".tmp-"+newUUID())
	if _, err := writePaimonJSON(st.fs(), tmp, sch); err != nil {
		_ = st.fs().Remove(tmp)
		return
	}
	if err := st.fs().Rename(tmp, name); err != nil {
		_ = st.fs().Remove(tmp)
		return
	}
	_ = st.fs().SyncDir(joinPath(st.dir, "schema"))
}

func (st *tableState) snapshotPath(id int64) string {
	return joinPath(st.dir, "snapshot", "snapshot-"+strconv.FormatInt(id, 10))
}

// latestSnapshotID is the id of the newest snapshot (0: none).
func (st *tableState) latestSnapshotID() (int64, error) {
	sn, err := st.latestSnapshot()
	if err != nil || sn == nil {
		return 0, err
	}
	return sn.ID, nil
}

// latestSnapshot finds the newest snapshot (nil: none): the LATEST hint,
// then probing forward (the hint may be stale), or a listing when the hint
// is unusable. On an object store that is two requests when nothing is
// new: the newest snapshot read is kept (st.latest), the probe's miss
// costs one request and needs no listing.
func (st *tableState) latestSnapshot() (*meta.Snapshot, error) {
	// Whatever was committed before this moment is at or below what the
	// probe below finds missing.
	at := time.Now()
	if data, err := readFileAll(st.fs(), joinPath(st.dir, "snapshot", "LATEST")); err == nil {
		if id, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && id > 0 {
			sn, err := st.readSnapshot(id)
			for err == nil {
				next, nerr := st.readSnapshot(sn.ID + 1)
				if nerr == nil && !next.Follows(sn) && st.forgetLatest() {
					// One of the two was the kept newest snapshot of the
					// table's former self, which another process dropped
					// and created again: read both from their files.
					sn, err = st.readSnapshot(sn.ID)
					continue
				}
				if errors.Is(nerr, ErrSnapshotNotFound) {
					st.keepLatest(sn, at)
					return sn, nil
				}
				sn, err = next, nerr
			}
			if !errors.Is(err, ErrSnapshotNotFound) {
				return nil, err
			}
		}
	}
	for attempt := 0; ; attempt++ {
		ids, err := st.listSnapshots()
		if (err != nil || len(ids) == 0) && st.movedAway() {
			// Dropped, and its files removed.
			return nil, st.notFound(st.droppedErr())
		}
		if err != nil || len(ids) == 0 {
			return nil, err
		}
		sn, err := st.readSnapshot(ids[len(ids)-1])
		if errors.Is(err, ErrSnapshotNotFound) && attempt < maxLatestRetries {
			// Expiry took the newest listed: a newer one was committed
			// since, which the next listing finds. An autocommit UPDATE
			// failed with "snapshot not found" while another session
			// committed and expired (engine TestTxnExpiryModel).
			continue
		}
		if err != nil {
			return nil, err
		}
		st.keepLatest(sn, at)
		return sn, nil
	}
}

// keepLatest remembers sn, known to be the newest snapshot at time at,
// unless a newer one is known.
func (st *tableState) keepLatest(sn *meta.Snapshot, at time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.latest == nil || sn.ID > st.latest.ID:
		st.latest, st.latestAt = sn, at
	case sn.ID == st.latest.ID && at.After(st.latestAt):
		st.latestAt = at
	}
}

// forgetLatest drops the kept newest snapshot; it reports whether there
// was one.
func (st *tableState) forgetLatest() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	kept := st.latest != nil
	st.latest = nil
	return kept
}

// keepCommitted remembers sn, which this process just published, as the
// newest snapshot at time at, even under a higher id kept: that one
// belonged to the table's former self, dropped and created again by
// another process, whose snapshot ids started over.
func (st *tableState) keepCommitted(sn *meta.Snapshot, at time.Time) {
	st.mu.Lock()
	st.latest, st.latestAt = sn, at
	st.mu.Unlock()
}

// recentLatest is the newest snapshot known, when it was known newest
// within Options.MetadataMaxAge and this process has not expired it; nil
// otherwise (ask storage).
func (st *tableState) recentLatest() *meta.Snapshot {
	st.mu.Lock()
	defer st.mu.Unlock()
	l := st.latest
	if l == nil || l.ID <= st.expiredThrough || time.Since(st.latestAt) > st.s.opts.MetadataMaxAge {
		return nil
	}
	return l
}

// listSnapshots lists existing snapshot ids, ascending.
func (st *tableState) listSnapshots() ([]int64, error) {
	names, err := st.fs().List(joinPath(st.dir, "snapshot"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, st.notFound(err)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: list snapshots: %w", st.id, err)
	}
	var ids []int64
	for _, n := range names {
		if v, ok := strings.CutPrefix(n, "snapshot-"); ok {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func (st *tableState) readSnapshot(id int64) (*meta.Snapshot, error) {
	// A snapshot file is written once, so the kept newest one is its
	// content until this process's expiry removes it (st.expiredThrough:
	// readers lease snapshots against that expiry only).
	st.mu.Lock()
	if l := st.latest; l != nil && l.ID == id && id > st.expiredThrough {
		st.mu.Unlock()
		return l, nil
	}
	st.mu.Unlock()
	sn := &meta.Snapshot{}
	if err := readMeta(st.fs(), st.snapshotPath(id), sn); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("table %s: snapshot %d: %w", st.id, id, ErrSnapshotNotFound)
		}
		return nil, err
	}
	if sn.ID != id {
		return nil, fmt.Errorf("%w: %s holds snapshot id %d", ErrCorrupt, st.snapshotPath(id), sn.ID)
	}
	return sn, nil
}

func (st *tableState) manifestPath(name string) string { return joinPath(st.dir, "manifest", name) }

func (st *tableState) readManifestList(name string) ([]meta.ManifestFile, error) {
	if name == "" {
		return nil, nil
	}
	st.mu.Lock()
	l, ok := st.lists[name]
	st.mu.Unlock()
	if ok {
		// Clipped: a caller appending to it must not write into the
		// kept array.
		return slices.Clip(l), nil
	}
	data, err := st.readManifestFile(name)
	if err != nil {
		return nil, err
	}
	return st.decodeManifestList(st.manifestPath(name), data)
}

func (st *tableState) readManifest(name string) ([]*meta.ManifestEntry, error) {
	data, err := st.readManifestFile(name)
	if err != nil {
		return nil, err
	}
	return st.decodeManifest(st.manifestPath(name), data)
}

func (st *tableState) readManifestFile(name string) ([]byte, error) {
	data, err := readFileAll(st.fs(), st.manifestPath(name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, st.missing(missingIsCorrupt(st.manifestPath(name), err))
		}
		return nil, fmt.Errorf("read %s: %w", st.manifestPath(name), err)
	}
	return data, nil
}

func missingIsCorrupt(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is %w", ErrCorrupt, name, errMissing)
	}
	return err
}

// errMissing marks a file of a snapshot found missing: corrupt, unless
// the table was dropped under the reader (missing).
var errMissing = errors.New("missing")

// applyManifests replays manifests in order into the live file set.
func (st *tableState) applyManifests(lists ...[]meta.ManifestFile) ([]*meta.ManifestEntry, error) {
	live := map[string]*meta.ManifestEntry{}
	var order []string
	for _, l := range lists {
		for _, m := range l {
			ents, err := st.readManifest(m.FileName)
			if err != nil {
				return nil, err
			}
			for _, e := range ents {
				switch e.Kind {
				case meta.KindAdd:
					if _, ok := live[e.File.FileName]; !ok {
						order = append(order, e.File.FileName)
					}
					live[e.File.FileName] = e
				case meta.KindDelete:
					delete(live, e.File.FileName)
				default:
					return nil, fmt.Errorf("%w: %s: entry kind %q", ErrCorrupt, st.manifestPath(m.FileName), e.Kind)
				}
			}
		}
	}
	out := make([]*meta.ManifestEntry, 0, len(live))
	for _, n := range order {
		if e, ok := live[n]; ok {
			out = append(out, e)
			delete(live, n)
		}
	}
	return out, nil
}

// liveFiles returns the data files of a snapshot. The result is shared:
// callers must not modify it.
func (st *tableState) liveFiles(sn *meta.Snapshot) ([]*meta.ManifestEntry, error) {
	st.mu.Lock()
	if st.liveSnap == sn.ID && sn.ID > 0 {
		l := st.live
		st.mu.Unlock()
		return l, nil
	}
	st.mu.Unlock()
	base, err := st.readManifestList(sn.BaseManifestList)
	if err != nil {
		return nil, err
	}
	delta, err := st.readManifestList(sn.DeltaManifestList)
	if err != nil {
		return nil, err
	}
	live, err := st.applyManifests(base, delta)
	if err != nil {
		return nil, err
	}
	st.cacheLive(sn.ID, live)
	return live, nil
}

// keepLists keeps the manifest lists snapshot id was published with, as
// written. A list file is written once under a new name, so its decoded
// content is the list until the file is removed, which expiry does to a
// snapshot's lists only once a newer one exists.
func (st *tableState) keepLists(id int64, lists map[string][]meta.ManifestFile) {
	st.mu.Lock()
	if id > st.listsSnap {
		st.listsSnap, st.lists = id, lists
	}
	st.mu.Unlock()
}

func (st *tableState) cacheLive(id int64, live []*meta.ManifestEntry) {
	st.mu.Lock()
	if id >= st.liveSnap {
		st.liveSnap, st.live = id, live
	}
	st.mu.Unlock()
}

// Table is a handle on one table. It keeps the schema current when it was
// opened; open the table again to see later ALTERs. Safe for concurrent use.
type Table struct {
	st     *tableState
	schema *tableSchema
	pin    *Pin // nil: every read of the latest snapshot resolves it
	// write's rows, not yet committed, are read too (WithWrite).
	write *Write
}

// Pin is one resolution of a table's latest snapshot, shared by the
// handles of one statement (WithPin): the first read of the latest
// snapshot through any of them resolves it (a few requests on an object
// store), the others read the same snapshot, so a statement reads one
// snapshot per table and pays for it once. Reset makes the next read
// resolve again (a new execution); Release makes the handles resolve at
// every read, as unpinned ones do. Safe for concurrent use.
type Pin struct {
	mu       sync.Mutex
	sn       *meta.Snapshot
	resolved bool
	released bool
}

// Reset forgets the snapshot resolved.
func (p *Pin) Reset() {
	p.mu.Lock()
	p.sn, p.resolved = nil, false
	p.mu.Unlock()
}

// Release stops the pinning for good.
func (p *Pin) Release() {
	p.mu.Lock()
	p.sn, p.resolved, p.released = nil, false, true
	p.mu.Unlock()
}

// WithPin returns a handle on the same table whose reads of the latest
// snapshot go through p (nil: a handle that resolves at every read, for
// what outlives the statement). p must serve this table only.
func (t *Table) WithPin(p *Pin) *Table {
	c := *t
	c.pin = p
	return &c
}

// WithWrite returns a handle on the same table whose scans also read the
// rows w settled (Write.Settle) and has not committed, above those of the
// snapshot they read (a key's newest version wins, by sequence number, as
// on commit): a transaction reads its own writes. w must write this
// table, and not as an overwrite, which replaces rows a scan of the
// snapshot would still read.
func (t *Table) WithWrite(w *Write) *Table {
	c := *t
	c.write = w
	return &c
}

// AsOf returns a handle on the table with the schema the snapshot named by
// id or by tag was written with, for time travel: scans of that snapshot
// through it (ScanSpec.SnapshotID or Tag) read its columns as they were. A
// handle's scans of an older snapshot read it with the handle's schema
// (columns added since are NULL), as a statement pinned to the latest
// snapshot does across an ALTER TABLE that committed no rows yet.
func (t *Table) AsOf(ctx context.Context, id int64, tag string) (*Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sn, err := t.named(id, tag)
	if err == nil && sn == nil {
		err = fmt.Errorf("table %s: snapshot %d: %w", t.st.id, id, ErrSnapshotNotFound)
	}
	if err != nil {
		return nil, t.st.missing(err)
	}
	sch, err := t.st.schema(sn.SchemaID)
	if err != nil {
		return nil, t.st.missing(err)
	}
	c := *t
	c.schema, c.pin, c.write = sch, nil, nil
	return &c, nil
}

// named reads the snapshot tag names, or else snapshot id (0: the latest;
// nil if the table has none).
func (t *Table) named(id int64, tag string) (*meta.Snapshot, error) {
	if tag != "" {
		return t.st.readTag(tag)
	}
	return t.resolve(id)
}

// Uncommitted reports whether scans of the handle read uncommitted rows
// (WithWrite). What reads the table other than by a scan (a lookup index,
// row counts from metadata) does not see them.
func (t *Table) Uncommitted() bool { return t.write != nil }

// latest resolves the table's latest snapshot, once per pin.
func (t *Table) latest() (*meta.Snapshot, error) {
	p := t.pin
	if p == nil {
		return t.st.resolveSnapshot(0)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return t.st.resolveSnapshot(0)
	}
	if !p.resolved {
		sn := t.st.recentLatest()
		if sn == nil {
			var err error
			if sn, err = t.st.resolveSnapshot(0); err != nil {
				return nil, err
			}
		}
		p.sn, p.resolved = sn, true
	}
	return p.sn, nil
}

// Ident returns the table's name.
func (t *Table) Ident() Ident { return t.st.id }

// Reopen opens the table now under t's name: t stays bound to the table it
// opened, which another node may have dropped and created again since.
func (t *Table) Reopen(ctx context.Context) (*Table, error) { return t.st.s.Table(ctx, t.st.id) }

// Schema returns the table's schema (as of opening the handle).
func (t *Table) Schema() *arrow.Schema { return t.schema.arrow }

// PrimaryKey returns the primary key columns (empty for append tables).
func (t *Table) PrimaryKey() []string { return slices.Clone(t.schema.PrimaryKeys) }

// PartitionKeys returns the partition columns.
func (t *Table) PartitionKeys() []string { return slices.Clone(t.schema.PartitionKeys) }

// Options returns the table options as given (defaults are not filled in).
func (t *Table) Options() map[string]string { return maps.Clone(t.schema.Options) }

// Comment returns the table comment.
func (t *Table) Comment() string { return t.schema.Comment }

// DynamicPartitionOverwrite is the table's dynamic-partition-overwrite
// option (default true): what an INSERT OVERWRITE without a hint does.
func (t *Table) DynamicPartitionOverwrite() bool { return t.schema.opts.dynamicOverwrite }

// Buckets returns the number of buckets per partition.
func (t *Table) Buckets() int { return t.schema.opts.buckets }

// BucketKey returns the columns whose hash picks a row's bucket.
func (t *Table) BucketKey() []string { return slices.Clone(t.schema.opts.bucketKey) }

// CompactionError returns the last error of background compaction, if any
// (conflicts are not errors: compaction simply retries later).
func (t *Table) CompactionError() error {
	t.st.mu.Lock()
	defer t.st.mu.Unlock()
	return t.st.bgErr
}

// LatestSnapshotID returns the newest snapshot id of the handle's table
// (see resolve), 0 when none exists.
func (t *Table) LatestSnapshotID(ctx context.Context) (int64, error) {
	sn, err := t.resolve(0)
	if err != nil || sn == nil {
		return 0, err
	}
	return sn.ID, nil
}

// resolve reads snapshot id, or for 0 the latest snapshot of the table the
// handle opened: once a replace (Store.StageTable) published a new table
// under the name, a handle on the old one keeps reading the old table's last
// snapshot, so a statement bound before the replace sees the old table
// whole rather than the new data through the old schema.
func (t *Table) resolve(id int64) (*meta.Snapshot, error) {
	var sn *meta.Snapshot
	var err error
	if id == 0 {
		sn, err = t.latest()
	} else {
		sn, err = t.st.resolveSnapshot(id)
	}
	if err != nil || sn == nil || id != 0 || sn.SchemaID <= t.schema.ID {
		return sn, err
	}
	cur, err := t.st.schema(sn.SchemaID)
	if err != nil || cur.Origin <= t.schema.ID {
		return sn, err
	}
	// The newest snapshot of the table as bound: several replaces may have
	// been published since, so stop at the bound table's own origin.
	for prev := sn.ID - 1; prev > 0; prev-- {
		p, err := t.st.readSnapshot(prev)
		if err != nil {
			return nil, fmt.Errorf("table %s was replaced and its former contents expired: %w", t.st.id, err)
		}
		ps, err := t.st.schema(p.SchemaID)
		if err != nil {
			return nil, err
		}
		switch {
		case ps.Origin == t.schema.Origin:
			return p, nil
		case ps.Origin < t.schema.Origin:
			return nil, nil // the bound table had no snapshot
		}
	}
	return nil, nil // the replaced table had no snapshot
}

// SnapshotAsOf returns the newest snapshot committed at or before ts.
func (t *Table) SnapshotAsOf(ctx context.Context, ts time.Time) (int64, error) {
	for {
		id, err := t.snapshotAsOf(ctx, ts)
		if !errors.Is(err, errListingStale) {
			return id, err
		}
	}
}

// errListingStale: a snapshot listed was expired before it was read; the
// search starts again from a new listing (expiry removes the oldest
// snapshots, and never the latest, so it ends).
var errListingStale = errors.New("snapshot listing stale")

func (t *Table) snapshotAsOf(ctx context.Context, ts time.Time) (int64, error) {
	ids, err := t.st.listSnapshots()
	if err != nil {
		return 0, err
	}
	ms := ts.UnixMilli()
	// Commit times grow with ids (one committer at a time per table), so
	// binary search.
	lo, hi := 0, len(ids)
	for lo < hi {
		mid := (lo + hi) / 2
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		sn, err := t.st.readSnapshot(ids[mid])
		if errors.Is(err, ErrSnapshotNotFound) {
			return 0, errListingStale
		}
		if err != nil {
			return 0, err
		}
		if sn.TimeMillis <= ms {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		if len(ids) > 0 && ids[0] > 1 {
			// Snapshots before the oldest kept one were committed, and
			// the one current at ts is among them.
			return 0, fmt.Errorf("table %s: the snapshot current at %s: %w (the oldest kept is %d)", t.st.id, ts.UTC().Format(time.RFC3339Nano), ErrSnapshotExpired, ids[0])
		}
		return 0, fmt.Errorf("table %s: no snapshot at or before %s: %w", t.st.id, ts.UTC().Format(time.RFC3339Nano), ErrSnapshotNotFound)
	}
	return ids[lo-1], nil
}

// TableStats summarizes one snapshot for the planner.
type TableStats struct {
	SnapshotID int64
	// Rows counts stored rows; for key tables it includes not yet merged
	// versions and deletes, so it is an upper bound of the live rows.
	Rows       int64
	Files      int64
	Bytes      int64
	Partitions int64
}

// Stats returns statistics of a snapshot (0 = latest).
func (t *Table) Stats(ctx context.Context, snapshotID int64) (TableStats, error) {
	sn, err := t.resolve(snapshotID)
	if err != nil || sn == nil {
		return TableStats{}, err
	}
	files, err := t.st.liveFiles(sn)
	if err != nil {
		return TableStats{}, err
	}
	ts := TableStats{SnapshotID: sn.ID}
	parts := map[string]bool{}
	for _, f := range files {
		ts.Rows += f.File.RowCount
		ts.Files++
		ts.Bytes += f.File.FileSize
		parts[meta.PartitionKey(f.Partition)] = true
	}
	ts.Partitions = int64(len(parts))
	return ts, nil
}

// resolveSnapshot reads snapshot id, or the latest for 0 (nil when the table
// has no snapshot yet).
func (st *tableState) resolveSnapshot(id int64) (*meta.Snapshot, error) {
	if id < 0 {
		return nil, fmt.Errorf("%w: snapshot id %d", ErrInvalid, id)
	}
	if id == 0 {
		return st.latestSnapshot()
	}
	return st.readSnapshot(id)
}
