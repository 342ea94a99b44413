package nexmark

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WriteTable prints the per-query table.
func WriteTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "Nexmark: %d events, commits of %d, ", r.Events, r.CommitEvents)
	if r.Rate > 0 {
		fmt.Fprintf(w, "streamed at %.0f events/s\n", r.Rate)
	} else {
		fmt.Fprintf(w, "streamed as fast as possible\n")
	}
	if r.Machine != "" {
		fmt.Fprintf(w, "%s, %s, load average %.1f at the start, %.1f at the end\n", r.Date, r.Machine, r.LoadAvg[0], r.LoadAvg[1])
	}
	for _, n := range r.Layout {
		fmt.Fprintf(w, "- %s\n", n)
	}
	switch r.FlinkReads {
	case ReadsAll:
		fmt.Fprintf(w, "- each Flink job reads every event: the kinds its query does not name into a blackhole\n")
	case ReadsNamed:
		fmt.Fprintf(w, "- each Flink job reads only the kinds of events its query names\n")
	}
	fmt.Fprintf(w, "load (no query): %.2f s, %.0f events/s, flightd %.2f CPU s\n", r.Load.Seconds, r.Load.EventsPerSec, r.Load.CPUSeconds)
	fmt.Fprintf(w, "%-5s | %-7s %8s %10s %8s | %-7s %10s %10s %8s %9s %9s %8s %7s %8s %6s %6s | %-7s %10s %7s | %s\n",
		"query", "batch", "rows", "events/s", "cpu s", "stream", "events/s", "ev/cpu-s", "cpu s", "p50 ms", "p99 ms", "rows",
		"rss MB", "compared", "open", "tied", "flink", "ev/cpu-s", "ratio", "why")
	for _, q := range r.Queries {
		b, s := q.Batch, q.Stream
		why := s.Error
		if b.Error != "" {
			why = "batch: " + b.Error
		}
		fl := FlinkResult{Status: "-"}
		if q.Flink != nil {
			fl = *q.Flink
			if fl.Error != "" {
				why += " | flink: " + fl.Error
			}
		}
		fmt.Fprintf(w, "%-5s | %-7s %8d %10.0f %8.2f | %-7s %10.0f %10.0f %8.2f %9.1f %9.1f %8d %7.0f %8d %6d %6d | %-7s %10.0f %7.2f | %s\n",
			q.Query, b.Status, b.Rows, b.EventsPerSec, b.CPUSeconds, s.Status, s.EventsPerSec, s.EventsPerCPUSec,
			s.CPUSeconds, s.LatencyP50Ms, s.LatencyP99Ms, s.Rows, s.PeakRSSMB, s.Compared, s.OpenRows, s.TiedRows,
			fl.Status, fl.EventsPerCPUSec, fl.Ratio, why)
	}
	c := Count(r)
	fmt.Fprintf(w, "batch: %d of %d ran; streaming: %d equal to batch, %d differ, %d equal only after a later marker, %d failed, %d refused, %d not run\n",
		c.BatchOK, len(r.Queries), c.StreamOK, c.Differs, c.Late, c.Failed, c.Refused, c.NotRun)
	if c.Uncompared > 0 {
		fmt.Fprintf(w, "%d streamed answers not compared (processing-time windows)\n", c.Uncompared)
	}
	if c.Vacuous > 0 {
		fmt.Fprintf(w, "%d streamed answers compared no row while the batch answer has rows (no window closed)\n", c.Vacuous)
	}
	writeJobs(w, r)
	writePaced(w, r)
}

// writePaced prints the paced runs' table, if any ran.
func writePaced(w io.Writer, r *Report) {
	if r.PacedShare == 0 {
		return
	}
	fmt.Fprintf(w, "streamed again with ingest paced at %.0f%% of the first run's events/s:\n", 100*r.PacedShare)
	fmt.Fprintf(w, "%-5s | %10s %10s | %-7s %10s %10s %9s %9s %8s | %s\n",
		"query", "full ev/s", "paced ev/s", "paced", "events/s", "ev/cpu-s", "p50 ms", "p99 ms", "compared", "why")
	for _, q := range r.Queries {
		p := q.Paced
		if p == nil {
			continue
		}
		fmt.Fprintf(w, "%-5s | %10.0f %10.0f | %-7s %10.0f %10.0f %9.1f %9.1f %8d | %s\n",
			q.Query, q.Stream.EventsPerSec, p.Rate, p.Status, p.EventsPerSec, p.EventsPerCPUSec, p.LatencyP50Ms, p.LatencyP99Ms, p.Compared, p.Error)
	}
	c := Count(r)
	fmt.Fprintf(w, "paced: %d equal to batch, %d differ (also late), %d failed, %d not compared\n", c.PacedOK, c.PacedDiffers, c.PacedFailed, c.PacedUncompared)
}

// writeJobs prints the continuous jobs' table, if any ran.
func writeJobs(w io.Writer, r *Report) {
	var jobs []QueryResult
	for _, q := range r.Queries {
		if q.Job != nil {
			jobs = append(jobs, q)
		}
	}
	if len(jobs) == 0 {
		return
	}
	fmt.Fprintf(w, "continuous jobs (INSERT INTO a keyed sink; progress read from SHOW JOBS every %v):\n", jobPoll)
	fmt.Fprintf(w, "%-5s | %-18s | %-7s %10s %10s %8s %9s %9s %8s %7s %8s %6s %6s %7s | %s\n",
		"query", "key", "job", "events/s", "ev/cpu-s", "cpu s", "p50 ms", "p99 ms", "rows", "rss MB", "compared", "open", "tied", "/flink", "why")
	for _, q := range jobs {
		j := q.Job
		ratio := 0.0
		if q.Flink != nil {
			ratio = q.Flink.JobRatio
		}
		fmt.Fprintf(w, "%-5s | %-18s | %-7s %10.0f %10.0f %8.2f %9.1f %9.1f %8d %7.0f %8d %6d %6d %7.2f | %s\n",
			q.Query, strings.Join(JobKeys[q.Query], ","), j.Status, j.EventsPerSec, j.EventsPerCPUSec, j.CPUSeconds,
			j.LatencyP50Ms, j.LatencyP99Ms, j.Rows, j.PeakRSSMB, j.Compared, j.OpenRows, j.TiedRows, ratio, j.Error)
	}
	c := Count(r)
	fmt.Fprintf(w, "jobs: %d equal to batch, %d differ, %d failed, %d refused, %d not compared\n", c.JobOK, c.JobDiffers, c.JobFailed, c.JobRefused, c.JobUncompared)
}

// Counts summarizes a report.
type Counts struct {
	BatchOK, StreamOK, Differs, Late, Failed, Refused, NotRun int
	// Vacuous: streamed answers that compared no row while the batch
	// answer has rows (a windowed query whose watermark closed no window).
	Vacuous                                                 int
	Uncompared                                              int
	JobOK, JobDiffers, JobFailed, JobRefused, JobUncompared int
	// Paced runs (Options.PacedShare): differs counts late ones too.
	PacedOK, PacedDiffers, PacedFailed, PacedUncompared int
}

// Count counts the queries by outcome.
func Count(r *Report) Counts {
	var c Counts
	for _, q := range r.Queries {
		if q.Batch.Status == StatusOK {
			c.BatchOK++
		}
		if q.Stream.Status == StatusOK && q.Stream.Compared == 0 && q.Batch.Rows > 0 {
			c.Vacuous++
		}
		if j := q.Job; j != nil {
			switch j.Status {
			case StatusOK:
				c.JobOK++
			case StatusDiffers:
				c.JobDiffers++
			case StatusRefused:
				c.JobRefused++
			case StatusUncompared:
				c.JobUncompared++
			default:
				c.JobFailed++
			}
		}
		if p := q.Paced; p != nil {
			switch p.Status {
			case StatusOK:
				c.PacedOK++
			case StatusUncompared:
				c.PacedUncompared++
			case StatusDiffers, StatusLate:
				c.PacedDiffers++
			default:
				c.PacedFailed++
			}
		}
		switch q.Stream.Status {
		case StatusOK:
			c.StreamOK++
		case StatusDiffers:
			c.Differs++
		case StatusLate:
			c.Late++
		case StatusFailed:
			c.Failed++
		case StatusRefused:
			c.Refused++
		case StatusUncompared:
			c.Uncompared++
		default:
			c.NotRun++
		}
	}
	return c
}

// WriteFiles writes nexmark.json and nexmark.png into dir.
func WriteFiles(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	// Written aside and renamed: the report is rewritten after every
	// query, and a run killed mid-write keeps the last whole one.
	path := filepath.Join(dir, "nexmark.json")
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	return writeChart(filepath.Join(dir, "nexmark.png"), r)
}

// writeChart draws events per second per query, batch and streamed (log
// scale; queries that did not run have no point).
func writeChart(path string, r *Report) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Nexmark, %d events: events/s per query (log)", r.Events)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var names []string
	var batch, stream plotter.XYs
	for i, q := range r.Queries {
		names = append(names, strings.TrimPrefix(q.Query, "q"))
		if q.Batch.Status == StatusOK && q.Batch.EventsPerSec > 0 {
			batch = append(batch, plotter.XY{X: float64(i), Y: q.Batch.EventsPerSec})
		}
		if q.Stream.Status == StatusOK && q.Stream.EventsPerSec > 0 {
			stream = append(stream, plotter.XY{X: float64(i), Y: q.Stream.EventsPerSec})
		}
	}
	for _, s := range []struct {
		name string
		pts  plotter.XYs
		c    color.RGBA
	}{{"batch", batch, color.RGBA{R: 230, G: 140, A: 255}}, {"streamed", stream, color.RGBA{R: 30, G: 90, B: 200, A: 255}}} {
		if len(s.pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = s.c
		sc.GlyphStyle.Radius = vg.Points(3)
		p.Add(sc)
		p.Legend.Add(s.name, sc)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5 // every query on the axis, with points or not
	p.X.Label.Text = "query"
	p.Legend.Top = true
	if len(batch)+len(stream) == 0 {
		p.Y.Scale = plot.LinearScale{}
		p.Y.Tick.Marker = plot.DefaultTicks{}
		p.Y.Min, p.Y.Max = 0, math.Max(1, p.Y.Max)
	}
	return p.Save(10*vg.Inch, 4*vg.Inch, path)
}
