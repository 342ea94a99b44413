package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/flightd/flightd/engine"
)

// TestManyArgFunctionsLinear: GREATEST and LEAST cost about linearly in
// their argument count, folded as constants and evaluated over a table's
// rows. They built a comparator for every pair of arguments: one
// GREATEST of 100,000 constants (a 600 KB statement) took a server past
// 15 GB of RSS, still growing minutes after its client had cancelled.
func TestManyArgFunctionsLinear(t *testing.T) {
	sess := newEngine(t).NewSession()
	mustExec(t, sess, "CREATE TABLE t (a BIGINT, s STRING)")
	mustExec(t, sess, "INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, NULL)")
	args := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, ", ")
	}
	shapes := []struct {
		name string
		q    func(n int) string
		want string // the answer at every n
	}{
		{"greatest constants", func(n int) string {
			return "SELECT greatest(" + args(n, func(i int) string { return fmt.Sprint(i) }) + ")"
		}, ""},
		{"least over rows", func(n int) string {
			return "SELECT least(" + args(n, func(i int) string { return fmt.Sprintf("a + %d", i) }) + ") FROM t ORDER BY a"
		}, "[[1] [2] [3]]"},
		{"greatest strings", func(n int) string {
			return "SELECT greatest(" + args(n, func(i int) string { return fmt.Sprintf("s || '%d'", i%10) }) + ") FROM t ORDER BY a"
		}, "[[x9] [y9] [(null)]]"},
	}
	const small, large = 500, 4000
	for _, s := range shapes {
		cost := func(n int) uint64 {
			q := s.q(n)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got := fmt.Sprint(rows(t, sess, q))
			runtime.ReadMemStats(&after)
			want := s.want
			if want == "" {
				want = fmt.Sprintf("[[%d]]", n-1)
			}
			if got != want {
				t.Fatalf("%s, %d arguments: got %s, want %s", s.name, n, got, want)
			}
			return after.TotalAlloc - before.TotalAlloc
		}
		a, b := cost(small), cost(large)
		t.Logf("%s: %d arguments allocated %d bytes, %d arguments %d", s.name, small, a, large, b)
		// Linear would be 8 times as much; the comparator per pair of
		// arguments made it 64.
		if b > 20*a {
			t.Errorf("%s: %d arguments allocated %d bytes, %d arguments %d (%.1fx for %dx the arguments)",
				s.name, small, a, large, b, float64(b)/float64(a), large/small)
		}
	}
}

// TestGroupingSetsWidthAtPrepare: grouping sets over more group
// expressions than the grouping id has bits, and GROUPING of more
// arguments than its BIGINT has bits, fail when the statement is prepared,
// with SQLSTATE 54001 and the position, and nothing runs. The first failed
// only when the query ran ("at most 62 grouping columns", no position);
// the second ran and failed with "multiply: numeric overflow".
func TestGroupingSetsWidthAtPrepare(t *testing.T) {
	sess := newEngine(t).NewSession()
	cols := make([]string, 70)
	for i := range cols {
		cols[i] = fmt.Sprintf("c%d", i)
	}
	mustExec(t, sess, "CREATE TABLE gw ("+strings.Join(cols, " BIGINT, ")+" BIGINT)")
	mustExec(t, sess, "CREATE TABLE g2 (a BIGINT, b BIGINT)")
	for _, c := range []struct{ q, want string }{
		{"SELECT count(*) FROM gw GROUP BY ROLLUP(" + strings.Join(cols[:63], ", ") + ")", "line 1:1: statement too complex: grouping sets over more than 62 GROUP BY expressions"},
		{"SELECT GROUPING(" + strings.TrimSuffix(strings.Repeat("a, b, ", 32), ", ") + ") FROM g2 GROUP BY CUBE(a, b)", "line 1:8: statement too complex: GROUPING of more than 63 arguments"},
	} {
		_, err := sess.Prepare(context.Background(), c.q, nil)
		if err == nil || engine.SQLState(err) != "54001" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s...: want SQLSTATE 54001 %q at prepare, got %v", c.q, c.want, err)
		}
	}
	// At the limits, both run.
	if got := fmt.Sprint(rows(t, sess, "SELECT count(*) FROM gw GROUP BY ROLLUP("+strings.Join(cols[:62], ", ")+")")); got != "[[0]]" {
		t.Errorf("ROLLUP of 62 columns of an empty table: %s", got)
	}
	mustExec(t, sess, "INSERT INTO g2 VALUES (1, 2)")
	q := "SELECT GROUPING(" + strings.TrimSuffix(strings.Repeat("a, b, ", 31), ", ") + ", a) FROM g2 GROUP BY GROUPING SETS ((a, b), ()) ORDER BY 1"
	if got := fmt.Sprint(rows(t, sess, q)); got != "[[0] [9223372036854775807]]" {
		t.Errorf("GROUPING of 63 arguments: %s", got)
	}
}
