package cache

import (
	"sync"
	"sync/atomic"
)

// Budget bounds the bytes several caches hold together. The lookup
// indexes' row caches share one: each is bounded alone, by its table's
// options or its request's, and a client naming new option sets opened a
// new full-table cache per request (thirty took a server from 255 MB to
// 3.3 GB). Each cache sharing it is also held to a fair share (the budget
// over the caches), and one turned away makes the caches over their
// share give back the rest (Rows.shedOver). A nil *Budget bounds nothing.
// Safe for concurrent use.
type Budget struct {
	limit int64
	used  atomic.Int64

	mu     sync.Mutex
	caches map[shedder]struct{}
	n      atomic.Int64 // len(caches)
}

// shedder is a cache sharing a budget.
type shedder interface {
	// shedOver gives back what the cache holds past share.
	shedOver(share int64)
}

// NewBudget makes a budget of limit bytes; limit <= 0 makes none (nil).
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		return nil
	}
	return &Budget{limit: limit, caches: map[shedder]struct{}{}}
}

// take reserves n bytes, unless that would pass the limit.
func (b *Budget) take(n int64) bool {
	if b == nil {
		return true
	}
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// reclaim makes the caches other than self give back what they hold past
// their fair share. A cache sheds by itself only when it sets entries:
// one idle since it held a larger share (fewer caches shared the budget
// then) would keep a newcomer from caching anything. The caller holds no
// cache's lock.
func (b *Budget) reclaim(self shedder) {
	b.mu.Lock()
	others := make([]shedder, 0, len(b.caches))
	for c := range b.caches {
		if c != self {
			others = append(others, c)
		}
	}
	b.mu.Unlock()
	share := b.share()
	for _, c := range others {
		c.shedOver(share)
	}
}

// share is the bytes one of the caches sharing b may hold (0: no bound).
func (b *Budget) share() int64 {
	if b == nil {
		return 0
	}
	return max(b.limit/max(b.n.Load(), 1), 1)
}

func (b *Budget) join(c shedder) {
	if b != nil {
		b.mu.Lock()
		b.caches[c] = struct{}{}
		b.n.Store(int64(len(b.caches)))
		b.mu.Unlock()
	}
}

func (b *Budget) leave(c shedder) {
	if b != nil {
		b.mu.Lock()
		delete(b.caches, c)
		b.n.Store(int64(len(b.caches)))
		b.mu.Unlock()
	}
}

// give returns n bytes taken.
func (b *Budget) give(n int64) {
	if b != nil && n != 0 {
		b.used.Add(-n)
	}
}
