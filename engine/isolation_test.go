package engine_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the package's random tests (0: a new one each)")

// testSeed is the seed of a random test: -seed, or a new one; it logs it
// so that a failure can be replayed.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return seed
}

func newEngine(t *testing.T) *engine.Engine {
	t.Helper()
	return newEngineWith(t, engine.Config{CacheBytes: 64 << 20})
}

// newEngineWith opens an engine with cfg over fresh directories (but
// cfg.Root when set) and a checked allocator, closed and checked for leaks
// when the test ends.
// nodesSharing opens n engines over one new warehouse directory, as n
// flightd nodes sharing it.
func nodesSharing(t *testing.T, n int) []*engine.Engine {
	root := t.TempDir()
	engines := make([]*engine.Engine, n)
	for i := range engines {
		engines[i] = newEngineWith(t, engine.Config{CacheBytes: 64 << 20, Root: root})
	}
	return engines
}

func newEngineWith(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cfg.Mem, cfg.SpillDir = mem, t.TempDir()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	e, err := engine.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
		mem.AssertSize(t, 0)
	})
	return e
}

func exec(ctx context.Context, s *engine.Session, tx *engine.Txn, q string) (int64, error) {
	st, err := s.Prepare(ctx, q, tx)
	if err != nil {
		return 0, err
	}
	return st.Exec(ctx, nil)
}

func mustExec(t *testing.T, s *engine.Session, q string) {
	t.Helper()
	if _, err := exec(context.Background(), s, nil, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// rows runs a query and returns its rows rendered as strings.
func rows(t *testing.T, s *engine.Session, q string) [][]string {
	t.Helper()
	return txRows(t, s, nil, q)
}

// txRows runs query q in transaction tx (nil: autocommit) and returns its
// rows as strings.
func txRows(t *testing.T, s *engine.Session, tx *engine.Txn, q string) [][]string {
	t.Helper()
	ctx := context.Background()
	st, err := s.Prepare(ctx, q, tx)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return stmtRows(t, st, q)
}

// stmtRows runs the prepared query q and returns its rows rendered as
// strings.
func stmtRows(t *testing.T, st *engine.Statement, q string) [][]string {
	t.Helper()
	out, err := collectRows(context.Background(), st)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// queryRows is rows for goroutines other than the test's: it returns the
// error.
func queryRows(ctx context.Context, s *engine.Session, tx *engine.Txn, q string) ([][]string, error) {
	st, err := s.Prepare(ctx, q, tx)
	if err != nil {
		return nil, err
	}
	return collectRows(ctx, st)
}

// collectRows runs the prepared query st and returns its rows rendered as
// strings.
func collectRows(ctx context.Context, st *engine.Statement) ([][]string, error) {
	op, err := st.Query(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer op.Close()
	if err := op.Open(ctx); err != nil {
		return nil, err
	}
	var out [][]string
	for {
		b, err := op.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for r := range int(b.NumRows()) {
			row := make([]string, b.NumCols())
			for c := range row {
				row[c] = b.Column(c).ValueStr(r)
			}
			out = append(out, row)
		}
	}
}

// ingestRow upserts one row (k, v) into u by bulk ingest.
func ingestRow(ctx context.Context, s *engine.Session, tx *engine.Txn, mem memory.Allocator, k, v int64) (int64, error) {
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil))
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(k)
	b.Field(1).(*array.Int64Builder).Append(v)
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	return s.Ingest(ctx, engine.IngestRequest{Table: tablestore.Ident{Table: "u"}, Mode: engine.IngestAppend, Txn: tx}, rdr)
}

// write is one write a client attempted to a register key (or, with
// deleted, removed it), with when it started and returned.
type write struct {
	val          int64 // -1: deleted
	start, end   time.Time
	acked        bool
	client, step int
}

// TestIsolationModel runs clients that mix read-modify-write UPDATEs
// (counters), blind upserts (INSERT or bulk ingest) and DELETEs
// (registers), on a key table and an
// append table, in autocommit and in explicit transactions, while
// compaction runs, then checks every acknowledged effect against the final
// state: counters equal their acknowledged increments (none lost, none of a
// failed statement), each register holds a write no acknowledged write
// started after the end of, and was not written by a failed statement, and
// every acknowledged append is there once. Blind writes must never fail.
func TestIsolationModel(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	e := newEngine(t)
	admin := e.NewSession()
	const (
		clients   = 8
		steps     = 30
		counters  = 4 // keys 0..3
		registers = 4 // keys 100..103
	)
	mustExec(t, admin, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', 'num-sorted-run.compaction-trigger' = '2')")
	mustExec(t, admin, "CREATE TABLE a (k BIGINT, v BIGINT)")
	for k := range counters {
		mustExec(t, admin, fmt.Sprintf("INSERT INTO u VALUES (%d, 0)", k))
		mustExec(t, admin, fmt.Sprintf("INSERT INTO a VALUES (%d, 0)", k))
	}

	batchMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer batchMem.AssertSize(t, 0)
	var (
		mu       sync.Mutex
		incs     [counters]int // acknowledged increments of u
		appIncs  [counters]int // of a
		regs     = map[int64][]write{}
		appended = map[int64]bool{} // unique a.k of appends -> acknowledged
	)
	blindFailed := func(err error) {
		t.Errorf("blind write failed: %v", err)
	}
	stop := make(chan struct{})
	var compactor sync.WaitGroup
	compactor.Add(1)
	go func() {
		defer compactor.Done()
		s := e.NewSession()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := exec(ctx, s, nil, "CALL sys.compact(table => 'u')"); err != nil && !errors.Is(err, tablestore.ErrConflict) {
				t.Errorf("compact: %v", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()

	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			s := e.NewSession()
			pause := func() {
				if rng.IntN(3) == 0 {
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
				}
			}
			for step := range steps {
				// An operation is a statement; a transaction holds up to
				// three of them. It reads its own writes, so it may
				// increment one counter more than once; its register
				// writes are to distinct keys (the model keeps one write
				// per statement).
				type effect struct {
					apply func() // record as acknowledged
				}
				var tx *engine.Txn
				n := 1
				if rng.IntN(3) == 0 {
					tx = e.Begin()
					n = 1 + rng.IntN(3)
				}
				var effects []effect
				var failed error
				rmw := false // a statement read what it writes
				usedReg := map[int64]bool{}
				for range n {
					pause()
					switch op := rng.IntN(10); {
					case op < 4: // read-modify-write on u
						k := rng.IntN(counters)
						rmw = true
						got, err := exec(ctx, s, tx, fmt.Sprintf("UPDATE u SET v = v + 1 WHERE k = %d", k))
						if err == nil && got != 1 {
							err = fmt.Errorf("UPDATE of counter %d changed %d rows", k, got)
							t.Error(err)
						}
						if err != nil {
							failed = err
							break
						}
						effects = append(effects, effect{apply: func() { incs[k]++ }})
					case op < 5: // read-modify-write on a (a rewrite)
						k := rng.IntN(counters)
						if tx != nil {
							continue // an overwrite does not combine with other writes to a
						}
						_, err := exec(ctx, s, tx, fmt.Sprintf("UPDATE a SET v = v + 1 WHERE k = %d", k))
						if err != nil {
							failed = err
							break
						}
						effects = append(effects, effect{apply: func() { appIncs[k]++ }})
					case op < 6: // blind append to a
						if tx != nil {
							continue
						}
						id := int64(1000 + c*steps + step)
						mu.Lock()
						appended[id] = false
						mu.Unlock()
						_, err := exec(ctx, s, tx, fmt.Sprintf("INSERT INTO a VALUES (%d, 1)", id))
						if err != nil {
							blindFailed(err)
							failed = err
							break
						}
						effects = append(effects, effect{apply: func() { appended[id] = true }})
					default: // register write: blind upsert, or DELETE
						k := int64(100 + rng.IntN(registers))
						if usedReg[k] {
							continue
						}
						usedReg[k] = true
						val := int64(c*steps+step)*10 + int64(len(effects))
						q := fmt.Sprintf("INSERT INTO u VALUES (%d, %d)", k, val)
						del := rng.IntN(4) == 0
						if del {
							val, q = -1, fmt.Sprintf("DELETE FROM u WHERE k = %d", k)
							rmw = true
						}
						wr := write{val: val, start: time.Now(), client: c, step: step}
						var got int64
						var err error
						if !del && rng.IntN(3) == 0 {
							got, err = ingestRow(ctx, s, tx, batchMem, k, val)
						} else {
							got, err = exec(ctx, s, tx, q)
						}
						mu.Lock()
						idx := len(regs[k])
						regs[k] = append(regs[k], wr)
						mu.Unlock()
						if err != nil {
							if !del {
								blindFailed(err)
							}
							failed = err
							break
						}
						if del && got == 0 {
							continue // deleted nothing: no write
						}
						effects = append(effects, effect{apply: func() {
							regs[k][idx].acked = true
							regs[k][idx].end = time.Now()
						}})
					}
					if failed != nil {
						break
					}
				}
				if tx != nil {
					pause()
					if failed != nil {
						if err := e.Rollback(tx.ID()); err != nil {
							t.Error(err)
						}
					} else if err := e.Commit(ctx, tx.ID()); err != nil {
						failed = err
						if !rmw {
							blindFailed(err)
						}
					}
				}
				if failed != nil && !errors.Is(failed, tablestore.ErrSerialization) {
					t.Errorf("client %d step %d: %v", c, step, failed)
				}
				if failed == nil {
					mu.Lock()
					for _, ef := range effects {
						ef.apply()
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	compactor.Wait()

	final := map[int64]int64{}
	for _, r := range rows(t, admin, "SELECT k, v FROM u") {
		k, _ := strconv.ParseInt(r[0], 10, 64)
		v, _ := strconv.ParseInt(r[1], 10, 64)
		final[k] = v
	}
	acked := 0
	for k := range counters {
		acked += incs[k]
		if got := final[int64(k)]; got != int64(incs[k]) {
			t.Errorf("counter %d of u = %d, %d increments acknowledged", k, got, incs[k])
		}
	}
	for k, ws := range regs {
		got, ok := final[k]
		if !ok {
			got = -1
		}
		// Some acknowledged write of the final value (or, for -1, the
		// initial absence) must have no acknowledged write started after
		// it returned.
		valid, failedWriter := false, false
		ends := []time.Time{}
		if got == -1 {
			ends = append(ends, time.Time{})
		}
		for _, w := range ws {
			if w.val == got {
				if w.acked {
					ends = append(ends, w.end)
				} else {
					failedWriter = true
				}
			}
		}
		for _, end := range ends {
			later := false
			for _, w := range ws {
				later = later || (w.acked && w.start.After(end))
			}
			valid = valid || !later
		}
		if !valid {
			t.Errorf("register %d = %d: no acknowledged write of it is the last (written by a failed statement: %v); writes: %+v", k, got, failedWriter, ws)
		}
	}
	appFinal := map[int64]int64{}
	for _, r := range rows(t, admin, "SELECT k, count(*), sum(v) FROM a GROUP BY k") {
		k, _ := strconv.ParseInt(r[0], 10, 64)
		n, _ := strconv.ParseInt(r[1], 10, 64)
		v, _ := strconv.ParseInt(r[2], 10, 64)
		if n != 1 {
			t.Errorf("a has %d rows of k = %d", n, k)
		}
		appFinal[k] = v
	}
	for k := range counters {
		acked += appIncs[k]
		if got := appFinal[int64(k)]; got != int64(appIncs[k]) {
			t.Errorf("counter %d of a = %d, %d increments acknowledged", k, got, appIncs[k])
		}
	}
	for id, ok := range appended {
		if _, there := appFinal[id]; there != ok {
			t.Errorf("append %d: in the table %v, acknowledged %v", id, there, ok)
		}
	}
	nregs := 0
	for _, ws := range regs {
		nregs += len(ws)
	}
	t.Logf("%d acknowledged increments, %d register writes, %d appends", acked, nregs, len(appended))
}

// TestTxnKeyLevel: transactions conflict with concurrent commits key by
// key: a transaction's insert of key 10 and its update of key 1 commit
// although an autocommit insert wrote key 11 of the same bucket meanwhile;
// of two transactions updating one row exactly one commits; an INSERT whose
// source reads its target is a read-modify-write too.
func TestTxnKeyLevel(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "INSERT INTO u VALUES (1, 0), (2, 0)")
	txExec := func(tx *engine.Txn, q string) {
		t.Helper()
		if _, err := exec(ctx, s, tx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	for _, rmw := range []bool{false, true} {
		tx := e.Begin()
		txExec(tx, "INSERT INTO u VALUES (10, 1)")
		if rmw {
			txExec(tx, "UPDATE u SET v = v + 1 WHERE k = 1")
		}
		mustExec(t, s, "INSERT INTO u VALUES (11, 1)")
		if err := e.Commit(ctx, tx.ID()); err != nil {
			t.Fatalf("transaction (update too: %v) after a concurrent insert of another key: %v", rmw, err)
		}
		mustExec(t, s, "DELETE FROM u WHERE k >= 10")
	}
	if got := rows(t, s, "SELECT v FROM u WHERE k = 1"); len(got) != 1 || got[0][0] != "1" {
		t.Fatalf("v of key 1 = %v, want 1", got)
	}

	t1, t2 := e.Begin(), e.Begin()
	txExec(t1, "UPDATE u SET v = v + 1 WHERE k = 2")
	txExec(t2, "UPDATE u SET v = v + 1 WHERE k = 2")
	err1, err2 := e.Commit(ctx, t1.ID()), e.Commit(ctx, t2.ID())
	if err1 != nil || !errors.Is(err2, tablestore.ErrSerialization) {
		t.Fatalf("two transactions updating one row: %v, %v; want the second to fail with ErrSerialization", err1, err2)
	}
	if got := rows(t, s, "SELECT v FROM u WHERE k = 2"); len(got) != 1 || got[0][0] != "1" {
		t.Fatalf("v of key 2 = %v, want 1", got)
	}

	tx := e.Begin()
	txExec(tx, "INSERT INTO u SELECT k, v + 10 FROM u WHERE k = 2")
	mustExec(t, s, "UPDATE u SET v = v + 1 WHERE k = 2")
	if err := e.Commit(ctx, tx.ID()); !errors.Is(err, tablestore.ErrSerialization) {
		t.Fatalf("INSERT reading its target, after a concurrent update of the key: %v, want ErrSerialization", err)
	}
	if got := rows(t, s, "SELECT v FROM u WHERE k = 2"); len(got) != 1 || got[0][0] != "2" {
		t.Fatalf("v of key 2 = %v, want 2", got)
	}
}

// TestTxnAllOrNothing: a transaction writing two tables whose second
// write conflicts publishes neither.
func TestTxnAllOrNothing(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE a (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "CREATE TABLE b (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "INSERT INTO b VALUES (1, 0)")
	// Table names sort the same way as the commit order, and the other
	// way: either table may be the one that conflicts.
	for _, first := range []string{"a", "b"} {
		tx := e.Begin()
		for _, q := range map[string][]string{
			"a": {"INSERT INTO a VALUES (7, 7)", "UPDATE b SET v = v + 1 WHERE k = 1"},
			"b": {"UPDATE b SET v = v + 1 WHERE k = 1", "INSERT INTO a VALUES (7, 7)"},
		}[first] {
			if _, err := exec(ctx, s, tx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		mustExec(t, s, "UPDATE b SET v = v + 1 WHERE k = 1")
		if err := e.Commit(ctx, tx.ID()); !errors.Is(err, tablestore.ErrSerialization) {
			t.Fatalf("transaction whose update of b conflicts: %v, want ErrSerialization", err)
		}
		if got := rows(t, s, "SELECT k FROM a"); len(got) != 0 {
			t.Fatalf("a = %v after the transaction failed, want it empty", got)
		}
	}
	if got := rows(t, s, "SELECT v FROM b"); len(got) != 1 || got[0][0] != "2" {
		t.Fatalf("b = %v, want v = 2", got)
	}
}

// TestTxnReadsOwnWrites: a statement of a transaction reads the writes of
// the statements before it, and nobody else does before the commit:
// through scans, key lookups (the lookup index holds committed rows only,
// so those reads scan) and joins, on key tables and append tables, also
// a table empty when the transaction began. Two increments of one row in
// one transaction add 2 (they added 1, the first one lost). A table the
// transaction overwrote cannot be read in it.
func TestTxnReadsOwnWrites(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s, other := e.NewSession(), e.NewSession()
	mustExec(t, s, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "CREATE TABLE a (k BIGINT, v BIGINT)")
	mustExec(t, s, "CREATE TABLE empty (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "INSERT INTO u VALUES (1, 10), (2, 20)")
	mustExec(t, s, "INSERT INTO a VALUES (1, 1)")
	tx := e.Begin()
	for _, q := range []string{
		"UPDATE u SET v = v + 1 WHERE k = 1",
		"UPDATE u SET v = v + 1 WHERE k = 1",
		"INSERT INTO u VALUES (3, 30)",
		"DELETE FROM u WHERE k = 2",
		"INSERT INTO a VALUES (2, 2)",
		"INSERT INTO empty VALUES (5, 50)",
		"INSERT INTO a SELECT k + 10, v FROM a",
	} {
		if _, err := exec(ctx, s, tx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	check := func(tx *engine.Txn, q string, want ...string) {
		t.Helper()
		var got []string
		for _, r := range txRows(t, s, tx, q) {
			got = append(got, strings.Join(r, "|"))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s (in transaction: %v): %v, want %v", q, tx != nil, got, want)
		}
	}
	for _, c := range []struct {
		q            string
		mine, theirs []string
	}{
		{"SELECT k, v FROM u ORDER BY k", []string{"1|12", "3|30"}, []string{"1|10", "2|20"}},
		{"SELECT v FROM u WHERE k = 1", []string{"12"}, []string{"10"}}, // a key lookup
		{"SELECT k FROM u WHERE k IN (2, 3) ORDER BY k", []string{"3"}, []string{"2"}},
		{"SELECT k, v FROM a ORDER BY k", []string{"1|1", "2|2", "11|1", "12|2"}, []string{"1|1"}},
		{"SELECT count(*) FROM a", []string{"4"}, []string{"1"}},
		{"SELECT k, v FROM empty", []string{"5|50"}, nil},
		{"SELECT a.k, u.v FROM a JOIN u ON a.k = u.k ORDER BY a.k", []string{"1|12"}, []string{"1|10"}},
	} {
		check(tx, c.q, c.mine...)
		check(nil, c.q, c.theirs...)
	}
	if err := e.Commit(ctx, tx.ID()); err != nil {
		t.Fatal(err)
	}
	check(nil, "SELECT k, v FROM u ORDER BY k", "1|12", "3|30")
	check(nil, "SELECT count(*) FROM a", "4")

	// A statement prepared before the transaction wrote its table, and
	// executed after (as clients reuse a prepared statement), reads the
	// writes too: the UPDATE's second execution, and the query.
	tx = e.Begin()
	query, err := s.Prepare(ctx, "SELECT v FROM u WHERE k = 1", tx)
	if err != nil {
		t.Fatal(err)
	}
	update, err := s.Prepare(ctx, "UPDATE u SET v = v + 1 WHERE k = 1", tx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := update.Exec(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	op, err := query.Query(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := drainRows(ctx, op, func(r string) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"14"}) {
		t.Errorf("prepared query after two executions of a prepared UPDATE: %v, want [14]", got)
	}
	if err := e.Commit(ctx, tx.ID()); err != nil {
		t.Fatal(err)
	}
	check(nil, "SELECT v FROM u WHERE k = 1", "14")

	tx = e.Begin()
	if _, err := exec(ctx, s, tx, "INSERT OVERWRITE a SELECT 9, 9"); err != nil {
		t.Fatal(err)
	}
	st, err := other.Prepare(ctx, "SELECT k FROM a", tx)
	if err == nil {
		_, err = st.Query(ctx, nil)
	}
	if !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(err.Error(), "after overwriting it") {
		t.Fatalf("reading a table the transaction overwrote: %v, want refused", err)
	}
	if err := e.Rollback(tx.ID()); err != nil {
		t.Fatal(err)
	}
	check(nil, "SELECT count(*) FROM a", "4")
}

// TestTxnConcurrentStatements: a client may send several statements of
// one transaction at once (and its COMMIT with them); they share the
// transaction's buffered writes, so they take turns. Every acknowledged
// insert is there once after the commit, and under -race nothing races.
func TestTxnConcurrentStatements(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tx := e.Begin()
	const clients, each = 4, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[int64]bool{}
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				k := int64(c*each + i)
				var err error
				if i%3 == 0 {
					_, err = ingestRow(ctx, s, tx, mem, k, k)
				} else {
					_, err = exec(ctx, s, tx, fmt.Sprintf("INSERT INTO u VALUES (%d, %d)", k, k))
				}
				if err != nil {
					t.Errorf("insert %d: %v", k, err)
					continue
				}
				mu.Lock()
				acked[k] = true
				mu.Unlock()
				if n := len(txRows(t, s, tx, "SELECT k FROM u")); n == 0 {
					t.Errorf("after inserting %d the transaction reads no rows", k)
				}
			}
		})
	}
	wg.Wait()
	if err := e.Commit(ctx, tx.ID()); err != nil {
		t.Fatal(err)
	}
	got := rows(t, s, "SELECT k FROM u")
	if len(got) != len(acked) {
		t.Fatalf("%d rows after the commit, %d inserts acknowledged", len(got), len(acked))
	}
}

// TestTxnSnapshotAtFirstStatement: a transaction reads as of its first
// statement, not of BEGIN (PostgreSQL's snapshot): a client that begins
// at once and sits idle (ADBC with autocommit off begins when it
// connects) sees what was committed before it asks, and its update of a
// row committed meanwhile commits instead of failing with a serialization
// error. From its first statement on, later commits stay unseen, also
// for a statement prepared (bound) before it runs.
func TestTxnSnapshotAtFirstStatement(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s, other := e.NewSession(), e.NewSession()
	mustExec(t, other, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	tx := e.Begin()
	mustExec(t, other, "INSERT INTO u VALUES (1, 10)") // committed after BEGIN, before any statement
	if _, err := exec(ctx, s, tx, "UPDATE u SET v = v + 1 WHERE k = 1"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, other, "INSERT INTO u VALUES (2, 20)") // after its first statement
	if got := txRows(t, s, tx, "SELECT k, v FROM u ORDER BY k"); fmt.Sprint(got) != "[[1 11]]" {
		t.Fatalf("in the transaction: %v, want [[1 11]]", got)
	}
	if err := e.Commit(ctx, tx.ID()); err != nil {
		t.Fatalf("commit of an update of a row committed before the transaction's first statement: %v", err)
	}
	if got := rows(t, s, "SELECT k, v FROM u ORDER BY k"); fmt.Sprint(got) != "[[1 11] [2 20]]" {
		t.Fatalf("after the commit: %v", got)
	}

	tx = e.Begin()
	const q = "SELECT k, v FROM u ORDER BY k"
	st, err := s.Prepare(ctx, q, tx) // binds: the first statement
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, other, "INSERT INTO u VALUES (3, 30)")
	if got := stmtRows(t, st, q); fmt.Sprint(got) != "[[1 11] [2 20]]" {
		t.Fatalf("a statement prepared in the transaction before a commit: %v, want [[1 11] [2 20]]", got)
	}
	if err := e.Rollback(tx.ID()); err != nil {
		t.Fatal(err)
	}
}

// TestTxnManyStatements runs many read-modify-write statements of one
// row in one transaction: each reads the rows the earlier ones wrote.
func TestTxnManyStatements(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')")
	mustExec(t, s, "INSERT INTO u VALUES (1, 0), (2, 0)")
	tx := e.Begin()
	const n = 300
	for i := range n {
		if _, err := exec(ctx, s, tx, fmt.Sprintf("UPDATE u SET v = v + 1 WHERE k = %d", 1+i%2)); err != nil {
			t.Fatal(err)
		}
	}
	if got := txRows(t, s, tx, "SELECT k, v FROM u ORDER BY k"); fmt.Sprint(got) != fmt.Sprintf("[[1 %d] [2 %d]]", n/2, n/2) {
		t.Fatalf("in the transaction: %v", got)
	}
	if err := e.Commit(ctx, tx.ID()); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, s, "SELECT k, v FROM u ORDER BY k"); fmt.Sprint(got) != fmt.Sprintf("[[1 %d] [2 %d]]", n/2, n/2) {
		t.Fatalf("after the commit: %v", got)
	}
}

// TestTxnCommitAfterTableDropped: a transaction whose table another
// session dropped fails its COMMIT with NotFound, also when reading its own
// writes had put them in files (whose directory went with the table: the
// commit failed as Internal, "sync .../bucket-0: no such file or
// directory").
func TestTxnCommitAfterTableDropped(t *testing.T) {
	e, mem := openEngine(t, t.TempDir())
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	for _, readOwn := range []bool{false, true} {
		mustExec(t, s, "CREATE TABLE c (k BIGINT NOT NULL, PRIMARY KEY (k) NOT ENFORCED)")
		tx := e.Begin()
		if _, err := exec(context.Background(), s, tx, "INSERT INTO c VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if readOwn {
			if got := txRows(t, s, tx, "SELECT k FROM c"); len(got) != 1 {
				t.Fatalf("the transaction reads %v, want its row", got)
			}
		}
		mustExec(t, e.NewSession(), "DROP TABLE c")
		err := e.Commit(context.Background(), tx.ID())
		if !errors.Is(err, tablestore.ErrTableNotFound) || engine.KindOf(err) != engine.KindNotFound {
			t.Errorf("commit after the table was dropped (own writes read: %v): got %v (%v), want ErrTableNotFound", readOwn, err, engine.KindOf(err))
		}
	}
}

// TestTxnSnapshotHeldFromExpiry: a transaction reads a table at one
// snapshot from its first read to its end, though snapshot expiry that
// keeps only the latest runs meanwhile (it read "snapshot N: snapshot not
// found", NotFound, once expiry took it); a table it first reads after
// its snapshot as of the transaction's start expired fails with 40001,
// and the snapshots it held expire once it ends.
func TestTxnSnapshotHeldFromExpiry(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s, other := e.NewSession(), e.NewSession()
	for _, tbl := range []string{"a", "b"} {
		mustExec(t, other, "CREATE TABLE "+tbl+" (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
		mustExec(t, other, "INSERT INTO "+tbl+" VALUES (1, 0), (2, 0)")
	}
	expireAll := func() {
		for _, tbl := range []string{"a", "b"} {
			mustExec(t, other, "CALL sys.expire_snapshots(table => '"+tbl+"', retain_max => 1, retain_min => 1)")
		}
	}
	tx := e.Begin()
	const sum = "SELECT sum(v), count(*) FROM a"
	first := fmt.Sprint(txRows(t, s, tx, sum))
	for i := range 5 {
		mustExec(t, other, fmt.Sprintf("UPDATE a SET v = v + 1 WHERE k = %d", 1+i%2))
		mustExec(t, other, fmt.Sprintf("UPDATE b SET v = v + 1 WHERE k = %d", 1+i%2))
	}
	expireAll()
	if got := fmt.Sprint(txRows(t, s, tx, sum)); got != first {
		t.Fatalf("the transaction's second read of a: %s, its first %s", got, first)
	}
	_, err := exec(ctx, s, tx, "UPDATE b SET v = v + 1 WHERE k = 1")
	if engine.KindOf(err) != engine.KindConflict || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("reading b, whose snapshot at the transaction's start expired: %v (%v), want a conflict naming the expiry", err, engine.KindOf(err))
	}
	if err := e.Rollback(tx.ID()); err != nil {
		t.Fatal(err)
	}
	expireAll()
	if n := rows(t, other, "SELECT min(snapshot_id) FROM a$snapshots"); fmt.Sprint(n) == "[[1]]" {
		t.Fatal("a keeps snapshot 1 after the transaction that read it ended")
	}
}

// TestTxnExpiryModel: transactions increment a counter and read it twice
// while other sessions commit and expire all but the latest snapshot at
// random moments. Every read of a transaction sees the same value; the
// only error is 40001 (a conflict), with no effect; the counter ends at
// the increments acknowledged.
func TestTxnExpiryModel(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	e := newEngine(t)
	setup := e.NewSession()
	mustExec(t, setup, "CREATE TABLE c (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')")
	mustExec(t, setup, "INSERT INTO c VALUES (1, 0), (2, 0), (3, 0), (4, 0)")
	var acked atomic.Int64
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { // expiry of all but the latest snapshot, and compaction
		defer bg.Done()
		s := e.NewSession()
		for {
			select {
			case <-stop:
				return
			default:
			}
			q := "CALL sys.expire_snapshots(table => 'c', retain_max => 1, retain_min => 1)"
			if _, err := exec(ctx, s, nil, q); err != nil && engine.KindOf(err) != engine.KindConflict {
				t.Error(q, err)
				return
			}
		}
	}()
	rounds := 25
	if raceEnabled {
		rounds = 8
	}
	var wg sync.WaitGroup
	for w := range 4 {
		seed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			s := e.NewSession()
			for range rounds {
				k := 1 + rng.IntN(4)
				if w == 0 { // autocommit increments
					if _, err := exec(ctx, s, nil, fmt.Sprintf("UPDATE c SET v = v + 1 WHERE k = %d", k)); err == nil {
						acked.Add(1)
					} else if engine.KindOf(err) != engine.KindConflict {
						t.Error(err)
						return
					}
					continue
				}
				tx := e.Begin()
				err := func() error {
					read := func() (string, error) {
						r, err := queryRows(ctx, s, tx, "SELECT sum(v) FROM c")
						return fmt.Sprint(r), err
					}
					before, err := read()
					if err != nil {
						return err
					}
					time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
					if _, err := exec(ctx, s, tx, fmt.Sprintf("UPDATE c SET v = v + 1 WHERE k = %d", k)); err != nil {
						return err
					}
					if _, err := exec(ctx, s, tx, fmt.Sprintf("UPDATE c SET v = v - 1 WHERE k = %d", k)); err != nil {
						return err
					}
					after, err := read()
					if err != nil {
						return err
					}
					if before != after {
						t.Errorf("a transaction read sum(v) %s, then %s", before, after)
					}
					_, err = exec(ctx, s, tx, fmt.Sprintf("UPDATE c SET v = v + 1 WHERE k = %d", k))
					return err
				}()
				if err == nil {
					if err = e.Commit(ctx, tx.ID()); err == nil {
						acked.Add(1)
						continue
					}
				} else if rerr := e.Rollback(tx.ID()); rerr != nil {
					t.Error(rerr)
				}
				if engine.KindOf(err) != engine.KindConflict {
					t.Errorf("transaction: %v (%v)", err, engine.KindOf(err))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	if got, want := rows(t, setup, "SELECT sum(v) FROM c"), fmt.Sprintf("[[%d]]", acked.Load()); fmt.Sprint(got) != want {
		t.Fatalf("sum(v) = %v, want the %s increments acknowledged", got, want)
	}
}

// TestTxnAbortedAfterFailedWrite: a write statement that fails half-way
// in a transaction (division by zero at row 300,000 of 400,000) leaves part
// of its rows in the transaction's buffered writes, so every later
// statement is refused with SQLSTATE 25P02 (the transaction read 299,008
// of them, and could write more beside them), COMMIT fails, and nothing
// of the transaction is published. A statement refused before it wrote
// (an unknown column) leaves the transaction usable.
func TestTxnAbortedAfterFailedWrite(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	tx := e.Begin()
	if _, err := exec(ctx, s, tx, "INSERT INTO u VALUES (-1, 0)"); err != nil {
		t.Fatal(err)
	}
	if _, err := exec(ctx, s, tx, "INSERT INTO u (k, nope) VALUES (-2, 0)"); err == nil {
		t.Fatal("an insert into an unknown column was accepted")
	}
	if got := txRows(t, s, tx, "SELECT count(*) FROM u"); fmt.Sprint(got) != "[[1]]" {
		t.Fatalf("after a statement refused before it wrote, the transaction reads %v rows, want [[1]]", got)
	}
	st, err := s.Prepare(ctx, "SELECT count(*) FROM u", tx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = exec(ctx, s, tx, "INSERT INTO u SELECT x, 10 / (x - 300000) FROM range(0, 400000) AS r(x)")
	if engine.SQLState(err) != "22012" {
		t.Fatalf("the failing insert: %v, want 22012", err)
	}
	aborted := func(what string, err error) {
		t.Helper()
		if engine.SQLState(err) != "25P02" || engine.KindOf(err) != engine.KindInvalid || !strings.Contains(err.Error(), "division by zero") {
			t.Errorf("%s after the failed statement: %v (%v, %s), want 25P02 naming the failure", what, err, engine.KindOf(err), engine.SQLState(err))
		}
	}
	_, err = queryRows(ctx, s, tx, "SELECT count(*) FROM u")
	aborted("a query", err)
	_, err = st.Query(ctx, nil)
	aborted("a query prepared before", err)
	_, err = exec(ctx, s, tx, "INSERT INTO u VALUES (-3, 0)")
	aborted("an insert", err)
	_, err = exec(ctx, s, tx, "UPDATE u SET v = 1")
	aborted("an update", err)
	_, err = ingestRow(ctx, s, tx, mem, -4, 0)
	aborted("an ingest", err)
	err = e.Commit(ctx, tx.ID())
	aborted("COMMIT", err)
	if err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("commit: %v, want it rolled back", err)
	}
	if got := rows(t, s, "SELECT count(*) FROM u"); fmt.Sprint(got) != "[[0]]" {
		t.Fatalf("after the failed commit the table holds %v rows, want none", got)
	}

	tx = e.Begin() // the session goes on with a new transaction
	if _, err := exec(ctx, s, tx, "INSERT INTO u VALUES (1, 1)"); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, tx.ID()); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, s, "SELECT k, v FROM u"); fmt.Sprint(got) != "[[1 1]]" {
		t.Fatalf("the next transaction committed %v", got)
	}
}

// TestTxnOverwritePartition: INSERT OVERWRITE of a static partition runs
// in a transaction (it was refused, 0A000, so a client whose autocommit
// is off, as ADBC's dbapi defaults to, could not run it): invisible to
// others until COMMIT, which publishes it with the transaction's other
// writes, and ROLLBACK leaves the partition as it was.
func TestTxnOverwritePartition(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s, other := e.NewSession(), e.NewSession()
	mustExec(t, s, "CREATE TABLE ow (p INT NOT NULL, k INT NOT NULL, g BIGINT, PRIMARY KEY (p, k) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '1')")
	mustExec(t, s, "CREATE TABLE log (n INT)")
	mustExec(t, s, "INSERT INTO ow VALUES (0, 1, 1), (0, 2, 1), (1, 1, 1), (1, 2, 1)")
	const all = "SELECT p, k, g FROM ow ORDER BY p, k"
	before := fmt.Sprint(rows(t, s, all))
	for _, commit := range []bool{false, true} {
		tx := e.Begin()
		if _, err := exec(ctx, s, tx, "INSERT OVERWRITE ow PARTITION (p = 0) SELECT * FROM (VALUES (5, 2)) AS x(k, g)"); err != nil {
			t.Fatal(err)
		}
		if _, err := exec(ctx, s, tx, "INSERT INTO log VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(rows(t, other, all)); got != before {
			t.Fatalf("another session reads %s before the commit, want %s", got, before)
		}
		if !commit {
			if err := e.Rollback(tx.ID()); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(rows(t, other, all)); got != before {
				t.Fatalf("after the rollback: %s, want %s", got, before)
			}
			continue
		}
		if err := e.Commit(ctx, tx.ID()); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(rows(t, other, all)); got != "[[0 5 2] [1 1 1] [1 2 1]]" {
		t.Fatalf("after the commit: %s", got)
	}
	if got := fmt.Sprint(rows(t, other, "SELECT count(*) FROM log")); got != "[[1]]" {
		t.Fatalf("the committed transaction's other write: %s rows, want 1", got)
	}
}

// TestTxnPreparedAfterEnd: a query prepared in a transaction and executed
// again after the transaction ended runs outside it, at the latest
// snapshots (ADBC's DB-API cursor reuses its prepared statement for the
// same SQL text across commits); a write is refused, since outside its
// transaction it would commit on its own. The query read the ended
// transaction's snapshots, missing every commit since, and failed with
// "snapshot not found" once expiry took them; after a failed write and
// ROLLBACK it said 25P02 for good.
func TestTxnPreparedAfterEnd(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, s, "INSERT INTO u VALUES (1, 1)")
	count := func(tx *engine.Txn) *engine.Statement {
		st, err := s.Prepare(ctx, "SELECT count(*) FROM u", tx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	reads := func(what string, st *engine.Statement, want string) {
		t.Helper()
		got, err := collectRows(ctx, st)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%s: %v, %v; want %s, the latest", what, got, err, want)
		}
	}

	tx := e.Begin()
	c := count(tx)
	reads("in the transaction", c, "[[1]]")
	insert, err := s.Prepare(ctx, "INSERT INTO u VALUES (5, 5)", tx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, tx.ID()); err != nil {
		t.Fatal(err)
	}
	mustExec(t, s, "INSERT INTO u VALUES (2, 2), (3, 3)")
	mustExec(t, s, "CALL sys.expire_snapshots(table => 'u', retain_max => 1, retain_min => 1)")
	reads("a query prepared in the committed transaction", c, "[[3]]")
	if _, err = insert.Exec(ctx, nil); !errors.Is(err, engine.ErrTxnNotFound) || !strings.Contains(err.Error(), "has ended") {
		t.Errorf("an insert prepared in an ended transaction: %v, want it refused (transaction has ended)", err)
	}

	tx = e.Begin()
	c = count(tx)
	if _, err := exec(ctx, s, tx, "INSERT INTO u SELECT x, 10 / (x - 5) FROM range(10, 20) AS r(x) UNION ALL SELECT 4, 1 / 0"); engine.SQLState(err) != "22012" {
		t.Fatalf("the failing insert: %v", err)
	}
	if err := e.Rollback(tx.ID()); err != nil {
		t.Fatal(err)
	}
	reads("a query after a failed write and rollback", c, "[[3]]")
}
