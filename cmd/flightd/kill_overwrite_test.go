package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestKill9DuringLargeOverwrite kills a real flightd with SIGKILL while a
// client overwrites a partition of a key table again and again with tens
// of thousands of rows (writing files when the kill comes) and another
// compacts the table: after each restart the partition holds one
// overwrite whole, the last acknowledged or the one in flight, and the
// other partition is untouched.
func TestKill9DuringLargeOverwrite(t *testing.T) {
	p, rng, seed := startKill9(t)
	cnxn, closeConn := p.connect(t)
	for _, q := range []string{
		`CREATE TABLE ow2 (p INT NOT NULL, k BIGINT NOT NULL, g BIGINT, PRIMARY KEY (p, k) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '2')`,
		`INSERT INTO ow2 SELECT 1, range, -1 FROM range(1000)`,
	} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	closeConn()
	type gen struct {
		g, rows int64
		acked   bool
	}
	var gens []gen
	next := int64(0)
	for round := range killRounds(t, "FLIGHTD_KILL_OVERWRITE_ROUNDS", 3) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		cc, closeC := p.connect(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if err := execSQL(cc, `CALL sys.compact(table => 'ow2')`); err != nil && !strings.Contains(err.Error(), "conflict") {
					return
				}
			}
		}()
		p.killWriting(t, time.Duration(300+rng.IntN(1500))*time.Millisecond, func(c adbc.Connection) bool {
			next++
			n := int64(20000 + rng.IntN(60000))
			mu.Lock()
			gens = append(gens, gen{g: next, rows: n})
			i := len(gens) - 1
			mu.Unlock()
			err := execSQL(c, fmt.Sprintf(`INSERT OVERWRITE ow2 PARTITION (p = 0) SELECT range, %d FROM range(%d)`, next, n))
			mu.Lock()
			gens[i].acked = err == nil
			mu.Unlock()
			return err == nil
		})
		wg.Wait()
		closeC()
		p = start(t, p.bin, p.dataDir, p.flags...)
		check, closeCheck := p.connect(t)
		got := map[string]int64{}
		for _, r := range rowsOf(t, check, `SELECT p, g, count(*), count(DISTINCT k) FROM ow2 GROUP BY p, g`, "|") {
			f := strings.Split(r, "|")
			var n, d int64
			fmt.Sscan(f[2], &n)
			fmt.Sscan(f[3], &d)
			if n != d {
				t.Errorf("round %d (seed %d): %s: keys repeated", round, seed, r)
			}
			got[f[0]+"|"+f[1]] += n
		}
		closeCheck()
		if got["1|-1"] != 1000 || len(got) != 2 && !(len(got) == 1 && gens[0].acked == false) {
			t.Fatalf("round %d (seed %d): partitions %v", round, seed, got)
		}
		last := -1
		for i, g := range gens {
			if g.acked {
				last = i
			}
		}
		found := false
		for i, g := range gens {
			if n, ok := got[fmt.Sprintf("0|%d", g.g)]; ok {
				found = true
				if n != g.rows || i < last || (!g.acked && i != len(gens)-1) {
					t.Fatalf("round %d (seed %d): partition 0 holds %d rows of overwrite %d (%d written, acknowledged %v, last acknowledged %d of %d)", round, seed, n, g.g, g.rows, g.acked, last, len(gens))
				}
				gens = []gen{{g: g.g, rows: g.rows, acked: true}}
				break
			}
		}
		if !found && last >= 0 {
			t.Fatalf("round %d (seed %d): partition 0 holds %v, no acknowledged overwrite", round, seed, got)
		}
		t.Logf("round %d: partition 0 holds overwrite %d", round, gens[0].g)
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("flightd did not exit cleanly on SIGTERM: %v", err)
	}
}
