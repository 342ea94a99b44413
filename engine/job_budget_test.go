package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
)

// budgetJob is a continuous job whose state grows past its query budget.
type budgetJob struct {
	ddl  []string
	sink string // the job's target
	// query reads the sources, a %s after each for its hint.
	query string
	cols  string // the sink's columns, as query's
	// write adds to the sources besides the events of ev (nil: nothing).
	write func(rng *rand.Rand) []string
}

// runBudgetJob runs j with state over 10x a 32 KiB budget, its state also
// reserved in a pool of twice that: its sink must equal the batch answer at
// the job's positions, twice, across a restart, and the pool must be empty
// once the engine closed. The events come in 80 commits, so that what one
// snapshot adds to an operator's state (which spills only at the
// snapshot's end) fits in the pool.
func runBudgetJob(t *testing.T, j budgetJob) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	const budget = 32 << 10
	// Each held event is a few boxed values and keys: at least 100 bytes.
	const events = 10 * budget / 100
	dir, spill := t.TempDir(), t.TempDir()
	open := func() (*engine.Engine, *memory.CheckedAllocator) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		e, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: dir, SpillDir: spill, QueryMemory: budget, QueryPool: 2 * budget})
		if err != nil {
			t.Fatal(err)
		}
		return e, mem
	}
	e, mem := open()
	s := e.NewSession()
	for _, q := range j.ddl {
		mustExec(t, s, q)
	}
	const hint = `/*+ OPTIONS('scan.mode'='latest-full') */`
	sources := strings.Count(j.query, "%s")
	hints := make([]any, sources)
	for i := range hints {
		hints[i] = hint
	}
	if _, err := exec(context.Background(), s, nil, `INSERT INTO `+j.sink+` `+fmt.Sprintf(j.query, hints...)); err != nil {
		t.Fatal(err)
	}
	c := jobCase{batch: j.query, sources: make([]string, sources)}
	k := 1
	for round := range 2 {
		for range 80 {
			var vals []string
			for range events / 40 {
				vals = append(vals, fmt.Sprintf("(%d, %d, %d)", k, rng.IntN(400), rng.IntN(100000)))
				k++
			}
			mustExec(t, s, `INSERT INTO ev VALUES `+strings.Join(vals, ", "))
			if j.write != nil {
				for _, q := range j.write(rng) {
					mustExec(t, s, q)
				}
			}
			if rng.IntN(3) == 0 {
				mustExec(t, s, fmt.Sprintf(`DELETE FROM ev WHERE k %% 50 = %d`, rng.IntN(50)))
			}
		}
		st := waitCaughtUp(t, e, c, onlyJob(t, e).ID)
		got := rowSet(t, s, `SELECT `+j.cols+` FROM `+j.sink)
		if want := rowSet(t, s, batchAt(c, st.Positions)); !slices.Equal(got, want) {
			t.Fatalf("seed %d: round %d: sink at %v:\n%v\nwant\n%v", seed, round, st.Positions, got, want)
		}
		if n := len(rowSet(t, s, `SELECT k FROM ev`)); n < events {
			t.Fatalf("the source holds %d events, not the %d that make the state 10x the budget", n, events)
		}
		t.Logf("round %d: %d rows in the sink at %v", round, len(got), st.Positions)
		closeEngine(t, e, mem)
		if p := e.MemoryPool(); p.Reserved() != 0 || p.Consumers() != 0 {
			t.Fatalf("closed, the pool holds %d bytes for %d reservations", p.Reserved(), p.Consumers())
		}
		if round == 0 {
			e, mem = open()
			s = e.NewSession()
		}
	}
}

// TestJobDedupBeyondBudget: a continuous deduplication job (the latest
// event per user) over a table without before-images, whose state (every
// event of the source, in the normalization and in the deduplication) is
// over 10x the query budget, spills it.
func TestJobDedupBeyondBudget(t *testing.T) {
	runBudgetJob(t, budgetJob{
		ddl: []string{
			`CREATE TABLE ev (k BIGINT NOT NULL, u BIGINT NOT NULL, ts BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
			`CREATE TABLE latest (u BIGINT NOT NULL, k BIGINT, ts BIGINT, PRIMARY KEY (u) NOT ENFORCED)`,
			`INSERT INTO ev VALUES (0, 0, 0)`,
		},
		sink:  "latest",
		query: `SELECT u, k, ts FROM (SELECT u, k, ts, ROW_NUMBER() OVER (PARTITION BY u ORDER BY ts DESC, k) AS rn FROM ev %s) x WHERE rn = 1`,
		cols:  "u, k, ts",
	})
}

// TestJobJoinBeyondBudget: a continuous join job (events enriched with
// their user's name) whose join state (every event and user) is over 10x
// the query budget spills it.
func TestJobJoinBeyondBudget(t *testing.T) {
	runBudgetJob(t, budgetJob{
		ddl: []string{
			`CREATE TABLE ev (k BIGINT NOT NULL, u BIGINT NOT NULL, ts BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('changelog-producer' = 'lookup')`,
			`CREATE TABLE users (u BIGINT NOT NULL, name STRING, PRIMARY KEY (u) NOT ENFORCED) WITH ('changelog-producer' = 'lookup')`,
			`CREATE TABLE enriched (k BIGINT NOT NULL, u BIGINT, ts BIGINT, name STRING, PRIMARY KEY (k) NOT ENFORCED)`,
			`INSERT INTO users VALUES (0, 'u0')`,
		},
		sink:  "enriched",
		query: `SELECT e.k, e.u, e.ts, d.name FROM ev %s e JOIN users %s d ON e.u = d.u`,
		cols:  "k, u, ts, name",
		write: func(rng *rand.Rand) []string {
			var users []string
			for range 20 {
				u := rng.IntN(400)
				users = append(users, fmt.Sprintf("(%d, 'user %d v%d')", u, u, rng.IntN(5)))
			}
			return []string{`INSERT INTO users VALUES ` + strings.Join(users, ", ")}
		},
	})
}
