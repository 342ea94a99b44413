package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/s3test"
)

// TestWarmQueryRequestsPerTable: on an object store, a warm query over
// three tables (one referenced twice) looks each table up once when it is
// bound and resolves its latest snapshot once then and once when it runs:
// at most 3 + 2 requests a table (the schema listing, the LATEST hint and
// the probe for the snapshot after it; the hint and the probe again to
// run), none for views; none at all within the metadata max age.
func TestWarmQueryRequestsPerTable(t *testing.T) {
	t.Run("max-age 0", func(t *testing.T) { testWarmQueryRequests(t, 0, 5) })
	// Within the max age the tables' schemas and snapshots are known: a
	// warm query asks the store for nothing, and still sees this engine's
	// own inserts at once.
	t.Run("max-age 1h", func(t *testing.T) { testWarmQueryRequests(t, time.Hour, 0) })
}

func testWarmQueryRequests(t *testing.T, maxAge time.Duration, maxPerTable int) {
	srv := s3test.Start(t)
	e := newEngineWith(t, engine.Config{FS: srv.FS(t, 64<<20), JobLease: time.Hour, MetadataMaxAge: maxAge}) // no job polling between queries
	s := e.NewSession()
	for _, q := range []string{
		`CREATE TABLE f (k BIGINT, d BIGINT, v BIGINT) WITH ('write-only' = 'true')`,
		`CREATE TABLE d1 (d BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (d) NOT ENFORCED) WITH ('write-only' = 'true')`,
		`CREATE TABLE d2 (d BIGINT NOT NULL, cat VARCHAR, PRIMARY KEY (d) NOT ENFORCED) WITH ('write-only' = 'true')`,
		`INSERT INTO f VALUES (1, 1, 10), (2, 2, 20), (3, 1, 30)`,
		`INSERT INTO d1 VALUES (1, 'one'), (2, 'two')`,
		`INSERT INTO d2 VALUES (1, 'x'), (2, 'y')`,
	} {
		mustExec(t, s, q)
	}
	const q = `SELECT d1.name, d2.cat, sum(f.v) FROM f JOIN d1 ON f.d = d1.d JOIN d2 ON f.d = d2.d
		WHERE f.k IN (SELECT k FROM f WHERE v > 5) GROUP BY d1.name, d2.cat`
	want := rowSet(t, s, q)
	for round := range 2 {
		rowSet(t, s, q) // reads the data files the last insert added
		// The background pass after an insert (compaction, expiry) asks
		// the store too: wait until it is quiet.
		for srv.TakeRequests() != nil {
			time.Sleep(100 * time.Millisecond)
		}
		if got := rowSet(t, s, q); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
		reqs := srv.TakeRequests()
		perTable := map[string]int{}
		for _, r := range reqs {
			if strings.Contains(r, "/_views/") {
				t.Errorf("round %d: a view lookup: %s", round, r)
			}
			for _, tbl := range []string{"/f/", "/d1/", "/d2/"} {
				if strings.Contains(r, tbl) {
					perTable[tbl]++
				}
			}
		}
		for tbl, n := range perTable {
			if n > maxPerTable {
				t.Errorf("round %d: %d requests for table %s, want at most %d: %q", round, n, tbl, maxPerTable, reqs)
			}
		}
		t.Logf("round %d: %d requests: %v", round, len(reqs), perTable)
		mustExec(t, s, fmt.Sprintf(`INSERT INTO f VALUES (%d, 2, 1)`, 10+round)) // not in q's result: v <= 5
		if got := rows(t, s, `SELECT count(*) FROM f`); got[0][0] != fmt.Sprint(4+round) {
			t.Fatalf("round %d: %v rows in f after this engine's insert, want %d", round, got, 4+round)
		}
	}
}

// TestQueryReadsOneSnapshotPerTable: a query referencing a table twice
// reads one snapshot of it, while another session inserts rows
// concurrently: the difference of two counts of the table is always 0. A
// prepared query executed after an insert sees the insert.
func TestQueryReadsOneSnapshotPerTable(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, `CREATE TABLE f (k BIGINT)`)
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		w := e.NewSession()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := exec(ctx, w, nil, fmt.Sprintf(`INSERT INTO f VALUES (%d)`, i)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	const q = `SELECT (SELECT count(*) FROM f) - (SELECT count(*) FROM f WHERE k >= 0)`
	for i := range 100 + rng.IntN(100) {
		if got := rows(t, s, q); len(got) != 1 || got[0][0] != "0" {
			close(stop)
			wg.Wait()
			t.Fatalf("seed %d: query %d: two counts of f differ by %v", seed, i, got)
		}
	}
	close(stop)
	wg.Wait()
	st, err := s.Prepare(ctx, `SELECT count(*) FROM f WHERE k = -1`, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func() string {
		t.Helper()
		op, err := st.Query(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		if err := op.Open(ctx); err != nil {
			t.Fatal(err)
		}
		b, err := op.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return b.Column(0).ValueStr(0)
	}
	if got := count(); got != "0" {
		t.Fatalf("count %s before the insert", got)
	}
	mustExec(t, s, `INSERT INTO f VALUES (-1)`)
	if got := count(); got != "1" {
		t.Fatalf("the prepared query counts %s after the insert, want 1", got)
	}
}
