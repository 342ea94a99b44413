package flightsql_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestChangeStreamTopN: a top-N with its row number, read through the ADBC
// driver while another connection writes seeded random upserts and
// deletes: after every write the applied changelog reaches the batch
// answer of the query, every -U/-D retracts a row the client holds, and
// (partition, row number) stays a key of the applied rows.
func TestChangeStreamTopN(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	_, cnxn, _ := streamServer(t,
		"CREATE TABLE t (k BIGINT, v STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
		"INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'a', 30)",
	)
	const q = "SELECT v, k, n, rn FROM (SELECT v, k, n, ROW_NUMBER() OVER (PARTITION BY v ORDER BY n DESC, k) AS rn FROM t %s) x WHERE rn <= 2"
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(fmt.Sprintf(q, "/*+ OPTIONS('scan.mode'='latest-full', 'stream.heartbeat-interval'='50ms') */")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	batches := make(chan [][]string)
	go func() {
		defer close(batches)
		for rdr.Next() {
			select {
			case batches <- batchRows(rdr.RecordBatch()):
			case <-ctx.Done():
				return
			}
		}
	}()
	img := map[string]int{}
	// catchUp applies batches until the image is the batch answer now.
	catchUp := func(after string) {
		t.Helper()
		want := tableRows(t, query(t, cnxn, fmt.Sprintf(q, "")))
		for deadline := time.After(30 * time.Second); ; {
			if got := bagRows(img); slices.Equal(got, want) {
				return
			}
			var rows [][]string
			select {
			case r, ok := <-batches:
				if !ok {
					t.Fatalf("after %s the stream ended: %v", after, rdr.Err())
				}
				rows = r
			case <-deadline:
				t.Fatalf("after %s the applied changes are %q, the query gives %q", after, bagRows(img), want)
			}
			for _, row := range rows {
				r := strings.Join(row[1:], "|")
				switch row[0] {
				case "+I", "+U":
					img[r]++
				case "-U", "-D":
					if img[r] == 0 {
						t.Fatalf("after %s: %s of %s, which the client does not hold", after, row[0], r)
					}
					if img[r]--; img[r] == 0 {
						delete(img, r)
					}
				default:
					t.Fatalf("row kind %q", row[0])
				}
			}
			// A batch never splits a -U from its +U: after each, one row
			// holds each number.
			slots := map[string]bool{}
			for r := range img {
				f := strings.Split(r, "|")
				slot := f[0] + "|" + f[3]
				if slots[slot] || img[r] > 1 {
					t.Fatalf("after %s: two rows hold number %s of %s: %q", after, f[3], f[0], bagRows(img))
				}
				slots[slot] = true
			}
		}
	}
	catchUp("the start")
	for i := range 25 {
		var w string
		switch rng.Intn(4) {
		case 0:
			w = fmt.Sprintf("DELETE FROM t WHERE k = %d", rng.Intn(12))
		case 1:
			w = fmt.Sprintf("UPDATE t SET n = n + %d WHERE v = '%c'", rng.Intn(30)-15, 'a'+rng.Intn(3))
		default:
			w = fmt.Sprintf("INSERT INTO t VALUES (%d, '%c', %d), (%d, '%c', %d)",
				rng.Intn(12), 'a'+rng.Intn(3), rng.Intn(50), rng.Intn(12), 'a'+rng.Intn(3), rng.Intn(50))
		}
		mustExec(t, cnxn, w)
		catchUp(fmt.Sprintf("write %d (%s)", i, w))
	}
	if len(img) == 0 {
		t.Fatal("the top-N ended empty")
	}
	// The server ends the stream (the table is gone): cancelling
	// arrow-adbc v1.12's reader mid-stream races in the driver (its
	// goroutine reads the trailer grpc writes on cancel), which -race
	// reports.
	mustExec(t, cnxn, "DROP TABLE t")
	for range batches {
	}
	if err := rdr.Err(); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("the stream of a dropped table ended with %v, want not found", err)
	}
}
