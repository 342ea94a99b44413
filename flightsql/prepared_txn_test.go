package flightsql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"

	fsql "github.com/flightd/flightd/flightsql"
)

// TestPreparedFollowsCurrentTxn: clients keep statements prepared once and
// run them across their commits and rollbacks, as ADBC's DB-API cursor
// does for the same SQL text, and a JDBC PreparedStatement does. Each
// client (its own connection and table) runs random steps against a model
// of its committed and pending rows: half through the ADBC transaction
// API (autocommit off), half with BEGIN, COMMIT and ROLLBACK as SQL in a
// cookie session. The insert reads the table (its next n is max(n) + 1),
// so a statement that does not see its transaction's own writes writes a
// duplicate n. A prepared write failed after the first commit (its
// transaction had ended), and one prepared outside BEGIN committed on its
// own despite a later ROLLBACK.
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
			if api {
				if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
					t.Error(err)
					return
				}
			}
			ins := prepare(t, cnxn, fmt.Sprintf("INSERT INTO t%d SELECT coalesce(max(n), 0) + 1 FROM t%d", c, c))
			defer ins.Close()
			cnt := prepare(t, cnxn, fmt.Sprintf("SELECT count(*), count(DISTINCT n) FROM t%d", c))
			defer cnt.Close()
			pending, inTxn := 0, api
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
						if inTxn {
							pending++
						} else {
							committed[c]++
						}
					}
				case op < 4: // only the read below
				case op == 4 && !api && !inTxn:
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
				want := fmt.Sprint([][]string{{fmt.Sprint(committed[c] + pending), fmt.Sprint(committed[c] + pending)}})
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
// transaction that has ended does not follow into the other client's
// transaction, begun before it last ran: it is refused, and the other
// transaction's rollback takes nothing acknowledged with it. The
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
	if _, err := ins.ExecuteUpdate(ctx); err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Errorf("the insert prepared in the committed transaction, with another client's open: %v, want it refused", err)
	}
	if err := theirs.Rollback(ctx); err != nil {
		t.Fatal(err)
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
	if got := fmt.Sprint(query(t, ts.connect(t, nil), "SELECT count(*) FROM w")); got != "[[2]]" {
		t.Errorf("%s rows, want 2: one per transaction committed", got)
	}
}
