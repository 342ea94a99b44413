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
	n := a.Len()
	var diff func(i int) bool
	switch a.DataType().ID() {
	case arrow.INT8, arrow.UINT8:
		diff = fixedDiff[uint8](a)
	case arrow.INT16, arrow.UINT16:
		diff = fixedDiff[uint16](a)
	case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
		markFixed(Values[uint32](a), changed)
	case arrow.INT64, arrow.UINT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		markFixed(Values[uint64](a), changed)
	case arrow.DECIMAL128:
		v := DecimalValues(a)
		for i := 1; i < n; i++ {
			changed[i] = changed[i] || v[i] != v[i-1]
		}
	case arrow.STRING, arrow.BINARY:
		markVar[int32](a, changed)
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		markVar[int64](a, changed)
	default:
		cmp, err := NewComparator(a, a)
		if err != nil {
			return err
		}
		diff = func(i int) bool { return cmp(i-1, i) != 0 }
	}
	if diff != nil {
		for i := 1; i < n; i++ {
			changed[i] = changed[i] || diff(i)
		}
	}
	return nil
}

func fixedDiff[T uint8 | uint16](a arrow.Array) func(int) bool {
	v := Values[T](a)
	return func(i int) bool { return v[i] != v[i-1] }
}

func markFixed[T uint32 | uint64](v []T, changed []bool) {
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
