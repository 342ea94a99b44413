package slt

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/plan"
)

// TestInProc runs every file under testdata/slt in-process, each on a fresh
// store, at the default batch size and at batch size 3.
func TestInProc(t *testing.T) {
	files, err := filepath.Glob("../../testdata/slt/*.slt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .slt files: %v", err)
	}
	for _, f := range files {
		for _, bs := range []int{0, 3} {
			name := filepath.Base(f)
			if bs > 0 {
				name += "/batch3"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				h, err := NewInProc(context.Background(), t.TempDir(), mem, plan.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if bs > 0 {
					h.SetBatchSize(bs)
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
