package plan_test

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/flightd/flightd/plan"
)

// TestHashJoinKeepsSortedLeftOrder: a hash join over a sorted subquery,
// with nothing above to order its rows again, returns them in the sort's
// order (HashJoin.KeepOrder), over many small probe batches that would
// otherwise be probed on several cores; with an ORDER BY above, the join
// probes in parallel and the sort restores the order.
func TestHashJoinKeepsSortedLeftOrder(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	}
	h, _ := newHarness(t, plan.Options{})
	if err := h.SetBatchSize(3); err != nil {
		t.Fatal(err)
	}
	var rows, dims []string
	for i := 0; i < 600; i++ {
		rows = append(rows, fmt.Sprintf("(%d, %d)", i%10, (i*37)%600))
	}
	for d := 0; d < 10; d++ {
		dims = append(dims, fmt.Sprintf("(%d, 'n%d')", d, d))
	}
	if err := h.Exec("CREATE TABLE f (d INT, x INT); CREATE TABLE dim (d INT, name VARCHAR); INSERT INTO f VALUES " +
		strings.Join(rows, ", ") + "; INSERT INTO dim VALUES " + strings.Join(dims, ", ")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT s.x, dim.name FROM (SELECT d, x FROM f ORDER BY x LIMIT 500) s JOIN dim ON s.d = dim.d",
		"SELECT s.x, dim.name FROM (SELECT d, x FROM f ORDER BY x LIMIT 500) s JOIN dim ON s.d = dim.d ORDER BY s.x",
	} {
		for run := 0; run < 5; run++ {
			_, got, err := h.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 500 {
				t.Fatalf("%s: %d rows, want 500", q, len(got))
			}
			for i, r := range got {
				if x, _ := strconv.Atoi(r[0]); x != i {
					t.Fatalf("%s: row %d has x = %s, want %d (order lost)", q, i, r[0], i)
				}
			}
		}
	}
}
