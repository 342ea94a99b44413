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

// A statement's reservations go back to the engine's pool however it ends:
// read to the end, failed mid-sort, cancelled, or closed unread.
func TestPoolEmptyAfterStatements(t *testing.T) {
	e := newEngineWith(t, engine.Config{QueryPool: 4 << 20})
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE t (k BIGINT, s STRING)")
	var vals []string
	for i := range 20000 {
		vals = append(vals, fmt.Sprintf("(%d, 'row-%d-%s')", i, (i*7919)%20011, strings.Repeat("x", i%20)))
	}
	mustExec(t, s, "INSERT INTO t VALUES "+strings.Join(vals, ","))
	pool := e.MemoryPool()
	empty := func(what string) {
		t.Helper()
		if pool.Reserved() != 0 || pool.Consumers() != 0 {
			t.Fatalf("%s: the pool holds %d bytes for %d reservations", what, pool.Reserved(), pool.Consumers())
		}
	}
	const sorted = "SELECT k, s FROM t ORDER BY s DESC, k"
	if got := rows(t, s, sorted); len(got) != 20000 {
		t.Fatalf("%d rows", len(got))
	}
	empty("read to the end")
	if pool.Peak() == 0 {
		t.Fatalf("the sort reserved nothing: %v", rows(t, s, "EXPLAIN "+sorted))
	}

	// run starts q, reads up to n batches, then stops as stop says.
	run := func(ctx context.Context, q string, n int) error {
		st, err := s.Prepare(ctx, q, nil)
		if err != nil {
			return err
		}
		op, err := st.Query(ctx, nil)
		if err != nil {
			return err
		}
		defer op.Close()
		if err := op.Open(ctx); err != nil {
			return err
		}
		for range n {
			if _, err := op.Next(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	// The sort key divides by zero at the last row: the sort fails after
	// it reserved the rows before.
	err := run(context.Background(), "SELECT k, s FROM t ORDER BY s || CAST(10 / (19999 - k) AS STRING)", 1)
	if err == nil {
		t.Fatal("division by zero: no error")
	}
	empty("failed: " + err.Error())

	ctx, cancel := context.WithCancel(context.Background())
	st, err := s.Prepare(ctx, "SELECT a.k, b.s FROM t a JOIN t b ON a.s = b.s ORDER BY b.s", nil)
	if err != nil {
		t.Fatal(err)
	}
	op, err := st.Query(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if pool.Reserved() == 0 {
		t.Fatal("an open sort over a join reserves nothing")
	}
	cancel()
	if _, err := qexec.Next(ctx, op); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	op.Close()
	empty("cancelled")

	// Read two batches of many, then abandoned (a client gone).
	if err := run(context.Background(), sorted, 2); err != nil {
		t.Fatal(err)
	}
	empty("abandoned")
}
