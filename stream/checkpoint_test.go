package stream

import (
	"bytes"
	"testing"
	"time"
)

// TestCheckpointEncoding: a checkpoint loads back as the sections saved,
// for the positions it was taken at only; any byte flipped or cut off
// makes Load fail, so a damaged file is never restored.
func TestCheckpointEncoding(t *testing.T) {
	rng := seeded(t)
	for range 200 {
		c := NewCheckpoints(0)
		n := 1 + rng.Intn(4)
		var want [][]byte
		for range n { // every operator is added before a barrier goes out
			c.kinds = append(c.kinds, []string{"*stream.Source", "*stream.Aggregate", "*stream.Join"}[rng.Intn(3)])
		}
		for i := range n {
			sec := make([]byte, rng.Intn(300))
			for j := range sec {
				sec[j] = byte(rng.Intn(256))
			}
			want = append(want, sec)
			// In pieces, as a StateWriter saves it (some empty).
			var pieces [][]byte
			for rest := sec; ; {
				k := rng.Intn(len(rest) + 1)
				pieces = append(pieces, rest[:k])
				if rest = rest[k:]; len(rest) == 0 {
					break
				}
			}
			c.put(1, i, pieces, time.Now())
		}
		pos := Pos{rng.Int63n(1000), rng.Int63n(1000)}
		pieces, err := c.Encode(1, pos)
		if err != nil {
			t.Fatal(err)
		}
		data := bytes.Join(pieces, nil)
		got := NewCheckpoints(0)
		if err := got.Load(data, pos); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !bytes.Equal(got.restore[i], want[i]) || got.restoreKind[i] != c.kinds[i] {
				t.Fatalf("section %d: %q %x, want %q %x", i, got.restoreKind[i], got.restore[i], c.kinds[i], want[i])
			}
		}
		if err := NewCheckpoints(0).Load(data, Pos{pos[0] + 1, pos[1]}); err == nil {
			t.Fatal("a checkpoint loaded for other positions")
		}
		bad := bytes.Clone(data)
		bad[rng.Intn(len(bad))] ^= byte(1 + rng.Intn(255))
		if err := NewCheckpoints(0).Load(bad, pos); err == nil {
			t.Fatal("a checkpoint with a flipped byte loaded")
		}
		if err := NewCheckpoints(0).Load(data[:rng.Intn(len(data))], pos); err == nil {
			t.Fatal("a cut checkpoint loaded")
		}
	}
}

// TestStateWriterPieces: what a StateWriter writes in pieces (records
// smaller and larger than a piece, across their bounds) reads back whole,
// record by record, from the pieces joined.
func TestStateWriterPieces(t *testing.T) {
	rng := seeded(t)
	w := &StateWriter{}
	var want [][]byte
	var entry []bool
	for range 3000 {
		n := rng.Intn(3000)
		if rng.Intn(500) == 0 {
			n = stateChunk + rng.Intn(stateChunk)
		}
		v := make([]byte, n)
		rng.Read(v)
		want = append(want, v)
		entry = append(entry, rng.Intn(2) == 0)
		if entry[len(entry)-1] {
			w.Entry(string(v[:min(n, 7)]), v)
		} else {
			w.Varint(int64(n))
			w.Bytes(v)
		}
	}
	pieces := w.pieces()
	r := &StateReader{b: bytes.Join(pieces, nil)}
	for i, v := range want {
		m, err := r.Varint()
		if err != nil {
			t.Fatal(err)
		}
		if entry[i] {
			if key, err := r.Bytes(); err != nil || m != 1 || !bytes.Equal(key, v[:min(len(v), 7)]) {
				t.Fatalf("entry %d: mark %d, key %x, %v", i, m, key, err)
			}
		} else if m != int64(len(v)) {
			t.Fatalf("record %d: length %d, want %d", i, m, len(v))
		}
		got, err := r.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, v) {
			t.Fatalf("record %d of %d bytes differs", i, len(v))
		}
	}
	if err := r.end(); err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 3 {
		t.Fatalf("%d pieces: the records did not cross a piece's bound", len(pieces))
	}
}
