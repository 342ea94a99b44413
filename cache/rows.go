package cache

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Rows is a bounded cache of rows by a 64-bit hash of their key, in hash
// tables of its own (table.go): an entry points at row Row of a segment S
// of the caller's (lookup/ keeps rows in Arrow columns, a segment per batch
// read). Two keys may share a hash, so the caller checks the entry's key
// before using it. Safe for concurrent use.
//
// Entries live in two generations: new ones go to the current one; when it
// holds half the bound, it becomes the old one and the old one is dropped
// whole, so eviction costs nothing per entry and the bound holds: both
// generations together cost at most maxCost (plus one entry larger than
// half of it). The caller re-sets the entries GetBatch reports from the old
// generation to keep them. Sets, Dels and Clears are applied before they
// return (no asynchronous buffers): a key deleted stays deleted until it is
// set again.
type Rows[S any] struct {
	mu       sync.RWMutex
	cur, old *rowTable[S]
	curCost  int64
	genCost  int64 // the bound of one generation
	ttl      time.Duration

	hits, misses atomic.Int64
}

type rowEntry[S any] struct {
	seg     S
	row     int32
	expires int64 // unix nanoseconds; 0: never
}

// NewRows makes a cache of at most maxCost; entries expire ttl after they
// were first set (0: never).
func NewRows[S any](maxCost int64, ttl time.Duration) (*Rows[S], error) {
	if maxCost <= 0 {
		return nil, fmt.Errorf("cache: size must be positive, got %d", maxCost)
	}
	return &Rows[S]{cur: newRowTable[S](0), old: newRowTable[S](0), genCost: max(maxCost/2, 1), ttl: ttl}, nil
}

// Ref is a cached row: row Row of segment Seg.
type Ref[S any] struct {
	Seg S
	Row int32
	// Old: the entry is in the old generation; set it again to keep it.
	Old bool
	// Expires is when the entry expires (0: never); Set keeps it for an
	// entry set again.
	Expires int64
}

// GetBatch calls fn, under the cache's read lock, with the entry of each
// hash of hs (but those where skip[i]); fn reports whether the entry is the
// key's (a hit). Expired entries are not given.
func (r *Rows[S]) GetBatch(hs []uint64, skip []bool, fn func(i int, ref Ref[S]) bool) {
	now := time.Now().UnixNano()
	var hits, asked int64
	r.mu.RLock()
	for i, h := range hs {
		if skip[i] {
			continue
		}
		asked++
		old := false
		e, ok := r.cur.get(h)
		if !ok {
			e, ok = r.old.get(h)
			old = true
		}
		if !ok || e.expires != 0 && now > e.expires {
			continue
		}
		if fn(i, Ref[S]{Seg: e.seg, Row: e.row, Old: old, Expires: e.expires}) {
			hits++
		}
	}
	r.mu.RUnlock()
	r.hits.Add(hits)
	r.misses.Add(asked - hits)
}

// Setter sets entries; see SetBatch.
type Setter[S any] func(h uint64, ref Ref[S], cost int64)

// SetBatch calls fn with a Setter that puts entries at a cost each (ref.Old
// is ignored; ref.Expires 0 starts the ttl), under the cache's write lock.
func (r *Rows[S]) SetBatch(fn func(set Setter[S])) {
	now := time.Now().UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(func(h uint64, ref Ref[S], cost int64) {
		cost = max(cost, 1)
		if r.curCost > 0 && r.curCost+cost > r.genCost {
			r.old, r.cur, r.curCost = r.cur, newRowTable[S](r.cur.n), 0
		}
		exp := ref.Expires
		if exp == 0 && r.ttl > 0 {
			exp = now + int64(r.ttl)
		}
		r.old.del(h)
		r.cur.put(h, rowEntry[S]{seg: ref.Seg, row: ref.Row, expires: exp})
		r.curCost += cost
	})
}

// Del removes the entry of hash h.
func (r *Rows[S]) Del(h uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.del(h)
	r.old.del(h)
}

// Clear removes every entry.
func (r *Rows[S]) Clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur, r.old, r.curCost = newRowTable[S](0), newRowTable[S](0), 0
}

// Stats reports the hits and misses of GetBatch.
func (r *Rows[S]) Stats() Stats { return Stats{Hits: r.hits.Load(), Misses: r.misses.Load()} }
