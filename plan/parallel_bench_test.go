//go:build unix

package plan_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
)

// BenchmarkParallel runs a scan+filter+aggregation and a hash join at
// Parallelism 1 and 2 over the same data (8 data files of 200k rows, no
// column cache: every run decodes Parquet). Compare with
//
//	go test ./plan -run '^$' -bench Parallel -count 6 | tee out.txt
//	benchstat -col /p out.txt
func BenchmarkParallel(b *testing.B) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	h, err := slt.NewInProc(context.Background(), b.TempDir(), mem, plan.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := h.Close(); err != nil {
			b.Error(err)
		}
		mem.AssertSize(b, 0)
	}()
	setup := `CREATE TABLE digits (x INT);
INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9);
CREATE TABLE item (i_sk BIGINT NOT NULL, i_price INT, PRIMARY KEY (i_sk) NOT ENFORCED);
INSERT INTO item SELECT a.x * 1000 + b.x * 100 + c.x * 10 + d.x, (a.x * 7 + b.x * 3 + c.x + d.x) % 100 FROM digits a, digits b, digits c, digits d;
CREATE TABLE fact (f_item BIGINT, f_day INT, f_qty INT, f_price DOUBLE)`
	if err := h.Exec(setup); err != nil {
		b.Fatal(err)
	}
	// One INSERT per data file: the splits the parallel scan stripes over.
	for f := range 8 {
		ins := fmt.Sprintf(`INSERT INTO fact SELECT (n * 7919) %% 10000, CAST(n %% 365 AS INT), CAST(n %% 17 AS INT), (n %% 1000) * 0.25
FROM (SELECT CAST(a.x * 10000 + b.x * 1000 + c.x * 100 + d.x * 10 + e.x AS BIGINT) + k.y * 100000 + %d * 200000 AS n
      FROM digits a, digits b, digits c, digits d, digits e, (VALUES (0), (1)) AS k (y)) s`, f)
		if err := h.Exec(ins); err != nil {
			b.Fatal(err)
		}
	}
	queries := []struct{ name, sql string }{
		{"agg", `SELECT f_day, count(*), sum(f_qty), avg(f_price) FROM fact WHERE f_qty > 2 GROUP BY f_day`},
		{"join", `SELECT i_price, count(*), sum(f_qty) FROM fact JOIN item ON f_item = i_sk WHERE f_day < 300 AND i_price < 90 GROUP BY i_price`},
	}
	for _, q := range queries {
		bound, err := h.Bind(q.sql)
		if err != nil {
			b.Fatal(err)
		}
		query := bound.(*plan.Query)
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("q=%s/p=%d", q.name, p), func(b *testing.B) {
				var rows int64
				cpu0 := cpuTime(b)
				for b.Loop() {
					ec := exec.NewContext(mem)
					ec.Parallelism = p
					op, err := query.Build(ec, nil)
					if err != nil {
						b.Fatal(err)
					}
					if rows, err = drainCount(b.Context(), op); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rows), "rows/op")
				// CPU time beside wall time: on a shared machine the wall
				// time of p=2 depends on what else runs; CPU time shows
				// what parallelism costs.
				b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func drainCount(ctx context.Context, op exec.Operator) (n int64, err error) {
	defer func() {
		if cerr := op.Close(); err == nil {
			err = cerr
		}
	}()
	if err := op.Open(ctx); err != nil {
		return 0, err
	}
	for {
		batch, err := op.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += batch.NumRows()
	}
}
