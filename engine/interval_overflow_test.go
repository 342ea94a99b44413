package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/flightd/flightd/engine"
)

// TestLongIntervalsRefused: a window size or WATERMARK delay too long for
// microseconds in an int64 (past about 292,000 years) fails binding with
// SQLSTATE 42000 and its position. It wrapped: TUMBLE with INTERVAL
// '213503983' DAY made windows of 15 h 58 min, and a WATERMARK delay of as
// many days one of as many hours, without an error.
func TestLongIntervalsRefused(t *testing.T) {
	sess := newEngine(t).NewSession()
	ctx := context.Background()
	mustExec(t, sess, "CREATE TABLE tw (ts TIMESTAMP(3), x BIGINT)")
	mustExec(t, sess, "INSERT INTO tw VALUES (TIMESTAMP '2020-01-01 00:00:00', 1), (TIMESTAMP '2020-01-02 00:00:00', 2)")
	for _, q := range []string{
		"SELECT count(*) FROM TABLE(TUMBLE(TABLE tw, DESCRIPTOR(ts), INTERVAL '213503983' DAY))",
		"SELECT count(*) FROM TABLE(HOP(TABLE tw, DESCRIPTOR(ts), INTERVAL '213503983' DAY, INTERVAL '213503983' DAY))",
		"SELECT count(*) FROM TABLE(TUMBLE(TABLE tw, DESCRIPTOR(ts), INTERVAL '1' DAY, INTERVAL '-213503983' DAY))",
		"CREATE TABLE tw2 (ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '213503983' DAY)",
	} {
		var err error
		if strings.HasPrefix(q, "CREATE") {
			_, err = exec(ctx, sess, nil, q)
		} else {
			_, _, err = query(ctx, sess, q)
		}
		if engine.SQLState(err) != "42000" || !strings.Contains(err.Error(), "too long") {
			t.Errorf("%.70s...: want SQLSTATE 42000 'too long', got %v", q, err)
		}
	}
	if got := rows(t, sess, "SELECT count(*) FROM TABLE(TUMBLE(TABLE tw, DESCRIPTOR(ts), INTERVAL '106751' DAY))"); got[0][0] != "2" {
		t.Errorf("a window of 106,751 days: %v", got)
	}
}
