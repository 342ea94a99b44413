package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/vectorized"
)

// caseParts are the value arrays of a CASE's arms and, per result row, the
// part that decided it (pick, -1 = none: NULL) and its position there.
type caseParts struct {
	parts []arrow.Array
	pick  []int32
	pos   []int32
	// bits and offs are each part's validity bitmap (nil = no NULLs) and
	// offset into it.
	bits [][]byte
	offs []int
}

func newCaseParts(parts []arrow.Array, pick, pos []int32) *caseParts {
	c := &caseParts{parts: parts, pick: pick, pos: pos, bits: make([][]byte, len(parts)), offs: make([]int, len(parts))}
	for k, p := range parts {
		if vectorized.MayHaveNulls(p.Data()) { // an arm may be a column of a batch parallel workers share: never count its NULLs
			c.bits[k], c.offs[k] = p.NullBitmapBytes(), p.Data().Offset()
		}
	}
	return c
}

// valid reports whether result row i is not NULL.
func (c *caseParts) valid(i int) bool {
	k := c.pick[i]
	if k < 0 {
		return false
	}
	return c.bits[k] == nil || bitutil.BitIsSet(c.bits[k], c.offs[k]+int(c.pos[i]))
}

// zeroBits allocates a bitmap of n bits, all clear.
func zeroBits(mem memory.Allocator, n int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	clear(buf.Bytes())
	return buf
}

// validity returns the result's validity bitmap.
func (c *caseParts) validity(mem memory.Allocator) vectorized.Validity {
	n := len(c.pick)
	buf := zeroBits(mem, n)
	bm := buf.Bytes()
	nulls := 0
	for i := 0; i < n; i++ {
		if c.valid(i) {
			bitutil.SetBit(bm, i)
		} else {
			nulls++
		}
	}
	if nulls == 0 {
		buf.Release()
		return vectorized.Validity{}
	}
	return vectorized.Validity{Buf: buf, Nulls: nulls}
}

// assembleCase builds the CASE result of type dt from its parts in one
// pass: a typed gather for fixed-width, boolean and string results, the
// generic builder otherwise.
func assembleCase(mem memory.Allocator, dt arrow.DataType, parts []arrow.Array, pick, pos []int32) arrow.Array {
	c := newCaseParts(parts, pick, pos)
	n := len(pick)
	if fw, ok := dt.(arrow.FixedWidthDataType); ok && dt.ID() != arrow.NULL {
		switch fw.BitWidth() {
		case 1:
			return c.gatherBool(mem)
		case 8:
			return gatherFixed[uint8](mem, dt, c, 1)
		case 16:
			return gatherFixed[uint16](mem, dt, c, 1)
		case 32:
			return gatherFixed[uint32](mem, dt, c, 1)
		case 64:
			return gatherFixed[uint64](mem, dt, c, 1)
		case 128:
			return gatherFixed[uint64](mem, dt, c, 2)
		}
	}
	if dt.ID() == arrow.STRING {
		return c.gatherString(mem)
	}
	bld := array.NewBuilder(mem, dt)
	defer bld.Release()
	bld.Reserve(n)
	for i, k := range pick {
		if k < 0 {
			bld.AppendNull()
			continue
		}
		vectorized.AppendValue(bld, parts[k], int(pos[i]))
	}
	return bld.NewArray()
}

// constSelect assembles CASE WHEN cond THEN k1 ELSE k2 END of a
// fixed-width type whose arms are the constants parts[then] and parts[els]
// (one value each; -1 for NULL) straight from sel, the bits of the taken
// rows (taken of n): k1's w words where set, k2's elsewhere, with no
// per-row pick list.
func constSelect[T vectorized.Fixed](mem memory.Allocator, dt arrow.DataType, sel []byte, taken, n int, parts []arrow.Array, then, els int32, w int) arrow.Array {
	arm := func(k int32) []T {
		if k < 0 {
			return make([]T, w)
		}
		return fixedWords[T](parts[k], w)
	}
	tv, ev := arm(then), arm(els)
	out := vectorized.NewFixedOut[T](mem, n*w)
	if w == 1 {
		t, e := tv[0], ev[0]
		for i := range out.Vals {
			v := e
			if sel[i>>3]>>(i&7)&1 != 0 {
				v = t
			}
			out.Vals[i] = v
		}
	} else {
		for i := 0; i < n; i++ {
			src := ev
			if sel[i>>3]>>(i&7)&1 != 0 {
				src = tv
			}
			copy(out.Vals[i*w:(i+1)*w], src)
		}
		out.Vals = out.Vals[:n] // Finish takes the length from Vals
	}
	if then >= 0 && els >= 0 {
		return out.Finish(dt, nil, 0)
	}
	// A row is NULL when its arm is: the validity is sel, its inverse, or
	// nothing.
	valid := zeroBits(mem, n)
	switch {
	case then >= 0:
		bitutil.CopyBitmap(sel, 0, n, valid.Bytes(), 0)
		return out.Finish(dt, valid, n-taken)
	case els >= 0:
		bitutil.InvertBitmap(sel, 0, n, valid.Bytes(), 0)
		return out.Finish(dt, valid, taken)
	}
	return out.Finish(dt, valid, n)
}

// fixedWords returns a fixed-width array's values as w words of type T per
// value, honouring its offset. The slice aliases the array: read only.
func fixedWords[T vectorized.Fixed](a arrow.Array, w int) []T {
	d := a.Data()
	buf := d.Buffers()[1]
	if buf == nil || buf.Len() == 0 {
		return nil
	}
	return arrow.GetData[T](buf.Bytes())[d.Offset()*w : (d.Offset()+d.Len())*w]
}

// gatherFixed assembles a fixed-width result of w words of T per value.
func gatherFixed[T vectorized.Fixed](mem memory.Allocator, dt arrow.DataType, c *caseParts, w int) arrow.Array {
	n := len(c.pick)
	src := make([][]T, len(c.parts))
	for k, p := range c.parts {
		src[k] = fixedWords[T](p, w)
	}
	out := vectorized.NewFixedOut[T](mem, n*w)
	dst := out.Vals
	for i, k := range c.pick {
		if k < 0 {
			clear(dst[i*w : (i+1)*w])
			continue
		}
		p := int(c.pos[i]) * w
		copy(dst[i*w:(i+1)*w], src[k][p:p+w])
	}
	v := c.validity(mem)
	out.Vals = out.Vals[:n] // Finish takes the length from Vals
	return out.Finish(dt, v.Buf, v.Nulls)
}

func (c *caseParts) gatherBool(mem memory.Allocator) arrow.Array {
	n := len(c.pick)
	vals := zeroBits(mem, n)
	out := vals.Bytes()
	src := make([][]byte, len(c.parts))
	offs := make([]int, len(c.parts))
	for k, p := range c.parts {
		src[k], offs[k] = p.Data().Buffers()[1].Bytes(), p.Data().Offset()
	}
	for i, k := range c.pick {
		if k >= 0 && bitutil.BitIsSet(src[k], offs[k]+int(c.pos[i])) {
			bitutil.SetBit(out, i)
		}
	}
	return vectorized.FinishBool(n, vals, c.validity(mem))
}

func (c *caseParts) gatherString(mem memory.Allocator) arrow.Array {
	src := make([]*array.String, len(c.parts))
	for k, p := range c.parts {
		src[k] = p.(*array.String)
	}
	size := 0
	for i, k := range c.pick {
		if c.valid(i) {
			size += src[k].ValueLen(int(c.pos[i]))
		}
	}
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(len(c.pick))
	b.ReserveData(size)
	for i, k := range c.pick {
		if !c.valid(i) {
			b.AppendNull()
			continue
		}
		b.Append(src[k].Value(int(c.pos[i])))
	}
	return b.NewArray()
}
