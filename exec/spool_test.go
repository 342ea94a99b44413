package exec_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// TestSpool replays one input to three readers (interleaved by UNION ALL and
// a hash join), in memory and spilled; runWith checks memory and that the
// spill file is gone.
func TestSpool(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	in := bigTable(t, rng, 2000, 50)
	s := in.Schema
	spooled := func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		sp := exec.NewSpool(ec, ops[0])
		a, b, c := sp.Reader(), sp.Reader(), sp.Reader()
		u, err := exec.NewUnionAll(ec, a, b)
		if err != nil {
			return nil, err
		}
		// Keep one row per key of c: a semi join against u keeps u's rows.
		return exec.NewHashJoin(ec, u, c, exec.SemiJoin, []exec.Expr{col(s, "k")}, []exec.Expr{col(s, "k")}, nil)
	}
	var want []string
	for _, r := range in.Rows {
		if r[0] != "NULL" {
			row := r[0] + " | " + r[1] + " | " + r[2]
			want = append(want, row, row)
		}
	}
	slices.Sort(want)
	for _, limit := range []int64{0, 4 << 10} {
		rows, spilled, err := runWith(t, []exectest.Table{in}, limit, 1024, spooled)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(rows)
		if !slices.Equal(rows, want) {
			t.Fatalf("limit %d: %d rows, want %d (seed %d)", limit, len(rows), len(want), seed)
		}
		if (limit > 0) != (spilled > 0) {
			t.Fatalf("limit %d: spilled %d rows", limit, spilled)
		}
	}
}
