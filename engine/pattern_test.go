package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
)

// TestPatternWorkBounded: a match no cancel can interrupt, a 10 MB string
// against a 100,000-character pattern, is refused at once with SQLSTATE
// 54000 by every function that matches through a regexp. Until
// 2026-12-05 each ran for minutes a row (Go's regexp costs the string's
// length times the pattern's), going on after its client had gone.
// Ordinary matches still answer.
func TestPatternWorkBounded(t *testing.T) {
	sess := newEngine(t).NewSession()
	ctx := context.Background()
	const s, p = `repeat('a', 10000000)`, `repeat('a', 100000)`
	for _, q := range []string{
		`SELECT ` + s + ` LIKE '%' || repeat('a_', 50000) || 'b'`,
		`SELECT ` + s + ` ILIKE '%' || ` + p + ` || 'b'`,
		`SELECT ` + s + ` SIMILAR TO '%' || ` + p + ` || 'b'`,
		`SELECT REGEXP(` + s + `, ` + p + ` || 'b')`,
		`SELECT REGEXP_EXTRACT(` + s + `, ` + p + ` || 'b')`,
		`SELECT REGEXP_EXTRACT_ALL(` + s + `, ` + p + ` || 'b', 0)`,
		`SELECT REGEXP_REPLACE(` + s + `, ` + p + ` || 'b', 'c')`,
		`SELECT REGEXP_COUNT(` + s + `, ` + p + ` || 'b')`,
		`SELECT REGEXP_SUBSTR(` + s + `, ` + p + ` || 'b')`,
		`SELECT REGEXP_INSTR(` + s + `, ` + p + ` || 'b')`,
		`SELECT STR_TO_MAP(` + s + `, ` + p + ` || 'b', '=')`,
	} {
		start := time.Now()
		_, _, err := query(ctx, sess, q)
		if got := engine.SQLState(err); got != "54000" || !strings.Contains(err.Error(), "pattern of") {
			t.Errorf("%.60s...: want SQLSTATE 54000 for the pattern, got %v", q, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%.60s...: refused after %v", q, d)
		}
	}
	for q, want := range map[string]string{
		`SELECT 'abc' LIKE 'a_c'`:                     "true",
		`SELECT 'ABC' ILIKE 'a%'`:                     "true",
		`SELECT REGEXP_EXTRACT('k=v1', 'k=(\w+)', 1)`: "v1",
		`SELECT REGEXP_REPLACE('banana', 'a', 'o')`:   "bonono",
	} {
		if got := rows(t, sess, q); len(got) != 1 || got[0][0] != want {
			t.Errorf("%s = %v, want %s", q, got, want)
		}
	}
}
