package difftest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/flink"
)

// TestFlink runs the generated queries on flightd, Apache Flink 2.3
// (interop/flink, batch mode, the tables as CSV files) and DuckDB, and
// fails on every disagreement of flightd with Flink that no rule of
// flinkRules explains, and on every result column flightd types apart
// from Flink that no rule of typeRules explains. DuckDB's disagreements
// with Flink are counted, not failed: Flink is the dialect. The flags are
// TestDiff's; it needs Java 17 and Maven with Flink in the local
// repository: set FLIGHTD_FLINK=1 to run it.
func TestFlink(t *testing.T) {
	if os.Getenv("FLIGHTD_FLINK") == "" {
		t.Skip("set FLIGHTD_FLINK=1 to compare with Apache Flink (Java 17, Maven, Flink 2.3 in ~/.m2)")
	}
	seed := runSeed()
	oracle := &flinkProcess{}
	oracle.start(t)
	defer oracle.close(t)
	var sum flinkSummary
	start := time.Now()
	if *flagOnly != "" {
		// seed:query,seed:query,...: a long run's findings again.
		bySeed := map[uint64][]int{}
		var seeds []uint64
		for _, sq := range strings.Split(*flagOnly, ",") {
			var s uint64
			var q int
			if _, err := fmt.Sscanf(sq, "%d:%d", &s, &q); err != nil {
				t.Fatalf("-difftest.only: %q is not seed:query", sq)
			}
			if bySeed[s] == nil {
				seeds = append(seeds, s)
			}
			bySeed[s] = append(bySeed[s], q)
		}
		for _, s := range seeds {
			runFlink(t, oracle, s, bySeed[s], &sum)
		}
		sum.log(t, time.Since(start))
		return
	}
	t.Logf("seed %d (replay with -difftest.seed=%d)", seed, seed)
	for r := range uint64(*flagRuns) {
		s := seed + r
		queries := []int{*flagQuery}
		if *flagQuery < 0 {
			queries = make([]int, *flagN)
			for i := range queries {
				queries[i] = i
			}
		}
		runFlink(t, oracle, s, queries, &sum)
	}
	sum.log(t, time.Since(start))
}

// flinkSummary counts a run's verdicts.
type flinkSummary struct {
	queries, rows int
	classes       [numFlinkClasses]int
	rules         map[string]int
	// perCategory counts queries and agreements (agree or both failed)
	// with Flink, of flightd and of DuckDB.
	perCategory map[string]*[3]int
	types       map[string]int
	// took adds up the queries' times on the three engines, flinkWait
	// their FlinkResult.FlinkWait.
	took, flinkWait time.Duration
}

func (s *flinkSummary) add(r FlinkResult, took time.Duration) {
	if s.rules == nil {
		s.rules, s.perCategory, s.types = map[string]int{}, map[string]*[3]int{}, map[string]int{}
	}
	s.queries++
	s.rows += r.Rows
	s.took += took
	s.flinkWait += r.FlinkWait
	s.classes[r.Class]++
	if r.Rule != "" {
		s.rules[r.Rule]++
	}
	c := s.perCategory[r.Category]
	if c == nil {
		c = new([3]int)
		s.perCategory[r.Category] = c
	}
	c[0]++
	if r.Class == FlinkAgree || r.Class == FlinkBothFailed {
		c[1]++
	}
	if r.DuckDB == "" {
		c[2]++
	}
	for _, d := range r.TypeDiffs {
		s.types[fmt.Sprintf("Flink %s, flightd %s", d.Flink, d.Flightd)]++
	}
}

func (s *flinkSummary) log(t *testing.T, took time.Duration) {
	t.Helper()
	// As TestDiff's MaxExcused: a change making most queries fail on both
	// sides, or unsupported, must not pass.
	if excused := s.classes[FlinkBothFailed] + s.classes[FlinkUnsupported]; s.queries >= 20 && float64(excused) > MaxExcused*float64(s.queries) {
		t.Errorf("%d of %d queries failed on both or are unsupported: more than %.0f%%", excused, s.queries, 100*MaxExcused)
	}
	t.Logf("%d queries, %d answer rows from Flink, in %v", s.queries, s.rows, took.Round(time.Second))
	if s.queries > 0 {
		n := time.Duration(s.queries)
		t.Logf("  per query %v on the three engines, of which %v waiting for Flink after flightd and DuckDB answered",
			(s.took / n).Round(time.Millisecond), (s.flinkWait / n).Round(time.Millisecond))
	}
	for c, n := range s.classes {
		if n > 0 {
			t.Logf("  %-20s %d", FlinkClass(c), n)
		}
	}
	for _, k := range sortedKeys(s.rules) {
		t.Logf("  rule %q: %d", k, s.rules[k])
	}
	for _, k := range sortedKeys(s.perCategory) {
		c := s.perCategory[k]
		t.Logf("  %-14s %4d queries: flightd agrees with Flink on %d (%.1f%%), DuckDB on %d (%.1f%%)",
			k, c[0], c[1], 100*float64(c[1])/float64(c[0]), c[2], 100*float64(c[2])/float64(c[0]))
	}
	for _, k := range sortedKeys(s.types) {
		t.Logf("  result type %s: %d columns", k, s.types[k])
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// flinkProcess is the run's FlinkOracle, started again after a query it
// did not answer in time.
type flinkProcess struct{ *flink.Oracle }

func (p *flinkProcess) start(t *testing.T) {
	t.Helper()
	var err error
	if p.Oracle, err = flink.Start("../../interop/flink"); err != nil {
		t.Fatal(err)
	}
}

func (p *flinkProcess) close(t *testing.T) {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Errorf("FlinkOracle: %v", err)
	}
}

// runFlink runs the queries of the run seed on flightd, Flink and DuckDB.
// A query Flink does not answer in time fails, and the run goes on with a
// new FlinkOracle.
func runFlink(t *testing.T, oracle *flinkProcess, seed uint64, queries []int, sum *flinkSummary) {
	t.Helper()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	dir := t.TempDir()
	env, err := Setup(ctx, mem, dir, seed)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if err := LoadFlink(oracle.Oracle, dir, env.Tables); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	for _, i := range queries {
		start := time.Now()
		r, err := env.CheckFlink(ctx, oracle.Oracle, i)
		took := time.Since(start)
		if errors.Is(err, flink.ErrTimeout) {
			oracle.close(t)
			oracle.start(t)
			if err := LoadFlink(oracle.Oracle, dir, env.Tables); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		} else if err != nil {
			t.Fatalf("seed %d query %d: %v", seed, i, err)
		}
		sum.add(r, took)
		head := fmt.Sprintf("seed %d query %d (replay: go test ./difftest -run TestFlink -difftest.seed=%d -difftest.query=%d)", seed, i, seed, i)
		switch {
		case r.Class == FlinkFinding:
			t.Errorf("%s: differs from Flink: %s\n  flink sql: %s\n  duckdb: %s", head, r.Detail, r.SQL, orAgrees(r.DuckDB))
		case r.Rule != "" || *flagV:
			t.Logf("%s: %s %s: %s\n  flink sql: %s", head, r.Class, r.Rule, r.Detail, r.SQL)
		}
		for _, d := range r.TypeDiffs {
			if rule := typeRule(d, r.SQL); rule == "" {
				t.Errorf("%s: result %s\n  flink sql: %s", head, d, r.SQL)
			} else {
				sum.rules["type: "+rule]++
			}
		}
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
}

func orAgrees(d string) string {
	if d == "" {
		return "agrees with Flink"
	}
	return d
}
