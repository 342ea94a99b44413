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

// TestJobJoinBeyondBudget: a continuous join job (events enriched with
// their user's name) whose join state (every event and user) is over 10x
// the query budget spills it and keeps its sink equal to the batch answer,
// across a restart.
func TestJobJoinBeyondBudget(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if *seedFlag != 0 {
		seed = *seedFlag
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const budget = 32 << 10
	// Each held event is three boxed values, its keys and an entry: at
	// least 100 bytes.
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
	mustExec(t, s, `CREATE TABLE ev (k BIGINT NOT NULL, u BIGINT NOT NULL, ts BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('changelog-producer' = 'lookup')`)
	mustExec(t, s, `CREATE TABLE users (u BIGINT NOT NULL, name STRING, PRIMARY KEY (u) NOT ENFORCED) WITH ('changelog-producer' = 'lookup')`)
	mustExec(t, s, `CREATE TABLE enriched (k BIGINT NOT NULL, u BIGINT, ts BIGINT, name STRING, PRIMARY KEY (k) NOT ENFORCED)`)
	const query = `SELECT e.k, e.u, e.ts, d.name FROM ev %s e JOIN users %s d ON e.u = d.u`
	const hint = `/*+ OPTIONS('scan.mode'='latest-full') */`
	mustExec(t, s, `INSERT INTO users VALUES (0, 'u0')`)
	if _, err := exec(context.Background(), s, nil, `INSERT INTO enriched `+fmt.Sprintf(query, hint, hint)); err != nil {
		t.Fatal(err)
	}
	c := jobCase{batch: query, sources: []string{"ev", "users"}}
	k := 1
	for round := range 2 {
		for range 10 {
			var vals, users []string
			for range events / 5 {
				vals = append(vals, fmt.Sprintf("(%d, %d, %d)", k, rng.IntN(400), rng.IntN(100000)))
				k++
			}
			for range 20 {
				u := rng.IntN(400)
				users = append(users, fmt.Sprintf("(%d, 'user %d v%d')", u, u, rng.IntN(5)))
			}
			mustExec(t, s, `INSERT INTO ev VALUES `+strings.Join(vals, ", "))
			mustExec(t, s, `INSERT INTO users VALUES `+strings.Join(users, ", "))
			if rng.IntN(3) == 0 {
				mustExec(t, s, fmt.Sprintf(`DELETE FROM ev WHERE k %% 50 = %d`, rng.IntN(50)))
			}
		}
		st := waitCaughtUp(t, e, c, onlyJob(t, e).ID)
		got := rowSet(t, s, `SELECT k, u, ts, name FROM enriched`)
		if want := rowSet(t, s, batchAt(c, st.Positions)); !slices.Equal(got, want) {
			t.Fatalf("seed %d: round %d: sink at %v:\n%v\nwant\n%v", seed, round, st.Positions, got, want)
		}
		if n := len(rowSet(t, s, `SELECT k FROM ev`)); n < events {
			t.Fatalf("the source holds %d events, not the %d that make the state 10x the budget", n, events)
		}
		t.Logf("round %d: %d rows in the sink at %v", round, len(got), st.Positions)
		closeEngine(t, e, mem)
		if round == 0 {
			e, mem = open()
			s = e.NewSession()
		}
	}
}
