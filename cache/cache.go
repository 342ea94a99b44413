// Package cache holds flightd's in-memory caches, bounded by cost
// (bytes, or rows).
//
// Arrays caches decoded Arrow arrays (column chunks of data files), so a
// hot table is scanned without decoding Parquet again. The cache owns one
// reference to each array it holds; Get hands out a reference of the
// caller's own, so an array evicted while a reader uses it stays valid
// until the reader releases it. It is built on ristretto, whose admission
// policy (TinyLFU) keeps a full cache's frequently read arrays and turns
// away new ones until they have been read about as often: a query that
// reads new chunks several times (TPC-DS q88 scans the same columns of
// store_sales in eight subqueries) would decode them at every read. The
// arrays it turns away go to a window, a quarter of the budget evicted
// oldest first, and a read there offers the array to ristretto again.
//
// Rows (rows.go) indexes rows that lookup/ keeps in Arrow columns by a hash
// of their key, in two generations dropped whole, so probing a batch of
// keys costs a map read per key under one read lock.
package cache

import (
	"container/list"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/dgraph-io/ristretto/v2"

	"github.com/flightd/flightd/internal/arrowshare"
)

// Arrays is a byte-bounded cache of decoded arrays. Safe for concurrent use.
type Arrays struct {
	c            *ristretto.Cache[string, *entry]
	hits, misses atomic.Int64

	mu   sync.Mutex
	keys map[string]int // entries put and not yet gone per key, for Forget
	// The window: arrays ristretto declined, oldest first, each holding a
	// reference of the window's; at most winMax bytes.
	win      map[string]*list.Element // of *winItem
	order    list.List
	winBytes int64
	winMax   int64
}

type winItem struct {
	key  string
	a    arrow.Array
	size int64
}

// entry guards the cache's reference: eviction and Get race, and a Get
// must not Retain an array whose last reference eviction just released.
type entry struct {
	key  string
	mu   sync.Mutex
	a    arrow.Array
	dead bool
}

func (e *entry) release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.dead {
		e.dead = true
		e.a.Release()
	}
}

// NewArrays makes a cache of at most maxBytes of array buffers.
func NewArrays(maxBytes int64) (*Arrays, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("cache: size must be positive, got %d", maxBytes)
	}
	a := &Arrays{keys: map[string]int{}, win: map[string]*list.Element{}, winMax: maxBytes / 4}
	c, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		NumCounters:        max(maxBytes/(64<<10), 1000) * 10, // ~10 counters per expected entry of 64 KiB
		MaxCost:            max(maxBytes-a.winMax, 1),
		BufferItems:        64,
		IgnoreInternalCost: true,
		// Called before OnExit releases the entry.
		OnReject: func(it *ristretto.Item[*entry]) {
			if it.Value != nil {
				a.toWindow(it.Value)
			}
		},
		// ristretto hands OnExit the zero value for a victim whose entry
		// another goroutine removed first.
		OnExit: func(e *entry) {
			if e != nil {
				a.gone(e)
				e.release()
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	a.c = c
	return a, nil
}

// gone counts e out of its key's entries. (A key put twice before the
// first is applied may keep either entry: it stays in the keys until both
// are gone.)
func (c *Arrays) gone(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys[e.key]--; c.keys[e.key] <= 0 {
		delete(c.keys, e.key)
	}
}

// toWindow keeps e's array in the window (with a reference of its own),
// evicting the oldest beyond the window's bytes.
func (c *Arrays) toWindow(e *entry) {
	e.mu.Lock()
	if e.dead {
		e.mu.Unlock()
		return
	}
	e.a.Retain()
	e.mu.Unlock()
	size := max(util.TotalArraySize(e.a), 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	// ristretto also declines a key put twice before the first is applied:
	// the other entry stays.
	if size > c.winMax || c.keys[e.key] > 1 {
		e.a.Release()
		return
	}
	c.dropWindow(e.key)
	c.win[e.key] = c.order.PushBack(&winItem{key: e.key, a: e.a, size: size})
	c.winBytes += size
	for c.winBytes > c.winMax {
		c.dropWindow(c.order.Front().Value.(*winItem).key)
	}
}

// dropWindow releases the window's array for key, if any. c.mu is held.
func (c *Arrays) dropWindow(key string) {
	el, ok := c.win[key]
	if !ok {
		return
	}
	it := c.order.Remove(el).(*winItem)
	delete(c.win, key)
	c.winBytes -= it.size
	it.a.Release()
}

// Forget removes every entry whose key starts with one of prefixes: the
// arrays of files that are gone (a dropped table, expired files), which no
// scan will ask for again but which would otherwise hold their bytes until
// evicted. One pass over the keys, whatever the number of prefixes.
func (c *Arrays) Forget(prefixes ...string) {
	sorted := slices.Clone(prefixes)
	slices.Sort(sorted)
	// Of nested prefixes keep the outer one, so that the greatest prefix
	// at or below a key is the only one that can match it. Sorted, every
	// string between a prefix and one it starts holds it too, so the last
	// kept is the one to compare with.
	var ps []string
	for _, p := range sorted {
		if len(ps) == 0 || !strings.HasPrefix(p, ps[len(ps)-1]) {
			ps = append(ps, p)
		}
	}
	matches := func(k string) bool {
		i, found := slices.BinarySearch(ps, k)
		return found || i > 0 && strings.HasPrefix(k, ps[i-1])
	}
	c.mu.Lock()
	var keys []string
	for k := range c.keys {
		if matches(k) {
			keys = append(keys, k)
		}
	}
	for k := range c.win {
		if matches(k) {
			c.dropWindow(k)
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.c.Del(k)
	}
}

// Get returns the cached array for key, retained for the caller (who must
// Release it), or false.
func (c *Arrays) Get(key string) (arrow.Array, bool) {
	e, ok := c.c.Get(key)
	if ok {
		e.mu.Lock()
		if !e.dead {
			e.a.Retain()
			a := e.a
			e.mu.Unlock()
			c.hits.Add(1)
			return a, true
		}
		e.mu.Unlock()
	}
	// A read in the window offers the array to ristretto again, which has
	// counted this read too; if it declines again, the array comes back.
	c.mu.Lock()
	if el, ok := c.win[key]; ok {
		a := el.Value.(*winItem).a
		a.Retain()
		c.dropWindow(key)
		c.mu.Unlock()
		c.hits.Add(1)
		c.Put(key, a)
		return a, true
	}
	c.mu.Unlock()
	c.misses.Add(1)
	return nil, false
}

// Put offers an array to the cache, which takes a reference of its own if
// it keeps it; the caller's reference is untouched. The cache may decline.
func (c *Arrays) Put(key string, a arrow.Array) {
	arrowshare.Settle(a) // Gets share it among goroutines
	a.Retain()
	e := &entry{key: key, a: a}
	c.mu.Lock()
	c.keys[key]++
	c.mu.Unlock()
	if !c.c.Set(key, e, max(util.TotalArraySize(a), 1)) {
		c.gone(e)
		e.release()
	}
}

// Wait blocks until earlier Puts are applied (for tests and benchmarks;
// ristretto applies them asynchronously).
func (c *Arrays) Wait() { c.c.Wait() }

// Close releases every cached array.
func (c *Arrays) Close() {
	c.c.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.win {
		c.dropWindow(k)
	}
}

// Stats are the cache's counters.
type Stats struct {
	Hits, Misses int64
	Bytes        int64 // buffer bytes held now (Arrays)
	Refused      int64 // entries not kept for their Budget (Rows)
}

// Stats reports hits, misses and the bytes held.
func (c *Arrays) Stats() Stats {
	var bytes int64
	c.c.IterValues(func(e *entry) bool {
		e.mu.Lock()
		if !e.dead {
			bytes += util.TotalArraySize(e.a)
		}
		e.mu.Unlock()
		return false
	})
	c.mu.Lock()
	bytes += c.winBytes
	c.mu.Unlock()
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Bytes: bytes}
}
