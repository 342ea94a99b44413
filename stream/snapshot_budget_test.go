package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// uniqueRows is n rows "+I i i" split into snapshots of per rows.
func uniqueRows(n, per int) [][]string {
	var snaps [][]string
	for i := 0; i < n; i += per {
		var rows []string
		for j := i; j < min(i+per, n); j++ {
			rows = append(rows, fmt.Sprintf("+I %d %d", j, j))
		}
		snaps = append(snaps, rows)
	}
	return snaps
}

// splitBatches cuts r's batches into batches of at most size rows, as a
// source reads them.
func splitBatches(r *replay, size int64) *replay {
	var chunks []Chunk
	for _, c := range r.chunks {
		if c.Batch == nil {
			chunks = append(chunks, c)
			continue
		}
		for i := int64(0); i < c.Batch.NumRows(); i += size {
			chunks = append(chunks, Chunk{Batch: c.Batch.NewSlice(i, min(i+size, c.Batch.NumRows())), Pos: c.Pos})
		}
		c.Batch.Release()
	}
	r.chunks = chunks
	return r
}

// drainCount reads op to its end and counts the rows it emitted, with
// the budget's peak.
func drainCount(op Operator, b *Budget) (rows, peak int64, err error) {
	ctx := context.Background()
	if err := op.Open(ctx); err != nil {
		return 0, 0, err
	}
	defer op.Close()
	for {
		c, err := op.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, peak, nil
		}
		if err != nil {
			return rows, peak, err
		}
		peak = max(peak, b.Used())
		if c.Batch != nil {
			rows += c.Batch.NumRows()
		}
	}
}

// The state an operator adds within one snapshot stays in memory until
// the snapshot's marker, where it spills, so it must fit in the pool: a
// snapshot of 20,000 new keys (over 2.5 MB of state) under a 64 KiB
// budget and a 256 KiB pool fails with ErrMemoryLimit instead of holding
// them all (before, a GROUP BY job over a 2M-row table held 470 MB of
// groups in a real flightd under an 8 MiB budget and a 256 MiB pool, 1.17
// GB RSS under a 512 MiB memory limit). The same keys over 100 snapshots
// spill at the markers and stay within twice the budget. The pool is
// empty when the statement's memory is released.
func TestSnapshotStateBudget(t *testing.T) {
	const n, limit, pool = 20000, 64 << 10, 256 << 10
	ops := []struct {
		name  string
		build func(ec *exec.Context, in Operator, b *Budget) (Operator, error)
	}{
		{"aggregate", func(ec *exec.Context, in Operator, b *Budget) (Operator, error) {
			return NewAggregate(ec, in, []exec.Expr{col(1, "k")}, []string{"k"}, []AggSpec{
				{Func: "sum", Arg: col(2, "v"), Type: arrow.PrimitiveTypes.Int64, Name: "s"},
			}, b)
		}},
		{"normalize", func(ec *exec.Context, in Operator, b *Budget) (Operator, error) {
			return NewNormalize(ec, in, []int{1}, b)
		}},
		{"top1", func(ec *exec.Context, in Operator, b *Budget) (Operator, error) {
			return NewRank(ec, in, RankSpec{Func: RowNumber, Partition: []exec.Expr{col(1, "k")},
				Order: []exec.SortKey{{Expr: col(2, "v")}}, Lo: 1, Hi: 1}, b)
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			for _, per := range []int{n, n / 100} {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				ec := exec.NewContext(mem)
				ec.TempDir = t.TempDir()
				ec.BatchSize = 500
				ec.MemoryLimit = limit
				ec.Pool = exec.NewMemoryPool(pool)
				b := NewQueryBudget(ec)
				in := splitBatches(int64Changes(t, mem, []string{"k", "v"}, 0, 1, uniqueRows(n, per)...), 500)
				o, err := op.build(ec, in, b)
				if err != nil {
					t.Fatal(err)
				}
				rows, peak, err := drainCount(o, b)
				t.Logf("%d keys in snapshots of %d: %d rows out, state peak %d bytes, err %v", n, per, rows, peak, err)
				switch {
				case per == n:
					if !errors.Is(err, exec.ErrMemoryLimit) {
						t.Errorf("one snapshot of %d keys under a %d-byte budget and a %d-byte pool: %v (state peak %d), want ErrMemoryLimit", n, limit, pool, err, peak)
					}
				case err != nil:
					t.Errorf("snapshots of %d keys: %v", per, err)
				case peak > 2*limit:
					t.Errorf("snapshots of %d keys: state peaked at %d bytes, over twice the %d-byte budget", per, peak, limit)
				}
				ec.ReleaseMemory()
				if r := ec.Pool.Reserved(); r != 0 {
					t.Errorf("%d bytes left in the pool", r)
				}
				mem.AssertSize(t, 0)
			}
		})
	}
}
