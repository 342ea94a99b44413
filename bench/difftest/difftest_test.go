package difftest

import (
	"context"
	"flag"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

var (
	flagSeed  = flag.Uint64("difftest.seed", 0, "run seed (data and queries); 0 derives one from the time")
	flagN     = flag.Int("difftest.n", 300, "queries per run")
	flagQuery = flag.Int("difftest.query", -1, "replay only this query number of the run")
	flagRuns  = flag.Int("difftest.runs", 1, "runs (data sets), seeds seed, seed+1, ...")
	flagV     = flag.Bool("difftest.v", false, "log every query")
)

// regressions are (seed, query) pairs that found bugs; they run every time.
var regressions = []struct {
	seed  uint64
	query int
}{}

// TestDiff generates data and random queries, runs them on flightd and on
// DuckDB and fails on every difference: a wrong answer, or an error on
// one side only. The seed is time-derived unless -difftest.seed is given,
// and is printed with every finding so that it can be replayed.
func TestDiff(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		if s, err := strconv.ParseUint(os.Getenv("DIFFTEST_SEED"), 10, 64); err == nil {
			seed = s
		} else {
			seed = uint64(time.Now().UnixNano() % 1_000_000_000)
		}
	}
	t.Logf("seed %d (replay with -difftest.seed=%d)", seed, seed)
	for r := range uint64(*flagRuns) {
		s := seed + r
		if *flagQuery >= 0 {
			runQueries(t, s, []int{*flagQuery})
			continue
		}
		qs := make([]int, *flagN)
		for i := range qs {
			qs[i] = i
		}
		runQueries(t, s, qs)
	}
}

// TestRegressions replays the queries that found bugs.
func TestRegressions(t *testing.T) {
	bySeed := map[uint64][]int{}
	for _, r := range regressions {
		bySeed[r.seed] = append(bySeed[r.seed], r.query)
	}
	for s, qs := range bySeed {
		runQueries(t, s, qs)
	}
}

func runQueries(t *testing.T, seed uint64, queries []int) {
	t.Helper()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	env, err := Setup(ctx, mem, t.TempDir(), seed)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	var counts [numOutcomes]int
	rows := 0
	for _, i := range queries {
		r := env.Check(ctx, env.Query(i))
		counts[r.Outcome]++
		rows += r.Rows
		switch {
		case r.Outcome.Finding():
			t.Error(env.Report(i, r))
		case *flagV || r.Outcome == Unsupported:
			t.Log(env.Report(i, r))
		}
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	t.Logf("seed %d: %d queries, %d answer rows compared:", seed, len(queries), rows)
	for o, n := range counts {
		if n > 0 {
			t.Logf("  %-14s %d", Outcome(o), n)
		}
	}
}
