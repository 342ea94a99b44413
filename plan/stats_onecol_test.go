package plan_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
)

// TestSelectivityOneColumn: conjuncts on one and the same column count
// once, the most selective (q74's d_year IN (2001, 2002) beside the
// (d_year = 2001 OR d_year = 2002) pushed down from its CTE's readers was
// estimated at 7 of 730 rows, which kept eager aggregation off); conjuncts
// on different columns still multiply.
func TestSelectivityOneColumn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	db, err := slt.NewInProc(ctx, t.TempDir(), mem, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows []string
	for i := range 10000 {
		rows = append(rows, fmt.Sprintf("(%d, %d)", i%100, i%50))
	}
	for _, s := range []string{"CREATE TABLE t (x INT, y INT)", "INSERT INTO t VALUES " + strings.Join(rows, ", ")} {
		if err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	estimate := regexp.MustCompile(`Scan [^\n]*\(rows=([0-9.]+)(k?)\)`)
	for _, c := range []struct {
		where  string
		lo, hi float64 // the estimate's bounds
	}{
		{"x IN (1, 2)", 150, 250},
		{"(x = 1 OR x = 2) AND x IN (1, 2)", 150, 250},
		{"x IN (1, 2) AND x <> 7", 150, 250},
		{"x IN (1, 2) AND y IN (1, 2)", 3, 10}, // 200 * 2/50
	} {
		b, err := db.Bind("SELECT * FROM t WHERE " + c.where)
		if err != nil {
			t.Fatal(err)
		}
		ex := b.(*plan.Query).Explain()
		m := estimate.FindStringSubmatch(ex)
		if m == nil {
			t.Fatalf("%s: no scan estimate in\n%s", c.where, ex)
		}
		n, _ := strconv.ParseFloat(m[1], 64)
		if m[2] == "k" {
			n *= 1000
		}
		if n < c.lo || n > c.hi {
			t.Errorf("%s: estimated %v rows, want %v to %v\n%s", c.where, n, c.lo, c.hi, ex)
		}
	}
}
