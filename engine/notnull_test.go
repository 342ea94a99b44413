package engine_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
)

// TestNullIntoNotNull: a NULL for a NOT NULL column fails with SQLSTATE
// 23502 (not_null_violation, as Postgres), naming the column, and a
// primary key column as one, whichever way it comes: a VALUES row, an
// INSERT that gives the column no value, or a materialized table whose
// key is its GROUP BY columns (NOT NULL, as every primary key) while
// the query groups by a column holding NULL. The continuous job of such
// a table fails with that error until the data changes, then catches up;
// a FULL table's CREATE fails with it and creates nothing. Until
// 2026-12-05 these were 22023 or 42000 with "column ... is NOT NULL but
// the batch has 3 nulls", which did not say that the column was a key the
// table derived from GROUP BY.
func TestNullIntoNotNull(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	defer checkGoroutines(t, goroutines)
	ctx := context.Background()
	e, mem := openEngine(t, t.TempDir())
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE d (g BIGINT NOT NULL, region VARCHAR, PRIMARY KEY (g) NOT ENFORCED)")
	mustExec(t, s, "CREATE TABLE f (k BIGINT NOT NULL, g BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")

	for _, c := range []struct{ q, want string }{
		{"INSERT INTO f VALUES (NULL, 1, 1)", `primary key column "k" cannot hold NULL`},
		{"INSERT INTO f (g, v) VALUES (1, 1)", `column "k" of table default.f is NOT NULL and has no value`},
	} {
		_, err := exec(ctx, s, nil, c.q)
		if engine.SQLState(err) != "23502" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (SQLSTATE %s), want 23502 and %q", c.q, err, engine.SQLState(err), c.want)
		}
	}
	if got := rows(t, s, "SELECT count(*) FROM f"); got[0][0] != "0" {
		t.Fatalf("the refused INSERTs left %s rows", got[0][0])
	}

	const query = "SELECT d.region, sum(f.v) AS total FROM f JOIN d ON f.g = d.g GROUP BY d.region"
	mustExec(t, s, "CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '1' SECOND AS "+query)
	if d := describe(t, s, "m"); d["refresh_mode"] != "CONTINUOUS" {
		t.Fatalf("m runs %s, want CONTINUOUS", d["refresh_mode"])
	}
	mustExec(t, s, "INSERT INTO d VALUES (1, 'a'), (2, NULL)")
	mustExec(t, s, "INSERT INTO f VALUES (1, 1, 10), (2, 2, 20), (3, 1, 5)")
	waitFor := func(what string, ok func(map[string]string) bool) map[string]string {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			d := describe(t, s, "m")
			if ok(d) {
				return d
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, d)
			}
		}
	}
	waitFor("the job never failed on the NULL key", func(d map[string]string) bool {
		return strings.Contains(d["last_error"], `primary key column "region" cannot hold NULL`)
	})

	// A FULL table of the same query fails at its first refresh.
	_, err := exec(ctx, s, nil, "CREATE MATERIALIZED TABLE mf FRESHNESS = INTERVAL '1' SECOND REFRESH_MODE = FULL AS "+query)
	if engine.SQLState(err) != "23502" || !strings.Contains(err.Error(), `primary key column "region"`) {
		t.Errorf("FULL table over a NULL group: %v (SQLSTATE %s), want 23502 naming the key column", err, engine.SQLState(err))
	}
	if _, err := exec(ctx, s, nil, "SELECT * FROM mf"); err == nil {
		t.Error("the failed CREATE of mf left the table")
	}

	// Once no group is NULL, the job catches up and clears its error.
	mustExec(t, s, "UPDATE d SET region = 'b' WHERE region IS NULL")
	want := rows(t, s, query+" ORDER BY 1")
	waitFor("the job did not catch up after the NULL went", func(d map[string]string) bool {
		return d["last_error"] == "" && slices.EqualFunc(rows(t, s, "SELECT region, total FROM m ORDER BY 1"), want, slices.Equal)
	})
	mustExec(t, s, "DROP MATERIALIZED TABLE m")
}
