package plan_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// TestAggregateSubexpressions checks rule aggregate_subexpressions on
// random rows with zeros and NULLs: each query gives the same rows with
// the rule and without it, and the rule rewrites exactly the queries it
// should. An expression that only some rows compute (under a CASE arm, a
// later AND operand) stays there: computed for every row, a / y would fail
// on the rows where y is 0.
func TestAggregateSubexpressions(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	null := func(s string) string {
		if rng.Intn(10) == 0 {
			return "NULL"
		}
		return s
	}
	var rows []string
	for range 5000 {
		rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s)", rng.Intn(6), null(fmt.Sprint(rng.Intn(200)-50)),
			null(fmt.Sprint(rng.Intn(200))), null(fmt.Sprint(rng.Intn(5)-2))))
	}
	on, off := ruleHarness(t, []string{
		"CREATE TABLE t (g INT, a INT, b INT, y INT)",
		"INSERT INTO t VALUES " + strings.Join(rows, ", "),
	}, "aggregate_subexpressions")
	for _, c := range []struct {
		q         string
		rewritten bool
	}{
		// q62's shape: the delay in every CASE's first condition.
		{"SELECT g, sum(CASE WHEN b - a <= 30 THEN 1 ELSE 0 END), sum(CASE WHEN b - a > 30 AND b - a <= 60 THEN 1 ELSE 0 END), sum(CASE WHEN b - a > 60 THEN 1 ELSE 0 END) FROM t GROUP BY g", true},
		{"SELECT g, sum(a * 2), avg(a * 2), max(a * 2 + y) FROM t GROUP BY g", true},
		{"SELECT sum(CASE WHEN y > 0 THEN a END), count(CASE WHEN y > 0 THEN b END) FROM t", true},
		// Only under a CASE arm, a later AND operand, a FILTER: a / y would
		// divide by zero on other rows.
		{"SELECT g, sum(CASE WHEN y > 0 THEN a / y END), min(CASE WHEN y < 0 THEN a / y END) FROM t GROUP BY g", false},
		{"SELECT g, count(CASE WHEN y <> 0 AND a / y > 3 THEN 1 END), count(CASE WHEN y > 0 AND a / y > 3 THEN 1 END) FROM t GROUP BY g", false},
		{"SELECT g, sum(a * 3) FILTER (WHERE y > 0), max(a * 3) FILTER (WHERE y > 1) FROM t GROUP BY g", false},
		// Volatile: each occurrence its own value.
		{"SELECT g, count(CASE WHEN random() < 2 THEN 1 END), count(CASE WHEN random() < 2 THEN 1 END) FROM t GROUP BY g", false},
		{"SELECT g, sum(a), max(b) FROM t GROUP BY g", false},
	} {
		checkRule(t, seed, on, off, c.q, c.rewritten)
	}
}
