package tpcds_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/bench/tpcds/gen"
)

// sharedDir finds shared/bench/tpcds/<sub>: $env, or the shared/ directory
// beside the repository (where CI puts it).
func sharedDir(t *testing.T, env, sub string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	d, err := filepath.Abs(filepath.Join("../../../shared/bench/tpcds", sub))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("TPC-DS %s not found at %s (set %s): %v", sub, d, env, err)
	}
	return d
}

type fixture struct {
	sf      float64
	tables  []*gen.Table
	queries []tpcds.Query
	dbFile  string // DuckDB file holding the generated data
}

var (
	fixtureMu sync.Mutex
	fixtures  = map[float64]fixture{} // by scale factor
	tempDir   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tempDir != "" {
		os.RemoveAll(tempDir)
	}
	os.Exit(code)
}

// scale is the scale factor the tests generate: TPCDS_SCALE, by default
// 0.01 (CI sets 0.3, where 95 of the 99 queries return rows).
func scale(t *testing.T) float64 {
	s := os.Getenv("TPCDS_SCALE")
	if s == "" {
		return 0.01
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		t.Fatalf("TPCDS_SCALE=%q is not a positive number", s)
	}
	return f
}

// minNonEmpty is how many of the 99 queries must return rows on DuckDB at
// a scale (seed 1): 80 do at 0.01, 91 at 0.1, 93 at 0.2, 95 at 0.3 and at 1;
// the rest select on combinations too rare for the smaller customer and
// item tables. CI runs 0.3.
func minNonEmpty(sf float64) int {
	switch {
	case sf >= 0.3:
		return 95
	case sf >= 0.1:
		return 91
	}
	return 78
}

// setup generates the data of scale sf once per test binary into a DuckDB
// file, with a checked allocator that must be back to zero afterwards.
func setup(t *testing.T, sf float64) fixture {
	schema := sharedDir(t, "TPCDS_SCHEMA", "schema")
	queryDir := sharedDir(t, "TPCDS_QUERIES", "queries")
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if f, ok := fixtures[sf]; ok {
		return f
	}
	f, err := func() (fixture, error) {
		tables, err := gen.LoadSchemaDir(schema)
		if err != nil {
			return fixture{}, err
		}
		queries, err := tpcds.LoadQueries(queryDir)
		if err != nil {
			return fixture{}, err
		}
		if len(queries) != 99 {
			return fixture{}, fmt.Errorf("%d queries, want 99", len(queries))
		}
		g, err := newGen(tables, sf)
		if err != nil {
			return fixture{}, err
		}
		if tempDir == "" {
			if tempDir, err = os.MkdirTemp("", "tpcds-test-"); err != nil {
				return fixture{}, err
			}
		}
		file := filepath.Join(tempDir, fmt.Sprintf("sf%v.duckdb", sf))
		ctx := context.Background()
		d, err := tpcds.OpenDuckDB(ctx, file, 2)
		if err != nil {
			return fixture{}, err
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var log strings.Builder
		err = tpcds.LoadAll(ctx, mem, g, tables, d, "duckdb", 8192, 2, &log)
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fixture{}, err
		}
		if n := mem.CurrentAlloc(); n != 0 {
			return fixture{}, fmt.Errorf("generator leaked %d bytes", n)
		}
		return fixture{sf: sf, tables: tables, queries: queries, dbFile: file}, nil
	}()
	if err != nil {
		t.Fatalf("TPC-DS SF %v: %v", sf, err)
	}
	fixtures[sf] = f
	return f
}

func newGen(tables []*gen.Table, sf float64) (*gen.Generator, error) {
	return gen.New(tables, gen.Config{Scale: sf, Seed: 1})
}

// openDuckDB opens an in-memory DuckDB holding a copy of the fixture's data.
func openDuckDB(t *testing.T, ctx context.Context, f fixture, threads int) *tpcds.DuckDB {
	d, err := tpcds.OpenDuckDB(ctx, "", threads)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	stmts := []string{fmt.Sprintf("ATTACH '%s' AS src (READ_ONLY)", f.dbFile)}
	for _, tb := range f.tables {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM src.%s", tb.Name, tb.Name))
	}
	stmts = append(stmts, "DETACH src")
	for _, s := range stmts {
		if err := d.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return d
}

// TestQueries generates SF 0.01 (or TPCDS_SCALE), loads it into DuckDB and runs the 99
// queries: all must execute, and most must return rows (the generator's
// value domains match the queries' filters). With FLIGHTD_URI set, the same
// data is loaded into flightd through ADBC bulk ingest and every answer is
// compared; the per-query outcome is logged, and the queries listed in
// FLIGHTD_EXPECT_PASS ("all" or comma-separated names) must pass. With
// TPCDS_OUT set, results.json and results.png are written there.
func TestQueries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout(t))
	defer cancel()
	f := setup(t, scale(t))
	duck := openDuckDB(t, ctx, f, 2)

	var flightd tpcds.Engine
	uri := os.Getenv("FLIGHTD_URI")
	if uri != "" {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		g, err := newGen(f.tables, f.sf)
		if err != nil {
			t.Fatal(err)
		}
		fl, err := tpcds.OpenFlightd(ctx, mem, uri)
		if err != nil {
			t.Fatal(err)
		}
		defer fl.Close()
		var log strings.Builder
		if err := tpcds.LoadAll(ctx, mem, g, f.tables, fl, "flightd", 8192, 2, &log); err != nil {
			t.Logf("%s", log.String())
			t.Fatalf("loading flightd at %s: %v", uri, err)
		}
		flightd = fl
	}

	results := tpcds.RunQueries(ctx, f.queries, duck, flightd, tpcds.RunOptions{Timeout: time.Minute})
	s := tpcds.Summarize(results)
	if dir := os.Getenv("TPCDS_OUT"); dir != "" {
		rep := &tpcds.Report{Scale: scale(t), Seed: 1, FlightdURI: uri, Started: time.Now().UTC(), Queries: results, Summary: s}
		if err := tpcds.WriteFiles(dir, rep); err != nil {
			t.Error(err)
		}
	}
	for _, q := range results {
		if q.DuckDB.Status != tpcds.StatusOK {
			t.Errorf("q%s on DuckDB: %s", q.Query, q.DuckDB.Message)
		}
	}
	t.Logf("DuckDB: %d/%d queries ran, %d returned rows", s.DuckDBOK, s.Queries, s.DuckDBNonEmpty)
	if s.DuckDBNonEmpty < minNonEmpty(scale(t)) {
		t.Errorf("only %d of 99 queries return rows on DuckDB at SF %v", s.DuckDBNonEmpty, scale(t))
	}
	if flightd == nil {
		t.Log("flightd: not run (FLIGHTD_URI is not set)")
		return
	}
	expect := map[string]bool{}
	for _, name := range strings.Split(os.Getenv("FLIGHTD_EXPECT_PASS"), ",") {
		expect[strings.TrimSpace(name)] = true
	}
	for _, q := range results {
		line := "q" + q.Query + " flightd: " + q.Flightd.Status
		if q.Flightd.Message != "" {
			line += ": " + q.Flightd.Message
		}
		t.Log(line)
		if q.Flightd.Status != tpcds.StatusOK && (expect["all"] || expect[q.Query]) {
			t.Errorf("q%s must pass on flightd: %s %s", q.Query, q.Flightd.Status, q.Flightd.Message)
		}
	}
	t.Logf("flightd: %d ok, %d wrong answer, %d error", s.FlightdOK, s.FlightdWrong, s.FlightdError)

	// Substrait round trip: each query as the plan flightd's producer makes
	// for it must give the SQL path's answer. Queries the producer has no
	// Substrait form for are logged, not failed.
	rt := tpcds.RunQueries(ctx, f.queries, flightd, tpcds.Substrait{Flightd: flightd.(*tpcds.Flightd)}, tpcds.RunOptions{Timeout: time.Minute})
	refused := 0
	for _, q := range rt {
		switch {
		case q.Flightd.Status == tpcds.StatusOK || q.DuckDB.Status != tpcds.StatusOK:
		case strings.Contains(q.Flightd.Message, "no Substrait form"):
			refused++
			t.Logf("q%s through Substrait: %s", q.Query, q.Flightd.Message)
		default:
			t.Errorf("q%s through Substrait: %s %s", q.Query, q.Flightd.Status, q.Flightd.Message)
		}
	}
	rs := tpcds.Summarize(rt)
	t.Logf("Substrait round trip: %d of %d queries give the SQL answer, %d without a Substrait form", rs.FlightdOK, len(rt), refused)
}

// TestCompareDuckDBWithItself checks the comparison on the 99 real results
// at SF 0.01 (whatever TPCDS_SCALE says: this tests the comparator, not the
// engines): a second DuckDB with one thread (other tie orders, other float
// summation orders) must agree with the first on every query.
func TestCompareDuckDBWithItself(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := setup(t, 0.01)
	a := openDuckDB(t, ctx, f, 2)
	b := openDuckDB(t, ctx, f, 1)
	results := tpcds.RunQueries(ctx, f.queries, a, b, tpcds.RunOptions{})
	for _, q := range results {
		if q.Flightd.Status != tpcds.StatusOK {
			t.Errorf("q%s: %s %s", q.Query, q.Flightd.Status, q.Flightd.Message)
		}
	}
	// A one-cent change to every store sale must be caught.
	if err := b.Exec(ctx, "UPDATE store_sales SET ss_ext_sales_price = ss_ext_sales_price + 0.01"); err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for _, q := range tpcds.RunQueries(ctx, f.queries, a, b, tpcds.RunOptions{}) {
		if q.Flightd.Status == tpcds.StatusWrong {
			wrong++
		}
	}
	if wrong < 10 {
		t.Errorf("only %d queries noticed the changed ss_ext_sales_price", wrong)
	}
	t.Logf("%d queries noticed the changed ss_ext_sales_price", wrong)
}

// runTimeout bounds a whole test run: five minutes at SF 0.01, growing
// with the scale.
func runTimeout(t *testing.T) time.Duration {
	return 5*time.Minute + time.Duration(scale(t)*100)*time.Minute
}

// TestRunQueriesCPU: with RunOptions.FlightdPid the runner measures each
// timed run's process CPU time on both sides (here both engines are DuckDB
// in this process) and sums the minimums of the passing queries; without
// it, none.
func TestRunQueriesCPU(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := setup(t, 0.01)
	a := openDuckDB(t, ctx, f, 2)
	b := openDuckDB(t, ctx, f, 1)
	qs := f.queries[:3]
	results := tpcds.RunQueries(ctx, qs, a, b, tpcds.RunOptions{Runs: 2, FlightdPid: os.Getpid()})
	var duck, fl float64
	for _, q := range results {
		for _, e := range []tpcds.EngineResult{q.DuckDB, q.Flightd} {
			if e.Status != tpcds.StatusOK || len(e.CPUMs) != 2 || e.MinCPUMs != min(e.CPUMs[0], e.CPUMs[1]) || e.MinCPUMs < 0 {
				t.Errorf("q%s: %s, CPU of the 2 timed runs %v, minimum %v", q.Query, e.Status, e.CPUMs, e.MinCPUMs)
			}
		}
		if q.Ratio > 0 {
			duck, fl = duck+q.DuckDB.MinCPUMs, fl+q.Flightd.MinCPUMs
		}
	}
	if s := tpcds.Summarize(results); s.DuckDBCPUMs != duck || s.FlightdCPUMs != fl {
		t.Errorf("summary CPU %v / %v ms, want the sums %v / %v", s.DuckDBCPUMs, s.FlightdCPUMs, duck, fl)
	}
	for _, q := range tpcds.RunQueries(ctx, qs, a, b, tpcds.RunOptions{Runs: 1}) {
		if q.DuckDB.CPUMs != nil || q.Flightd.CPUMs != nil {
			t.Errorf("q%s: CPU measured without FlightdPid", q.Query)
		}
	}
}
