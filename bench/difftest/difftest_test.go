package difftest

import (
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

var (
	flagSeed  = flag.Uint64("difftest.seed", 0, "run seed (data and queries); 0 derives one from the time")
	flagN     = flag.Int("difftest.n", 250, "queries per run")
	flagQuery = flag.Int("difftest.query", -1, "replay only this query number of the run")
	flagRuns  = flag.Int("difftest.runs", 1, "runs (data sets), seeds seed, seed+1, ...")
	flagV     = flag.Bool("difftest.v", false, "log every query")
	flagPrint = flag.Bool("difftest.print", false, "print the queries of the run, run none")
	flagOnly  = flag.String("difftest.only", "", "TestFlink: run only these queries, seed:query,seed:query,...")
)

// runSeed is -difftest.seed, else $DIFFTEST_SEED, else derived from the
// time.
func runSeed() uint64 {
	if *flagSeed != 0 {
		return *flagSeed
	}
	if s, err := strconv.ParseUint(os.Getenv("DIFFTEST_SEED"), 10, 64); err == nil {
		return s
	}
	return uint64(time.Now().UnixNano() % 1_000_000_000)
}

// TestDiff generates data and random queries, runs them on flightd and on
// DuckDB and fails on every difference: a wrong answer, or an error on
// one side only. The seed is time-derived unless -difftest.seed is given,
// and is printed with every finding so that it can be replayed.
func TestDiff(t *testing.T) {
	seed := runSeed()
	t.Logf("seed %d (replay with -difftest.seed=%d)", seed, seed)
	for r := range uint64(*flagRuns) {
		s := seed + r
		if *flagPrint {
			g := Tables(s)
			var names []string
			for _, tb := range g {
				names = append(names, tb.Name)
			}
			for i := range *flagN {
				if *flagQuery < 0 || i == *flagQuery {
					t.Logf("seed %d query %d: %s", s, i, NewGen(s, i, names).Query())
				}
			}
			continue
		}
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

// TestRegressions runs the queries that found bugs, kept as SQL text in
// testdata/regressions.txt ("seed<TAB>query" lines) so that changes to the
// generator do not change them; each runs on the tables of its seed.
func TestRegressions(t *testing.T) {
	data, err := os.ReadFile("testdata/regressions.txt")
	if err != nil {
		t.Fatal(err)
	}
	bySeed := map[uint64][]string{}
	var seeds []uint64
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, q, ok := strings.Cut(line, "\t")
		seed, err := strconv.ParseUint(s, 10, 64)
		if !ok || err != nil {
			t.Fatalf("testdata/regressions.txt:%d: want seed<TAB>query", n+1)
		}
		if bySeed[seed] == nil {
			seeds = append(seeds, seed)
		}
		bySeed[seed] = append(bySeed[seed], q)
	}
	for _, s := range seeds {
		runSQL(t, s, nil, bySeed[s])
	}
}

func runQueries(t *testing.T, seed uint64, queries []int) {
	t.Helper()
	runSQL(t, seed, queries, nil)
}

// runSQL runs the generated queries of the run seed (by number) or the
// given SQL texts on the tables of seed.
func runSQL(t *testing.T, seed uint64, queries []int, texts []string) {
	t.Helper()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	env, err := Setup(ctx, mem, t.TempDir(), seed)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	var counts [numOutcomes]int
	rows := 0
	var ftime, dtime time.Duration
	var slowest Result
	slowestQ := -1
	for n := range max(len(queries), len(texts)) {
		var r Result
		i := -1
		if texts != nil {
			r = env.Check(ctx, texts[n])
		} else {
			i = queries[n]
			r = env.Check(ctx, env.Query(i))
		}
		counts[r.Outcome]++
		rows += r.Rows
		ftime += r.Flightd
		dtime += r.DuckDB
		if r.Flightd > slowest.Flightd {
			slowest, slowestQ = r, i
		}
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
	excused := 0
	for o, n := range counts {
		if Outcome(o).Excused() {
			excused += n
		}
	}
	if total := max(len(queries), len(texts)); total >= 20 && float64(excused) > MaxExcused*float64(total) {
		t.Errorf("seed %d: %d of %d queries excused (both failed, unsupported, DuckDB's limits, one-sided overflow): more than %.0f%%",
			seed, excused, total, 100*MaxExcused)
	}
	t.Logf("seed %d: %d queries, %d answer rows compared; flightd %v, DuckDB %v; slowest on flightd: query %d (%v, %d rows)",
		seed, max(len(queries), len(texts)), rows, ftime.Round(time.Millisecond), dtime.Round(time.Millisecond), slowestQ, slowest.Flightd.Round(time.Millisecond), slowest.Rows)
	for o, n := range counts {
		if n > 0 {
			t.Logf("  %-14s %d", Outcome(o), n)
		}
	}
}
