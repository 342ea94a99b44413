package stream

import (
	"bytes"
	"fmt"
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
		for range n { // every operator is added before a barrier goes out
			c.kinds = append(c.kinds, []string{"*stream.Source", "*stream.Aggregate", "*stream.Join"}[rng.Intn(3)])
			c.deltaOps = append(c.deltaOps, false)
		}
		var want [][]byte
		for i := range n {
			w := &StateWriter{}
			sec := make([]byte, rng.Intn(300))
			rng.Read(sec)
			w.Bytes(sec)
			want = append(want, sec)
			c.put(1, i, savedState{pieces: w.pieces()}, time.Now())
		}
		pos := Pos{rng.Int63n(1000), rng.Int63n(1000)}
		pieces, err := c.Encode(1, pos)
		if err != nil {
			t.Fatal(err)
		}
		data := bytes.Join(pieces, nil)
		read := func(b []byte) func(int64) ([]byte, error) {
			return func(int64) ([]byte, error) { return b, nil }
		}
		got := NewCheckpoints(0)
		if err := got.Load(7, pos, read(data)); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			sec, err := got.restore[i].Bytes()
			if err != nil || !bytes.Equal(sec, want[i]) || got.restoreKind[i] != c.kinds[i] || got.restore[i].end() != nil {
				t.Fatalf("section %d: %q %x, want %q %x (%v)", i, got.restoreKind[i], sec, c.kinds[i], want[i], err)
			}
		}
		if got.ChainStart() != 7 {
			t.Fatalf("a base's chain starts at %d, want its own snapshot 7", got.ChainStart())
		}
		if err := NewCheckpoints(0).Load(7, Pos{pos[0] + 1, pos[1]}, read(data)); err == nil {
			t.Fatal("a checkpoint loaded for other positions")
		}
		bad := bytes.Clone(data)
		bad[rng.Intn(len(bad))] ^= byte(1 + rng.Intn(255))
		if err := NewCheckpoints(0).Load(7, pos, read(bad)); err == nil {
			t.Fatal("a checkpoint with a flipped byte loaded")
		}
		if err := NewCheckpoints(0).Load(7, pos, read(data[:rng.Intn(len(data))])); err == nil {
			t.Fatal("a cut checkpoint loaded")
		}
	}
}

// TestStateWriterPieces: what a StateWriter writes in pieces (records
// and keyed states' entries, smaller and larger than a piece, across
// their bounds) reads back whole, record by record, from the pieces
// joined.
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
			if len(entry) > 1 && entry[len(entry)-2] {
				w.EndEntries()
			}
			w.Varint(int64(n))
			w.Bytes(v)
		}
	}
	if entry[len(entry)-1] {
		w.EndEntries()
	}
	if w.err != nil {
		t.Fatal(w.err)
	}
	pieces := w.pieces()
	r, err := newSectionReader([][]byte{bytes.Join(pieces, nil)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(want); i++ {
		if entry[i] {
			// A run of entries: one keyed state.
			j := i
			err := r.Entries(func(key string, got []byte) error {
				if v := want[j]; !entry[j] || key != string(v[:min(len(v), 7)]) || !bytes.Equal(got, v) {
					return fmt.Errorf("entry %d: key %x", j, key)
				}
				j++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			i = j - 1
			continue
		}
		m, err := r.Varint()
		if err != nil || m != int64(len(want[i])) {
			t.Fatalf("record %d: length %d, want %d (%v)", i, m, len(want[i]), err)
		}
		got, err := r.Bytes()
		if err != nil || !bytes.Equal(got, want[i]) {
			t.Fatalf("record %d of %d bytes differs (%v)", i, len(want[i]), err)
		}
	}
	if err := r.end(); err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 3 {
		t.Fatalf("%d pieces: the records did not cross a piece's bound", len(pieces))
	}
}
