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
// holds half the bound (of bytes, or of entries), it becomes the old one
// and the old one is dropped whole, so eviction costs nothing per entry and
// the bound holds: both generations together cost at most maxBytes (plus
// one entry larger than half of it) and hold at most maxRows entries. The
// caller re-sets the entries GetBatch reports from the old generation to
// keep them. Sets, Dels and Clears are applied before they return (no
// asynchronous buffers): a key deleted stays deleted until it is set again.
//
// A Budget shared with other caches bounds their bytes together: each
// cache's generations are bounded by its fair share of the budget too
// (the budget over the caches sharing it), and past the budget the cache
// drops its old generation, and failing that does not keep the entry
// (Stats.Refused); a reader then goes to storage, as on any miss.
type Rows[S any] struct {
	mu       sync.RWMutex
	cur, old *rowTable[S]
	// Bytes of each generation's entries as set (an entry set again while
	// in the old generation counts in both until the old one goes), and
	// the entries set in the current one.
	curCost, oldCost int64
	curRows          int64
	genCost, genRows int64 // the bounds of one generation; 0: none
	ttl              time.Duration
	budget           *Budget
	closed           bool

	hits, misses, refused atomic.Int64
}

type rowEntry[S any] struct {
	seg     S
	row     int32
	expires int64 // unix nanoseconds; 0: never
}

// NewRows makes a cache of at most maxBytes of entries' cost and, when
// maxRows > 0, at most maxRows entries (maxBytes 0: bounded by entries
// only); entries expire ttl after they were first set (0: never). budget,
// when not nil, bounds its bytes together with the other caches sharing
// it; Close returns them.
func NewRows[S any](maxBytes, maxRows int64, ttl time.Duration, budget *Budget) (*Rows[S], error) {
	if maxBytes < 0 || maxRows < 0 || maxBytes == 0 && maxRows == 0 {
		return nil, fmt.Errorf("cache: bounds must be positive, got %d bytes and %d rows", maxBytes, maxRows)
	}
	r := &Rows[S]{cur: newRowTable[S](0), old: newRowTable[S](0), ttl: ttl, budget: budget}
	budget.join(r)
	if maxBytes > 0 {
		r.genCost = max(maxBytes/2, 1)
	}
	if maxRows > 0 {
		r.genRows = max(maxRows/2, 1)
	}
	return r, nil
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

// SetBatch calls fn with a Setter that puts entries at a cost in bytes
// each (ref.Old is ignored; ref.Expires 0 starts the ttl), under the
// cache's write lock.
func (r *Rows[S]) SetBatch(fn func(set Setter[S])) {
	if r.setBatch(fn) {
		r.budget.reclaim(r)
	}
}

// setBatch is SetBatch under the lock; it reports whether the budget
// turned an entry away.
func (r *Rows[S]) setBatch(fn func(set Setter[S])) (refused bool) {
	now := time.Now().UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	// A generation's bound: the cache's own, or half its share of the
	// budget when that is less (the share moves as caches come and go; a
	// batch takes it as it starts).
	genCost := r.genCost
	if share := r.budget.share() / 2; share > 0 && (genCost == 0 || share < genCost) {
		genCost = share
	}
	fn(func(h uint64, ref Ref[S], cost int64) {
		cost = max(cost, 1)
		if r.curRows > 0 && (genCost > 0 && r.curCost+cost > genCost || r.genRows > 0 && r.curRows+1 > r.genRows) {
			r.budget.give(r.oldCost)
			r.old, r.cur = r.cur, newRowTable[S](r.cur.n)
			r.oldCost, r.curCost, r.curRows = r.curCost, 0, 0
		}
		r.old.del(h)
		if !r.budget.take(cost) {
			r.dropOld()
			if !r.budget.take(cost) {
				// Not kept: an older entry of the key must not outlive it.
				r.cur.del(h)
				r.refused.Add(1)
				refused = true
				return
			}
		}
		exp := ref.Expires
		if exp == 0 && r.ttl > 0 {
			exp = now + int64(r.ttl)
		}
		r.cur.put(h, rowEntry[S]{seg: ref.Seg, row: ref.Row, expires: exp})
		r.curCost += cost
		r.curRows++
	})
	return refused
}

// dropOld drops the old generation and gives back its bytes.
func (r *Rows[S]) dropOld() {
	r.budget.give(r.oldCost)
	r.old, r.oldCost = newRowTable[S](0), 0
}

// shedOver drops the old generation, and then the current one, while the
// cache holds more than share.
func (r *Rows[S]) shedOver(share int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.curCost+r.oldCost > share {
		r.dropOld()
	}
	if r.curCost > share {
		r.clear()
	}
}

// Del removes the entry of hash h. Its bytes stay counted until its
// generation is dropped.
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
	r.clear()
}

func (r *Rows[S]) clear() {
	r.budget.give(r.curCost + r.oldCost)
	r.cur, r.old = newRowTable[S](0), newRowTable[S](0)
	r.curCost, r.oldCost, r.curRows = 0, 0, 0
}

// Close removes every entry, returning their bytes to the budget, and
// keeps no entry set after it.
func (r *Rows[S]) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clear()
	if !r.closed {
		r.budget.leave(r)
	}
	r.closed = true
}

// Stats reports the hits and misses of GetBatch, and the entries not kept
// for the budget.
func (r *Rows[S]) Stats() Stats {
	return Stats{Hits: r.hits.Load(), Misses: r.misses.Load(), Refused: r.refused.Load()}
}
