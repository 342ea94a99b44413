package engine_test

import (
	"math/rand/v2"

	"github.com/flightd/flightd/internal/eventjobs"
)

// eventCheckpointCases are the jobs of eventjobs (SESSION windows, window
// top-N over a TVF and over a window aggregation, window and interval
// joins, a TUMBLE aggregation) over event tables written out of order,
// never late.
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
	return out
}
