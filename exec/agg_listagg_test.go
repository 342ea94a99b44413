package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// TestListagg: LISTAGG of each group holds exactly the group's non-NULL
// strings, joined by the separator, and is NULL for a group without any;
// random groups and NULLs in random sliced batches, serial and parallel.
func TestListagg(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 4))
	for round := range 10 {
		n := 1 + rng.IntN(400)
		groups := 1 + rng.IntN(20)
		want := map[string][]string{}
		var rows []string
		for range n {
			g := fmt.Sprint(rng.IntN(groups))
			s := "NULL"
			if rng.IntN(4) > 0 {
				s = fmt.Sprintf("v%d", rng.IntN(50))
				want[g] = append(want[g], s)
			} else if want[g] == nil {
				want[g] = []string{}
			}
			rows = append(rows, g+" | "+s)
		}
		tb := exectest.NewTable(t, "g:int32, s:string", rows...)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ec := exec.NewContext(mem)
		ec.Parallelism = 1 + round%3
		batches, err := tb.Split(mem, rng, 50, true)
		if err != nil {
			t.Fatal(err)
		}
		src := exectest.Source(ec, tb.Schema, batches)
		agg, err := exec.NewParallelHashAggregate(ec, src, []exec.Expr{exec.NewColumn(0, arrow.PrimitiveTypes.Int32, "g")}, nil,
			[]exec.AggregateSpec{{Func: "listagg", Args: []exec.Expr{exec.NewColumn(1, arrow.BinaryTypes.String, "s"), exec.NewLiteral(scalar.NewStringScalar("|"))}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Collect(context.Background(), agg)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		got := exectest.Rows(out)
		for _, b := range out {
			b.Release()
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d round %d: %d groups, want %d", seed, round, len(got), len(want))
		}
		for _, r := range got {
			g, v, _ := strings.Cut(r, " | ")
			w := want[g]
			if len(w) == 0 {
				if v != "NULL" {
					t.Fatalf("seed %d: group %s: got %q, want NULL", seed, g, v)
				}
				continue
			}
			pieces := strings.Split(v, "|")
			slices.Sort(pieces)
			slices.Sort(w)
			if !slices.Equal(pieces, w) {
				t.Fatalf("seed %d: group %s: got %q, want the pieces %q", seed, g, v, w)
			}
		}
		mem.AssertSize(t, 0)
	}
}
