package plan_test

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// BenchmarkPlanJoins plans joins of n tables, a chain and a star, written
// with JOIN ... ON: the planner's cost in the number of tables, up to
// sql.MaxTables.
func BenchmarkPlanJoins(b *testing.B) {
	h, _ := newHarness(b, plan.Options{})
	if err := h.Exec("CREATE TABLE t (a BIGINT, b BIGINT); INSERT INTO t VALUES (1, 2), (2, 3)"); err != nil {
		b.Fatal(err)
	}
	for _, shape := range []string{"chain", "star"} {
		for _, n := range []int{16, 64, 256} {
			q := joinQuery(n, shape == "star", false)
			b.Run(fmt.Sprintf("%s-%d", shape, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := h.Bind(q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPlanNestedArray plans ARRAY[ARRAY[...1...]] n deep, folded to
// one constant.
func BenchmarkPlanNestedArray(b *testing.B) {
	h, _ := newHarness(b, plan.Options{})
	for _, n := range []int{60, 120, 240, 480} {
		q := "SELECT " + strings.Repeat("ARRAY[", n) + "1" + strings.Repeat("]", n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Bind(q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
