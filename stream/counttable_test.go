package stream

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

// get returns the count of k.
func (t *countTable) get(k int64) int64 {
	if t.slots == nil {
		return 0
	}
	mask := len(t.slots) - 1
	for s := t.home(k); ; s = (s + 1) & mask {
		if sl := t.slots[s]; sl.count == 0 || sl.key == k {
			return sl.count
		}
	}
}

var countTableSeed = flag.Uint64("counttable.seed", 0, "seed of TestCountTableModel (0: the clock)")

// TestCountTableModel holds a countTable to a map under random adds and
// removals over few values (long runs, wrap-around, many deletions), for
// several table seeds: every count, the number of values and the values
// listed agree after every step.
func TestCountTableModel(t *testing.T) {
	seed := *countTableSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-counttable.seed)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for round := range 40 {
		tab := &countTable{seed: rng.Uint64() | 1}
		model := map[int64]int64{}
		space := int64(1 + rng.IntN(300))
		for step := range 3000 {
			k := rng.Int64N(space)
			if rng.IntN(4) == 0 {
				k = -k << 40 // spread over the hash's bits too
			}
			d := int64(1)
			switch rng.IntN(5) {
			case 0, 1:
				d = -1
			case 2:
				d = int64(rng.IntN(7)) - 3
				if d == 0 {
					d = 2
				}
			}
			model[k] += d
			if model[k] == 0 {
				delete(model, k)
			}
			if got := tab.add(k, d); got != model[k] {
				t.Fatalf("round %d step %d: add(%d, %d) = %d, want %d", round, step, k, d, got, model[k])
			}
			if tab.n != len(model) {
				t.Fatalf("round %d step %d: %d values, want %d", round, step, tab.n, len(model))
			}
			if step%100 == 99 {
				for mk, mn := range model {
					if got := tab.get(mk); got != mn {
						t.Fatalf("round %d step %d: get(%d) = %d, want %d", round, step, mk, got, mn)
					}
				}
				seen := 0
				tab.each(func(k, n int64) {
					seen++
					if model[k] != n {
						t.Fatalf("round %d step %d: each gave %d: %d, want %d", round, step, k, n, model[k])
					}
				})
				if seen != len(model) {
					t.Fatalf("round %d step %d: each gave %d values, want %d", round, step, seen, len(model))
				}
			}
		}
		if got := tab.get(space + 1); got != 0 {
			t.Fatalf("round %d: an absent value counts %d", round, got)
		}
	}
}

// BenchmarkCountTable adds values one by one, as q16's count(DISTINCT
// bidder) does: mostly repeats of values already counted.
func BenchmarkCountTable(b *testing.B) {
	keys := make([]int64, 1<<16)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		keys[i] = 1000 + rng.Int64N(50_000)
	}
	b.Run("table", func(b *testing.B) {
		var tab countTable
		for i := range b.N {
			tab.add(keys[i&(len(keys)-1)], 1)
		}
	})
	b.Run("map", func(b *testing.B) {
		m := map[int64]int64{}
		for i := range b.N {
			bump(m, keys[i&(len(keys)-1)], 1)
		}
	})
}
