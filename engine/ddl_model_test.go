package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDDLRacingWritesModel: sessions on two engines over one warehouse
// insert new keys and increment counters (each increment appends its id to
// the row's h) while another session alters the table at random: adds,
// renames and drops other columns, renames h away and back, widens w from
// INT to BIGINT. Writes may fail while a column they name is renamed
// away, a read-modify-write may lose to a concurrent commit; afterwards
// every acknowledged insert is there with its values, every counter holds
// exactly its acknowledged increments, none of a failed statement.
func TestDDLRacingWritesModel(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	engines := nodesSharing(t, 2)
	admin := engines[0].NewSession()
	mustExec(t, admin, "CREATE TABLE t (k BIGINT NOT NULL, v BIGINT, h STRING, w INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', 'num-sorted-run.compaction-trigger' = '2')")
	mustExec(t, admin, "INSERT INTO t VALUES (0, 0, '', 0), (1, 0, '', 0), (2, 0, '', 0)")
	var mu sync.Mutex
	incs := map[string]bool{}   // increment id -> acknowledged
	inserts := map[int64]bool{} // key -> acknowledged
	errs := map[string]int{}
	insErr := map[int64]error{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			s := engines[c%2].NewSession()
			for i := 0; !stop.Load(); i++ {
				var q string
				id := fmt.Sprintf("c%di%d", c, i)
				key := int64(1_000_000*(c+1) + i)
				ins := rng.IntN(2) == 0
				if ins {
					q = fmt.Sprintf("INSERT INTO t (k, v, h, w) VALUES (%d, 0, '%s', %d)", key, id, key)
				} else {
					q = fmt.Sprintf("UPDATE t SET v = v + 1, h = h || ',%s' WHERE k = %d", id, rng.IntN(3))
				}
				n, err := exec(ctx, s, nil, q)
				mu.Lock()
				if ins {
					inserts[key] = err == nil
					insErr[key] = err
				} else {
					incs[id] = err == nil && n == 1
				}
				if err != nil {
					msg := err.Error()
					if i := strings.Index(msg, ": "); i > 0 && len(msg) > 60 {
						msg = msg[:60]
					}
					errs[msg]++
				}
				mu.Unlock()
			}
		}()
	}
	ddl := []string{
		"ALTER TABLE t ADD COLUMN c%d INT",
		"ALTER TABLE t DROP COLUMN c%d",
		"ALTER TABLE t RENAME COLUMN c%d TO d%d",
		"ALTER TABLE t DROP COLUMN d%d",
		"CALL sys.compact(table => 't')",
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	s := engines[1].NewSession()
	deadline := time.Now().Add(2 * time.Second)
	widened := false
	for time.Now().Before(deadline) {
		n := rng.IntN(3)
		q := strings.ReplaceAll(ddl[rng.IntN(len(ddl))], "%d", fmt.Sprint(n))
		switch rng.IntN(15) {
		case 0:
			if _, err := exec(ctx, s, nil, "ALTER TABLE t RENAME COLUMN h TO g"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			q = "ALTER TABLE t RENAME COLUMN g TO h"
		case 1:
			if !widened {
				q, widened = "ALTER TABLE t MODIFY w BIGINT", true
			}
		}
		if _, err := exec(ctx, s, nil, q); err != nil && strings.Contains(q, "RENAME COLUMN g") {
			t.Fatalf("%s: %v", q, err)
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	seen := map[string]int{}
	for _, r := range rows(t, admin, "SELECT k, v, h, w FROM t") {
		var k int64
		fmt.Sscan(r[0], &k)
		if k < 3 {
			ids := strings.Split(r[2], ",")[1:]
			if r[1] != fmt.Sprint(len(ids)) {
				t.Errorf("counter %d = %s with %d ids", k, r[1], len(ids))
			}
			for _, id := range ids {
				seen[id]++
			}
			continue
		}
		if ok, sent := inserts[k]; !sent || !ok {
			t.Errorf("row %v: insert sent %v, acknowledged %v (%v)", r, sent, ok, insErr[k])
		}
		if r[1] != "0" || r[3] != r[0] || !strings.HasPrefix(r[2], "c") {
			t.Errorf("inserted row %v: values changed", r)
		}
		delete(inserts, k)
	}
	for k, ok := range inserts {
		if ok {
			t.Errorf("acknowledged insert %d missing", k)
		}
	}
	nacked := 0
	for id, ok := range incs {
		if ok {
			nacked++
		}
		if ok && seen[id] != 1 || !ok && seen[id] != 0 {
			t.Errorf("increment %s: acknowledged %v, in the counter %d times", id, ok, seen[id])
		}
	}
	t.Logf("%d acknowledged increments; errors: %v", nacked, errs)
}
