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
func NewBytesTable(hint int) *BytesTable { return NewBytesTableSeed(hint, maphash.MakeSeed()) }

// NewBytesTableSeed is NewBytesTable hashing with seed: tables of one seed
// hash a key alike (Hash), so a key's hash can pick a table and be reused
// to look it up there.
func NewBytesTableSeed(hint int, seed maphash.Seed) *BytesTable {
	t := &BytesTable{seed: seed}
	t.init(max(16, 1<<bits.Len(uint(hint*2))))
	return t
}

func (t *BytesTable) init(capacity int) {
	t.slots = make([]bytesSlot, capacity)
	t.shift = uint(64 - bits.TrailingZeros(uint(capacity)))
}

// Hash returns the hash the table keys k by.
func (t *BytesTable) Hash(k []byte) uint64 { return maphash.Bytes(t.seed, k) }

// find returns the slot of k, whose hash is h (unused if k is absent).
func (t *BytesTable) find(k []byte, h uint64) int {
	mask := len(t.slots) - 1
	for s := int(h >> t.shift); ; s = (s + 1) & mask {
		sl := &t.slots[s]
		if !sl.used || (sl.hash == h && bytes.Equal(t.arena[sl.off:sl.off+sl.len], k)) {
			return s
		}
	}
}

// Spot is where an absent key goes, as Find found it.
type Spot struct {
	slot int
	hash uint64
}

// Find returns the value of k, whose hash is h (Hash(k)), or, when k is
// absent, the spot Insert puts it at: a lookup that may add the key
// hashes and probes once.
func (t *BytesTable) Find(k []byte, h uint64) (int32, bool, Spot) {
	s := t.find(k, h)
	return t.slots[s].val, t.slots[s].used, Spot{s, h}
}

// Insert adds k with value v at the spot Find returned for it; the table
// must not have changed in between.
func (t *BytesTable) Insert(at Spot, k []byte, v int32) {
	t.slots[at.slot] = bytesSlot{hash: at.hash, off: len(t.arena), len: len(k), val: v, used: true}
	t.arena = append(t.arena, k...)
	t.n++
	if t.n*4 > len(t.slots)*3 {
		t.grow()
	}
}

// Get returns the value of k.
func (t *BytesTable) Get(k []byte) (int32, bool) {
	v, ok, _ := t.Find(k, t.Hash(k))
	return v, ok
}

// Put sets the value of k and returns its previous value, if any.
func (t *BytesTable) Put(k []byte, v int32) (old int32, existed bool) {
	old, existed, at := t.Find(k, t.Hash(k))
	if existed {
		t.slots[at.slot].val = v
		return old, true
	}
	t.Insert(at, k, v)
	return 0, false
}

// Len returns the number of keys.
func (t *BytesTable) Len() int { return t.n }

// Each calls f with every key (aliasing the table's arena) and its value,
// in no particular order; f must not change the table.
func (t *BytesTable) Each(f func(k []byte, v int32)) {
	for _, sl := range t.slots {
		if sl.used {
			f(t.arena[sl.off:sl.off+sl.len], sl.val)
		}
	}
}

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

// TouchRows is how many keys ahead of its lookups a caller touches (Touch):
// their slots stay in the L1 cache until looked up.
const TouchRows = 16

// touchMinSlots is the size from which a table outgrows a core's L2 cache
// share; a smaller one stays cached and is not worth touching.
const touchMinSlots = 1 << 15

// OutgrowsCache reports whether the table is big enough for Touch to pay.
func (t *BytesTable) OutgrowsCache() bool { return len(t.slots) >= touchMinSlots }

// Touch loads the home slot of each hash (of those only marks, when only
// is not nil), so that the lookups of the keys that follow find their
// slots in the cache: the loads are independent, so the core overlaps
// their misses, where lookups one at a time each wait for theirs. A big
// table's lookups are cache misses (q23's 1.55M groups, q97's, q65's: a
// quarter of their CPU in find). It returns a value of the loads for the
// caller to keep, so that they are not optimized away.
func (t *BytesTable) Touch(hashes []uint64, only []bool) uint64 {
	var sum uint64
	for i, h := range hashes {
		if only == nil || only[i] {
			sum += t.slots[h>>t.shift].hash
		}
	}
	return sum
}
