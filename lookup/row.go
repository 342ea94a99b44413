package lookup

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// A cached row is Go values copied out of Arrow memory, so the cache holds
// no Arrow buffers (nothing to release on eviction) and its cost is known.
type row []any

// checkTypes reports a column whose type rows cannot hold.
func checkTypes(s *arrow.Schema) error {
	for _, f := range s.Fields() {
		switch f.Type.ID() {
		case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64,
			arrow.STRING, arrow.BINARY, arrow.DATE32, arrow.TIME64, arrow.TIMESTAMP, arrow.DECIMAL128:
		default:
			return fmt.Errorf("column %s has type %s, which lookups do not support yet", f.Name, f.Type)
		}
	}
	return nil
}

// rowAt copies row i of cols; it returns the row and its size in bytes.
func rowAt(cols []arrow.Array, i int) (row, int64) {
	r := make(row, len(cols))
	size := int64(16 * len(cols))
	for c, a := range cols {
		if a.IsNull(i) {
			continue
		}
		switch a := a.(type) {
		case *array.Boolean:
			r[c] = a.Value(i)
		case *array.Int8:
			r[c] = a.Value(i)
		case *array.Int16:
			r[c] = a.Value(i)
		case *array.Int32:
			r[c] = a.Value(i)
		case *array.Int64:
			r[c] = a.Value(i)
		case *array.Float32:
			r[c] = a.Value(i)
		case *array.Float64:
			r[c] = a.Value(i)
		case *array.String:
			r[c] = strings.Clone(a.Value(i))
			size += int64(a.ValueLen(i))
		case *array.Binary:
			r[c] = bytes.Clone(a.Value(i))
			size += int64(a.ValueLen(i))
		case *array.Date32:
			r[c] = a.Value(i)
		case *array.Time64:
			r[c] = a.Value(i)
		case *array.Timestamp:
			r[c] = a.Value(i)
		case *array.Decimal128:
			r[c] = a.Value(i)
		}
	}
	return r, size
}

// appendValue appends v (nil: NULL) of a column of rows to b.
func appendValue(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(v.(int8))
	case *array.Int16Builder:
		b.Append(v.(int16))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	case *array.Time64Builder:
		b.Append(v.(arrow.Time64))
	case *array.TimestampBuilder:
		b.Append(v.(arrow.Timestamp))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	}
}
