package plan_test

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/flightd/flightd/plan"
)

// BenchmarkPlanTPCDS binds, optimizes and plans the 99 TPC-DS queries
// (one iteration plans all of them) over tables of 40 random rows, so
// estimates read real statistics.
func BenchmarkPlanTPCDS(b *testing.B) {
	h, _ := newHarness(b, plan.Options{})
	root := createTPCDS(b, h)
	fillRandom(b, h, rand.New(rand.NewSource(1)), 40)
	files, _ := filepath.Glob(filepath.Join(root, "queries", "*.sql"))
	queries := make([]string, len(files))
	for i, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		queries[i] = string(src)
	}
	for b.Loop() {
		for _, q := range queries {
			if _, err := h.Bind(q); err != nil {
				b.Fatal(err)
			}
		}
	}
}
