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
			c.put(1, i, sec, time.Now())
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
