package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkRowsGetBatch measures GetBatch of 1,000 random hashes of n
// cached entries (hashes as lookup makes them for a one-column integer
// key), all hits: with many entries each read is a memory miss.
func BenchmarkRowsGetBatch(b *testing.B) {
	for _, n := range []int{1000, 1 << 20} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			c, err := NewRows[*int](int64(4*n), 0, 0, nil)
			if err != nil {
				b.Fatal(err)
			}
			seg := new(int)
			hash := func(k int) uint64 { return uint64(k) * 0x9E3779B97F4A7C15 }
			c.SetBatch(func(set Setter[*int]) {
				for k := range n {
					set(hash(k), Ref[*int]{Seg: seg, Row: int32(k)}, 1)
				}
			})
			r := rand.New(rand.NewPCG(1, 2))
			hs, skip := make([]uint64, 1000), make([]bool, 1000)
			for i := range hs {
				hs[i] = hash(r.IntN(n))
			}
			b.ResetTimer()
			for range b.N {
				hits := 0
				c.GetBatch(hs, skip, func(int, Ref[*int]) bool { hits++; return true })
				if hits != len(hs) {
					b.Fatalf("%d hits of %d", hits, len(hs))
				}
			}
			b.ReportMetric(float64(b.N*len(hs))/b.Elapsed().Seconds(), "keys/s")
		})
	}
}
