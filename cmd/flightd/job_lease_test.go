package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestJobRunsOnOneNode runs two flightd processes on one warehouse (a
// local directory, then a bucket) with a continuous GROUP BY job while a
// writer changes its source through the node that does not run it. The
// node running the job is killed with SIGKILL and started again, three
// times; each time the job must move to a live node and its sink equal the
// batch answer. Each process commits as its own commit user, so the
// commit users of the sink's snapshots, in order, show who ran the job:
// one contiguous run per runner (two runners at once would interleave),
// and a new runner at every kill.
func TestJobRunsOnOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	t.Run("local", func(t *testing.T) { testJobRunsOnOneNode(t, bin, t.TempDir(), nil) })
	t.Run("s3", func(t *testing.T) {
		data, flags := s3Warehouse(t)
		testJobRunsOnOneNode(t, bin, data, flags)
	})
}

func testJobRunsOnOneNode(t *testing.T, bin, data string, flags []string) {
	const kills = 3
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	flags = append(slices.Clone(flags), "-job-lease", "2s")
	nodes := []*process{start(t, bin, data, flags...), start(t, bin, data, flags...)}
	cnxn, closeConn := nodes[0].connect(t)
	for _, q := range []string{
		`CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
		`CREATE TABLE d (g BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (g) NOT ENFORCED)`,
		`CREATE TABLE agg (g BIGINT NOT NULL, c BIGINT, sv BIGINT, PRIMARY KEY (g) NOT ENFORCED)`,
		`CREATE TABLE marker (n BIGINT)`,
		`INSERT INTO s VALUES (1, 1, 10), (2, 2, 20)`,
		`INSERT INTO agg SELECT g, count(*), sum(v) FROM s /*+ OPTIONS('scan.mode'='latest-full') */ GROUP BY g`,
	} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	closeConn()
	// user maps each live process's commit user to its node, by a commit;
	// proc maps every process's to the process.
	user := map[string]int{}
	proc := map[string]*process{}
	identify := func(n int) {
		t.Helper()
		c, done := nodes[n].connect(t)
		defer done()
		if err := execSQL(c, fmt.Sprintf(`INSERT INTO marker VALUES (%d)`, n)); err != nil {
			t.Fatal(err)
		}
		users := snapshotUsers(t, c, "marker")
		u := users[len(users)-1]
		user[u], proc[u] = n, nodes[n]
	}
	identify(0)
	identify(1)
	// converge writes through node w while the job runs, until the sink
	// equals the batch answer; it returns the node whose commit is last.
	converge := func(w int) int {
		t.Helper()
		c, done := nodes[w].connect(t)
		defer done()
		for range 5 + rng.IntN(10) {
			if err := execSQL(c, randomWrite(rng)); err != nil {
				t.Fatal(err)
			}
		}
		want := rowsOf(t, c, `SELECT g, count(*), sum(v) FROM s GROUP BY g`, "|")
		deadline := time.Now().Add(time.Minute)
		for {
			if got := rowsOf(t, c, `SELECT g, c, sv FROM agg`, "|"); slices.Equal(got, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("seed %d: sink does not reach the batch answer %v: %v\njobs: %v", seed, want,
					rowsOf(t, c, `SELECT g, c, sv FROM agg`, "|"), rowsOf(t, c, `SHOW JOBS`, "|"))
			}
			time.Sleep(50 * time.Millisecond)
		}
		users := snapshotUsers(t, c, "agg")
		owner, ok := user[users[len(users)-1]]
		if !ok {
			t.Fatalf("the last commit to the sink is by %s, no live node", users[len(users)-1])
		}
		// Both nodes name the same runner in SHOW JOBS, and the same last
		// sink commit (the other node reads it from the sink), once the
		// runner has committed the answer. Their positions may differ: the
		// runner's go on past source snapshots that changed nothing in
		// the sink, the other node's are the commit's.
		for try := 0; ; try++ {
			var shown []map[string]string
			for _, n := range nodes {
				nc, ndone := n.connect(t)
				jobs := jobsShown(t, nc)
				ndone()
				if len(jobs) != 1 {
					t.Fatalf("SHOW JOBS: %v", jobs)
				}
				shown = append(shown, jobs[0])
			}
			same := true
			for _, col := range []string{"node", "sink_snapshot"} {
				same = same && shown[0][col] != "" && shown[0][col] == shown[1][col]
			}
			for _, sh := range shown {
				same = same && sh["source_positions"] != "" && !strings.Contains(sh["source_positions"], "?")
			}
			if same {
				break
			}
			if try == 100 {
				t.Fatalf("SHOW JOBS on the two nodes:\n%v\n%v", shown[0], shown[1])
			}
			time.Sleep(50 * time.Millisecond)
		}
		return owner
	}
	owner := converge(1)
	for range kills {
		survivor := 1 - owner
		// Write through the survivor while the owner dies.
		var wg sync.WaitGroup
		wg.Go(func() {
			c, done := nodes[survivor].connect(t)
			defer done()
			for range 20 {
				if err := execSQL(c, randomWrite(rand.New(rand.NewPCG(seed, uint64(survivor))))); err != nil {
					t.Error(err)
					return
				}
			}
		})
		nodes[owner].kill(t)
		_ = nodes[owner].cmd.Wait()
		wg.Wait()
		for u, n := range user {
			if n == owner {
				delete(user, u)
			}
		}
		nodes[owner] = start(t, bin, data, flags...)
		identify(owner)
		owner = converge(survivor)
	}
	c, done := nodes[0].connect(t)
	defer done()
	users := snapshotUsers(t, c, "agg")
	// A process runs the job again after another only if it lost the
	// job's lease in between (a loaded machine may delay a renewal past
	// its deadline): its log says so. Interleaved commits of processes
	// that never lost it are two runners at once.
	runs, losses := 0, 0
	stretches := map[string]int{}
	for i, u := range users {
		if i > 0 && u == users[i-1] {
			continue
		}
		p, ok := proc[u]
		if !ok {
			t.Fatalf("seed %d: commit user %s is no process of the test: %v", seed, u, users)
		}
		if stretches[u]++; stretches[u] > 1+int(p.leasesLost.Load()) {
			t.Fatalf("seed %d: commit user %s ran the job again after another without losing its lease: two runners at once: %v", seed, u, users)
		}
		runs++
	}
	for u := range stretches {
		losses += int(proc[u].leasesLost.Load())
	}
	if runs < kills+1 || runs > kills+1+losses {
		t.Fatalf("seed %d: %d runners over %d kills and %d lost leases: %v", seed, runs, kills, losses, users)
	}
	t.Logf("%d sink commits by %d runners, one at a time (%d leases lost)", len(users), runs, losses)
	for _, p := range nodes {
		if err := p.terminate(t); err != nil {
			t.Fatalf("flightd did not exit cleanly: %v", err)
		}
	}
}

// snapshotUsers lists the commit user of every snapshot of table, in order.
func snapshotUsers(t *testing.T, c adbc.Connection, table string) []string {
	t.Helper()
	var out []string
	q := `SELECT commit_user FROM ` + table + `$snapshots ORDER BY snapshot_id`
	if err := query(c, q, func(b arrow.RecordBatch) {
		col := b.Column(0).(*array.String)
		for i := range col.Len() {
			out = append(out, col.Value(i))
		}
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}
