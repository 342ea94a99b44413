package tpcds

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds/gen"
)

// Query is one benchmark query.
type Query struct {
	Name string // file name without .sql, e.g. "07"
	SQL  string
}

// LoadQueries reads every *.sql file of dir, sorted by name.
func LoadQueries(dir string) ([]Query, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no *.sql queries in %q", dir)
	}
	sort.Strings(paths)
	qs := make([]Query, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		q := strings.TrimSpace(string(b))
		if q == "" {
			return nil, fmt.Errorf("query file %s is empty", p)
		}
		qs = append(qs, Query{Name: strings.TrimSuffix(filepath.Base(p), ".sql"), SQL: q})
	}
	return qs, nil
}

// Engine runs queries; DuckDB and Flightd implement it.
type Engine interface {
	Query(ctx context.Context, query string) (*Result, error)
}

// Loader creates and fills one table; DuckDB and Flightd implement it.
type Loader interface {
	Load(ctx context.Context, t *gen.Table, rd BatchReader, progress func(rows int64)) error
}

// LoadAll generates every table of g and loads it into dst, printing one
// progress line per table (and updates while a large one loads) to w.
func LoadAll(ctx context.Context, mem memory.Allocator, g *gen.Generator, tables []*gen.Table, dst Loader, name string,
	batchSize, workers int, w io.Writer) error {
	var total int64
	start := time.Now()
	for _, t := range tables {
		n, err := g.RowCount(t.Name)
		if err != nil {
			return err
		}
		rd, err := g.NewReader(ctx, mem, t.Name, batchRows(t.Schema(), batchSize), workers)
		if err != nil {
			return err
		}
		tStart, last := time.Now(), time.Now()
		err = dst.Load(ctx, t, rd, func(rows int64) {
			if time.Since(last) > 2*time.Second {
				last = time.Now()
				fmt.Fprintf(w, "\r%s: %-22s %11d / %d rows (%.0f%%)", name, t.Name, rows, n, 100*float64(rows)/float64(max(n, 1)))
			}
		})
		rd.Close()
		if err != nil {
			fmt.Fprintln(w)
			return fmt.Errorf("%s: load %s: %w", name, t.Name, err)
		}
		total += n
		el := time.Since(tStart)
		fmt.Fprintf(w, "\r%s: %-22s %11d rows in %6.2fs (%.0f rows/s)\n", name, t.Name, n, el.Seconds(), float64(n)/max(el.Seconds(), 1e-9))
	}
	el := time.Since(start)
	fmt.Fprintf(w, "%s: loaded %d rows in %.1fs (%.0f rows/s)\n", name, total, el.Seconds(), float64(total)/max(el.Seconds(), 1e-9))
	return nil
}

// maxBatchBytes bounds the size of one generated batch: a batch is one
// gRPC message in a Flight SQL ingest, and gRPC's default limit is 16 MiB.
const maxBatchBytes = 4 << 20

// batchRows returns at most limit rows, fewer if the rows are wide.
func batchRows(schema *arrow.Schema, limit int) int {
	width := 0
	for _, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.DECIMAL128:
			width += 16
		case arrow.STRING:
			width += 24 // offset plus a typical short value
		default:
			width += 8
		}
	}
	return max(1, min(limit, maxBatchBytes/max(width, 1)))
}

// Status of one engine on one query.
const (
	StatusOK     = "ok"
	StatusWrong  = "wrong answer"
	StatusError  = "error"
	StatusNotRun = "not run"
)

// EngineResult is what one engine did with one query.
type EngineResult struct {
	Status   string    `json:"status"`
	Message  string    `json:"message,omitempty"`
	Rows     int       `json:"rows"`
	FirstMs  float64   `json:"first_ms,omitempty"` // the answer run, the query's first
	TimesMs  []float64 `json:"times_ms,omitempty"`
	MedianMs float64   `json:"median_ms,omitempty"`
	// CPUMs is the engine's process CPU time of each timed run (with
	// RunOptions.FlightdPid: flightd's process, and the runner's own for
	// DuckDB, which runs in it); MinCPUMs their minimum.
	CPUMs    []float64 `json:"cpu_ms,omitempty"`
	MinCPUMs float64   `json:"min_cpu_ms,omitempty"`
}

// QueryResult is one row of the report.
type QueryResult struct {
	Query   string       `json:"query"`
	DuckDB  EngineResult `json:"duckdb"`
	Flightd EngineResult `json:"flightd"`
	Ratio   float64      `json:"ratio,omitempty"` // flightd median / DuckDB median, for passing queries
}

// Summary aggregates a report.
type Summary struct {
	Queries        int     `json:"queries"`
	DuckDBOK       int     `json:"duckdb_ok"`
	DuckDBNonEmpty int     `json:"duckdb_non_empty"`
	FlightdOK      int     `json:"flightd_ok"`
	FlightdWrong   int     `json:"flightd_wrong"`
	FlightdError   int     `json:"flightd_error"`
	FlightdNotRun  int     `json:"flightd_not_run"`
	GeoMeanRatio   float64 `json:"geomean_ratio,omitempty"` // over queries flightd answered correctly
	// GeoMeanFirstRatio is the same over the queries' first runs.
	GeoMeanFirstRatio float64 `json:"geomean_first_ratio,omitempty"`
	// The sums of each engine's MinCPUMs over the queries flightd answered
	// correctly (with RunOptions.FlightdPid).
	DuckDBCPUMs  float64 `json:"duckdb_cpu_ms,omitempty"`
	FlightdCPUMs float64 `json:"flightd_cpu_ms,omitempty"`
}

// Report is the whole outcome of a run.
type Report struct {
	Scale      float64   `json:"scale"`
	Seed       uint64    `json:"seed"`
	Runs       int       `json:"runs"`
	FlightdURI string    `json:"flightd_uri,omitempty"`
	Started    time.Time `json:"started"`
	// Where and how the figures were measured, so that a committed result
	// is traceable: the machine, flightd's flags as given to the runner,
	// and the repository's commit.
	Machine      *Machine      `json:"machine,omitempty"`
	FlightdFlags string        `json:"flightd_flags,omitempty"`
	Commit       string        `json:"commit,omitempty"`
	Queries      []QueryResult `json:"queries"`
	Summary      Summary       `json:"summary"`
}

// RunOptions configures RunQueries.
type RunOptions struct {
	Runs    int           // timed runs after the answer (warm-up) run; 0 times the answer run
	Timeout time.Duration // per query execution, 0 for none
	Log     io.Writer     // one line per query; nil for none
	// FlightdPid, if not 0, is flightd's process: each timed run's CPU
	// time is then measured, flightd's from its process and DuckDB's from
	// this one.
	FlightdPid int
}

// RunQueries runs every query on the reference and, if flightd is not nil,
// on flightd, compares the answers and times both.
func RunQueries(ctx context.Context, queries []Query, ref Engine, flightd Engine, opt RunOptions) []QueryResult {
	out := make([]QueryResult, 0, len(queries))
	for _, q := range queries {
		if ctx.Err() != nil {
			break
		}
		qr := QueryResult{Query: q.Name, Flightd: EngineResult{Status: StatusNotRun}}
		want, er := measure(ctx, ref, q.SQL, opt, os.Getpid())
		qr.DuckDB = er
		if want != nil && flightd != nil {
			if err := fetchBeyondLimit(ctx, ref, q.SQL, want); err != nil {
				qr.DuckDB.Status, qr.DuckDB.Message = StatusError, "fetching the rows past LIMIT: "+oneLine(err)
				want = nil
			}
		}
		if flightd != nil {
			got, fr := measure(ctx, flightd, q.SQL, opt, opt.FlightdPid)
			qr.Flightd = fr
			switch {
			case fr.Status != StatusOK:
			case want == nil:
				qr.Flightd.Status, qr.Flightd.Message = StatusNotRun, "no reference answer: DuckDB failed"
			default:
				if d := Compare(q.SQL, want, got); d != "" {
					qr.Flightd.Status, qr.Flightd.Message = StatusWrong, d
				} else if qr.DuckDB.MedianMs > 0 {
					qr.Ratio = qr.Flightd.MedianMs / qr.DuckDB.MedianMs
				}
			}
		}
		if opt.Log != nil {
			fmt.Fprintln(opt.Log, formatLine(qr))
		}
		out = append(out, qr)
	}
	return out
}

// beyondLimit is how many rows past an ordered query's LIMIT the reference
// fetches to check a tie run the LIMIT cuts.
const beyondLimit = 10000

// fetchBeyondLimit fills want.Extended when the query's outermost ORDER BY
// has column keys and its LIMIT cut the reference's answer.
func fetchBeyondLimit(ctx context.Context, ref Engine, query string, want *Result) error {
	ob := parseOrderBy(query, want.Columns)
	if ob.keys == nil || ob.limit == 0 || int64(len(want.Rows)) != ob.limit {
		return nil
	}
	more, err := ref.Query(ctx, ob.withLimit(query, ob.limit+beyondLimit))
	if err != nil {
		return err
	}
	if len(more.Rows) < len(want.Rows) {
		return fmt.Errorf("%d rows with a larger LIMIT, %d with the query's", len(more.Rows), len(want.Rows))
	}
	want.Extended = more.Rows
	return nil
}

// measure runs a query once for its answer, then opt.Runs more times for
// the timing (and, with opt.FlightdPid, the CPU time of process pid).
func measure(ctx context.Context, e Engine, query string, opt RunOptions, pid int) (*Result, EngineResult) {
	var cpu []float64
	run := func() (*Result, time.Duration, error) {
		c := ctx
		if opt.Timeout > 0 {
			var cancel context.CancelFunc
			c, cancel = context.WithTimeout(ctx, opt.Timeout)
			defer cancel()
		}
		var cpu0 float64
		if opt.FlightdPid != 0 {
			var err error
			if cpu0, err = CPUSeconds(pid); err != nil {
				return nil, 0, err
			}
		}
		start := time.Now()
		res, err := e.Query(c, query)
		d := time.Since(start)
		if opt.FlightdPid != 0 && err == nil {
			cpu1, err := CPUSeconds(pid)
			if err != nil {
				return nil, 0, err
			}
			cpu = append(cpu, (cpu1-cpu0)*1000)
		}
		return res, d, err
	}
	res, d, err := run()
	if err != nil {
		return nil, EngineResult{Status: StatusError, Message: oneLine(err)}
	}
	er := EngineResult{Status: StatusOK, Rows: len(res.Rows), FirstMs: ms(d)}
	if opt.Runs == 0 {
		er.TimesMs = []float64{ms(d)}
	}
	for range opt.Runs {
		_, d, err := run()
		if err != nil {
			return nil, EngineResult{Status: StatusError, Message: "timed run: " + oneLine(err)}
		}
		er.TimesMs = append(er.TimesMs, ms(d))
	}
	er.MedianMs = median(er.TimesMs)
	if opt.FlightdPid != 0 {
		if opt.Runs > 0 {
			cpu = cpu[1:] // the warm-up's
		}
		er.CPUMs, er.MinCPUMs = cpu, slices.Min(cpu)
	}
	return res, er
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// Summarize counts outcomes and computes the geometric mean of the
// flightd/DuckDB time ratios over the queries flightd answered correctly.
func Summarize(qs []QueryResult) Summary {
	s := Summary{Queries: len(qs)}
	var logSum, firstLogSum float64
	var n, firsts int
	for _, q := range qs {
		if q.DuckDB.Status == StatusOK {
			s.DuckDBOK++
			if q.DuckDB.Rows > 0 {
				s.DuckDBNonEmpty++
			}
		}
		switch q.Flightd.Status {
		case StatusOK:
			s.FlightdOK++
			if q.Ratio > 0 {
				logSum += math.Log(q.Ratio)
				n++
				s.DuckDBCPUMs += q.DuckDB.MinCPUMs
				s.FlightdCPUMs += q.Flightd.MinCPUMs
			}
			if q.Ratio > 0 && q.DuckDB.FirstMs > 0 && q.Flightd.FirstMs > 0 {
				firstLogSum += math.Log(q.Flightd.FirstMs / q.DuckDB.FirstMs)
				firsts++
			}
		case StatusWrong:
			s.FlightdWrong++
		case StatusError:
			s.FlightdError++
		default:
			s.FlightdNotRun++
		}
	}
	if n > 0 {
		s.GeoMeanRatio = math.Exp(logSum / float64(n))
	}
	if firsts > 0 {
		s.GeoMeanFirstRatio = math.Exp(firstLogSum / float64(firsts))
	}
	return s
}
