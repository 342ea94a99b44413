package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flightd/flightd/engine"
	qexec "github.com/flightd/flightd/exec"
)

// The values a statement's expressions compute and hold at once count
// against the query pool: each call below computes 10 MB, within a
// function's own bound, but ten held together (a projection's columns, a
// call's arguments, a CASE's arms) are 100 MB, over a 64 MiB pool. Before,
// each of these ran: a SELECT of 400 such calls could take the machine's
// memory.
func TestWorkingMemoryBounded(t *testing.T) {
	e := newEngineWith(t, engine.Config{QueryPool: 64 << 20})
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE t (k BIGINT)")
	mustExec(t, s, "INSERT INTO t VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)")
	pool := e.MemoryPool()

	// big(i, n) is an n-byte string computed per row, not a constant.
	big := func(i, n int) string { return fmt.Sprintf("repeat('x', %d + k - k) || '%d'", n, i) }
	list := func(n, size int, f func(int, int) string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = f(i, size)
		}
		return strings.Join(items, ", ")
	}
	whens := func(n, size int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, " WHEN k = %d THEN %s", i, big(i, size))
		}
		return b.String()
	}
	for _, c := range []struct{ name, over, under string }{
		// One row: ten 10 MB columns.
		{"projection", "SELECT " + list(10, 10_000_000, big) + " FROM t WHERE k = 0",
			"SELECT " + list(10, 1_000_000, big) + " FROM t WHERE k = 0"},
		{"arguments", "SELECT length(greatest(" + list(10, 10_000_000, big) + ")) FROM t WHERE k = 0",
			"SELECT length(greatest(" + list(10, 1_000_000, big) + ")) FROM t WHERE k = 0"},
		// Ten rows, each its own arm of 10 MB.
		{"case arms", "SELECT length(CASE" + whens(10, 10_000_000) + " END) FROM t",
			"SELECT length(CASE" + whens(10, 1_000_000) + " END) FROM t"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := rows(t, s, c.under); len(got) == 0 {
				t.Fatalf("%d rows", len(got))
			}
			_, err := queryRows(context.Background(), s, nil, c.over)
			if !errors.Is(err, qexec.ErrMemoryLimit) || engine.SQLState(err) != "53200" || !strings.Contains(err.Error(), "hold at once") {
				t.Fatalf("100 MB held at once in a 64 MiB pool: %v (SQLSTATE %q)", err, engine.SQLState(err))
			}
			if pool.Reserved() != 0 || pool.Consumers() != 0 {
				t.Fatalf("the pool holds %d bytes for %d reservations after the statement", pool.Reserved(), pool.Consumers())
			}
		})
	}
}
