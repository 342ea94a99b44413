package tpcds

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func formatLine(q QueryResult) string {
	fl := q.Flightd.Status
	if q.Flightd.Message != "" {
		fl += " (" + q.Flightd.Message + ")"
	}
	dd := q.DuckDB.Status
	if q.DuckDB.Message != "" {
		dd += " (" + q.DuckDB.Message + ")"
	}
	ratio := "-"
	if q.Ratio > 0 {
		ratio = fmt.Sprintf("%.2fx", q.Ratio)
	}
	var cpu string
	if q.Flightd.CPUMs != nil {
		cpu = fmt.Sprintf(" (CPU %.0f ms)", q.Flightd.MinCPUMs)
	}
	if q.DuckDB.CPUMs != nil {
		dd += fmt.Sprintf(" (CPU %.0f ms)", q.DuckDB.MinCPUMs)
	}
	return fmt.Sprintf("q%-3s duckdb %-6s %6d rows %9.1f ms | flightd %9.1f ms%s %7s | %s",
		q.Query, dd, q.DuckDB.Rows, q.DuckDB.MedianMs, q.Flightd.MedianMs, cpu, ratio, fl)
}

// WriteTable prints the per-query table and the summary.
func WriteTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "TPC-DS (derived) SF %v seed %d, median of %d runs after a warm-up\n", r.Scale, r.Seed, r.Runs)
	if m := r.Machine; m != nil {
		fmt.Fprintf(w, "%s, %d cores, %.1f GiB; load %.1f at the start, %.1f at the end; flightd flags %q; commit %s\n",
			m.CPU, m.Cores, float64(m.MemoryBytes)/(1<<30), m.LoadStart, m.LoadEnd, r.FlightdFlags, r.Commit)
	}
	fmt.Fprintf(w, "%-5s %-8s %7s %11s | %11s %8s | %s\n", "query", "duckdb", "rows", "duckdb ms", "flightd ms", "ratio", "flightd")
	for _, q := range r.Queries {
		ratio := "-"
		if q.Ratio > 0 {
			ratio = fmt.Sprintf("%.2fx", q.Ratio)
		}
		dd := q.DuckDB.Status
		fl := q.Flightd.Status
		if q.Flightd.Message != "" {
			fl += ": " + q.Flightd.Message
		}
		if q.DuckDB.Message != "" {
			dd += ": " + q.DuckDB.Message
		}
		fmt.Fprintf(w, "q%-4s %-8s %7d %11.1f | %11.1f %8s | %s\n", q.Query, dd, q.DuckDB.Rows, q.DuckDB.MedianMs,
			q.Flightd.MedianMs, ratio, fl)
	}
	s := r.Summary
	fmt.Fprintf(w, "duckdb: %d/%d ran, %d non-empty\n", s.DuckDBOK, s.Queries, s.DuckDBNonEmpty)
	fmt.Fprintf(w, "flightd: %d ok, %d wrong answer, %d error, %d not run", s.FlightdOK, s.FlightdWrong, s.FlightdError, s.FlightdNotRun)
	if s.GeoMeanRatio > 0 {
		fmt.Fprintf(w, "; geometric mean time ratio flightd/duckdb over passing queries %.3f", s.GeoMeanRatio)
	}
	if s.FlightdCPUMs > 0 {
		fmt.Fprintf(w, "; their CPU (minimum per query, summed) flightd %.1f s, duckdb %.1f s", s.FlightdCPUMs/1000, s.DuckDBCPUMs/1000)
	}
	fmt.Fprintln(w)
}

// WriteFiles writes results.json and results.png into dir.
func WriteFiles(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		return err
	}
	return writeChart(filepath.Join(dir, "results.png"), r)
}

// writeChart draws per-query median times of both engines (log scale) above
// the per-query ratio of the passing queries.
func writeChart(path string, r *Report) error {
	n := len(r.Queries)
	names := make([]string, n)
	duck := make(plotter.Values, n)
	fl := make(plotter.Values, n)
	ratio := make(plotter.Values, n)
	floor := 0.01 // ms; log axes cannot show 0
	for i, q := range r.Queries {
		names[i] = q.Query
		duck[i] = math.Max(q.DuckDB.MedianMs, floor)
		fl[i] = math.NaN()
		if q.Flightd.Status == StatusOK {
			fl[i] = math.Max(q.Flightd.MedianMs, floor)
		}
		ratio[i] = math.NaN()
		if q.Ratio > 0 {
			ratio[i] = q.Ratio
		}
	}
	times := plot.New()
	times.Title.Text = fmt.Sprintf("TPC-DS (derived) SF %v: median time per query (ms, log; flightd only where correct)", r.Scale)
	times.Y.Scale = plot.LogScale{}
	times.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	// Points, not bars: bars start at 0, which a log axis cannot show.
	sd, err := plotter.NewScatter(indexed(duck))
	if err != nil {
		return err
	}
	sd.GlyphStyle = draw.GlyphStyle{Color: color.RGBA{R: 230, G: 140, A: 255}, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	times.Add(sd)
	times.Legend.Add("DuckDB", sd)
	if pts := indexed(fl); len(pts) > 0 {
		sf, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sf.GlyphStyle = draw.GlyphStyle{Color: color.RGBA{R: 30, G: 90, B: 200, A: 255}, Radius: vg.Points(2.5), Shape: draw.TriangleGlyph{}}
		times.Add(sf)
		times.Legend.Add("flightd", sf)
	}
	times.Legend.Top = true
	times.NominalX(names...)
	times.X.Tick.Label.Font.Size = vg.Points(6)

	rp := plot.New()
	title := "flightd / DuckDB time ratio (log; passing queries)"
	if g := r.Summary.GeoMeanRatio; g > 0 {
		title += fmt.Sprintf(", geometric mean %.3f (red), parity 1 (grey)", g)
	} else {
		title += ": no query passed"
	}
	rp.Title.Text = title
	if pts := indexed(ratio); len(pts) > 0 {
		rp.Y.Scale = plot.LogScale{}
		rp.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		sr, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sr.GlyphStyle = draw.GlyphStyle{Color: color.RGBA{R: 30, G: 90, B: 200, A: 255}, Radius: vg.Points(2.5), Shape: draw.TriangleGlyph{}}
		rp.Add(sr)
		for _, h := range []struct {
			y float64
			c color.Color
		}{{1, color.Gray{Y: 150}}, {r.Summary.GeoMeanRatio, color.RGBA{R: 200, A: 255}}} {
			line, err := plotter.NewLine(plotter.XYs{{X: -1, Y: h.y}, {X: float64(n), Y: h.y}})
			if err != nil {
				return err
			}
			line.Color = h.c
			rp.Add(line)
		}
	}
	rp.NominalX(names...)
	rp.X.Tick.Label.Font.Size = vg.Points(6)

	img := vgimg.New(vg.Points(1400), vg.Points(800))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(10), PadTop: vg.Points(5), PadBottom: vg.Points(5),
		PadLeft: vg.Points(5), PadRight: vg.Points(5)}
	canvases := plot.Align([][]*plot.Plot{{times}, {rp}}, tiles, dc)
	times.Draw(canvases[0][0])
	rp.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// indexed turns values into points at x = index, skipping NaN (missing).
func indexed(v plotter.Values) plotter.XYs {
	var pts plotter.XYs
	for i, y := range v {
		if !math.IsNaN(y) {
			pts = append(pts, plotter.XY{X: float64(i), Y: y})
		}
	}
	return pts
}
