package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// The default memory limit is 3/4 of what the machine (or cgroup) has.
func TestDefaultMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // restore the test binary's
	m := machineMemory()
	if m <= 0 {
		t.Skip("machine memory unknown here")
	}
	for _, auto := range []sizeFlag{{auto: true}, {bytes: 0}} {
		if got := memoryLimit(auto); got != m/4*3 || debug.SetMemoryLimit(-1) != got {
			t.Fatalf("default limit %d (runtime %d), machine %d", got, debug.SetMemoryLimit(-1), m)
		}
	}
	if got := memoryLimit(sizeFlag{bytes: 123 << 20}); got != 123<<20 || debug.SetMemoryLimit(-1) != 123<<20 {
		t.Fatalf("explicit limit: %d", got)
	}
}

// GOGC is the flag's, else the environment's as the runtime read it,
// else 200.
func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100)) // restore the test binary's
	for _, c := range []struct {
		flag    int
		env     string
		runtime int // as the runtime read $GOGC at start
		want    int
	}{
		{0, "", 100, defaultGCPercent},
		{0, "150", 150, 150},
		{0, "off", -1, -1},
		{300, "150", 150, 300},
		{-1, "", 100, -1},
	} {
		debug.SetGCPercent(c.runtime)
		got := gcPercent(c.flag, c.env)
		if now := debug.SetGCPercent(100); got != c.want || now != c.want {
			t.Fatalf("flag %d, GOGC %q: gcPercent %d, runtime %d, want %d", c.flag, c.env, got, now, c.want)
		}
	}
}

// The cache and statement budgets derive from the memory limit unless given.
func TestDerivedMemoryDefaults(t *testing.T) {
	auto := sizeFlag{auto: true}
	for _, tc := range []struct {
		flag                       sizeFlag
		limit                      int64
		query, cache, pool, lookup int64
	}{
		{auto, 18 << 30, 18 << 30 / 4, 6 << 30, 9 << 30, 18 << 30 / 8},
		{auto, 0, 1 << 30, 1 << 30, 0, 1 << 30},                        // no limit known: no pool
		{auto, 128 << 20, 64 << 20, 128 << 20 / 3, 64 << 20, 64 << 20}, // the floors
		{sizeFlag{bytes: 5 << 20}, 18 << 30, 5 << 20, 5 << 20, 5 << 20, 5 << 20},
		{sizeFlag{bytes: -1}, 18 << 30, -1, -1, 0, -1},
	} {
		if got := queryPool(tc.flag, tc.limit); got != tc.pool {
			t.Errorf("queryPool(%v, %d) = %d, want %d", tc.flag, tc.limit, got, tc.pool)
		}
		if got := queryMemory(tc.flag, tc.limit); got != tc.query {
			t.Errorf("queryMemory(%v, %d) = %d, want %d", tc.flag, tc.limit, got, tc.query)
		}
		if got := cacheMemory(tc.flag, tc.limit); got != tc.cache {
			t.Errorf("cacheMemory(%v, %d) = %d, want %d", tc.flag, tc.limit, got, tc.cache)
		}
		if got := lookupMemory(tc.flag, tc.limit); got != tc.lookup {
			t.Errorf("lookupMemory(%v, %d) = %d, want %d", tc.flag, tc.limit, got, tc.lookup)
		}
	}
	if got := cacheMemory(sizeFlag{bytes: 0}, 18<<30); got != 0 {
		t.Errorf("-cache-memory 0 must turn the cache off, got %d", got)
	}
}

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]string{
		"auto": "auto", "AUTO": "auto", "0": "0", "-1": "-1", "6e9": "6000000000", "512MiB": "536870912",
		"2 GiB": "2147483648", "1.5GB": "1500000000", "100kb": "100000", "7B": "7",
	} {
		var f sizeFlag
		if err := f.Set(in); err != nil || f.String() != want {
			t.Errorf("Set(%q): %v, %q; want %q", in, err, f.String(), want)
		}
	}
	for _, bad := range []string{"", "lots", "1e30", "NaN", "GiB", "12XB"} {
		var f sizeFlag
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) = %v, want an error", bad, f)
		}
	}
}

// Sixteen concurrent sorts, aggregations and joins under a small process
// memory limit and statement budget: each answers or fails cleanly, and the
// server is still up and answering afterwards.
func TestHeavyQueriesUnderMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	const limit = 96 << 20
	p := start(t, bin, t.TempDir(), "-memory-limit", fmt.Sprint(limit), "-query-memory", fmt.Sprint(4<<20), "-cache-memory", "0")
	cnxn, closeConn := p.connect(t)
	var digits []string
	for i := range 20 {
		digits = append(digits, fmt.Sprintf("(%d)", i))
	}
	for _, q := range []string{
		"CREATE TABLE d (x BIGINT)",
		"INSERT INTO d VALUES " + strings.Join(digits, ","),
		"CREATE TABLE big (k BIGINT, v BIGINT, s STRING)",
		// 20^4 = 160,000 rows.
		`INSERT INTO big SELECT a.x*8000 + b.x*400 + c.x*20 + e.x, (a.x*7919 + b.x*104729 + c.x*31 + e.x*1299709) % 50021,
			CONCAT('row-', CAST(a.x*8000 + b.x*400 + c.x*20 + e.x AS STRING), '-', CAST(e.x * 37 AS STRING))
			FROM d a CROSS JOIN d b CROSS JOIN d c CROSS JOIN d e`,
	} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	closeConn()

	heavy := []string{
		"SELECT k % 80021 AS g, count(*), sum(v), max(s) FROM big GROUP BY k % 80021 ORDER BY 2 DESC, 1 LIMIT 5",
		"SELECT count(DISTINCT s), count(DISTINCT v) FROM big",
		"SELECT count(*), sum(a.k + b.k) FROM big a JOIN big b ON a.v = b.v",
		"SELECT s, v FROM big ORDER BY s DESC, v LIMIT 5 OFFSET 100000",
		"SELECT v, row_number() OVER (PARTITION BY v % 97 ORDER BY s) AS r FROM big ORDER BY r DESC, v LIMIT 5",
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			c, closeC := p.connect(t)
			defer closeC()
			_, errs[i] = queryRows(c, heavy[i%len(heavy)])
		})
	}
	wg.Wait()
	var failed int
	for i, err := range errs {
		var ae adbc.Error
		switch {
		case err == nil:
		case errors.As(err, &ae) && ae.VendorCode == int32(codes.ResourceExhausted):
			failed++
		default:
			t.Errorf("query %d (%s): %v", i, heavy[i%len(heavy)], err)
		}
	}
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("flightd is gone: %v", err)
	}
	c, closeC := p.connect(t)
	if rows, err := queryRows(c, "SELECT count(*) FROM big"); err != nil || rows[0] != "160000" {
		t.Fatalf("after the heavy queries: %v, %v", rows, err)
	}
	closeC()
	t.Logf("16 heavy queries in %v, %d ResourceExhausted; flightd peak RSS %s", time.Since(start).Round(time.Millisecond), failed, procStatus(p.cmd.Process.Pid, "VmHWM"))
}

// queryRows runs a query and renders the first column of each row.
func queryRows(cnxn adbc.Connection, q string) ([]string, error) {
	var out []string
	err := query(cnxn, q, func(b arrow.RecordBatch) {
		for r := range int(b.NumRows()) {
			out = append(out, b.Column(0).ValueStr(r))
		}
	})
	return out, err
}

// procStatus reads one field of /proc/PID/status ("" if absent).
func procStatus(pid int, field string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Query tickets are signed with the key in the data directory, created at
// the first start: they survive a restart, and a server with another key
// refuses them.
func TestTicketsSurviveRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	dir := t.TempDir()
	ctx := context.Background()
	p := start(t, bin, dir)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	client := func(p *process) *flightsql.Client {
		cl, err := flightsql.NewClient(p.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		cl.Alloc = mem
		return cl
	}
	cl := client(p)
	info, err := cl.Execute(ctx, "SELECT 42")
	if err != nil {
		t.Fatal(err)
	}
	_ = cl.Close()
	restart := func(flags ...string) *process {
		_ = p.terminate(t)
		return start(t, bin, dir, flags...)
	}
	p = restart()
	cl = client(p)
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatalf("ticket after restart: %v", err)
	}
	for rdr.Next() {
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("ticket after restart: %v", err)
	}
	rdr.Release()
	_ = cl.Close()

	p = restart("-key-file", filepath.Join(t.TempDir(), "other-key"))
	cl = client(p)
	defer cl.Close()
	rdr, err = cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("ticket on a server with another key: %v", err)
	}
}

// An auth file with an empty password stops flightd at start.
func TestEmptyPasswordRefusedAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	dir := t.TempDir()
	auth := filepath.Join(dir, "users")
	if err := os.WriteFile(auth, []byte("alice:s3cret\nbob:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data"), "-auth-file", auth).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `user "bob" has an empty password`) {
		t.Fatalf("flightd with an empty password: %v\n%s", err, out)
	}
}

// Connections may take at most half of the descriptors.
func TestDefaultMaxConnections(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	defer func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) }()
	low := lim
	low.Cur = 200
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	if got := defaultMaxConnections(); got != 100 {
		t.Fatalf("with 200 descriptors: %d connections", got)
	}
	if lim.Cur >= 8192 {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
		if got := defaultMaxConnections(); got != 4096 {
			t.Fatalf("with %d descriptors: %d connections", lim.Cur, got)
		}
	}
}

// TestPreparedMemoryDefault: -max-prepared-memory is a quarter of the
// memory limit by default, none without one, and as given otherwise
// (negative: none).
func TestPreparedMemoryDefault(t *testing.T) {
	auto := sizeFlag{auto: true}
	for _, tc := range []struct {
		flag        sizeFlag
		limit, want int64
	}{
		{auto, 8 << 30, 2 << 30},
		{auto, 0, 0},
		{sizeFlag{bytes: 100 << 20}, 8 << 30, 100 << 20},
		{sizeFlag{bytes: -1}, 8 << 30, 0},
	} {
		if got := preparedMemory(tc.flag, tc.limit); got != tc.want {
			t.Errorf("preparedMemory(%+v, %d) = %d, want %d", tc.flag, tc.limit, got, tc.want)
		}
	}
}
