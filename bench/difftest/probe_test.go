package difftest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/plan"
)

func TestProbe(t *testing.T) {
	qs := os.Getenv("PROBE")
	if qs == "" {
		t.Skip()
	}
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	f, err := OpenFlightd(ctx, mem, t.TempDir(), 0, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := tpcds.OpenDuckDB(ctx, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tabs := Tables(1)
	if err := Load(ctx, f, tabs, true); err != nil {
		t.Fatal(err)
	}
	if err := Load(ctx, d, tabs, false); err != nil {
		t.Fatal(err)
	}
	for _, st := range strings.Split(os.Getenv("PROBE_SETUP"), ";;") {
		if strings.TrimSpace(st) == "" {
			continue
		}
		if err := f.Exec(ctx, st); err != nil {
			t.Fatal(err)
		}
		if err := d.Exec(ctx, strings.ReplaceAll(st, " NOT ENFORCED", "")); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range strings.Split(qs, ";;") {
		fr, ferr := f.Query(ctx, q)
		dr, derr := d.Query(ctx, q)
		t.Logf("Q: %s", q)
		t.Logf("  flightd: err=%v %v", ferr, fmtRes(fr))
		t.Logf("  duckdb : err=%v %v", derr, fmtRes(dr))
	}
}

func fmtRes(r *tpcds.Result) string {
	if r == nil {
		return ""
	}
	var sb strings.Builder
	for i, row := range r.Rows {
		if i > 8 {
			sb.WriteString(" ...")
			break
		}
		sb.WriteString(" (")
		for j, v := range row {
			if j > 0 {
				sb.WriteString(",")
			}
			sb.WriteString(v.String())
		}
		sb.WriteString(")")
	}
	return sb.String()
}
