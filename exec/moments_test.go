package exec_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// TestIntMoments: values added and taken away at random, extremes
// included, leave moments whose variance equals the exact one (a big.Rat
// over the values held, rounded once), in every form.
func TestIntMoments(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	draw := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return []int64{math.MinInt64, math.MaxInt64, math.MinInt64 + 1, -1, 0, 1}[rng.IntN(6)]
		case 1:
			return int64(rng.Uint64())
		}
		return rng.Int64N(2001) - 1000
	}
	var m exec.IntMoments
	var held []int64
	for step := range 5000 {
		if len(held) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(held))
			m.Add(held[i], -1)
			held[i] = held[len(held)-1]
			held = held[:len(held)-1]
		} else {
			x := draw()
			m.Add(x, 1)
			held = append(held, x)
		}
		if step%50 != 0 {
			continue
		}
		for _, pop := range []bool{true, false} {
			for _, sqrt := range []bool{true, false} {
				got, ok := m.Variance(pop, sqrt)
				want, wok := exactVariance(held, pop, sqrt)
				if ok != wok || ok && got != want {
					t.Fatalf("seed %d step %d (pop %v, sqrt %v, %d values): got (%v, %v), want (%v, %v)", seed, step, pop, sqrt, len(held), got, ok, want, wok)
				}
			}
		}
	}
}

func exactVariance(xs []int64, pop, sqrt bool) (float64, bool) {
	n := int64(len(xs))
	den := n - 1
	if pop {
		den = n
	}
	if den <= 0 {
		return 0, false
	}
	mean := new(big.Rat)
	for _, x := range xs {
		mean.Add(mean, new(big.Rat).SetInt64(x))
	}
	mean.Quo(mean, new(big.Rat).SetInt64(n))
	ss := new(big.Rat)
	for _, x := range xs {
		d := new(big.Rat).Sub(new(big.Rat).SetInt64(x), mean)
		ss.Add(ss, d.Mul(d, d))
	}
	r, _ := ss.Quo(ss, new(big.Rat).SetInt64(den)).Float64()
	if sqrt {
		r = math.Sqrt(r)
	}
	return r, true
}

// TestIntMomentsSmall: few values of moderate size (q39's quantities in
// groups of four), where the variance is computed in float64 from exact
// 53-bit operands, and sizes around that bound, equal the exact variance.
func TestIntMomentsSmall(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 8))
	for iter := range 20000 {
		limit := []int64{1000, 1 << 20, 1 << 26, 1 << 27, 1 << 40}[iter%5]
		var m exec.IntMoments
		xs := make([]int64, 1+rng.IntN(8))
		for i := range xs {
			xs[i] = rng.Int64N(2*limit+1) - limit
			m.Add(xs[i], 1)
		}
		for _, pop := range []bool{true, false} {
			for _, sqrt := range []bool{true, false} {
				got, ok := m.Variance(pop, sqrt)
				want, wok := exactVariance(xs, pop, sqrt)
				if ok != wok || ok && got != want {
					t.Fatalf("seed %d %v (pop %v, sqrt %v): got (%v, %v), want (%v, %v)", seed, xs, pop, sqrt, got, ok, want, wok)
				}
			}
		}
	}
}

// BenchmarkIntMomentsVariance is the sample standard deviation of 4096
// groups of four quantities of 0-1000 (q39's stddev_samp per warehouse,
// item and month).
func BenchmarkIntMomentsVariance(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	ms := make([]exec.IntMoments, 4096)
	for i := range ms {
		for range 4 {
			ms[i].Add(rng.Int64N(1001), 1)
		}
	}
	for b.Loop() {
		for i := range ms {
			ms[i].Variance(false, true)
		}
	}
}
