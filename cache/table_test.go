package cache

import (
	"math/rand/v2"
	"testing"
)

// TestRowTableMatchesMap: random puts, overwrites, gets and deletes of
// hashes drawn to collide (small integers, multiples of a power of two,
// a few random ones) give what a Go map gives, through growth and
// deletions in the middle of runs, and the table counts its entries.
func TestRowTableMatchesMap(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	pool := make([]uint64, 0, 600)
	for i := range 200 {
		pool = append(pool, uint64(i), uint64(i)<<40, r.Uint64())
	}
	tbl := newRowTable[int](0)
	model := map[uint64]int{}
	check := func(step int) {
		if tbl.n != len(model) {
			t.Fatalf("step %d: table holds %d entries, the map %d", step, tbl.n, len(model))
		}
		for _, h := range pool {
			e, ok := tbl.get(h)
			want, wok := model[h]
			if ok != wok || ok && e.seg != want {
				t.Fatalf("step %d: hash %#x: table (%d, %v), map (%d, %v)", step, h, e.seg, ok, want, wok)
			}
		}
	}
	for step := range 20000 {
		h := pool[r.IntN(len(pool))]
		switch r.IntN(3) {
		case 0, 1:
			tbl.put(h, rowEntry[int]{seg: step})
			model[h] = step
		default:
			tbl.del(h)
			delete(model, h)
		}
		if step%97 == 0 {
			check(step)
		}
	}
	check(-1)
	for h := range model {
		tbl.del(h)
	}
	if tbl.n != 0 {
		t.Fatalf("%d entries after deleting all", tbl.n)
	}
}
