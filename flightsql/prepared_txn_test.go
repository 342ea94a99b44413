package flightsql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	fsql "github.com/flightd/flightd/flightsql"
)

// TestPreparedFollowsCurrentTxn: clients keep statements prepared once and
// run them across their commits and rollbacks, as ADBC's DB-API cursor
// does for the same SQL text, and a JDBC PreparedStatement does. Each
// client (its own connection and table) runs random steps against a model
// of its committed and pending rows: half through the ADBC transaction
// API, switching autocommit off and on, half with BEGIN, COMMIT and
// ROLLBACK as SQL in a cookie session. The insert reads the table (its next n is max(n) + 1),
// so a statement that does not see its transaction's own writes writes a
// duplicate n. A prepared write failed after the first commit (its
// transaction had ended), and one prepared outside BEGIN committed on its
// own despite a later ROLLBACK. One prepared in a transaction failed after
// autocommit went on. One prepared in autocommit runs outside throughout,
// as Flight SQL defines for a statement prepared without a transaction.
func TestPreparedFollowsCurrentTxn(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	ts := startServer(t, fsql.Options{})
	const clients, steps = 4, 40
	setup := ts.connect(t, nil)
	for c := range clients {
		mustExec(t, setup, fmt.Sprintf("CREATE TABLE t%d (n BIGINT)", c))
	}
	ctx := context.Background()
	committed := make([]int, clients)
	var wg sync.WaitGroup
	for c := range clients {
		api := c%2 == 0
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			var opts map[string]string
			if !api {
				opts = map[string]string{adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled}
			}
			cnxn := ts.connect(t, opts)
			autocommit := func(on bool) error {
				v := adbc.OptionValueDisabled
				if on {
					v = adbc.OptionValueEnabled
				}
				return cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, v)
			}
			// Half of the API clients prepare in autocommit, the others in
			// a transaction.
			manual := api && c%4 == 0
			if manual {
				if err := autocommit(false); err != nil {
					t.Error(err)
					return
				}
			}
			ins := prepare(t, cnxn, fmt.Sprintf("INSERT INTO t%d SELECT coalesce(max(n), 0) + 1 FROM t%d", c, c))
			defer ins.Close()
			cnt := prepare(t, cnxn, fmt.Sprintf("SELECT count(*), count(DISTINCT n) FROM t%d", c))
			defer cnt.Close()
			pending, inTxn := 0, manual
			// Flight SQL auto-commits statements prepared without a
			// transaction id; ADBC's cursor keeps them after autocommit goes
			// off.
			preparedOutside := api && !manual
			end := func(commit bool) error {
				var err error
				switch {
				case api && commit:
					err = cnxn.Commit(ctx)
				case api:
					err = cnxn.Rollback(ctx)
				case commit:
					err = txnSQL(cnxn, "COMMIT")
				default:
					err = txnSQL(cnxn, "ROLLBACK")
				}
				if err == nil && commit {
					committed[c] += pending
				}
				pending, inTxn = 0, api
				return err
			}
			for step := range steps {
				var err error
				switch op := rng.IntN(6); {
				case op < 2:
					if _, err = ins.ExecuteUpdate(ctx); err == nil {
						if inTxn && !preparedOutside {
							pending++
						} else {
							committed[c]++
						}
					}
				case op < 4: // only the read below
				case op == 4 && api:
					// ADBC commits as autocommit goes on, and begins as it
					// goes off.
					if err = autocommit(inTxn); err == nil {
						if inTxn {
							committed[c] += pending
							pending = 0
						}
						inTxn = !inTxn
					}
				case op == 4 && !inTxn:
					if err = txnSQL(cnxn, "BEGIN"); err == nil {
						inTxn = true
					}
				case inTxn:
					err = end(rng.IntN(2) == 0)
				}
				if err != nil {
					t.Errorf("client %d step %d: %v", c, step, err)
					return
				}
				rows, err := tryQueryPrepared(cnt)
				seen := committed[c] + pending
				if preparedOutside {
					seen = committed[c]
				}
				want := fmt.Sprint([][]string{{fmt.Sprint(seen), fmt.Sprint(seen)}})
				if err != nil || fmt.Sprint(rows) != want {
					t.Errorf("client %d step %d (transaction %v, %d pending): read %v, %v; want %s", c, step, inTxn, pending, rows, err, want)
					return
				}
			}
			if inTxn {
				if err := end(true); err != nil {
					t.Errorf("client %d: last commit: %v", c, err)
				}
			}
		})
	}
	wg.Wait()
	for c := range clients {
		if got, want := fmt.Sprint(query(t, setup, fmt.Sprintf("SELECT count(*) FROM t%d", c))), fmt.Sprintf("[[%d]]", committed[c]); got != want {
			t.Errorf("table t%d: %s rows, want %s committed", c, got, want)
		}
	}
}

// tryQueryPrepared runs a prepared query without parameters.
func tryQueryPrepared(st adbc.Statement) ([][]string, error) {
	rdr, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return readRows(rdr)
}

// TestPreparedNotIntoOthersTxn: on one gRPC connection that two clients
// share (arrow-go's client, one per process), a write prepared in a
// transaction its client committed does not follow into the other client's
// transaction, begun before it last ran: it commits on its own, and the
// other transaction's rollback takes nothing acknowledged with it. The
// transaction the connection begins after it (as ADBC does on commit) it
// follows.
func TestPreparedNotIntoOthersTxn(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, fsql.Options{})
	mustExec(t, ts.connect(t, nil), "CREATE TABLE w (n BIGINT)")
	cl, _ := ts.rawClient(t)
	mine, err := cl.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := mine.Prepare(ctx, "INSERT INTO w VALUES (1)")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close(ctx)
	theirs, err := cl.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ins.ExecuteUpdate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mine.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ins.ExecuteUpdate(ctx); err != nil {
		t.Errorf("the insert prepared in the committed transaction, with another client's open: %v, want it run on its own", err)
	}
	if err := theirs.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(query(t, ts.connect(t, nil), "SELECT count(*) FROM w")); got != "[[2]]" {
		t.Errorf("%s rows after the other transaction's rollback, want 2", got)
	}
	next, err := cl.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ins.ExecuteUpdate(ctx); err != nil {
		t.Errorf("the insert in the connection's next transaction: %v", err)
	}
	if err := next.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(query(t, ts.connect(t, nil), "SELECT count(*) FROM w")); got != "[[3]]" {
		t.Errorf("%s rows, want 3: two in transactions committed, one on its own", got)
	}
}

// TestPreparedAutocommitAfterClientEnds: a write prepared in a transaction
// runs in autocommit once its client ended that transaction and every later
// one itself and has none open (ADBC after set_autocommit(True): the
// DB-API cursor reuses the statement). One whose transaction, or a later
// one, the server ended for idling stays refused and writes nothing: its
// client may still believe it is in it.
func TestPreparedAutocommitAfterClientEnds(t *testing.T) {
	ctx := context.Background()
	idle := 300 * time.Millisecond
	ts := startServerLimits(t, fsql.Limits{TxnIdle: idle}, 0, fsql.Options{})
	mustExec(t, ts.connect(t, nil), "CREATE TABLE a (n BIGINT)")
	count := func() string { return fmt.Sprint(query(t, ts.connect(t, nil), "SELECT count(*) FROM a")) }
	cl, _ := ts.rawClient(t)
	begin := func() *arrowflightsql.Txn {
		tx, err := cl.BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	mustEnd := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}

	t1 := begin()
	ins, err := t1.Prepare(ctx, "INSERT INTO a VALUES (1)")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close(ctx)
	if _, err := ins.ExecuteUpdate(ctx); err != nil {
		t.Fatal(err)
	}
	mustEnd(t1.Commit(ctx))
	// ADBC's commit() with autocommit off, then set_autocommit(True).
	t2 := begin()
	mustEnd(t2.Commit(ctx))
	if _, err := ins.ExecuteUpdate(ctx); err != nil {
		t.Fatalf("the insert after the client ended its transactions: %v, want it run in autocommit", err)
	}
	if got := count(); got != "[[2]]" {
		t.Fatalf("%s rows after the autocommit insert, want 2: it commits at once", got)
	}
	// A transaction begun later that the server rolls back for idling.
	t3 := begin()
	time.Sleep(3 * idle)
	if _, err := ins.ExecuteUpdate(ctx); err == nil {
		t.Errorf("the insert after the server ended the client's transaction: ran, want it refused")
	}
	if err := t3.Rollback(ctx); err == nil {
		t.Errorf("rollback of the transaction the server ended: no error")
	}
	if got := count(); got != "[[2]]" {
		t.Errorf("%s rows after the refused insert, want 2", got)
	}

	// The statement's own transaction ended by the server.
	t4 := begin()
	own, err := t4.Prepare(ctx, "INSERT INTO a VALUES (4)")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close(ctx)
	if _, err := own.ExecuteUpdate(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * idle)
	if _, err := own.ExecuteUpdate(ctx); err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Errorf("the insert whose transaction the server ended: %v, want it refused", err)
	}
	if got := count(); got != "[[2]]" {
		t.Errorf("%s rows after the server ended the transaction, want 2: its writes are lost", got)
	}

	// Prepared outside a transaction, it runs outside, as Flight SQL
	// defines, whatever transactions the connection begins.
	out, err := cl.Prepare(ctx, "INSERT INTO a VALUES (5)")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close(ctx)
	ta := begin()
	if _, err := out.ExecuteUpdate(ctx); err != nil {
		t.Errorf("the insert prepared outside, with a transaction begun since: %v", err)
	}
	mustEnd(ta.Rollback(ctx))
	if got := count(); got != "[[3]]" {
		t.Errorf("%s rows at the end, want 3", got)
	}
}
