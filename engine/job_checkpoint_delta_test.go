package engine_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/stream"
)

// TestJobCheckpointChains runs jobs whose operators save deltas (GROUP
// BY, a join, top-N, an OVER aggregation) with a checkpoint every few milliseconds, so that
// their checkpoints form chains of a base and many deltas, and new bases
// come (the deltas outgrow the base, or a barrier is not written), while
// a random workload writes their sources; it stops the job (its engine
// closed) at random points, many times. Every restart must restore the
// last checkpoint, its chain whole (the files before its base deleted,
// none of its own), reading only the source snapshots since, and the
// sink must equal the batch answer at the positions the job reports:
// every change applied exactly once. The runs must have written several
// bases and many deltas, and restored from chains with deltas.
func TestJobCheckpointChains(t *testing.T) {
	seed := testSeed(t)
	rounds := 10
	if testing.Short() || raceEnabled {
		rounds = 5
	}
	for _, c := range checkpointCases() {
		switch c.name {
		case "groupby", "join", "top3", "over":
		default:
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			every := func() time.Duration { return time.Duration(2+rng.IntN(15)) * time.Millisecond }
			dir := t.TempDir()
			e, mem, s, id := startLoadedJob(t, dir, c, every(), 0)
			st := waitCaughtUp(t, e, c, id)
			var total stream.CheckpointStats
			fromChain := 0
			for round := range rounds {
				// Three batches of writes; after the first two the job
				// must have checkpointed, so that every run writes a chain
				// however slow the machine (the third ends at a random point).
				for batch := range 3 {
					for i := range 2 + rng.IntN(15) {
						mustExec(t, s, c.write(rng, i))
						if rng.IntN(4) == 0 {
							time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
						}
					}
					if batch < 2 {
						waitCheckpoint(t, e, s, c, rng)
					}
				}
				checkCommitted(t, e, s, c, id)
				addStats(&total, onlyJob(t, e).Checkpoints)
				closeEngine(t, e, mem)
				files := checkpointFiles(t, dir, id)
				e, mem = openCheckpointEngine(t, dir, every(), 0)
				s = e.NewSession()
				st = waitStarted(t, e, c, id)
				if st.Start != engine.StartCheckpoint {
					t.Fatalf("seed %d round %d: the job did not restore its checkpoint (files %v): %+v", seed, round, files, st)
				}
				if len(files) > 1 {
					fromChain++
				}
				var snaps int64
				for i, p := range st.Positions {
					snaps += p - st.From[i]
				}
				if limit := 4 * snaps; st.SourceRows > limit {
					t.Fatalf("seed %d round %d: the restarted job read %d source rows, more than the %d the %d source snapshots since its checkpoint changed", seed, round, st.SourceRows, limit, snaps)
				}
				checkSinkAt(t, s, c, st, seed)
			}
			addStats(&total, onlyJob(t, e).Checkpoints)
			closeEngine(t, e, mem)
			t.Logf("%d checkpoints, %d bases, %d bytes; %d of %d restarts from a chain with deltas", total.Count, total.Bases, total.Bytes, fromChain, rounds)
			// Deltas: at least one per round (each round waits for two
			// checkpoints; a slow machine, under -race, writes fewer than
			// twice that: 9 deltas in 5 rounds in a CI race pass).
			if total.Bases < 2 || total.Count-total.Bases < int64(rounds) || fromChain == 0 {
				t.Fatalf("seed %d: %d checkpoints, %d bases, %d restores from a chain: the chains were not exercised", seed, total.Count, total.Bases, fromChain)
			}
		})
	}
}

// waitCheckpoint waits until the job writes one more checkpoint. A
// commit at a barrier that not every operator saw has no state: when the
// job has committed all it read without one, it writes one more row.
func waitCheckpoint(t *testing.T, e *engine.Engine, s *engine.Session, c jobCase, rng *rand.Rand) {
	t.Helper()
	before := onlyJob(t, e).Checkpoints.Count
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := onlyJob(t, e)
		if st.Checkpoints.Count != before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint in 30 s: %+v", st)
		}
		if st.Lag == 0 && slices.Equal(st.Committed, st.Positions) {
			mustExec(t, s, c.write(rng, 0))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkpointFiles lists job id's checkpoint files (not those being
// written) in the warehouse dir.
func checkpointFiles(t *testing.T, dir, id string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "_jobs", id+".checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func addStats(sum *stream.CheckpointStats, s stream.CheckpointStats) {
	sum.Count += s.Count
	sum.Bases += s.Bases
	sum.Bytes += s.Bytes
}
