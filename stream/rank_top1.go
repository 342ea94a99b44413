package stream

import (
	"encoding/binary"
	"hash/maphash"
)

// top1Parts holds the partitions of a top1 Rank without a pointer per
// partition, so that the garbage collector does not mark millions of
// them (Nexmark q18 at 5M events holds about four million): a partition
// is a top1Part in one slice, its key and rows are bytes in a top1Arena,
// and an open-addressing table of slice indexes finds it by its key's
// hash. A partition as a struct in a map, with its key, rows and emitted
// row each on the heap, cost five objects, and marking them was a tenth
// of q18's CPU.
type top1Parts struct {
	arena top1Arena
	parts []top1Part
	free  []uint32 // indexes of removed parts, reused first
	// slots: 1 + an index into parts, 0 empty, at the first free slot
	// from its hash on (linear probing); a power of two long, at most
	// three quarters full.
	slots   []uint32
	n       int // parts held
	seed    maphash.Seed
	dirty   []uint32 // parts changed since the last flush
	evictAt int      // the part the next eviction looks at first
}

// top1Part is a partition of a top1 Rank: its one row and the row it
// last emitted, as sort keys (the ORDER BY keys, then the row).
type top1Part struct {
	hash    uint64
	key     arenaRef
	row     arenaRef // none (n 0) until the batch that made the part ends
	emitted arenaRef // none before the first flush; row itself until the row changes
	// rowKeyLen, emKeyLen: the lengths of the ORDER BY keys in row and
	// emitted.
	rowKeyLen, emKeyLen uint32
	pend                int32 // 1 + the index of its row in Rank.pend (0: none)
	dirty, held         bool  // held: not removed
}

// top1PartBytes is what a partition accounts besides its bytes in the
// arena: its top1Part (64 bytes) and its share of slots. The arena's
// garbage is not accounted: compact keeps it under about a third of the
// bytes accounted.
const top1PartBytes = 80

func newTop1Parts() *top1Parts {
	return &top1Parts{seed: maphash.MakeSeed(), slots: make([]uint32, 64)}
}

func (t *top1Parts) bytes(r arenaRef) []byte { return t.arena.bytes(r) }

// find returns the index of the part keyed k, whose hash is h, or the
// slot where it would go and false.
func (t *top1Parts) find(k []byte, h uint64) (uint32, int, bool) {
	mask := len(t.slots) - 1
	for s := int(h) & mask; ; s = (s + 1) & mask {
		i := t.slots[s]
		if i == 0 {
			return 0, s, false
		}
		if p := &t.parts[i-1]; p.hash == h && string(t.arena.bytes(p.key)) == string(k) {
			return i - 1, s, true
		}
	}
}

// lookup returns the index of the part keyed k, adding it (without a
// row) if there is none; added reports that it did.
func (t *top1Parts) lookup(k []byte) (i uint32, added bool) {
	h := maphash.Bytes(t.seed, k)
	i, s, ok := t.find(k, h)
	if ok {
		return i, false
	}
	p := top1Part{hash: h, key: t.arena.add(k), held: true}
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
		t.parts[i] = p
	} else {
		i = uint32(len(t.parts))
		t.parts = append(t.parts, p)
	}
	t.slots[s] = i + 1
	t.n++
	if t.n*4 > len(t.slots)*3 {
		t.rehash(2 * len(t.slots))
	}
	return i, true
}

func (t *top1Parts) rehash(n int) {
	t.slots = make([]uint32, n)
	mask := n - 1
	for i := range t.parts {
		if !t.parts[i].held {
			continue
		}
		s := int(t.parts[i].hash) & mask
		for t.slots[s] != 0 {
			s = (s + 1) & mask
		}
		t.slots[s] = uint32(i) + 1
	}
}

// remove drops part i: its slot is emptied by shifting back the slots
// after it that probing reaches through it (no tombstones).
func (t *top1Parts) remove(i uint32) {
	p := &t.parts[i]
	mask := len(t.slots) - 1
	s := int(p.hash) & mask
	for t.slots[s] != i+1 {
		s = (s + 1) & mask
	}
	for j := s; ; {
		j = (j + 1) & mask
		next := t.slots[j]
		if next == 0 {
			break
		}
		// next may move to s unless its home slot lies cyclically in (s, j].
		home := int(t.parts[next-1].hash) & mask
		if (j > s && (home <= s || home > j)) || (j < s && home <= s && home > j) {
			t.slots[s] = next
			s = j
		}
	}
	t.slots[s] = 0
	t.arena.release(p.key)
	t.arena.release(p.row)
	if p.emitted != p.row {
		t.arena.release(p.emitted)
	}
	*p = top1Part{}
	t.free = append(t.free, i)
	t.n--
}

// partBytes is what part i accounts.
func (t *top1Parts) partBytes(i uint32) int64 {
	p := &t.parts[i]
	n := top1PartBytes + int64(p.key.n) + int64(p.row.n)
	if p.emitted != p.row {
		n += int64(p.emitted.n)
	}
	return n
}

// setRow makes sort (keyLen bytes of ORDER BY keys first) part i's row
// and returns the bytes the state grew by. The row it replaces is kept
// while it is the row last emitted.
func (t *top1Parts) setRow(i uint32, sort []byte, keyLen int) int64 {
	before := t.partBytes(i)
	p := &t.parts[i]
	if p.row != p.emitted {
		t.arena.release(p.row)
	}
	p.row, p.rowKeyLen = t.arena.add(sort), uint32(keyLen)
	return t.partBytes(i) - before
}

// flushed makes part i's row the one it last emitted and returns the
// bytes the state grew by: the row emitted before is dropped.
func (t *top1Parts) flushed(i uint32) int64 {
	p := &t.parts[i]
	var grow int64
	if p.emitted != p.row {
		grow = -int64(p.emitted.n)
		t.arena.release(p.emitted)
	}
	p.emitted, p.emKeyLen = p.row, p.rowKeyLen
	return grow
}

// appendRows appends part i's rows as appendRankRows encodes a
// partition's, for a spill or a checkpoint: its one row, one copy, as
// any top-N saves it.
func (t *top1Parts) appendRows(b []byte, i uint32) []byte {
	return appendRankRow(binary.AppendUvarint(b, 1), t.bytes(t.parts[i].row), 1)
}

// markDirty lists part i for the next flush.
func (t *top1Parts) markDirty(i uint32) {
	if p := &t.parts[i]; !p.dirty {
		p.dirty = true
		t.dirty = append(t.dirty, i)
	}
}

// compact moves the bytes out of the arena's chunks that are mostly
// garbage once garbage is a third of what the parts hold, so that it
// stays within about half of it (a part's replaced rows leave holes).
func (t *top1Parts) compact() {
	a := &t.arena
	if a.garbage < 4*arenaChunk || a.garbage*3 < a.liveBytes {
		return
	}
	sparse := make([]bool, len(a.chunks))
	for c, b := range a.chunks {
		// Chunks at most 7/8 full of live bytes: what stays holds at
		// most a seventh of its live bytes as garbage.
		sparse[c] = c != a.cur && b != nil && a.live[c]*8 <= len(b)*7
	}
	a.compacting = true
	move := func(r arenaRef) arenaRef {
		if r.n == 0 || !sparse[r.chunk] {
			return r
		}
		moved := a.add(a.bytes(r))
		a.release(r)
		return moved
	}
	for i := range t.parts {
		p := &t.parts[i]
		if !p.held {
			continue
		}
		shared := p.emitted == p.row
		p.key, p.row = move(p.key), move(p.row)
		if shared {
			p.emitted = p.row
		} else {
			p.emitted = move(p.emitted)
		}
	}
	a.compacting = false
}

// top1Arena holds byte strings in chunks of about arenaChunk bytes, a
// string never across two: a chunk none of whose bytes are referenced
// any more is dropped.
type top1Arena struct {
	chunks    [][]byte
	live      []int    // per chunk, the bytes referenced
	free      []uint32 // indexes of dropped chunks, reused first
	cur       int      // the chunk strings are appended to
	liveBytes int64
	garbage   int64 // bytes released in chunks not dropped
	// compacting: dropped chunks' indexes are not reused, as compact
	// tells chunks apart by index.
	compacting bool
}

// arenaRef is a string in a top1Arena: n bytes at off in a chunk.
type arenaRef struct{ chunk, off, n uint32 }

const arenaChunk = 256 << 10

func (a *top1Arena) add(b []byte) arenaRef {
	if len(b) == 0 {
		return arenaRef{} // in no chunk, which may be dropped
	}
	if len(a.chunks) == 0 || len(a.chunks[a.cur])+len(b) > cap(a.chunks[a.cur]) {
		a.newChunk(max(arenaChunk, len(b)))
	}
	c := a.chunks[a.cur]
	a.chunks[a.cur] = append(c, b...)
	a.live[a.cur] += len(b)
	a.liveBytes += int64(len(b))
	return arenaRef{chunk: uint32(a.cur), off: uint32(len(c)), n: uint32(len(b))}
}

func (a *top1Arena) newChunk(size int) {
	if len(a.chunks) > 0 && a.live[a.cur] == 0 {
		a.drop(a.cur)
	}
	b := make([]byte, 0, size)
	if n := len(a.free); n > 0 && !a.compacting {
		a.cur, a.free = int(a.free[n-1]), a.free[:n-1]
		a.chunks[a.cur], a.live[a.cur] = b, 0
		return
	}
	a.cur = len(a.chunks)
	a.chunks, a.live = append(a.chunks, b), append(a.live, 0)
}

func (a *top1Arena) bytes(r arenaRef) []byte {
	if r.n == 0 {
		return nil
	}
	return a.chunks[r.chunk][r.off : r.off+r.n : r.off+r.n]
}

// release marks r's bytes garbage (nothing for an empty r).
func (a *top1Arena) release(r arenaRef) {
	if r.n == 0 {
		return
	}
	c := int(r.chunk)
	a.live[c] -= int(r.n)
	a.liveBytes -= int64(r.n)
	a.garbage += int64(r.n)
	if a.live[c] == 0 && c != a.cur {
		a.drop(c)
	}
}

func (a *top1Arena) drop(c int) {
	a.garbage -= int64(len(a.chunks[c]))
	a.chunks[c] = nil
	a.free = append(a.free, uint32(c))
}
