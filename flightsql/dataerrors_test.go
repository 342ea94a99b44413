package flightsql_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flightd/flightd/flightsql"
)

// TestDataErrorsReachClients: division by zero, overflow and a bad CAST
// raised while DoGet streams (and while DML runs) reach an ADBC client as
// InvalidArgument with the SQLSTATE and the expression's line:column, and
// no '%' a client could take for a format verb.
func TestDataErrorsReachClients(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k INT, z INT)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 0), (2, 0)")
	cases := []struct{ sql, where, state string }{
		{"SELECT MOD(k, z) FROM t", "line 1:8: ", "22012"},
		{"SELECT k,\n  k % z FROM t", "line 2:5: ", "22012"},
		{"SELECT k / z FROM t", "line 1:10: ", "22012"},
		{"SELECT k * 2147483647 FROM t", "line 1:10: ", "22003"},
		{"SELECT CAST('x' AS INT) FROM t", "line 1:8: ", "22018"},
		{"SELECT COALESCE(NULLIF(k, 1), k / z) FROM t", "line 1:33: ", "22012"},
	}
	for _, c := range cases {
		_, err := tryQuery(cnxn, c.sql)
		if err == nil {
			t.Fatalf("%s: no error", c.sql)
		}
		msg := err.Error()
		for _, want := range []string{c.where, "[SQLSTATE " + c.state + "]", "(InvalidArgument; DoGet"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: want %q in %q", c.sql, want, msg)
			}
		}
		if strings.Contains(msg, "%") {
			t.Errorf("%s: message has a %%: %q", c.sql, msg)
		}
	}
	_, err := tryExec(cnxn, "UPDATE t SET k = k % z")
	if err == nil || !strings.Contains(err.Error(), "line 1:20: ") || !strings.Contains(err.Error(), "SQLSTATE 22012") {
		t.Fatalf("UPDATE: %v", err)
	}
	if rows := query(t, cnxn, "SELECT count(*) FROM t WHERE k IN (1, 2)"); rows[0][0] != "2" {
		t.Fatalf("the failed UPDATE changed rows: %v", rows)
	}
}

// TestLongErrorClipped: an error quoting a long value (a cast of a 200 KB
// string, multi-byte characters) reaches the client clipped to its start
// and end, still valid UTF-8 and with its SQLSTATE: the whole value went
// out (210 KB here).
func TestLongErrorClipped(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	_, err := tryQuery(cnxn, "SELECT CAST(repeat('日', 70000) || 'x' AS INT)")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if len(msg) > 5000 || !utf8.ValidString(msg) || !strings.Contains(msg, "bytes cut") ||
		!strings.Contains(msg, "line 1:8: cannot cast") || !strings.Contains(msg, "[SQLSTATE 22018]") {
		t.Errorf("%d bytes, valid UTF-8 %v: %.300q ... %q", len(msg), utf8.ValidString(msg), msg, msg[max(0, len(msg)-300):])
	}
}
