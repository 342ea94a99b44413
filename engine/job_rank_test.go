package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
)

// TestJobDedupBeyondBudget: a continuous deduplication job (the latest
// event per user) over a table without before-images, whose state (every
// event of the source, in the normalization and in the deduplication) is
// over 10x the query budget, spills it and keeps its sink equal to the
// batch answer, across a restart.
func TestJobDedupBeyondBudget(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if *seedFlag != 0 {
		seed = *seedFlag
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const budget = 32 << 10
	// Each held event is its sort key (about 30 bytes) and three boxed
	// values: at least 100 bytes.
	const events = 10 * budget / 100
	dir, spill := t.TempDir(), t.TempDir()
	open := func() (*engine.Engine, *memory.CheckedAllocator) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		e, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: dir, SpillDir: spill, QueryMemory: budget})
		if err != nil {
			t.Fatal(err)
		}
		return e, mem
	}
	e, mem := open()
	s := e.NewSession()
	mustExec(t, s, `CREATE TABLE ev (k BIGINT NOT NULL, u BIGINT NOT NULL, ts BIGINT, PRIMARY KEY (k) NOT ENFORCED)`)
	mustExec(t, s, `CREATE TABLE latest (u BIGINT NOT NULL, k BIGINT, ts BIGINT, PRIMARY KEY (u) NOT ENFORCED)`)
	const query = `SELECT u, k, ts FROM (SELECT u, k, ts, ROW_NUMBER() OVER (PARTITION BY u ORDER BY ts DESC, k) AS rn FROM ev %s) x WHERE rn = 1`
	mustExec(t, s, `INSERT INTO ev VALUES (0, 0, 0)`)
	if _, err := exec(context.Background(), s, nil, `INSERT INTO latest `+fmt.Sprintf(query, `/*+ OPTIONS('scan.mode'='latest-full') */`)); err != nil {
		t.Fatal(err)
	}
	c := jobCase{batch: query, sources: []string{"ev"}}
	k := 1
	for round := range 2 {
		for range 10 {
			var vals []string
			for range events / 5 {
				vals = append(vals, fmt.Sprintf("(%d, %d, %d)", k, rng.IntN(400), rng.IntN(100000)))
				k++
			}
			mustExec(t, s, `INSERT INTO ev VALUES `+strings.Join(vals, ", "))
			if rng.IntN(3) == 0 {
				mustExec(t, s, fmt.Sprintf(`DELETE FROM ev WHERE k %% 50 = %d`, rng.IntN(50)))
			}
		}
		st := waitCaughtUp(t, e, c, onlyJob(t, e).ID)
		got := rowSet(t, s, `SELECT u, k, ts FROM latest`)
		if want := rowSet(t, s, batchAt(c, st.Positions)); !slices.Equal(got, want) {
			t.Fatalf("seed %d: round %d: sink at %v:\n%v\nwant\n%v", seed, round, st.Positions, got, want)
		}
		if n := len(rowSet(t, s, `SELECT k FROM ev`)); n < events {
			t.Fatalf("the source holds %d events, not the %d that make the state 10x the budget", n, events)
		}
		t.Logf("round %d: %d users in the sink at %v", round, len(got), st.Positions)
		closeEngine(t, e, mem)
		if round == 0 {
			e, mem = open()
			s = e.NewSession()
		}
	}
}
