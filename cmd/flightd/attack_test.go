package main

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/internal/hostile"
)

// TestAttacksLeaveServerUp sends each request that killed flightd (issue
// 10) to the real binary over loopback and checks after each that the
// process still runs and answers queries, and that the request got a
// client error. The byte limit is set by flag, below the 4.5 MB IN list, and
// the query memory well under the machine's (a grouped ARRAY_AGG is refused
// at twice it). Last, a chain of views that doubles its expansion per view.
func TestAttacksLeaveServerUp(t *testing.T) {
	p := start(t, buildFlightd(t), t.TempDir(), "-max-statement-bytes", "4000000", "-query-memory", "256MiB")
	exited := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(exited)
	}()
	cnxn, done := p.connect(t)
	defer done()
	if err := execSQL(cnxn, "CREATE TABLE t (k BIGINT)"); err != nil {
		t.Fatal(err)
	}
	if err := execSQL(cnxn, "INSERT INTO t VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	alive := func(what string) {
		t.Helper()
		select {
		case <-exited:
			t.Fatalf("flightd exited after %s", what)
		default:
		}
		if got := ids(t, cnxn, "SELECT k FROM t"); len(got) != 2 {
			t.Fatalf("after %s: rows %v", what, got)
		}
	}

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cl := p.flightClient(t)
	puts, err := hostile.Puts(mem, "h")
	if err != nil {
		t.Fatal(err)
	}
	for _, put := range puts {
		if err := hostile.SendPut(cl, put.Msgs); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", put.Name, err)
		}
		alive(put.Name)
	}
	for _, st := range hostile.Statements() {
		if err := query(cnxn, st.SQL, func(arrow.RecordBatch) {}); err == nil || !strings.Contains(err.Error(), "SQLSTATE "+st.SQLState) {
			t.Errorf("%s: want SQLSTATE %s, got %v", st.Name, st.SQLState, err)
		}
		alive(st.Name)
	}
	setup, last := hostile.ViewChain()
	for _, s := range setup {
		if err := execSQL(cnxn, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := execSQL(cnxn, last.SQL); err == nil || !strings.Contains(err.Error(), "SQLSTATE "+last.SQLState) {
		t.Errorf("%s: want SQLSTATE %s, got %v", last.Name, last.SQLState, err)
	}
	alive(last.Name)
}

// flightClient is a raw Flight client of the server, closed when the test
// ends.
func (p *process) flightClient(t *testing.T) flight.Client {
	t.Helper()
	cl, err := flight.NewClientWithMiddleware(p.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}
