package engine_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
)

// TestRandomDDLAndWrites runs 8 sessions creating, dropping and writing
// three tables and two databases at random for a while. No statement
// panics, every table left reads and takes a write, and hardly any
// statement fails with data loss, an internal error or a column missing
// where "not found" or "already exists" is the answer. Found this way from Python: a write
// that opened a table before a drop published into the table created
// again under its name ("manifest ... is missing" on every statement from
// then on). A scan reading while a drop moved the files away found a data
// file gone ("open data file ...: no such file", Internal) 0-2 times a run.
// With ALTER TABLE ADD COLUMN, a write reading its own table altered since
// its last commit failed with "no column" (the scan read the pinned
// snapshot with that snapshot's schema, the statement was bound with the
// newest). With two nodes (two engines over one warehouse directory, the
// sessions split between them) 105-133 statements a run failed with data
// loss or internal errors: an ALTER TABLE, a compaction or a write of one
// node published into the table the other had created again under the
// name, and reads found files of the other table, until a table's state
// pinned its directory; with CREATE TABLE ... AS, 0-14 a run (4 of 8 runs)
// (a CREATE of the other node landing between its check and its
// snapshot) until the schema lock held both across processes, then 0-12
// (2 of 8 runs: an abandoned staged schema's version number, taken by
// the next ALTER, read from a node's cache as the staged one).
func TestRandomDDLAndWrites(t *testing.T) {
	for _, nodes := range []int{1, 2} {
		t.Run(fmt.Sprintf("nodes=%d", nodes), func(t *testing.T) { randomDDLAndWrites(t, nodes) })
	}
}

func randomDDLAndWrites(t *testing.T, nodes int) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	engines := nodesSharing(t, nodes)
	e := engines[0]
	stmts := []string{
		"CREATE TABLE IF NOT EXISTS t{n} (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
		"DROP TABLE IF EXISTS t{n}",
		"INSERT INTO t{n} (k, v) VALUES ({k}, {v})",
		"INSERT INTO t{n} SELECT * FROM t{n} WHERE k = {k}",
		"ALTER TABLE t{n} ADD COLUMN c{v} INT",
		"UPDATE t{n} SET v = v + 1 WHERE k = {k}",
		"DELETE FROM t{n} WHERE k = {k}",
		"SELECT count(*), sum(v) FROM t{n}",
		"INSERT OVERWRITE t{n} SELECT * FROM t{m}",
		"CREATE TABLE IF NOT EXISTS t{n} AS SELECT * FROM t{m}",
		"CREATE OR REPLACE TABLE t{n} AS SELECT * FROM t{m}",
		"CALL sys.compact('t{n}')",
		"CREATE DATABASE IF NOT EXISTS d{n}",
		"DROP DATABASE IF EXISTS d{n} CASCADE",
		"CREATE TABLE IF NOT EXISTS d{n}.x (a INT)",
		"INSERT INTO d{n}.x VALUES ({k})",
		"SELECT * FROM t{n} a JOIN t{m} b ON a.k = b.k",
	}
	ctx := context.Background()
	deadline := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad, panics []string
	ok := 0
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			s := engines[w%nodes].NewSession()
			for time.Now().Before(deadline) {
				q := strings.NewReplacer("{n}", fmt.Sprint(rng.IntN(3)), "{m}", fmt.Sprint(rng.IntN(3)),
					"{k}", fmt.Sprint(rng.IntN(20)), "{v}", fmt.Sprint(rng.IntN(100))).Replace(stmts[rng.IntN(len(stmts))])
				err := runStatement(ctx, s, q)
				mu.Lock()
				switch k := engine.KindOf(err); {
				case err == nil:
					ok++
				case strings.Contains(err.Error(), "panic"):
					panics = append(panics, fmt.Sprintf("%s: %v", q, err))
				case k == engine.KindInternal || k == engine.KindDataLoss, strings.Contains(err.Error(), "no column"):
					bad = append(bad, fmt.Sprintf("%s: %v", q, err))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(panics) > 0 {
		t.Fatalf("%d statements panicked, first:\n%s", len(panics), panics[0])
	}
	for _, b := range bad {
		t.Logf("racing a drop: %s", b)
	}
	// Before the fixes 94 to 231 statements a run failed so.
	if len(bad) > 0 {
		t.Errorf("%d statements failed with data loss, internal errors or a column missing, first: %s", len(bad), bad[0])
	}
	s := e.NewSession()
	for i, tbl := range []string{"t0", "t1", "t2", "d0.x", "d1.x", "d2.x"} {
		err := runStatement(ctx, s, "SELECT * FROM "+tbl)
		if engine.KindOf(err) == engine.KindNotFound {
			continue
		}
		if err == nil {
			q := fmt.Sprintf("INSERT INTO %s SELECT * FROM %s LIMIT 1", tbl, tbl)
			if err = runStatement(ctx, s, q); err == nil {
				err = runStatement(ctx, s, "SELECT * FROM "+tbl)
			}
		}
		if err != nil {
			t.Errorf("table %d (%s) afterwards: %v", i, tbl, err)
		}
	}
	t.Logf("%d statements succeeded, %d failed with data loss, internal errors or a column missing", ok, len(bad))
}

// runStatement runs q to the end, reading a query's rows.
func runStatement(ctx context.Context, s *engine.Session, q string) error {
	st, err := s.Prepare(ctx, q, nil)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(q, "SELECT") {
		_, err = st.Exec(ctx, nil)
		return err
	}
	op, err := st.Query(ctx, nil)
	if err != nil {
		return err
	}
	defer op.Close()
	if err := op.Open(ctx); err != nil {
		return err
	}
	for {
		if _, err := op.Next(ctx); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}
