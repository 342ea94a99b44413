package vectorized

import (
	"testing"
	"time"
)

// TestTimestampDiffMonths: TIMESTAMPDIFF in months (and quarters, years)
// is the most months m with from + m months (day clamped to the month's
// end) not past to, negated when to is earlier (dates), checked against
// that search on random dates and times, month ends and leap days
// included.
func TestTimestampDiffMonths(t *testing.T) {
	rng := testSeed(t)
	most := func(from, to time.Time) int64 {
		m := int64(0)
		for !addMonths(from, m+1).After(to) {
			m++
		}
		return m
	}
	day := func() time.Time {
		d := time.Date(2000+rng.IntN(30), time.Month(1+rng.IntN(12)), 1, 0, 0, 0, 0, time.UTC)
		if rng.IntN(3) == 0 {
			return d.AddDate(0, 1, -1-rng.IntN(3)) // near the month's end
		}
		return d.AddDate(0, 0, rng.IntN(31))
	}
	for range 5000 {
		a, b := day(), day()
		timed := rng.IntN(2) == 0
		if timed {
			a = a.Add(time.Duration(rng.IntN(86400)) * time.Second)
			b = b.Add(time.Duration(rng.IntN(86400)) * time.Second)
			if b.Before(a) {
				a, b = b, a // the time-of-day rule is checked forwards
			}
		}
		want := most(a, b)
		if b.Before(a) {
			want = -most(b, a)
		}
		for unit, div := range map[string]int64{"month": 1, "quarter": 3, "year": 12} {
			got, err := TimestampDiff(unit, a, b)
			if err != nil || got != want/div {
				t.Fatalf("TIMESTAMPDIFF(%s, %s, %s) = %d (%v), want %d", unit, a, b, got, err, want/div)
			}
		}
	}
}
