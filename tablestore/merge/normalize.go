package merge

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// AppendNormalized appends an order-preserving encoding of row i of a:
// byte comparison of encodings orders like the values (nulls first, NaN
// first among floats, lists element by element). The merge compares keys
// and versions, and the aggregation's max and min compare values, by it.
func AppendNormalized(dst []byte, a arrow.Array, i int) []byte {
	if a.IsNull(i) {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	u64 := func(v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63)) }
	switch a := a.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return append(dst, 1)
		}
		return append(dst, 0)
	case *array.Int8:
		return u64(int64(a.Value(i)))
	case *array.Int16:
		return u64(int64(a.Value(i)))
	case *array.Int32:
		return u64(int64(a.Value(i)))
	case *array.Int64:
		return u64(a.Value(i))
	case *array.Date32:
		return u64(int64(a.Value(i)))
	case *array.Timestamp:
		return u64(int64(a.Value(i)))
	case *array.Time64:
		return u64(int64(a.Value(i)))
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)))
	case *array.Float64:
		return appendFloat(dst, a.Value(i))
	case *array.String:
		return appendEscaped(dst, []byte(a.Value(i)))
	case *array.Binary:
		return appendEscaped(dst, a.Value(i))
	case *array.Decimal128:
		v := a.Value(i)
		return appendDecimal(dst, v)
	case *array.Struct:
		for f := range a.NumField() {
			dst = AppendNormalized(dst, a.Field(f), i)
		}
		return dst
	case array.ListLike: // list and map: each element after a 1, then a 0
		lo, hi := a.ValueOffsets(i)
		for j := lo; j < hi; j++ {
			dst = AppendNormalized(append(dst, 1), a.ListValues(), int(j))
		}
		return append(dst, 0)
	}
	panic("merge: AppendNormalized: unsupported type " + a.DataType().String())
}

func appendFloat(dst []byte, f float64) []byte {
	bits := math.Float64bits(f)
	if math.IsNaN(f) {
		bits = 0 // cmp.Compare orders NaN first
		return binary.BigEndian.AppendUint64(dst, bits)
	}
	if bits>>63 == 0 {
		bits ^= 1 << 63
	} else {
		bits = ^bits
	}
	return binary.BigEndian.AppendUint64(dst, bits)
}

func appendDecimal(dst []byte, v decimal128.Num) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.HighBits())^(1<<63))
	return binary.BigEndian.AppendUint64(dst, v.LowBits())
}

// appendEscaped writes b with 0x00 escaped as 0x00 0xFF and a 0x00 0x00
// terminator, so prefixes sort first.
func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, 0, 0)
}
