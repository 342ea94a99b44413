package engine_test

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var sysSeed = flag.Uint64("systables-seed", 0, "seed of TestDataSystemTablesRandom (0: the clock)")

// TestDataSystemTablesRandom checks t$audit_log and t$ro against a model
// of a key table under random upserts, updates, deletes and compactions:
// the audit log's rows that are not retractions are the table, its
// retractions are keys the model deleted (their last values), and t$ro
// is the table as of the last full compaction.
func TestDataSystemTablesRandom(t *testing.T) {
	seed := *sysSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-systables-seed to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	e, mem := openEngine(t, t.TempDir())
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, fmt.Sprintf("CREATE TABLE r (k INT NOT NULL, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '%d', 'write-only' = 'true')", 1+rng.IntN(3)))
	live := map[int]int{}    // the table
	deleted := map[int]int{} // keys deleted since the last compaction, with their last value
	var compacted map[int]int
	render := func(m map[int]int, kind string) []string {
		var out []string
		for k, v := range m {
			r := fmt.Sprintf("%d|%d", k, v)
			if kind != "" {
				r = kind + "|" + r
			}
			out = append(out, r)
		}
		slices.Sort(out)
		return out
	}
	for step := range 40 {
		k := rng.IntN(12)
		switch op := rng.IntN(10); {
		case op < 5:
			v := rng.IntN(1000)
			mustExec(t, s, fmt.Sprintf("INSERT INTO r VALUES (%d, %d)", k, v))
			live[k] = v
			delete(deleted, k)
		case op < 7:
			mustExec(t, s, fmt.Sprintf("UPDATE r SET v = v + 1 WHERE k = %d", k))
			if v, ok := live[k]; ok {
				live[k] = v + 1
			}
		case op < 9:
			mustExec(t, s, fmt.Sprintf("DELETE FROM r WHERE k = %d", k))
			if v, ok := live[k]; ok {
				deleted[k] = v
				delete(live, k)
			}
		default:
			mustExec(t, s, "CALL sys.compact('r')")
			compacted = maps.Clone(live)
			clear(deleted)
		}
		got := rowSet(t, s, "SELECT k, v FROM r$audit_log WHERE rowkind IN ('+I', '+U')")
		if want := render(live, ""); !slices.Equal(got, want) {
			t.Fatalf("step %d: audit log's upserts %v, table %v", step, got, want)
		}
		got = rowSet(t, s, "SELECT rowkind, k, v FROM r$audit_log WHERE rowkind IN ('-U', '-D')")
		if want := render(deleted, "-D"); !slices.Equal(got, want) {
			t.Fatalf("step %d: audit log's retractions %v, want %v", step, got, want)
		}
		got = rowSet(t, s, "SELECT * FROM r$ro")
		if want := render(compacted, ""); !slices.Equal(got, want) {
			t.Fatalf("step %d: t$ro %v, want %v (as of the last compaction)", step, got, want)
		}
	}
}
