package vectorized

import "math/bits"

// IntTable maps int64 keys to int32 values with open addressing and linear
// probing: about twice as fast as a Go map for the single-integer-key hash
// joins and aggregations (BenchmarkIntTable). A slot keeps key, value and
// use flag together so a probe touches one cache line.
type IntTable struct {
	slots []intSlot
	n     int
	shift uint
}

type intSlot struct {
	key  int64
	val  int32
	used bool
}

// NewIntTable returns a table sized for about hint keys.
func NewIntTable(hint int) *IntTable {
	t := &IntTable{}
	t.init(max(16, 1<<bits.Len(uint(hint*2))))
	return t
}

func (t *IntTable) init(capacity int) {
	t.slots = make([]intSlot, capacity)
	t.shift = uint(64 - bits.TrailingZeros(uint(capacity)))
	t.n = 0
}

func (t *IntTable) slot(k int64) int {
	return int((uint64(k) * 0x9E3779B97F4A7C15) >> t.shift)
}

// Get returns the value of k.
func (t *IntTable) Get(k int64) (int32, bool) {
	mask := len(t.slots) - 1
	for s := t.slot(k); ; s = (s + 1) & mask {
		sl := &t.slots[s]
		if !sl.used {
			return 0, false
		}
		if sl.key == k {
			return sl.val, true
		}
	}
}

// OutgrowsCache is BytesTable.OutgrowsCache for an IntTable.
func (t *IntTable) OutgrowsCache() bool { return len(t.slots) >= touchMinSlots }

// Touch is BytesTable.Touch for the keys of an IntTable.
func (t *IntTable) Touch(keys []int64, only []bool) uint64 {
	var sum uint64
	for i, k := range keys {
		if only == nil || only[i] {
			sum += uint64(t.slots[t.slot(k)].key)
		}
	}
	return sum
}

// Put sets the value of k.
func (t *IntTable) Put(k int64, v int32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := len(t.slots) - 1
	for s := t.slot(k); ; s = (s + 1) & mask {
		sl := &t.slots[s]
		if !sl.used {
			*sl = intSlot{key: k, val: v, used: true}
			t.n++
			return
		}
		if sl.key == k {
			sl.val = v
			return
		}
	}
}

// Len returns the number of keys.
func (t *IntTable) Len() int { return t.n }

func (t *IntTable) grow() {
	old := t.slots
	t.init(2 * len(old))
	for _, sl := range old {
		if sl.used {
			t.Put(sl.key, sl.val)
		}
	}
}
