package stream

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// BenchmarkOverAggregate: events per second through an OVER aggregation
// partitioned by k (1000 keys) ordered by ts with count, sum and max over
// ROWS 10 PRECEDING, RANGE 10 s PRECEDING (about 10 rows of a key) or
// UNBOUNDED PRECEDING, 1024 events per snapshot (newEvents); it reports
// the peak state accounted. Compare with BenchmarkWindowAggregate/
// tumble10s in the same run.
func BenchmarkOverAggregate(b *testing.B) {
	for _, c := range []struct {
		name  string
		frame OverFrame
	}{
		{"rows10", OverFrame{Rows: true, Preceding: 10}},
		{"range10s", OverFrame{Preceding: (10 * time.Second).Microseconds()}},
		{"unbounded", OverFrame{Unbounded: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			mem := memory.NewGoAllocator()
			ec := exec.NewContext(mem)
			in := newEvents(mem, 1, 1024, b.N, 1000)
			budget := NewBudget(0)
			o, err := NewOverAggregate(ec, in, OverSpec{Partition: []exec.Expr{col(1, "k")}, Rowtime: exec.NewColumn(3, eventTS, "ts"),
				Aggs: benchAggs, Frames: []OverFrame{c.frame, c.frame, c.frame}}, budget)
			if err != nil {
				b.Fatal(err)
			}
			p := &peakProbe{Operator: o, budget: budget}
			benchEvents(b, p)
			b.ReportMetric(float64(p.peak), "peak-state-bytes")
		})
	}
}

// peakProbe records the most state the budget held at a chunk.
type peakProbe struct {
	Operator
	budget *Budget
	peak   int64
}

func (p *peakProbe) Next(ctx context.Context) (Chunk, error) {
	p.peak = max(p.peak, p.budget.Used())
	return p.Operator.Next(ctx)
}
