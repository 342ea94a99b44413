package vectorized

import (
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCastStringToTimestampRange: a string whose instant does not fit the
// target unit's int64 (nanoseconds hold 1678 to 2262) is refused as an
// overflow. CAST('1000-01-01 00:00:00' AS TIMESTAMP(9)) came back as
// 2169-02-08 23:09:07.419103232, time.UnixNano's wrapped value.
func TestCastStringToTimestampRange(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ns := &arrow.TimestampType{Unit: arrow.Nanosecond}
	for _, c := range []struct {
		s   string
		typ *arrow.TimestampType
		ok  bool
	}{
		{"1000-01-01 00:00:00", ns, false},
		{"2262-04-12 00:00:00", ns, false},
		{"1677-09-21 00:12:43", ns, false},
		{"2262-04-11 23:47:15", ns, true},
		{"1677-09-21 00:12:45", ns, true},
		{"1000-01-01 00:00:00", &arrow.TimestampType{Unit: arrow.Microsecond}, true},
		{"9999-12-31 23:59:59", &arrow.TimestampType{Unit: arrow.Millisecond}, true},
	} {
		sb := array.NewStringBuilder(mem)
		sb.Append(c.s)
		in := sb.NewArray()
		sb.Release()
		out, err := Cast(mem, in, c.typ)
		in.Release()
		if c.ok {
			if err != nil {
				t.Errorf("%s as %s: %v", c.s, c.typ, err)
				continue
			}
			if got := TimestampToTime(int64(out.(*array.Timestamp).Value(0)), c.typ.Unit).Format("2006-01-02 15:04:05"); got != c.s {
				t.Errorf("%s as %s: %s", c.s, c.typ, got)
			}
			out.Release()
			continue
		}
		if !errors.Is(err, ErrOverflow) {
			if err == nil {
				t.Errorf("%s as %s: %s, want an overflow", c.s, c.typ, TimestampToTime(int64(out.(*array.Timestamp).Value(0)), c.typ.Unit))
				out.Release()
				continue
			}
			t.Errorf("%s as %s: want an overflow, got %v", c.s, c.typ, err)
		}
	}
}

// TestTimeValueDateInZone: a date is the one its zone's calendar shows,
// and only that date is held to years 0000-9999; the instant's UTC year
// bounds timestamps. 9999-12-31 22:00 at UTC-5 was refused as a DATE
// because its instant falls in year 10000.
func TestTimeValueDateInZone(t *testing.T) {
	west := time.FixedZone("UTC-5", -5*3600)
	date := arrow.FixedWidthTypes.Date32
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	for _, c := range []struct {
		at   time.Time
		typ  arrow.DataType
		want int64 // -1: ErrDateRange
	}{
		{time.Date(9999, 12, 31, 22, 0, 0, 0, west), date, MaxDateDays},
		{time.Date(9999, 12, 31, 22, 0, 0, 0, west), ts, -1},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), date, -1},
		{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), date, MinDateDays},
		{time.Date(-1, 12, 31, 23, 0, 0, 0, time.UTC), date, -1},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), ts, (MaxDateDays+1)*86400*1000 - 1000},
	} {
		got, err := TimeValue(c.at, c.typ)
		if c.want == -1 {
			if !errors.Is(err, ErrDateRange) {
				t.Errorf("%s as %s: %d, %v; want ErrDateRange", c.at, c.typ, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s as %s: %d, %v; want %d", c.at, c.typ, got, err, c.want)
		}
	}
}
