// Command tpcds generates TPC-DS data, loads it into DuckDB and flightd,
// runs the 99 queries on both, compares the answers and times them.
//
//	tpcds -queries ../shared/bench/tpcds/queries -schema ../shared/bench/tpcds/schema \
//	      -sf 1 -flightd grpc://127.0.0.1:31337 -runs 3 -out results/
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/bench/tpcds/gen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tpcds:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		queriesDir = flag.String("queries", envOr("TPCDS_QUERIES", sharedDefault("queries")), "directory of the query files NN.sql")
		schemaDir  = flag.String("schema", envOr("TPCDS_SCHEMA", sharedDefault("schema")), "directory of the schema files (one create table each)")
		sf         = flag.Float64("sf", 0.01, "scale factor")
		seed       = flag.Uint64("seed", 1, "generator seed")
		flightdURI = flag.String("flightd", "", "flightd Flight SQL URI, e.g. grpc://127.0.0.1:31337 (empty: DuckDB only)")
		runs       = flag.Int("runs", 3, "timed runs per query after one warm-up run (0: time the warm-up)")
		out        = flag.String("out", "results/", "directory for results.json and results.png")
		skipLoad   = flag.Bool("skip-load", false, "do not load flightd (its tables are already there)")
		duckPath   = flag.String("duckdb", "", "DuckDB database file (empty: in memory); with -skip-load an existing file is reused")
		only       = flag.String("only", "", "comma-separated query names to run (default all), e.g. 03,07")
		batch      = flag.Int("batch", 64*1024, "generator batch size in rows")
		workers    = flag.Int("workers", runtime.GOMAXPROCS(0), "generator goroutines")
		threads    = flag.Int("threads", 0, "DuckDB threads (0: DuckDB default)")
		duckMemory = flag.String("duckdb-memory", "", "DuckDB's memory_limit, e.g. 3GB (empty: DuckDB's default, 80% of the machine's memory); beyond it DuckDB spills beside its -duckdb file")
		timeout    = flag.Duration("timeout", 10*time.Minute, "limit per query execution")
		sqlText    = flag.String("sql", "", "run this statement on DuckDB after loading, print its result and exit")
		flightdPid = flag.Int("flightd-pid", 0, "flightd's process id (same machine): each timed run's CPU time is then measured, flightd's from /proc and DuckDB's from this process, and reported beside the times")
		flFlags    = flag.String("flightd-flags", "", "the flags flightd was started with, recorded in results.json (e.g. \"defaults\" or \"-cache-memory 6e9\")")
		versusURI  = flag.String("versus", "", "a second flightd to time against -flightd instead of DuckDB (e.g. one over an s3:// warehouse against one over a local directory): both are loaded, answers are compared with -flightd's, and the ratios of the first and of the timed runs reported (per-query lines and versus.json show -flightd where DuckDB stands otherwise)")
		loadOnly   = flag.Bool("load-only", false, "load flightd (and -versus) and exit")
		streams    = flag.Int("streams", 0, "run the throughput test instead: this many concurrent streams of the queries per engine, one connection each (DuckDB first, then flightd), each stream in its own seeded shuffle of the queries")
	)
	flag.Parse()
	if *runs < 0 {
		return fmt.Errorf("-runs %d: must be >= 0", *runs)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	mem := memory.NewGoAllocator()

	tables, err := gen.LoadSchemaDir(*schemaDir)
	if err != nil {
		return err
	}
	queries, err := tpcds.LoadQueries(*queriesDir)
	if err != nil {
		return err
	}
	if *only != "" {
		queries, err = selectQueries(queries, *only)
		if err != nil {
			return err
		}
	}
	g, err := gen.New(tables, gen.Config{Scale: *sf, Seed: *seed})
	if err != nil {
		return err
	}

	// Reach flightd and the output directory before spending time on data.
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	var flightd *tpcds.Flightd
	if *flightdURI != "" && *sqlText == "" {
		flightd, err = tpcds.OpenFlightd(ctx, mem, *flightdURI)
		if err != nil {
			return err
		}
		defer flightd.Close()
	}
	load := func(f *tpcds.Flightd, name string) error {
		if *skipLoad {
			return nil
		}
		return tpcds.LoadAll(ctx, mem, g, tables, f, name, *batch, *workers, os.Stderr)
	}
	// report runs the queries on ref and on fl (at uri), compared with
	// ref's answers and timed against them.
	report := func(uri string, ref, fl tpcds.Engine) *tpcds.Report {
		rep := &tpcds.Report{Scale: *sf, Seed: *seed, Runs: *runs, FlightdURI: uri, Started: time.Now().UTC(),
			Machine: tpcds.ThisMachine(), FlightdFlags: *flFlags, Commit: tpcds.GitCommit()}
		rep.Queries = tpcds.RunQueries(ctx, queries, ref, fl, tpcds.RunOptions{Runs: *runs, Timeout: *timeout, Log: os.Stderr, FlightdPid: *flightdPid})
		rep.Machine.LoadEnd = tpcds.LoadAverage()
		rep.Summary = tpcds.Summarize(rep.Queries)
		return rep
	}
	if *loadOnly && flightd == nil {
		return fmt.Errorf("-load-only needs -flightd: it loads flightd")
	}
	if *versusURI != "" {
		if flightd == nil {
			return fmt.Errorf("-versus needs -flightd")
		}
		versus, err := tpcds.OpenFlightd(ctx, mem, *versusURI)
		if err != nil {
			return err
		}
		defer versus.Close()
		if err := load(flightd, "flightd"); err != nil {
			return err
		}
		if err := load(versus, "versus"); err != nil || *loadOnly {
			return err
		}
		rep := report(*versusURI, flightd, versus)
		s := rep.Summary
		fmt.Printf("%d queries, %d answered as by %s; %s / %s, geometric mean: first runs %.2fx, timed runs %.2fx\n",
			s.Queries, s.FlightdOK, *flightdURI, *versusURI, *flightdURI, s.GeoMeanFirstRatio, s.GeoMeanRatio)
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(*out, "versus.json"), b, 0o644)
	}

	duck, err := tpcds.OpenDuckDB(ctx, *duckPath, *threads)
	if err != nil {
		return err
	}
	defer duck.Close()
	if *duckMemory != "" {
		if err := duck.Exec(ctx, fmt.Sprintf("SET memory_limit = '%s'", strings.ReplaceAll(*duckMemory, "'", ""))); err != nil {
			return err
		}
	}
	reuse := *skipLoad && *duckPath != "" && fileExists(*duckPath)
	if !reuse {
		if err := tpcds.LoadAll(ctx, mem, g, tables, duck, "duckdb", *batch, *workers, os.Stderr); err != nil {
			return err
		}
	}
	if *sqlText != "" {
		res, err := duck.Query(ctx, *sqlText)
		if err != nil {
			return err
		}
		fmt.Println(strings.Join(res.Columns, " | "))
		for _, r := range res.Rows {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = v.String()
			}
			fmt.Println(strings.Join(cells, " | "))
		}
		return nil
	}
	var fl tpcds.Engine
	if flightd != nil {
		if err := load(flightd, "flightd"); err != nil || *loadOnly {
			return err
		}
		fl = flightd
	}

	if *streams > 0 {
		return throughput(ctx, mem, *streams, queries, duck, *flightdURI, *seed, *timeout, *out)
	}
	rep := report(*flightdURI, duck, fl)
	tpcds.WriteTable(os.Stdout, rep)
	if err := tpcds.WriteFiles(*out, rep); err != nil {
		return err
	}
	fmt.Printf("wrote %s/results.json and %s/results.png\n", strings.TrimRight(*out, "/"), strings.TrimRight(*out, "/"))
	return ctx.Err()
}

// throughput runs the throughput test on DuckDB, then on flightd when
// flightdURI is set, prints both and their ratio, and writes
// throughput.json to out.
func throughput(ctx context.Context, mem memory.Allocator, streams int, queries []tpcds.Query, duck *tpcds.DuckDB, flightdURI string,
	seed uint64, timeout time.Duration, out string) error {
	machine, commit := tpcds.ThisMachine(), tpcds.GitCommit()
	var duckConns []*tpcds.DuckDB
	defer func() {
		for _, c := range duckConns {
			c.Close()
		}
	}()
	conns := make([]tpcds.Engine, streams)
	for s := range conns {
		c, err := duck.Conn(ctx)
		if err != nil {
			return err
		}
		duckConns = append(duckConns, c)
		conns[s] = c
	}
	// A warm-up pass on one connection, so neither engine is timed
	// reading its files for the first time.
	warm := func(e tpcds.Engine) {
		for _, q := range queries {
			_, _ = e.Query(ctx, q.SQL)
		}
	}
	warm(conns[0])
	results := []tpcds.ThroughputResult{tpcds.Throughput(ctx, "duckdb", conns, queries, seed, timeout)}
	fmt.Println(results[0])
	if flightdURI != "" {
		for s := range conns {
			f, err := tpcds.OpenFlightd(ctx, mem, flightdURI)
			if err != nil {
				return err
			}
			defer f.Close()
			conns[s] = f
		}
		warm(conns[0])
		results = append(results, tpcds.Throughput(ctx, "flightd", conns, queries, seed, timeout))
		fmt.Println(results[1])
		fmt.Printf("queries per hour, flightd / DuckDB: %.2fx\n", results[1].QueriesPerHour/results[0].QueriesPerHour)
	}
	machine.LoadEnd = tpcds.LoadAverage()
	b, err := json.MarshalIndent(map[string]any{"machine": machine, "commit": commit, "date": time.Now().UTC(),
		"seed": seed, "order": "seeded shuffle per stream (tpcds.StreamOrder)", "results": results}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "throughput.json"), b, 0o644)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// sharedDefault finds shared/bench/tpcds/<sub> beside the repository, from
// the repository root or from bench/.
func sharedDefault(sub string) string {
	for _, d := range []string{"../shared/bench/tpcds/", "../../shared/bench/tpcds/"} {
		if fileExists(d + sub) {
			return d + sub
		}
	}
	return "../shared/bench/tpcds/" + sub
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func selectQueries(all []tpcds.Query, list string) ([]tpcds.Query, error) {
	byName := map[string]tpcds.Query{}
	for _, q := range all {
		byName[q.Name] = q
	}
	var out []tpcds.Query
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		q, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("-only: no query %q", name)
		}
		out = append(out, q)
	}
	return out, nil
}
