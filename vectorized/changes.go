package vectorized

import (
	"bytes"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// MarkChanges sets changed[i] for each row i >= 1 of a whose value differs
// from row i-1's (NULL equals NULL and differs from any value), as
// NewComparator orders them; rows where a does not change keep their
// mark. Boundaries of runs in sorted keys (a window's partitions and peer
// groups) come from it column by column: integer, decimal and string
// columns in one typed loop, other types through NewComparator.
func MarkChanges(a arrow.Array, changed []bool) error {
	n := a.Len()
	if n < 2 {
		return nil
	}
	if !MayHaveNulls(a.Data()) {
		return markValues(a, changed)
	}
	// The value loops compare whatever NULL rows hold: mark this column
	// apart, decide the rows next to a NULL by validity alone, then merge.
	own := make([]bool, n)
	if err := markValues(a, own); err != nil {
		return err
	}
	for i := 1; i < n; i++ {
		if pn, cn := a.IsNull(i-1), a.IsNull(i); pn || cn {
			own[i] = pn != cn
		}
		changed[i] = changed[i] || own[i]
	}
	return nil
}

// markValues is MarkChanges comparing the values of every row, NULL or
// not.
func markValues(a arrow.Array, changed []bool) error {
	switch a.DataType().ID() {
	case arrow.INT8, arrow.UINT8:
		markFixed(Values[uint8](a), changed)
	case arrow.INT16, arrow.UINT16:
		markFixed(Values[uint16](a), changed)
	case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
		markFixed(Values[uint32](a), changed)
	case arrow.INT64, arrow.UINT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		markFixed(Values[uint64](a), changed)
	case arrow.DECIMAL128:
		markFixed(DecimalValues(a), changed)
	case arrow.STRING, arrow.BINARY:
		markVar[int32](a, changed)
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		markVar[int64](a, changed)
	default:
		cmp, err := NewComparator(a, a)
		if err != nil {
			return err
		}
		for i := 1; i < a.Len(); i++ {
			changed[i] = changed[i] || cmp(i-1, i) != 0
		}
	}
	return nil
}

// markFixed marks where a value's bits differ from the one before: equal
// values of these types have equal bits.
func markFixed[T comparable](v []T, changed []bool) {
	for i := 1; i < len(v); i++ {
		changed[i] = changed[i] || v[i] != v[i-1]
	}
}

// markVar compares each string with the one before through the offsets
// and the data buffer, without a string header per value.
func markVar[O int32 | int64](a arrow.Array, changed []bool) {
	d := a.Data()
	var z O
	size := int(unsafe.Sizeof(z))
	offs := asSlice[O](bufBytes(d, 1)[d.Offset()*size:], d.Len()+1)
	data := bufBytes(d, 2)
	for i := 1; i < d.Len(); i++ {
		if changed[i] {
			continue
		}
		lo, mid, hi := offs[i-1], offs[i], offs[i+1]
		changed[i] = mid-lo != hi-mid || !bytes.Equal(data[lo:mid], data[mid:hi])
	}
}
