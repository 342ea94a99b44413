package vectorized

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// FormatValue renders non-NULL a[i] the way SQL casts it to a string.
func FormatValue(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	switch arr := a.(type) {
	case *array.Boolean:
		return strconv.FormatBool(arr.Value(i))
	case *array.Int8:
		return strconv.FormatInt(int64(arr.Value(i)), 10)
	case *array.Int16:
		return strconv.FormatInt(int64(arr.Value(i)), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(arr.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(arr.Value(i), 10)
	case *array.Uint8:
		return strconv.FormatUint(uint64(arr.Value(i)), 10)
	case *array.Uint16:
		return strconv.FormatUint(uint64(arr.Value(i)), 10)
	case *array.Uint32:
		return strconv.FormatUint(uint64(arr.Value(i)), 10)
	case *array.Uint64:
		return strconv.FormatUint(arr.Value(i), 10)
	case *array.Float32:
		return strconv.FormatFloat(float64(arr.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.FormatFloat(arr.Value(i), 'g', -1, 64)
	case *array.Decimal128:
		return arr.Value(i).ToString(arr.DataType().(*arrow.Decimal128Type).Scale)
	case *array.String:
		return arr.Value(i)
	case *array.LargeString:
		return arr.Value(i)
	case *array.Binary:
		return string(arr.Value(i))
	case *array.Date32:
		return arr.Value(i).ToTime().Format("2006-01-02")
	case *array.Date64:
		return arr.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		ts := arr.DataType().(*arrow.TimestampType)
		return FormatTimestamp(TimestampToTime(int64(arr.Value(i)), ts.Unit), ts)
	case *array.Time64:
		return arr.Value(i).ToTime(arr.DataType().(*arrow.Time64Type).Unit).Format("15:04:05.999999999")
	case *array.Time32:
		return arr.Value(i).ToTime(arr.DataType().(*arrow.Time32Type).Unit).Format("15:04:05.999")
	}
	return a.ValueStr(i)
}

// FormatTimestamp renders t (UTC-based) for a timestamp type: with a time
// zone the offset is shown.
func FormatTimestamp(t time.Time, ts *arrow.TimestampType) string {
	if ts.TimeZone != "" {
		if loc, err := ts.GetZone(); err == nil && loc != nil {
			t = t.In(loc)
		}
		return t.Format("2006-01-02 15:04:05.999999999Z07:00")
	}
	return t.Format("2006-01-02 15:04:05.999999999")
}

// TimestampToTime converts a raw timestamp value to a UTC time.
func TimestampToTime(v int64, unit arrow.TimeUnit) time.Time {
	switch unit {
	case arrow.Second:
		return time.Unix(v, 0).UTC()
	case arrow.Millisecond:
		return time.UnixMilli(v).UTC()
	case arrow.Microsecond:
		return time.UnixMicro(v).UTC()
	}
	return time.Unix(0, v).UTC()
}

// TimeToTimestamp converts a time to a raw timestamp value of unit.
func TimeToTimestamp(t time.Time, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return t.Unix()
	case arrow.Millisecond:
		return t.UnixMilli()
	case arrow.Microsecond:
		return t.UnixMicro()
	}
	return t.UnixNano()
}

// UnitsPerSecond is the number of ticks of unit in one second.
func UnitsPerSecond(unit arrow.TimeUnit) int64 {
	return [...]int64{1, 1e3, 1e6, 1e9}[unit]
}

// AppendValue appends a[i] (possibly NULL) to b, which must be a builder
// of a's type.
func AppendValue(b array.Builder, a arrow.Array, i int) {
	if a.IsNull(i) {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.Int64Builder:
		bb.Append(a.(*array.Int64).Value(i))
	case *array.Int32Builder:
		bb.Append(a.(*array.Int32).Value(i))
	case *array.Int16Builder:
		bb.Append(a.(*array.Int16).Value(i))
	case *array.Int8Builder:
		bb.Append(a.(*array.Int8).Value(i))
	case *array.Uint64Builder:
		bb.Append(a.(*array.Uint64).Value(i))
	case *array.Uint32Builder:
		bb.Append(a.(*array.Uint32).Value(i))
	case *array.Uint16Builder:
		bb.Append(a.(*array.Uint16).Value(i))
	case *array.Uint8Builder:
		bb.Append(a.(*array.Uint8).Value(i))
	case *array.Float64Builder:
		bb.Append(a.(*array.Float64).Value(i))
	case *array.Float32Builder:
		bb.Append(a.(*array.Float32).Value(i))
	case *array.BooleanBuilder:
		bb.Append(a.(*array.Boolean).Value(i))
	case *array.StringBuilder:
		bb.Append(a.(*array.String).Value(i))
	case *array.LargeStringBuilder:
		bb.Append(a.(*array.LargeString).Value(i))
	case *array.BinaryBuilder:
		switch x := a.(type) {
		case *array.Binary:
			bb.Append(x.Value(i))
		case *array.LargeBinary:
			bb.Append(x.Value(i))
		}
	case *array.Decimal128Builder:
		bb.Append(a.(*array.Decimal128).Value(i))
	case *array.Date32Builder:
		bb.Append(a.(*array.Date32).Value(i))
	case *array.Date64Builder:
		bb.Append(a.(*array.Date64).Value(i))
	case *array.TimestampBuilder:
		bb.Append(a.(*array.Timestamp).Value(i))
	case *array.Time32Builder:
		bb.Append(a.(*array.Time32).Value(i))
	case *array.Time64Builder:
		bb.Append(a.(*array.Time64).Value(i))
	case *array.DurationBuilder:
		bb.Append(a.(*array.Duration).Value(i))
	case *array.MonthDayNanoIntervalBuilder:
		bb.Append(a.(*array.MonthDayNanoInterval).Value(i))
	case *array.NullBuilder:
		bb.AppendNull()
	default:
		// Rare nested types: go through the generic JSON path.
		if err := b.AppendValueFromString(a.ValueStr(i)); err != nil {
			panic(fmt.Sprintf("vectorized: cannot append %s value: %v", a.DataType(), err))
		}
	}
}
