package vectorized

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestIntTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tb := NewIntTable(0)
	model := map[int64]int32{}
	for i := 0; i < 20000; i++ {
		k := rng.Int64N(5000) - 2500
		if i%7 == 0 {
			k = int64(i) << 40 // spread keys too
		}
		v := int32(i)
		tb.Put(k, v)
		model[k] = v
		q := rng.Int64N(6000) - 3000
		got, ok := tb.Get(q)
		want, wok := model[q]
		if ok != wok || got != want {
			t.Fatalf("Get(%d) = %d,%v want %d,%v", q, got, ok, want, wok)
		}
	}
	if tb.Len() != len(model) {
		t.Fatalf("len %d want %d", tb.Len(), len(model))
	}
}

func BenchmarkIntTable(b *testing.B) {
	keys := make([]int64, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range keys {
		keys[i] = rng.Int64N(1 << 17)
	}
	b.Run("own", func(b *testing.B) {
		for b.Loop() {
			t := NewIntTable(1 << 10)
			for i, k := range keys {
				if _, ok := t.Get(k); !ok {
					t.Put(k, int32(i))
				}
			}
		}
	})
	b.Run("gomap", func(b *testing.B) {
		for b.Loop() {
			m := make(map[int64]int32, 1<<10)
			for i, k := range keys {
				if _, ok := m[k]; !ok {
					m[k] = int32(i)
				}
			}
		}
	})
}

func TestBytesTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tb := NewBytesTable(0)
	model := map[string]int32{}
	key := func(v int64) []byte {
		if v%1000 == 0 {
			return nil // the empty key
		}
		return append(make([]byte, v%3), strconv.FormatInt(v, 36)...)
	}
	for i := 0; i < 20000; i++ {
		k := key(rng.Int64N(50000))
		v := int32(i)
		old, existed := tb.Put(k, v)
		mold, mexisted := model[string(k)]
		if existed != mexisted || old != mold {
			t.Fatalf("Put(%q) = %d,%v want %d,%v", k, old, existed, mold, mexisted)
		}
		model[string(k)] = v
		q := key(rng.Int64N(60000))
		got, ok := tb.Get(q)
		want, wok := model[string(q)]
		if ok != wok || got != want {
			t.Fatalf("Get(%q) = %d,%v want %d,%v", q, got, ok, want, wok)
		}
	}
	if tb.Len() != len(model) {
		t.Fatalf("len %d want %d", tb.Len(), len(model))
	}
}

func BenchmarkBytesTable(b *testing.B) {
	keys := make([][]byte, 1<<18)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%d", rng.Int64N(1<<15)))
	}
	b.Run("own", func(b *testing.B) {
		for b.Loop() {
			t := NewBytesTable(1 << 10)
			for i, k := range keys {
				if _, ok := t.Get(k); !ok {
					t.Put(k, int32(i))
				}
			}
		}
	})
	b.Run("gomap", func(b *testing.B) {
		for b.Loop() {
			m := make(map[string]int32, 1<<10)
			for i, k := range keys {
				if _, ok := m[string(k)]; !ok {
					m[string(k)] = int32(i)
				}
			}
		}
	})
}
