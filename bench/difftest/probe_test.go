package difftest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
)

// TestProbe shows both engines' answers to the queries in $PROBE
// (separated by ";;") over the tables of seed $PROBE_SEED (default 1), after
// the statements in $PROBE_SETUP (" NOT ENFORCED" is dropped for DuckDB);
// with FLIGHTD_FLINK=1 Flink's answers too (over the seed's tables only),
// each awaited $PROBE_TIMEOUT (a Go duration; the oracle's default if unset).
// It is a tool for narrowing a finding down and skips without $PROBE.
func TestProbe(t *testing.T) {
	qs := os.Getenv("PROBE")
	if qs == "" {
		t.Skip("set PROBE")
	}
	seed := uint64(1)
	if s := os.Getenv("PROBE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("PROBE_SEED: %v", err)
		}
	}
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	dir := t.TempDir()
	env, err := Setup(ctx, mem, dir, seed)
	if err != nil {
		t.Fatal(err)
	}
	var oracle *flinkProcess
	if os.Getenv("FLIGHTD_FLINK") != "" {
		oracle = &flinkProcess{}
		oracle.start(t)
		defer oracle.close(t)
		if d := os.Getenv("PROBE_TIMEOUT"); d != "" {
			if oracle.Timeout, err = time.ParseDuration(d); err != nil {
				t.Fatalf("PROBE_TIMEOUT: %v", err)
			}
		}
		if err := LoadFlink(oracle.Oracle, dir, env.Tables); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range strings.Split(os.Getenv("PROBE_SETUP"), ";;") {
		if strings.TrimSpace(st) == "" {
			continue
		}
		if err := env.F.Exec(ctx, st); err != nil {
			t.Fatal(err)
		}
		if err := env.D.Exec(ctx, strings.ReplaceAll(st, " NOT ENFORCED", "")); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range strings.Split(qs, ";;") {
		fr, ferr := env.F.Query(ctx, q)
		dr, derr := env.D.Query(ctx, q)
		t.Logf("Q: %s", q)
		t.Logf("  flightd: err=%v %s", ferr, rows(fr))
		t.Logf("  duckdb : err=%v %s", derr, rows(dr))
		if oracle != nil {
			a, err := oracle.Run(q)
			if err != nil {
				t.Fatal(err)
			}
			kr, err := flinkResult(a, nil)
			t.Logf("  flink  : err=%v%s %s %v", err, a.Err, rows(kr), a.Types)
		}
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
}

// rows renders the first rows of a result.
func rows(r *tpcds.Result) string {
	if r == nil {
		return ""
	}
	var sb strings.Builder
	for i, row := range r.Rows {
		if i == 50 {
			sb.WriteString(" ...")
			break
		}
		sb.WriteString(" (")
		for j, v := range row {
			if j > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(v.String())
		}
		sb.WriteString(")")
	}
	return sb.String()
}
