package cache

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func ints(mem memory.Allocator, n int, base int64) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range n {
		b.Append(base + int64(i))
	}
	return b.NewArray()
}

func TestArraysGetPut(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c, err := NewArrays(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	a := ints(mem, 100, 7)
	c.Put("f/0/0", a)
	a.Release() // the cache holds its own reference
	c.Wait()
	got, ok := c.Get("f/0/0")
	if !ok {
		t.Fatal("miss after Put and Wait")
	}
	if v := got.(*array.Int64).Value(99); v != 106 {
		t.Fatalf("value %d, want 106", v)
	}
	got.Release()
	if _, ok := c.Get("other"); ok {
		t.Fatal("hit for a key never put")
	}
	if s := c.Stats(); s.Hits != 1 || s.Misses != 1 || s.Bytes == 0 {
		t.Fatalf("stats %+v", s)
	}
	c.Close()
}

// TestArraysEvictionKeepsReadersSafe: under a budget far below the data
// put, arrays are evicted (and released) while readers still use arrays
// they got; values stay intact and nothing leaks once all are released.
func TestArraysEvictionKeepsReadersSafe(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c, err := NewArrays(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range 500 {
				k := rng.IntN(50)
				key := fmt.Sprint(k)
				if got, ok := c.Get(key); ok {
					if v := got.(*array.Int64).Value(0); v != int64(k)*1000 {
						t.Errorf("key %d holds %d", k, v)
					}
					got.Release()
					continue
				}
				a := ints(mem, 1000, int64(k)*1000)
				c.Put(key, a)
				a.Release()
			}
		}()
	}
	wg.Wait()
	c.Wait()
	if s := c.Stats(); s.Bytes > 64<<10 {
		t.Fatalf("cache holds %d bytes over its 64 KiB budget", s.Bytes)
	}
	c.Close()
}

// TestArraysForget: Forget removes the entries whose keys start with the
// prefix, and only those, releasing their arrays at once (the allocator
// then holds only the others); a key put again keeps its new entry when
// the old one goes (or the new one, put before the old was applied);
// Forget of a prefix nothing has is a no-op.
func TestArraysForget(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c, err := NewArrays(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put := func(key string, base int64) {
		a := ints(mem, 100, base)
		c.Put(key, a)
		a.Release()
	}
	put("db/t/bucket-0/data-1#0#0", 1)
	put("db/t/bucket-0/data-1#0#1", 2)
	put("db/t/bucket-0/data-2#0#0", 3)
	put("db/t2/bucket-0/data-1#0#0", 4)
	put("db/t2/bucket-0/data-1#0#0", 5) // again, maybe before the first is applied: one entry stays
	c.Wait()
	one := mem.CurrentAlloc() / 4
	c.Forget("db/t/bucket-0/data-1#")
	c.Forget("db/none/")
	c.Wait()
	hit := func(key string) bool {
		a, ok := c.Get(key)
		if ok {
			a.Release()
		}
		return ok
	}
	if hit("db/t/bucket-0/data-1#0#0") || hit("db/t/bucket-0/data-1#0#1") || !hit("db/t/bucket-0/data-2#0#0") || !hit("db/t2/bucket-0/data-1#0#0") {
		t.Fatal("Forget of one file's prefix removed other entries or kept its own")
	}
	if got := mem.CurrentAlloc(); got != 2*one {
		t.Fatalf("allocator holds %d bytes after forgetting 2 of 4 arrays of %d", got, one)
	}
	// Several prefixes at once, some nested in others, one matching
	// nothing: a nested one sorting between an outer one and a key must
	// not hide the outer one's match (db/t/bucket-0/data-0# before
	// db/t/bucket-0/data-2#).
	c.Forget("db/t2/bucket-0/data-1#", "db/t/", "db/t/a#", "db/t/bucket-0/data-0#", "db/t2/", "db/a/")
	c.Wait()
	if hit("db/t2/bucket-0/data-1#0#0") || hit("db/t/bucket-0/data-2#0#0") || mem.CurrentAlloc() != 0 {
		t.Fatalf("after forgetting every table: %d bytes held", mem.CurrentAlloc())
	}
	if c.mu.Lock(); len(c.keys) != 0 {
		t.Errorf("%d keys left in the index", len(c.keys))
	}
	c.mu.Unlock()
}

// TestArraysWindow: in a full cache of chunks read three times each,
// ristretto's admission turns away new chunks read once; the window keeps
// them, so a second scan of fewer new chunks than the window holds finds
// them (without it, the second and third passes found none of 100). The
// cache never holds more than its budget, reads in the window move chunks
// into ristretto within some passes, and Forget and Close release the
// window's arrays.
func TestArraysWindow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const chunk = 8000 // int64 values: 64,000 bytes
	budget := int64(200 * 64_000)
	c, err := NewArrays(budget)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := func(key string) bool {
		if g, ok := c.Get(key); ok {
			g.Release()
			return true
		}
		a := ints(mem, chunk, 0)
		c.Put(key, a)
		a.Release()
		return false
	}
	for i := range 400 { // twice the budget of old chunks, each read 3 times
		for range 3 {
			read(fmt.Sprintf("old/%d", i))
			c.Wait()
		}
	}
	held := func() int64 {
		s := c.Stats()
		if s.Bytes > budget+64_000 || int64(mem.CurrentAlloc()) > budget+64_000 {
			t.Fatalf("cache holds %d bytes (allocator %d), budget %d", s.Bytes, mem.CurrentAlloc(), budget)
		}
		return s.Bytes
	}
	held()
	const n = 40 // the window holds 50
	for pass := range 4 {
		hits := 0
		for i := range n {
			if read(fmt.Sprintf("new/%d", i)) {
				hits++
			}
		}
		c.Wait()
		held()
		// Later reads find at least half (all when run alone; ristretto
		// counts reads through lossy buffers, so under -race it admits
		// some new chunks at once and may pick them as its next victims,
		// which it drops rather than windows: CI check 18 found 27 of 40
		// under -race).
		if pass == 0 && hits != 0 || pass > 0 && hits < n/2 {
			t.Fatalf("pass %d: %d of %d new chunks found", pass, hits, n)
		}
	}
	// ristretto counts reads in stripes of 64 and drops stripes when its
	// policy goroutine lags, so how many reads it takes to admit a chunk
	// depends on load; every read from the window offers the chunk again.
	inWindow := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.win)
	}
	const maxPasses = 40
	passes := 4
	for ; passes < maxPasses && inWindow() == n; passes++ {
		for i := range n {
			read(fmt.Sprintf("new/%d", i))
		}
		c.Wait()
		held()
	}
	if inWindow() == n {
		t.Errorf("after %d reads all %d new chunks are still in the window, none admitted", passes, n)
	}
	c.Forget("new/")
	c.Wait()
	c.mu.Lock()
	for k := range c.win {
		if strings.HasPrefix(k, "new/") {
			t.Errorf("%s in the window after Forget", k)
		}
	}
	c.mu.Unlock()
	for i := range n {
		if g, ok := c.Get(fmt.Sprintf("new/%d", i)); ok {
			g.Release()
			t.Fatalf("new/%d found after Forget", i)
		}
	}
}
