package tablestore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/flightd/flightd/tablestore/changefeed"
	"github.com/flightd/flightd/tablestore/meta"
)

// The change streams of a table in this process share one read of each
// new snapshot's changes (package changefeed): a feed per table schema
// handle, alive while a ChangeReader uses it.

// defaultChangeFeedMemory is Options.ChangeFeedMemory's default.
const defaultChangeFeedMemory = 64 << 20

// changeFeedSnapshots bounds the snapshots a feed keeps: a stream further
// behind reads from the files.
const changeFeedSnapshots = 256

// errNotShared fails the feed's load of a snapshot too large to keep in
// memory: each stream then reads it from the files itself (changefeed.Prefetch).
var errNotShared = errors.New("snapshot changes too large to share")

// tableFeed is the shared change feed of one schema handle of a table.
type tableFeed struct {
	feed    *changefeed.Feed[unitMeta]
	planner changePlanner // all columns, no pruning
	limit   int64         // file bytes of a snapshot the feed loads
	readers int           // (tableState.mu)

	mu        sync.Mutex
	snapshots map[int64]*meta.Snapshot // recently read, immutable once published
	looks     map[int64]*look          // in progress, by snapshot id
}

// look is one look for a snapshot that the readers asking for it in the
// same publish epoch share: after a commit every reader of the table asks
// for the new snapshot, and then for the next one, missing, at once; each
// asking alone cost each a few file system calls.
type look struct {
	// epoch is the channel the next commit of this process closes, taken
	// before the look started: a reader that took the same one knows no
	// commit of this process came between, so the look's answer is as
	// fresh as its own would be, but for commits of other processes, which
	// readers find by polling anyway.
	epoch   <-chan struct{}
	started time.Time
	done    chan struct{} // closed when sn and err are set
	sn      *meta.Snapshot
	err     error
}

// fresh reports whether a reader polling every poll may take l's answer:
// in progress, or a miss of l.epoch found less than a tenth of poll ago
// (older, a poll looks again: commits of other processes close no epoch).
func (l *look) fresh(epoch <-chan struct{}, poll time.Duration) bool {
	if l.epoch != epoch {
		return false
	}
	select {
	case <-l.done:
		return errors.Is(l.err, ErrSnapshotNotFound) && time.Since(l.started) < poll/10
	default:
		return true
	}
}

// joinFeed returns the feed of sch's handles, created for the first
// reader.
func (st *tableState) joinFeed(sch *tableSchema) (*tableFeed, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f := st.feeds[sch]
	if f == nil {
		scan := &Scan{st: st, sch: sch}
		if err := scan.project(nil); err != nil {
			return nil, err
		}
		limit := st.s.opts.ChangeFeedMemory
		if limit <= 0 {
			limit = defaultChangeFeedMemory
		}
		f = &tableFeed{
			feed:      changefeed.New[unitMeta](changefeed.Limits{Bytes: limit, Snapshots: changeFeedSnapshots}, recordBytes),
			planner:   changePlanner{st: st, sch: sch, scan: scan, out: changeSchema(scan.out)},
			limit:     limit,
			snapshots: map[int64]*meta.Snapshot{},
			looks:     map[int64]*look{},
		}
		if st.feeds == nil {
			st.feeds = map[*tableSchema]*tableFeed{}
		}
		st.feeds[sch] = f
	}
	f.readers++
	return f, nil
}

// leaveFeed ends a reader's use of f; the last reader closes it.
func (st *tableState) leaveFeed(sch *tableSchema, f *tableFeed) {
	st.mu.Lock()
	f.readers--
	last := f.readers == 0
	if last {
		delete(st.feeds, sch)
	}
	st.mu.Unlock()
	if last {
		f.feed.Close()
	}
}

// findSnapshot returns snapshot id, or ErrSnapshotNotFound when it is not
// published yet; epoch is the reader's st.nextPublish(), taken before it
// asks. Readers asking in one epoch share one look (look.fresh).
func (r *ChangeReader) findSnapshot(id int64, epoch <-chan struct{}) (*meta.Snapshot, error) {
	f := r.feed
	f.mu.Lock()
	if sn := f.snapshots[id]; sn != nil {
		f.mu.Unlock()
		return sn, nil
	}
	if l := f.looks[id]; l != nil && l.fresh(epoch, r.spec.Poll) {
		f.mu.Unlock()
		<-l.done
		return l.sn, l.err
	}
	l := &look{epoch: epoch, started: time.Now(), done: make(chan struct{})}
	f.looks[id] = l
	f.mu.Unlock()
	sn, err := r.st.findSnapshot(id)
	f.mu.Lock()
	l.sn, l.err = sn, err
	close(l.done)
	if err == nil {
		delete(f.looks, id)
		f.snapshots[id] = sn
		if len(f.snapshots) > changeFeedSnapshots {
			delete(f.snapshots, slices.Min(slices.Collect(maps.Keys(f.snapshots))))
		}
	}
	f.mu.Unlock()
	return sn, err
}

// findSnapshot reads snapshot id; when it is missing it fails if a later
// one exists (it was expired under a lease that forbids it, or the table
// was re-created) or the table is gone, and returns ErrSnapshotNotFound
// otherwise.
func (st *tableState) findSnapshot(id int64) (*meta.Snapshot, error) {
	sn, err := st.readSnapshot(id)
	if !errors.Is(err, ErrSnapshotNotFound) {
		return sn, err
	}
	latest, err := st.latestSnapshotID()
	if err != nil {
		return nil, err
	}
	if latest >= id {
		// Published since the first read, or skipped.
		if sn, err := st.readSnapshot(id); err == nil {
			return sn, nil
		}
		if earliest, err := st.earliestSnapshotID(); err == nil && earliest > id {
			// Another node's expiry (this process's leases do not reach
			// there), or a stream without a consumer id falling behind
			// retention.
			return nil, fmt.Errorf("stream %s: snapshot %d: %w: it has expired (earliest is %d); a consumer id keeps a stream's snapshots", st.id, id, ErrSnapshotExpired, earliest)
		}
		return nil, fmt.Errorf("stream %s: %w: snapshot %d is missing while %d exists", st.id, ErrCorrupt, id, latest)
	}
	if _, err := st.fs().Stat(st.dir); err != nil {
		return nil, fmt.Errorf("stream %s: %w", st.id, ErrTableNotFound)
	}
	return nil, fmt.Errorf("table %s: snapshot %d: %w", st.id, id, ErrSnapshotNotFound)
}

// snapshotKey identifies a snapshot's changes: manifest list names are
// unique, snapshot ids are not across a re-created table.
func snapshotKey(sn *meta.Snapshot) string {
	return sn.DeltaManifestList + "/" + sn.ChangelogManifestList
}

// get returns the shared changes of sn, or nil when the reader must read
// them itself.
func (f *tableFeed) get(ctx context.Context, sn *meta.Snapshot) (*changefeed.Snapshot[unitMeta], error) {
	return f.feed.Get(ctx, sn.ID, snapshotKey(sn), func(ctx context.Context) ([]changefeed.Part[unitMeta], error) {
		st := f.planner.st
		// The requesting reader's lease may end before the load does.
		defer st.hold(max(sn.ID-1, 1))()
		units, err := f.planner.plan(sn)
		if err != nil {
			return nil, err
		}
		var size int64
		for _, u := range units {
			for _, e := range u.Meta.files {
				size += e.File.FileSize
			}
		}
		if size > f.limit {
			return nil, errNotShared
		}
		return changefeed.Load(ctx, units)
	})
}

// ChangeFeedStats returns the counters of the change feed that this
// handle's streams in this process share (zero when no stream is open).
func (t *Table) ChangeFeedStats() changefeed.Stats {
	t.st.mu.Lock()
	defer t.st.mu.Unlock()
	if f := t.st.feeds[t.schema]; f != nil {
		return f.feed.Stats()
	}
	return changefeed.Stats{}
}
