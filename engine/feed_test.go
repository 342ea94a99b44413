package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/tablestore"
)

// TestStreamsShareChangeFeed: a continuous job and two streaming queries on
// one table read each of its new snapshots once between them (the table's
// change feed loads it once and serves all three), and each still gets
// every change.
func TestStreamsShareChangeFeed(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, `CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', 'write-only' = 'true')`)
	mustExec(t, s, `CREATE TABLE agg (g BIGINT NOT NULL, c BIGINT, PRIMARY KEY (g) NOT ENFORCED)`)
	mustExec(t, s, `INSERT INTO s VALUES (1, 1, 10)`)
	mustExec(t, s, `INSERT INTO agg SELECT g, count(*) FROM s /*+ OPTIONS('scan.mode'='latest-full') */ GROUP BY g`)
	job := jobCase{sources: []string{"s"}}
	id := onlyJob(t, e).ID
	waitCaughtUp(t, e, job, id)
	start := onlyJob(t, e).Positions[0]

	// The queries watch for the row of the last write.
	const writes = 20
	last := fmt.Sprint(1000 + writes - 1)
	qctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	seen := make(chan error, 2)
	for _, q := range []string{
		`SELECT k, v FROM s /*+ OPTIONS('scan.mode'='latest') */`,
		`SELECT k, g FROM s /*+ OPTIONS('scan.mode'='latest') */ WHERE k >= 1000`,
	} {
		st, err := s.Prepare(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		op, err := st.Query(qctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		// Opened here, so the stream starts before the writes.
		if err := op.Open(qctx); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b, err := op.Next(qctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						seen <- fmt.Errorf("%s: %w", q, err)
					}
					return
				}
				for i := range int(b.NumRows()) {
					if b.Column(1).(*array.Int64).ValueStr(i) == last {
						seen <- nil
					}
				}
			}
		}()
	}
	for i := range writes {
		mustExec(t, s, fmt.Sprintf(`INSERT INTO s VALUES (%d, %d, %d), (%d, %d, 0)`, rng.IntN(50), rng.IntN(5), rng.IntN(100), 1000+i, rng.IntN(5)))
	}
	for range 2 {
		select {
		case err := <-seen:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a streaming query did not get the last write")
		}
	}
	caught := waitCaughtUp(t, e, job, id)
	tbl, err := e.Store().Table(ctx, tablestore.Ident{Database: "default", Table: "s"})
	if err != nil {
		t.Fatal(err)
	}
	st := tbl.ChangeFeedStats()
	stop()
	wg.Wait()
	n := caught.Positions[0] - start // snapshots every stream read
	t.Logf("%d snapshots after the start: feed %+v", n, st)
	// write-only: no compaction snapshot arrives after the last write.
	if n != writes || st.Loads != n || st.Shared != 3*n || st.Missed != 0 {
		t.Fatalf("3 streams over %d snapshots: feed %+v, want each snapshot loaded once and shared 3 times", n, st)
	}
	got := rowSet(t, s, `SELECT g, c FROM agg`)
	want := rowSet(t, s, fmt.Sprintf(`SELECT g, count(*) FROM s /*+ OPTIONS('scan.snapshot-id'='%d') */ GROUP BY g`, caught.Positions[0]))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("job sink %v, want %v", got, want)
	}
}
