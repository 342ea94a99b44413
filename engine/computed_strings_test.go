package engine_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/flightd/flightd/engine"
)

// TestJoinedStringsBounded: CONCAT, CONCAT_WS, ARRAY_JOIN, JSON_ARRAY,
// JSON_OBJECT and PRINTF refuse a string over the computed-string limit (64 MiB) with
// SQLSTATE 54000 as they build it, and CONCAT_WS and ARRAY_JOIN a batch of
// strings over 512 MiB. CONCAT_WS and ARRAY_JOIN had no limit: CONCAT_WS of a 60 MB
// separator and ten short strings made 540 MB, of a thousand made 60 GB
// and the kernel killed the server, as PRINTF(repeat('%1$s', 100000), a
// 60 MB string) would (6 TB); CONCAT and the JSON constructors built their
// whole result before they checked its size.
func TestJoinedStringsBounded(t *testing.T) {
	sess := newEngine(t).NewSession()
	ctx := context.Background()
	mustExec(t, sess, "CREATE TABLE r AS SELECT x FROM generate_series(1, 3000) g(x)")
	mustExec(t, sess, "CREATE TABLE s AS SELECT repeat('x', 60000000) AS s")
	big := "repeat('x', 60000000)"
	short := strings.TrimSuffix(strings.Repeat("'a', ", 20), ", ")
	for _, c := range []struct {
		q string
		// bounded: refused before it allocates much past its input (a
		// 60 MB constant or column) and one string up to the limit; the
		// whole result would be 1.2 GB. A batch's strings are refused
		// past 512 MiB in all.
		bounded bool
	}{
		{"SELECT length(concat_ws(" + big + ", " + short + "))", true},
		{"SELECT length(concat(" + strings.TrimSuffix(strings.Repeat("s, ", 20), ", ") + ")) FROM s", true},
		{"SELECT length(concat_ws(',', " + strings.TrimSuffix(strings.Repeat("s, ", 20), ", ") + ")) FROM s", true},
		{"SELECT length(json_array(" + strings.TrimSuffix(strings.Repeat("s, ", 20), ", ") + ")) FROM s", true},
		{"SELECT length(json_object(" + strings.TrimSuffix(strings.Repeat("'k', s, ", 20), ", ") + ")) FROM s", true},
		{"SELECT length(printf(repeat('%1$s', 20), s)) FROM s", true},
		{"SELECT length(array_join(ARRAY[" + short + "], " + big + "))", true},
		{"SELECT length(array_join(ARRAY['a', NULL, NULL, NULL, NULL, NULL], ',', " + big + "))", true},
		{"SELECT sum(length(concat_ws(repeat('x', 200000), 'a', CAST(x AS STRING)))) FROM r", false},
		{"SELECT sum(length(array_join(ARRAY['a', CAST(x AS STRING)], repeat('x', 200000)))) FROM r", false},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, _, err := query(ctx, sess, c.q)
		runtime.ReadMemStats(&after)
		if engine.SQLState(err) != "54000" {
			t.Errorf("%.70s...: want SQLSTATE 54000, got %v", c.q, err)
		}
		if a := after.TotalAlloc - before.TotalAlloc; c.bounded && a > 1<<30 {
			t.Errorf("%.70s...: allocated %d MB before refusing", c.q, a>>20)
		}
	}
	for q, want := range map[string]string{
		"SELECT concat_ws('-', 'a', NULL, 'b')":                    "a-b",
		"SELECT concat('a', 'b', 'c')":                             "abc",
		"SELECT array_join(ARRAY['a', NULL, 'b'], ',', 'n')":       "a,n,b",
		"SELECT length(concat_ws(repeat('x', 1000000), 'a', 'b'))": "1000002",
	} {
		if got := rows(t, sess, q); len(got) != 1 || got[0][0] != want {
			t.Errorf("%s = %v, want %s", q, got, want)
		}
	}
}

// TestNestedCastToStringBounded: CAST of a ROW, ARRAY or MAP to STRING
// refuses text over the computed-string limit with SQLSTATE 54000 before
// rendering it when its strings alone pass the limit. A ROW naming one
// 60 MB string 20 times is 60 MB of input but 1.2 GB of text: it was
// rendered whole (a thousand times would be 60 GB), and then quoted in the
// error message had it failed.
func TestNestedCastToStringBounded(t *testing.T) {
	sess := newEngine(t).NewSession()
	mustExec(t, sess, "CREATE TABLE s AS SELECT repeat('x', 60000000) AS s")
	fields := strings.TrimSuffix(strings.Repeat("s, ", 20), ", ")
	for _, q := range []string{
		"SELECT length(CAST(ROW(" + fields + ") AS STRING)) FROM s",
		"SELECT length(CAST(ROW(ROW(s, s), ROW(s, s)) AS STRING)) FROM s",
		"SELECT length(CAST(MAP['a', s, 'b', s] AS STRING)) FROM s",
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, _, err := query(context.Background(), sess, q)
		runtime.ReadMemStats(&after)
		if engine.SQLState(err) != "54000" || len(err.Error()) > 4096 {
			t.Errorf("%.70s...: want SQLSTATE 54000 (a short message), got %.300v", q, err)
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 600<<20 {
			t.Errorf("%.70s...: allocated %d MB before refusing", q, a>>20)
		}
	}
	for q, want := range map[string]string{
		"SELECT CAST(ROW(1, 'a') AS STRING)":                          `{"EXPR$0":1,"EXPR$1":"a"}`,
		"SELECT length(CAST(ROW(repeat('x', 1000000), 1) AS STRING))": "1000024",
	} {
		if got := rows(t, sess, q); len(got) != 1 || got[0][0] != want {
			t.Errorf("%s = %v, want %s", q, got, want)
		}
	}
}

// TestConstantBroadcastBounded: a string constant is copied to every row
// of a batch where an expression needs it as a column; past 512 MiB for a
// batch that fails with SQLSTATE 54000 before the copies are made. A
// 60 MB constant (REPEAT folded, or a literal in a 16 MB statement) made
// 60 GB for a batch of 1,024 rows: SELECT REPEAT('x', 60000000) FROM a
// table was enough for the kernel to kill the server.
func TestConstantBroadcastBounded(t *testing.T) {
	sess := newEngine(t).NewSession()
	const rows100 = " FROM generate_series(1, 100) g(x)"
	for _, q := range []string{
		"SELECT sum(length(s)) FROM (SELECT x, repeat('x', 6000000) AS s" + rows100 + ") WHERE x > 0",
		"SELECT count(*)" + rows100 + " WHERE CASE WHEN x > 0 THEN repeat('x', 6000000) END IS NULL",
		"SELECT count(*)" + rows100 + " WHERE position(CAST(x AS STRING) IN repeat('x', 6000000)) > 0",
		"SELECT count(*)" + rows100 + " WHERE position(CAST(x AS STRING) IN '" + strings.Repeat("y", 6000000) + "') > 0",
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, _, err := query(context.Background(), sess, q)
		runtime.ReadMemStats(&after)
		if engine.SQLState(err) != "54000" {
			t.Errorf("%.70s...: want SQLSTATE 54000, got %.300v", q, err)
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 300<<20 {
			t.Errorf("%.70s...: allocated %d MB before refusing", q, a>>20)
		}
	}
	if got := rows(t, sess, "SELECT sum(length(s)) FROM (SELECT x, repeat('x', 1000000) AS s"+rows100+") WHERE x > 0"); got[0][0] != "100000000" {
		t.Errorf("100 rows of a 1 MB constant: %v", got)
	}
}
