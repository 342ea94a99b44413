package stream

import (
	"bytes"
	"fmt"
	"testing"
)

// top1Parts against a map: random rows set, flushed and removed across
// enough bytes that the arena drops and reuses chunks and compacts; after
// each step every partition's row and emitted row are the model's, what
// the parts account matches what they hold, and the arena's live bytes
// are the parts' bytes.
func TestTop1Parts(t *testing.T) {
	rng := seeded(t)
	tp := newTop1Parts()
	type part struct{ row, emitted string }
	model := map[string]part{}
	keys := 50 + rng.Intn(500)
	var compactions int
	for step := range 20_000 {
		k := []byte(fmt.Sprint("k", rng.Intn(keys)))
		if rng.Intn(20) == 0 {
			k = k[:0] // a top-N without PARTITION BY keys its one partition so
		}
		m, ok := model[string(k)]
		switch x := rng.Intn(10); {
		case x < 5:
			row := make([]byte, 1+rng.Intn(4000))
			rng.Read(row)
			i, added := tp.lookup(k)
			if added == ok {
				t.Fatalf("step %d: key %q added %v, held %v", step, k, added, ok)
			}
			keyLen := rng.Intn(len(row) + 1)
			tp.setRow(i, row, keyLen)
			if got := tp.parts[i].rowKeyLen; got != uint32(keyLen) {
				t.Fatalf("step %d: key length %d, want %d", step, got, keyLen)
			}
			m.row = string(row)
			model[string(k)] = m
		case x < 8 && ok:
			i, _ := tp.lookup(k)
			tp.flushed(i)
			m.emitted = m.row
			model[string(k)] = m
		case ok:
			i, _ := tp.lookup(k)
			tp.remove(i)
			delete(model, string(k))
		}
		garbage := tp.arena.garbage
		tp.compact()
		if tp.arena.garbage < garbage {
			compactions++
		}
		if tp.n != len(model) {
			t.Fatalf("step %d: %d parts, want %d", step, tp.n, len(model))
		}
		if step%5 != 0 {
			continue
		}
		var live, held int64
		for k, m := range model {
			i, added := tp.lookup([]byte(k))
			p := tp.parts[i]
			if added || !bytes.Equal(tp.bytes(p.key), []byte(k)) || string(tp.bytes(p.row)) != m.row || string(tp.bytes(p.emitted)) != m.emitted {
				t.Fatalf("step %d: part %q holds other bytes than the model's (added %v)", step, k, added)
			}
			live += int64(len(k) + len(m.row))
			if p.emitted != p.row {
				live += int64(len(m.emitted))
			}
			held += tp.partBytes(i)
		}
		if live != tp.arena.liveBytes || held != live+top1PartBytes*int64(len(model)) {
			t.Fatalf("step %d: the arena holds %d live bytes, the parts account %d, the model %d", step, tp.arena.liveBytes, held, live)
		}
	}
	if compactions == 0 {
		t.Fatal("the arena never compacted")
	}
	t.Logf("%d keys; %d compactions; %d chunks, %d of them dropped", keys, compactions, len(tp.arena.chunks), len(tp.arena.free))
}
