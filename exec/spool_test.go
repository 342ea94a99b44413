package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
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

// TestSpoolMergesSmallBatches: a spool keeps its input's rows in batches of
// about the batch size, however small the input's batches. A CTE that
// doubles itself by UNION ALL 23 times fed each spool one-row batches: the
// last held 4M of them, 500 MB of batch headers the budget did not count
// (the process went past -memory-limit), and counting its rows took 43 s.
func TestSpoolMergesSmallBatches(t *testing.T) {
	const n = 3000
	tb := exectest.NewTable(t, "k:int64, s:string")
	for i := range n {
		tb.Rows = append(tb.Rows, []string{fmt.Sprint(i), fmt.Sprint("s", i)})
	}
	var want []string
	for _, r := range tb.Rows {
		want = append(want, r[0]+" | "+r[1])
	}
	for _, limit := range []int64{0, 4 << 10} {
		ec, mem, checked := spillContext(limit, t.TempDir())
		ec.BatchSize = 1024
		var bs []arrow.RecordBatch
		for i := range n {
			b, err := tb.Batch(mem, i, i+1, 0)
			if err != nil {
				t.Fatal(err)
			}
			bs = append(bs, b)
		}
		sp := exec.NewSpool(ec, exectest.Source(ec, tb.Schema, bs))
		for _, r := range []exec.Operator{sp.Reader(), sp.Reader()} {
			out, err := exec.Collect(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if got := exectest.Rows(out); !slices.Equal(got, want) {
				t.Fatalf("limit %d: %d rows, want %d", limit, len(got), len(want))
			}
			if len(out) > n/(ec.BatchSize/2)+1 {
				t.Errorf("limit %d: %d rows replayed in %d batches", limit, n, len(out))
			}
			for _, b := range out {
				b.Release()
			}
		}
		if (limit > 0) != (ec.SpilledRows() > 0) {
			t.Fatalf("limit %d: spilled %d rows", limit, ec.SpilledRows())
		}
		noSpillFilesLeft(t, ec)
		checked.AssertSize(t, 0)
	}
}
