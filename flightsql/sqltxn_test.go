package flightsql_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"

	fsql "github.com/flightd/flightd/flightsql"
)

// txnSQL runs BEGIN, COMMIT or ROLLBACK through ExecuteQuery: the session
// cookie that carries the transaction must reach the client, and
// arrow-go's client drops the cookie of a DoPut update (ADBC's
// ExecuteUpdate): it never reads that stream's headers.
func txnSQL(cnxn adbc.Connection, q string) error {
	_, err := tryQuery(cnxn, q)
	return err
}

func mustTxnSQL(t testing.TB, cnxn adbc.Connection, q string) {
	t.Helper()
	if err := txnSQL(cnxn, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestSQLTransactions: BEGIN, COMMIT and ROLLBACK as SQL text, through
// the ADBC Go driver with cookies, from several concurrent clients each
// writing its own keys at random. A client's writes between BEGIN and
// ROLLBACK never appear, those before COMMIT appear together; every read
// (inside or outside a transaction, by any client) equals the model of
// committed writes.
func TestSQLTransactions(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	ts := startServer(t, fsql.Options{})
	setup := ts.connect(t, nil)
	mustExec(t, setup, `CREATE TABLE acct (client INT NOT NULL, k INT NOT NULL, v BIGINT, PRIMARY KEY (client, k) NOT ENFORCED)`)

	const clients = 4
	var mu sync.Mutex
	committed := make([]map[int]int64, clients) // per client, under mu
	var wg sync.WaitGroup
	for c := range clients {
		committed[c] = map[int]int64{}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			cnxn := ts.connect(t, map[string]string{adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled})
			// check reads the client's rows: those it committed, with
			// pending's written above them inside a transaction.
			check := func(what string, pending map[int]int64) bool {
				mu.Lock()
				want := maps.Clone(committed[c])
				got := map[int]int64{}
				mu.Unlock()
				maps.Copy(want, pending)
				rows, err := tryQuery(cnxn, fmt.Sprintf(`SELECT k, v FROM acct WHERE client = %d`, c))
				if err != nil {
					t.Errorf("client %d: %s: %v", c, what, err)
					return false
				}
				for _, r := range rows {
					k, _ := strconv.Atoi(r[0])
					v, _ := strconv.ParseInt(r[1], 10, 64)
					got[k] = v
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("seed %d: client %d: %s: read %v, committed %v", seed, c, what, got, want)
					return false
				}
				return true
			}
			for round := range 15 {
				mustTxnSQL(t, cnxn, "BEGIN")
				pending := map[int]int64{}
				for range 1 + rng.IntN(4) {
					k, v := rng.IntN(10), rng.Int64N(1000)
					mustExec(t, cnxn, fmt.Sprintf(`INSERT INTO acct VALUES (%d, %d, %d)`, c, k, v))
					pending[k] = v
					if !check(fmt.Sprintf("round %d, inside the transaction", round), pending) {
						return
					}
				}
				if rng.IntN(2) == 0 {
					mustTxnSQL(t, cnxn, "ROLLBACK")
				} else {
					mu.Lock()
					mustTxnSQL(t, cnxn, "COMMIT")
					for k, v := range pending {
						committed[c][k] = v
					}
					mu.Unlock()
				}
				if !check(fmt.Sprintf("round %d, after it ended", round), nil) {
					return
				}
			}
		})
	}
	wg.Wait()

	// Errors: BEGIN twice; COMMIT and ROLLBACK without a transaction fail
	// (as they do for a client that drops the cookie BEGIN set); a
	// transaction that timed out fails COMMIT, and ROLLBACK
	// leaves it.
	cnxn := ts.connect(t, map[string]string{adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled})
	for _, q := range []string{"COMMIT", "ROLLBACK"} {
		if err := txnSQL(cnxn, q); err == nil || !strings.Contains(err.Error(), "25P01") || !strings.Contains(err.Error(), "cookie") {
			t.Fatalf("%s without a transaction: %v", q, err)
		}
	}
	noCookie := ts.connect(t, nil)
	mustTxnSQL(t, noCookie, "BEGIN")
	if err := txnSQL(noCookie, "ROLLBACK"); err == nil || !strings.Contains(err.Error(), "25P01") {
		t.Fatalf("ROLLBACK from a client without cookies: %v", err)
	}
	mustTxnSQL(t, cnxn, "BEGIN")
	if err := txnSQL(cnxn, "BEGIN"); err == nil || !strings.Contains(err.Error(), "25001") {
		t.Fatalf("BEGIN inside a transaction: %v", err)
	}
	mustTxnSQL(t, cnxn, "ROLLBACK")
}

// TestSQLTransactionTimeout: a session whose transaction the server ended
// (idle past the timeout) fails its statements until ROLLBACK; COMMIT
// says the writes are lost.
func TestSQLTransactionTimeout(t *testing.T) {
	ts := startServerLimits(t, fsql.Limits{TxnIdle: 200 * time.Millisecond}, 0, fsql.Options{})
	cnxn := ts.connect(t, map[string]string{adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled})
	mustExec(t, cnxn, `CREATE TABLE t (k INT)`)
	for _, end := range []string{"COMMIT", "ROLLBACK"} {
		mustTxnSQL(t, cnxn, "BEGIN")
		mustExec(t, cnxn, `INSERT INTO t VALUES (1)`)
		// Idle past the timeout (every statement of the transaction would
		// keep it alive); the janitor runs a few times per timeout.
		time.Sleep(time.Second)
		if _, err := tryExec(cnxn, `INSERT INTO t VALUES (2)`); err == nil || !strings.Contains(err.Error(), "has ended") {
			t.Fatalf("a statement in a timed-out transaction: %v", err)
		}
		err := txnSQL(cnxn, end)
		if end == "COMMIT" && (err == nil || !strings.Contains(err.Error(), "writes are lost")) {
			t.Fatalf("COMMIT of a timed-out transaction: %v", err)
		}
		if end == "ROLLBACK" && err != nil {
			t.Fatalf("ROLLBACK of a timed-out transaction: %v", err)
		}
		wantRows(t, query(t, cnxn, `SELECT count(*) FROM t`), "0")
	}
}

// TestSQLCommitInClientTransaction: COMMIT or ROLLBACK as SQL in a
// transaction the client began with BeginTransaction (ADBC with autocommit
// off) is refused naming that transaction, which goes on and commits
// through the API. It said no transaction was in progress and that the
// writes since a BEGIN had been committed, while they were pending.
func TestSQLCommitInClientTransaction(t *testing.T) {
	ts := startServer(t, fsql.Options{})
	cnxn := ts.connect(t, map[string]string{adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled})
	mustExec(t, cnxn, "CREATE TABLE c (a INT)")
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	mustExec(t, cnxn, "INSERT INTO c VALUES (1)")
	for _, q := range []string{"COMMIT", "ROLLBACK"} {
		if err := txnSQL(cnxn, q); err == nil || !strings.Contains(err.Error(), "this statement runs in transaction") || !strings.Contains(err.Error(), "25001") {
			t.Errorf("%s in the client's transaction: %v, want it refused naming the transaction (25001)", q, err)
		}
	}
	other := ts.connect(t, nil)
	if rows, err := tryQuery(other, "SELECT count(*) FROM c"); err != nil || fmt.Sprint(rows) != "[[0]]" {
		t.Fatalf("before the commit another client reads %v rows, %v", rows, err)
	}
	if err := cnxn.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rows, err := tryQuery(other, "SELECT count(*) FROM c"); err != nil || fmt.Sprint(rows) != "[[1]]" {
		t.Fatalf("after the commit another client reads %v rows, %v", rows, err)
	}
}
