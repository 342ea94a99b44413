package vectorized

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// KeyEncoder turns the values of several key columns into one byte string
// per row, such that two rows have equal keys iff their values are equal
// (NULL equal to NULL, -0 equal to 0, all NaNs equal). Hash aggregation and
// hash joins index their tables by these strings.
type KeyEncoder struct {
	buf  []byte
	offs []int
	pos  []int // encodeColumns' write position per row
	// HasNull[i] tells whether any key column of row i is NULL.
	HasNull []bool
}

// Encode encodes rows [0, n) of cols. The result stays valid until the next
// Encode.
func (e *KeyEncoder) Encode(cols []arrow.Array, n int) error {
	e.buf = e.buf[:0]
	if cap(e.offs) < n+1 {
		e.offs = make([]int, n+1)
		e.HasNull = make([]bool, n)
	}
	e.offs = e.offs[:n+1]
	e.HasNull = e.HasNull[:n]
	clear(e.HasNull)
	if columnwise(cols) {
		e.encodeColumns(cols, n)
		return nil
	}
	return e.encodeRows(cols, n)
}

// encodeRows encodes row by row, each value through its column's writer.
func (e *KeyEncoder) encodeRows(cols []arrow.Array, n int) error {
	writers := make([]func([]byte, int) []byte, len(cols))
	for c, col := range cols {
		w, err := keyWriter(col)
		if err != nil {
			return err
		}
		writers[c] = w
	}
	for i := 0; i < n; i++ {
		e.offs[i] = len(e.buf)
		for c, col := range cols {
			if col.IsNull(i) {
				e.buf = append(e.buf, 0)
				e.HasNull[i] = true
				continue
			}
			e.buf = append(e.buf, 1)
			e.buf = writers[c](e.buf, i)
		}
	}
	e.offs[n] = len(e.buf)
	return nil
}

// columnwise reports whether encodeColumns handles every column: 32-, 64-
// and 128-bit fixed-width values and strings, the keys of nearly every
// join and grouping.
func columnwise(cols []arrow.Array) bool {
	for _, c := range cols {
		if fixedKeyWidth(c) == 0 && !isStringKey(c) {
			return false
		}
	}
	return true
}

// fixedKeyWidth is the encoded width of a's values when encodeColumns
// writes them as fixed-width little-endian words, else 0.
func fixedKeyWidth(a arrow.Array) int {
	switch a.DataType().ID() {
	case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
		return 4
	case arrow.INT64, arrow.UINT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return 8
	case arrow.DECIMAL128:
		return 16
	}
	return 0
}

func isStringKey(a arrow.Array) bool {
	switch a.DataType().ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY:
		return true
	}
	return false
}

// encodeColumns writes the bytes encodeRows would, a column at a time:
// every row's length first, then each column into all rows, with one
// type switch per column instead of an interface and closure call per
// value (q39's four-column keys: Encode was 13% of its CPU).
func (e *KeyEncoder) encodeColumns(cols []arrow.Array, n int) {
	size := e.offs[:n]
	clear(size)
	for _, c := range cols {
		nulls := keyNulls(c)
		if w := fixedKeyWidth(c); w > 0 {
			for i := range size {
				if nulls.isNull(i) {
					size[i]++
				} else {
					size[i] += 1 + w
				}
			}
			continue
		}
		switch c := c.(type) {
		case *array.String:
			addStringSizes(size, c.ValueOffsets(), nulls)
		case *array.LargeString:
			addStringSizes(size, c.ValueOffsets(), nulls)
		case *array.Binary:
			addStringSizes(size, c.ValueOffsets(), nulls)
		}
	}
	total := 0
	for i, l := range size {
		e.offs[i] = total
		total += l
	}
	e.offs[n] = total
	e.buf = slices.Grow(e.buf[:0], total)[:total]
	e.pos = append(e.pos[:0], e.offs[:n]...)
	for _, c := range cols {
		e.writeColumn(c)
	}
}

// writeColumn writes column c's part of every row at e.pos, advancing it.
func (e *KeyEncoder) writeColumn(c arrow.Array) {
	w := colWriter{e.buf, e.pos, keyNulls(c), e.HasNull}
	buf, pos := w.buf, w.pos
	switch fixedKeyWidth(c) {
	case 4:
		v := Values[uint32](c)
		for i, p := range pos {
			if !w.null(i) {
				binary.LittleEndian.PutUint32(buf[p+1:], v[i])
				pos[i] = p + 5
			}
		}
	case 8:
		v := Values[uint64](c)
		for i, p := range pos {
			if !w.null(i) {
				binary.LittleEndian.PutUint64(buf[p+1:], v[i])
				pos[i] = p + 9
			}
		}
	case 16:
		v := DecimalValues(c)
		for i, p := range pos {
			if !w.null(i) {
				binary.LittleEndian.PutUint64(buf[p+1:], v[i].LowBits())
				binary.LittleEndian.PutUint64(buf[p+9:], uint64(v[i].HighBits()))
				pos[i] = p + 17
			}
		}
	default:
		data := bufBytes(c.Data(), 2)
		switch c := c.(type) {
		case *array.String:
			writeStrings(&w, c.ValueOffsets(), data)
		case *array.LargeString:
			writeStrings(&w, c.ValueOffsets(), data)
		case *array.Binary:
			writeStrings(&w, c.ValueOffsets(), data)
		}
	}
}

// colWriter writes one column's part of encodeColumns' rows.
type colWriter struct {
	buf     []byte
	pos     []int // per row, where its next part goes
	nulls   keyValidity
	hasNull []bool
}

// null writes row i's NULL marker and reports whether its value is NULL
// (then the marker is all of it).
func (w *colWriter) null(i int) bool {
	if !w.nulls.isNull(i) {
		w.buf[w.pos[i]] = 1
		return false
	}
	w.buf[w.pos[i]] = 0
	w.pos[i]++
	w.hasNull[i] = true
	return true
}

// writeStrings writes string values, of offsets offs into data, as their
// uvarint length and bytes.
func writeStrings[T int32 | int64](w *colWriter, offs []T, data []byte) {
	for i, p := range w.pos {
		if !w.null(i) {
			s := data[offs[i]:offs[i+1]]
			p += 1 + binary.PutUvarint(w.buf[p+1:], uint64(len(s)))
			w.pos[i] = p + copy(w.buf[p:], s)
		}
	}
}

// keyValidity reads a key column's validity bitmap in place.
type keyValidity struct {
	bits []byte // nil: no NULLs
	off  int
}

func keyNulls(a arrow.Array) keyValidity {
	if !MayHaveNulls(a.Data()) {
		return keyValidity{}
	}
	return keyValidity{a.NullBitmapBytes(), a.Data().Offset()}
}

func (v keyValidity) isNull(i int) bool {
	return v.bits != nil && !bitutil.BitIsSet(v.bits, v.off+i)
}

// addStringSizes adds the encoded lengths of a string column, of value
// offsets offs, to size.
func addStringSizes[T int32 | int64](size []int, offs []T, nulls keyValidity) {
	for i := range size {
		if nulls.isNull(i) {
			size[i]++
			continue
		}
		l := int(offs[i+1] - offs[i])
		size[i] += 1 + uvarintLen(uint64(l)) + l
	}
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// Key returns the encoded key of row i (aliasing the encoder's buffer).
func (e *KeyEncoder) Key(i int) []byte { return e.buf[e.offs[i]:e.offs[i+1]] }

func keyWriter(a arrow.Array) (func([]byte, int) []byte, error) {
	switch a.DataType().ID() {
	case arrow.INT8, arrow.UINT8:
		v := Values[uint8](a)
		return func(b []byte, i int) []byte { return append(b, v[i]) }, nil
	case arrow.INT16, arrow.UINT16:
		v := Values[uint16](a)
		return func(b []byte, i int) []byte { return binary.LittleEndian.AppendUint16(b, v[i]) }, nil
	case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
		v := Values[uint32](a)
		return func(b []byte, i int) []byte { return binary.LittleEndian.AppendUint32(b, v[i]) }, nil
	case arrow.INT64, arrow.UINT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		v := Values[uint64](a)
		return func(b []byte, i int) []byte { return binary.LittleEndian.AppendUint64(b, v[i]) }, nil
	case arrow.FLOAT32:
		v := Values[float32](a)
		return func(b []byte, i int) []byte { return appendFloat(b, float64(v[i])) }, nil
	case arrow.FLOAT64:
		v := Values[float64](a)
		return func(b []byte, i int) []byte { return appendFloat(b, v[i]) }, nil
	case arrow.DECIMAL128:
		v := DecimalValues(a)
		return func(b []byte, i int) []byte {
			b = binary.LittleEndian.AppendUint64(b, v[i].LowBits())
			return binary.LittleEndian.AppendUint64(b, uint64(v[i].HighBits()))
		}, nil
	case arrow.BOOL:
		v := a.(*array.Boolean)
		return func(b []byte, i int) []byte {
			if v.Value(i) {
				return append(b, 1)
			}
			return append(b, 0)
		}, nil
	case arrow.STRING:
		v := a.(*array.String)
		return func(b []byte, i int) []byte {
			s := v.Value(i)
			b = binary.AppendUvarint(b, uint64(len(s)))
			return append(b, s...)
		}, nil
	case arrow.LARGE_STRING:
		v := a.(*array.LargeString)
		return func(b []byte, i int) []byte {
			s := v.Value(i)
			b = binary.AppendUvarint(b, uint64(len(s)))
			return append(b, s...)
		}, nil
	case arrow.BINARY:
		v := a.(*array.Binary)
		return func(b []byte, i int) []byte {
			s := v.Value(i)
			b = binary.AppendUvarint(b, uint64(len(s)))
			return append(b, s...)
		}, nil
	case arrow.INTERVAL_MONTH_DAY_NANO:
		v := a.(*array.MonthDayNanoInterval)
		return func(b []byte, i int) []byte {
			x := v.Value(i)
			b = binary.LittleEndian.AppendUint32(b, uint32(x.Months))
			b = binary.LittleEndian.AppendUint32(b, uint32(x.Days))
			return binary.LittleEndian.AppendUint64(b, uint64(x.Nanoseconds))
		}, nil
	case arrow.NULL:
		return func(b []byte, i int) []byte { return b }, nil
	case arrow.STRUCT, arrow.LIST, arrow.MAP:
		return nestedKeyWriter(a)
	}
	return nil, fmt.Errorf("type %s cannot be a grouping or join key", a.DataType())
}

// nestedKeyWriter encodes a ROW as its fields and an ARRAY or MAP as its
// length and elements, each part behind a NULL marker, so equal keys are
// values equal part by part with NULL parts equal (as GROUP BY and
// DISTINCT group them).
func nestedKeyWriter(a arrow.Array) (func([]byte, int) []byte, error) {
	part := func(child arrow.Array) (func([]byte, int) []byte, error) {
		w, err := keyWriter(child)
		if err != nil {
			return nil, err
		}
		return func(b []byte, i int) []byte {
			if child.IsNull(i) {
				return append(b, 0)
			}
			return w(append(b, 1), i)
		}, nil
	}
	if s, ok := a.(*array.Struct); ok {
		fields := make([]func([]byte, int) []byte, s.NumField())
		for f := range fields {
			w, err := part(s.Field(f))
			if err != nil {
				return nil, err
			}
			fields[f] = w
		}
		return func(b []byte, i int) []byte {
			for _, w := range fields {
				b = w(b, i)
			}
			return b
		}, nil
	}
	l := a.(array.ListLike)
	elem, err := part(l.ListValues())
	if err != nil {
		return nil, err
	}
	return func(b []byte, i int) []byte {
		lo, hi := l.ValueOffsets(i)
		b = binary.AppendUvarint(b, uint64(hi-lo))
		for j := lo; j < hi; j++ {
			b = elem(b, int(j))
		}
		return b
	}, nil
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 0:
		f = 0 // folds -0 into 0
	case f != f:
		f = math.NaN()
	}
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// IntKey returns a reader of a as int64 when its type is an integer or a
// temporal type stored as one, so single-column keys can use an integer hash
// map instead of encoded byte strings.
func IntKey(a arrow.Array) (func(i int) int64, bool) {
	switch a.DataType().ID() {
	case arrow.INT8:
		v := Values[int8](a)
		return func(i int) int64 { return int64(v[i]) }, true
	case arrow.INT16:
		v := Values[int16](a)
		return func(i int) int64 { return int64(v[i]) }, true
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		v := Values[int32](a)
		return func(i int) int64 { return int64(v[i]) }, true
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		v := Values[int64](a)
		return func(i int) int64 { return v[i] }, true
	case arrow.UINT8:
		v := Values[uint8](a)
		return func(i int) int64 { return int64(v[i]) }, true
	case arrow.UINT16:
		v := Values[uint16](a)
		return func(i int) int64 { return int64(v[i]) }, true
	case arrow.UINT32:
		v := Values[uint32](a)
		return func(i int) int64 { return int64(v[i]) }, true
	}
	return nil, false
}

// IsIntKeyType reports whether IntKey accepts arrays of dt.
func IsIntKeyType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.DATE32, arrow.TIME32, arrow.INT64, arrow.DATE64,
		arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION, arrow.UINT8, arrow.UINT16, arrow.UINT32:
		return true
	}
	return false
}

// IntKeyValues returns the values of an array IsIntKeyType accepts as
// int64s (NULL rows hold arbitrary values): the array's own buffer for
// 64-bit types, else the values widened into dst, grown as needed.
func IntKeyValues(a arrow.Array, dst []int64) []int64 {
	switch a.DataType().ID() {
	case arrow.INT64, arrow.DATE64, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return Values[int64](a)
	}
	n := a.Len()
	if cap(dst) < n {
		dst = make([]int64, n)
	}
	dst = dst[:n]
	switch a.DataType().ID() {
	case arrow.INT8:
		widen(dst, Values[int8](a))
	case arrow.INT16:
		widen(dst, Values[int16](a))
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		widen(dst, Values[int32](a))
	case arrow.UINT8:
		widen(dst, Values[uint8](a))
	case arrow.UINT16:
		widen(dst, Values[uint16](a))
	case arrow.UINT32:
		widen(dst, Values[uint32](a))
	}
	return dst
}

// widen converts src's integers into dst (as long as src).
func widen[D Int, S Int | ~uint8 | ~uint16 | ~uint32](dst []D, src []S) {
	for i, v := range src {
		dst[i] = D(v)
	}
}
