package exec

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

func init() {
	register(resolveExtract, "extract", "date_part")
	register(resolveDateAdd, "date_add")
	register(dateDiffResolver(vectorized.DateDiff), "date_diff", "datediff")
	register(dateDiffResolver(vectorized.TimestampDiff), "timestampdiff")
	register(resolveDateTrunc, "date_trunc")
	register(resolveDateFormat, "date_format")
	register(resolveCurrentDate, "current_date")
	register(resolveCurrentTimestamp, "current_timestamp", "now")
	register(resolveProctime, "proctime")
}

func isDateTime(t arrow.DataType) bool {
	return t.ID() == arrow.DATE32 || t.ID() == arrow.TIMESTAMP
}

// unitArg checks that the argument at i is a string naming a unit, valid by
// check when it is a literal.
func unitArg(types []arrow.DataType, args []Expr, i int, check func(string) bool) error {
	if !vectorized.IsString(types[i]) {
		return fmt.Errorf("argument %d must be a unit string such as 'day', not %s", i+1, types[i])
	}
	if args != nil {
		if u, ok := literalString(args[i]); ok && !check(u) {
			return fmt.Errorf("unknown unit %q", u)
		}
	}
	return nil
}

func resolveExtract(types []arrow.DataType, args []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	if err := unitArg(types, args, 0, vectorized.ValidDatePart); err != nil {
		return nil, err
	}
	isTime := types[1].ID() == arrow.TIME64 || types[1].ID() == arrow.TIME32
	if !isDateTime(types[1]) && !isTime {
		return nil, fmt.Errorf("argument 2 must be a date, time or timestamp")
	}
	return &impl{ret: i64Type, args: []arrow.DataType{strType, nil}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapInt64s(ec.Mem, a, n, func(i int) (int64, error) {
			part := vectorized.StringAt(a[0], i)
			if isTime && !vectorized.SubDayUnit(part) {
				return 0, fmt.Errorf("%w: cannot extract %s from a time", vectorized.ErrInvalidValue, part)
			}
			return vectorized.Extract(part, vectorized.TimeAt(a[1], i))
		})
	}}, nil
}

func validUnit(u string) bool {
	_, err := vectorized.DateAdd(u, 0, time.Time{})
	return err == nil
}

// resolveDateAdd is date_add(unit, n, x) (Trino) or date_add(x, days) (Flink
// and Spark). Sub-day units on a date are an error: use a timestamp.
func resolveDateAdd(types []arrow.DataType, args []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 3); err != nil {
		return nil, err
	}
	if len(types) == 2 {
		if !isDateTime(types[0]) || !vectorized.IsInteger(types[1]) {
			return nil, fmt.Errorf("date_add(x, days) needs a date or timestamp and an integer")
		}
		ret := types[0]
		return &impl{ret: ret, args: []arrow.DataType{nil, i64Type}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			days := a[1].(*array.Int64)
			return timestampMap(ec, a, n, a[0], ret, func(i int, t time.Time) (time.Time, error) {
				return vectorized.DateAdd("day", days.Value(i), t)
			})
		}}, nil
	}
	if err := unitArg(types, args, 0, validUnit); err != nil {
		return nil, err
	}
	if !vectorized.IsInteger(types[1]) || !isDateTime(types[2]) {
		return nil, fmt.Errorf("date_add(unit, n, x) needs an integer and a date or timestamp")
	}
	ret := types[2]
	return &impl{ret: ret, args: []arrow.DataType{strType, i64Type, nil}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		k := a[1].(*array.Int64)
		return timestampMap(ec, a, n, a[2], ret, func(i int, t time.Time) (time.Time, error) {
			u := vectorized.StringAt(a[0], i)
			if ret.ID() == arrow.DATE32 && vectorized.SubDayUnit(u) {
				return t, fmt.Errorf("%w: date_add unit %q on a date; use a timestamp", vectorized.ErrInvalidValue, u)
			}
			return vectorized.DateAdd(u, k.Value(i), t)
		})
	}}, nil
}

// dateDiffResolver is date_diff(unit, a, b) or Flink's TIMESTAMPDIFF,
// which counts months as Calcite does (vectorized.TimestampDiff).
func dateDiffResolver(diff func(unit string, a, b time.Time) (int64, error)) resolver {
	return func(types []arrow.DataType, args []Expr) (*impl, error) {
		return resolveDateDiff(types, args, diff)
	}
}

func resolveDateDiff(types []arrow.DataType, args []Expr, diff func(unit string, a, b time.Time) (int64, error)) (*impl, error) {
	if err := wantArgs(types, 3, 3); err != nil {
		return nil, err
	}
	if err := unitArg(types, args, 0, validUnit); err != nil {
		return nil, err
	}
	t, ok := CommonType(types[1], types[2])
	if !ok || !isDateTime(t) {
		return nil, fmt.Errorf("arguments 2 and 3 must be dates or timestamps")
	}
	return &impl{ret: i64Type, args: []arrow.DataType{strType, t, t}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return vectorized.MapInt64s(ec.Mem, a, n, func(i int) (int64, error) {
			return diff(vectorized.StringAt(a[0], i), vectorized.TimeAt(a[1], i), vectorized.TimeAt(a[2], i))
		})
	}}, nil
}

func resolveDateTrunc(types []arrow.DataType, args []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	if err := unitArg(types, args, 0, func(u string) bool {
		_, err := vectorized.DateTrunc(u, time.Time{})
		return err == nil
	}); err != nil {
		return nil, err
	}
	if !isDateTime(types[1]) {
		return nil, fmt.Errorf("argument 2 must be a date or timestamp")
	}
	ret := types[1]
	return &impl{ret: ret, args: []arrow.DataType{strType, nil}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return timestampMap(ec, a, n, a[1], ret, func(i int, t time.Time) (time.Time, error) {
			return vectorized.DateTrunc(vectorized.StringAt(a[0], i), t)
		})
	}}, nil
}

func resolveDateFormat(types []arrow.DataType, args []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	if !isDateTime(types[0]) || !vectorized.IsString(types[1]) {
		return nil, fmt.Errorf("date_format(x, format) needs a date or timestamp and a string")
	}
	if args != nil {
		if f, ok := literalString(args[1]); ok {
			if _, err := vectorized.DateFormatLayout(f); err != nil {
				return nil, err
			}
		}
	}
	return &impl{ret: strType, args: []arrow.DataType{nil, strType}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		layouts := map[string]string{}
		return vectorized.MapStrings(ec.Mem, a, n, func(i int) (string, error) {
			f := vectorized.StringAt(a[1], i)
			l, ok := layouts[f]
			if !ok {
				var err error
				if l, err = vectorized.DateFormatLayout(f); err != nil {
					return "", err
				}
				layouts[f] = l
			}
			return vectorized.TimeAt(a[0], i).Format(l), nil
		})
	}}, nil
}

func resolveCurrentDate(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 0, 0); err != nil {
		return nil, err
	}
	return &impl{ret: dateType, fn: func(_ context.Context, ec *Context, _ []arrow.Array, n int) (arrow.Array, error) {
		d, _ := vectorized.TimeValue(ec.now(), dateType)
		out := vectorized.NewFixedOut[int32](ec.Mem, n)
		for i := range out.Vals {
			out.Vals[i] = int32(d)
		}
		return out.Finish(dateType, nil, 0), nil
	}}, nil
}

// TimestampType is the type of current_timestamp: microseconds, UTC.
var TimestampType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// resolveProctime is Flink's PROCTIME(): the wall clock when the rows are
// processed (each batch its own, unlike the statement time of
// current_timestamp), the time a temporal join's lookup happens.
func resolveProctime(types []arrow.DataType, _ []Expr) (*impl, error) {
	return resolveClock(types, func(*Context) time.Time { return time.Now() })
}

func resolveCurrentTimestamp(types []arrow.DataType, _ []Expr) (*impl, error) {
	return resolveClock(types, (*Context).now)
}

// resolveClock is a function without arguments giving every row the time
// now reads, as a TimestampType.
func resolveClock(types []arrow.DataType, now func(*Context) time.Time) (*impl, error) {
	if err := wantArgs(types, 0, 0); err != nil {
		return nil, err
	}
	return &impl{ret: TimestampType, fn: func(_ context.Context, ec *Context, _ []arrow.Array, n int) (arrow.Array, error) {
		v := now(ec).UnixMicro()
		out := vectorized.NewFixedOut[int64](ec.Mem, n)
		for i := range out.Vals {
			out.Vals[i] = v
		}
		return out.Finish(TimestampType, nil, 0), nil
	}}, nil
}

// floorTimeUnits are the units of FLOOR(x TO unit) and CEIL(x TO unit).
var floorTimeUnits = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "day": true,
	"hour": true, "minute": true, "second": true, "millisecond": true}

// floorTime truncates t to unit; Flink's (Calcite's) weeks start on Sunday,
// where DATE_TRUNC's ISO weeks start on Monday.
func floorTime(unit string, t time.Time) (time.Time, error) {
	if unit == "week" {
		y, m, d := t.Date()
		return time.Date(y, m, d-int(t.Weekday()), 0, 0, 0, 0, t.Location()), nil
	}
	return vectorized.DateTrunc(unit, t)
}

// floorCeilTime is FLOOR(x TO unit) and CEIL(x TO unit) of a date or
// timestamp, which the parser passes as floor(x, 'unit'): x truncated to
// the unit, or for CEIL the next unit boundary unless x is on one.
func floorCeilTime(types []arrow.DataType, args []Expr, floor bool) (*impl, error) {
	if !isDateTime(types[0]) {
		return nil, fmt.Errorf("argument 1 of FLOOR/CEIL ... TO unit must be a date or timestamp, not %s", types[0])
	}
	if err := unitArg(types, args, 1, func(u string) bool { return floorTimeUnits[strings.ToLower(u)] }); err != nil {
		return nil, err
	}
	ret := types[0]
	return &impl{ret: ret, args: []arrow.DataType{nil, strType}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		return timestampMap(ec, a, n, a[0], ret, func(i int, t time.Time) (time.Time, error) {
			u := strings.ToLower(vectorized.StringAt(a[1], i))
			if !floorTimeUnits[u] {
				return t, fmt.Errorf("%w: unknown FLOOR/CEIL unit %q", vectorized.ErrInvalidValue, u)
			}
			f, err := floorTime(u, t)
			if err != nil || floor || f.Equal(t) {
				return f, err
			}
			return vectorized.DateAdd(u, 1, f)
		})
	}}, nil
}
