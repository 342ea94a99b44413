package vectorized

import (
	"bytes"
	"hash/maphash"
	"math/bits"
)

// BytesTable maps byte-string keys (KeyEncoder's encoded keys) to int32
// values with open addressing and linear probing. Keys are copied into one
// arena; a slot holds the key's hash, place in the arena and value, so a
// probe compares bytes only on a full hash match. It replaces map[string]int32 on the hash
// join's and aggregation's encoded-key paths (BenchmarkBytesTable).
type BytesTable struct {
	slots []bytesSlot
	arena []byte
	n     int
	shift uint
	seed  maphash.Seed
}

type bytesSlot struct {
	hash     uint64
	off, len int // the key is arena[off:off+len]
	val      int32
	used     bool
}

// NewBytesTable returns a table sized for about hint keys.
func NewBytesTable(hint int) *BytesTable {
	t := &BytesTable{seed: maphash.MakeSeed()}
	t.init(max(16, 1<<bits.Len(uint(hint*2))))
	return t
}

func (t *BytesTable) init(capacity int) {
	t.slots = make([]bytesSlot, capacity)
	t.shift = uint(64 - bits.TrailingZeros(uint(capacity)))
}

// find returns the slot of k (unused if absent) and k's hash.
func (t *BytesTable) find(k []byte) (*bytesSlot, uint64) {
	h := maphash.Bytes(t.seed, k)
	mask := len(t.slots) - 1
	for s := int(h >> t.shift); ; s = (s + 1) & mask {
		sl := &t.slots[s]
		if !sl.used || (sl.hash == h && bytes.Equal(t.arena[sl.off:sl.off+sl.len], k)) {
			return sl, h
		}
	}
}

// Get returns the value of k.
func (t *BytesTable) Get(k []byte) (int32, bool) {
	sl, _ := t.find(k)
	return sl.val, sl.used
}

// Put sets the value of k and returns its previous value, if any.
func (t *BytesTable) Put(k []byte, v int32) (old int32, existed bool) {
	sl, h := t.find(k)
	if sl.used {
		old, sl.val = sl.val, v
		return old, true
	}
	*sl = bytesSlot{hash: h, off: len(t.arena), len: len(k), val: v, used: true}
	t.arena = append(t.arena, k...)
	t.n++
	if t.n*4 > len(t.slots)*3 {
		t.grow()
	}
	return 0, false
}

// Len returns the number of keys.
func (t *BytesTable) Len() int { return t.n }

// grow doubles the slots; hashes are kept, so no key is rehashed.
func (t *BytesTable) grow() {
	old := t.slots
	t.init(2 * len(old))
	mask := len(t.slots) - 1
	for _, sl := range old {
		if !sl.used {
			continue
		}
		s := int(sl.hash >> t.shift)
		for t.slots[s].used {
			s = (s + 1) & mask
		}
		t.slots[s] = sl
	}
}
