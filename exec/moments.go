package exec

import (
	"math"
	"math/big"
	"math/bits"
)

// IntMoments are the count, sum and sum of squares of integers, held
// exactly (the sum in 128 bits, the squares in 192), so that values can
// be added and taken away in any order and a variance from them is
// rounded once. Batch variance of integers and the incremental one
// (stream/) both compute from them, and so agree to the bit.
type IntMoments struct {
	N int64
	// Sum is SumHi*2^64 + SumLo, two's complement.
	SumHi int64
	SumLo uint64
	// Squares is Sq[2]*2^128 + Sq[1]*2^64 + Sq[0].
	Sq [3]uint64
}

// Add adds x once (sign 1) or takes it away (sign -1).
func (m *IntMoments) Add(x int64, sign int8) {
	xlo, xhi := uint64(x), x>>63
	mag := uint64(x)
	if x < 0 {
		mag = -mag
	}
	sqHi, sqLo := bits.Mul64(mag, mag)
	var c uint64
	if sign > 0 {
		m.SumLo, c = bits.Add64(m.SumLo, xlo, 0)
		m.SumHi += xhi + int64(c)
		m.Sq[0], c = bits.Add64(m.Sq[0], sqLo, 0)
		m.Sq[1], c = bits.Add64(m.Sq[1], sqHi, c)
		m.Sq[2] += c
	} else {
		m.SumLo, c = bits.Sub64(m.SumLo, xlo, 0)
		m.SumHi -= xhi + int64(c)
		m.Sq[0], c = bits.Sub64(m.Sq[0], sqLo, 0)
		m.Sq[1], c = bits.Sub64(m.Sq[1], sqHi, c)
		m.Sq[2] -= c
	}
	m.N += int64(sign)
}

// Variance is the population (pop) or sample variance, or with sqrt the
// standard deviation; false when it is NULL (no rows, or one for a sample).
func (m *IntMoments) Variance(pop, sqrt bool) (float64, bool) {
	den := m.N - 1
	if pop {
		den = m.N
	}
	if den <= 0 {
		return 0, false
	}
	r, ok := m.smallVariance(den)
	if !ok {
		r = m.bigVariance(den)
	}
	if sqrt {
		r = math.Sqrt(r)
	}
	return r, true
}

// smallVariance is (n*sq - sum^2) / (n*den) when the sum fits in 64 bits,
// the squares in 64 and the numerator and denominator in 53: both are
// then exact float64s, and their IEEE quotient is the one rounding
// bigVariance's makes, at a tenth of its cost (q39's 90K groups of a few
// quantities each: a fifth of its CPU was big.Rat). ok is false otherwise.
func (m *IntMoments) smallVariance(den int64) (float64, bool) {
	if m.Sq[2] != 0 || m.Sq[1] != 0 || m.SumHi != int64(m.SumLo)>>63 {
		return 0, false
	}
	mag := m.SumLo
	if int64(mag) < 0 {
		mag = -mag
	}
	nh, nl := bits.Mul64(uint64(m.N), m.Sq[0])
	sh, sl := bits.Mul64(mag, mag)
	lo, borrow := bits.Sub64(nl, sl, 0)
	hi, _ := bits.Sub64(nh, sh, borrow) // n*sq >= sum^2: no sign
	dh, dl := bits.Mul64(uint64(m.N), uint64(den))
	if hi != 0 || lo >= 1<<53 || dh != 0 || dl >= 1<<53 {
		return 0, false
	}
	return float64(lo) / float64(dl), true
}

// bigVariance is (n*sq - sum^2) / (n*den) through big.Rat, rounded once.
func (m *IntMoments) bigVariance(den int64) float64 {
	sum := new(big.Int).Lsh(big.NewInt(m.SumHi), 64)
	sum.Add(sum, new(big.Int).SetUint64(m.SumLo))
	sq := new(big.Int).SetUint64(m.Sq[2])
	for _, limb := range []uint64{m.Sq[1], m.Sq[0]} {
		sq.Lsh(sq, 64).Add(sq, new(big.Int).SetUint64(limb))
	}
	// (n*sq - sum^2) / (n * den), rounded once.
	num := new(big.Int).Mul(big.NewInt(m.N), sq)
	num.Sub(num, sum.Mul(sum, sum))
	r, _ := new(big.Rat).SetFrac(num, new(big.Int).Mul(big.NewInt(m.N), big.NewInt(den))).Float64()
	return r
}
