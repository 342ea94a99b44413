package stream

import (
	"math/bits"
	"math/rand/v2"
)

// countTable counts int64 values: open addressing with linear probing, a
// slot free while its count is 0. A value whose count returns to 0 leaves
// by backward-shift deletion, so probes need no tombstones. One probe
// reads and updates a count, where a Go map takes two (the read and the
// write): count(DISTINCT) over integers, q16's main cost.
type countTable struct {
	slots []countSlot
	n     int
	shift uint
	// seed is mixed into every hash and drawn per table (at the first
	// add when 0), so where a value lands depends on a number no client
	// sees; no test measures probe lengths under values chosen to collide.
	seed uint64
}

type countSlot struct{ key, count int64 }

func (t *countTable) init(capacity int) {
	t.slots = make([]countSlot, capacity)
	t.shift = uint(64 - bits.TrailingZeros(uint(capacity)))
}

// home is k's first slot: murmur3's 64-bit finalizer of k and the seed,
// whose top bits depend on every bit of k.
func (t *countTable) home(k int64) int {
	h := uint64(k) ^ t.seed
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return int(h >> t.shift)
}

// add adds d (not 0: a slot of count 0 is free) to the count of k and
// returns the new count.
func (t *countTable) add(k, d int64) int64 {
	if t.slots == nil {
		for t.seed == 0 {
			t.seed = rand.Uint64()
		}
		t.init(16)
	}
	mask := len(t.slots) - 1
	for s := t.home(k); ; s = (s + 1) & mask {
		sl := &t.slots[s]
		if sl.count == 0 {
			*sl = countSlot{k, d}
			t.n++
			if t.n*4 > len(t.slots)*3 {
				t.grow()
			}
			return d
		}
		if sl.key == k {
			n := sl.count + d
			sl.count = n
			if n == 0 {
				t.remove(s)
			}
			return n
		}
	}
}

// remove frees slot i, moving back each later slot of its run that may not
// stay past the gap (its home is not cyclically in (gap, slot]).
func (t *countTable) remove(i int) {
	t.n--
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j].count != 0; j = (j + 1) & mask {
		h := t.home(t.slots[j].key)
		stays := h > i && h <= j
		if i > j { // the run wrapped around the end
			stays = h > i || h <= j
		}
		if !stays {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = countSlot{}
}

func (t *countTable) grow() {
	old := t.slots
	t.init(2 * len(old))
	mask := len(t.slots) - 1
	for _, sl := range old {
		if sl.count == 0 {
			continue
		}
		s := t.home(sl.key)
		for t.slots[s].count != 0 {
			s = (s + 1) & mask
		}
		t.slots[s] = sl
	}
}

// each calls f with every value and its count, in no particular order.
func (t *countTable) each(f func(k, n int64)) {
	for _, sl := range t.slots {
		if sl.count != 0 {
			f(sl.key, sl.count)
		}
	}
}
