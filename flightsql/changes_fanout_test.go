package flightsql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding/gzip"

	"github.com/flightd/flightd/flightsql"
)

// fanReader is one client of TestChangeStreamFanout.
type fanReader struct {
	name    string
	tk      flightsql.ChangesTicket
	keep    func(k int64) bool // the ticket's filter
	keyOnly bool               // the ticket projects k only
	slow    bool               // sleeps at every batch
	stalled bool               // reads nothing until the others are done
	cancel  bool               // cancels once and resumes after its last marker
	resumed bool
	cl      *arrowflightsql.Client
	mem     *memory.CheckedAllocator

	img keyedImage
	log []string // "snapshot kind row" of every change, in order
}

// TestChangeStreamFanout: many Flight clients follow one table's change
// stream while a writer upserts, updates and deletes at random (seed
// printed). Plain readers share the table store's read of each snapshot
// and, on the server, the encoding of each message; others project or
// filter; one is slow; one reads nothing until every other reader has
// received the whole changelog (so it cannot hold them back); one cancels
// at a random marker and resumes from the next snapshot. Every reader's
// applied changelog must equal the writer's model of the table (checked
// against the batch answer), with its projection and filter, and every
// plain reader must have received the same changes in the same order.
// Server and clients use checked allocators.
func TestChangeStreamFanout(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	ts, cnxn, _ := streamServer(t,
		"CREATE TABLE t (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	all := func(int64) bool { return true }
	plain := flightsql.ChangesTicket{Table: "t", Mode: "latest", HeartbeatMillis: 20}
	var readers []*fanReader
	for i := range 6 {
		readers = append(readers, &fanReader{name: fmt.Sprintf("plain%d", i), tk: plain, keep: all})
	}
	projected := plain
	projected.Columns = []string{"k"}
	filtered := plain
	filtered.Filter = "k < 20"
	readers = append(readers,
		&fanReader{name: "slow", tk: plain, keep: all, slow: true},
		&fanReader{name: "stalled", tk: plain, keep: all, stalled: true},
		&fanReader{name: "cancelled", tk: plain, keep: all, cancel: true},
		&fanReader{name: "projected", tk: projected, keep: all, keyOnly: true},
		&fanReader{name: "filtered", tk: filtered, keep: func(k int64) bool { return k < 20 }},
	)
	open := func(ctx context.Context, r *fanReader, tk flightsql.ChangesTicket) *flight.Reader {
		body, _ := json.Marshal(tk)
		s, err := r.cl.Client.DoGet(ctx, &flight.Ticket{Ticket: append([]byte(flightsql.ChangesTicketPrefix), body...)})
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := flight.NewRecordReader(s, ipc.WithAllocator(r.mem))
		if err != nil {
			t.Fatal(err)
		}
		return rdr
	}
	// The sentinel key, written last: a reader is done at the marker
	// after it.
	const sentinel = -1
	done := make(chan struct{}) // closed when every reader but the stalled one is done
	var othersDone sync.WaitGroup
	errs := make(chan error, len(readers))
	var wg sync.WaitGroup
	for i, r := range readers {
		r.cl, r.mem = ts.rawClient(t)
		r.img = keyedImage{}
		rctx, rcancel := context.WithCancel(ctx)
		rdr := open(rctx, r, r.tk)
		// Started (caught up) before the writer begins, so every plain
		// reader's changelog starts at the same snapshot.
		if !rdr.Next() {
			t.Fatalf("%s: %v", r.name, rdr.Err())
		}
		if !r.stalled {
			othersDone.Add(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { rcancel() }()
			rrng := rand.New(rand.NewPCG(uint64(seed), uint64(i+1)))
			cancelAt := int64(2 + rrng.IntN(10))
			errs <- r.follow(ctx, rdr, rrng, cancelAt, sentinel, func(next int64) *flight.Reader {
				rcancel()
				var c context.Context
				c, rcancel = context.WithCancel(ctx)
				tk := r.tk
				tk.Mode, tk.SnapshotID = "from-snapshot", next
				return open(c, r, tk)
			}, done, &othersDone)
		}()
	}

	model := map[int64]int64{}
	for range 40 {
		switch op := rng.IntN(10); {
		case op < 6:
			var vals []string
			for range 1 + rng.IntN(8) {
				k, v := rng.Int64N(40), rng.Int64N(1000)
				vals = append(vals, fmt.Sprintf("(%d, %d)", k, v))
				model[k] = v
			}
			mustExec(t, cnxn, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
		case op < 8:
			k := rng.Int64N(40)
			mustExec(t, cnxn, fmt.Sprintf("DELETE FROM t WHERE k = %d", k))
			delete(model, k)
		default:
			lo := rng.Int64N(40)
			mustExec(t, cnxn, fmt.Sprintf("UPDATE t SET v = v + 1 WHERE k BETWEEN %d AND %d", lo, lo+5))
			for k := range model {
				if k >= lo && k <= lo+5 {
					model[k]++
				}
			}
		}
	}
	mustExec(t, cnxn, fmt.Sprintf("INSERT INTO t VALUES (%d, 0)", sentinel))
	model[sentinel] = 0
	var want []string
	for k, v := range model {
		want = append(want, fmt.Sprintf("%d|%d", k, v))
	}
	slices.Sort(want)
	if got := tableRows(t, query(t, cnxn, "SELECT k, v FROM t")); !slices.Equal(got, want) {
		t.Fatalf("the model is wrong: table %v, model %v", got, want)
	}
	othersDone.Wait()
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var ref *fanReader
	for _, r := range readers {
		var exp []string
		for k, v := range model {
			switch {
			case !r.keep(k):
			case r.keyOnly:
				exp = append(exp, fmt.Sprint(k))
			default:
				exp = append(exp, fmt.Sprintf("%d|%d", k, v))
			}
		}
		slices.Sort(exp)
		if got := r.img.rows(); !slices.Equal(got, exp) {
			t.Errorf("%s applied\n%v\nwant\n%v", r.name, got, exp)
		}
		if r.tk.Filter != "" || r.keyOnly || r.cancel {
			continue
		}
		if ref == nil {
			ref = r
		} else if !slices.Equal(r.log, ref.log) {
			t.Errorf("%s received\n%v\nbut %s\n%v", r.name, r.log, ref.name, ref.log)
		}
	}
}

// follow applies the stream until the marker after the sentinel key. A
// stalled reader waits for done first; a cancelling one reopens at the
// snapshot after its cancelAt-th marker with reopen.
func (r *fanReader) follow(ctx context.Context, rdr *flight.Reader, rng *rand.Rand, cancelAt int64, sentinel int64, reopen func(next int64) *flight.Reader, done <-chan struct{}, othersDone *sync.WaitGroup) error {
	defer func() { rdr.Release() }()
	if r.stalled {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		defer othersDone.Done()
	}
	sawSentinel := false
	markers := int64(0)
	// The progress contract: a marker at N says every change up to N was
	// sent, so later rows are of later snapshots, and labels never go back.
	lastMarker, lastRows := int64(-1), int64(-1)
	for rdr.Next() {
		meta, err := flightsql.ParseChangeProgress(rdr.LatestAppMetadata())
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		b := rdr.RecordBatch()
		if b.NumRows() == 0 {
			if !meta.CaughtUp {
				continue
			}
			if meta.Snapshot < lastMarker || meta.Snapshot < lastRows {
				return fmt.Errorf("%s: marker at %d after a marker at %d and rows of %d", r.name, meta.Snapshot, lastMarker, lastRows)
			}
			lastMarker = meta.Snapshot
			if sawSentinel {
				return nil
			}
			if markers++; r.cancel && !r.resumed && markers == cancelAt {
				r.resumed = true
				rdr.Release()
				rdr = reopen(meta.Snapshot + 1)
			}
			continue
		}
		if meta.Snapshot <= lastMarker || meta.Snapshot < lastRows {
			return fmt.Errorf("%s: rows of %d after a marker at %d and rows of %d", r.name, meta.Snapshot, lastMarker, lastRows)
		}
		lastRows = meta.Snapshot
		for _, row := range batchRows(b) {
			kind, key := row[0], row[1]
			switch kind {
			case "+I", "+U":
				r.img[key] = strings.Join(row[1:], "|")
			case "-U", "-D":
				delete(r.img, key)
			default:
				return fmt.Errorf("%s: row kind %q", r.name, kind)
			}
			r.log = append(r.log, fmt.Sprint(meta.Snapshot, " ", strings.Join(row, " ")))
			sawSentinel = sawSentinel || key == fmt.Sprint(sentinel)
		}
		if r.slow {
			time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
		}
	}
	return fmt.Errorf("%s: stream ended before the sentinel: %v", r.name, rdr.Err())
}

// TestChangeStreamGRPCCompression: a message encoded for a stream whose
// client asked for gRPC compression (gzip, registered in this test binary)
// carries that compression, so a stream without it must not be sent the
// same bytes (its client refuses a compressed message it did not ask
// for). Readers of one table with and without gzip follow the same
// commits; each must receive every row.
func TestChangeStreamGRPCCompression(t *testing.T) {
	ts, cnxn, _ := streamServer(t,
		"CREATE TABLE t (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')")
	mustExec(t, cnxn, "INSERT INTO t VALUES (-1, 0)")
	const commits = 20
	tk := flightsql.ChangesTicket{Table: "t", Mode: "latest", HeartbeatMillis: 5}
	body, _ := json.Marshal(tk)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		var opts []grpc.CallOption
		if i%2 == 0 {
			opts = append(opts, grpc.UseCompressor(gzip.Name))
		}
		cl, mem := ts.rawClient(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := cl.Client.DoGet(ctx, &flight.Ticket{Ticket: append([]byte(flightsql.ChangesTicketPrefix), body...)}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := flight.NewRecordReader(s, ipc.WithAllocator(mem))
		if err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
		// Started (caught up) before the commits.
		if !rdr.Next() || rdr.RecordBatch().NumRows() != 0 {
			t.Fatalf("reader %d: no first marker: %v", i, rdr.Err())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rdr.Release()
			defer cancel()
			rows := 0
			for rows < commits && rdr.Next() {
				rows += int(rdr.RecordBatch().NumRows())
			}
			if rows != commits {
				errs <- fmt.Errorf("reader %d (gzip %v): %d rows, want %d: %v", i, i%2 == 0, rows, commits, rdr.Err())
			}
		}()
	}
	for c := range commits {
		mustExec(t, cnxn, fmt.Sprintf("INSERT INTO t VALUES (%d, %d)", c, c))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
