// Package changefeed shares the decoded changes of a table's snapshots
// among the change streams that read the table, so that a snapshot is read
// and decoded once however many streams follow it.
//
// A Feed is a cache of recent snapshots' changes, each loaded once: the
// first stream that asks for a snapshot newer than any the feed has seen
// loads it, streams asking meanwhile wait for that load, and later ones
// find it cached. Each stream applies its own projection and pruning to the
// shared batches.
//
// Policy for streams that fall behind: the feed never waits for a stream
// (streams pull, nothing is pushed), and it keeps at most Limits.Bytes of
// decoded changes and Limits.Snapshots snapshots, evicting the oldest. A
// stream that asks for a snapshot the feed no longer holds, or never
// loaded because it was already past it, gets nil and reads that snapshot
// from the files itself; having caught up it finds the next snapshots in
// the feed again. So memory is bounded by the limits plus the one snapshot
// each stream is in the middle of, and a slow stream costs the others
// nothing.
//
// Reading a snapshot's changes is split into independent Units (a file, or
// a bucket's merged rows): Load reads them all in parallel for the feed,
// Prefetch reads them in order with a bounded read-ahead for a stream that
// reads a snapshot itself. The table store plans the units; this package
// knows only Arrow batches.
package changefeed

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
)

// Part is a piece of a snapshot's changes (one file, or one bucket's
// merged rows) with what a reader needs to prune it.
type Part[M any] struct {
	Meta    M
	Batches []arrow.RecordBatch
}

// Snapshot is the decoded changes of one snapshot, in reading order. It is
// shared: read-only, valid until Release.
type Snapshot[M any] struct {
	ID    int64
	Parts []Part[M]

	key   string
	bytes int64
	refs  atomic.Int32
	done  chan struct{} // closed when the load ends
	err   error         // the load failed (set before done closes)
}

// Release gives back the caller's reference; the batches are released
// with the last one.
func (s *Snapshot[M]) Release() {
	if s.refs.Add(-1) > 0 {
		return
	}
	for _, p := range s.Parts {
		for _, b := range p.Batches {
			b.Release()
		}
	}
	s.Parts = nil
}

// Limits bound what a Feed keeps.
type Limits struct {
	// Bytes of decoded changes kept (the newest snapshot is kept whatever
	// its size).
	Bytes int64
	// Snapshots kept.
	Snapshots int
}

// Loader reads one snapshot's changes.
type Loader[M any] func(ctx context.Context) ([]Part[M], error)

// Stats count what a Feed did.
type Stats struct {
	Loads  int64 // snapshots loaded for the feed
	Shared int64 // requests served from the feed (loaded or waited for)
	Missed int64 // requests the caller had to read itself
}

// Feed is the cache of one table's recent snapshots. Safe for concurrent
// use.
type Feed[M any] struct {
	limits Limits
	size   func(arrow.RecordBatch) int64
	ctx    context.Context
	cancel context.CancelFunc
	loads  sync.WaitGroup

	mu      sync.Mutex
	entries map[int64]*Snapshot[M] // loading or kept
	kept    []int64                // ids of loaded entries, ascending
	bytes   int64
	newest  int64 // highest id ever admitted
	closed  bool

	nLoads, nShared, nMissed atomic.Int64
}

// New returns an empty feed; size measures a batch for Limits.Bytes.
func New[M any](limits Limits, size func(arrow.RecordBatch) int64) *Feed[M] {
	ctx, cancel := context.WithCancel(context.Background())
	return &Feed[M]{limits: limits, size: size, ctx: ctx, cancel: cancel, entries: map[int64]*Snapshot[M]{}}
}

// Get returns snapshot id's changes, loading them with load when id is
// newer than every snapshot the feed has admitted. key identifies the
// snapshot's content (ids are reused when a table is re-created). It
// returns nil, nil when the caller must read the snapshot itself: the feed
// no longer holds it, never held it, or its load failed (the caller's own
// read then reports the error where it belongs). The caller Releases a
// non-nil result.
func (f *Feed[M]) Get(ctx context.Context, id int64, key string, load Loader[M]) (*Snapshot[M], error) {
	f.mu.Lock()
	e := f.entries[id]
	switch {
	case f.closed || e != nil && e.key != key:
		e = nil
	case e != nil:
		e.refs.Add(1)
	case id > f.newest:
		e = &Snapshot[M]{ID: id, key: key, done: make(chan struct{})}
		e.refs.Store(2) // the feed's and the caller's
		f.entries[id], f.newest = e, id
		f.loads.Add(1)
		go f.load(e, load)
	}
	f.mu.Unlock()
	if e == nil {
		f.nMissed.Add(1)
		return nil, nil
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		e.Release()
		return nil, ctx.Err()
	}
	if e.err != nil {
		e.Release()
		f.nMissed.Add(1)
		return nil, nil
	}
	f.nShared.Add(1)
	return e, nil
}

// load runs on the feed's context, not a reader's: the readers waiting for
// it may come and go.
func (f *Feed[M]) load(e *Snapshot[M], load Loader[M]) {
	defer f.loads.Done()
	parts, err := load(f.ctx)
	f.nLoads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	defer close(e.done)
	if err != nil || f.closed {
		for _, p := range parts {
			for _, b := range p.Batches {
				b.Release()
			}
		}
		e.err = err
		if err == nil {
			e.err = context.Canceled
		}
		delete(f.entries, e.ID)
		e.refs.Add(-1) // the feed's: no batches to release
		return
	}
	e.Parts = parts
	for _, p := range parts {
		for _, b := range p.Batches {
			e.bytes += f.size(b)
		}
	}
	i, _ := slices.BinarySearch(f.kept, e.ID)
	f.kept = slices.Insert(f.kept, i, e.ID)
	f.bytes += e.bytes
	for len(f.kept) > 1 && (f.bytes > f.limits.Bytes || len(f.kept) > f.limits.Snapshots) {
		f.evict(f.kept[0])
	}
}

// evict drops a kept entry (mu held).
func (f *Feed[M]) evict(id int64) {
	e := f.entries[id]
	delete(f.entries, id)
	f.kept = slices.DeleteFunc(f.kept, func(k int64) bool { return k == id })
	f.bytes -= e.bytes
	e.Release()
}

// Stats returns the counters.
func (f *Feed[M]) Stats() Stats {
	return Stats{Loads: f.nLoads.Load(), Shared: f.nShared.Load(), Missed: f.nMissed.Load()}
}

// Close cancels loads, waits for them and releases what the feed keeps;
// Get then always returns nil. Snapshots handed out stay valid until
// released.
func (f *Feed[M]) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	f.loads.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.kept) > 0 {
		f.evict(f.kept[0])
	}
}
