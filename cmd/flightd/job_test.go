package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKill9JobExactlyOnce runs two continuous jobs (a GROUP BY and a join)
// in a real flightd while a writer upserts and deletes their sources, and
// kills flightd with SIGKILL at random times (FLIGHTD_JOB_KILLS times, 20
// by default). After the last restart and catch-up each job's sink must
// equal its query's batch answer exactly: nothing lost, nothing counted
// twice, no stale key left behind.
func TestKill9JobExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	kills := killRounds(t, "FLIGHTD_JOB_KILLS", 20)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d kills", seed, kills)
	rng := rand.New(rand.NewPCG(seed, 0))
	bin := buildFlightd(t)
	dir := t.TempDir()
	// One node restarted under its name: each restart runs the jobs at once.
	p := start(t, bin, dir, "-node-id", "n1")
	cnxn, closeConn := p.connect(t)
	for _, q := range []string{
		`CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
		`CREATE TABLE d (g BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (g) NOT ENFORCED)`,
		`CREATE TABLE agg (g BIGINT NOT NULL, c BIGINT, sv BIGINT, PRIMARY KEY (g) NOT ENFORCED)`,
		`CREATE TABLE j (k BIGINT NOT NULL, v BIGINT, name VARCHAR, PRIMARY KEY (k) NOT ENFORCED)`,
		`INSERT INTO s VALUES (1, 1, 10), (2, 2, 20)`,
		`INSERT INTO d VALUES (1, 'one'), (2, 'two')`,
		`INSERT INTO agg SELECT g, count(*), sum(v) FROM s /*+ OPTIONS('scan.mode'='latest-full') */ GROUP BY g`,
		`INSERT INTO j SELECT s.k, s.v, d.name FROM s /*+ OPTIONS('scan.mode'='latest-full') */
			JOIN d /*+ OPTIONS('scan.mode'='latest-full') */ ON s.g = d.g`,
	} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	closeConn()
	begin := time.Now()
	wrote := 0
	for kill := 0; kill < kills; kill++ {
		cnxn, closeConn := p.connect(t)
		writerRng := rand.New(rand.NewPCG(rng.Uint64(), 0))
		stop := make(chan struct{})
		done := make(chan int)
		go func() {
			n := 0
			defer func() { done <- n }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if execSQL(cnxn, randomWrite(writerRng)) != nil {
					return // killed under us
				}
				n++
			}
		}()
		time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
		p.kill(t)
		close(stop)
		wrote += <-done
		_ = p.cmd.Wait()
		closeConn()
		p = start(t, bin, dir, p.flags...)
	}
	cnxn, closeConn = p.connect(t)
	defer closeConn()
	for _, c := range []struct{ sink, batch string }{
		{`SELECT g, c, sv FROM agg`, `SELECT g, count(*), sum(v) FROM s GROUP BY g`},
		{`SELECT k, v, name FROM j`, `SELECT s.k, s.v, d.name FROM s JOIN d ON s.g = d.g`},
	} {
		want := rowsOf(t, cnxn, c.batch, "|")
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := rowsOf(t, cnxn, c.sink, "|")
			if slices.Equal(got, want) {
				t.Logf("%s: %d rows equal the batch answer", c.sink, len(got))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("seed %d: %s after %d kills:\n%v\nwant (%s)\n%v\njobs: %v", seed, c.sink, kills, got, c.batch, want,
					rowsOf(t, cnxn, `SHOW JOBS`, "|"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	jobs := jobsShown(t, cnxn)
	for _, j := range jobs {
		if j["state"] != "RUNNING" || j["node"] == "" || j["error"] != "" {
			t.Fatalf("job not running: %v", j)
		}
	}
	if len(jobs) != 2 {
		t.Fatalf("SHOW JOBS: %v", jobs)
	}
	t.Logf("%d kills in %s, %d writes acknowledged", kills, time.Since(begin).Round(time.Millisecond), wrote)
	if err := p.terminate(t); err != nil {
		t.Fatalf("flightd did not exit cleanly on SIGTERM with jobs running: %v", err)
	}
}

// randomWrite upserts or deletes rows of the jobs' sources.
func randomWrite(rng *rand.Rand) string {
	switch rng.IntN(10) {
	case 0:
		return fmt.Sprintf(`DELETE FROM s WHERE k %% 7 = %d`, rng.IntN(7))
	case 1:
		return fmt.Sprintf(`INSERT INTO d VALUES (%d, 'n%d')`, rng.IntN(6), rng.IntN(100))
	case 2:
		return fmt.Sprintf(`DELETE FROM d WHERE g = %d`, rng.IntN(6))
	}
	var vals []string
	for range 1 + rng.IntN(4) {
		vals = append(vals, fmt.Sprintf("(%d, %d, %d)", rng.IntN(50), rng.IntN(6), rng.IntN(1000)))
	}
	return `INSERT INTO s VALUES ` + strings.Join(vals, ", ")
}
