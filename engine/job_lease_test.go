package engine_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

// stallingFS stalls every file created in the lease directory while a
// gate is set, as a store that stops answering does.
type stallingFS struct {
	tablestore.FS
	gate atomic.Pointer[chan struct{}]
}

func (f *stallingFS) Create(name string) (tablestore.File, error) {
	if g := f.gate.Load(); g != nil && strings.Contains(name, "/_leases/") {
		<-*g
	}
	return f.FS.Create(name)
}

// TestJobStopsWhileRenewalHangs: a node whose lease renewal hangs must
// stop its job by the renewal deadline (half the lease), before another
// node may take the lease, not when the hung call returns.
func TestJobStopsWhileRenewalHangs(t *testing.T) {
	fsys := &stallingFS{FS: tablestore.NewLocalFS()}
	const lease = 400 * time.Millisecond
	e := newEngineWith(t, engine.Config{FS: fsys, JobLease: lease, JobCheckpointInterval: 20 * time.Millisecond})
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

	gate := make(chan struct{})
	fsys.gate.Store(&gate)
	released := false
	release := func() {
		if !released {
			released = true
			fsys.gate.Store(nil)
			close(gate)
		}
	}
	defer release()
	// A renewal starts within a quarter lease and hangs; the run must have
	// stopped half a lease after the last renewal.
	time.Sleep(lease)
	mustExec(t, s, `INSERT INTO s VALUES (2, 2)`)
	time.Sleep(5 * lease)
	if got := rowSet(t, s, `SELECT k, v FROM t`); !slices.Equal(got, []string{"1|1"}) {
		t.Fatalf("the job wrote its sink after its lease deadline passed: %v", got)
	}
	// The store answers again: the node takes the lease back and catches up.
	release()
	waitSink("1|1", "2|2")
	if jobs := e.Jobs(context.Background()); len(jobs) != 1 || jobs[0].State != engine.JobRunning {
		t.Fatalf("jobs: %+v", jobs)
	}
}
