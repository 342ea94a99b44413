package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/flightsql"
)

// resumingConsumer follows the change stream of table across server
// restarts the way the docs tell clients to: it applies a snapshot once it
// has all of it, commits the consumer position after applying, and on
// reconnecting skips snapshots it already applied. Its image is what the
// changes built: decode reads row i of a batch as a change C, and apply
// applies one to the image, failing with "consumer invariant" when it
// cannot apply (a change lost or applied twice).
type resumingConsumer[K comparable, V comparable, C any] struct {
	table    string
	decode   func(b arrow.RecordBatch, i int) C
	apply    func(image map[K]V, ch C, snapshot int64) error
	addr     atomic.Pointer[string]
	mu       sync.Mutex
	image    map[K]V
	applied  int64 // last snapshot applied in full
	commits  atomic.Int64
	restarts atomic.Int64
	err      error
}

func (c *resumingConsumer[K, V, C]) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := c.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil && strings.Contains(err.Error(), "consumer invariant") {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		c.restarts.Add(1)
		time.Sleep(50 * time.Millisecond)
	}
}

// follow reads one connection's stream until it fails.
func (c *resumingConsumer[K, V, C]) follow(ctx context.Context) error {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cl, err := arrowflightsql.NewClient(*c.addr.Load(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cl.Close()
	body, _ := json.Marshal(flightsql.ChangesTicket{Table: c.table, Mode: "latest-full", ConsumerID: "c1", HeartbeatMillis: 50, DiscoveryInterval: 50})
	s, err := cl.Client.DoGet(ctx, &flight.Ticket{Ticket: append([]byte(flightsql.ChangesTicketPrefix), body...)})
	if err != nil {
		return err
	}
	rdr, err := flight.NewRecordReader(s, ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	defer func() {
		rdr.Release()
		if mem.CurrentAlloc() != 0 {
			c.mu.Lock()
			c.err = fmt.Errorf("consumer invariant: %d bytes of the stream's batches not released", mem.CurrentAlloc())
			c.mu.Unlock()
		}
	}()
	var pending []C // changes of snapshot pendingAt
	var pendingAt int64
	apply := func(upTo int64) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if pendingAt == 0 || pendingAt > upTo {
			return nil
		}
		for _, ch := range pending {
			if err := c.apply(c.image, ch, pendingAt); err != nil {
				return err
			}
		}
		c.applied = pendingAt
		pending, pendingAt = nil, 0
		return nil
	}
	commit := func() {
		c.mu.Lock()
		next := c.applied + 1
		c.mu.Unlock()
		req, _ := json.Marshal(flightsql.CommitConsumerRequest{Table: c.table, ConsumerID: "c1", NextSnapshot: next})
		if _, err := cl.Client.DoAction(ctx, &flight.Action{Type: flightsql.CommitConsumerAction, Body: req}); err == nil {
			c.commits.Add(1)
		}
	}
	for rdr.Next() {
		meta, err := flightsql.ParseChangeProgress(rdr.LatestAppMetadata())
		if err != nil {
			return fmt.Errorf("consumer invariant: %w", err)
		}
		if meta.Image == flightsql.ImageStart {
			// A full read (no position committed yet): it replaces the state.
			c.mu.Lock()
			clear(c.image)
			c.applied = 0
			c.mu.Unlock()
			pending, pendingAt = nil, 0
			continue
		}
		c.mu.Lock()
		done := meta.Snapshot <= c.applied
		c.mu.Unlock()
		if done {
			continue // applied before a restart: the position lags what was applied
		}
		if pendingAt > 0 && meta.Snapshot > pendingAt {
			if err := apply(pendingAt); err != nil {
				return err
			}
			commit()
		}
		if meta.CaughtUp || meta.Image == flightsql.ImageEnd {
			if err := apply(meta.Snapshot); err != nil {
				return err
			}
			commit()
			continue
		}
		b := rdr.RecordBatch()
		for i := range int(b.NumRows()) {
			pending = append(pending, c.decode(b, i))
		}
		pendingAt = meta.Snapshot
	}
	return rdr.Err()
}

// awaitCommits waits, 20 s at most, until the consumer has committed n
// more positions.
func (c *resumingConsumer[K, V, C]) awaitCommits(n int64) {
	before := c.commits.Load()
	deadline := time.Now().Add(20 * time.Second)
	for c.commits.Load() < before+n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitImage waits, 60 s at most, until the consumer's image is want; it
// fails when the consumer broke an invariant or the time ran out.
func (c *resumingConsumer[K, V, C]) awaitImage(want map[K]V) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		c.mu.Lock()
		got, err := maps.Clone(c.image), c.err
		c.mu.Unlock()
		if err != nil {
			return err
		}
		if maps.Equal(got, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("consumer image (%d keys) differs from the table (%d keys): missing %v, extra %v",
				len(got), len(want), diffKeys(want, got), diffKeys(got, want))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// appendConsumer follows an append table t (x BIGINT): its image is the
// multiset of rows, and a -D must find its row.
func appendConsumer() *resumingConsumer[int64, int, appendChange] {
	return &resumingConsumer[int64, int, appendChange]{
		table: "t",
		image: map[int64]int{},
		decode: func(b arrow.RecordBatch, i int) appendChange {
			return appendChange{b.Column(0).(*array.String).Value(i), b.Column(1).(*array.Int64).Value(i)}
		},
		apply: func(image map[int64]int, ch appendChange, snapshot int64) error {
			switch ch.kind {
			case "+I":
				image[ch.x]++
			case "-D":
				if image[ch.x] == 0 {
					return fmt.Errorf("consumer invariant: -D of %d, which is not there (snapshot %d)", ch.x, snapshot)
				}
				if image[ch.x]--; image[ch.x] == 0 {
					delete(image, ch.x)
				}
			default:
				return fmt.Errorf("consumer invariant: row kind %q", ch.kind)
			}
			return nil
		},
	}
}

type appendChange struct {
	kind string
	x    int64
}

// TestKill9ChangeStreamResumes kills a real flightd with SIGKILL while a
// writer inserts and deletes and a consumer streams the table's changes;
// the consumer resumes by consumer id after each restart and must end with
// exactly the table's rows: nothing lost, nothing applied twice.
func TestKill9ChangeStreamResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := buildFlightd(t)
	dir := t.TempDir()
	p := start(t, bin, dir)
	cnxn, closeConn := p.connect(t)
	if err := execSQL(cnxn, `CREATE TABLE t (x BIGINT)`); err != nil {
		t.Fatal(err)
	}
	closeConn()
	c := appendConsumer()
	c.addr.Store(&p.addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.run(ctx) }()

	var next atomic.Int64
	for round := 0; round < 3; round++ {
		cnxn, closeConn := p.connect(t)
		stop := make(chan struct{})
		writerDone := make(chan struct{})
		go func() {
			defer close(writerDone)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var q string
				if i%10 == 9 {
					q = fmt.Sprintf(`DELETE FROM t WHERE x %% 7 = %d`, i%7)
				} else {
					var vals []string
					for range 5 {
						vals = append(vals, fmt.Sprintf("(%d)", next.Add(1)))
					}
					q = `INSERT INTO t VALUES ` + strings.Join(vals, ", ")
				}
				if err := execSQL(cnxn, q); err != nil {
					return // killed under us
				}
			}
		}()
		// Kill once the consumer has committed a position in this round.
		c.awaitCommits(3)
		time.Sleep(150 * time.Millisecond)
		p.kill(t)
		<-writerDone
		close(stop)
		_ = p.cmd.Wait()
		closeConn()
		p = start(t, bin, dir)
		c.addr.Store(&p.addr)
	}
	// A last row marks the end; the consumer must reach it.
	cnxn, closeConn = p.connect(t)
	defer closeConn()
	if err := execSQL(cnxn, `INSERT INTO t VALUES (-1)`); err != nil {
		t.Fatal(err)
	}
	want := map[int64]int{}
	for x := range ids(t, cnxn, `SELECT x FROM t`) {
		want[x]++
	}
	if err := c.awaitImage(want); err != nil {
		t.Fatal(err)
	}
	t.Logf("consumer followed %d rows over 3 kill -9 restarts (%d reconnects, %d commits)", len(want), c.restarts.Load(), c.commits.Load())
	// SIGTERM with the stream still open: flightd ends it at once instead
	// of waiting out the 30 s -shutdown-grace.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("flightd did not exit cleanly on SIGTERM with a stream open: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("flightd still running 10 s after SIGTERM with a change stream open")
	}
	cancel()
	wg.Wait()
}

func diffKeys[K, V comparable](a, b map[K]V) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%v: %v/%v", k, v, b[k]))
		}
	}
	slices.Sort(out)
	if len(out) > 10 {
		out = out[:10]
	}
	return out
}
