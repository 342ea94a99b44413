package plan_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
)

// TestAggregateSubexpressions checks rule aggregate_subexpressions on
// random rows with zeros and NULLs: each query gives the same rows with the rule and without it, and the rule rewrites exactly
// the queries it should. An expression that only some rows compute (under
// a CASE arm, a later AND operand) stays
// there: computed for every row, a / y would fail on the rows where y is 0.
func TestAggregateSubexpressions(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	setup, err := slt.NewInProc(ctx, dir, mem, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	for _, s := range []string{
		"CREATE TABLE t (g INT, a INT, b INT, y INT)",
		"INSERT INTO t VALUES " + strings.Join(rows, ", "),
	} {
		if err := setup.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := setup.Close(); err != nil {
		t.Fatal(err)
	}
	on, err := slt.NewInProc(ctx, dir, mem, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer on.Close()
	off, err := slt.NewInProc(ctx, dir, mem, plan.Options{DisabledRules: []string{"aggregate_subexpressions"}})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
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
		b, err := on.Bind(c.q)
		if err != nil {
			t.Fatal(err)
		}
		bOff, err := off.Bind(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.(*plan.Query).Explain() != bOff.(*plan.Query).Explain(); got != c.rewritten {
			t.Errorf("%s: rewritten %v, want %v\n%s", c.q, got, c.rewritten, b.(*plan.Query).Explain())
		}
		_, want, err := off.Query(c.q)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := on.Query(c.q)
		if err != nil {
			t.Fatalf("%s: %v with the rule, no error without", c.q, err)
		}
		w, g := slt.Render(want, "rowsort"), slt.Render(got, "rowsort")
		if !slices.Equal(w, g) {
			t.Errorf("seed %d: %s: with the rule\n%s\nwithout\n%s", seed, c.q, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
	}
}
