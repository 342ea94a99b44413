package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Concurrent sorts, each under its statement budget (so none spills on
// its own) but together far past the memory limit, stay within the query
// pool: every answer is whole and in order, and flightd's peak RSS stays
// under poolRSSBound. Without the pool (-query-pool 0, as before it
// existed) the same run passes the bound: FLIGHTD_POOL_COMPARE=1 runs it
// too and checks that it does.
func TestConcurrentSortsStayInPool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	peak := concurrentSorts(t, poolMiB<<20)
	bound := poolRSSBound()
	t.Logf("with a %d MiB pool: peak RSS %d MiB (bound %d MiB)", poolMiB, peak>>20, bound>>20)
	if peak > bound {
		t.Fatalf("flightd's peak RSS %d MiB passed %d MiB (%d x the %d MiB pool + %d MiB)", peak>>20, bound>>20, poolRSSTimes, poolMiB, poolRSSAllowanceMiB)
	}
	if os.Getenv("FLIGHTD_POOL_COMPARE") == "" {
		return
	}
	peak = concurrentSorts(t, 0)
	t.Logf("without a pool: peak RSS %d MiB (bound %d MiB)", peak>>20, bound>>20)
	if peak <= bound {
		t.Fatalf("without a pool the peak RSS %d MiB stayed within the bound %d MiB: the test cannot tell", peak>>20, bound>>20)
	}
}

// The scenario: sortClients clients each sort sortRows rows of about 45
// bytes (a 30-byte string and a BIGINT) by the string against a 256 MiB
// memory limit (statement budget 64 MiB: a sort holds about 40 MiB of rows
// and keys, so none spills on its own budget; together they need six
// times that, and twice it when each concatenates what it holds).
const (
	sortClients         = 4
	sortRows            = 600_000
	poolMiB             = 32
	poolRSSTimes        = 2
	poolRSSAllowanceMiB = 160 // the runtime, gRPC buffers, batches in flight, GC slack
)

func poolRSSBound() int64 { return (poolRSSTimes*poolMiB + poolRSSAllowanceMiB) << 20 }

// concurrentSorts runs the scenario against a fresh flightd with the given
// pool (0: none) and returns its peak RSS (VmHWM) in bytes.
func concurrentSorts(t *testing.T, pool int64) int64 {
	bin, dir := buildFlightd(t), t.TempDir()
	flags := []string{"-memory-limit", "256MiB", "-query-memory", "128MiB", "-query-pool", fmt.Sprint(pool), "-cache-memory", "0"}
	p := start(t, bin, dir, flags...)
	cnxn, closeConn := p.connect(t)
	var digits []string
	for i := range 100 {
		digits = append(digits, fmt.Sprintf("(%d)", i))
	}
	for _, q := range []string{
		"CREATE TABLE d (x BIGINT)",
		"INSERT INTO d VALUES " + strings.Join(digits, ","),
		"CREATE TABLE big (k BIGINT, s STRING)",
	} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Unique strings in an order unrelated to k's.
	ins := fmt.Sprintf(`INSERT INTO big SELECT k, CONCAT(CAST((k * 7919) %% 1000003 AS STRING), '-', CAST(k AS STRING), '-padding-to-30')
		FROM (SELECT a.x * 10000 + b.x * 100 + c.x AS k FROM d a CROSS JOIN d b CROSS JOIN d c WHERE a.x < %d) t`, sortRows/10000)
	if err := execSQL(cnxn, ins); err != nil {
		t.Fatal(err)
	}
	closeConn()
	// A new process, so that the peak is the sorts', not the ingest's.
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
	p = start(t, bin, dir, flags...)
	defer func() {
		if err := p.terminate(t); err != nil {
			t.Error(err)
		}
	}()
	started := time.Now()
	var wg sync.WaitGroup
	for c := range sortClients {
		wg.Go(func() {
			cn, closeC := p.connect(t)
			defer closeC()
			var n, sum int64
			var last string
			err := query(cn, "SELECT k, s FROM big ORDER BY s DESC", func(b arrow.RecordBatch) {
				ks, ss := b.Column(0).(*array.Int64), b.Column(1).(*array.String)
				for r := range int(b.NumRows()) {
					s := ss.Value(r)
					if n > 0 && s >= last {
						t.Errorf("client %d: row %d %q after %q: not in descending order", c, n, s, last)
					}
					last = s
					sum += ks.Value(r)
					n++
				}
			})
			if err != nil {
				t.Errorf("client %d: %v", c, err)
			}
			if want := int64(sortRows); n != want || sum != want*(want-1)/2 {
				t.Errorf("client %d: %d rows summing to %d, want %d summing to %d", c, n, sum, want, want*(want-1)/2)
			}
		})
	}
	wg.Wait()
	hwm := procStatus(p.cmd.Process.Pid, "VmHWM")
	kb, err := strconv.ParseInt(strings.TrimSuffix(hwm, " kB"), 10, 64)
	if err != nil {
		t.Fatalf("VmHWM %q: %v", hwm, err)
	}
	t.Logf("pool %d MiB: %d sorts of %d rows in %v, peak RSS %d MiB", pool>>20, sortClients, sortRows, time.Since(started).Round(time.Millisecond), kb>>10)
	return kb << 10
}
