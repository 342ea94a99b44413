package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

// grantTable is a grants file the test changes while the engine runs:
// user -> database -> privilege.
type grantTable struct {
	mu sync.Mutex
	g  map[string]map[string]engine.Privilege
}

func (g *grantTable) set(user, db string, p engine.Privilege) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.g[user] == nil {
		g.g[user] = map[string]engine.Privilege{}
	}
	g.g[user][db] = p
}

func (g *grantTable) of(user string) engine.Authorizer {
	return func(db string, p engine.Privilege) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.g[user][db] >= p {
			return nil
		}
		return fmt.Errorf("user %q has no %s privilege on database %q: %w", user, p, db, engine.ErrDenied)
	}
}

// waitFor polls cond until it holds, failing with what last saw after a
// minute.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s", what, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMaterializedOwnerGrants: a materialized table refreshes (FULL) and
// runs its job (CONTINUOUS) with its owner's grants. When the owner loses
// read on a source, refreshes fail with that reason in last_error and are
// retried with backoff, the count of failures growing while the grant
// stays revoked (the table keeps its last answer); once it is back, the
// next retry recovers and clears the error.
func TestMaterializedOwnerGrants(t *testing.T) {
	g := &grantTable{g: map[string]map[string]engine.Privilege{}}
	e := newEngineWith(t, engine.Config{OwnerGrants: g.of})
	root := e.NewSession()
	for _, q := range []string{
		"CREATE DATABASE sales", "CREATE DATABASE src",
		"CREATE TABLE src.t (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)",
		"INSERT INTO src.t VALUES (1, 10), (2, 20)",
	} {
		mustExec(t, root, q)
	}
	g.set("alice", "sales", engine.Admin)
	g.set("alice", "src", engine.Read)
	alice := e.NewSession()
	alice.SetUser("alice")
	alice.SetAuthorizer(g.of("alice"))
	mustExec(t, alice, "CREATE MATERIALIZED TABLE sales.full_m FRESHNESS = INTERVAL '1' SECOND REFRESH_MODE = FULL AS SELECT k, v FROM src.t")
	mustExec(t, alice, "CREATE MATERIALIZED TABLE sales.cont_m FRESHNESS = INTERVAL '2' SECOND AS SELECT k, sum(v) AS sv FROM src.t GROUP BY k")
	if d := describe(t, root, "sales.cont_m"); d["refresh_mode"] != "CONTINUOUS" {
		t.Fatalf("cont_m: %v", d)
	}
	answer := func(table string) string {
		return fmt.Sprint(rows(t, root, "SELECT * FROM sales."+table+" ORDER BY k"))
	}
	want := func() string { return fmt.Sprint(rows(t, root, "SELECT k, v FROM src.t ORDER BY k")) }
	caughtUp := func(table string) func() (bool, string) {
		return func() (bool, string) { got := answer(table); return got == want(), got }
	}

	mustExec(t, root, "INSERT INTO src.t VALUES (3, 30)")
	waitFor(t, "full_m refreshed as alice", caughtUp("full_m"))
	waitFor(t, "cont_m kept as alice", caughtUp("cont_m"))

	g.set("alice", "src", 0)
	// The job checks its owner's grants when it starts, as a server
	// restart (which reads the grants file again) would start it.
	mustExec(t, root, "ALTER MATERIALIZED TABLE sales.cont_m SUSPEND")
	mustExec(t, root, "ALTER MATERIALIZED TABLE sales.cont_m RESUME")
	mustExec(t, root, "INSERT INTO src.t VALUES (4, 40)")
	before := map[string]string{"full_m": answer("full_m"), "cont_m": answer("cont_m")}
	// seen[m][n] is when m's failure n in a row was recorded.
	seen := map[string]map[int]time.Time{"full_m": {}, "cont_m": {}}
	waitFor(t, "both report their owner's missing grant three times in a row", func() (bool, string) {
		done, saw := true, ""
		for _, m := range []string{"full_m", "cont_m"} {
			d := describe(t, root, "sales."+m)
			n, _ := strconv.Atoi(d["failures"])
			if at, err := time.Parse(time.RFC3339Nano, d["last_error_at"]); err == nil {
				seen[m][n] = at
			}
			done = done && n >= 3 && strings.Contains(d["last_error"], `owner "alice"`) && strings.Contains(d["last_error"], `no read privilege on database "src"`)
			saw += fmt.Sprint(m, d)
		}
		return done, saw
	})
	for _, m := range []string{"full_m", "cont_m"} {
		// Retries are spaced (the second after 2 s, capped by the freshness
		// of 1 or 2 s), not run back to back.
		pairs := 0
		for n, at := range seen[m] {
			next, ok := seen[m][n+1]
			if n < 2 || !ok {
				continue
			}
			if pairs++; next.Sub(at) < 900*time.Millisecond {
				t.Errorf("%s: failures %d and %d recorded at %v and %v: retries not spaced by the backoff", m, n, n+1, at, next)
			}
		}
		if pairs == 0 {
			t.Errorf("%s: no two failures in a row from the second on seen: %v", m, seen[m])
		}
		if got := answer(m); got != before[m] {
			t.Errorf("%s changed while its refreshes failed: %s, was %s", m, got, before[m])
		}
		r := rows(t, root, "SELECT failures, last_error FROM sys.materialized_tables WHERE table_name = '"+m+"'")
		if len(r) != 1 || r[0][0] == "0" || !strings.Contains(r[0][1], "permission denied") {
			t.Errorf("sys.materialized_tables of %s: %v", m, r)
		}
	}
	g.set("alice", "src", engine.Read)
	for _, m := range []string{"full_m", "cont_m"} {
		waitFor(t, m+" recovered", func() (bool, string) {
			d := describe(t, root, "sales."+m)
			got := answer(m)
			return got == want() && d["last_error"] == "" && d["failures"] == "0", got + " " + fmt.Sprint(d)
		})
	}
}

// TestMaterializedCommitInterval: a continuous job commits at most every
// half freshness, not at every source snapshot, and under a steady writer
// the table's data lag stays within its freshness; every commit is still
// the query's answer on the source snapshots it records.
func TestMaterializedCommitInterval(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	e := newEngine(t)
	ctx := context.Background()
	s := e.NewSession()
	keep := " WITH ('snapshot.num-retained.min' = '100000')"
	mustExec(t, s, "CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)"+keep)
	mustExec(t, s, "INSERT INTO s VALUES (1, 1, 10)")
	const fresh = 4 * time.Second
	query := "SELECT g, count(*) AS c, sum(v) AS sv FROM s %s GROUP BY g"
	mustExec(t, s, "CREATE MATERIALIZED TABLE m"+keep+" FRESHNESS = INTERVAL '4' SECOND AS "+fmt.Sprintf(query, ""))
	m, err := e.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "m"})
	if err != nil {
		t.Fatal(err)
	}
	src, err := e.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "s"})
	if err != nil {
		t.Fatal(err)
	}
	srcStart, _ := src.LatestSnapshotID(ctx)
	mStart, _ := m.LatestSnapshotID(ctx)

	start := time.Now()
	var maxLag time.Duration
	samples := 0
	for i := 0; time.Since(start) < 5*fresh/2; i++ {
		mustExec(t, s, writeS(rng, i))
		time.Sleep(50 * time.Millisecond)
		r := rows(t, s, "SELECT data_lag_ms FROM sys.materialized_tables WHERE table_name = 'm'")
		if len(r) != 1 || r[0][0] == "NULL" {
			continue
		}
		ms, err := strconv.ParseInt(r[0][0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		maxLag = max(maxLag, time.Duration(ms)*time.Millisecond)
		samples++
	}
	elapsed := time.Since(start)
	srcEnd, _ := src.LatestSnapshotID(ctx)
	mEnd, _ := m.LatestSnapshotID(ctx)
	commits := jobCommits(t, m, mStart, mEnd)
	t.Logf("%d source snapshots, %d job commits in %v; max data lag %v over %d samples", srcEnd-srcStart, commits, elapsed.Round(time.Millisecond), maxLag, samples)
	if limit := int(elapsed/(fresh/2)) + 2; commits > limit {
		t.Errorf("%d job commits in %v: more than one per half freshness (%d)", commits, elapsed, limit)
	}
	if commits == 0 || samples == 0 {
		t.Fatalf("no job commit (%d) or lag sample (%d) under the writer", commits, samples)
	}
	// A commit every half freshness keeps the lag within the freshness
	// when the job gets the CPU; half a freshness more is allowed for a
	// commit delayed on a starved machine (CI's load reaches 20 on 2
	// cores: 4.06 s once). A job committing once per freshness or less
	// often fails the count below instead.
	// A writer that managed fewer than 20 of its statements in the
	// window (CI check 15 under -race at load 16: 6 in 10.7 s) shows a
	// machine too starved for any job to keep a 4 s freshness: the lag is
	// reported, not judged.
	switch written := srcEnd - srcStart; {
	case written < 20:
		t.Logf("data lag %v not judged: the writer itself got %d statements done", maxLag, written)
	case maxLag > fresh+fresh/2:
		t.Errorf("data lag reached %v, above the freshness %v and half of it", maxLag, fresh)
	}
	if least := int(elapsed/fresh) - 1; commits < least {
		t.Errorf("%d job commits in %v: fewer than one per freshness (%d)", commits, elapsed, least)
	}
	// Let the job commit the writer's last changes, then check every
	// commit against the batch answer.
	waitFor(t, "m caught up", func() (bool, string) {
		got := fmt.Sprint(rows(t, s, "SELECT * FROM m ORDER BY g"))
		want := fmt.Sprint(rows(t, s, fmt.Sprintf(query, "")+" ORDER BY g"))
		return got == want, got + " want " + want
	})
	if n := checkMaterializedHistory(t, e, s, query, []string{"s"}); n == 0 {
		t.Fatal("no snapshot of m checked")
	}

	// SET FRESHNESS within CONTINUOUS restarts the job at the new
	// interval (30 s): in 6 s of writes it commits once (its restart's
	// exact answer), where the old interval would commit three times.
	mustExec(t, s, "ALTER MATERIALIZED TABLE m SET FRESHNESS = INTERVAL '60' SECOND")
	if d := describe(t, s, "m"); d["refresh_mode"] != "CONTINUOUS" {
		t.Fatalf("after SET FRESHNESS 60 s: %v", d)
	}
	mStart, _ = m.LatestSnapshotID(ctx)
	for i, begin := 0, time.Now(); time.Since(begin) < 6*time.Second; i++ {
		mustExec(t, s, writeS(rng, i))
		time.Sleep(50 * time.Millisecond)
	}
	mEnd, _ = m.LatestSnapshotID(ctx)
	if commits := jobCommits(t, m, mStart, mEnd); commits > 2 {
		t.Errorf("%d job commits in 6 s at a freshness of 60 s: the job kept its old interval", commits)
	}
}

// jobCommits counts the snapshots of m after from up to to that a
// continuous job committed.
func jobCommits(t *testing.T, m *tablestore.Table, from, to int64) int {
	t.Helper()
	n := 0
	for id := from + 1; id <= to; id++ {
		props, err := m.SnapshotProperties(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for k := range props {
			if strings.HasPrefix(k, "flightd.job.") {
				n++
			}
		}
	}
	return n
}

// snapshotFailFS fails the snapshot publications of the tables whose
// directory ends in one of its names while fail is set, as a full disk or
// an unreachable store would fail a commit.
type snapshotFailFS struct {
	tablestore.FS
	fail atomic.Bool
}

func (f *snapshotFailFS) RenameNoReplace(oldname, newname string) error {
	if f.fail.Load() && strings.Contains(filepath.ToSlash(newname), "/default.db/m/snapshot/snapshot-") {
		return fmt.Errorf("publish %s: injected failure", newname)
	}
	return f.FS.RenameNoReplace(oldname, newname)
}

// failuresSeen polls DESCRIBE of table until it reports at least n
// failures in a row, and returns when each count was first seen.
func failuresSeen(t *testing.T, s *engine.Session, table string, n int) map[int]time.Time {
	t.Helper()
	seen := map[int]time.Time{}
	waitFor(t, fmt.Sprintf("%s reports %d failures in a row", table, n), func() (bool, string) {
		d := describe(t, s, table)
		k, _ := strconv.Atoi(d["failures"])
		if _, ok := seen[k]; !ok {
			seen[k] = time.Now()
		}
		return k >= n, fmt.Sprint(d)
	})
	return seen
}

// waitJobHealthy waits until the continuous job of table reached its exact
// answer (it reports processed positions).
func waitJobHealthy(t *testing.T, e *engine.Engine, table string) {
	t.Helper()
	waitFor(t, "the job of "+table+" running", func() (bool, string) {
		for _, j := range e.Jobs(context.Background()) {
			if j.Sink == table && j.State == engine.JobRunning && j.Positions != nil {
				return true, ""
			}
		}
		return false, fmt.Sprint(e.Jobs(context.Background()))
	})
}

// TestMaterializedJobCommitBackoff: a continuous job whose every commit
// fails is retried with a growing delay: a run that reaches its answer but
// cannot commit it has not recovered, so its failures keep counting. Once
// commits work again the table catches up and the failures clear.
func TestMaterializedJobCommitBackoff(t *testing.T) {
	fsys := &snapshotFailFS{FS: tablestore.NewLocalFS()}
	e := newEngineWith(t, engine.Config{FS: fsys})
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE src (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "INSERT INTO src VALUES (1, 10)")
	mustExec(t, s, "CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '20' SECOND AS SELECT k, sum(v) AS sv FROM src GROUP BY k")
	waitJobHealthy(t, e, "default.m")
	fsys.fail.Store(true)
	mustExec(t, s, "INSERT INTO src VALUES (2, 20)")
	seen := failuresSeen(t, s, "m", 3)
	// The third failure follows the second after retryDelay(2) = 2 s.
	if d := seen[3].Sub(seen[2]); seen[2].IsZero() || d < 1500*time.Millisecond {
		t.Errorf("failures 2 and 3 seen %v apart: the retries do not back off", d)
	}
	fsys.fail.Store(false)
	waitFor(t, "m recovered", func() (bool, string) {
		d := describe(t, s, "m")
		got := fmt.Sprint(rows(t, s, "SELECT * FROM m ORDER BY k"))
		return got == "[[1 10] [2 20]]" && d["failures"] == "0" && d["last_error"] == "", got + fmt.Sprint(d)
	})
}

// TestMaterializedStopDuringBackoff: SUSPEND and DROP of a materialized
// table whose continuous job waits to retry (5 minutes, after many
// failures) end the job's goroutine at once: neither waits out the delay,
// and no job is left.
func TestMaterializedStopDuringBackoff(t *testing.T) {
	fsys := &snapshotFailFS{FS: tablestore.NewLocalFS()}
	e := newEngineWith(t, engine.Config{FS: fsys})
	s := e.NewSession()
	id := tablestore.Ident{Database: "default", Table: "m"}
	mustExec(t, s, "CREATE TABLE src (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "INSERT INTO src VALUES (1, 10)")
	mustExec(t, s, "CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '10' MINUTE REFRESH_MODE = CONTINUOUS AS SELECT k, sum(v) AS sv FROM src GROUP BY k")
	mustExec(t, s, "ALTER MATERIALIZED TABLE m SUSPEND")
	// RESUME starts a job whose first commit (of a changed answer) fails
	// after 20 failures in a row: its next retry waits the most.
	resumeFailing := func() {
		t.Helper()
		mustExec(t, s, fmt.Sprintf("INSERT INTO src VALUES (%d, 1)", time.Now().UnixNano()))
		if err := e.Store().PutMaterializedState(context.Background(), id, tablestore.MaterializedState{Failures: 20}); err != nil {
			t.Fatal(err)
		}
		fsys.fail.Store(true)
		mustExec(t, s, "ALTER MATERIALIZED TABLE m RESUME")
		failuresSeen(t, s, "m", 21)
		fsys.fail.Store(false)
	}
	noJob := func(stmt string) {
		t.Helper()
		done := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(done)
			mustExec(t, s, stmt)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s still waits after 20 s: it waits out the job's retry delay", stmt)
		}
		if jobs := e.Jobs(context.Background()); len(jobs) != 0 {
			t.Fatalf("after %s: jobs %v", stmt, jobs)
		}
		t.Logf("%s took %v", stmt, time.Since(start).Round(time.Millisecond))
	}
	resumeFailing()
	noJob("ALTER MATERIALIZED TABLE m SUSPEND")
	resumeFailing()
	noJob("DROP MATERIALIZED TABLE m")
}
