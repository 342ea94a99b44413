package engine_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
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
