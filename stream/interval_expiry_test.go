package stream

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// TestIntervalJoinExpires: an interval join over two event streams holds
// only the rows the watermark has not passed: after 200,000 events (about
// 34 MB of state if all were held) the join holds under 2 MB, the last
// seconds of events; none was late, about one match per event. (The peak
// depends on how far one input runs ahead of the other: 3-8 MB here.)
func TestIntervalJoinExpires(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	side := func(seed int64) *events { return newEvents(mem, seed, 256, 100_000, 1000) }
	spec := IntervalSpec{
		LeftKeys: []exec.Expr{col(1, "k")}, RightKeys: []exec.Expr{col(1, "k")},
		LeftTime: exec.NewColumn(3, eventTS, "ts"), RightTime: exec.NewColumn(3, eventTS, "ts"),
		Lower: -time.Second, Upper: time.Second,
	}
	budget := NewBudget(0)
	j, err := NewIntervalJoin(ec, side(1), side(2), spec, budget)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	if err := j.Open(ctx); err != nil {
		t.Fatal(err)
	}
	var out, peak int64
	for {
		c, err := j.Next(ctx)
		if errors.Is(err, io.EOF) {
			if end := budget.Used(); end > 2<<20 {
				t.Fatalf("the join holds %d bytes of state after the watermark passed all but the last events", end)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Batch != nil {
			out += c.Batch.NumRows()
		}
		peak = max(peak, budget.Used())
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if j.late != 0 || out < 100_000 {
		t.Fatalf("%d late rows, %d joined rows", j.late, out)
	}
	t.Logf("peak state %d bytes, %d joined rows", peak, out)
	if budget.Used() != 0 {
		t.Fatalf("the budget holds %d bytes after Close", budget.Used())
	}
}
