package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/flightd/flightd/vectorized"
)

// groupPack packs a row's integer group keys (two or more columns) into
// one int64, so that the aggregation looks them up in an IntTable instead
// of encoding them as bytes for a BytesTable: q97's GROUP BY
// ss_customer_sk, ss_item_sk spent most of its CPU encoding, hashing and
// comparing byte keys. Each column takes a field of widths[c] bits (at
// least minPackBits), 0 for NULL and value-bias+1 otherwise. A field that
// holds every value of its type is biased by the type's minimum; a
// narrower one (the columns' types do not fit in 64 bits together) by 0,
// and a row with a value outside it does not pack: it keeps the
// byte-encoded path. Whether a key packs depends on the key alone, so
// each group lives in one of the two tables.
type groupPack struct {
	widths []uint
	bias   []int64
	limit  []uint64 // the largest value-bias a field holds
}

// minPackBits is the narrowest field a column is given: narrower fields
// would send most keys down the byte path after packing them for nothing.
const minPackBits = 16

// newGroupPack returns the packing of keys' columns, or nil when they are
// not two or more integer columns whose fields fit.
func newGroupPack(keys []arrow.Array) *groupPack {
	if len(keys) < 2 {
		return nil
	}
	p := &groupPack{}
	total := uint(0)
	for _, k := range keys {
		w := intKeyBits(k.DataType())
		if w == 0 {
			return nil
		}
		p.widths = append(p.widths, w+1) // +1: the NULL code
		total += w + 1
	}
	for total > 64 {
		widest := 0
		for c, w := range p.widths {
			if w > p.widths[widest] {
				widest = c
			}
		}
		if p.widths[widest] <= minPackBits {
			return nil
		}
		p.widths[widest]--
		total--
	}
	for c, k := range keys {
		w := p.widths[c]
		lo := int64(0)
		if full := intKeyBits(k.DataType()); w > full && signedKey(k.DataType()) {
			lo = -1 << (full - 1)
		}
		p.bias = append(p.bias, lo)
		p.limit = append(p.limit, 1<<w-2)
	}
	return p
}

// intKeyBits is the width of an integer key type (0: not one).
func intKeyBits(dt arrow.DataType) uint {
	if !vectorized.IsIntKeyType(dt) {
		return 0
	}
	if fw, ok := dt.(arrow.FixedWidthDataType); ok {
		return uint(fw.BitWidth())
	}
	return 0
}

func signedKey(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.UINT8, arrow.UINT16, arrow.UINT32:
		return false
	}
	return true
}

// packScratch holds pack's buffers, reused across batches.
type packScratch struct {
	vals, wide64 []int64
	wide         []bool
}

// pack returns every row's packed key and which rows do not pack (nil when
// all do); the slices stay valid until the next pack with sc.
func (p *groupPack) pack(keys []arrow.Array, n int, sc *packScratch) ([]int64, []bool) {
	sc.vals = resized(sc.vals, n)
	vals := sc.vals
	clear(vals)
	var wide []bool
	for c, k := range keys {
		w, lo, limit := p.widths[c], p.bias[c], p.limit[c]
		vs := vectorized.IntKeyValues(k, sc.wide64)
		if intKeyBits(k.DataType()) < 64 {
			sc.wide64 = vs // widened into it: keep what it grew to
		}
		vs = vs[:n]
		if !vectorized.MayHaveNulls(k.Data()) {
			for i, v := range vs {
				d := uint64(v - lo)
				if d > limit {
					wide = markWide(wide, &sc.wide, n, i)
				}
				vals[i] = int64(uint64(vals[i])<<w | (d + 1))
			}
			continue
		}
		valid, off := k.NullBitmapBytes(), k.Data().Offset()
		for i, v := range vs {
			f := uint64(0)
			if bitutil.BitIsSet(valid, off+i) {
				d := uint64(v - lo)
				if d > limit {
					wide = markWide(wide, &sc.wide, n, i)
				}
				f = d + 1
			}
			vals[i] = int64(uint64(vals[i])<<w | f)
		}
	}
	return vals, wide
}

// markWide sets row i in wide, made (cleared, from buf) on first use.
func markWide(wide []bool, buf *[]bool, n, i int) []bool {
	if wide == nil {
		*buf = resized(*buf, n)
		wide = *buf
		clear(wide)
	}
	wide[i] = true
	return wide
}
