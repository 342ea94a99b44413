package nexmark

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FlinkResult is a query run by the Flink peer (nexmark/flink): Flink in a
// local MiniCluster, streaming mode, parallelism 1, over the same events
// from CSV files into a blackhole sink. CPU is the whole JVM's.
type FlinkResult struct {
	Status          string  `json:"status"`
	Error           string  `json:"error,omitempty"`
	Seconds         float64 `json:"seconds"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	EventsPerCPUSec float64 `json:"events_per_cpu_second"`
	// Ratio is flightd's streamed events per CPU-second over Flink's;
	// JobRatio the same for the query run as a continuous job.
	Ratio    float64 `json:"flightd_over_flink"`
	JobRatio float64 `json:"job_flightd_over_flink,omitempty"`
	// Drained are the kinds of events (tables) the job read into a
	// blackhole besides its query (ReadsAll).
	Drained []string `json:"drained,omitempty"`
}

// FlinkReads says which events a query's job on the Flink peer reads.
type FlinkReads string

const (
	// ReadsAll: every event. The job also reads the kinds of events its
	// query does not name (person, auction, bid) into a blackhole, as
	// flightd ingests every kind whichever query runs: q3 and q8 name only
	// persons and auctions, 8% of the events.
	ReadsAll FlinkReads = "all"
	// ReadsNamed: only the kinds the query names.
	ReadsNamed FlinkReads = "named"
)

// ParseFlinkReads reads a FlinkReads by its name.
func ParseFlinkReads(s string) (FlinkReads, error) {
	switch FlinkReads(s) {
	case ReadsAll, ReadsNamed:
		return FlinkReads(s), nil
	}
	return "", fmt.Errorf("flink reads %q: want %s or %s", s, ReadsAll, ReadsNamed)
}

// RunFlink writes the events as CSV under work, unless an earlier call
// did, and runs the queries on the Flink peer built in dir (mvn compile
// and cp.txt, see bench/README.md), each job reading the events reads
// says.
func RunFlink(ctx context.Context, dir, work, queriesDir string, reads FlinkReads, opt Options, rep *Report) error {
	cp, err := os.ReadFile(filepath.Join(dir, "cp.txt"))
	if err != nil {
		return fmt.Errorf("flink peer not built in %s (mvn compile dependency:build-classpath -Dmdep.outputFile=cp.txt): %w", dir, err)
	}
	csvDir := filepath.Join(work, "csv")
	if _, err := os.Stat(csvDir); err != nil {
		if err := WriteCSV(csvDir, opt.Generator, opt.Events); err != nil {
			return err
		}
	}
	args := []string{"-cp", filepath.Join(dir, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(cp)),
		"NexmarkFlink", csvDir, queriesDir, string(reads)}
	for _, q := range rep.Queries {
		args = append(args, q.Query)
	}
	cmd := exec.CommandContext(ctx, "java", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("flink peer: %w", err)
	}
	byName := map[string]*QueryResult{}
	for i := range rep.Queries {
		byName[rep.Queries[i].Query] = &rep.Queries[i]
	}
	rep.FlinkReads = reads
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var line struct {
			Query      string   `json:"query"`
			Seconds    float64  `json:"seconds"`
			CPUSeconds float64  `json:"cpu_seconds"`
			Drained    []string `json:"drained"`
			Error      string   `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			continue // Flink's own output
		}
		q := byName[line.Query]
		if q == nil {
			continue
		}
		f := FlinkResult{Status: StatusOK, Seconds: line.Seconds, CPUSeconds: line.CPUSeconds, Drained: line.Drained, Error: line.Error}
		if f.Error != "" {
			f.Status = StatusRefused
		} else if f.CPUSeconds > 0 {
			f.EventsPerCPUSec = float64(opt.Events) / f.CPUSeconds
			if q.Stream.Status == StatusOK && f.EventsPerCPUSec > 0 {
				f.Ratio = q.Stream.EventsPerCPUSec / f.EventsPerCPUSec
			}
			if q.Job != nil && q.Job.Status == StatusOK && f.EventsPerCPUSec > 0 {
				f.JobRatio = q.Job.EventsPerCPUSec / f.EventsPerCPUSec
			}
		}
		q.Flink = &f
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("flink peer: %w\n%s", err, lastLines(stderr.String(), 5))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
