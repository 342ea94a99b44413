package engine_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

// checkpointRows is the size of the base table of the checkpoint tests:
// a restart that reads its sources in full reads at least this many rows.
const checkpointRows = 4000

// checkpointWrite upserts 1-4 rows of s or deletes one: a source snapshot
// of at most 4 changed rows.
func checkpointWrite(rng *rand.Rand, i int) string {
	if rng.IntN(5) == 0 {
		return fmt.Sprintf(`DELETE FROM s WHERE k = %d`, rng.IntN(checkpointRows))
	}
	var vals []string
	for range 1 + rng.IntN(4) {
		vals = append(vals, fmt.Sprintf("(%d, %d, %d)", rng.IntN(checkpointRows+100), rng.IntN(6), rng.IntN(1000)))
	}
	return `INSERT INTO s VALUES ` + strings.Join(vals, ", ")
}

// checkpointCases are jobs whose every operator checkpoints
// (normalization, aggregation, join, filter and projection, window
// aggregation, top-N and deduplication, and the event-time ones of
// eventCheckpointCases), over a big source.
func checkpointCases() []jobCase {
	var out []jobCase
	for _, c := range jobCases {
		switch c.name {
		case "groupby", "star":
			c.write = checkpointWrite
		case "join":
			c.write = func(rng *rand.Rand, i int) string {
				if i%4 == 0 {
					return fmt.Sprintf(`INSERT INTO d VALUES (%d, 'n%d')`, rng.IntN(6), rng.IntN(100))
				}
				return checkpointWrite(rng, i)
			}
		case "tumble", "hop":
		default:
			continue
		}
		out = append(out, c)
	}
	rank := `SELECT g, rn, k, v FROM (SELECT g, k, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, k) AS rn FROM s %s) x WHERE rn <= %d`
	for _, n := range []int{1, 3} {
		out = append(out, jobCase{
			name: fmt.Sprintf("top%d", n),
			ddl: []string{
				`CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
				`CREATE TABLE top (g BIGINT NOT NULL, rn BIGINT NOT NULL, k BIGINT, v BIGINT, PRIMARY KEY (g, rn) NOT ENFORCED)`,
			},
			job:     `INSERT INTO top ` + fmt.Sprintf(rank, `/*+ OPTIONS('scan.mode'='latest-full') */`, n),
			batch:   fmt.Sprintf(rank, "%s", n),
			sink:    `SELECT g, rn, k, v FROM top %s`,
			sources: []string{"s"},
			write:   checkpointWrite,
		})
	}
	// Over an append table the top-N keeps its top 3 rows per partition
	// only (insert-only input), so its checkpoints hold those, and it fits
	// the tiny budget.
	out = append(out, jobCase{
		name: "top3_append",
		ddl: []string{
			`CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT)`,
			`CREATE TABLE top (g BIGINT NOT NULL, rn BIGINT NOT NULL, k BIGINT, v BIGINT, PRIMARY KEY (g, rn) NOT ENFORCED)`,
		},
		job:     `INSERT INTO top ` + fmt.Sprintf(rank, `/*+ OPTIONS('scan.mode'='latest-full') */`, 3),
		batch:   fmt.Sprintf(rank, "%s", 3),
		sink:    `SELECT g, rn, k, v FROM top %s`,
		sources: []string{"s"},
		write: func(rng *rand.Rand, i int) string {
			for {
				if q := checkpointWrite(rng, i); strings.HasPrefix(q, "INSERT") {
					return q
				}
			}
		},
	})
	return append(out, eventCheckpointCases()...)
}

// openCheckpointEngine opens dir with jobs checkpointing every every and
// queryMemory for their state (0: the default).
func openCheckpointEngine(t testing.TB, dir string, every time.Duration, queryMemory int64) (*engine.Engine, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: dir, SpillDir: t.TempDir(),
		JobCheckpointInterval: every, QueryMemory: queryMemory})
	if err != nil {
		t.Fatal(err)
	}
	return e, mem
}

// loadBase fills c's first source with checkpointRows rows (w, wa: events
// of the day before windowWrites' first, with other keys).
func loadBase(t *testing.T, s *engine.Session, c jobCase) {
	t.Helper()
	var vals []string
	for k := range checkpointRows {
		if strings.HasPrefix(c.sources[0], "w") {
			ts := time.Date(2019, 12, 31, 0, 0, 0, 0, time.UTC).Add(time.Duration(k) * 10 * time.Millisecond)
			vals = append(vals, fmt.Sprintf("(%d, %d, %d, TIMESTAMP '%s')", 1_000_000+k, k%4, k%1000, ts.Format("2006-01-02 15:04:05.000")))
		} else {
			vals = append(vals, fmt.Sprintf("(%d, %d, %d)", k, k%6, k%1000))
		}
	}
	mustExec(t, s, `INSERT INTO `+c.sources[0]+` VALUES `+strings.Join(vals, ", "))
}

// startLoadedJob opens an engine over dir (jobs checkpointing every
// every, with queryMemory), creates c's tables, loads its base rows and
// starts its job.
func startLoadedJob(t *testing.T, dir string, c jobCase, every time.Duration, queryMemory int64) (*engine.Engine, *memory.CheckedAllocator, *engine.Session, string) {
	t.Helper()
	e, mem := openCheckpointEngine(t, dir, every, queryMemory)
	s := e.NewSession()
	for _, q := range c.ddl {
		mustExec(t, s, q)
	}
	mustExec(t, s, initial(c))
	loadBase(t, s, c)
	if _, err := exec(context.Background(), s, nil, c.job); err != nil {
		t.Fatal(err)
	}
	return e, mem, s, onlyJob(t, e).ID
}

// TestJobCheckpointRestart stops a job (its engine closed, the job's
// uncommitted writes lost as in a crash) at random points of a random
// workload, many times: after every restart the job must resume from its
// checkpoint, reading only the source snapshots committed since (at most
// 4 rows each, against checkpointRows to read in full), and its sink must
// equal the batch answer at the positions it reports (for the event-time
// jobs, that of the windows their watermark closed). With a small memory
// budget (spillBudget) the state spills, and the checkpoints hold what
// spilled: without it the event-time jobs' answers go wrong.
func TestJobCheckpointRestart(t *testing.T) {
	seed := testSeed(t)
	restarts := 6
	if testing.Short() || raceEnabled {
		restarts = 3
	}
	for _, tiny := range []bool{false, true} {
		for i, c := range checkpointCases() {
			whole := strings.HasPrefix(c.name, "top") && !strings.HasSuffix(c.name, "_append")
			if tiny && whole {
				continue // a top-N partition (a sixth of the rows) is held whole: over this budget
			}
			if raceEnabled && !whole && tiny != ((seed+uint64(i))%2 == 1) {
				continue // under -race each job runs with one of the two budgets, alternating by the seed (its goroutines race the same either way); the plain pass runs both
			}
			budget := int64(0)
			if tiny {
				budget = cmp.Or(c.spillBudget, 24<<10)
			}
			t.Run(fmt.Sprintf("%s/budget=%d", c.name, budget), func(t *testing.T) {
				checkpointRestarts(t, c, seed, restarts, budget)
			})
		}
	}
}

func checkpointRestarts(t *testing.T, c jobCase, seed uint64, restarts int, budget int64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	e, mem, s, id := startLoadedJob(t, dir, c, time.Duration(10+rng.IntN(100))*time.Millisecond, budget)
	st := waitCaughtUp(t, e, c, id)
	restored := 0
	for round := range restarts {
		writes := 1 + rng.IntN(12)
		for i := range writes {
			mustExec(t, s, c.write(rng, i))
			if rng.IntN(3) == 0 {
				time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			}
		}
		committed := checkCommitted(t, e, s, c, id) > 0
		closeEngine(t, e, mem)
		e, mem = openCheckpointEngine(t, dir, time.Duration(10+rng.IntN(100))*time.Millisecond, budget)
		s = e.NewSession()
		st = waitStarted(t, e, c, id)
		if !committed && st.Start == engine.StartSources {
			// The job commits, and checkpoints, only when its answer
			// changes: a window job whose windows the watermark has not
			// closed yet had nothing to commit before the stop.
			checkSinkAt(t, s, c, st, seed)
			continue
		}
		if st.Start != engine.StartCheckpoint {
			t.Fatalf("seed %d round %d: the job did not restore a checkpoint: %+v", seed, round, st)
		}
		// Each source snapshot since the checkpoint changed at most 4
		// rows (the job commits, and checkpoints, only when its answer
		// changes: the checkpoint may be older than the last catch-up).
		var snaps int64
		for i, p := range st.Positions {
			snaps += p - st.From[i]
		}
		if limit := 4 * snaps; st.SourceRows > limit {
			t.Fatalf("seed %d round %d: the restarted job read %d source rows, more than the %d the %d source snapshots since its checkpoint at %v changed", seed, round, st.SourceRows, limit, snaps, st.From)
		}
		checkSinkAt(t, s, c, st, seed)
		restored++
	}
	if restored == 0 {
		// Only rounds before the job's first commit may rebuild: one that
		// never commits never checkpoints, and would pass untested.
		t.Fatalf("seed %d: the job restored no checkpoint in %d restarts", seed, restarts)
	}
	closeEngine(t, e, mem)
}

// waitStarted waits until a restarted job's run has started and then
// caught up.
func waitStarted(t *testing.T, e *engine.Engine, c jobCase, id string) engine.JobStatus {
	t.Helper()
	for onlyJob(t, e).Start == "" {
		time.Sleep(5 * time.Millisecond)
	}
	return waitCaughtUp(t, e, c, id)
}

// checkSinkAt compares the sink with the batch answer at st.Positions.
func checkSinkAt(t *testing.T, s *engine.Session, c jobCase, st engine.JobStatus, seed uint64) {
	t.Helper()
	got := rowSet(t, s, fmt.Sprintf(c.sink, ""))
	if want := rowSet(t, s, batchAt(c, st.Positions)); !slices.Equal(got, want) {
		t.Fatalf("seed %d: sink at %v:\n%v\nwant\n%v", seed, st.Positions, got, want)
	}
}

// TestJobCorruptCheckpoint: a checkpoint file that is damaged (a byte
// flipped, cut short, emptied) or gone, the last one or the base of its
// chain, makes the restart rebuild the state from the sources in full,
// which is still exact.
func TestJobCorruptCheckpoint(t *testing.T) {
	c := checkpointCases()[0]
	damage := map[string]func(b []byte) []byte{
		"flipped": func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b },
		"short":   func(b []byte) []byte { return b[:len(b)-5] },
		"empty":   func([]byte) []byte { return nil },
		"gone":    nil,
	}
	for name, fn := range damage {
		for _, base := range []bool{false, true} {
			sub := name
			if base {
				sub = "base-" + name
			}
			t.Run(sub, func(t *testing.T) {
				corruptCheckpointRestart(t, c, fn, base)
			})
		}
	}
}

// corruptCheckpointRestart damages the job's checkpoint of its last sink
// snapshot with fn (nil: deletes it), or (base) the base of its chain,
// and restarts it.
func corruptCheckpointRestart(t *testing.T, c jobCase, fn func([]byte) []byte, base bool) {
	rng := rand.New(rand.NewPCG(7, 7))
	dir := t.TempDir()
	e, mem, s, id := startLoadedJob(t, dir, c, 20*time.Millisecond, 0)
	for i := range 10 {
		mustExec(t, s, c.write(rng, i))
	}
	st := waitCaughtUp(t, e, c, id)
	for i := 0; base && len(checkpointFiles(t, dir, id)) < 2 && i < 100; i++ {
		mustExec(t, s, c.write(rng, i)) // until the last checkpoint is a delta
		st = waitCaughtUp(t, e, c, id)
	}
	closeEngine(t, e, mem)

	// The chain of the last checkpoint: its base, deltas, and it.
	files, err := filepath.Glob(filepath.Join(dir, "_jobs", id+".checkpoints", "*"))
	slices.SortFunc(files, func(a, b string) int {
		x, _ := strconv.ParseInt(filepath.Base(a), 10, 64)
		y, _ := strconv.ParseInt(filepath.Base(b), 10, 64)
		return cmp.Compare(x, y)
	})
	if err != nil || len(files) == 0 || filepath.Base(files[len(files)-1]) != fmt.Sprint(st.SinkSnapshot) {
		t.Fatalf("checkpoint files %v (%v), want those of the chain of sink snapshot %d", files, err, st.SinkSnapshot)
	}
	victim := files[len(files)-1]
	if base {
		if len(files) == 1 {
			t.Fatalf("checkpoint files %v: no delta on the base", files)
		}
		victim = files[0]
	}
	if fn == nil {
		err = os.Remove(victim)
	} else {
		var b []byte
		if b, err = os.ReadFile(victim); err == nil {
			err = os.WriteFile(victim, fn(b), 0o644)
		}
	}
	if err != nil {
		t.Fatal(err)
	}

	e, mem = openCheckpointEngine(t, dir, 20*time.Millisecond, 0)
	defer closeEngine(t, e, mem)
	s = e.NewSession()
	for i := range 5 {
		mustExec(t, s, c.write(rng, i))
	}
	st = waitStarted(t, e, c, id)
	if st.Start != engine.StartSources || st.SourceRows < checkpointRows {
		t.Fatalf("restart from a damaged checkpoint: started from %q after reading %d rows, want its sources, at least %d rows", st.Start, st.SourceRows, checkpointRows)
	}
	checkSinkAt(t, s, c, st, 7)
}

// BenchmarkJobRestart measures how long a job over a source of
// FLIGHTD_BENCH_ROWS rows (1,000,000 by default) takes, from the engine's
// start, to commit a write made after the restart: restoring its
// checkpoint and reading the new snapshot, or reading the source again in
// full (checkpoints off). A GROUP BY job: over a primary-key source the
// state holds every row (the normalization's); over an append table, only
// the groups. A SESSION job over an append table: its 100 sessions stay
// open, so its state holds every row; each write closes a small session
// planted for it.
func BenchmarkJobRestart(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("FLIGHTD_BENCH_ROWS")); err == nil && v > 0 {
		n = v
	}
	jobs := []struct {
		name string
		job  restartJob
	}{{"pk", groupByRestart(", PRIMARY KEY (k) NOT ENFORCED")}, {"append", groupByRestart("")}, {"session", sessionRestart(n)}}
	for _, j := range jobs {
		for _, m := range []struct {
			name  string
			every time.Duration
		}{{"checkpoint", 0}, {"sources", -1}} {
			b.Run(j.name+"/"+m.name, func(b *testing.B) {
				benchmarkJobRestart(b, n, j.job, m.every)
			})
		}
	}
}

// restartJob is a job of BenchmarkJobRestart over source s (k, g, v and
// the columns fill appends), whose answer changes with write(i).
type restartJob struct {
	ddl   []string
	job   string
	more  []arrow.Field
	fill  func(bld *array.RecordBuilder, k int)
	write func(i int) string
}

func groupByRestart(key string) restartJob {
	return restartJob{
		ddl: []string{
			`CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT` + key + `)`,
			`CREATE TABLE agg (g BIGINT NOT NULL, c BIGINT, sv BIGINT, PRIMARY KEY (g) NOT ENFORCED)`,
		},
		job:   `INSERT INTO agg SELECT g, count(*), sum(v) FROM s /*+ OPTIONS('scan.mode'='latest-full') */ GROUP BY g`,
		fill:  func(*array.RecordBuilder, int) {},
		write: func(i int) string { return fmt.Sprintf(`INSERT INTO s VALUES (%d, 1, 1)`, -1-i) },
	}
}

// sessionRestart: row k at k ms, 100 groups, sessions of a 10 s gap; the
// n rows (at least 20,000) end at T. Group -1-i has one row at T - 7 s + 10i ms, open at
// the start (the watermark is T - 2 s); write(i) puts a row at that time
// plus 12.001 s, which closes group -1-i's session (the watermark passes
// its end) and no other (it stays before T + 10 s).
func sessionRestart(n int) restartJob {
	const planted = 500
	at := func(ms int) string {
		return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond).Format("2006-01-02 15:04:05.000")
	}
	plantedAt := func(i int) int { return n - 7000 + 10*i }
	// Group -100000's session closes at once: the job's first commit.
	planting := []string{fmt.Sprintf("(%d, -100000, 1, TIMESTAMP '%s')", 3*n, at(0))}
	for i := range planted {
		planting = append(planting, fmt.Sprintf("(%d, %d, 1, TIMESTAMP '%s')", n+i, -1-i, at(plantedAt(i))))
	}
	return restartJob{
		ddl: []string{
			`CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)`,
			`CREATE TABLE sw (g BIGINT NOT NULL, ws TIMESTAMP(3) NOT NULL, we TIMESTAMP(3) NOT NULL, c BIGINT, PRIMARY KEY (g, ws, we) NOT ENFORCED)`,
			`INSERT INTO s VALUES ` + strings.Join(planting, ", "),
		},
		job: `INSERT INTO sw SELECT g, window_start, window_end, count(*) FROM TABLE(SESSION(TABLE s /*+ OPTIONS('scan.mode'='latest-full') */
			PARTITION BY g, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY g, window_start, window_end`,
		more: []arrow.Field{{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true}},
		fill: func(bld *array.RecordBuilder, k int) {
			bld.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + int64(k)))
		},
		write: func(i int) string {
			if i >= planted {
				panic("more restarts than sessions planted")
			}
			return fmt.Sprintf(`INSERT INTO s VALUES (%d, %d, 1, TIMESTAMP '%s')`, 2*n+i, -10000-i, at(plantedAt(i)+12001))
		},
	}
}

func benchmarkJobRestart(b *testing.B, n int, job restartJob, every time.Duration) {
	ctx := context.Background()
	dir := b.TempDir()
	e, mem := openCheckpointEngine(b, dir, every, 0)
	s := e.NewSession()
	for _, q := range job.ddl {
		if _, err := exec(ctx, s, nil, q); err != nil {
			b.Fatal(err)
		}
	}
	schema := arrow.NewSchema(append([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "g", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, job.more...), nil)
	const per = 64 << 10
	rdr := &batches{schema: schema, n: (n + per - 1) / per, make: func(i int) arrow.RecordBatch {
		bld := array.NewRecordBuilder(mem, schema)
		defer bld.Release()
		for k := i * per; k < min(n, (i+1)*per); k++ {
			bld.Field(0).(*array.Int64Builder).Append(int64(k))
			bld.Field(1).(*array.Int64Builder).Append(int64(k % 100))
			bld.Field(2).(*array.Int64Builder).Append(int64(k % 1000))
			job.fill(bld, k)
		}
		return bld.NewRecordBatch()
	}}
	if _, err := ingest(ctx, s, "s", engine.IngestAppend, rdr); err != nil {
		b.Fatal(err)
	}
	if _, err := exec(ctx, s, nil, job.job); err != nil {
		b.Fatal(err)
	}
	last := waitCommitted(b, e, 0)
	closeEngine(b, e, mem)
	b.ResetTimer()
	for i := range b.N {
		e, mem = openCheckpointEngine(b, dir, every, 0)
		if _, err := exec(ctx, e.NewSession(), nil, job.write(i)); err != nil {
			b.Fatal(err)
		}
		last = waitCommitted(b, e, last)
		b.StopTimer()
		if st := e.Jobs(ctx)[0]; every < 0 && st.SourceRows < int64(n) || every == 0 && st.Start != engine.StartCheckpoint {
			b.Fatalf("restart %+v", st)
		}
		closeEngine(b, e, mem)
		b.StartTimer()
	}
}

// waitCommitted waits until the only job commits a sink snapshot after
// last and has no lag, and returns the snapshot.
func waitCommitted(tb testing.TB, e *engine.Engine, last int64) int64 {
	for {
		jobs := e.Jobs(context.Background())
		if len(jobs) != 1 || jobs[0].State != engine.JobRunning {
			tb.Fatalf("jobs: %+v", jobs)
		}
		if st := jobs[0]; st.Start != "" && st.SinkSnapshot > last && st.Lag == 0 {
			return st.SinkSnapshot
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestJobCheckpointJoinSidesGrow: a join job's checkpoint restores into
// the plan its restart binds, whatever the sizes of its sources then. A
// batch plan puts the larger input of a join on the left; when a job's
// plan did so too, a source outgrowing the other between runs swapped
// the sides, and the restart restored each side's source and rows into
// the other's.
func TestJobCheckpointJoinSidesGrow(t *testing.T) {
	c := checkpointCases()[1]
	if c.name != "join" {
		t.Fatalf("case %s, want join", c.name)
	}
	dir := t.TempDir()
	e, mem, s, id := startLoadedJob(t, dir, c, 20*time.Millisecond, 0) // s: 4,000 rows, d: 3
	waitCaughtUp(t, e, c, id)
	var vals []string
	for g := range 3 * checkpointRows {
		vals = append(vals, fmt.Sprintf("(%d, 'n%d')", 100+g, g))
	}
	mustExec(t, s, `INSERT INTO d VALUES `+strings.Join(vals, ", ")+`, (1, 'uno')`)
	waitCaughtUp(t, e, c, id)
	closeEngine(t, e, mem)

	e, mem = openCheckpointEngine(t, dir, 20*time.Millisecond, 0)
	defer closeEngine(t, e, mem)
	s = e.NewSession()
	st := waitStarted(t, e, c, id)
	if st.Start != engine.StartCheckpoint || !slices.Equal(st.Sources, []string{"default.s", "default.d"}) {
		t.Fatalf("restart after d outgrew s: %+v", st)
	}
	checkSinkAt(t, s, c, st, 0)
}

// slowCheckpointFS takes delay to create each checkpoint file, as a slow
// store does, and records when each write began.
type slowCheckpointFS struct {
	tablestore.FS
	delay  time.Duration
	mu     sync.Mutex
	starts []time.Time
}

func (f *slowCheckpointFS) Create(name string) (tablestore.File, error) {
	if strings.Contains(name, ".checkpoints/.tmp-") {
		f.mu.Lock()
		f.starts = append(f.starts, time.Now())
		f.mu.Unlock()
		time.Sleep(f.delay)
	}
	return f.FS.Create(name)
}

// TestCheckpointPauseSlowWrites: with checkpoint writes far slower than
// the interval, a job spends at most about a fifth of its time on
// checkpoints: from the start of one checkpoint's write to the next's
// there are at least checkpointPause times its cost after it, so five
// times the write's own time (a lower bound: a loaded machine only
// lengthens it).
func TestCheckpointPauseSlowWrites(t *testing.T) {
	const delay = 100 * time.Millisecond
	fsys := &slowCheckpointFS{FS: tablestore.NewLocalFS(), delay: delay}
	e := newEngineWith(t, engine.Config{FS: fsys, JobCheckpointInterval: 10 * time.Millisecond})
	s := e.NewSession()
	for _, q := range []string{
		`CREATE TABLE s (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
		`CREATE TABLE t (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
		`INSERT INTO t SELECT k, v FROM s /*+ OPTIONS('scan.mode'='latest-full') */`,
	} {
		mustExec(t, s, q)
	}
	// The job has changes at every marker: it checkpoints as often as the
	// pause lets it.
	for k := 0; ; k++ {
		mustExec(t, s, fmt.Sprintf(`INSERT INTO s VALUES (%d, %d)`, k, k))
		fsys.mu.Lock()
		n := len(fsys.starts)
		fsys.mu.Unlock()
		if n >= 8 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fsys.mu.Lock()
	starts := slices.Clone(fsys.starts)
	fsys.mu.Unlock()
	// The first checkpoint's cost is not known before it.
	for i := 2; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 5*delay {
			t.Errorf("checkpoint writes %d and %d (each over %v) began %v apart: checkpoints took more than a fifth of the job's time", i-1, i, delay, gap)
		}
	}
}

// TestJobInsertOnlyTopNRetraction: a DELETE of the append table an
// insert-only top-N job reads fails the job with the reason, rather than
// leave the rows that should come up out of its sink.
func TestJobInsertOnlyTopNRetraction(t *testing.T) {
	jobFailsOnRetraction(t, "top3_append", `DELETE FROM s WHERE v = 999`,
		"the top-N over default.s keeps only its top 3 rows per partition, as its input only inserts, but a row was retracted")
}

// TestJobOverRetraction: a DELETE of the append table an OVER aggregation
// job reads fails the job with the reason (Flink's over aggregation
// takes an insert-only input only).
func TestJobOverRetraction(t *testing.T) {
	jobFailsOnRetraction(t, "over", `DELETE FROM wa WHERE k = 1000999`,
		"an OVER aggregation needs an input that only inserts, but default.wa retracted a row")
}

// jobFailsOnRetraction starts the checkpoint case named, checks its sink,
// runs del and waits for the job to fail with an error containing want.
func jobFailsOnRetraction(t *testing.T, name, del, want string) {
	var c jobCase
	for _, x := range checkpointCases() {
		if x.name == name {
			c = x
		}
	}
	e, mem, s, id := startLoadedJob(t, t.TempDir(), c, 50*time.Millisecond, 0)
	defer closeEngine(t, e, mem)
	checkSinkAt(t, s, c, waitCaughtUp(t, e, c, id), 0)
	mustExec(t, s, del)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := onlyJob(t, e)
		if st.State == engine.JobFailed {
			if !strings.Contains(st.Error, want) {
				t.Fatalf("the job failed with %q", st.Error)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not fail: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInsertOnlyTopNOverWindows: a window aggregation emits each window
// once, as +I, so a top-N over it (not per window) keeps its top rows only.
func TestInsertOnlyTopNOverWindows(t *testing.T) {
	e, mem := openEngine(t, t.TempDir())
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, `CREATE TABLE tev (k INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)`)
	var plan []string
	for _, r := range rows(t, s, `EXPLAIN SELECT window_start, c FROM (SELECT window_start, c, ROW_NUMBER() OVER (ORDER BY c DESC, window_start) AS rn FROM (SELECT window_start, window_end, count(*) AS c FROM TABLE(TUMBLE(TABLE tev /*+ OPTIONS('scan.mode'='latest-full') */, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end) w) x WHERE rn <= 2`) {
		plan = append(plan, r[0])
	}
	if !slices.ContainsFunc(plan, func(l string) bool {
		return strings.Contains(l, "InsertOnlyTopN order: c DESC, window_start rows 1 to 2")
	}) {
		t.Fatalf("plan:\n%s", strings.Join(plan, "\n"))
	}
}
