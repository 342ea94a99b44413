package flightsql_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"

	fsql "github.com/flightd/flightd/flightsql"
)

var isolationSeed = flag.Uint64("seed", 0, "seed of the random isolation test (0: a new one)")

// TestIsolationOverFlightSQL: ADBC clients mix counter increments
// (autocommit UPDATEs, and UPDATEs in transactions) with blind INSERTs of
// new keys into the same key table. Increments either commit or fail with
// Aborted and a message to retry; blind inserts never fail; the final
// table holds exactly the acknowledged effects.
func TestIsolationOverFlightSQL(t *testing.T) {
	seed := *isolationSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	ts := startServer(t, fsql.Options{})
	setup := ts.connect(t, nil)
	mustExec(t, setup, `CREATE TABLE u (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')`)
	mustExec(t, setup, `INSERT INTO u VALUES (0, 0), (1, 0)`)
	const clients, steps = 6, 25
	var (
		mu       sync.Mutex
		incs     [2]int
		inserted = map[int]bool{} // key -> acknowledged
	)
	var wg sync.WaitGroup
	for c := range clients {
		cnxn := ts.connect(t, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			inTxn := false
			for step := range steps {
				if want := rng.IntN(3) == 0; want != inTxn {
					v := adbc.OptionValueEnabled
					if want {
						v = adbc.OptionValueDisabled
					}
					if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, v); err != nil {
						t.Error(err)
						return
					}
					inTxn = want
				}
				k := rng.IntN(2)
				blind := 100 + c*steps + step
				mu.Lock()
				inserted[blind] = false
				mu.Unlock()
				_, err := tryExec(cnxn, fmt.Sprintf(`INSERT INTO u VALUES (%d, 1)`, blind))
				if err != nil {
					t.Errorf("blind insert: %v", err)
					return
				}
				rmw := rng.IntN(2) == 0
				if rmw {
					if _, err = tryExec(cnxn, fmt.Sprintf(`UPDATE u SET v = v + 1 WHERE k = %d`, k)); err != nil {
						if inTxn || !retryable(err) {
							t.Errorf("update (transaction %v): %v", inTxn, err)
							return
						}
						rmw = false // failed alone; the insert committed before it
					}
				}
				if inTxn {
					err = cnxn.Commit(context.Background())
				}
				switch {
				case err == nil:
					mu.Lock()
					inserted[blind] = true
					if rmw {
						incs[k]++
					}
					mu.Unlock()
				case inTxn && retryable(err) && rmw:
					// The transaction lost its increment, and its insert with
					// it. arrow-go's client keeps no transaction after a
					// failed commit, so the ADBC connection is of no more use.
					cnxn, inTxn = ts.connect(t, nil), false
				case !inTxn && retryable(err):
					mu.Lock()
					inserted[blind] = true
					mu.Unlock()
				default:
					t.Errorf("client %d step %d (transaction %v, update %v): %v", c, step, inTxn, rmw, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := map[string]string{}
	for _, r := range query(t, setup, `SELECT k, v FROM u`) {
		got[r[0]] = r[1]
	}
	for k := range 2 {
		if want := fmt.Sprint(incs[k]); got[fmt.Sprint(k)] != want {
			t.Errorf("counter %d = %s, %s increments acknowledged", k, got[fmt.Sprint(k)], want)
		}
	}
	for k, acked := range inserted {
		if _, there := got[fmt.Sprint(k)]; there != acked {
			t.Errorf("key %d: in the table %v, insert acknowledged %v", k, there, acked)
		}
	}
	t.Logf("%d + %d increments, %d inserts", incs[0], incs[1], len(inserted))
}

// retryable: the serialization failure of a read-modify-write, as a
// client sees it (gRPC Aborted, SQLSTATE 40001).
func retryable(err error) bool {
	var ae adbc.Error
	return errors.As(err, &ae) && strings.Contains(ae.Msg, "serialization failure, retry the transaction") &&
		strings.Contains(ae.Msg, "Aborted") && strings.Contains(ae.Msg, "[SQLSTATE 40001]")
}
