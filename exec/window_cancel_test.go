package exec_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// TestWindowFrameStopsOnCancel: a sliding frame folds each row's frame
// from scratch, rows times frame width: SUM(x) OVER (ORDER BY x ROWS
// BETWEEN 100000 PRECEDING AND 100000 FOLLOWING) over 3M rows is 6e11
// additions, and it went on for as long after its client had gone. It
// must stop soon after its context is cancelled.
func TestWindowFrameStopsOnCancel(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	ec := exec.NewContext(checked)
	src := exec.NewSeries(ec, "x", exec.Series{Start: 1, Stop: 300_000, Step: 1, Inclusive: true, Type: arrow.PrimitiveTypes.Int64})
	x := exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "x")
	frame := &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.Preceding, Offset: 100_000}, End: exec.FrameBound{Kind: exec.Following, Offset: 100_000}}
	op, err := exec.NewWindow(ec, src, nil, []exec.SortKey{{Expr: x}}, []exec.WindowFunc{{Func: "sum", Args: []exec.Expr{x}, Frame: frame}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	bs, err := exec.Collect(ctx, op)
	for _, b := range bs {
		b.Release()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v after %v", err, time.Since(start))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stopped %v after the cancel", d)
	}
}
