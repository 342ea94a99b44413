package vectorized

import "math/bits"

// IntTable maps int64 keys to int32 values with open addressing and linear
// probing: about twice as fast as a Go map for the single-integer-key hash
// joins and aggregations (BenchmarkIntTable).
type IntTable struct {
	keys  []int64
	vals  []int32
	used  []bool
	n     int
	shift uint
}

// NewIntTable returns a table sized for about hint keys.
func NewIntTable(hint int) *IntTable {
	t := &IntTable{}
	t.init(max(16, 1<<bits.Len(uint(hint*2))))
	return t
}

func (t *IntTable) init(capacity int) {
	t.keys = make([]int64, capacity)
	t.vals = make([]int32, capacity)
	t.used = make([]bool, capacity)
	t.shift = uint(64 - bits.TrailingZeros(uint(capacity)))
	t.n = 0
}

func (t *IntTable) slot(k int64) int {
	return int((uint64(k) * 0x9E3779B97F4A7C15) >> t.shift)
}

// Get returns the value of k.
func (t *IntTable) Get(k int64) (int32, bool) {
	mask := len(t.keys) - 1
	for s := t.slot(k); ; s = (s + 1) & mask {
		if !t.used[s] {
			return 0, false
		}
		if t.keys[s] == k {
			return t.vals[s], true
		}
	}
}

// Put sets the value of k.
func (t *IntTable) Put(k int64, v int32) {
	if (t.n+1)*4 > len(t.keys)*3 {
		t.grow()
	}
	mask := len(t.keys) - 1
	for s := t.slot(k); ; s = (s + 1) & mask {
		if !t.used[s] {
			t.used[s], t.keys[s], t.vals[s] = true, k, v
			t.n++
			return
		}
		if t.keys[s] == k {
			t.vals[s] = v
			return
		}
	}
}

// Len returns the number of keys.
func (t *IntTable) Len() int { return t.n }

func (t *IntTable) grow() {
	keys, vals, used := t.keys, t.vals, t.used
	t.init(2 * len(keys))
	for i, u := range used {
		if u {
			t.Put(keys[i], vals[i])
		}
	}
}
