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

// TestLongErrorClipped: an error quoting a long name (an unknown table of
// 200 KB, multi-byte characters) reaches the client clipped to its start
// and end, still valid UTF-8 and with its SQLSTATE: the whole name went
// out (210 KB here). A cast's error quotes 256 bytes of the value since
// 2026-12-06.
func TestLongErrorClipped(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	// The cast quotes 256 bytes of the value and its length (vectorized
	// TestCastErrorQuotesShort); an unknown table's name is quoted whole.
	_, err := tryQuery(cnxn, "SELECT CAST(repeat('日', 70000) || 'x' AS INT)")
	if err == nil || len(err.Error()) > 1500 || !strings.Contains(err.Error(), "… (210001 bytes)") || !strings.Contains(err.Error(), "[SQLSTATE 22018]") {
		t.Errorf("cast of a 210,001-byte string: %.600v", err)
	}
	_, err = tryQuery(cnxn, `SELECT * FROM "`+strings.Repeat("日", 70000)+`x"`)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if len(msg) > 5000 || !utf8.ValidString(msg) || !strings.Contains(msg, "bytes cut") ||
		!strings.Contains(msg, "line 1:15: table default.") || !strings.Contains(msg, "[SQLSTATE 42") {
		t.Errorf("%d bytes, valid UTF-8 %v: %.300q ... %q", len(msg), utf8.ValidString(msg), msg, msg[max(0, len(msg)-300):])
	}
}

// TestDatesPastYear9999Refused: date and timestamp arithmetic, casts and
// epoch conversions that leave years 0000 to 9999 (Flink's DATE and
// TIMESTAMP range, what literals can write) fail with SQLSTATE 22008 and
// write nothing; the last day and second of the range still work. `DATE
// '9999-12-31' + INTERVAL '1' DAY` gave 10000-01-01, which no literal can
// write and pyarrow could not read.
func TestDatesPastYear9999Refused(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE d (x DATE, ts TIMESTAMP(3))")
	for _, q := range []string{
		"SELECT DATE '9999-12-31' + INTERVAL '1' DAY",
		"SELECT DATE '9999-12-01' + INTERVAL '1' MONTH",
		"SELECT DATE '0000-01-01' - INTERVAL '1' DAY",
		"SELECT DATE '9999-12-31' + 1",
		"SELECT 1 + DATE '9999-12-31'",
		"SELECT DATE '0000-01-01' - 1",
		"SELECT TIMESTAMP '9999-12-31 23:59:59' + INTERVAL '1' SECOND",
		"SELECT TIMESTAMPADD(DAY, 1, DATE '9999-12-31')",
		"SELECT TIMESTAMPADD(YEAR, -1, TIMESTAMP '0000-06-01 00:00:00')",
		"SELECT CAST('9999-12-31 23:00:00-05:00' AS TIMESTAMP)",
		"SELECT CAST('9999-12-31 23:00:00-05:00' AS DATE)",
		"SELECT CAST(DATE '9999-12-31' AS TIMESTAMP(9))",
		"SELECT TO_TIMESTAMP_LTZ(253402300800000)",
		"SELECT FROM_UNIXTIME(253402300800)",
		"INSERT INTO d VALUES (DATE '9999-12-31' + INTERVAL '1' DAY, NULL)",
		"INSERT INTO d SELECT NULL, ts + INTERVAL '1' DAY FROM (VALUES (TIMESTAMP '9999-12-31 00:00:00.000')) v(ts)",
	} {
		_, err := tryQuery(cnxn, q)
		if err == nil || !strings.Contains(err.Error(), "SQLSTATE 22008") || !strings.Contains(err.Error(), "InvalidArgument") {
			t.Errorf("%s: %v, want InvalidArgument with SQLSTATE 22008", q, err)
		}
	}
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM d"), "0")
	wantRows(t, query(t, cnxn, "SELECT DATE '9999-12-30' + INTERVAL '1' DAY, DATE '0000-01-02' - 1, "+
		"TIMESTAMP '9999-12-31 23:59:58' + INTERVAL '1' SECOND, TO_TIMESTAMP_LTZ(253402300799999)"),
		"9999-12-31,0000-01-01,9999-12-31T23:59:59,9999-12-31T23:59:59.999Z")
}
