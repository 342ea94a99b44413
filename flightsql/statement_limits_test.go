package flightsql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/internal/hostile"
)

// TestStatementLimits: statements beyond the limits of issue 10 (a
// 300,000-term sum overflowed the stack, a 1.5M-item IN list took 32 s)
// get an error naming the limit and its SQLSTATE, and other errors carry
// theirs; the server answers afterwards.
func TestStatementLimits(t *testing.T) {
	ts := startServerLimits(t, flightsql.Limits{MaxStatementBytes: 4 << 20}, 0, flightsql.Options{}, func(c *engine.Config) { c.QueryMemory = 256 << 20 })
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k BIGINT)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1), (2)")
	cases := []struct{ sql, want string }{
		{"SELECT 1" + strings.Repeat(" ", 4<<20), "more than the limit of 4194304 [SQLSTATE 54000]"},
		{"SELEKT 1", "SQLSTATE 42601"},
		{"SELECT nope FROM t", "SQLSTATE 42000"},
		{"SELECT k / 0 FROM t", "SQLSTATE 22012"},
		{"SELECT CAST('x' AS INT) FROM t", "(InvalidArgument; DoGet"},
		{"SELECT CAST('x' AS INT) FROM t", "SQLSTATE 22018"},
		{"SELECT (SELECT k FROM t) FROM t", "(InvalidArgument; DoGet"},
	}
	for _, st := range hostile.Statements() {
		cases = append(cases, struct{ sql, want string }{st.SQL, "SQLSTATE " + st.SQLState})
	}
	for _, c := range cases {
		start := time.Now()
		_, err := tryQuery(cnxn, c.sql)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40s...: want %s, got %v", c.sql, c.want, err)
		}
		t.Logf("%.30s... (%d bytes): %v: %v", c.sql, len(c.sql), time.Since(start), err)
	}
	if rows := query(t, cnxn, "SELECT count(*) FROM t"); rows[0][0] != "2" {
		t.Fatalf("rows = %v", rows)
	}
}
