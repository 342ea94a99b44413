package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
)

// refreshRecord is one refresh commit of a materialized table: its
// snapshot and the source snapshots it says it read.
type refreshRecord struct {
	snap    int64
	sources string
}

func lastRefresh(t *testing.T, e *engine.Engine, id tablestore.Ident) refreshRecord {
	t.Helper()
	tbl, err := e.Store().Table(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	snap, _, props, err := tbl.LastProperties(context.Background(), "flightd.refresh")
	if err != nil {
		t.Fatal(err)
	}
	return refreshRecord{snap: snap, sources: props["flightd.refresh.sources"]}
}

// TestMaterializedRefreshUnderWriter runs the embedded scheduler at a
// freshness of one second while a writer changes the source, and checks
// that every refresh commit holds exactly the batch answer of the query
// over the source snapshot the commit names.
func TestMaterializedRefreshUnderWriter(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	e := newEngine(t)
	ctx := context.Background()
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE src (id BIGINT NOT NULL, k INT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('snapshot.num-retained.min' = '100000')")
	mustExec(t, s, "INSERT INTO src VALUES (0, 0, 0)")

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	var werr error
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(seed, 1))
		ws := e.NewSession()
		for i := 1; wctx.Err() == nil; i++ {
			q := fmt.Sprintf("INSERT INTO src VALUES (%d, %d, %d)", i, r.IntN(5), r.IntN(100))
			switch r.IntN(4) {
			case 0:
				q = fmt.Sprintf("DELETE FROM src WHERE id = %d", r.IntN(i))
			case 1:
				q = fmt.Sprintf("UPDATE src SET v = v + 1 WHERE k = %d", r.IntN(5))
			}
			if _, err := exec(ctx, ws, nil, q); err != nil {
				werr = fmt.Errorf("%s: %w", q, err)
				return
			}
		}
	}()

	mustExec(t, s, "CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '1' SECOND REFRESH_MODE = FULL AS SELECT k, sum(v) AS s, count(*) AS n FROM src GROUP BY k")
	id := tablestore.Ident{Database: "default", Table: "m"}
	var seen []refreshRecord
	deadline := time.Now().Add(12 * time.Second)
	for len(seen) < 4 && time.Now().Before(deadline) {
		if r := lastRefresh(t, e, id); len(seen) == 0 || seen[len(seen)-1].snap != r.snap {
			seen = append(seen, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	if len(seen) < 4 {
		t.Fatalf("saw %d refreshes in 12 s at a freshness of 1 s: %v", len(seen), seen)
	}
	sources := map[string]bool{}
	for _, r := range seen {
		src, ok := strings.CutPrefix(r.sources, "default.src=")
		if !ok {
			t.Fatalf("refresh %d: sources %q", r.snap, r.sources)
		}
		sources[src] = true
		got := rows(t, s, fmt.Sprintf("SELECT k, s, n FROM m /*+ OPTIONS('scan.snapshot-id'='%d') */ ORDER BY k", r.snap))
		want := rows(t, s, fmt.Sprintf("SELECT k, sum(v), count(*) FROM src /*+ OPTIONS('scan.snapshot-id'='%s') */ GROUP BY k ORDER BY k", src))
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("refresh snapshot %d (source snapshot %s):\n got %v\nwant %v", r.snap, src, got, want)
		}
	}
	if len(sources) < 2 {
		t.Fatalf("every refresh read the same source snapshot: %v", seen)
	}
	if _, err := exec(ctx, s, nil, "INSERT INTO m VALUES (9, 9, 9)"); err == nil || !strings.Contains(err.Error(), "materialized table") {
		t.Fatalf("user insert into a materialized table: %v", err)
	}
}

// describe returns DESCRIBE EXTENDED's name -> value rows.
func describe(t *testing.T, s *engine.Session, table string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range rows(t, s, "DESCRIBE EXTENDED "+table) {
		out[r[0]] = r[1]
	}
	return out
}

// TestMaterializedRestart: definitions, status, contents and the last
// error survive a restart, and the schedule follows them.
func TestMaterializedRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, mem := openEngine(t, dir)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE src (k INT, v BIGINT)")
	mustExec(t, s, "CREATE TABLE gone (k INT)")
	mustExec(t, s, "INSERT INTO src VALUES (1, 10), (2, 20), (1, 5)")
	mustExec(t, s, "CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '1' HOUR AS SELECT k, sum(v) AS s FROM src GROUP BY k")
	mustExec(t, s, "CREATE MATERIALIZED TABLE broken FRESHNESS = INTERVAL '1' HOUR AS SELECT k FROM gone")
	d := describe(t, s, "m")
	if d["status"] != "ACTIVATED" || d["next_run"] == "" || d["last_refresh"] == "" || d["last_error"] != "" {
		t.Fatalf("after CREATE: %v", d)
	}
	// A table that asks for CONTINUOUS by its freshness (or by default)
	// but whose query cannot be kept by key runs FULL and says why; one
	// that declares REFRESH_MODE = CONTINUOUS is refused.
	mustExec(t, s, "CREATE MATERIALIZED TABLE dflt AS SELECT k FROM src")
	if d := describe(t, s, "dflt"); d["freshness"] != "INTERVAL '3' MINUTE" || !strings.Contains(d["refresh_mode"], "FULL (its freshness asks for CONTINUOUS, but ") ||
		!strings.Contains(d["refresh_mode"], "needs a primary key") || d["job"] != "" {
		t.Fatalf("dflt: %v", d)
	}
	if _, err := exec(ctx, s, nil, "CREATE MATERIALIZED TABLE bad REFRESH_MODE = CONTINUOUS AS SELECT k FROM src"); err == nil || !strings.Contains(err.Error(), "REFRESH_MODE = CONTINUOUS") {
		t.Fatalf("continuous without a key: %v", err)
	}
	mustExec(t, s, "CREATE MATERIALIZED TABLE cont FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = CONTINUOUS AS SELECT k, count(*) AS n FROM src GROUP BY k")
	if d := describe(t, s, "cont"); d["refresh_mode"] != "CONTINUOUS" || !strings.HasPrefix(d["job"], "mt-") || d["next_run"] != "" {
		t.Fatalf("cont: %v", d)
	}
	if got := rows(t, s, "SHOW CREATE MATERIALIZED TABLE cont"); !strings.Contains(got[0][0], "REFRESH_MODE = CONTINUOUS") {
		t.Fatalf("SHOW CREATE: %v", got)
	}
	// A statement prepared before another ALTER changes only its own field.
	setFresh, err := s.Prepare(ctx, "ALTER MATERIALIZED TABLE m SET FRESHNESS = INTERVAL '2' HOUR", nil)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, s, "ALTER MATERIALIZED TABLE m SUSPEND")
	if _, err := setFresh.Exec(ctx, nil); err != nil {
		t.Fatal(err)
	}
	mustExec(t, s, "INSERT INTO src VALUES (3, 1)")
	mustExec(t, s, "ALTER MATERIALIZED TABLE m REFRESH")
	want := rows(t, s, "SELECT * FROM m ORDER BY k")
	mustExec(t, s, "DROP TABLE gone")
	if _, err := exec(ctx, s, nil, "ALTER MATERIALIZED TABLE broken REFRESH"); err == nil {
		t.Fatal("refresh over a dropped table succeeded")
	}
	closeEngine(t, e, mem)
	// Close returns once the loop closed its done channel; the goroutine
	// may still be returning from that frame for a moment (and an earlier
	// test's engine, closed, may still be unwinding its own on a loaded
	// machine: 2 s was too short at a load of 30). A leak stays forever.
	for deadline := time.Now().Add(15 * time.Second); schedulerGoroutines() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d scheduler goroutines after Close", schedulerGoroutines())
		}
	}

	e, mem = openEngine(t, dir)
	defer closeEngine(t, e, mem)
	s = e.NewSession()
	if got := rows(t, s, "SELECT * FROM m ORDER BY k"); !slices.EqualFunc(got, want, slices.Equal) || len(got) != 3 {
		t.Fatalf("after restart: %v, want %v", got, want)
	}
	d = describe(t, s, "m")
	if d["status"] != "SUSPENDED" || d["freshness"] != "INTERVAL '2' HOUR" || d["next_run"] != "" || d["last_refresh"] == "" ||
		d["source_snapshots"] != "default.src=2" || !strings.HasPrefix(d["refresh_mode"], "FULL") || d["query"] != "SELECT k, sum(v) AS s FROM src GROUP BY k" {
		t.Fatalf("suspended table after restart: %v", d)
	}
	d = describe(t, s, "broken")
	if !strings.Contains(d["last_error"], "not found") || d["next_run"] == "" {
		t.Fatalf("failed table after restart: %v", d)
	}
	mustExec(t, s, "ALTER MATERIALIZED TABLE m RESUME")
	// Resumed, it is due a freshness interval after its last refresh.
	d = describe(t, s, "m")
	last, err1 := time.Parse(time.RFC3339Nano, d["last_refresh"])
	next, err2 := time.Parse(time.RFC3339Nano, d["next_run"])
	if err1 != nil || err2 != nil || next.Sub(last) != 2*time.Hour {
		t.Fatalf("resumed: last %q next %q (%v %v)", d["last_refresh"], d["next_run"], err1, err2)
	}
}

// schedulerGoroutines counts goroutines running the embedded scheduler.
func schedulerGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "embeddedScheduler).loop")
}

// manual is a Scheduler that never runs anything: refreshes happen only
// when the test calls them, as an external scheduler would.
type manual struct{}

func (manual) Changed(tablestore.Ident)           {}
func (manual) NextRun(tablestore.Ident) time.Time { return time.Time{} }
func (manual) Close()                             {}

// openManual opens an engine over a new directory whose refreshes run only
// when the test calls them.
func openManual(t *testing.T, mem memory.Allocator) *engine.Engine {
	t.Helper()
	e, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: t.TempDir(), SpillDir: t.TempDir(),
		Scheduler: func(*engine.Engine) engine.Scheduler { return manual{} }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestMaterializedPeriodPartition: with a date formatter on the partition
// column, a scheduled refresh recomputes only the current period's
// partition.
func TestMaterializedPeriodPartition(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	ctx := context.Background()
	e := openManual(t, mem)
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE ev (ds STRING, v INT)")
	mustExec(t, s, "INSERT INTO ev VALUES ('2026-11-30', 1), ('2026-12-01', 2)")
	mustExec(t, s, "CREATE MATERIALIZED TABLE daily PARTITIONED BY (ds) WITH ('partition.fields.ds.date-formatter' = 'yyyy-MM-dd') FRESHNESS = INTERVAL '1' DAY AS SELECT ds, sum(v) AS total FROM ev GROUP BY ds")
	mustExec(t, s, "INSERT INTO ev VALUES ('2026-11-30', 10), ('2026-12-01', 20)")
	id := tablestore.Ident{Database: "default", Table: "daily"}
	if err := e.RefreshScheduled(ctx, id, time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	got := rows(t, s, "SELECT * FROM daily ORDER BY ds")
	want := [][]string{{"2026-11-30", "1"}, {"2026-12-01", "22"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("got %v, want %v (only today's partition recomputed)", got, want)
	}
	// A refresh cut short (here: cancelled before it commits) publishes
	// nothing and is not the table's failure.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	before := lastRefresh(t, e, id)
	if err := e.Refresh(cctx, id); err == nil {
		t.Fatal("a cancelled refresh succeeded")
	}
	if after := lastRefresh(t, e, id); after != before {
		t.Fatalf("a cancelled refresh committed: %v -> %v", before, after)
	}
	if d := describe(t, s, "daily"); d["last_error"] != "" {
		t.Fatalf("a cancelled refresh was recorded as an error: %v", d)
	}
	// Bulk ingest is refused like INSERT, in every mode.
	for _, mode := range []engine.IngestMode{engine.IngestAppend, engine.IngestReplace, engine.IngestCreate} {
		if _, err := ingest(ctx, s, "daily", mode, intStream(mem, 1)); err == nil || !strings.Contains(err.Error(), "materialized table") {
			t.Fatalf("ingest mode %v into a materialized table: %v", mode, err)
		}
	}
	if got := rows(t, s, "SELECT count(*) FROM daily"); got[0][0] != "2" {
		t.Fatalf("ingest changed the table: %v", got)
	}
	// A schedule that fires after SUSPEND refreshes nothing.
	mustExec(t, s, "ALTER MATERIALIZED TABLE daily SUSPEND")
	before = lastRefresh(t, e, id)
	if err := e.RefreshScheduled(ctx, id, time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if after := lastRefresh(t, e, id); after != before {
		t.Fatalf("a suspended table was refreshed: %v -> %v", before, after)
	}
	// ALTER ... REFRESH still works on a suspended table.
	mustExec(t, s, "ALTER MATERIALIZED TABLE daily REFRESH")
	got = rows(t, s, "SELECT * FROM daily ORDER BY ds")
	want = [][]string{{"2026-11-30", "11"}, {"2026-12-01", "22"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("full refresh: got %v, want %v", got, want)
	}
}

// TestMaterializedConcurrentRefreshes: refreshes of one table asked for at
// once (by hand and by a schedule) run one at a time, so a table never goes
// back to older source data: the source snapshots its refresh commits name
// never decrease, and each commit is the answer over the one it names.
func TestMaterializedConcurrentRefreshes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	ctx := context.Background()
	e := openManual(t, mem)
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE src (id BIGINT NOT NULL, k INT, PRIMARY KEY (id) NOT ENFORCED)")
	// Enough rows that refreshes take a while and overlap.
	digits := "(VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9))"
	mustExec(t, s, "INSERT INTO src SELECT -1 - (a.d + 10 * b.d + 100 * c.d + 1000 * e.d), a.d % 3 FROM "+
		digits+" AS a(d), "+digits+" AS b(d), "+digits+" AS c(d), "+digits+" AS e(d)")
	mustExec(t, s, "CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '1' SECOND REFRESH_MODE = FULL AS SELECT k, count(*) AS n FROM src GROUP BY k")
	id := tablestore.Ident{Database: "default", Table: "m"}

	wctx, stop := context.WithCancel(ctx)
	var writer sync.WaitGroup
	writer.Go(func() {
		ws := e.NewSession()
		for i := 0; wctx.Err() == nil; i++ {
			if _, err := exec(ctx, ws, nil, fmt.Sprintf("INSERT INTO src VALUES (%d, %d)", i, i%3)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var refreshers sync.WaitGroup
	for g := range 3 {
		refreshers.Go(func() {
			for range 5 {
				var err error
				if g == 0 {
					err = e.RefreshScheduled(ctx, id, time.Now())
				} else {
					err = e.Refresh(ctx, id)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	refreshers.Wait()
	stop()
	writer.Wait()

	tbl, err := e.Store().Table(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := tbl.LatestSnapshotID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prev, refreshes := int64(-1), 0
	for snap := int64(1); snap <= latest; snap++ {
		props, err := tbl.SnapshotProperties(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		src, ok := strings.CutPrefix(props["flightd.refresh.sources"], "default.src=")
		if !ok {
			continue // compaction
		}
		refreshes++
		n, _ := strconv.ParseInt(src, 10, 64)
		if n < prev {
			t.Fatalf("refresh snapshot %d read source snapshot %d, after one that read %d", snap, n, prev)
		}
		prev = n
		got := rows(t, s, fmt.Sprintf("SELECT k, n FROM m /*+ OPTIONS('scan.snapshot-id'='%d') */ ORDER BY k", snap))
		var want [][]string // source snapshot 0: the empty table
		if src != "0" {
			want = rows(t, s, fmt.Sprintf("SELECT k, count(*) FROM src /*+ OPTIONS('scan.snapshot-id'='%s') */ GROUP BY k ORDER BY k", src))
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("refresh snapshot %d (source %s): got %v, want %v", snap, src, got, want)
		}
	}
	if refreshes != 16 {
		t.Fatalf("%d refresh commits, want 16 (CREATE and 15 refreshes)", refreshes)
	}
}

// TestMaterializedAuthorization: creating, altering, refreshing and
// dropping a materialized table needs admin on its database, and its query
// is bound as its creator, so admin on one database does not let a
// materialized table copy another database it may not read.
func TestMaterializedAuthorization(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	root := e.NewSession()
	for _, q := range []string{
		"CREATE DATABASE sales", "CREATE TABLE sales.t (k BIGINT)", "INSERT INTO sales.t VALUES (1)",
		"CREATE TABLE default.secret (s STRING)", "INSERT INTO default.secret VALUES ('x')",
		"CREATE MATERIALIZED TABLE sales.m FRESHNESS = INTERVAL '1' HOUR AS SELECT k FROM sales.t",
	} {
		mustExec(t, root, q)
	}
	session := func(p engine.Privilege) *engine.Session {
		s := e.NewSession()
		s.SetAuthorizer(func(db string, want engine.Privilege) error {
			if db == "sales" && want <= p {
				return nil
			}
			return fmt.Errorf("%s on %s: %w", want, db, engine.ErrDenied)
		})
		return s
	}
	denied := func(s *engine.Session, who, q string) {
		t.Helper()
		if _, err := exec(ctx, s, nil, q); !errors.Is(err, engine.ErrDenied) {
			t.Errorf("%s: %s: want ErrDenied, got %v", who, q, err)
		}
	}
	writer, admin := session(engine.Write), session(engine.Admin)
	for _, q := range []string{
		"CREATE MATERIALIZED TABLE sales.m2 FRESHNESS = INTERVAL '1' HOUR AS SELECT k FROM sales.t",
		"ALTER MATERIALIZED TABLE sales.m REFRESH",
		"ALTER MATERIALIZED TABLE sales.m SUSPEND",
		"ALTER MATERIALIZED TABLE sales.m AS SELECT k + 1 AS k FROM sales.t",
		"DROP MATERIALIZED TABLE sales.m",
	} {
		denied(writer, "writer", q)
	}
	for _, q := range []string{
		"CREATE MATERIALIZED TABLE sales.leak FRESHNESS = INTERVAL '1' HOUR AS SELECT s FROM default.secret",
		"ALTER MATERIALIZED TABLE sales.m AS SELECT s FROM default.secret",
	} {
		denied(admin, "admin of sales", q)
	}
	if got := rows(t, root, "SHOW MATERIALIZED TABLES FROM sales"); len(got) != 1 {
		t.Fatalf("materialized tables of sales after the refused statements: %v", got)
	}
	if got := rows(t, root, "SELECT k FROM sales.m"); !slices.EqualFunc(got, [][]string{{"1"}}, slices.Equal) {
		t.Fatalf("sales.m after the refused statements: %v", got)
	}
	// information_schema lists what the session may read, and no more.
	q := "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema <> 'information_schema' ORDER BY 2"
	if got, want := rows(t, admin, q), [][]string{{"sales", "m"}, {"sales", "t"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("admin of sales: %s: got %v, want %v", q, got, want)
	}
	// So do the system tables (sys.tables failed for a user who could not
	// read every database).
	for q, want := range map[string][][]string{
		"SELECT database_name, table_name FROM sys.tables ORDER BY 2":           {{"sales", "m"}, {"sales", "t"}},
		"SELECT database_name, table_name, status FROM sys.materialized_tables": {{"sales", "m", "ACTIVATED"}},
	} {
		if got := rows(t, admin, q); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("admin of sales: %s: got %v, want %v", q, got, want)
		}
	}
	mustExec(t, admin, "ALTER MATERIALIZED TABLE sales.m REFRESH")
	mustExec(t, admin, "DROP MATERIALIZED TABLE sales.m")
}

// TestMaterializedContinuous keeps materialized tables (GROUP BY, join)
// in CONTINUOUS mode under a random writer, switches them to FULL and back
// by their freshness, suspends and resumes them and restarts the engine;
// every snapshot of the table (a job commit or a full refresh) must equal
// the batch query on the source snapshots it records, and those never go
// back.
func TestMaterializedContinuous(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	goroutines := runtime.NumGoroutine()
	defer checkGoroutines(t, goroutines)
	keep := " WITH ('snapshot.num-retained.min' = '100000')"
	for _, c := range []struct {
		name, query string // query has one %s per source, for a snapshot hint
		sources     []string
	}{
		{"groupby", "SELECT g, count(*) AS c, sum(v) AS sv FROM s %s GROUP BY g", []string{"s"}},
		{"join", "SELECT s.k, s.v, d.name FROM s %s JOIN d %s ON s.g = d.g", []string{"s", "d"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			dir := t.TempDir()
			e, mem := openEngine(t, dir)
			s := e.NewSession()
			mustExec(t, s, "CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)"+keep)
			mustExec(t, s, "CREATE TABLE d (g BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (g) NOT ENFORCED)"+keep)
			mustExec(t, s, "INSERT INTO d VALUES (0, 'zero'), (1, 'one'), (2, 'two')")
			mustExec(t, s, "INSERT INTO s VALUES (1, 1, 10), (2, 1, 20), (3, 2, 5)")
			noHints := make([]any, len(c.sources))
			for i := range noHints {
				noHints[i] = ""
			}
			mustExec(t, s, "CREATE MATERIALIZED TABLE m"+keep+" FRESHNESS = INTERVAL '1' SECOND AS "+fmt.Sprintf(c.query, noHints...))
			if d := describe(t, s, "m"); d["refresh_mode"] != "CONTINUOUS" || !strings.HasPrefix(d["job"], "mt-") {
				t.Fatalf("after CREATE: %v", d)
			}
			write := func(n int) {
				for i := range n {
					q := writeS(rng, i)
					if i%3 == 0 && len(c.sources) == 2 {
						q = fmt.Sprintf("INSERT INTO d VALUES (%d, 'n%d')", rng.IntN(6), rng.IntN(100))
						if rng.IntN(4) == 0 {
							q = fmt.Sprintf("DELETE FROM d WHERE g = %d", rng.IntN(6))
						}
					}
					mustExec(t, s, q)
				}
			}
			write(30)
			mustExec(t, s, "ALTER MATERIALIZED TABLE m SET FRESHNESS = INTERVAL '1' HOUR")
			if d := describe(t, s, "m"); d["refresh_mode"] != "FULL" || d["job"] != "" {
				t.Fatalf("after SET FRESHNESS 1 HOUR: %v", d)
			}
			write(20)
			mustExec(t, s, "ALTER MATERIALIZED TABLE m SET FRESHNESS = INTERVAL '2' SECOND")
			write(20)
			closeEngine(t, e, mem)
			e, mem = openEngine(t, dir)
			s = e.NewSession()
			write(20)
			mustExec(t, s, "ALTER MATERIALIZED TABLE m SUSPEND")
			if d := describe(t, s, "m"); d["job"] != "" {
				t.Fatalf("suspended table has a job: %v", d)
			}
			write(10)
			mustExec(t, s, "ALTER MATERIALIZED TABLE m RESUME")
			write(20)
			mustExec(t, s, "ALTER MATERIALIZED TABLE m REFRESH")
			write(10)

			// Wait for the job to catch up with the sources' latest snapshots.
			var latest []int64
			for _, src := range c.sources {
				tbl, err := e.Store().Table(context.Background(), tablestore.Ident{Database: "default", Table: src})
				if err != nil {
					t.Fatal(err)
				}
				n, err := tbl.LatestSnapshotID(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				latest = append(latest, n)
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				d := describe(t, s, "m")
				caught := false
				for _, j := range e.Jobs(context.Background()) {
					if j.ID != d["job"] || len(j.Positions) != len(c.sources) {
						continue
					}
					caught = true
					for i, src := range j.Sources {
						caught = caught && j.Positions[i] >= latest[slices.Index(c.sources, strings.TrimPrefix(src, "default."))]
					}
				}
				if caught {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("job did not catch up with %v: %v", latest, d)
				}
				time.Sleep(20 * time.Millisecond)
			}
			checks := checkMaterializedHistory(t, e, s, c.query, c.sources)
			t.Logf("%d snapshots of m checked", checks)
			closeEngine(t, e, mem)
		})
	}
}

// checkMaterializedHistory compares every snapshot of materialized table m
// with its query (one %s per source for a snapshot hint) on the source
// snapshots the snapshot records, and checks that those never decrease.
func checkMaterializedHistory(t *testing.T, e *engine.Engine, s *engine.Session, query string, sources []string) int {
	t.Helper()
	ctx := context.Background()
	m, err := e.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "m"})
	if err != nil {
		t.Fatal(err)
	}
	last, err := m.LatestSnapshotID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prev := make([]int64, len(sources))
	checks := 0
	for snap := int64(1); snap <= last; snap++ {
		props, err := m.SnapshotProperties(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		pos := make([]int64, len(sources))
		if v, ok := props["flightd.refresh.sources"]; ok {
			for _, kv := range strings.Split(v, ",") {
				name, n, _ := strings.Cut(kv, "=")
				i := slices.Index(sources, strings.TrimPrefix(name, "default."))
				if pos[i], err = strconv.ParseInt(n, 10, 64); err != nil {
					t.Fatal(err)
				}
			}
		} else if len(props) == 0 {
			copy(pos, prev) // a compaction: the same rows
		} else {
			var cp struct {
				Sources   []string
				Positions []int64
			}
			for k, v := range props {
				if strings.HasPrefix(k, "flightd.job.") {
					if err := json.Unmarshal([]byte(v), &cp); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(cp.Positions) != len(sources) || len(cp.Sources) != len(sources) {
				t.Fatalf("snapshot %d of m is neither a refresh nor a job commit: %v", snap, props)
			}
			for i, name := range cp.Sources {
				pos[slices.Index(sources, strings.TrimPrefix(name, "default."))] = cp.Positions[i]
			}
		}
		for i := range pos {
			if pos[i] < prev[i] {
				t.Fatalf("snapshot %d of m reflects %s at %d, an earlier one at %d", snap, sources[i], pos[i], prev[i])
			}
		}
		prev = pos
		hints := make([]any, len(pos))
		for i, p := range pos {
			hints[i] = fmt.Sprintf("/*+ OPTIONS('scan.snapshot-id'='%d') */", p)
		}
		got := rowSet(t, s, fmt.Sprintf("SELECT * FROM m /*+ OPTIONS('scan.snapshot-id'='%d') */", snap))
		if want := rowSet(t, s, fmt.Sprintf(query, hints...)); !slices.Equal(got, want) {
			t.Fatalf("snapshot %d of m at source snapshots %v:\n%v\nwant\n%v", snap, pos, got, want)
		}
		checks++
	}
	return checks
}

// TestFreshnessThreshold: Config.Plan.FreshnessThreshold (flightd's
// -freshness-threshold) moves the line between CONTINUOUS and FULL.
func TestFreshnessThreshold(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: t.TempDir(), SpillDir: t.TempDir(),
		Plan: plan.Options{FreshnessThreshold: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE src (g BIGINT)")
	for secs, want := range map[int]string{5: "CONTINUOUS", 30: "FULL"} {
		name := fmt.Sprintf("m%d", secs)
		mustExec(t, s, fmt.Sprintf("CREATE MATERIALIZED TABLE %s FRESHNESS = INTERVAL '%d' SECOND AS SELECT g, count(*) AS n FROM src GROUP BY g", name, secs))
		if d := describe(t, s, name); d["refresh_mode"] != want {
			t.Errorf("FRESHNESS %d s under a 10 s threshold: %q, want %s", secs, d["refresh_mode"], want)
		}
	}
	mustExec(t, s, "ALTER MATERIALIZED TABLE m5 SET FRESHNESS = INTERVAL '20' SECOND")
	if d := describe(t, s, "m5"); d["refresh_mode"] != "FULL" {
		t.Errorf("SET FRESHNESS 20 s: %q, want FULL", d["refresh_mode"])
	}
}

// TestDatabaseFreshnessThreshold: a database's threshold overrides the
// server's (10 s here) for its tables only, and survives a restart.
func TestDatabaseFreshnessThreshold(t *testing.T) {
	dir := t.TempDir()
	open := func() (*engine.Engine, *memory.CheckedAllocator) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		e, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: dir, SpillDir: t.TempDir(),
			Plan: plan.Options{FreshnessThreshold: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		return e, mem
	}
	e, mem := open()
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE default.src (g BIGINT)")
	mustExec(t, s, "CREATE DATABASE slow WITH ('materialized-table.refresh-mode.freshness-threshold' = '1 s')")
	closeEngine(t, e, mem)
	e, mem = open()
	defer func() { closeEngine(t, e, mem) }()
	s = e.NewSession()
	for db, want := range map[string]string{"default": "CONTINUOUS", "slow": "FULL"} {
		mustExec(t, s, "CREATE MATERIALIZED TABLE "+db+".m FRESHNESS = INTERVAL '5' SECOND AS SELECT g, count(*) AS n FROM default.src GROUP BY g")
		if d := describe(t, s, db+".m"); d["refresh_mode"] != want {
			t.Errorf("FRESHNESS 5 s in %s after a restart: %q, want %s", db, d["refresh_mode"], want)
		}
	}
	mustExec(t, s, "ALTER DATABASE slow SET ('materialized-table.refresh-mode.freshness-threshold' = '1 min')")
	mustExec(t, s, "ALTER MATERIALIZED TABLE slow.m SET FRESHNESS = INTERVAL '30' SECOND")
	if d := describe(t, s, "slow.m"); d["refresh_mode"] != "CONTINUOUS" {
		t.Errorf("FRESHNESS 30 s under a 1 min database threshold: %q, want CONTINUOUS", d["refresh_mode"])
	}
}

// TestMaterializedHoldsSources: the job of a CONTINUOUS materialized table
// holds its source's snapshots from its checkpoint (a consumer of the
// source, as an INSERT job does, TestJobHoldsSourceSnapshots), keeps the
// hold while suspended (RESUME restores the checkpoint), and ends it when
// the table gets a new query, refreshes in FULL mode, or is dropped;
// otherwise the source would keep every snapshot from then on.
func TestMaterializedHoldsSources(t *testing.T) {
	e, mem := openEngine(t, t.TempDir())
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE src (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "INSERT INTO src VALUES (1, 10), (2, 20)")
	consumers := func() []string { return rowSet(t, s, `SELECT consumer_id FROM src$consumers`) }
	// held waits until src's one consumer is the job of m's current query.
	held := func(when string) string {
		t.Helper()
		job := describe(t, s, "m")["job"]
		want := []string{"flightd-job-" + job}
		deadline := time.Now().Add(30 * time.Second)
		for !slices.Equal(consumers(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: consumers of src %v, want %v", when, consumers(), want)
			}
			mustExec(t, s, "INSERT INTO src VALUES (3, 30)") // a change for the job to commit
			time.Sleep(20 * time.Millisecond)
		}
		return want[0]
	}
	mustExec(t, s, "CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '1' SECOND AS SELECT k, sum(v) AS sv FROM src GROUP BY k")
	first := held("after CREATE")

	mustExec(t, s, "ALTER MATERIALIZED TABLE m SUSPEND")
	if got := consumers(); !slices.Equal(got, []string{first}) {
		t.Fatalf("suspended: consumers of src %v, want the job's %s kept", got, first)
	}
	mustExec(t, s, "ALTER MATERIALIZED TABLE m RESUME")
	if again := held("after RESUME"); again != first {
		t.Fatalf("after RESUME the hold is %s, want the same job's %s", again, first)
	}

	mustExec(t, s, "ALTER MATERIALIZED TABLE m AS SELECT k, count(*) AS sv FROM src GROUP BY k")
	if second := held("after AS"); second == first {
		t.Fatalf("after a new query the hold is still the old job's %s", first)
	}

	mustExec(t, s, "ALTER MATERIALIZED TABLE m SET FRESHNESS = INTERVAL '1' HOUR") // FULL
	if got := consumers(); len(got) != 0 {
		t.Fatalf("in FULL mode: consumers of src %v, want none", got)
	}
	mustExec(t, s, "ALTER MATERIALIZED TABLE m SET FRESHNESS = INTERVAL '1' SECOND")
	held("back in CONTINUOUS mode")
	mustExec(t, s, "DROP MATERIALIZED TABLE m")
	if got := consumers(); len(got) != 0 {
		t.Fatalf("after DROP: consumers of src %v, want none", got)
	}
}

// TestMaterializedSourceReplacedWhileSuspended drops a continuous
// materialized table's source while the table is suspended and creates it
// again under its name with other rows, as many snapshots as the job had
// read or fewer: on RESUME the job's checkpoint positions belong to the
// old table, so the job must start over from the new one (its state and
// positions restored would mix the two tables' rows).
func TestMaterializedSourceReplacedWhileSuspended(t *testing.T) {
	for _, snapshots := range []int{1, 12} {
		t.Run(fmt.Sprintf("%d snapshots", snapshots), func(t *testing.T) {
			e, mem := openEngine(t, t.TempDir())
			defer closeEngine(t, e, mem)
			s := e.NewSession()
			const src = "CREATE TABLE src (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)"
			mustExec(t, s, src)
			for k := range 4 {
				mustExec(t, s, fmt.Sprintf("INSERT INTO src VALUES (%d, %d), (%d, 1)", k, 10*k, 100+k))
			}
			mustExec(t, s, "CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '1' SECOND AS SELECT k, sum(v) AS sv FROM src GROUP BY k")
			answer := func() []string { return rowSet(t, s, "SELECT k, sum(v) FROM src GROUP BY k") }
			waitRows(t, s, "SELECT k, sv FROM m", answer()...)
			job := describe(t, s, "m")["job"]
			deadline := time.Now().Add(30 * time.Second)
			for !slices.Equal(rowSet(t, s, "SELECT consumer_id FROM src$consumers"), []string{"flightd-job-" + job}) {
				if time.Now().After(deadline) {
					t.Fatal("the job did not checkpoint")
				}
				time.Sleep(20 * time.Millisecond)
			}
			mustExec(t, s, "ALTER MATERIALIZED TABLE m SUSPEND")

			mustExec(t, s, "DROP TABLE src")
			mustExec(t, s, src)
			for i := range snapshots {
				mustExec(t, s, fmt.Sprintf("INSERT INTO src VALUES (%d, %d)", 1000+i, i))
			}
			mustExec(t, s, "ALTER MATERIALIZED TABLE m RESUME")
			waitRows(t, s, "SELECT k, sv FROM m", answer()...)
			mustExec(t, s, "INSERT INTO src VALUES (1, 5), (2000, 7)")
			waitRows(t, s, "SELECT k, sv FROM m", answer()...)
		})
	}
}
