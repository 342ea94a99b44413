package main

import (
	"fmt"
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
// within poolRSSBound, a quarter past its soft memory limit (Go's collector
// may pass the limit by a little when the machine starves it of CPU: 263
// MiB against 256 in a CI race pass). Without the pool (-query-pool 0, as
// before it existed) the same sorts pass the bound by far (400-408 MiB
// measured), which the second run checks so that the test can tell.
func TestConcurrentSortsStayInPool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	peak := concurrentSorts(t, poolMiB<<20)
	t.Logf("with a %d MiB pool: peak RSS %d MiB (bound %d MiB)", poolMiB, peak>>20, poolRSSBound>>20)
	if peak > poolRSSBound {
		t.Fatalf("flightd's peak RSS %d MiB passed %d MiB (its memory limit %d MiB and a quarter)", peak>>20, poolRSSBound>>20, sortMemoryLimitMiB)
	}
	peak = concurrentSorts(t, 0)
	t.Logf("without a pool: peak RSS %d MiB (bound %d MiB)", peak>>20, poolRSSBound>>20)
	if peak <= poolRSSBound {
		t.Fatalf("without a pool the peak RSS %d MiB stayed within the bound %d MiB: the test cannot tell", peak>>20, poolRSSBound>>20)
	}
}

// The scenario: sortClients clients each sort sortRows rows of about 45
// bytes (a 30-byte string and a BIGINT) by the string against a 256 MiB
// memory limit (statement budget 128 MiB: a sort holds about 70 MiB of
// rows and keys, so none spills on its own budget; together they hold
// about 280 MiB, past the limit and nine times the 32 MiB pool, and twice
// that when each concatenates what it holds).
const (
	sortClients        = 4
	sortRows           = 1_000_000
	poolMiB            = 32
	sortMemoryLimitMiB = 256
	poolRSSBound       = sortMemoryLimitMiB << 20 * 5 / 4
)

// concurrentSorts runs the scenario against a fresh flightd with the given
// pool (0: none) and returns its peak RSS (VmHWM) in bytes.
func concurrentSorts(t *testing.T, pool int64) int64 {
	bin, dir := buildFlightd(t), t.TempDir()
	flags := []string{"-memory-limit", fmt.Sprintf("%dMiB", sortMemoryLimitMiB), "-query-memory", "128MiB", "-query-pool", fmt.Sprint(pool), "-cache-memory", "0"}
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
