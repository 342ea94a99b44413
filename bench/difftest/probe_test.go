package difftest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
)

// TestProbe shows both engines' answers to the queries in $PROBE
// (separated by ";;") over the tables of seed 1, after the statements in
// $PROBE_SETUP (" NOT ENFORCED" is dropped for DuckDB). It is a tool for
// narrowing a finding down and skips without $PROBE.
func TestProbe(t *testing.T) {
	qs := os.Getenv("PROBE")
	if qs == "" {
		t.Skip("set PROBE")
	}
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	env, err := Setup(ctx, mem, t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
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
		if i == 10 {
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
