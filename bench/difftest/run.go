package difftest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/plan"
)

// Env is one run's data set loaded into both engines.
type Env struct {
	Seed   uint64
	Tables []*Table
	// BatchSize is flightd's executor batch size for this run (small
	// sizes make operators cross batch boundaries).
	BatchSize int
	// Disabled are the planner rules switched off for this run.
	Disabled []string
	F        *Flightd
	D        *tpcds.DuckDB
}

// batchSizes are the executor batch sizes runs cycle through.
var batchSizes = []int{0, 2, 7, 64}

// Setup generates the tables of seed and loads them into a flightd engine
// over dir and into an in-memory DuckDB.
func Setup(ctx context.Context, mem memory.Allocator, dir string, seed uint64) (_ *Env, err error) {
	e := &Env{Seed: seed, Tables: Tables(seed)}
	r := rand.New(rand.NewPCG(seed, 0))
	e.BatchSize = batchSizes[r.IntN(len(batchSizes))]
	// Half the runs switch one or two planner rules off: answers must not
	// depend on them.
	if r.IntN(2) == 0 {
		for range 1 + r.IntN(2) {
			e.Disabled = append(e.Disabled, plan.Rules[r.IntN(len(plan.Rules))])
		}
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.F, err = OpenFlightd(ctx, mem, dir, e.BatchSize, plan.Options{DisabledRules: e.Disabled}); err != nil {
		return nil, err
	}
	if e.D, err = tpcds.OpenDuckDB(ctx, "", 1); err != nil {
		return nil, err
	}
	if err := Load(ctx, e.F, e.Tables, true); err != nil {
		return nil, fmt.Errorf("flightd: %w", err)
	}
	if err := Load(ctx, e.D, e.Tables, false); err != nil {
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	return e, nil
}

// Close closes both engines.
func (e *Env) Close() error {
	var errs []error
	if e.F != nil {
		errs = append(errs, e.F.Close())
	}
	if e.D != nil {
		errs = append(errs, e.D.Close())
	}
	return errors.Join(errs...)
}

// TableNames are the names of the generated tables.
func (e *Env) TableNames() []string {
	var names []string
	for _, t := range e.Tables {
		names = append(names, t.Name)
	}
	return names
}

// Outcome classifies one query.
type Outcome uint8

// Outcomes. Agree and BothFailed are fine; Unsupported is flightd's
// ErrNotImplemented (valid SQL it cannot run yet); the others are findings.
const (
	Agree Outcome = iota
	BothFailed
	Unsupported
	WrongAnswer
	FlightdFailed
	DuckDBFailed
	// DuckDBLimit is DuckDB failing on valid SQL that flightd answers, in
	// one of the known ways (duckdbLimits).
	DuckDBLimit
	// Overflow is an arithmetic overflow on one side only: whether a row
	// that overflows is evaluated at all depends on the plan (a filter or
	// join may drop it first), so it is not a finding.
	Overflow
	// ErrorsDiffer is both failing for different kinds of reasons (say, a
	// data error against a binding error).
	ErrorsDiffer
	numOutcomes
)

func (o Outcome) String() string {
	return [...]string{"agree", "both failed", "unsupported", "wrong answer", "flightd failed", "duckdb failed", "duckdb limit", "overflow", "errors differ"}[o]
}

var overflowRe = regexp.MustCompile(`(?i)overflow`)

// duckdbLimits are DuckDB errors on valid SQL: its binder does not find a
// GROUP BY expression inside a larger select expression in some shapes.
var duckdbLimits = regexp.MustCompile(`must appear in the GROUP BY clause`)

// Finding reports whether the outcome is a difference to look at.
func (o Outcome) Finding() bool { return o >= WrongAnswer && o < DuckDBLimit || o == ErrorsDiffer }

// Excused reports whether the outcome is not a finding although the
// engines did not agree on an answer: a run may excuse only a small share
// (MaxExcused), so that a change making most queries fail, or unsupported,
// cannot pass.
func (o Outcome) Excused() bool {
	return o == BothFailed || o == Unsupported || o == DuckDBLimit || o == Overflow
}

// MaxExcused is the share of a run's queries that may be excused.
const MaxExcused = 0.05

// flightdErrorClass is the SQLSTATE class (its first two characters) of a
// flightd error.
func flightdErrorClass(err error) string { return engine.SQLState(err)[:2] }

// duckdbErrorClasses map DuckDB's error types (the message's "X Error:"
// prefix) to SQLSTATE classes: 42 syntax and names, 22 data, 0A not
// supported.
var duckdbErrorClasses = []struct {
	re    *regexp.Regexp
	class string
}{
	{regexp.MustCompile(`^(Parser|Binder|Catalog) Error`), "42"},
	{regexp.MustCompile(`^(Conversion|Out of Range|Invalid Input) Error|(?i)divi(de|sion) by zero`), "22"},
	{regexp.MustCompile(`^Not implemented Error`), "0A"},
}

func duckdbErrorClass(err error) string {
	msg := err.Error()
	for _, c := range duckdbErrorClasses {
		if c.re.MatchString(msg) {
			return c.class
		}
	}
	return "XX"
}

// Result is the verdict on one query.
type Result struct {
	SQL     string
	Outcome Outcome
	// Detail is the difference or the error(s).
	Detail string
	Rows   int
	// Flightd and DuckDB are the engines' times.
	Flightd, DuckDB time.Duration
}

// Check runs sql on both engines and compares the answers.
func (e *Env) Check(ctx context.Context, sql string) Result {
	res := Result{SQL: sql}
	start := time.Now()
	want, derr := e.D.Query(ctx, sql)
	res.DuckDB = time.Since(start)
	start = time.Now()
	got, ferr := e.F.Query(ctx, sql)
	res.Flightd = time.Since(start)
	switch {
	case derr != nil && ferr != nil:
		res.Outcome, res.Detail = BothFailed, fmt.Sprintf("flightd: %v; duckdb: %v", ferr, derr)
		if f, d := flightdErrorClass(ferr), duckdbErrorClass(derr); f != d {
			res.Outcome = ErrorsDiffer
			res.Detail = fmt.Sprintf("flightd failed with SQLSTATE class %s, DuckDB with %s: %s", f, d, res.Detail)
		}
	case ferr != nil && overflowRe.MatchString(ferr.Error()), derr != nil && overflowRe.MatchString(derr.Error()):
		res.Outcome = Overflow
		res.Detail = fmt.Sprintf("flightd: %v; duckdb: %v", ferr, derr)
	case ferr != nil && errors.Is(ferr, engine.ErrNotSupported):
		res.Outcome, res.Detail = Unsupported, ferr.Error()
	case ferr != nil:
		res.Outcome, res.Detail = FlightdFailed, ferr.Error()
	case derr != nil && duckdbLimits.MatchString(derr.Error()):
		res.Outcome, res.Detail = DuckDBLimit, derr.Error()
	case derr != nil:
		res.Outcome, res.Detail = DuckDBFailed, derr.Error()
	default:
		res.Rows = len(want.Rows)
		if d := tpcds.Compare(sql, want, got); d != "" {
			res.Outcome, res.Detail = WrongAnswer, d
		}
	}
	return res
}

// Query returns query number i of the run.
func (e *Env) Query(i int) string {
	return NewGen(e.Seed, i, e.TableNames()).Query()
}

// Replay is the go test command line that replays query i of the run
// (i < 0: a query of testdata/regressions.txt).
func (e *Env) Replay(i int) string {
	if i < 0 {
		return "go test ./difftest -run TestRegressions"
	}
	return fmt.Sprintf("go test ./difftest -run TestDiff -difftest.seed=%d -difftest.query=%d", e.Seed, i)
}

// Report formats a finding for a test log.
func (e *Env) Report(i int, r Result) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: seed %d query %d (batch size %d, rules off %v)\n", r.Outcome, e.Seed, i, e.BatchSize, e.Disabled)
	fmt.Fprintf(&sb, "  replay: %s\n", e.Replay(i))
	fmt.Fprintf(&sb, "  sql: %s\n", r.SQL)
	fmt.Fprintf(&sb, "  %s", r.Detail)
	return sb.String()
}
