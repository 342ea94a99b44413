package cache

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"
)

// Rows is a bounded cache of immutable values by key (lookup/ keeps rows
// and known-missing keys in it). The bound is in cost units the caller
// chooses per entry: bytes, or 1 per row. Safe for concurrent use.
//
// Sets are applied asynchronously and may be declined; a Del or Clear is
// ordered after every earlier Set once Wait returns, so a caller that
// deletes a changed key and then Waits cannot have a stale value of it
// appear later.
type Rows[V any] struct {
	c            *ristretto.Cache[string, V]
	ttl          time.Duration
	hits, misses atomic.Int64
}

// NewRows makes a cache of at most maxCost; values expire ttl after they
// were set (0: never).
func NewRows[V any](maxCost int64, ttl time.Duration) (*Rows[V], error) {
	if maxCost <= 0 {
		return nil, fmt.Errorf("cache: size must be positive, got %d", maxCost)
	}
	c, err := ristretto.NewCache(&ristretto.Config[string, V]{
		NumCounters:        max(maxCost/8, 1000), // ~10 counters per entry of ~80 units
		MaxCost:            maxCost,
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Rows[V]{c: c, ttl: ttl}, nil
}

// Get returns the value of key, or false.
func (r *Rows[V]) Get(key string) (V, bool) {
	v, ok := r.c.Get(key)
	if ok {
		r.hits.Add(1)
	} else {
		r.misses.Add(1)
	}
	return v, ok
}

// Set offers a value at a cost; the cache may decline it.
func (r *Rows[V]) Set(key string, v V, cost int64) {
	r.c.SetWithTTL(key, v, max(cost, 1), r.ttl)
}

// Del removes key (see Wait).
func (r *Rows[V]) Del(key string) { r.c.Del(key) }

// Clear removes every value.
func (r *Rows[V]) Clear() { r.c.Clear() }

// Wait blocks until earlier Sets and Dels are applied.
func (r *Rows[V]) Wait() { r.c.Wait() }

// Close stops the cache's goroutines.
func (r *Rows[V]) Close() { r.c.Close() }

// Stats reports the hits and misses of Get.
func (r *Rows[V]) Stats() Stats { return Stats{Hits: r.hits.Load(), Misses: r.misses.Load()} }
