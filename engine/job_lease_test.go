package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

// stallingFS stalls every file created or published in one of its
// directories (by default the lease directory) while a gate is set, as a
// store that stops answering does.
type stallingFS struct {
	tablestore.FS
	gate atomic.Pointer[chan struct{}]
	dirs atomic.Pointer[[]string]
	// renames are directories whose files stall only as they are renamed
	// into place (Rename), once written.
	renames atomic.Pointer[[]string]
	// stalled gets the name of each call stalled, if it has room.
	stalled chan string
}

func newStallingFS(dirs ...string) *stallingFS {
	f := &stallingFS{FS: tablestore.NewLocalFS(), stalled: make(chan string, 1)}
	f.stallIn(dirs...)
	return f
}

// stallIn sets the directories whose files stall.
func (f *stallingFS) stallIn(dirs ...string) { f.dirs.Store(&dirs) }

// stallRenamesIn sets the directories whose files stall as Rename
// publishes them.
func (f *stallingFS) stallRenamesIn(dirs ...string) { f.renames.Store(&dirs) }

func (f *stallingFS) wait(name string) { f.waitIn(f.dirs.Load(), name) }

func (f *stallingFS) waitIn(dirs *[]string, name string) {
	g := f.gate.Load()
	if g == nil || dirs == nil {
		return
	}
	for _, dir := range *dirs {
		if strings.Contains(name, dir) {
			select {
			case f.stalled <- name:
			default:
			}
			<-*g
			return
		}
	}
}

func (f *stallingFS) Create(name string) (tablestore.File, error) {
	f.wait(name)
	return f.FS.Create(name)
}

func (f *stallingFS) Rename(oldname, newname string) error {
	f.waitIn(f.renames.Load(), newname)
	return f.FS.Rename(oldname, newname)
}

func (f *stallingFS) RenameNoReplace(oldname, newname string) error {
	f.wait(newname)
	return f.FS.RenameNoReplace(oldname, newname)
}

// waitStalled waits until a call stalls, failing the test with why if none
// does in time.
func (f *stallingFS) waitStalled(t *testing.T, why string) {
	t.Helper()
	select {
	case <-f.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal(why)
	}
}

// gated sets f's gate and returns the function that lifts it.
func (f *stallingFS) gated() (release func()) {
	gate := make(chan struct{})
	f.gate.Store(&gate)
	var once sync.Once
	return func() {
		once.Do(func() {
			f.gate.Store(nil)
			close(gate)
		})
	}
}

// TestJobStopsWhileRenewalHangs: a node whose lease renewal hangs must
// stop its job by the renewal deadline (half the lease), before another
// node may take the lease, not when the hung call returns.
func TestJobStopsWhileRenewalHangs(t *testing.T) {
	fsys := newStallingFS("/_leases/")
	const lease = 400 * time.Millisecond
	var logMu sync.Mutex
	var logged []string
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}
	e := newEngineWith(t, engine.Config{FS: fsys, JobLease: lease, JobCheckpointInterval: 20 * time.Millisecond, Logf: logf})
	s := e.NewSession()
	for _, q := range []string{
		`CREATE TABLE s (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
		`CREATE TABLE t (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
		`INSERT INTO t SELECT k, v FROM s /*+ OPTIONS('scan.mode'='latest-full') */`,
		`INSERT INTO s VALUES (1, 1)`,
	} {
		mustExec(t, s, q)
	}
	waitSink := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !slices.Equal(rowSet(t, s, `SELECT k, v FROM t`), want) {
			if time.Now().After(deadline) {
				t.Fatalf("sink %v, want %v", rowSet(t, s, `SELECT k, v FROM t`), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitSink("1|1")

	release := fsys.gated()
	defer release()
	// A renewal starts within a quarter lease and hangs; the run must have
	// stopped half a lease after the last renewal.
	time.Sleep(lease)
	mustExec(t, s, `INSERT INTO s VALUES (2, 2)`)
	time.Sleep(5 * lease)
	if got := rowSet(t, s, `SELECT k, v FROM t`); !slices.Equal(got, []string{"1|1"}) {
		t.Fatalf("the job wrote its sink after its lease deadline passed: %v", got)
	}
	logMu.Lock()
	if !slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, "its lease was lost") }) {
		t.Errorf("the log does not say the job stopped for its lease: %q", logged)
	}
	logMu.Unlock()
	// The store answers again: the node takes the lease back and catches up.
	release()
	waitSink("1|1", "2|2")
	if jobs := e.Jobs(context.Background()); len(jobs) != 1 || jobs[0].State != engine.JobRunning {
		t.Fatalf("jobs: %+v", jobs)
	}
}

// TestJobStaleCommitNeverLands: node A's job hangs in its sink commit
// while its lease renewals hang too; node B takes the lease once it
// expires and commits newer answers. When A's store answers again, A's
// commit, computed from older inputs, must not land on top of B's (a
// blind write would take a count back), and A must not run the job
// beside B.
func TestJobStaleCommitNeverLands(t *testing.T) {
	fsA := newStallingFS("/t/snapshot/snapshot-")
	a, b := countJobOnTwoNodes(t, fsA)
	sb := b.NewSession()
	release := fsA.gated()
	defer release()
	// A's job commits k=1 -> 2 and hangs publishing it; then its renewals
	// hang too, so B takes the job over and commits the same, then k=1 -> 3.
	mustExec(t, sb, `INSERT INTO s VALUES (1)`)
	fsA.waitStalled(t, "node A's job did not commit")
	fsA.stallIn("/t/snapshot/snapshot-", "/_leases/")
	waitRows(t, sb, `SELECT k, n FROM t`, "1|2", "2|1")
	waitNode(t, b, "node-b")
	mustExec(t, sb, `INSERT INTO s VALUES (1)`)
	waitRows(t, sb, `SELECT k, n FROM t`, "1|3", "2|1")

	release()
	time.Sleep(5 * twoNodeLease)
	want := rowSet(t, sb, `SELECT k, count(*) FROM s GROUP BY k`)
	if got := rowSet(t, sb, `SELECT k, n FROM t`); !slices.Equal(got, want) {
		t.Fatalf("after node A's store answered again, t = %v; want %v", got, want)
	}
	// B still runs the job and keeps t exact.
	mustExec(t, sb, `INSERT INTO s VALUES (2)`)
	waitRows(t, sb, `SELECT k, n FROM t`, "1|3", "2|2")
	waitNode(t, a, "node-b")
}

// TestJobStaleCheckpointKeepsNewer: node A's job commits and then hangs
// writing that commit's checkpoint, with its lease renewals hanging too;
// node B takes the job over and commits and checkpoints newer answers.
// When A's store answers again, A's late checkpoint write and its cleanup
// of older checkpoints must leave B's newer checkpoints, the base and
// deltas of B's chain: a node that runs the job next restores from them
// instead of reading every source again.
func TestJobStaleCheckpointKeepsNewer(t *testing.T) {
	root := t.TempDir()
	// Long enough that node A's renewals (due within half a lease) keep
	// its lease on a loaded CI machine until the test stalls them: with
	// 400 ms, A lost the job to B before its first checkpoint once.
	const lease = 2 * time.Second
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) }) // after the engines' closes below
	// open returns an engine and its close, which the test calls to hand
	// the job on, and which runs at the end if the test did not.
	open := func(fsys tablestore.FS, node string) (*engine.Engine, func()) {
		e, err := engine.Open(context.Background(), engine.Config{Root: root, FS: fsys, NodeID: node,
			JobLease: lease, JobCheckpointInterval: 20 * time.Millisecond, Mem: mem, SpillDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		closeEngine := func() {
			once.Do(func() {
				if err := e.Close(); err != nil {
					t.Error(err)
				}
			})
		}
		t.Cleanup(closeEngine)
		return e, closeEngine
	}
	fsA := newStallingFS(".checkpoints/")
	a, closeA := open(fsA, "node-a")
	sa := a.NewSession()
	startCountJob(t, sa, "(1), (2)", "1|1", "2|1")
	b, closeB := open(tablestore.NewLocalFS(), "node-b")
	sb := b.NewSession()

	release := fsA.gated()
	defer release()
	mustExec(t, sb, `INSERT INTO s VALUES (1)`)
	fsA.waitStalled(t, "node A's job did not checkpoint")
	fsA.stallIn(".checkpoints/", "/_leases/")
	waitNode(t, b, "node-b")
	// B's checkpoints: a base, then deltas on it (a commit each).
	for n := 2; n <= 4; n++ {
		mustExec(t, sb, `INSERT INTO s VALUES (2)`)
		waitRows(t, sb, `SELECT k, n FROM t`, "1|2", fmt.Sprintf("2|%d", n))
	}
	// B writes its checkpoint right after the commit. Were it later than
	// A's cleanup, the test could not see the bug, but never fails wrongly.
	time.Sleep(lease)
	release() // A writes its stale checkpoint and deletes what it takes for older
	time.Sleep(5 * lease)
	closeA()
	closeB()

	c, _ := open(tablestore.NewLocalFS(), "node-c")
	waitNode(t, c, "node-c")
	deadline := time.Now().Add(30 * time.Second)
	for onlyJob(t, c).Start == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := onlyJob(t, c); st.Start != engine.StartCheckpoint {
		t.Fatalf("after node A's stale checkpoint, the job restarted from %q (%d source rows), want B's last checkpoint", st.Start, st.SourceRows)
	}
	waitRows(t, c.NewSession(), `SELECT k, n FROM t`, "1|2", "2|4")
}

// waitRows waits until q's rows are want (sorted, as rowSet gives them).
func waitRows(t *testing.T, s *engine.Session, q string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Equal(rowSet(t, s, q), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v, want %v", q, rowSet(t, s, q), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitNode waits until e sees its one job on node want.
func waitNode(t *testing.T, e *engine.Engine, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		jobs := e.Jobs(context.Background())
		if len(jobs) == 1 && jobs[0].Node == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs %+v; want the job on %s", jobs, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestJobStoppedElsewhereStaysStopped: node C stops a job that node B runs
// while B's checkpoint write is in flight; C's stop removes the job's
// checkpoints, B's write then fails before B has seen the stop (its leases
// are long, so it syncs rarely). The job must stay STOPPED, on B too, not
// be recorded FAILED by B's failed run.
func TestJobStoppedElsewhereStaysStopped(t *testing.T) {
	root := t.TempDir()
	const lease = 20 * time.Second
	fsB := newStallingFS()
	b := newEngineWith(t, engine.Config{Root: root, FS: fsB, NodeID: "node-b", JobLease: lease, JobCheckpointInterval: 20 * time.Millisecond})
	sb := b.NewSession()
	startCountJob(t, sb, "(1)", "1|1")
	c := newEngineWith(t, engine.Config{Root: root, NodeID: "node-c", JobLease: lease})
	waitNode(t, c, "node-b")

	fsB.stallRenamesIn(".checkpoints/")
	release := fsB.gated()
	defer release()
	mustExec(t, sb, `INSERT INTO s VALUES (1)`)
	fsB.waitStalled(t, "node B's job did not checkpoint")
	id := onlyJob(t, b).ID
	mustExec(t, c.NewSession(), `STOP JOB '`+id+`'`)
	release()
	deadline := time.Now().Add(30 * time.Second)
	for onlyJob(t, b).State == engine.JobRunning && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := onlyJob(t, b); st.State != engine.JobStopped {
		t.Fatalf("on node B the job stopped on node C is %s: %s", st.State, st.Error)
	}
	def, err := b.Store().Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if def.State != engine.JobStopped {
		t.Fatalf("stored job: %s (%s), want STOPPED", def.State, def.Error)
	}
}

// twoNodeLease is the job lease of countJobOnTwoNodes' nodes.
const twoNodeLease = 400 * time.Millisecond

// countJobOnTwoNodes opens node A on fsA, which starts startCountJob's
// job over rows 1 and 2 and runs it, and node B on the local file system,
// on one warehouse.
func countJobOnTwoNodes(t *testing.T, fsA tablestore.FS) (a, b *engine.Engine) {
	t.Helper()
	root := t.TempDir()
	open := func(fsys tablestore.FS, node string) *engine.Engine {
		return newEngineWith(t, engine.Config{Root: root, FS: fsys, NodeID: node, JobLease: twoNodeLease, JobCheckpointInterval: 20 * time.Millisecond})
	}
	a = open(fsA, "node-a")
	startCountJob(t, a.NewSession(), "(1), (2)", "1|1", "2|1")
	return a, open(tablestore.NewLocalFS(), "node-b")
}

// startCountJob creates s and t, starts a job counting s's rows by k into
// t, inserts rows into s and waits until t holds want.
func startCountJob(t *testing.T, s *engine.Session, rows string, want ...string) {
	t.Helper()
	for _, q := range []string{
		`CREATE TABLE s (k BIGINT NOT NULL)`,
		`CREATE TABLE t (k BIGINT NOT NULL, n BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
		`INSERT INTO t SELECT k, count(*) FROM s /*+ OPTIONS('scan.mode'='latest-full') */ GROUP BY k`,
		`INSERT INTO s VALUES ` + rows,
	} {
		mustExec(t, s, q)
	}
	waitRows(t, s, `SELECT k, n FROM t`, want...)
}

// TestJobStopWhileHoldInFlight: node B stops the job node A runs while A's
// write of its hold on the source (its consumer, holdSources) is in
// flight. B records the stop and deletes the consumer; A's write then
// lands after the delete. A must take its hold back, or the source keeps
// every snapshot from then on, for a job that will never run again.
func TestJobStopWhileHoldInFlight(t *testing.T) {
	fsA := newStallingFS()
	fsA.stallRenamesIn("/s/consumer/")
	_, b := countJobOnTwoNodes(t, fsA)
	sb := b.NewSession()
	consumers := func() []string { return rowSet(t, sb, `SELECT consumer_id FROM s$consumers`) }
	waitConsumers := func(when string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(consumers()) != n {
			if time.Now().After(deadline) {
				t.Fatalf("consumers of s %s: %v, want %d", when, consumers(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitConsumers("while the job runs", 1)

	release := fsA.gated()
	defer release()
	mustExec(t, sb, `INSERT INTO s VALUES (1)`)
	fsA.waitStalled(t, "node A's job did not write its hold")
	mustExec(t, sb, `STOP JOB '`+onlyJob(t, b).ID+`'`)
	if got := consumers(); len(got) != 0 {
		t.Fatalf("consumers of s after STOP JOB: %v", got)
	}
	release()
	waitConsumers("after node A's late hold", 0)
	// And it stays so: A's job ends without writing another.
	time.Sleep(3 * twoNodeLease)
	if got := consumers(); len(got) != 0 {
		t.Fatalf("consumers of s after node A's job ended: %v", got)
	}
}
