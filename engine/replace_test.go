package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/vectorized"
)

// TestCreateOrReplaceRacing replaces a table over and over (new rows, and
// every other time new columns; some replaces fail mid-query) while readers
// check that every read sees one generation of the table whole, and
// writers insert rows tagged with the generation they read: an insert that
// commits must land in the table it read (a replace published meanwhile
// makes it fail with a conflict), and stay visible until the next replace.
// With two engines over one directory, the replaces and writes come from
// both.
func TestCreateOrReplaceRacing(t *testing.T) {
	for _, nodes := range []int{1, 2} {
		t.Run(fmt.Sprintf("nodes=%d", nodes), func(t *testing.T) { createOrReplaceRacing(t, nodes) })
	}
}

func createOrReplaceRacing(t *testing.T, nodes int) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	root := t.TempDir()
	engines := make([]*engine.Engine, nodes)
	for i := range engines {
		engines[i] = newEngineWith(t, engine.Config{CacheBytes: 16 << 20, Root: root})
	}
	const base = 50 // generation g has base+g rows with ids 1..base+g
	replace := func(g int, fail bool) string {
		extra := ""
		if g%2 == 1 {
			extra = fmt.Sprintf(", 'x' AS c%d", g)
		}
		last := "1"
		if fail {
			last = "1 / (generate_series - generate_series)" // fails at the first row
		}
		return fmt.Sprintf("CREATE OR REPLACE TABLE t AS SELECT CAST(%d AS BIGINT) AS g, generate_series AS id, %s AS one%s FROM generate_series(1, %d)",
			g, last, extra, base+g)
	}
	ctx := context.Background()
	mustExec(t, engines[0].NewSession(), replace(0, false))

	var (
		started, finished atomic.Int64 // replaces begun and returned, successful or not
		gen               atomic.Int64 // the last generation acknowledged
		mu                sync.Mutex
		bad               []string
		reads, inserts    atomic.Int64
		checked, rejected atomic.Int64
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		bad = append(bad, fmt.Sprintf(format, args...))
	}
	const generations = 10
	replacing := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // one replacer at a time, so generations are ordered
		defer wg.Done()
		defer close(replacing)
		rng := rand.New(rand.NewPCG(seed, 0))
		for g := 1; g <= generations; g++ {
			s := engines[g%nodes].NewSession()
			broken := rng.IntN(5) == 0
			started.Add(1)
			_, err := exec(ctx, s, nil, replace(g, broken))
			switch {
			case broken && err == nil:
				fail("replace %d with a failing query succeeded", g)
			case !broken && err != nil:
				fail("replace %d: %v", g, err)
			case err == nil:
				gen.Store(int64(g))
			}
			finished.Add(1)
			time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		}
	}()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w+1)))
			s := engines[w%nodes].NewSession()
			// Writers go on for a few inserts after the last replace, which
			// are all checked.
			after := 3
			for i := 0; after > 0; i++ {
				select {
				case <-replacing:
					if after--; w%2 == 0 {
						after = 0
					}
				default:
				}
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
				if w%2 == 0 { // reader
					rows, err := queryRows(ctx, s, nil, fmt.Sprintf(
						"SELECT min(g), max(g), count(*) FILTER (WHERE id <= %d), count(*), count(DISTINCT id), sum(one) FROM t", base+1_000_000))
					if err != nil {
						fail("read: %v", err)
						continue
					}
					reads.Add(1)
					r := rows[0]
					g, _ := strconv.Atoi(r[0])
					if r[0] != r[1] || r[2] != strconv.Itoa(base+g) || r[3] != r[4] || r[3] != r[5] {
						fail("read saw min(g), max(g), base rows, rows, distinct ids, sum(one) = %v: not one generation whole", r)
					}
					continue
				}
				// Writer: an id no other writer uses, tagged with the generation read.
				id := 2_000_000 + w*1_000_000 + i
				before := finished.Load()
				_, err := exec(ctx, s, nil, fmt.Sprintf("INSERT INTO t (g, id, one) SELECT max(g), %d, 1 FROM t", id))
				if engine.KindOf(err) == engine.KindConflict {
					rejected.Add(1)
					continue
				}
				if err != nil {
					fail("insert %d: %v", id, err)
					continue
				}
				inserts.Add(1)
				rows, err := queryRows(ctx, s, nil, fmt.Sprintf("SELECT count(*) FROM t WHERE id = %d", id))
				if err != nil {
					fail("read back %d: %v", id, err)
					continue
				}
				if started.Load() != before {
					continue // a replace may have published since: the row may be gone
				}
				checked.Add(1)
				if rows[0][0] != "1" {
					fail("acknowledged insert of id %d not found (count %s) with no replace since", id, rows[0][0])
				}
			}
		}()
	}
	wg.Wait()
	for _, b := range bad {
		t.Log(b)
	}
	if len(bad) > 0 {
		t.Fatalf("%d violations, first: %s", len(bad), bad[0])
	}
	// Every engine sees the last generation acknowledged, whole.
	for i, e := range engines {
		rows := rows(t, e.NewSession(), fmt.Sprintf("SELECT min(g), max(g), count(*) FILTER (WHERE id <= %d) FROM t", base+1_000_000))
		want := []string{fmt.Sprint(gen.Load()), fmt.Sprint(gen.Load()), fmt.Sprint(base + gen.Load())}
		if fmt.Sprint(rows[0]) != fmt.Sprint(want) {
			t.Errorf("engine %d reads %v after the run, want generation %v", i, rows[0], want)
		}
	}
	t.Logf("%d replaces (last generation %d), %d reads, %d inserts (%d checked with no replace since, %d rejected by conflict)",
		finished.Load(), gen.Load(), reads.Load(), inserts.Load(), checked.Load(), rejected.Load())
}

// TestCreateTableAsInTransaction: DDL commits at once, outside the
// transaction, so a CREATE TABLE ... AS (or CREATE OR REPLACE) in a
// transaction that reads rows the transaction wrote is refused: it copied
// them into a committed table, where they stayed after the transaction
// rolled back (or failed its commit). One that reads only committed tables
// runs, and the transaction goes on.
func TestCreateTableAsInTransaction(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE t (a INT)")
	mustExec(t, s, "CREATE TABLE other (a INT)")
	mustExec(t, s, "INSERT INTO t VALUES (1)")
	tx := e.Begin()
	if _, err := exec(ctx, s, tx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE u AS SELECT * FROM t",
		"CREATE OR REPLACE TABLE t AS SELECT a * 10 AS a FROM t",
		"CREATE OR REPLACE TABLE other AS SELECT * FROM other UNION ALL SELECT * FROM t",
	} {
		if _, err := exec(ctx, s, tx, q); engine.KindOf(err) != engine.KindNotSupported {
			t.Errorf("%s in a transaction that wrote t: %v, want not supported", q, err)
		}
	}
	if _, err := exec(ctx, s, tx, "CREATE OR REPLACE TABLE other AS SELECT a + 100 AS a FROM other UNION ALL SELECT 7"); err != nil {
		t.Fatalf("a CTAS reading only committed tables in a transaction: %v", err)
	}
	if err := e.Rollback(tx.ID()); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"SELECT count(*) FROM t WHERE a = 1":                                    "[[1]]",
		"SELECT count(*) FROM t":                                                "[[1]]",
		"SELECT count(*) FROM information_schema.tables WHERE table_name = 'u'": "[[0]]",
		"SELECT * FROM other":                                                   "[[7]]",
	} {
		if got := fmt.Sprint(rows(t, s, q)); got != want {
			t.Errorf("%s after the rollback: %s, want %s", q, got, want)
		}
	}
}

// TestFailedCreateTableAsLeavesNothing: a CREATE TABLE ... AS (or CREATE OR
// REPLACE on a new name) whose query fails midway leaves no directory in
// the warehouse, and the name can be created again; a failed replace of an existing table keeps it. Before,
// each left the table's directory with its schema, snapshot and manifest
// directories.
func TestFailedCreateTableAsLeavesNothing(t *testing.T) {
	root := t.TempDir()
	e := newEngineWith(t, engine.Config{CacheBytes: 64 << 20, Root: root})
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE src (x INT)")
	mustExec(t, s, "INSERT INTO src SELECT CAST(x AS INT) FROM generate_series(1, 200000) g(x)")
	mustExec(t, s, "INSERT INTO src VALUES (0)")
	mustExec(t, s, "CREATE TABLE keep AS SELECT 1 AS a")
	for _, q := range []string{
		"CREATE TABLE c1 AS SELECT 10 / x AS y FROM src",
		"CREATE OR REPLACE TABLE c2 AS SELECT 10 / x AS y FROM src",
		"CREATE TABLE c3 PARTITIONED BY (p) WITH ('write-buffer-size' = '64kb') AS SELECT x % 7 AS p, 10 / x AS y FROM src",
		"CREATE OR REPLACE TABLE keep AS SELECT 10 / x AS a FROM src",
	} {
		if _, err := exec(context.Background(), s, nil, q); !errors.Is(err, vectorized.ErrDivideByZero) {
			t.Fatalf("%s: %v, want division by zero", q, err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(root, "default.db"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
	}
	if got := strings.Join(names, " "); got != "keep src" {
		t.Errorf("warehouse default.db holds %s, want keep src", got)
	}
	if got := fmt.Sprint(rows(t, s, "SELECT * FROM keep")); got != "[[1]]" {
		t.Errorf("keep after a failed replace: %s", got)
	}
	mustExec(t, s, "CREATE TABLE c1 AS SELECT 1 AS y")
	mustExec(t, s, "INSERT INTO c1 VALUES (2)")
	if got := fmt.Sprint(rows(t, s, "SELECT sum(y) FROM c1")); got != "[[3]]" {
		t.Errorf("c1 created again: %s", got)
	}
}
