package engine_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/flightd/flightd/internal/eventjobs"
)

// eventCheckpointCases are the jobs of eventjobs (SESSION windows, window
// top-N over a TVF and over a window aggregation, window and interval
// joins, a TUMBLE aggregation) and an OVER aggregation, over event tables
// written out of order, never late.
func eventCheckpointCases() []jobCase {
	var out []jobCase
	for _, j := range eventjobs.Jobs() {
		w := eventjobs.NewWriter(j.Sources...)
		out = append(out, jobCase{
			name: j.Name,
			ddl: append(append([]string{`CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)`},
				eventjobs.Setup...), j.Sink),
			job:     j.Insert,
			batch:   j.Batch,
			sink:    j.Rows,
			sources: j.Sources,
			write:   func(rng *rand.Rand, _ int) string { return w.Next(rng) },
			// Their state once their first windows closed is a few
			// seconds' rows.
			spillBudget: 4 << 10,
		})
	}
	// An OVER aggregation over an append table (it needs an input that
	// only inserts): a RANGE frame of 2 s and an unbounded one, per g;
	// grouped by k (unique in wa, but an append table has no key) for the
	// sink's key.
	over := `SELECT k, max(g), max(v), max(s), max(c) FROM (SELECT k, g, v, ts,
			sum(v) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS s,
			count(*) OVER (PARTITION BY g ORDER BY ts) AS c
		FROM wa %[1]s) x %[2]s GROUP BY k`
	w := eventjobs.NewAppendWriter("wa")
	return append(out, jobCase{
		name: "over",
		ddl: []string{`CREATE TABLE s (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)`,
			`CREATE TABLE wa (k BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)`,
			`CREATE TABLE ov (k BIGINT NOT NULL, g BIGINT, v BIGINT, s BIGINT, c BIGINT, PRIMARY KEY (k) NOT ENFORCED)`},
		job:     `INSERT INTO ov ` + fmt.Sprintf(over, `/*+ OPTIONS('scan.mode'='latest-full') */`, ""),
		batch:   fmt.Sprintf(over, "%[1]s", "WHERE ts <= (SELECT max(ts) - INTERVAL '2' SECOND FROM wa %[1]s)"),
		sink:    `SELECT k, g, v, s, c FROM ov %s`,
		sources: []string{"wa"},
		write:   func(rng *rand.Rand, _ int) string { return w.Next(rng) },
		// The batch OVER query holds a partition (a quarter of wa) whole.
		spillBudget: 2 << 20,
	})
}
