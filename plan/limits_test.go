package plan_test

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

// TestDeepStatementsFitTheStack: statements as deep as the parser accepts
// bind, optimize, build and run within a 16 MiB stack, so no recursion in
// the planner or executor outgrows what sql.MaxDepth lets through (a
// 300,000-term sum used to overflow the 1 GB stack in the binder). A
// stack overflow is fatal, so a failure here kills the test binary.
func TestDeepStatementsFitTheStack(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (k BIGINT, v VARCHAR); INSERT INTO t VALUES (1, 'a'), (2, 'b')"); err != nil {
		t.Fatal(err)
	}
	defer debug.SetMaxStack(debug.SetMaxStack(16 << 20))
	n := sql.MaxDepth - 10
	rep := func(unit string, n int) string { return strings.Repeat(unit, n) }
	for name, src := range map[string]string{
		"sum":    "SELECT k" + rep(" + 1", n) + " FROM t",
		"or":     "SELECT k FROM t WHERE k = 0" + rep(" OR k = 1", n),
		"and":    "SELECT k FROM t WHERE k > 0" + rep(" AND k > 0", n),
		"concat": "SELECT v" + rep(" || v", n) + " FROM t",
		"not":    "SELECT k FROM t WHERE " + rep("NOT ", n) + "k = 1",
		"union":  "SELECT k FROM t" + rep(" UNION ALL SELECT k FROM t", n/4),
		"parens": "SELECT k FROM t WHERE " + rep("(", n/3) + "k = 1" + rep(")", n/3),
		// A chain whose first operand is nested as deep as the rest allows
		// builds the deepest tree the parser lets through.
		"mixed":  "SELECT k FROM t WHERE k = 0 OR " + rep("(", n/6) + "k = 1" + rep(")", n/6) + rep(" OR k = 1", n/2),
		"case":   "SELECT " + rep("CASE WHEN k > 0 THEN ", n/3) + "k" + rep(" END", n/3) + " FROM t",
		"array":  "SELECT cardinality(" + rep("ARRAY[", n/2) + "k" + rep("]", n/2) + ") FROM t",
		"agg":    "SELECT sum(k" + rep(" + k", n) + ") FROM t GROUP BY v HAVING count(*)" + rep(" + 1", n/2) + " > 0",
		"group":  "SELECT k" + rep(" + k", n/2) + ", count(*) FROM t GROUP BY k" + rep(" + k", n/2) + " ORDER BY 1",
		"order":  "SELECT k FROM t ORDER BY k" + rep(" * 1", n),
		"window": "SELECT sum(k) OVER (PARTITION BY k" + rep(" + 1", n/2) + " ORDER BY k" + rep(" - 1", n/2) + ") FROM t",
	} {
		if _, _, err := h.Query(src); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestGroupingSetsLimit: a GROUP BY whose CUBEs and ROLLUPs multiply to
// more than 4096 grouping sets is refused with SQLSTATE 54001 before it is
// planned, and one of exactly 4096 (a CUBE of 12) plans and runs.
func TestGroupingSetsLimit(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (k BIGINT); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	cube := func(n int) string {
		cols := make([]string, n)
		for i := range cols {
			cols[i] = fmt.Sprintf("k + %d", i)
		}
		return "SELECT count(*) FROM t GROUP BY CUBE (" + strings.Join(cols, ", ") + ")"
	}
	if _, _, err := h.Query(cube(12)); err != nil {
		t.Fatalf("CUBE of 12 (4096 grouping sets): %v", err)
	}
	for _, q := range []string{cube(12) + ", ROLLUP (k)", "SELECT count(*) FROM t GROUP BY CUBE (k, k + 1, k + 2, k + 3, k + 4, k + 5), CUBE (k + 6, k + 7, k + 8, k + 9, k + 10, k + 11), ROLLUP (k + 12)"} {
		_, _, err := h.Query(q)
		var e *sql.Error
		if !errors.As(err, &e) || e.SQLState != sql.StateTooComplex {
			t.Errorf("%s: want SQLSTATE %s, got %v", q, sql.StateTooComplex, err)
		}
	}
}

// TestViewExpansionLimit: each use of a view binds its query again, so
// views that each name the previous one twice double the work per view (25
// of them bound until the process ran out of memory). A statement whose
// views expand to more than 1000 references or 64 MiB of text is refused
// with SQLSTATE 54001 at its first view reference, and nothing is created.
func TestViewExpansionLimit(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	tooComplex := func(what string, err error, col int) {
		t.Helper()
		var e *sql.Error
		if !errors.As(err, &e) || e.SQLState != sql.StateTooComplex || e.Col != col || !strings.Contains(e.Msg, "views expand to more than") {
			t.Fatalf("%s: want SQLSTATE %s at column %d, got %v", what, sql.StateTooComplex, col, err)
		}
	}
	// chain creates name0 as first, then name1 to name<last>, each naming
	// the one before twice; the last must be refused.
	chain := func(name, first string, last int) {
		if err := h.Exec("CREATE VIEW " + name + "0 AS " + first); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= last; i++ {
			err := h.Exec(fmt.Sprintf("CREATE VIEW %s%d AS SELECT x FROM %s%d UNION ALL SELECT x FROM %s%d", name, i, name, i-1, name, i-1))
			if i < last && err != nil {
				t.Fatalf("%s%d: %v", name, i, err)
			}
			if i == last {
				tooComplex(fmt.Sprintf("CREATE VIEW %s%d", name, i), err, 33)
			}
		}
	}
	// Creating v_i expands 2^(i+1)-2 references: v8 510, v9 1022.
	chain("v", "SELECT 1 AS x", 9)
	if _, rows, err := h.Query("SELECT count(*) FROM v8"); err != nil || rows[0][0] != "256" {
		t.Fatalf("v8: %v %v", rows, err)
	}
	_, _, err := h.Query("SELECT count(*) FROM v8, v8 w")
	tooComplex("v8 twice", err, 22)
	if _, _, err := h.Query("SELECT * FROM v9"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("the refused view v9 exists: %v", err)
	}

	// 32 uses of a view of 2 MiB of text.
	chain("w", "SELECT '"+strings.Repeat("x", 2<<20)+"' AS x", 5)
}
