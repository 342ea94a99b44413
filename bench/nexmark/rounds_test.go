package nexmark

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestSummarizeRounds takes each query's ratio from every round in which
// both systems answered, and the median of those.
func TestSummarizeRounds(t *testing.T) {
	round := func(q0, q18 float64, q18Status string) *Report {
		res := func(name string, ratio float64, status string) QueryResult {
			return QueryResult{Query: name,
				Stream: StreamResult{Status: status, CPUSeconds: 10},
				Flink:  &FlinkResult{Status: StatusOK, CPUSeconds: 10 * ratio, Ratio: ratio}}
		}
		return &Report{Queries: []QueryResult{res("q0", q0, StatusOK), res("q18", q18, q18Status)}}
	}
	reps := []*Report{
		round(1.6, 3.0, StatusOK),
		round(2.2, 2.7, StatusFailed),
		round(2.0, 1.9, StatusOK),
	}
	// A round without Flink (its peer failed) counts for neither query.
	reps = append(reps, &Report{Queries: []QueryResult{{Query: "q0", Stream: StreamResult{Status: StatusOK}}}})
	got := SummarizeRounds(reps)
	if len(got) != 2 || got[0].Query != "q0" || got[1].Query != "q18" {
		t.Fatalf("summaries %+v", got)
	}
	if !slices.Equal(got[0].Ratios, []float64{1.6, 2.2, 2.0}) || got[0].MedianRatio != 2.0 {
		t.Errorf("q0: ratios %v, median %v; want 1.6 2.2 2.0, median 2.0", got[0].Ratios, got[0].MedianRatio)
	}
	if !slices.Equal(got[1].Ratios, []float64{3.0, 1.9}) || math.Abs(got[1].MedianRatio-2.45) > 1e-9 {
		t.Errorf("q18: ratios %v, median %v; want 3.0 1.9 (the failed round left out), median 2.45", got[1].Ratios, got[1].MedianRatio)
	}
	if !slices.Equal(got[1].FlinkCPU, []float64{30, 19}) {
		t.Errorf("q18: Flink CPU %v, want 30 19", got[1].FlinkCPU)
	}
	var b bytes.Buffer
	WriteRounds(&b, got)
	if !strings.Contains(b.String(), "1.60 2.20 2.00") || !strings.Contains(b.String(), "| 2.45") {
		t.Errorf("table:\n%s", b.String())
	}
	if SummarizeRounds(nil) != nil {
		t.Error("no rounds: want no summaries")
	}
}
