package cache

import (
	"fmt"
	"math/rand/v2"
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
