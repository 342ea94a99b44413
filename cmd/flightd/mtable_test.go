package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
)

// sourceSnapshot is the snapshot of src that m's last refresh read, from
// DESCRIBE EXTENDED.
func sourceSnapshot(t *testing.T, cnxn adbc.Connection) string {
	t.Helper()
	for _, r := range rowsOf(t, cnxn, "DESCRIBE EXTENDED m", " ") {
		if v, ok := strings.CutPrefix(r, "source_snapshots default.src="); ok {
			return strings.Fields(v)[0]
		}
	}
	t.Fatal("DESCRIBE EXTENDED m shows no source snapshot")
	return ""
}

// checkRefreshAnswer checks that m holds exactly the answer of its query
// over the source snapshot its last refresh names. The scheduler may
// refresh meanwhile, so it reads the name before and after the rows and
// retries until they agree.
func checkRefreshAnswer(t *testing.T, cnxn adbc.Connection, what string) string {
	t.Helper()
	for range 20 {
		before := sourceSnapshot(t, cnxn)
		got := rowsOf(t, cnxn, "SELECT g, n, s FROM m", " ")
		if sourceSnapshot(t, cnxn) != before {
			continue
		}
		want := rowsOf(t, cnxn, "SELECT g, count(*), sum(id) FROM src /*+ OPTIONS('scan.snapshot-id'='"+before+"') */ GROUP BY g", " ")
		if !slices.Equal(got, want) {
			t.Fatalf("%s: m is not the answer over src snapshot %s:\n got %v\nwant %v", what, before, got, want)
		}
		return before
	}
	t.Fatalf("%s: m was refreshed during every read", what)
	return ""
}

// TestKill9DuringRefreshes kills a real flightd with SIGKILL while a
// materialized table with a freshness of one second is kept under a
// writer, all through the ADBC Flight SQL driver: in FULL mode its
// scheduler refreshes it every second, in CONTINUOUS mode its job commits
// the changes of each source snapshot. After every restart the table must
// equal the answer of its query over the source snapshot it records (never
// a mix of two refreshes or a lost or doubled change), and refreshes go on.
// FLIGHTD_MTABLE_KILLS sets the kills per mode (3 by default).
func TestKill9DuringRefreshes(t *testing.T) {
	for _, mode := range []string{"FULL", "CONTINUOUS"} {
		t.Run(mode, func(t *testing.T) { kill9DuringRefreshes(t, mode) })
	}
}

func kill9DuringRefreshes(t *testing.T, mode string) {
	p, rng, _ := startKill9(t)
	cnxn, closeConn := p.connect(t)
	for _, q := range []string{
		`CREATE TABLE src (id BIGINT NOT NULL, g BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('snapshot.num-retained.min' = '100000')`,
		`INSERT INTO src VALUES (0, 0)`,
		`CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '1' SECOND REFRESH_MODE = ` + mode + ` AS SELECT g, count(*) AS n, sum(id) AS s FROM src GROUP BY g`,
	} {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := execSQL(cnxn, `INSERT INTO m VALUES (1, 1, 1)`); err == nil || !strings.Contains(err.Error(), "materialized table") {
		t.Fatalf("insert into a materialized table through ADBC: %v", err)
	}
	checkRefreshAnswer(t, cnxn, "after CREATE")
	closeConn()

	var next int64
	last := ""
	for round := range killRounds(t, "FLIGHTD_MTABLE_KILLS", 3) {
		p = p.killRound(t, time.Duration(500+rng.IntN(1500))*time.Millisecond, func(cnxn adbc.Connection) bool {
			next++
			if err := execSQL(cnxn, fmt.Sprintf(`INSERT INTO src VALUES (%d, %d)`, next, next%7)); err != nil {
				return false // the server died under us
			}
			return true
		})
		check, closeCheck := p.connect(t)
		snap := checkRefreshAnswer(t, check, fmt.Sprintf("round %d, after kill -9", round))
		// The schedule resumes: a refresh reads the writes since.
		deadline := time.Now().Add(10 * time.Second)
		for snap == last && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			snap = checkRefreshAnswer(t, check, fmt.Sprintf("round %d, after restart", round))
		}
		if snap == last {
			t.Fatalf("round %d: no refresh in 10 s after restart (source snapshot %s)", round, snap)
		}
		last = snap
		closeCheck()
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("flightd did not exit cleanly on SIGTERM: %v", err)
	}
}
