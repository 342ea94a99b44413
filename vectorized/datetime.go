package vectorized

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TimeAt reads a date, time or timestamp value as a time.Time: dates at UTC
// midnight, times on 1970-01-01 UTC, timestamps with a zone in that zone,
// others in UTC.
func TimeAt(a arrow.Array, i int) time.Time {
	switch x := a.(type) {
	case *array.Date32:
		return time.Unix(int64(x.Value(i))*86400, 0).UTC()
	case *array.Time64:
		return time.Unix(0, int64(x.Value(i))*(1e9/UnitsPerSecond(x.DataType().(*arrow.Time64Type).Unit))).UTC()
	case *array.Time32:
		return time.Unix(0, int64(x.Value(i))*(1e9/UnitsPerSecond(x.DataType().(*arrow.Time32Type).Unit))).UTC()
	case *array.Timestamp:
		ts := x.DataType().(*arrow.TimestampType)
		t := TimestampToTime(int64(x.Value(i)), ts.Unit)
		if ts.TimeZone != "" {
			if loc, err := ts.GetZone(); err == nil && loc != nil {
				t = t.In(loc)
			}
		}
		return t
	}
	return time.Time{}
}

// ErrDateRange reports a date or timestamp outside years 0000 to 9999, or
// its type's ticks (SQLSTATE 22008, datetime_field_overflow). It wraps
// ErrOverflow.
var ErrDateRange = fmt.Errorf("%w: datetime out of range", ErrOverflow)

// Dates and timestamps are kept to years 0000 to 9999, Flink's range for
// DATE and TIMESTAMP: what SQL literals and text casts can write and what
// clients' date types read. `DATE '9999-12-31' + INTERVAL '1' DAY` made a
// date in year 10000 that pyarrow could not convert.
const (
	MinDateDays = -719528 // 0000-01-01, in days since 1970-01-01
	MaxDateDays = 2932896 // 9999-12-31
)

// CheckDate refuses a date (days since 1970-01-01) outside years 0000 to
// 9999.
func CheckDate(days int64) error {
	if days < MinDateDays || days > MaxDateDays {
		return fmt.Errorf("%w: date %d days from 1970-01-01 is outside 0000-01-01 to 9999-12-31", ErrDateRange, days)
	}
	return nil
}

// CheckTimestamp refuses a timestamp of unit outside years 0000 to 9999
// (in UTC).
func CheckTimestamp(v int64, unit arrow.TimeUnit) error {
	if sec := floorDiv(v, UnitsPerSecond(unit)); sec < MinDateDays*86400 || sec >= (MaxDateDays+1)*86400 {
		return fmt.Errorf("%w: timestamp %d s from 1970-01-01 is outside 0000-01-01 to 9999-12-31", ErrDateRange, sec)
	}
	return nil
}

// TimeValue converts t back to the raw value of a date or timestamp type;
// outside years 0000 to 9999 (or the unit's int64 range) it is
// ErrDateRange.
func TimeValue(t time.Time, dt arrow.DataType) (int64, error) {
	switch x := dt.(type) {
	case *arrow.Date32Type:
		// The date as t's zone has it: 9999-12-31 22:00 at UTC-5 is a
		// date of year 9999, though its instant is in year 10000.
		y, m, d := t.Date()
		if y < 0 || y > 9999 {
			return 0, fmt.Errorf("%w: %s is outside years 0000 to 9999", ErrDateRange, t.Format(time.DateOnly))
		}
		return floorDiv(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), 86400), nil
	case *arrow.TimestampType:
		if y := t.UTC().Year(); y < 0 || y > 9999 {
			return 0, fmt.Errorf("%w: %s is outside years 0000 to 9999", ErrDateRange, t.UTC().Format(time.DateTime))
		}
		// The ticks must fit an int64 (nanoseconds: 1678 to 2261).
		limit := math.MaxInt64 / UnitsPerSecond(x.Unit)
		if sec := t.Unix(); sec >= limit || sec <= -limit {
			return 0, fmt.Errorf("%w: timestamp %s out of range of %s", ErrDateRange, t, x)
		}
		return TimeToTimestamp(t, x.Unit), nil
	}
	return 0, fmt.Errorf("not a date or timestamp type: %s", dt)
}

// Extract returns a field of t as Flink (Calcite) gives it: year quarter
// month week (ISO 8601) day dow (1 = Sunday to 7 = Saturday) isodow (1 =
// Monday to 7 = Sunday) doy isoyear decade century millennium hour minute
// second millisecond microsecond nanosecond (the fraction of the second in
// that unit, without the seconds) epoch (whole seconds).
func Extract(part string, t time.Time) (int64, error) {
	year := int64(t.Year())
	switch strings.ToLower(part) {
	case "year":
		return year, nil
	case "quarter":
		return int64(t.Month()-1)/3 + 1, nil
	case "month":
		return int64(t.Month()), nil
	case "week":
		_, w := t.ISOWeek()
		return int64(w), nil
	case "isoyear":
		y, _ := t.ISOWeek()
		return int64(y), nil
	case "day", "dayofmonth":
		return int64(t.Day()), nil
	case "dow", "dayofweek":
		return int64(t.Weekday()) + 1, nil
	case "isodow":
		return (int64(t.Weekday())+6)%7 + 1, nil
	case "doy", "dayofyear":
		return int64(t.YearDay()), nil
	case "decade":
		return year / 10, nil
	case "century":
		return yearsRoundedOut(year, 100), nil
	case "millennium":
		return yearsRoundedOut(year, 1000), nil
	case "hour":
		return int64(t.Hour()), nil
	case "minute":
		return int64(t.Minute()), nil
	case "second":
		return int64(t.Second()), nil
	case "millisecond":
		return int64(t.Nanosecond() / 1e6), nil
	case "microsecond":
		return int64(t.Nanosecond() / 1e3), nil
	case "nanosecond":
		return int64(t.Nanosecond()), nil
	case "epoch":
		return t.Unix(), nil
	}
	return 0, fmt.Errorf("%w: unknown date part %q", ErrInvalidValue, part)
}

// yearsRoundedOut is the number of the span of n years that year is in,
// counted from year 1 (the century of 2000 is the 20th, of 2001 the 21st),
// and from -1 backwards before it.
func yearsRoundedOut(year, n int64) int64 {
	if year > 0 {
		return (year + n - 1) / n
	}
	return (year - n + 1) / n
}

// ValidDatePart reports whether Extract knows part.
func ValidDatePart(part string) bool {
	_, err := Extract(part, time.Time{})
	return err == nil
}

// SubDayUnit reports whether unit is smaller than a day.
func SubDayUnit(unit string) bool {
	switch strings.ToLower(unit) {
	case "hour", "minute", "second", "millisecond", "microsecond", "nanosecond":
		return true
	}
	return false
}

// DateTrunc truncates t to unit.
func DateTrunc(unit string, t time.Time) (time.Time, error) {
	y, m, d := t.Date()
	loc := t.Location()
	switch strings.ToLower(unit) {
	case "year":
		return time.Date(y, 1, 1, 0, 0, 0, 0, loc), nil
	case "quarter":
		return time.Date(y, (m-1)/3*3+1, 1, 0, 0, 0, 0, loc), nil
	case "month":
		return time.Date(y, m, 1, 0, 0, 0, 0, loc), nil
	case "week":
		wd := (int(t.Weekday()) + 6) % 7 // ISO weeks start on Monday
		return time.Date(y, m, d-wd, 0, 0, 0, 0, loc), nil
	case "day":
		return time.Date(y, m, d, 0, 0, 0, 0, loc), nil
	case "hour":
		return time.Date(y, m, d, t.Hour(), 0, 0, 0, loc), nil
	case "minute":
		return time.Date(y, m, d, t.Hour(), t.Minute(), 0, 0, loc), nil
	case "second":
		return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, loc), nil
	case "millisecond":
		return t.Truncate(time.Millisecond), nil
	}
	return t, fmt.Errorf("%w: unknown date_trunc unit %q", ErrInvalidValue, unit)
}

// DateAdd adds n units to t. Adding months clamps to the month's last day
// (Jan 31 + 1 month = Feb 28/29), as SQL engines do.
func DateAdd(unit string, n int64, t time.Time) (time.Time, error) {
	switch strings.ToLower(unit) {
	case "year":
		return shiftMonths(t, n, 12, "years")
	case "quarter":
		return shiftMonths(t, n, 3, "quarters")
	case "month":
		return shiftMonths(t, n, 1, "months")
	case "week":
		return addDays(t, n, 7, "weeks")
	case "day":
		return addDays(t, n, 1, "days")
	case "hour":
		return addDuration(t, n, time.Hour, "hours")
	case "minute":
		return addDuration(t, n, time.Minute, "minutes")
	case "second":
		return addDuration(t, n, time.Second, "seconds")
	case "millisecond":
		return addDuration(t, n, time.Millisecond, "milliseconds")
	case "microsecond":
		return addDuration(t, n, time.Microsecond, "microseconds")
	}
	return t, fmt.Errorf("%w: unknown date_add unit %q", ErrInvalidValue, unit)
}

// maxAddDays bounds the days (or months) DateAdd moves: past it no date
// or timestamp value is left, and the products and sums below, and
// time.Time's own arithmetic, would wrap around silently.
const maxAddDays = 1 << 32

func errAddOverflow(t time.Time, n int64, unit string) error {
	return fmt.Errorf("%w: %s plus %d %s is out of range", ErrDateRange, t.Format(time.DateTime), n, unit)
}

// shiftMonths adds n times per months.
func shiftMonths(t time.Time, n, per int64, unit string) (time.Time, error) {
	if n > maxAddDays/per || n < -maxAddDays/per {
		return t, errAddOverflow(t, n, unit)
	}
	return addMonths(t, n*per), nil
}

func addMonths(t time.Time, n int64) time.Time {
	y, m, d := t.Date()
	total := int64(y)*12 + int64(m-1) + n
	ny := floorDiv(total, 12)
	nm := time.Month(total - ny*12 + 1)
	if last := time.Date(int(ny), nm+1, 0, 0, 0, 0, 0, time.UTC).Day(); d > last {
		d = last
	}
	return time.Date(int(ny), nm, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
}

// addDays adds n times per days.
func addDays(t time.Time, n, per int64, unit string) (time.Time, error) {
	if n > maxAddDays/per || n < -maxAddDays/per {
		return t, errAddOverflow(t, n, unit)
	}
	return t.AddDate(0, 0, int(n*per)), nil
}

// addDuration adds n units of per, whole days first: a time.Duration holds
// only ±292 years.
func addDuration(t time.Time, n int64, per time.Duration, unit string) (time.Time, error) {
	perDay := int64(24 * time.Hour / per)
	if d := n / perDay; d > maxAddDays || d < -maxAddDays {
		return t, errAddOverflow(t, n, unit)
	}
	t = t.AddDate(0, 0, int(n/perDay))
	return t.Add(time.Duration(n%perDay) * per), nil
}

// DateDiff returns the number of unit boundaries from a to b (b - a), as
// Trino's date_diff: whole units elapsed.
func DateDiff(unit string, a, b time.Time) (int64, error) {
	switch strings.ToLower(unit) {
	case "year", "quarter", "month":
		months := int64(b.Year()-a.Year())*12 + int64(b.Month()-a.Month())
		// Not a whole month yet if b's day/time is before a's.
		if months > 0 && dayTime(b) < dayTime(a) {
			months--
		} else if months < 0 && dayTime(b) > dayTime(a) {
			months++
		}
		switch strings.ToLower(unit) {
		case "year":
			return months / 12, nil
		case "quarter":
			return months / 3, nil
		}
		return months, nil
	case "week":
		return int64(b.Sub(a) / (7 * 24 * time.Hour)), nil
	case "day":
		return int64(b.Sub(a) / (24 * time.Hour)), nil
	case "hour":
		return int64(b.Sub(a) / time.Hour), nil
	case "minute":
		return int64(b.Sub(a) / time.Minute), nil
	case "second":
		return int64(b.Sub(a) / time.Second), nil
	case "millisecond":
		return int64(b.Sub(a) / time.Millisecond), nil
	case "microsecond":
		return int64(b.Sub(a) / time.Microsecond), nil
	}
	return 0, fmt.Errorf("%w: unknown date_diff unit %q", ErrInvalidValue, unit)
}

func dayTime(t time.Time) int64 {
	return int64(t.Day())*86400e9 + int64(t.Hour())*3600e9 + int64(t.Minute())*60e9 + int64(t.Second())*1e9 + int64(t.Nanosecond())
}

// DateFormatLayout converts a format to a Go layout. Java/Flink patterns
// (yyyy-MM-dd HH:mm:ss.SSS) and MySQL patterns (%Y-%m-%d %H:%i:%s) are
// accepted.
func DateFormatLayout(f string) (string, error) {
	if strings.Contains(f, "%") {
		return mysqlLayout(f)
	}
	var sb strings.Builder
	rs := []rune(f)
	for i := 0; i < len(rs); {
		j := i
		for j < len(rs) && rs[j] == rs[i] {
			j++
		}
		run, c := j-i, rs[i]
		if c == '\'' {
			k := i + 1
			for k < len(rs) && rs[k] != '\'' {
				k++
			}
			if k >= len(rs) {
				return "", fmt.Errorf("%w: unterminated quote in date format %q", ErrInvalidValue, f)
			}
			sb.WriteString(string(rs[i+1 : k]))
			i = k + 1
			continue
		}
		var l string
		switch c {
		case 'y':
			l = map[bool]string{true: "06", false: "2006"}[run == 2]
		case 'M':
			l = [...]string{"1", "01", "Jan", "January"}[min(run, 4)-1]
		case 'd':
			l = map[bool]string{true: "2", false: "02"}[run == 1]
		case 'H':
			l = "15"
		case 'h':
			l = map[bool]string{true: "3", false: "03"}[run == 1]
		case 'm':
			l = map[bool]string{true: "4", false: "04"}[run == 1]
		case 's':
			l = map[bool]string{true: "5", false: "05"}[run == 1]
		case 'S':
			l = strings.Repeat("0", run)
			if sb.Len() == 0 || !strings.HasSuffix(sb.String(), ".") {
				return "", fmt.Errorf("%w: fractional seconds must follow '.' in date format %q", ErrInvalidValue, f)
			}
		case 'a':
			l = "PM"
		case 'E':
			l = map[bool]string{true: "Monday", false: "Mon"}[run >= 4]
		case 'D':
			l = "002"
		case 'Z':
			l = "-0700"
		case 'X':
			l = "Z07:00"
		default:
			if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
				return "", fmt.Errorf("%w: unsupported pattern letter %q in date format %q", ErrInvalidValue, c, f)
			}
			l = string(rs[i:j])
		}
		sb.WriteString(l)
		i = j
	}
	return sb.String(), nil
}

func mysqlLayout(f string) (string, error) {
	var sb strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			sb.WriteByte(f[i])
			continue
		}
		if i+1 >= len(f) {
			return "", fmt.Errorf("%w: date format %q ends with %%", ErrInvalidValue, f)
		}
		i++
		l, ok := map[byte]string{
			'Y': "2006", 'y': "06", 'm': "01", 'c': "1", 'd': "02", 'e': "2", 'H': "15", 'h': "03",
			'i': "04", 's': "05", 'S': "05", 'f': "000000", 'p': "PM", 'b': "Jan", 'M': "January",
			'a': "Mon", 'W': "Monday", 'j': "002", '%': "%",
		}[f[i]]
		if !ok {
			return "", fmt.Errorf("%w: unsupported specifier %%%c in date format %q", ErrInvalidValue, f[i], f)
		}
		sb.WriteString(l)
	}
	return sb.String(), nil
}

// ParseInterval parses "1 year 2 months 3 days 04:05:06.5", "-3 hours",
// "90 minutes" and the like into a month/day/nanosecond interval.
func ParseInterval(s string) (arrow.MonthDayNanoInterval, error) {
	var iv arrow.MonthDayNanoInterval
	f := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	if len(f) == 0 {
		return iv, ErrInvalidValue
	}
	for i := 0; i < len(f); i++ {
		if strings.Contains(f[i], ":") {
			neg := strings.HasPrefix(f[i], "-")
			d, err := time.ParseDuration(clockToDuration(strings.TrimPrefix(f[i], "-")))
			if err != nil {
				return iv, ErrInvalidValue
			}
			if neg {
				d = -d
			}
			iv.Nanoseconds += int64(d)
			continue
		}
		if i+1 >= len(f) {
			return iv, ErrInvalidValue
		}
		var n float64
		if _, err := fmt.Sscan(f[i], &n); err != nil {
			return iv, ErrInvalidValue
		}
		unit := strings.TrimSuffix(f[i+1], "s")
		i++
		switch unit {
		case "year":
			iv.Months += int32(n * 12)
		case "month":
			iv.Months += int32(n)
		case "week":
			iv.Days += int32(n * 7)
		case "day":
			iv.Days += int32(n)
		case "hour":
			iv.Nanoseconds += int64(n * 3600e9)
		case "minute":
			iv.Nanoseconds += int64(n * 60e9)
		case "second":
			iv.Nanoseconds += int64(n * 1e9)
		case "millisecond":
			iv.Nanoseconds += int64(n * 1e6)
		case "microsecond":
			iv.Nanoseconds += int64(n * 1e3)
		default:
			return iv, ErrInvalidValue
		}
	}
	return iv, nil
}

// clockToDuration turns "hh:mm[:ss[.fff]]" into a Go duration string.
func clockToDuration(c string) string {
	p := strings.Split(c, ":")
	out := p[0] + "h" + p[1] + "m"
	if len(p) > 2 {
		out += p[2] + "s"
	}
	return out
}
