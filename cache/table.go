package cache

import "math/bits"

// rowTable is one generation of Rows: an open-addressing hash table by
// 64-bit hash, linear probing, deletion by shifting the rest of a run back
// (no tombstones). Against a Go map it reads one slot array (a large
// cache's read is one memory miss per key, the map's several) and stores
// the hash itself as the key. Not safe for concurrent use (Rows locks).
type rowTable[S any] struct {
	slots []rowSlot[S] // a power of two of them
	shift uint         // 64 - log2(len(slots))
	n     int          // used slots
}

// rowSlot is 32 bytes (with a pointer segment): row1 is the entry's row
// plus one, 0 in an empty slot.
type rowSlot[S any] struct {
	h       uint64
	seg     S
	expires int64
	row1    int32
}

func (s *rowSlot[S]) used() bool { return s.row1 != 0 }

func (s *rowSlot[S]) entry() rowEntry[S] {
	return rowEntry[S]{seg: s.seg, row: s.row1 - 1, expires: s.expires}
}

// newRowTable makes a table for about n entries.
func newRowTable[S any](n int) *rowTable[S] {
	size := 8
	for size*3/4 < n {
		size *= 2
	}
	return &rowTable[S]{slots: make([]rowSlot[S], size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
}

// home is the slot where probing for h starts: Fibonacci hashing takes the
// high bits, so hashes that differ only in their high bits (a one-column
// integer key's hash is the key times an odd constant) still spread.
func (t *rowTable[S]) home(h uint64) int { return int((h * 0x9E3779B97F4A7C15) >> t.shift) }

func (t *rowTable[S]) get(h uint64) (rowEntry[S], bool) {
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.used() {
			return rowEntry[S]{}, false
		}
		if s.h == h {
			return s.entry(), true
		}
	}
}

func (t *rowTable[S]) put(h uint64, e rowEntry[S]) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.h == h || !s.used() {
			if !s.used() {
				t.n++
			}
			*s = rowSlot[S]{h: h, seg: e.seg, expires: e.expires, row1: e.row + 1}
			return
		}
	}
}

func (t *rowTable[S]) grow() {
	old := t.slots
	*t = *newRowTable[S](len(old))
	for i := range old {
		if old[i].used() {
			t.put(old[i].h, old[i].entry())
		}
	}
}

// del removes h's entry: the entries after it in its run that may sit
// earlier (their home is not between the hole and them) move into the hole.
func (t *rowTable[S]) del(h uint64) {
	mask := len(t.slots) - 1
	i := t.home(h)
	for ; ; i = (i + 1) & mask {
		if !t.slots[i].used() {
			return
		}
		if t.slots[i].h == h {
			break
		}
	}
	for j := (i + 1) & mask; t.slots[j].used(); j = (j + 1) & mask {
		// k stays when its home lies cyclically in (i, j].
		if k := t.home(t.slots[j].h); (j-k)&mask < (j-i)&mask {
			continue
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = rowSlot[S]{}
	t.n--
}
