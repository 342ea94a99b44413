package paimonfmt

import (
	"encoding/binary"
	"math/bits"
)

// Paimon's fixed-bucket assignment: BinaryRow.hashCode of the bucket key
// row (MurmurHash3's 32-bit mixing over the row's little-endian words,
// seed 42) and Math.abs(hash % buckets). A writer that assigns buckets
// any other way puts a key in another bucket than Paimon's writers do,
// and a table they share gets the key twice.

const murmurSeed = 42

func mixK1(k uint32) uint32 {
	k *= 0xcc9e2d51
	k = bits.RotateLeft32(k, 15)
	return k * 0x1b873593
}

func mixH1(h, k uint32) uint32 {
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func fmix(h uint32, n int) uint32 {
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// hashWords is MurmurHashUtils.hashBytesByWords; len(b) is a multiple of 8
// for a BinaryRow.
func hashWords(b []byte) int32 {
	h := uint32(murmurSeed)
	for i := 0; i+4 <= len(b); i += 4 {
		h = mixH1(h, mixK1(binary.LittleEndian.Uint32(b[i:])))
	}
	return int32(fmix(h, len(b)))
}

// RowHash is BinaryRow.hashCode of the row of vals.
func RowHash(types []Type, vals []any) (int32, error) {
	row, err := encodeRow(types, vals)
	if err != nil {
		return 0, err
	}
	return hashWords(row), nil
}

// BucketOf is Paimon's bucket of a key row's hash among n buckets.
func BucketOf(hash int32, n int) int {
	b := int(hash % int32(n))
	if b < 0 {
		b = -b
	}
	return b
}
