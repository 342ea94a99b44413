package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/hostile"
)

// TestShutdownStopsStalledCalls: a call that never ends (here a DoPut
// whose client sent a batch and then nothing, neither more data nor the
// end of the stream) no longer holds a SIGTERMed flightd forever: after
// -shutdown-grace and -shutdown-timeout its connection is closed and the
// process exits cleanly, committed rows kept and the stalled ingest's
// rows not committed.
func TestShutdownStopsStalledCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin, dir := buildFlightd(t), t.TempDir()
	flags := []string{"-addr", "127.0.0.1:32417", "-memory-limit", "2GiB", "-shutdown-grace", "300ms", "-shutdown-timeout", "300ms"}
	p := start(t, bin, dir, flags...)
	cnxn, closeConn := p.connect(t)
	for _, q := range []string{`CREATE TABLE h (s STRING, i BIGINT)`, `INSERT INTO h VALUES ('kept', 7)`} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	closeConn()

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cl := p.flightClient(t)
	b := hostile.Batch(mem, false)
	msgs, err := hostile.Messages(b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	msgs[0].FlightDescriptor = hostile.IngestDescriptor("h")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := cl.DoPut(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs[:2] { // the schema and the batch, not the end
		if err := stream.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // the server is in the call

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termed := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
		t.Logf("exited %v after SIGTERM", time.Since(termed))
	case <-time.After(15 * time.Second):
		t.Fatal("flightd still running 15s after SIGTERM, held by a stalled DoPut")
	}
	if _, err := stream.Recv(); err == nil {
		t.Error("the stalled DoPut got an answer from a server that stopped it")
	}

	p = start(t, bin, dir, flags...)
	cnxn, closeConn = p.connect(t)
	got := rowsOf(t, cnxn, `SELECT s, i FROM h`, ",")
	closeConn()
	if len(got) != 1 || got[0] != "kept,7" {
		t.Errorf("rows after the forced stop: %v, want [kept,7]", got)
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("flightd did not exit cleanly on SIGTERM: %v", err)
	}
}
