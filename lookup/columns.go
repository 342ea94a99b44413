package lookup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore"
)

// Keys are hashed column by column from the Arrow buffers (no value per
// key), and the cache is probed by hash; the hash of a key's normalized
// encoding (tablestore.AppendKey, which ChangedKeys reports) is the same,
// so a commit invalidates exactly the cached keys it wrote.

var seed = maphash.MakeSeed()

func mix(h, v uint64) uint64 { return (bits.RotateLeft64(h, 29) ^ v) * 0x9E3779B97F4A7C15 }

func mixInts[T ~int8 | ~int16 | ~int32 | ~int64](hs []uint64, vals []T) {
	for i, v := range vals {
		hs[i] = mix(hs[i], uint64(int64(v)))
	}
}

// hashIsKey reports whether keys of types hash to distinct values (one
// integer-like column: mix(0, v) = v * an odd constant, a bijection), so a
// hash match needs no check of the key's columns (which costs a read of
// the cached segment, a cache miss per key in a large cache).
func hashIsKey(types []arrow.DataType) bool {
	if len(types) != 1 {
		return false
	}
	switch types[0].ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32, arrow.TIME64, arrow.TIMESTAMP:
		return true
	}
	return false
}

// hashKeys sets hs[i] to the hash of key i of the key columns and skip[i]
// where the key has a NULL (never found, never cached).
func hashKeys(keys []arrow.Array, hs []uint64, skip []bool) {
	clear(hs)
	var buf []byte
	for _, a := range keys {
		switch a := a.(type) {
		case *array.Int64:
			mixInts(hs, a.Int64Values())
		case *array.Int32:
			mixInts(hs, a.Int32Values())
		case *array.Int16:
			mixInts(hs, a.Int16Values())
		case *array.Int8:
			mixInts(hs, a.Int8Values())
		case *array.Date32:
			mixInts(hs, a.Date32Values())
		case *array.Time64:
			mixInts(hs, a.Time64Values())
		case *array.Timestamp:
			mixInts(hs, a.TimestampValues())
		case *array.String:
			for i := range hs {
				hs[i] = mix(hs[i], maphash.String(seed, a.Value(i)))
			}
		case *array.Binary:
			for i := range hs {
				hs[i] = mix(hs[i], maphash.Bytes(seed, a.Value(i)))
			}
		default: // bool, floats, decimals: their normalized encoding
			one := []arrow.Array{a}
			for i := range hs {
				buf = tablestore.AppendKey(buf[:0], one, i)
				hs[i] = mix(hs[i], maphash.Bytes(seed, buf))
			}
		}
	}
	markNulls(keys, skip)
}

// markNulls sets skip[i] where key i has a NULL.
func markNulls(keys []arrow.Array, skip []bool) {
	for _, a := range keys {
		if a.NullN() > 0 {
			for i := range skip {
				if a.IsNull(i) {
					skip[i] = true
				}
			}
		}
	}
}

// hashEncoded is hashKeys of one key given by its normalized encoding
// (tablestore.AppendKey) over key columns of types; false when the
// encoding does not decode as such a key (or has a NULL).
func hashEncoded(types []arrow.DataType, enc []byte) (uint64, bool) {
	var h uint64
	var buf []byte
	for _, t := range types {
		if len(enc) == 0 || enc[0] != 1 {
			return 0, false
		}
		switch t.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32, arrow.TIME64, arrow.TIMESTAMP:
			if len(enc) < 9 {
				return 0, false
			}
			h = mix(h, binary.BigEndian.Uint64(enc[1:9])^1<<63)
			enc = enc[9:]
		case arrow.STRING, arrow.BINARY:
			buf = buf[:0]
			i := 1
			for {
				if i+1 >= len(enc) {
					return 0, false
				}
				if enc[i] != 0 {
					buf = append(buf, enc[i])
					i++
					continue
				}
				if enc[i+1] == 0 {
					break
				}
				buf = append(buf, 0) // 0x00 0xFF
				i += 2
			}
			h = mix(h, maphash.Bytes(seed, buf))
			enc = enc[i+2:]
		default:
			n := 1 + encodedWidth(t)
			if len(enc) < n {
				return 0, false
			}
			h = mix(h, maphash.Bytes(seed, enc[:n]))
			enc = enc[n:]
		}
	}
	return h, len(enc) == 0
}

// encodedWidth is the bytes of a value of a fixed-width type that
// hashKeys hashes by its normalized encoding.
func encodedWidth(t arrow.DataType) int {
	switch t.ID() {
	case arrow.BOOL:
		return 1
	case arrow.DECIMAL128:
		return 16
	}
	return 8 // FLOAT32, FLOAT64
}

// view is one column's buffers, read in place by key checks and gathers.
type view struct {
	valid []byte // validity bitmap; nil: no NULLs
	off   int    // the array's offset into its buffers
	width int    // bytes per value; 0: bits (BOOL), -1: offsets and data
	fixed []byte
	u64   []uint64 // fixed as 8-byte values
	offs  []int32
	data  []byte
}

func newView(a arrow.Array) view {
	d := a.Data()
	bufs := d.Buffers()
	v := view{off: d.Offset()}
	if a.NullN() > 0 && bufs[0] != nil {
		v.valid = bufs[0].Bytes()
	}
	switch t := a.DataType().(type) {
	case *arrow.BooleanType:
		v.fixed = bufs[1].Bytes()
	case *arrow.StringType, *arrow.BinaryType:
		v.width = -1
		v.offs = arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
		if bufs[2] != nil {
			v.data = bufs[2].Bytes()
		}
	case arrow.FixedWidthDataType:
		v.width = t.BitWidth() / 8
		if bufs[1] != nil {
			v.fixed = bufs[1].Bytes()
		}
		if v.width == 8 {
			v.u64 = arrow.Uint64Traits.CastFromBytes(v.fixed)
		}
	}
	return v
}

func viewsOf(cols []arrow.Array) []view {
	vs := make([]view, len(cols))
	for i, c := range cols {
		vs[i] = newView(c)
	}
	return vs
}

func (v *view) null(i int) bool { return v.valid != nil && !bitutil.BitIsSet(v.valid, v.off+i) }

func (v *view) bytesAt(i int) []byte {
	i += v.off
	if v.width < 0 {
		return v.data[v.offs[i]:v.offs[i+1]]
	}
	return v.fixed[i*v.width : (i+1)*v.width]
}

// keyEqual reports whether key i of a equals key j of b (key columns of
// the same types, neither with a NULL). Bit-equal values are equal keys;
// a float key differing only in bits the encoding folds (NaNs) is taken as
// a cache miss and read from the store.
func keyEqual(a []view, i int, b []view, j int) bool {
	for c := range a {
		x, y := &a[c], &b[c]
		switch {
		case x.u64 != nil:
			if x.u64[x.off+i] != y.u64[y.off+j] {
				return false
			}
		case x.width == 0:
			if bitutil.BitIsSet(x.fixed, x.off+i) != bitutil.BitIsSet(y.fixed, y.off+j) {
				return false
			}
		default:
			if !bytes.Equal(x.bytesAt(i), y.bytesAt(j)) {
				return false
			}
		}
	}
	return true
}

// gather builds a column of typ with, per row i, the value of column col
// at row rows[i] of segs[i], or NULL where segs[i] is nil or holds no rows.
// budget, when not nil, is the bytes the column may take: they are taken
// from it, and a column larger than what is left (or than int32 offsets
// address) is ErrAnswerTooLarge, before its values are copied.
func gather(mem memory.Allocator, typ arrow.DataType, segs []*segment, rows []int32, col int, budget *int64) (arrow.Array, error) {
	n := len(segs)
	spend := func(bytes int64) error {
		if budget == nil {
			return nil
		}
		if bytes > *budget {
			return fmt.Errorf("%w: a column of %d values would take %d bytes, over the %d left", ErrAnswerTooLarge, n, bytes, *budget)
		}
		*budget -= bytes
		return nil
	}
	// A fixed-width column's size is known before it is allocated; a
	// string column's is counted in its first pass, below.
	validBytes := bitutil.BytesForBits(int64(n))
	switch t := typ.(type) {
	case *arrow.BooleanType:
		if err := spend(2 * validBytes); err != nil {
			return nil, err
		}
	case arrow.FixedWidthDataType:
		if err := spend(int64(n*t.BitWidth()/8) + validBytes); err != nil {
			return nil, err
		}
	}
	valid := memory.NewResizableBuffer(mem)
	valid.Resize(int(bitutil.BytesForBits(int64(n))))
	vb := valid.Bytes()
	clear(vb)
	src := func(i int) *view {
		s := segs[i]
		if s == nil || s.cols == nil || s.cols[col].null(int(rows[i])) {
			return nil
		}
		bitutil.SetBit(vb, i)
		return &s.cols[col]
	}
	nulls := 0
	var buffers []*memory.Buffer
	switch t := typ.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		offs := memory.NewResizableBuffer(mem)
		offs.Resize((n + 1) * 4)
		ov := arrow.Int32Traits.CastFromBytes(offs.Bytes())
		total := 0
		for i := range n {
			ov[i] = int32(total)
			if v := src(i); v != nil {
				total += len(v.bytesAt(int(rows[i])))
			} else {
				nulls++
			}
		}
		ov[n] = int32(total)
		err := spend(int64(total) + int64(len(offs.Bytes())+len(vb)))
		if total > math.MaxInt32 {
			err = fmt.Errorf("%w: a column of %d values would hold %d bytes, past 32-bit offsets", ErrAnswerTooLarge, n, total)
		}
		if err != nil {
			valid.Release()
			offs.Release()
			return nil, err
		}
		data := memory.NewResizableBuffer(mem)
		data.Resize(total)
		db := data.Bytes()
		for i := range n {
			if ov[i+1] > ov[i] {
				s := &segs[i].cols[col]
				copy(db[ov[i]:], s.bytesAt(int(rows[i])))
			}
		}
		buffers = []*memory.Buffer{valid, offs, data}
	case *arrow.BooleanType:
		vals := memory.NewResizableBuffer(mem)
		vals.Resize(len(vb))
		b := vals.Bytes()
		clear(b)
		for i := range n {
			if v := src(i); v == nil {
				nulls++
			} else if bitutil.BitIsSet(v.fixed, v.off+int(rows[i])) {
				bitutil.SetBit(b, i)
			}
		}
		buffers = []*memory.Buffer{valid, vals}
	case arrow.FixedWidthDataType:
		w := t.BitWidth() / 8
		vals := memory.NewResizableBuffer(mem)
		vals.Resize(n * w)
		b := vals.Bytes()
		if w == 8 {
			out := arrow.Uint64Traits.CastFromBytes(b)
			for i := range n {
				if v := src(i); v == nil {
					out[i] = 0
					nulls++
				} else {
					out[i] = v.u64[v.off+int(rows[i])]
				}
			}
		} else {
			clear(b)
			for i := range n {
				if v := src(i); v == nil {
					nulls++
				} else {
					copy(b[i*w:(i+1)*w], v.bytesAt(int(rows[i])))
				}
			}
		}
		buffers = []*memory.Buffer{valid, vals}
	}
	d := array.NewData(typ, n, buffers, nil, nulls, 0)
	a := array.MakeFromData(d)
	d.Release()
	for _, b := range buffers {
		b.Release()
	}
	return a, nil
}
