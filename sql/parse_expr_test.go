package sql

import (
	"flag"
	"math/rand/v2"
	"strings"
	"testing"
)

var exprSeed = flag.Uint64("seed", 0, "seed of the random expression tests (0: a new one)")

var exprTokens = []string{"k", "v", "1", "2.5", "'x'", "'a''b'", "`q`", "(", ")", "OR", "AND", "NOT", "=", ">", "+", "*", "IS", "NULL",
	"IN", ",", "--", "/*", "*/", ";", "FROM", "SELECT", "CASE", "WHEN", "THEN", "END", "\n"}

// TestParseExpr: ParseExpr takes all of its text as one expression: on
// random token strings (seed printed) it never panics; what it accepts is
// exactly what a WHERE clause holding that text parses to, and followed by
// text that would close or end it, it is refused.
func TestParseExpr(t *testing.T) {
	seed := *exprSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -seed)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	accepted := 0
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(exprTokens[rng.IntN(len(exprTokens))] + " ")
		}
		src := b.String()
		e, err := ParseExpr(src)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("seed %d: ParseExpr(%q): error without position: %v", seed, src, err)
			}
			continue
		}
		accepted++
		// The clause holding it parses the same (a trailing comment
		// needs the line break to end).
		st, err := ParseOne("SELECT 1 FROM t WHERE " + src + "\n")
		if err != nil {
			t.Fatalf("seed %d: ParseExpr accepted %q, a WHERE clause does not: %v", seed, src, err)
		}
		if got, want := Format(e), Format(st.(*Query).Body.(*Select).Where); got != want {
			t.Fatalf("seed %d: ParseExpr(%q) = %s, the WHERE clause is %s", seed, src, got, want)
		}
		for _, tail := range []string{") OR (1 = 1", "; DROP TABLE t", ") */", ", 1", "FROM t"} {
			if _, err := ParseExpr(src + "\n" + tail); err == nil {
				t.Fatalf("seed %d: ParseExpr accepted %q followed by %q", seed, src, tail)
			}
		}
	}
	t.Logf("%d of 20000 parsed", accepted)
	if accepted == 0 {
		t.Fatalf("seed %d: no random expression parsed; the test checks nothing", seed)
	}
	for _, src := range []string{"", "  ", "-- only a comment", "1) OR (1"} {
		if _, err := ParseExpr(src); err == nil {
			t.Errorf("ParseExpr(%q) accepted", src)
		}
	}
}
