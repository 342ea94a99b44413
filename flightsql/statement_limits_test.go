package flightsql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/flightsql"
)

// TestStatementLimits: statements beyond the limits of issue 10 (a
// 300,000-term sum overflowed the stack, a 1.5M-item IN list took 32 s)
// get an error naming the limit and its SQLSTATE, and other errors carry
// theirs; the server answers afterwards. (The byte limit is above what
// the client sends by default; cmd/flightd's attack test sets it lower.)
func TestStatementLimits(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k BIGINT)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1), (2)")
	in := "SELECT k FROM t WHERE k IN (0" + strings.Repeat(", 1", 1_500_000) + ")"
	for _, c := range []struct{ sql, want string }{
		{"SELECT 1" + strings.Repeat("+1", 300_000), "SQLSTATE 54001"},
		{"SELECT k FROM t WHERE k = 0" + strings.Repeat(" OR k = 1", 200_000), "SQLSTATE 54001"},
		{in, "SQLSTATE 54000"},
		{"SELEKT 1", "SQLSTATE 42601"},
		{"SELECT nope FROM t", "SQLSTATE 42000"},
		{"SELECT k / 0 FROM t", "SQLSTATE 22012"},
	} {
		start := time.Now()
		_, err := tryQuery(cnxn, c.sql)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40s...: want %s, got %v", c.sql, c.want, err)
		}
		t.Logf("%.30s... (%d bytes): %v", c.sql, len(c.sql), time.Since(start))
	}
	if rows := query(t, cnxn, "SELECT count(*) FROM t"); rows[0][0] != "2" {
		t.Fatalf("rows = %v", rows)
	}
}
