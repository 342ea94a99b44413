package cache

import (
	"flag"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the random tests (0: from the clock)")

func testSeed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", s, s)
	return s
}

// TestRowsBoundAndDeletes: under random sets (random costs, entries
// re-set), deletes and clears from concurrent goroutines, the entries held
// never cost more than the bound plus one entry, a deleted or cleared
// hash is gone until set again, and an entry read is the one last set.
func TestRowsBoundAndDeletes(t *testing.T) {
	seed := testSeed(t)
	const maxCost, maxEntry = 1000, 60
	c, err := NewRows[int](maxCost, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			// Hashes of goroutine g are 3k+g: each one's model is its own.
			costs := map[uint64]int64{}
			for range 3000 {
				h := uint64(3*r.IntN(200) + g)
				switch op := r.IntN(10); {
				case op < 6:
					cost := 1 + r.Int64N(maxEntry)
					c.SetBatch(func(set Setter[int]) { set(h, Ref[int]{Seg: int(h), Row: int32(cost)}, cost) })
					costs[h] = cost
				case op < 8:
					c.Del(h)
					delete(costs, h)
					c.GetBatch([]uint64{h}, []bool{false}, func(int, Ref[int]) bool {
						t.Errorf("hash %d read after its Del", h)
						return true
					})
				default:
					hs := make([]uint64, 20)
					for i := range hs {
						hs[i] = uint64(3*r.IntN(200) + g)
					}
					c.GetBatch(hs, make([]bool, len(hs)), func(i int, ref Ref[int]) bool {
						if ref.Seg != int(hs[i]) || int64(ref.Row) != costs[hs[i]] {
							t.Errorf("hash %d: read %+v, last set cost %d", hs[i], ref, costs[hs[i]])
						}
						return true
					})
				}
			}
		}()
	}
	wg.Wait()
	all := make([]uint64, 600)
	for i := range all {
		all[i] = uint64(i)
	}
	var held int64
	c.GetBatch(all, make([]bool, len(all)), func(_ int, ref Ref[int]) bool {
		held += int64(ref.Row) // the entry's cost
		return true
	})
	if held > maxCost+maxEntry {
		t.Fatalf("entries held cost %d, the bound is %d", held, maxCost)
	}
	if held == 0 {
		t.Fatal("nothing held")
	}
	c.Clear()
	c.GetBatch(all, make([]bool, len(all)), func(i int, _ Ref[int]) bool {
		t.Fatalf("hash %d read after Clear", all[i])
		return true
	})
}

// TestRowsExpire: an entry is not read after its ttl; one set again with
// its Expires keeps it.
func TestRowsExpire(t *testing.T) {
	c, err := NewRows[int](100, 0, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	var exp int64
	c.SetBatch(func(set Setter[int]) { set(1, Ref[int]{Seg: 1}, 1) })
	c.GetBatch([]uint64{1}, []bool{false}, func(_ int, ref Ref[int]) bool { exp = ref.Expires; return true })
	if exp == 0 {
		t.Fatal("no expiry set")
	}
	c.SetBatch(func(set Setter[int]) { set(1, Ref[int]{Seg: 1, Expires: exp}, 1) })
	for time.Now().UnixNano() <= exp {
		time.Sleep(time.Millisecond)
	}
	c.GetBatch([]uint64{1}, []bool{false}, func(int, Ref[int]) bool {
		t.Fatal("read after its ttl")
		return true
	})
}

// TestRowsSharedBudget: caches bounded alone far above a shared budget
// (by entries only, as a request's lookup.partial-cache.max-rows makes
// one) set, delete, clear and close at random from concurrent goroutines.
// The budget is never passed, a read entry is the one last set (a set the
// budget refused leaves no older entry of its key behind), every cache
// kept entries, and once all are closed the budget is whole again.
func TestRowsSharedBudget(t *testing.T) {
	seed := testSeed(t)
	const limit, maxEntry = 5000, 90
	b := NewBudget(limit)
	var wg sync.WaitGroup
	var refused [4]int64
	var maxUsed atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			newCache := func() *Rows[int] {
				c, err := NewRows[int](0, 1<<40, 0, b)
				if err != nil {
					panic(err)
				}
				return c
			}
			c := newCache()
			last := map[uint64]int64{}
			kept := false
			for range 4000 {
				h := uint64(r.IntN(300))
				switch op := r.IntN(200); {
				case op < 140:
					cost := 1 + r.Int64N(maxEntry)
					c.SetBatch(func(set Setter[int]) { set(h, Ref[int]{Seg: int(h), Row: int32(cost)}, cost) })
					last[h] = cost
				case op < 150:
					c.Del(h)
					delete(last, h)
				case op == 150:
					c.Clear()
					clear(last)
				case op == 151:
					refused[g] += c.Stats().Refused
					c.Close()
					c, last = newCache(), map[uint64]int64{}
				default:
					hs := make([]uint64, 20)
					for i := range hs {
						hs[i] = uint64(r.IntN(300))
					}
					c.GetBatch(hs, make([]bool, len(hs)), func(i int, ref Ref[int]) bool {
						if want, ok := last[hs[i]]; !ok || int64(ref.Row) != want {
							t.Errorf("goroutine %d hash %d: read cost %d, last set %d (set: %v)", g, hs[i], ref.Row, want, ok)
						}
						kept = true
						return true
					})
				}
				u := b.used.Load()
				if u > limit || u < 0 {
					t.Errorf("budget used %d of %d", u, limit)
				}
				for m := maxUsed.Load(); u > m && !maxUsed.CompareAndSwap(m, u); m = maxUsed.Load() {
				}
			}
			refused[g] += c.Stats().Refused
			if !kept {
				t.Errorf("goroutine %d: its caches kept nothing (refused %d, budget used %d)", g, refused[g], b.used.Load())
			}
			c.Close()
		}()
	}
	wg.Wait()
	if u := b.used.Load(); u != 0 {
		t.Fatalf("all caches closed, the budget still has %d bytes taken", u)
	}
	t.Logf("the budget refused %d entries; at most %d of %d bytes used", refused[0]+refused[1]+refused[2]+refused[3], maxUsed.Load(), limit)
	if maxUsed.Load() < limit/2 {
		t.Fatalf("at most %d of the budget's %d bytes used: the test did not reach it", maxUsed.Load(), limit)
	}
}

// TestNilBudget: no budget bounds nothing.
func TestNilBudget(t *testing.T) {
	var b *Budget
	if !b.take(1<<62) || b.share() != 0 || NewBudget(0) != nil {
		t.Fatal("a nil budget must take anything and report nothing")
	}
	b.give(5)
}
