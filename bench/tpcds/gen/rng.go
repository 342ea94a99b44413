package gen

// mix64 is the splitmix64 finalizer: a bijective, well-avalanched hash.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hash4 derives one 64-bit value from (seed, table, row, salt). All
// randomness of the generator goes through it, which is what makes every
// row computable on its own.
func hash4(seed, table, row, salt uint64) uint64 {
	return mix64(mix64(mix64(seed^0x9e3779b97f4a7c15+table)^row) + salt*0x9e3779b97f4a7c15)
}

// stream is a small sequential generator seeded from hash4, for the few
// places that draw a variable number of values (line counts of a block).
type stream struct{ s uint64 }

func (r *stream) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// intn returns a value in [0, n) for n > 0.
func intn(h uint64, n int64) int64 {
	return int64((h >> 11) % uint64(n))
}

// between returns a value in [lo, hi].
func between(h uint64, lo, hi int64) int64 {
	return lo + intn(h, hi-lo+1)
}

// unit returns a float in [0, 1).
func unit(h uint64) float64 {
	return float64(h>>11) / (1 << 53)
}
