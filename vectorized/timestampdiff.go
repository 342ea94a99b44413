package vectorized

import (
	"strings"
	"time"
)

// TimestampDiff is Flink's TIMESTAMPDIFF(unit, a, b), whole units from a
// to b. Months (and quarters and years of them) follow Calcite: the most
// months m with a + m months (the day clamped to the month's end) not past
// b, so 2024-01-31 to 2024-02-29 is one month; other units are DateDiff's.
func TimestampDiff(unit string, a, b time.Time) (int64, error) {
	switch u := strings.ToLower(unit); u {
	case "year", "quarter", "month":
		m := calciteMonths(b.UTC(), a.UTC())
		switch u {
		case "year":
			return m / 12, nil
		case "quarter":
			return m / 3, nil
		}
		return m, nil
	}
	return DateDiff(unit, a, b)
}

// calciteMonths is Calcite's DateTimeUtils.subtractMonths(t0, t1) for
// timestamps: the date months, one less when t0 lands on t1's day but
// earlier in it.
func calciteMonths(t0, t1 time.Time) int64 {
	d0, d1 := t0.Truncate(24*time.Hour), t1.Truncate(24*time.Hour)
	x := dateMonths(d0, d1)
	if addMonths(d1, x).Equal(d0) && t0.Sub(d0) < t1.Sub(d1) {
		x--
	}
	return x
}

// dateMonths is Calcite's subtractMonths for dates.
func dateMonths(d0, d1 time.Time) int64 {
	if d0.Before(d1) {
		return -dateMonths(d1, d0)
	}
	m := int64(d0.Sub(d1)/(24*time.Hour)) / 31
	for {
		if !addMonths(d1, m).Before(d0) || addMonths(d1, m+1).After(d0) {
			return m
		}
		m++
	}
}
