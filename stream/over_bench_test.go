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

// TestOverStateBounded: an OVER aggregation's state is its partitions'
// frames and the rows waiting for the watermark, so five times the
// events (1000 keys, 1024 per snapshot) leave its peak state within 10%
// for ROWS 10 PRECEDING, RANGE 10 s and UNBOUNDED frames (min and max of
// an unbounded frame keep their extreme only), and closing it gives back
// every byte it accounted.
func TestOverStateBounded(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, f := range []OverFrame{{Rows: true, Preceding: 10}, {Preceding: (10 * time.Second).Microseconds()}, {Unbounded: true}} {
		var peaks []int64
		for _, n := range []int{40_000, 200_000} {
			budget := NewBudget(0)
			o, err := NewOverAggregate(exec.NewContext(mem), newEvents(mem, 1, 1024, n, 1000), OverSpec{Partition: []exec.Expr{col(1, "k")}, Rowtime: exec.NewColumn(3, eventTS, "ts"),
				Aggs: benchAggs, Frames: []OverFrame{f, f, f}}, budget)
			if err != nil {
				t.Fatal(err)
			}
			p := &peakProbe{Operator: o, budget: budget}
			ctx := context.Background()
			if err := p.Open(ctx); err != nil {
				t.Fatal(err)
			}
			rows := 0
			for {
				c, err := p.Next(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if c.Batch != nil {
					rows += int(c.Batch.NumRows())
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if rows < n*9/10 || budget.Used() != 0 {
				t.Fatalf("%+v: %d events gave %d rows, %d bytes accounted after Close", f, n, rows, budget.Used())
			}
			peaks = append(peaks, p.peak)
		}
		if peaks[1] > peaks[0]*11/10 {
			t.Errorf("%+v: peak state %d bytes after 40,000 events, %d after 200,000", f, peaks[0], peaks[1])
		}
		t.Logf("%+v: peak state %d and %d bytes", f, peaks[0], peaks[1])
	}
}

// frozenWatermark passes its input on with every marker's watermark set to
// the first one's: a source whose watermark stopped (a large delay, an
// idle partition).
type frozenWatermark struct {
	Operator
	at time.Time
}

func (f *frozenWatermark) Next(ctx context.Context) (Chunk, error) {
	c, err := f.Operator.Next(ctx)
	if c.Batch == nil && !c.Watermark.IsZero() {
		if f.at.IsZero() {
			f.at = c.Watermark
		}
		c.Watermark = f.at
	}
	return c, err
}

// TestOverPastBudgetFails: an OVER aggregation's state does not spill, so
// with the watermark stopped its waiting rows would grow without bound;
// past the query memory budget the query fails with ErrMemoryLimit. The
// same events under no budget, and with the watermark moving under the
// budget, run to the end.
func TestOverPastBudgetFails(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const budget = 1 << 20
	run := func(limit int64, frozen bool) error {
		var in Operator = newEvents(mem, 1, 1024, 40_000, 1000)
		if frozen {
			in = &frozenWatermark{Operator: in}
		}
		b := NewBudget(limit)
		f := OverFrame{Unbounded: true}
		o, err := NewOverAggregate(exec.NewContext(mem), in, OverSpec{Partition: []exec.Expr{col(1, "k")}, Rowtime: exec.NewColumn(3, eventTS, "ts"),
			Aggs: benchAggs, Frames: []OverFrame{f, f, f}}, b)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := o.Open(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
		}()
		for {
			if _, err := o.Next(ctx); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
	if err := run(budget, true); !errors.Is(err, exec.ErrMemoryLimit) {
		t.Fatalf("the watermark stopped, under a %d-byte budget: %v, want ErrMemoryLimit", budget, err)
	}
	if err := run(0, true); err != nil {
		t.Fatalf("the watermark stopped, no budget: %v", err)
	}
	if err := run(budget, false); err != nil {
		t.Fatalf("the watermark moving, under a %d-byte budget: %v", budget, err)
	}
}
