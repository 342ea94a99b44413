package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// keyConsumer follows the exact changes (+I, -U, +U, -D) of the
// primary-key table kt (k, v), applying them by key and checking each
// before-image against what it holds: a change lost or applied twice
// breaks the next change of its key.
func keyConsumer() *resumingConsumer[int64, int64, keyChange] {
	return &resumingConsumer[int64, int64, keyChange]{
		table: "kt",
		image: map[int64]int64{},
		decode: func(b arrow.RecordBatch, i int) keyChange {
			return keyChange{b.Column(0).(*array.String).Value(i), b.Column(1).(*array.Int64).Value(i), b.Column(2).(*array.Int64).Value(i)}
		},
		apply: func(image map[int64]int64, ch keyChange, snapshot int64) error {
			old, there := image[ch.k]
			switch ch.kind {
			case "+I", "+U":
				if there {
					return fmt.Errorf("consumer invariant: %s of key %d = %d, which holds %d (snapshot %d)", ch.kind, ch.k, ch.v, old, snapshot)
				}
				image[ch.k] = ch.v
			case "-U", "-D":
				if !there || old != ch.v {
					return fmt.Errorf("consumer invariant: %s of key %d = %d, which holds %d (there %v, snapshot %d)", ch.kind, ch.k, ch.v, old, there, snapshot)
				}
				delete(image, ch.k)
			default:
				return fmt.Errorf("consumer invariant: row kind %q", ch.kind)
			}
			return nil
		},
	}
}

type keyChange struct {
	kind string
	k, v int64
}

// TestKill9KeyChangeStreamExact kills a real flightd with SIGKILL while
// three clients upsert, update and delete keys of a primary-key table with
// the lookup changelog producer, compaction running, and a consumer
// follows its changes by consumer id: each change's before-image must be
// what the consumer holds (nothing lost or applied twice across restarts),
// and at the end its image is the table.
func TestKill9KeyChangeStreamExact(t *testing.T) {
	p, rng, seed := startKill9(t)
	cnxn, closeConn := p.connect(t)
	producer := `'changelog-producer' = 'lookup'`
	if os.Getenv("FLIGHTD_STREAM_FULL_COMPACTION") != "" {
		producer = `'changelog-producer' = 'full-compaction', 'full-compaction.delta-commits' = '3'`
	}
	if err := execSQL(cnxn, `CREATE TABLE kt (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', `+producer+`, 'num-sorted-run.compaction-trigger' = '2')`); err != nil {
		t.Fatal(err)
	}
	closeConn()
	c := keyConsumer()
	c.addr.Store(&p.addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.run(ctx) }()
	var next atomic.Int64
	rounds := killRounds(t, "FLIGHTD_KILL_STREAM_ROUNDS", 3)
	for round := range rounds {
		var stop atomic.Bool
		var writers sync.WaitGroup
		for w := range 3 {
			cw, closeW := p.connect(t)
			writers.Add(1)
			go func() {
				defer writers.Done()
				defer closeW()
				wr := rand.New(rand.NewPCG(uint64(seed), uint64(round*10+w)))
				for !stop.Load() {
					k := wr.IntN(30)
					var q string
					switch wr.IntN(6) {
					case 0:
						q = fmt.Sprintf(`DELETE FROM kt WHERE k = %d`, k)
					case 1:
						q = fmt.Sprintf(`UPDATE kt SET v = v + 1000 WHERE k = %d`, k)
					case 2:
						q = `CALL sys.compact(table => 'kt')`
					default:
						q = fmt.Sprintf(`INSERT INTO kt VALUES (%d, %d), (%d, %d)`, k, next.Add(1), (k+11)%30, next.Add(1))
					}
					if err := execSQL(cw, q); err != nil && !strings.Contains(err.Error(), "40001") {
						return // killed under us
					}
				}
			}()
		}
		c.awaitCommits(3)
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		p.kill(t)
		stop.Store(true)
		writers.Wait()
		_ = p.cmd.Wait()
		p = start(t, p.bin, p.dataDir, p.flags...)
		c.addr.Store(&p.addr)
	}
	cnxn, closeConn = p.connect(t)
	defer closeConn()
	if err := execSQL(cnxn, `INSERT INTO kt VALUES (-1, -1)`); err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{}
	for _, r := range rowsOf(t, cnxn, `SELECT k, v FROM kt`, " ") {
		var k, v int64
		fmt.Sscan(r, &k, &v)
		want[k] = v
	}
	if err := c.awaitImage(want); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	t.Logf("consumer followed %d keys over %d kill -9 restarts (%d reconnects, %d commits)", len(want), rounds, c.restarts.Load(), c.commits.Load())
	cancel()
	wg.Wait()
}
