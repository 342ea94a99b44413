package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/plan"
)

// built is the binary buildFlightd compiled, shared by the tests: linking
// it again for each test cost most of a loaded machine's run time.
var built struct {
	once sync.Once
	bin  string
	out  []byte
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}

// buildFlightd compiles the real binary once per test run.
func buildFlightd(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "flightd-test-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "flightd")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

// process is a running flightd.
type process struct {
	cmd          *exec.Cmd
	addr         string
	bin, dataDir string // what start ran, for restarts
	flags        []string
	// leasesLost counts the times its log says a job stopped on it
	// because its lease was lost.
	leasesLost *atomic.Int32
}

// addrWatcher reads flightd's log for the address it serves on, and
// counts lost job leases.
type addrWatcher struct {
	addr       chan<- string
	leasesLost *atomic.Int32
	partial    []byte
}

func (w *addrWatcher) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		line, rest, ok := bytes.Cut(w.partial, []byte("\n"))
		if !ok {
			return len(p), nil
		}
		if _, after, ok := strings.Cut(string(line), "serving Flight SQL on grpc://"); ok {
			w.addr <- strings.TrimSuffix(strings.Fields(after)[0], ",")
		}
		if bytes.Contains(line, []byte("its lease was lost")) {
			w.leasesLost.Add(1)
		}
		w.partial = rest
	}
}

// start runs flightd on a free port over dataDir and waits until it serves.
func start(t *testing.T, bin, dataDir string, flags ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-data", dataDir}, flags...)...)
	// A Writer, not cmd.StderrPipe: Wait then waits for exec's own copy
	// instead of closing a pipe a reader of ours may still be reading.
	addr := make(chan string, 1)
	lost := new(atomic.Int32)
	cmd.Stderr = &addrWatcher{addr: addr, leasesLost: lost}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A failed test must not leave a server running; killing an exited
	// process is a harmless error.
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case a := <-addr:
		return &process{cmd: cmd, addr: a, bin: bin, dataDir: dataDir, flags: flags, leasesLost: lost}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("flightd did not start within 30s")
	}
	return nil
}

func (p *process) connect(t *testing.T) (adbc.Connection, func()) {
	t.Helper()
	return p.connectAs(t, "", "")
}

// connectAs connects as user (none: "") with password.
func (p *process) connectAs(t *testing.T, user, password string) (adbc.Connection, func()) {
	t.Helper()
	opts := map[string]string{}
	if user != "" {
		opts[adbc.OptionKeyUsername], opts[adbc.OptionKeyPassword] = user, password
	}
	return p.connectWith(t, opts)
}

// connectWith connects with the ADBC database options opts.
func (p *process) connectWith(t *testing.T, opts map[string]string) (adbc.Connection, func()) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	opts[adbc.OptionKeyURI] = "grpc://" + p.addr
	db, err := adbcflightsql.NewDriver(mem).NewDatabase(opts)
	if err != nil {
		t.Fatal(err)
	}
	cnxn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cnxn, func() {
		_ = cnxn.Close()
		_ = db.Close()
		mem.AssertSize(t, 0)
	}
}

func execSQL(cnxn adbc.Connection, q string) error {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(context.Background())
	return err
}

// query runs q and calls each with every batch of its answer.
func query(cnxn adbc.Connection, q string, each func(arrow.RecordBatch)) error {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return err
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
		each(rdr.RecordBatch())
	}
	return rdr.Err()
}

// ids runs a query of one BIGINT column and returns its values.
func ids(t *testing.T, cnxn adbc.Connection, q string) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	err := query(cnxn, q, func(b arrow.RecordBatch) {
		col := b.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			out[col.Value(i)] = true
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// rowsOf runs a query through ADBC and renders each row as its values
// joined by sep, sorted.
func rowsOf(t *testing.T, cnxn adbc.Connection, q, sep string) []string {
	t.Helper()
	var out []string
	err := query(cnxn, q, func(b arrow.RecordBatch) {
		for r := range int(b.NumRows()) {
			vals := make([]string, b.NumCols())
			for c := range vals {
				vals[c] = b.Column(c).ValueStr(r)
			}
			out = append(out, strings.Join(vals, sep))
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(out)
	return out
}

// jobsShown reads SHOW JOBS: each job's fields by column name (as the
// result names them; plan.JobColumns), so that no test depends on where
// a column sits.
func jobsShown(t *testing.T, cnxn adbc.Connection) []map[string]string {
	t.Helper()
	var out []map[string]string
	err := query(cnxn, `SHOW JOBS`, func(b arrow.RecordBatch) {
		if names := b.Schema().Fields(); !slices.EqualFunc(names, plan.JobColumns, func(f arrow.Field, c string) bool { return f.Name == c }) {
			t.Errorf("SHOW JOBS columns %v, want %v", names, plan.JobColumns)
		}
		for r := range int(b.NumRows()) {
			job := map[string]string{}
			for c, f := range b.Schema().Fields() {
				job[f.Name] = b.Column(c).ValueStr(r)
			}
			out = append(out, job)
		}
	})
	if err != nil {
		t.Fatalf("SHOW JOBS: %v", err)
	}
	return out
}

// kill sends flightd SIGKILL, as a crash would end it.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// killRound connects to flightd and calls write over and over on that
// connection, until it returns false or a second after flightd is killed;
// it kills flightd with SIGKILL after wait, and once write has stopped,
// starts it again over dir.
func (p *process) killRound(t *testing.T, wait time.Duration, write func(adbc.Connection) bool) *process {
	t.Helper()
	p.killWriting(t, wait, write)
	return start(t, p.bin, p.dataDir, p.flags...)
}

// killWriting is killRound but for the restart: flightd has exited.
func (p *process) killWriting(t *testing.T, wait time.Duration, write func(adbc.Connection) bool) {
	t.Helper()
	cnxn, closeConn := p.connect(t)
	killAt := time.Now().Add(wait)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for time.Now().Before(killAt.Add(time.Second)) {
			if !write(cnxn) {
				return
			}
		}
	}()
	time.Sleep(time.Until(killAt))
	p.kill(t)
	<-done
	_ = p.cmd.Wait()
	closeConn()
}

// startKill9 starts flightd (with flags) over a fresh data directory for
// a kill -9 test (skipped with -short), with a random source whose seed
// it logs.
func startKill9(t *testing.T, flags ...string) (*process, *rand.Rand, int64) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	// One node id across restarts: a restarted node takes its jobs' leases
	// back at once, as the same node would, instead of waiting -job-lease
	// for the killed process's to expire.
	return start(t, buildFlightd(t), t.TempDir(), append([]string{"-node-id", "n1"}, flags...)...), rand.New(rand.NewPCG(uint64(seed), 0)), seed
}

// killRounds is how many times a kill -9 test kills flightd: the
// environment variable env when set (a long run), else def.
func killRounds(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive count", env, v)
	}
	return n
}

// terminate sends flightd SIGTERM and returns how it exited.
func (p *process) terminate(t *testing.T) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return p.cmd.Wait()
}

// TestKill9KeepsAcknowledgedWrites kills a real flightd with SIGKILL while
// a client inserts, restarts it, and checks that every insert the client
// saw acknowledged is there and no row appears that was never inserted.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	p, _, seed := startKill9(t)
	kill9Inserts(t, p, seed, 5)
}

// kill9Inserts is the body of the kill -9 tests of inserts: rounds kills
// at random moments (from seed) while a client inserts.
func kill9Inserts(t *testing.T, p *process, seed int64, rounds int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	cnxn, closeConn := p.connect(t)
	if err := execSQL(cnxn, `CREATE TABLE acked (id BIGINT NOT NULL, PRIMARY KEY (id) NOT ENFORCED)`); err != nil {
		t.Fatal(err)
	}
	closeConn()

	acked := map[int64]bool{}   // inserts the client saw succeed
	unacked := map[int64]bool{} // inserts in flight at a kill: may or may not be there
	var next int64
	for round := 0; round < rounds; round++ {
		p = p.killRound(t, time.Duration(50+rng.IntN(300))*time.Millisecond, func(cnxn adbc.Connection) bool {
			next++
			if err := execSQL(cnxn, fmt.Sprintf(`INSERT INTO acked VALUES (%d)`, next)); err != nil {
				unacked[next] = true // the server died under us
				return false
			}
			acked[next] = true
			return true
		})
		check, closeCheck := p.connect(t)
		present := ids(t, check, `SELECT id FROM acked`)
		closeCheck()
		for id := range acked {
			if !present[id] {
				t.Fatalf("round %d: acknowledged insert %d lost by kill -9 (seed %d)", round, id, seed)
			}
		}
		for id := range present {
			if !acked[id] && !unacked[id] {
				t.Fatalf("round %d: row %d was never inserted (seed %d)", round, id, seed)
			}
		}
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("flightd did not exit cleanly on SIGTERM: %v", err)
	}
}

// TestGracefulShutdown: SIGTERM lets an acknowledged write survive and the
// process exits 0.
func TestGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	dir := t.TempDir()
	p := start(t, bin, dir)
	cnxn, closeConn := p.connect(t)
	for _, q := range []string{`CREATE TABLE t (a BIGINT)`, `INSERT INTO t VALUES (1), (2), (3)`} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatal(err)
		}
	}
	closeConn()
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	p = start(t, bin, dir)
	cnxn, closeConn = p.connect(t)
	defer closeConn()
	if n := len(ids(t, cnxn, `SELECT a FROM t`)); n != 3 {
		t.Fatalf("%d rows after restart, want 3", n)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// TestCPUProfile: -cpuprofile writes a CPU profile of the run that is whole
// once flightd has shut down on SIGTERM (gzipped pprof, with its sample
// types), and a file that cannot be created stops flightd at start.
func TestCPUProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pprof")
	p := start(t, bin, filepath.Join(dir, "data"), "-cpuprofile", prof)
	cnxn, closeConn := p.connect(t)
	if err := execSQL(cnxn, `CREATE TABLE t (a BIGINT)`); err != nil {
		t.Fatal(err)
	}
	closeConn()
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("profile cut short: %v", err)
	}
	for _, s := range []string{"samples", "cpu", "nanoseconds"} {
		if !bytes.Contains(b, []byte(s)) {
			t.Fatalf("profile of %d bytes lacks the sample type name %q", len(b), s)
		}
	}
	out, err := exec.Command(bin, "-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data"), "-cpuprofile", filepath.Join(dir, "missing", "cpu.pprof")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "-cpuprofile") {
		t.Fatalf("a profile that cannot be created: %v, %s", err, out)
	}
}

// TestPprofAddr: -pprof-addr serves a heap profile of the running process
// (gzipped pprof naming its sample types) and sampled mutex and block
// profiles, and nothing once flightd has shut down; an address it cannot
// listen on stops flightd at start.
func TestPprofAddr(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	dir := t.TempDir()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	at := lis.Addr().String()
	lis.Close()
	p := start(t, bin, filepath.Join(dir, "data"), "-pprof-addr", at)
	cnxn, closeConn := p.connect(t)
	if err := execSQL(cnxn, `CREATE TABLE t (a BIGINT)`); err != nil {
		t.Fatal(err)
	}
	closeConn()
	// The contention profiles are sampled (Go's rates are 0 by default):
	// the mutex profile states its period, and the block profile holds the
	// waits of the statement's goroutines.
	for _, c := range []struct{ profile, want string }{
		{"mutex", fmt.Sprintf("sampling period=%d", mutexProfileFraction)},
		{"block", " @ 0x"},
	} {
		resp, err := http.Get("http://" + at + "/debug/pprof/" + c.profile + "?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Contains(b, []byte(c.want)) {
			t.Fatalf("%s profile (%s, %v) lacks %q:\n%s", c.profile, resp.Status, err, c.want, b)
		}
	}
	resp, err := http.Get("http://" + at + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatalf("heap profile (%s): %v", resp.Status, err)
	}
	b, err := io.ReadAll(zr)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"inuse_space", "alloc_space", "bytes"} {
		if !bytes.Contains(b, []byte(s)) {
			t.Fatalf("heap profile of %d bytes lacks the sample type name %q", len(b), s)
		}
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if resp, err := http.Get("http://" + at + "/debug/pprof/heap"); err == nil {
		resp.Body.Close()
		t.Fatalf("profiles still served after shutdown: %s", resp.Status)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	out, err := exec.Command(bin, "-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data"), "-pprof-addr", busy.Addr().String()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "-pprof-addr") {
		t.Fatalf("an address in use: %v, %s", err, out)
	}
}

// TestShutdownCancelsLongStreams: a result stream still running after the
// grace period is cancelled (the client sees an error, not a short result)
// and the process exits cleanly.
func TestShutdownCancelsLongStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	p := start(t, bin, t.TempDir(), "-shutdown-grace", "500ms")
	cnxn, closeConn := p.connect(t)
	defer closeConn()
	if err := execSQL(cnxn, `CREATE TABLE t (x BIGINT)`); err != nil {
		t.Fatal(err)
	}
	var values []string
	for i := range 200 {
		values = append(values, fmt.Sprintf("(%d)", i))
	}
	if err := execSQL(cnxn, `INSERT INTO t VALUES `+strings.Join(values, ", ")); err != nil {
		t.Fatal(err)
	}
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(`SELECT a.x FROM t a, t b, t c`); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	var rows int64
	for rdr.Next() {
		rows += rdr.RecordBatch().NumRows()
		time.Sleep(time.Millisecond) // a slow client
	}
	if rdr.Err() == nil {
		t.Fatalf("stream of 8,000,000 rows ended without error after %d rows", rows)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("flightd still running 20s after SIGTERM")
	}
}
