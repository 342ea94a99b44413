// Package cache holds flightd's in-memory caches, bounded by cost
// (bytes, or rows).
//
// Arrays caches decoded Arrow arrays (column chunks of data files), so a
// hot table is scanned without decoding Parquet again. The cache owns one
// reference to each array it holds; Get hands out a reference of the
// caller's own, so an array evicted while a reader uses it stays valid
// until the reader releases it. It is built on ristretto.
//
// Rows (rows.go) indexes rows that lookup/ keeps in Arrow columns by a hash
// of their key, in two generations dropped whole, so probing a batch of
// keys costs a map read per key under one read lock.
package cache

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/dgraph-io/ristretto/v2"
)

// Arrays is a byte-bounded cache of decoded arrays. Safe for concurrent use.
type Arrays struct {
	c            *ristretto.Cache[string, *entry]
	hits, misses atomic.Int64

	mu   sync.Mutex
	keys map[string]int // entries put and not yet gone per key, for Forget
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
	a := &Arrays{keys: map[string]int{}}
	c, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		NumCounters:        max(maxBytes/(64<<10), 1000) * 10, // ~10 counters per expected entry of 64 KiB
		MaxCost:            maxBytes,
		BufferItems:        64,
		IgnoreInternalCost: true,
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

// Forget removes every entry whose key starts with prefix: the arrays of
// files that are gone (a dropped table, expired files), which no scan will
// ask for again but which would otherwise hold their bytes until evicted.
func (c *Arrays) Forget(prefix string) {
	c.mu.Lock()
	var keys []string
	for k := range c.keys {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
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
	c.misses.Add(1)
	return nil, false
}

// Put offers an array to the cache, which takes a reference of its own if
// it keeps it; the caller's reference is untouched. The cache may decline.
func (c *Arrays) Put(key string, a arrow.Array) {
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
func (c *Arrays) Close() { c.c.Close() }

// Stats are the cache's counters.
type Stats struct {
	Hits, Misses int64
	Bytes        int64 // buffer bytes held now
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
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Bytes: bytes}
}
