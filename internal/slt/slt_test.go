package slt

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/plan"
)

// TestInProc runs every file under testdata/slt in-process, each on a fresh
// store: at the default batch size, at batch size 3 (with parallel
// aggregation of any group count), and with each optimizer rule disabled in
// turn (results must not depend on the rules).
func TestInProc(t *testing.T) {
	files, err := filepath.Glob("../../testdata/slt/*.slt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .slt files: %v", err)
	}
	type config struct {
		name      string
		batchSize int
		disabled  []string
		opts      plan.Options
	}
	// batch3 also aggregates in parallel however few the groups (the
	// default runs a few serially), so that the parallel aggregation
	// meets these files too, in small batches.
	configs := []config{{name: "default"}, {name: "batch3", batchSize: 3, opts: plan.Options{MinParallelGroups: -1}}}
	for _, r := range plan.Rules {
		configs = append(configs, config{name: "no_" + r, disabled: []string{r}})
	}
	for fi, f := range files {
		for ci, c := range configs {
			if raceEnabled && ci >= 2 && (ci-2)%(len(configs)-2) != fi%(len(configs)-2) {
				continue // under -race each file disables one rule, in turn, so each rule is off for some files (the goroutines run in default and batch3); the plain pass disables each rule for every file
			}
			t.Run(filepath.Base(f)+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				opts := c.opts
				opts.DisabledRules = c.disabled
				h, err := NewInProc(context.Background(), t.TempDir(), mem, opts)
				if err != nil {
					t.Fatal(err)
				}
				if c.batchSize > 0 {
					if err := h.SetBatchSize(c.batchSize); err != nil {
						t.Fatal(err)
					}
				}
				RunFile(t, h, f)
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
				mem.AssertSize(t, 0)
			})
		}
	}
}

// TestRunDir runs the files through RunDir, the entry point other harnesses
// use.
func TestRunDir(t *testing.T) {
	RunDir(t, "../../testdata/slt", func(t *testing.T) Harness {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		h, err := NewInProc(context.Background(), t.TempDir(), mem, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := h.Close(); err != nil {
				t.Error(err)
			}
			mem.AssertSize(t, 0)
		})
		return h
	})
}

func TestParseRecords(t *testing.T) {
	recs, err := Parse("# c\nstatement ok\nCREATE TABLE t (a INT)\n\nskipif flightd\nstatement ok\nX\n\nquery IT rowsort\nSELECT 1, 'a'\n----\n1 a\n\nstatement error not found\nSELECT x\n\nhalt\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0].Kind != "statement" || recs[1].Types != "IT" || recs[1].Sort != "rowsort" ||
		recs[1].Expected[0] != "1 a" || recs[2].ErrRe != "not found" || recs[3].Kind != "halt" {
		t.Fatalf("bad parse: %+v", recs)
	}
	if _, err := Parse("bogus\n"); err == nil {
		t.Fatal("expected an error for an unknown record")
	}
}
