// Package eventjobs holds continuous jobs of the event-time operators
// (SESSION windows, window top-N, window and interval joins, window
// aggregation), and one of a regular join and aggregation (whose
// checkpoints are incremental), over event tables written out of order
// but never late, for the tests that hold such jobs to their batch
// answers across restarts.
package eventjobs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Setup creates the event tables w and w2 (k, g, v, ts; WATERMARK ts less
// 2 s) and puts one row, of the day before Writer's first rows, in w2: the
// joins' watermark (the smaller of their inputs') is then set once w's
// is.
var Setup = []string{
	`CREATE TABLE w (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, ts TIMESTAMP(3),
	PRIMARY KEY (k) NOT ENFORCED, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)`,
	`CREATE TABLE w2 (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, ts TIMESTAMP(3),
	PRIMARY KEY (k) NOT ENFORCED, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)`,
	`INSERT INTO w2 VALUES (2000000, 1, 7, TIMESTAMP '2019-12-31 00:00:00.500')`,
}

// Job is a continuous job: its sink's rows must equal Batch, at the
// source snapshots the job reports, for the windows the watermark closed.
type Job struct {
	Name    string
	Sink    string // the sink's CREATE TABLE
	Insert  string // the job
	Batch   string // the job's query at %[1]s (w) and %[2]s (w2): a snapshot hint each, or nothing
	Rows    string // SELECT of the sink's rows at %s: a snapshot hint or nothing
	Sources []string
}

// streamed is the hint that streams a job's source.
const streamed = `/*+ OPTIONS('scan.mode'='latest-full') */`

// The watermark of the job's sources at the batch query's snapshots: the
// largest event time of w (the smaller of w's and w2's), less the 2 s
// the WATERMARKs allow.
const (
	closedW  = `(SELECT max(ts) - INTERVAL '2' SECOND FROM w %[1]s)`
	closedW2 = `(SELECT min(m) - INTERVAL '2' SECOND FROM (SELECT max(ts) AS m FROM w %[1]s UNION ALL SELECT max(ts) AS m FROM w2 %[2]s) x)`
)

// Jobs are a SESSION aggregation, window top-N over a TUMBLE TVF and over
// a window aggregation, an inner window join, an inner interval join, a
// TUMBLE aggregation, and an aggregation of a regular join.
func Jobs() []Job {
	session := `SELECT g, window_start, window_end, count(*), sum(v)
		FROM TABLE(SESSION(TABLE w %[1]s PARTITION BY g, DESCRIPTOR(ts), INTERVAL '2' SECOND))
		%[2]s GROUP BY g, window_start, window_end`
	tvfRank := `SELECT window_start, window_end, g, rn, k, v FROM (SELECT window_start, window_end, g, k, v,
			ROW_NUMBER() OVER (PARTITION BY window_start, window_end, g ORDER BY v DESC, k) AS rn
		FROM TABLE(TUMBLE(TABLE w %[1]s, DESCRIPTOR(ts), INTERVAL '10' SECOND))) x WHERE rn <= 2 %[2]s`
	aggRank := `SELECT window_start, window_end, rn, g, c FROM (SELECT window_start, window_end, g, c,
			ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY c DESC, g) AS rn
		FROM (SELECT window_start, window_end, g, count(*) AS c
			FROM TABLE(TUMBLE(TABLE w %[1]s, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end, g) y) x
		WHERE rn <= 2 %[2]s`
	windowJoin := `SELECT a.k AS ak, b.k AS bk, a.window_start AS ws, a.v AS av, b.v AS bv
		FROM TABLE(TUMBLE(TABLE w %[1]s, DESCRIPTOR(ts), INTERVAL '5' SECOND)) a
		JOIN TABLE(TUMBLE(TABLE w2 %[2]s, DESCRIPTOR(ts), INTERVAL '5' SECOND)) b
		ON a.window_start = b.window_start AND a.window_end = b.window_end AND a.g = b.g %[3]s`
	interval := `SELECT a.k AS ak, b.k AS bk, a.v AS av, b.v AS bv FROM w %[1]s a JOIN w2 %[2]s b
		ON a.g = b.g AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts + INTERVAL '1' SECOND`
	joinAgg := `SELECT a.g, count(*), max(b.k) FROM w %[1]s a JOIN w2 %[2]s b ON a.v = b.v GROUP BY a.g`
	tumble := `SELECT g, window_start, count(*), sum(v)
		FROM TABLE(TUMBLE(TABLE w %[1]s, DESCRIPTOR(ts), INTERVAL '3' SECOND))
		%[2]s GROUP BY g, window_start, window_end`
	return []Job{{
		Name:    "session",
		Sink:    `CREATE TABLE sw (g BIGINT NOT NULL, ws TIMESTAMP(3) NOT NULL, we TIMESTAMP(3) NOT NULL, c BIGINT, sv BIGINT, PRIMARY KEY (g, ws, we) NOT ENFORCED)`,
		Insert:  `INSERT INTO sw ` + fmt.Sprintf(session, streamed, ""),
		Batch:   fmt.Sprintf(session, "%[1]s", "WHERE window_end <= "+closedW),
		Rows:    `SELECT g, ws, we, c, sv FROM sw %s`,
		Sources: []string{"w"},
	}, {
		Name:    "tvf-topn",
		Sink:    `CREATE TABLE tr (ws TIMESTAMP(3) NOT NULL, we TIMESTAMP(3) NOT NULL, g BIGINT NOT NULL, rn BIGINT NOT NULL, k BIGINT, v BIGINT, PRIMARY KEY (ws, we, g, rn) NOT ENFORCED)`,
		Insert:  `INSERT INTO tr ` + fmt.Sprintf(tvfRank, streamed, ""),
		Batch:   fmt.Sprintf(tvfRank, "%[1]s", "AND window_end <= "+closedW),
		Rows:    `SELECT ws, we, g, rn, k, v FROM tr %s`,
		Sources: []string{"w"},
	}, {
		Name:    "agg-topn",
		Sink:    `CREATE TABLE ar (ws TIMESTAMP(3) NOT NULL, we TIMESTAMP(3) NOT NULL, rn BIGINT NOT NULL, g BIGINT, c BIGINT, PRIMARY KEY (ws, we, rn) NOT ENFORCED)`,
		Insert:  `INSERT INTO ar ` + fmt.Sprintf(aggRank, streamed, ""),
		Batch:   fmt.Sprintf(aggRank, "%[1]s", "AND window_end <= "+closedW),
		Rows:    `SELECT ws, we, rn, g, c FROM ar %s`,
		Sources: []string{"w"},
	}, {
		Name:    "window-join",
		Sink:    `CREATE TABLE wj (ak BIGINT NOT NULL, bk BIGINT NOT NULL, ws TIMESTAMP(3) NOT NULL, av BIGINT, bv BIGINT, PRIMARY KEY (ak, bk, ws) NOT ENFORCED)`,
		Insert:  `INSERT INTO wj ` + fmt.Sprintf(windowJoin, streamed, streamed, ""),
		Batch:   fmt.Sprintf(windowJoin, "%[1]s", "%[2]s", "WHERE a.window_end <= "+closedW2),
		Rows:    `SELECT ak, bk, ws, av, bv FROM wj %s`,
		Sources: []string{"w", "w2"},
	}, {
		Name:    "interval-join",
		Sink:    `CREATE TABLE ij (ak BIGINT NOT NULL, bk BIGINT NOT NULL, av BIGINT, bv BIGINT, PRIMARY KEY (ak, bk) NOT ENFORCED)`,
		Insert:  `INSERT INTO ij ` + fmt.Sprintf(interval, streamed, streamed),
		Batch:   fmt.Sprintf(interval, "%[1]s", "%[2]s"),
		Rows:    `SELECT ak, bk, av, bv FROM ij %s`,
		Sources: []string{"w", "w2"},
	}, {
		Name:    "tumble-ooo",
		Sink:    `CREATE TABLE ta (g BIGINT NOT NULL, ws TIMESTAMP(3) NOT NULL, c BIGINT, sv BIGINT, PRIMARY KEY (g, ws) NOT ENFORCED)`,
		Insert:  `INSERT INTO ta ` + fmt.Sprintf(tumble, streamed, ""),
		Batch:   fmt.Sprintf(tumble, "%[1]s", "WHERE window_end <= "+closedW),
		Rows:    `SELECT g, ws, c, sv FROM ta %s`,
		Sources: []string{"w"},
	}, {
		Name:    "join-agg",
		Sink:    `CREATE TABLE ja (g BIGINT NOT NULL, c BIGINT, mk BIGINT, PRIMARY KEY (g) NOT ENFORCED)`,
		Insert:  `INSERT INTO ja ` + fmt.Sprintf(joinAgg, streamed, streamed),
		Batch:   fmt.Sprintf(joinAgg, "%[1]s", "%[2]s"),
		Rows:    `SELECT g, c, mk FROM ja %s`,
		Sources: []string{"w", "w2"},
	}}
}

// Writer writes rows of event tables, one table at random per
// statement: rows with new keys whose event time is the table's largest
// yet, moved on by up to 1.5 s, or up to 1.5 s before it, and deletes of
// a row of the last 1.5 s (not of the largest time). As the WATERMARKs
// allow 2 s, no change is late: the batch answer of the windows the
// watermark closed is the jobs'. Each statement changes at most 3 rows.
type Writer struct {
	names  []string
	tables map[string]*table
	// appendOnly: never delete (tables without a primary key whose
	// readers need an input that only inserts).
	appendOnly bool
}

type table struct {
	n, ms  int
	recent []event
	// unsure: a statement may or may not have been applied, so the row
	// of the largest time may be missing.
	unsure bool
}

type event struct{ k, ms int }

// NewWriter writes the tables named.
func NewWriter(tables ...string) *Writer {
	w := &Writer{names: tables, tables: map[string]*table{}}
	for _, t := range tables {
		w.tables[t] = &table{}
	}
	return w
}

// NewAppendWriter writes the tables named, inserts only.
func NewAppendWriter(tables ...string) *Writer {
	w := NewWriter(tables...)
	w.appendOnly = true
	return w
}

// Lost says that the last statement may or may not have been applied
// (its server was killed): the next insert of each table moves its
// largest time on, so that the row holding it is known to be there, and
// is never deleted (the batch query's watermark is that of the rows left,
// a job's that of every row it read).
func (w *Writer) Lost() {
	for _, t := range w.tables {
		t.unsure = true
	}
}

// Next returns the next statement.
func (w *Writer) Next(rng *rand.Rand) string {
	name := w.names[rng.IntN(len(w.names))]
	t := w.tables[name]
	t.recent = slices.DeleteFunc(t.recent, func(e event) bool { return e.ms <= t.ms-1500 || e.ms == t.ms })
	if len(t.recent) > 0 && !t.unsure && !w.appendOnly && rng.IntN(6) == 0 {
		i := rng.IntN(len(t.recent))
		k := t.recent[i].k
		t.recent = slices.Delete(t.recent, i, i+1)
		return fmt.Sprintf(`DELETE FROM %s WHERE k = %d`, name, k)
	}
	var vals []string
	for range 1 + rng.IntN(3) {
		t.n++
		ms := max(t.ms-rng.IntN(1500), 0)
		if t.unsure || rng.IntN(2) == 0 {
			t.ms += 1 + rng.IntN(1500)
			ms, t.unsure = t.ms, false
		}
		t.recent = append(t.recent, event{t.n, ms})
		ts := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
		vals = append(vals, fmt.Sprintf("(%d, %d, %d, TIMESTAMP '%s')", t.n, rng.IntN(4), rng.IntN(1000), ts.Format("2006-01-02 15:04:05.000")))
	}
	return `INSERT INTO ` + name + ` VALUES ` + strings.Join(vals, ", ")
}
