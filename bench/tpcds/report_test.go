package tpcds

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFiles(t *testing.T) {
	ok := func(ms float64) EngineResult {
		return EngineResult{Status: StatusOK, Rows: 3, TimesMs: []float64{ms}, MedianMs: ms}
	}
	for _, tc := range []struct {
		name string
		qs   []QueryResult
	}{
		{"some pass", []QueryResult{
			{Query: "01", DuckDB: ok(10), Flightd: ok(25), Ratio: 2.5},
			{Query: "02", DuckDB: ok(0), Flightd: EngineResult{Status: StatusError, Message: "no such table"}},
			{Query: "03", DuckDB: ok(4), Flightd: EngineResult{Status: StatusWrong, Message: "row 0"}},
		}},
		{"none pass", []QueryResult{
			{Query: "01", DuckDB: ok(10), Flightd: EngineResult{Status: StatusNotRun}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := &Report{Scale: 0.01, Seed: 1, Runs: 1, Queries: tc.qs, Summary: Summarize(tc.qs)}
			if err := WriteFiles(dir, r); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			var back Report
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if len(back.Queries) != len(tc.qs) || back.Summary != r.Summary {
				t.Errorf("JSON round trip: %+v", back.Summary)
			}
			f, err := os.Open(filepath.Join(dir, "results.png"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			if img.Bounds().Dx() < 1000 {
				t.Errorf("chart is %v", img.Bounds())
			}
			var table bytes.Buffer
			WriteTable(&table, r)
			for _, q := range tc.qs {
				if !strings.Contains(table.String(), "q"+q.Query) {
					t.Errorf("table lacks q%s:\n%s", q.Query, table.String())
				}
			}
		})
	}
}
