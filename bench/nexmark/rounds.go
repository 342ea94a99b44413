package nexmark

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// RoundsSummary is a query over several rounds of a run, each round
// flightd's streamed run of every query and then the Flink peer's. The
// machine is shared, and its speed drifts over minutes: one round's ratio
// moved with Flink's CPU for the same query (12 to 27 CPU s over 5M-event
// runs), so a ratio is read as the median of rounds.
type RoundsSummary struct {
	Query string `json:"query"`
	// Per round, in order; a round in which either side did not answer
	// is left out of all three.
	FlightdCPU []float64 `json:"flightd_cpu_seconds"`
	FlinkCPU   []float64 `json:"flink_cpu_seconds"`
	Ratios     []float64 `json:"flightd_over_flink"`
	// MedianRatio is the median of Ratios (the mean of the middle two
	// for an even count); 0 with no round.
	MedianRatio float64 `json:"median_ratio"`
}

// SummarizeRounds gives each query's streamed CPU seconds and
// flightd/Flink ratio per round of reps, and their median, in the order
// of the first round's queries.
func SummarizeRounds(reps []*Report) []RoundsSummary {
	if len(reps) == 0 {
		return nil
	}
	var out []RoundsSummary
	for _, q := range reps[0].Queries {
		s := RoundsSummary{Query: q.Query}
		for _, rep := range reps {
			i := slices.IndexFunc(rep.Queries, func(r QueryResult) bool { return r.Query == q.Query })
			if i < 0 {
				continue
			}
			r := rep.Queries[i]
			if r.Stream.Status != StatusOK || r.Flink == nil || r.Flink.Ratio <= 0 {
				continue
			}
			s.FlightdCPU = append(s.FlightdCPU, r.Stream.CPUSeconds)
			s.FlinkCPU = append(s.FlinkCPU, r.Flink.CPUSeconds)
			s.Ratios = append(s.Ratios, r.Flink.Ratio)
		}
		s.MedianRatio = median(s.Ratios)
		out = append(out, s)
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// WriteRoundsFile writes the summaries as JSON to path.
func WriteRoundsFile(path string, sums []RoundsSummary) error {
	b, err := json.MarshalIndent(sums, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// WriteRounds prints the summaries as a table.
func WriteRounds(w io.Writer, sums []RoundsSummary) {
	fmt.Fprintf(w, "%-5s | %-24s | %-24s | %-24s | %s\n", "query", "flightd CPU s per round", "Flink CPU s per round", "flightd/Flink per round", "median")
	for _, s := range sums {
		fmt.Fprintf(w, "%-5s | %-24s | %-24s | %-24s | %.2f\n", s.Query, floats(s.FlightdCPU), floats(s.FlinkCPU), floats(s.Ratios), s.MedianRatio)
	}
}

func floats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}
