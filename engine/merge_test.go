package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/flightd/flightd/tablestore"
)

// TestMergeConcurrent: clients MERGE increments into a few keys at once
// (UPDATE when the key exists, INSERT when not), each retrying on a
// serialization failure, while others UPDATE the same keys or INSERT keys
// of their own. No increment is lost or applied twice: each key ends at
// the number of acknowledged increments.
func TestMergeConcurrent(t *testing.T) {
	mergeConcurrent(t, "CREATE TABLE acct (id BIGINT NOT NULL, v BIGINT, PRIMARY KEY (id) NOT ENFORCED)")
}

// TestMergeAppendConcurrent: the same into an append table, which MERGE
// rewrites; blind INSERTs of other rows run alongside and none is lost
// by a rewrite, and no key is inserted twice by MERGEs racing on it.
func TestMergeAppendConcurrent(t *testing.T) {
	mergeConcurrent(t, "CREATE TABLE acct (id BIGINT, v BIGINT)")
}

func mergeConcurrent(t *testing.T, ddl string) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	ctx := context.Background()
	e := newEngine(t)
	mustExec(t, e.NewSession(), ddl)
	const keys, clients, rounds = 4, 6, 25
	var mu sync.Mutex
	acked := map[int]int64{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			s := e.NewSession()
			for r := range rounds {
				k := rng.IntN(keys)
				q := fmt.Sprintf(`MERGE INTO acct AS a USING (VALUES (%d, 1)) AS s(id, d) ON a.id = s.id
					WHEN MATCHED THEN UPDATE SET v = a.v + s.d WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.d)`, k)
				switch c % 3 {
				case 1: // a blind write of a key of its own
					k = 100 + c*rounds + r
					q = fmt.Sprintf("INSERT INTO acct VALUES (%d, 1)", k)
				case 2:
					q = fmt.Sprintf(`UPDATE acct SET v = v + 1 WHERE id = %d`, k)
				}
				for {
					n, err := exec(ctx, s, nil, q)
					if errors.Is(err, tablestore.ErrSerialization) {
						continue
					}
					if err != nil {
						t.Errorf("seed %d: %s: %v", seed, q, err)
						return
					}
					mu.Lock()
					acked[k] += n // an UPDATE of a key not there yet changes nothing
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	got := map[int]int64{}
	for _, r := range rows(t, e.NewSession(), "SELECT id, v FROM acct") {
		id, _ := strconv.Atoi(r[0])
		v, _ := strconv.ParseInt(r[1], 10, 64)
		if _, dup := got[id]; dup {
			t.Fatalf("seed %d: key %d twice", seed, id)
		}
		got[id] = v
	}
	if fmt.Sprint(got) != fmt.Sprint(acked) {
		t.Fatalf("seed %d: table %v, acknowledged increments %v", seed, got, acked)
	}
}
