package plan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

// TestTimestampNanosRange: a TIMESTAMP literal with nine fractional digits
// is a TIMESTAMP(9), nanoseconds in an int64, which hold 1678 to 2262;
// outside that it is refused with SQLSTATE 22003, as a CAST to TIMESTAMP(9)
// is. TIMESTAMP '1000-01-01 00:00:00.000000001' came back as
// 2169-02-08 23:09:07.419103233.
func TestTimestampNanosRange(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	for _, lit := range []string{"1000-01-01 00:00:00.000000001", "2262-04-12 00:00:00.000000001"} {
		_, _, err := h.Query("SELECT TIMESTAMP '" + lit + "'")
		var e *sql.Error
		if !errors.As(err, &e) || e.SQLState != "22003" {
			t.Errorf("%s: want SQLSTATE 22003, got %v", lit, err)
		}
	}
	for _, q := range []string{"SELECT CAST('1000-01-01 00:00:00' AS TIMESTAMP(9))", "SELECT CAST('2262-04-12 00:00:00' AS TIMESTAMP(9))"} {
		if _, rows, err := h.Query(q); err == nil || !strings.Contains(err.Error(), "numeric overflow") {
			t.Errorf("%s: want a numeric overflow, got %v %v", q, rows, err)
		}
	}
	_, rows, err := h.Query("SELECT CAST(TIMESTAMP '2262-04-11 00:00:00.000000001' AS VARCHAR), CAST(TIMESTAMP '1000-01-01 00:00:00.000001' AS VARCHAR)")
	if err != nil || rows[0][0] != "2262-04-11 00:00:00.000000001" || rows[0][1] != "1000-01-01 00:00:00.000001" {
		t.Fatalf("in range: %v %v", rows, err)
	}
}
