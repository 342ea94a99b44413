package stream

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/flightd/flightd/exec"
)

// State keeps row values as Go values: int64 for signed integers, dates,
// times, timestamps and durations, uint64, float64, bool, string (strings
// and binaries, copied out of Arrow buffers), decimal128.Num, structValue
// for ROWs, listValue for ARRAYs and MAPs, nil for NULL; or, where rows
// are mostly held and seldom emitted (a top-N), as their appendRow
// encoding, written straight from the batch by a rowEncoder.

// structValue is a ROW value: the appendRow encoding of its fields, so it
// is comparable (a map key) and orders field by field.
type structValue string

// listValue is an ARRAY value, or a MAP value as the ARRAY of its entries
// (ROWs of key and value, in their order): the concatenated
// appendOrdered encodings of its elements, so it is comparable and orders
// element by element, a prefix first.
type listValue string

type getter func(a arrow.Array, i int) any

type appender func(b array.Builder, v any)

func getterFor(dt arrow.DataType) (getter, error) {
	null := func(f getter) getter {
		return func(a arrow.Array, i int) any {
			if a.IsNull(i) {
				return nil
			}
			return f(a, i)
		}
	}
	switch dt.ID() {
	case arrow.NULL:
		return func(arrow.Array, int) any { return nil }, nil
	case arrow.BOOL:
		return null(func(a arrow.Array, i int) any { return a.(*array.Boolean).Value(i) }), nil
	case arrow.INT8:
		return null(func(a arrow.Array, i int) any { return int64(a.(*array.Int8).Value(i)) }), nil
	case arrow.INT16:
		return null(func(a arrow.Array, i int) any { return int64(a.(*array.Int16).Value(i)) }), nil
	case arrow.INT32:
		return null(func(a arrow.Array, i int) any { return int64(a.(*array.Int32).Value(i)) }), nil
	case arrow.INT64:
		return null(func(a arrow.Array, i int) any { return a.(*array.Int64).Value(i) }), nil
	case arrow.UINT8:
		return null(func(a arrow.Array, i int) any { return uint64(a.(*array.Uint8).Value(i)) }), nil
	case arrow.UINT16:
		return null(func(a arrow.Array, i int) any { return uint64(a.(*array.Uint16).Value(i)) }), nil
	case arrow.UINT32:
		return null(func(a arrow.Array, i int) any { return uint64(a.(*array.Uint32).Value(i)) }), nil
	case arrow.UINT64:
		return null(func(a arrow.Array, i int) any { return a.(*array.Uint64).Value(i) }), nil
	case arrow.FLOAT32:
		return null(func(a arrow.Array, i int) any { return float64(a.(*array.Float32).Value(i)) }), nil
	case arrow.FLOAT64:
		return null(func(a arrow.Array, i int) any { return a.(*array.Float64).Value(i) }), nil
	case arrow.DATE32:
		return null(func(a arrow.Array, i int) any { return int64(a.(*array.Date32).Value(i)) }), nil
	case arrow.DATE64:
		return null(func(a arrow.Array, i int) any { return int64(a.(*array.Date64).Value(i)) }), nil
	case arrow.TIME32:
		return null(func(a arrow.Array, i int) any { return int64(a.(*array.Time32).Value(i)) }), nil
	case arrow.TIME64:
		return null(func(a arrow.Array, i int) any { return int64(a.(*array.Time64).Value(i)) }), nil
	case arrow.TIMESTAMP:
		return null(func(a arrow.Array, i int) any { return int64(a.(*array.Timestamp).Value(i)) }), nil
	case arrow.DURATION:
		return null(func(a arrow.Array, i int) any { return int64(a.(*array.Duration).Value(i)) }), nil
	case arrow.STRING:
		// Clone: Value aliases the batch's buffer, which state outlives.
		return null(func(a arrow.Array, i int) any { return strings.Clone(a.(*array.String).Value(i)) }), nil
	case arrow.LARGE_STRING:
		return null(func(a arrow.Array, i int) any { return strings.Clone(a.(*array.LargeString).Value(i)) }), nil
	case arrow.BINARY:
		return null(func(a arrow.Array, i int) any { return string(a.(*array.Binary).Value(i)) }), nil
	case arrow.DECIMAL128:
		return null(func(a arrow.Array, i int) any { return a.(*array.Decimal128).Value(i) }), nil
	case arrow.STRUCT:
		fields, err := rowGetterFor(dt.(*arrow.StructType).Fields())
		if err != nil {
			return nil, err
		}
		return null(func(a arrow.Array, i int) any {
			s := a.(*array.Struct)
			var b []byte
			for f, get := range fields {
				b = appendOrdered(b, get(s.Field(f), i), false, true)
			}
			return structValue(b)
		}), nil
	case arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
		get, err := getterFor(dt.(arrow.ListLikeType).Elem())
		if err != nil {
			return nil, err
		}
		return null(func(a arrow.Array, i int) any {
			l := a.(array.ListLike)
			start, end := l.ValueOffsets(i)
			elems := l.ListValues()
			var b []byte
			for j := start; j < end; j++ {
				b = appendOrdered(b, get(elems, int(j)), false, true)
			}
			return listValue(b)
		}), nil
	}
	return nil, fmt.Errorf("%w: type %s cannot be kept in streaming state yet", exec.ErrInvalid, dt)
}

func appenderFor(dt arrow.DataType) (appender, error) {
	null := func(f appender) appender {
		return func(b array.Builder, v any) {
			if v == nil {
				b.AppendNull()
				return
			}
			f(b, v)
		}
	}
	switch dt.ID() {
	case arrow.NULL:
		return func(b array.Builder, _ any) { b.AppendNull() }, nil
	case arrow.BOOL:
		return null(func(b array.Builder, v any) { b.(*array.BooleanBuilder).Append(v.(bool)) }), nil
	case arrow.INT8:
		return null(func(b array.Builder, v any) { b.(*array.Int8Builder).Append(int8(v.(int64))) }), nil
	case arrow.INT16:
		return null(func(b array.Builder, v any) { b.(*array.Int16Builder).Append(int16(v.(int64))) }), nil
	case arrow.INT32:
		return null(func(b array.Builder, v any) { b.(*array.Int32Builder).Append(int32(v.(int64))) }), nil
	case arrow.INT64:
		return null(func(b array.Builder, v any) { b.(*array.Int64Builder).Append(v.(int64)) }), nil
	case arrow.UINT8:
		return null(func(b array.Builder, v any) { b.(*array.Uint8Builder).Append(uint8(v.(uint64))) }), nil
	case arrow.UINT16:
		return null(func(b array.Builder, v any) { b.(*array.Uint16Builder).Append(uint16(v.(uint64))) }), nil
	case arrow.UINT32:
		return null(func(b array.Builder, v any) { b.(*array.Uint32Builder).Append(uint32(v.(uint64))) }), nil
	case arrow.UINT64:
		return null(func(b array.Builder, v any) { b.(*array.Uint64Builder).Append(v.(uint64)) }), nil
	case arrow.FLOAT32:
		return null(func(b array.Builder, v any) { b.(*array.Float32Builder).Append(float32(v.(float64))) }), nil
	case arrow.FLOAT64:
		return null(func(b array.Builder, v any) { b.(*array.Float64Builder).Append(v.(float64)) }), nil
	case arrow.DATE32:
		return null(func(b array.Builder, v any) { b.(*array.Date32Builder).Append(arrow.Date32(v.(int64))) }), nil
	case arrow.DATE64:
		return null(func(b array.Builder, v any) { b.(*array.Date64Builder).Append(arrow.Date64(v.(int64))) }), nil
	case arrow.TIME32:
		return null(func(b array.Builder, v any) { b.(*array.Time32Builder).Append(arrow.Time32(v.(int64))) }), nil
	case arrow.TIME64:
		return null(func(b array.Builder, v any) { b.(*array.Time64Builder).Append(arrow.Time64(v.(int64))) }), nil
	case arrow.TIMESTAMP:
		return null(func(b array.Builder, v any) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(v.(int64))) }), nil
	case arrow.DURATION:
		return null(func(b array.Builder, v any) { b.(*array.DurationBuilder).Append(arrow.Duration(v.(int64))) }), nil
	case arrow.STRING:
		return null(func(b array.Builder, v any) { b.(*array.StringBuilder).Append(v.(string)) }), nil
	case arrow.LARGE_STRING:
		return null(func(b array.Builder, v any) { b.(*array.LargeStringBuilder).Append(v.(string)) }), nil
	case arrow.BINARY:
		return null(func(b array.Builder, v any) { b.(*array.BinaryBuilder).Append([]byte(v.(string))) }), nil
	case arrow.DECIMAL128:
		return null(func(b array.Builder, v any) { b.(*array.Decimal128Builder).Append(v.(decimal128.Num)) }), nil
	case arrow.STRUCT:
		fields := dt.(*arrow.StructType).Fields()
		apps, decs := make([]appender, len(fields)), make([]orderedDecoder, len(fields))
		for i, f := range fields {
			var err error
			if apps[i], err = appenderFor(f.Type); err != nil {
				return nil, err
			}
			if decs[i], err = orderedDecoderFor(f.Type); err != nil {
				return nil, err
			}
		}
		return null(func(b array.Builder, v any) {
			row, _, err := decodeRow([]byte(v.(structValue)), decs)
			if err != nil {
				panic(err) // a structValue is this package's own encoding
			}
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			for f, app := range apps {
				app(sb.FieldBuilder(f), row[f])
			}
		}), nil
	case arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
		elem := dt.(arrow.ListLikeType).Elem()
		app, err := appenderFor(elem)
		if err != nil {
			return nil, err
		}
		dec, err := orderedDecoderFor(elem)
		if err != nil {
			return nil, err
		}
		return null(func(b array.Builder, v any) {
			lb := b.(array.ListLikeBuilder)
			lb.Append(true)
			for rest := []byte(v.(listValue)); len(rest) > 0; {
				var elem any
				var err error
				if elem, rest, err = dec(rest, false); err != nil {
					panic(err) // a listValue is this package's own encoding
				}
				app(lb.ValueBuilder(), elem)
			}
		}), nil
	}
	return nil, fmt.Errorf("%w: type %s cannot be kept in streaming state yet", exec.ErrInvalid, dt)
}

// encoder appends appendOrdered's encoding of row i of an array, as
// appendOrdered of what its type's getter reads, without boxing the value
// or copying a string out of the batch first.
type encoder func(dst []byte, a arrow.Array, i int, desc, nullsFirst bool) []byte

func encoderFor(dt arrow.DataType) (encoder, error) {
	ints := func(val func(a arrow.Array, i int) int64) encoder {
		return func(dst []byte, a arrow.Array, i int, desc, nullsFirst bool) []byte {
			if a.IsNull(i) {
				return appendOrdered(dst, nil, desc, nullsFirst)
			}
			return appendOrderedInt(dst, val(a, i), desc)
		}
	}
	strs := func(val func(a arrow.Array, i int) string) encoder {
		return func(dst []byte, a arrow.Array, i int, desc, nullsFirst bool) []byte {
			if a.IsNull(i) {
				return appendOrdered(dst, nil, desc, nullsFirst)
			}
			return appendOrderedString(dst, val(a, i), desc)
		}
	}
	switch dt.ID() {
	case arrow.INT32:
		return ints(func(a arrow.Array, i int) int64 { return int64(a.(*array.Int32).Value(i)) }), nil
	case arrow.INT64:
		// The commonest types in one call each, without ints' second.
		return func(dst []byte, a arrow.Array, i int, desc, nullsFirst bool) []byte {
			if x := a.(*array.Int64); x.IsValid(i) {
				return appendOrderedInt(dst, x.Value(i), desc)
			}
			return appendOrdered(dst, nil, desc, nullsFirst)
		}, nil
	case arrow.DATE32:
		return ints(func(a arrow.Array, i int) int64 { return int64(a.(*array.Date32).Value(i)) }), nil
	case arrow.TIMESTAMP:
		return func(dst []byte, a arrow.Array, i int, desc, nullsFirst bool) []byte {
			if x := a.(*array.Timestamp); x.IsValid(i) {
				return appendOrderedInt(dst, int64(x.Value(i)), desc)
			}
			return appendOrdered(dst, nil, desc, nullsFirst)
		}, nil
	case arrow.STRING:
		return func(dst []byte, a arrow.Array, i int, desc, nullsFirst bool) []byte {
			if x := a.(*array.String); x.IsValid(i) {
				return appendOrderedString(dst, x.Value(i), desc)
			}
			return appendOrdered(dst, nil, desc, nullsFirst)
		}, nil
	case arrow.LARGE_STRING:
		return strs(func(a arrow.Array, i int) string { return a.(*array.LargeString).Value(i) }), nil
	case arrow.BINARY:
		return strs(func(a arrow.Array, i int) string { return a.(*array.Binary).ValueString(i) }), nil
	}
	get, err := getterFor(dt)
	if err != nil {
		return nil, err
	}
	return func(dst []byte, a arrow.Array, i int, desc, nullsFirst bool) []byte {
		return appendOrdered(dst, get(a, i), desc, nullsFirst)
	}, nil
}

// rowEncoder encodes whole rows of a batch as appendRow does (-0 kept).
type rowEncoder []encoder

func rowEncoderFor(fields []arrow.Field) (rowEncoder, error) {
	e := make(rowEncoder, len(fields))
	for i, f := range fields {
		var err error
		if e[i], err = encoderFor(f.Type); err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		if id := f.Type.ID(); id == arrow.FLOAT32 || id == arrow.FLOAT64 {
			get, _ := getterFor(f.Type) // as encoderFor
			e[i] = func(dst []byte, a arrow.Array, i int, _, _ bool) []byte { return appendValue(dst, get(a, i)) }
		}
	}
	return e, nil
}

// appendRow appends appendRow's encoding of row i of cols to dst.
func (e rowEncoder) appendRow(dst []byte, cols []arrow.Array, i int) []byte {
	for c, enc := range e {
		dst = enc(dst, cols[c], i, false, true)
	}
	return dst
}

// rowGetter reads whole rows of a batch.
type rowGetter []getter

func rowGetterFor(fields []arrow.Field) (rowGetter, error) {
	g := make(rowGetter, len(fields))
	for i, f := range fields {
		var err error
		if g[i], err = getterFor(f.Type); err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
	}
	return g, nil
}

// row reads row i of cols.
func (g rowGetter) row(cols []arrow.Array, i int) []any { return g.rowInto(nil, cols, i) }

// rowInto reads row i of cols into out, or into a new slice if out is not
// one value per column.
func (g rowGetter) rowInto(out []any, cols []arrow.Array, i int) []any {
	if len(out) != len(g) {
		out = make([]any, len(g))
	}
	for c, get := range g {
		out[c] = get(cols[c], i)
	}
	return out
}

// copier appends row i of an array to a builder of its type, as
// appending what its getter reads would, without boxing the value or
// copying a string out of the batch first.
type copier func(b array.Builder, a arrow.Array, i int)

func copierFor(dt arrow.DataType) (copier, error) {
	valid := func(f copier) copier {
		return func(b array.Builder, a arrow.Array, i int) {
			if a.IsNull(i) {
				b.AppendNull()
				return
			}
			f(b, a, i)
		}
	}
	switch dt.ID() {
	case arrow.INT32:
		return valid(func(b array.Builder, a arrow.Array, i int) {
			b.(*array.Int32Builder).Append(a.(*array.Int32).Value(i))
		}), nil
	case arrow.INT64:
		return valid(func(b array.Builder, a arrow.Array, i int) {
			b.(*array.Int64Builder).Append(a.(*array.Int64).Value(i))
		}), nil
	case arrow.DATE32:
		return valid(func(b array.Builder, a arrow.Array, i int) {
			b.(*array.Date32Builder).Append(a.(*array.Date32).Value(i))
		}), nil
	case arrow.TIMESTAMP:
		return valid(func(b array.Builder, a arrow.Array, i int) {
			b.(*array.TimestampBuilder).Append(a.(*array.Timestamp).Value(i))
		}), nil
	case arrow.FLOAT64:
		return valid(func(b array.Builder, a arrow.Array, i int) {
			b.(*array.Float64Builder).Append(a.(*array.Float64).Value(i))
		}), nil
	case arrow.STRING:
		return valid(func(b array.Builder, a arrow.Array, i int) {
			b.(*array.StringBuilder).Append(a.(*array.String).Value(i))
		}), nil
	case arrow.LARGE_STRING:
		return valid(func(b array.Builder, a arrow.Array, i int) {
			b.(*array.LargeStringBuilder).Append(a.(*array.LargeString).Value(i))
		}), nil
	}
	get, err := getterFor(dt)
	if err != nil {
		return nil, err
	}
	put, err := appenderFor(dt)
	if err != nil {
		return nil, err
	}
	return func(b array.Builder, a arrow.Array, i int) { put(b, get(a, i)) }, nil
}

// unpacker appends the value enc starts with, in appendValue's encoding,
// to a builder of its type, or only checks it when b is nil, and returns
// the rest of enc: a row encoded by a rowEncoder goes to a batch without
// being boxed first.
type unpacker func(b array.Builder, enc []byte) ([]byte, error)

func unpackerFor(dt arrow.DataType) (unpacker, error) {
	dec, err := orderedDecoderFor(dt)
	if err != nil {
		return nil, err
	}
	put, err := appenderFor(dt)
	if err != nil {
		return nil, err
	}
	boxed := func(b array.Builder, enc []byte) ([]byte, error) {
		v, rest, err := dec(enc, false)
		if err == nil && b != nil {
			put(b, v)
		}
		return rest, err
	}
	ints := func(app func(b array.Builder, x int64)) unpacker {
		return func(b array.Builder, enc []byte) ([]byte, error) {
			if len(enc) == 0 || enc[0] == 1 && len(enc) < 9 {
				return nil, errCorruptState
			}
			if enc[0] != 1 {
				if b != nil {
					b.AppendNull()
				}
				return enc[1:], nil
			}
			if b != nil {
				app(b, int64(binary.BigEndian.Uint64(enc[1:9])^1<<63))
			}
			return enc[9:], nil
		}
	}
	strs := func(app func(b array.Builder, v []byte)) unpacker {
		return func(b array.Builder, enc []byte) ([]byte, error) {
			// Most strings hold no 0x00: the first is the end's.
			if len(enc) > 0 && enc[0] == 1 {
				if i := bytes.IndexByte(enc[1:], 0) + 1; i > 0 && i+1 < len(enc) && enc[i+1] == 1 {
					if b != nil {
						app(b, enc[1:i])
					}
					return enc[i+2:], nil
				}
			}
			return boxed(b, enc)
		}
	}
	switch dt.ID() {
	case arrow.INT32:
		return ints(func(b array.Builder, x int64) { b.(*array.Int32Builder).Append(int32(x)) }), nil
	case arrow.INT64:
		return ints(func(b array.Builder, x int64) { b.(*array.Int64Builder).Append(x) }), nil
	case arrow.DATE32:
		return ints(func(b array.Builder, x int64) { b.(*array.Date32Builder).Append(arrow.Date32(x)) }), nil
	case arrow.TIMESTAMP:
		return ints(func(b array.Builder, x int64) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(x)) }), nil
	case arrow.STRING:
		return strs(func(b array.Builder, v []byte) { b.(*array.StringBuilder).BinaryBuilder.Append(v) }), nil
	case arrow.LARGE_STRING:
		return strs(func(b array.Builder, v []byte) { b.(*array.LargeStringBuilder).BinaryBuilder.Append(v) }), nil
	}
	return boxed, nil
}

// rowUnpacker appends whole encoded rows, or some of their columns.
type rowUnpacker []unpacker

func rowUnpackerFor(fields []arrow.Field) (rowUnpacker, error) {
	u := make(rowUnpacker, len(fields))
	for i, f := range fields {
		var err error
		if u[i], err = unpackerFor(f.Type); err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
	}
	return u, nil
}

// appendRow appends the columns sel (ascending; nil: all) of the row enc
// starts with to bs, one builder per column appended.
func (u rowUnpacker) appendRow(bs []array.Builder, enc []byte, sel []int) error {
	var err error
	k := 0
	for c, un := range u {
		var b array.Builder
		switch {
		case sel == nil:
			b = bs[c]
		case k == len(sel):
			return nil // no more columns wanted
		case sel[k] == c:
			b = bs[k]
			k++
		}
		if enc, err = un(b, enc); err != nil {
			return err
		}
	}
	return nil
}

// rowLen checks the row enc starts with whole and returns its length.
func (u rowUnpacker) rowLen(enc []byte) (int, error) {
	var err error
	rest := enc
	for _, un := range u {
		if rest, err = un(nil, rest); err != nil {
			return 0, err
		}
	}
	return len(enc) - len(rest), nil
}

// compareValues orders two non-NULL values of one type.
func compareValues(a, b any) int {
	switch x := a.(type) {
	case int64:
		return cmp.Compare(x, b.(int64))
	case uint64:
		return cmp.Compare(x, b.(uint64))
	case float64:
		y := b.(float64)
		// NaN sorts after every number, as in exec's min/max (cmp.Compare
		// alone would put NaN first).
		switch {
		case math.IsNaN(x) && math.IsNaN(y):
			return 0
		case math.IsNaN(x):
			return 1
		case math.IsNaN(y):
			return -1
		}
		return cmp.Compare(x, y)
	case string:
		return strings.Compare(x, b.(string))
	case structValue:
		return strings.Compare(string(x), string(b.(structValue)))
	case listValue:
		return strings.Compare(string(x), string(b.(listValue)))
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case decimal128.Num:
		return x.Cmp(b.(decimal128.Num))
	}
	panic(fmt.Sprintf("stream: cannot compare %T", a))
}

// sameValue is value equality, NULL equal to NULL and NaN to NaN (whether
// an emitted row changed).
func sameValue(a, b any) bool {
	if fa, ok := a.(float64); ok {
		fb, ok := b.(float64)
		return ok && (fa == fb && math.Signbit(fa) == math.Signbit(fb) || math.IsNaN(fa) && math.IsNaN(fb))
	}
	return a == b
}

func sameRow(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// mapKey is a value usable as a map key (floats by bits: NaN != NaN).
func mapKey(v any) any {
	if f, ok := v.(float64); ok {
		if math.IsNaN(f) {
			f = math.NaN()
		}
		if f == 0 {
			f = 0 // -0 and 0 are one value
		}
		return math.Float64bits(f)
	}
	return v
}

// rowBytes estimates what a row of values holds in memory.
func rowBytes(vals []any) int64 {
	n := int64(24 + 16*len(vals))
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case structValue:
			n += int64(len(x))
		case listValue:
			n += int64(len(x))
		case decimal128.Num:
			n += 16
		case nil:
		default:
			n += 8
		}
	}
	return n
}

// appendOrdered appends an order-preserving encoding of v to dst: byte
// strings compare as the values do (descending inverts the value's bytes),
// NULL first or last whatever the direction. The encoding of a value is
// prefix-free, so concatenations compare column by column.
func appendOrdered(dst []byte, v any, desc, nullsFirst bool) []byte {
	if v == nil {
		if nullsFirst {
			return append(dst, 0)
		}
		return append(dst, 2)
	}
	switch x := v.(type) {
	case int64:
		return appendOrderedInt(dst, x, desc)
	case string:
		return appendOrderedString(dst, x, desc)
	}
	dst = append(dst, 1)
	start := len(dst)
	switch x := v.(type) {
	case uint64:
		dst = binary.BigEndian.AppendUint64(dst, x)
	case float64:
		if math.IsNaN(x) {
			x = math.NaN() // one NaN, after every number
		}
		if x == 0 {
			x = 0 // -0 and 0 are one value
		}
		b := math.Float64bits(x)
		if b&(1<<63) != 0 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		dst = binary.BigEndian.AppendUint64(dst, b)
	case bool:
		if x {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	case structValue:
		dst = appendEscaped(dst, string(x))
	case listValue:
		dst = appendEscaped(dst, string(x))
	case decimal128.Num:
		dst = binary.BigEndian.AppendUint64(dst, uint64(x.HighBits())^1<<63)
		dst = binary.BigEndian.AppendUint64(dst, x.LowBits())
	default:
		panic(fmt.Sprintf("stream: cannot encode %T", v))
	}
	return invertFrom(dst, start, desc)
}

// appendOrderedInt is appendOrdered of a non-NULL int64.
func appendOrderedInt(dst []byte, x int64, desc bool) []byte {
	dst = append(dst, 1)
	start := len(dst)
	return invertFrom(binary.BigEndian.AppendUint64(dst, uint64(x)^1<<63), start, desc)
}

// appendOrderedString is appendOrdered of a non-NULL string.
func appendOrderedString(dst []byte, x string, desc bool) []byte {
	dst = append(dst, 1)
	start := len(dst)
	return invertFrom(appendEscaped(dst, x), start, desc)
}

// invertFrom inverts dst's bytes from start on for a descending order.
func invertFrom(dst []byte, start int, desc bool) []byte {
	if desc {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst
}

// appendEscaped appends x with 0x00 escaped as 00 FF, ended by 00 01:
// prefix-free, and a prefix sorts first.
func appendEscaped(dst []byte, x string) []byte {
	for {
		i := strings.IndexByte(x, 0)
		if i < 0 {
			return append(append(dst, x...), 0, 1)
		}
		dst = append(append(dst, x[:i]...), 0, 0xFF)
		x = x[i+1:]
	}
}

// appendRow appends the ordered encoding of every value of row (to spill
// it; decodeRow reads it back).
func appendRow(dst []byte, row []any) []byte {
	for _, v := range row {
		dst = appendValue(dst, v)
	}
	return dst
}

// appendValue appends v as appendOrdered ascending with NULL first does,
// except that -0 keeps its sign: a row's values must read back as they
// were, where a key folds -0 into 0 (they are equal). -0 orders just
// before 0.
func appendValue(dst []byte, v any) []byte {
	if x, ok := v.(float64); ok && x == 0 && math.Signbit(x) {
		return binary.BigEndian.AppendUint64(append(dst, 1), ^math.Float64bits(x))
	}
	return appendOrdered(dst, v, false, true)
}

// decodeRow reads a row appendRow wrote, one value per decoder.
func decodeRow(b []byte, dec []orderedDecoder) ([]any, []byte, error) {
	return decodeRowInto(make([]any, len(dec)), b, dec)
}

// decodeRowInto is decodeRow into row, one value per decoder.
func decodeRowInto(row []any, b []byte, dec []orderedDecoder) ([]any, []byte, error) {
	var err error
	for i, d := range dec {
		if row[i], b, err = d(b, false); err != nil {
			return nil, nil, err
		}
	}
	return row, b, nil
}

// orderedDecoder reads one value of a type from appendOrdered's encoding.
type orderedDecoder func(b []byte, desc bool) (any, []byte, error)

var errCorruptState = fmt.Errorf("%w: corrupt spilled streaming state", exec.ErrInvalid)

func orderedDecoderFor(dt arrow.DataType) (orderedDecoder, error) {
	if _, err := getterFor(dt); err != nil {
		return nil, err
	}
	// fixed reads n value bytes, un-inverted.
	fixed := func(b []byte, n int, desc bool) ([]byte, []byte, error) {
		if len(b) < n {
			return nil, nil, errCorruptState
		}
		v := b[:n]
		if desc {
			v = make([]byte, n)
			for i := range n {
				v[i] = ^b[i]
			}
		}
		return v, b[n:], nil
	}
	var val func(b []byte, desc bool) (any, []byte, error)
	switch dt.ID() {
	case arrow.NULL:
		val = func([]byte, bool) (any, []byte, error) { return nil, nil, errCorruptState }
	case arrow.BOOL:
		val = func(b []byte, desc bool) (any, []byte, error) {
			v, rest, err := fixed(b, 1, desc)
			if err != nil {
				return nil, nil, err
			}
			return v[0] == 1, rest, nil
		}
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		val = func(b []byte, desc bool) (any, []byte, error) {
			v, rest, err := fixed(b, 8, desc)
			if err != nil {
				return nil, nil, err
			}
			return binary.BigEndian.Uint64(v), rest, nil
		}
	case arrow.FLOAT32, arrow.FLOAT64:
		val = func(b []byte, desc bool) (any, []byte, error) {
			v, rest, err := fixed(b, 8, desc)
			if err != nil {
				return nil, nil, err
			}
			u := binary.BigEndian.Uint64(v)
			if u&(1<<63) != 0 {
				u &^= 1 << 63
			} else {
				u = ^u
			}
			return math.Float64frombits(u), rest, nil
		}
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.STRUCT, arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
		id := dt.ID()
		value := func(out []byte) any {
			switch id {
			case arrow.STRUCT:
				return structValue(out)
			case arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
				return listValue(out)
			}
			return string(out)
		}
		val = func(b []byte, desc bool) (any, []byte, error) {
			if !desc {
				// Most values hold no 0x00: the first is the end's.
				if i := bytes.IndexByte(b, 0); i >= 0 && i+1 < len(b) && b[i+1] == 1 {
					return value(b[:i]), b[i+2:], nil
				}
			}
			var flip byte
			if desc {
				flip = 0xFF
			}
			var out []byte
			for i := 0; i+1 < len(b); i++ {
				c := b[i] ^ flip
				if c != 0 {
					out = append(out, c)
					continue
				}
				switch b[i+1] ^ flip {
				case 1:
					return value(out), b[i+2:], nil
				case 0xFF:
					out = append(out, 0)
					i++
				default:
					return nil, nil, errCorruptState
				}
			}
			return nil, nil, errCorruptState
		}
	case arrow.DECIMAL128:
		val = func(b []byte, desc bool) (any, []byte, error) {
			v, rest, err := fixed(b, 16, desc)
			if err != nil {
				return nil, nil, err
			}
			return decimal128.New(int64(binary.BigEndian.Uint64(v)^1<<63), binary.BigEndian.Uint64(v[8:])), rest, nil
		}
	default: // signed integers and the temporal types
		val = func(b []byte, desc bool) (any, []byte, error) {
			v, rest, err := fixed(b, 8, desc)
			if err != nil {
				return nil, nil, err
			}
			return int64(binary.BigEndian.Uint64(v) ^ 1<<63), rest, nil
		}
	}
	return func(b []byte, desc bool) (any, []byte, error) {
		if len(b) == 0 {
			return nil, nil, errCorruptState
		}
		if b[0] != 1 {
			return nil, b[1:], nil
		}
		return val(b[1:], desc)
	}, nil
}
