package nexmark

// javaRandom is java.util.Random: a 48-bit linear congruential generator.
// Beam seeds one per event with the event id, so the port must give the
// same numbers draw for draw.
type javaRandom struct{ seed int64 }

const (
	lcgMultiplier = 0x5DEECE66D
	lcgAddend     = 0xB
	lcgMask       = 1<<48 - 1
)

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (seed ^ lcgMultiplier) & lcgMask}
}

func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*lcgMultiplier + lcgAddend) & lcgMask
	return int32(uint64(r.seed) >> (48 - bits))
}

// Int is nextInt().
func (r *javaRandom) Int() int32 { return r.next(32) }

// IntN is nextInt(bound) for bound > 0, with Java's rejection of the
// values that would bias the result.
func (r *javaRandom) IntN(bound int32) int32 {
	if bound <= 0 {
		panic("nexmark: IntN bound must be positive") // callers pass constants or checked sizes
	}
	v := r.next(31)
	m := bound - 1
	if bound&m == 0 { // a power of two: take the high bits
		return int32((int64(bound) * int64(v)) >> 31)
	}
	for u := v; ; u = r.next(31) {
		v = u % bound
		if u-v+m >= 0 { // no int32 overflow: u is not in the biased top range
			return v
		}
	}
}

// Int64 is nextLong().
func (r *javaRandom) Int64() int64 {
	return int64(r.next(32))<<32 + int64(r.next(32))
}

// Float64 is nextDouble().
func (r *javaRandom) Float64() float64 {
	return float64(int64(r.next(26))<<27+int64(r.next(27))) * (1.0 / (1 << 53))
}
