package exec_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

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

// TestWindowCollectedValuesBounded: over a running frame each row keeps its
// own copy of what LISTAGG and ARRAY_AGG collect, rows squared values in
// all; past the query memory budget (at least 64 MiB) the query fails with
// ErrMemoryLimit instead of growing the process (a running LISTAGG of
// 100-byte strings over 5,000 rows took the server from 0.2 to 2.5 GB with
// a 128 MiB budget). 3,000 rows hold 450 MB of LISTAGG values, 1,000 rows
// 8 MB of ARRAY_AGG values.
func TestWindowCollectedValuesBounded(t *testing.T) {
	run := func(limit int64, fn string, rows int64) error {
		checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer checked.AssertSize(t, 0)
		ec := exec.NewContext(checked)
		ec.MemoryLimit = limit
		src := exec.NewSeries(ec, "x", exec.Series{Start: 1, Stop: rows, Step: 1, Inclusive: true, Type: arrow.PrimitiveTypes.Int64})
		x := exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "x")
		arg := exec.Expr(x)
		if fn == "listagg" {
			arg = exec.NewLiteral(scalar.NewStringScalar(strings.Repeat("v", 100)))
		}
		running := &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.CurrentRow}}
		op, err := exec.NewWindow(ec, src, nil, []exec.SortKey{{Expr: x}}, []exec.WindowFunc{{Func: fn, Args: []exec.Expr{arg}, Frame: running}})
		if err != nil {
			t.Fatal(err)
		}
		bs, err := exec.Collect(context.Background(), op)
		n := 0
		for _, b := range bs {
			n += int(b.NumRows())
			b.Release()
		}
		if err == nil && int64(n) != rows {
			t.Fatalf("%s: %d rows", fn, n)
		}
		return err
	}
	if err := run(128<<20, "listagg", 3000); !errors.Is(err, exec.ErrMemoryLimit) {
		t.Errorf("listagg with a 128 MiB budget: want ErrMemoryLimit, got %v", err)
	}
	if err := run(1<<20, "array_agg", 1000); err != nil {
		t.Errorf("array_agg with a 1 MiB budget (64 MiB for the values): %v", err)
	}
	if err := run(0, "listagg", 3000); err != nil {
		t.Errorf("listagg without a budget: %v", err)
	}
}

// TestWindowChunkErrorReleasesCarry: when a function fails in a chunk of a
// partition computed in chunks, the state the functions before it carried
// for the next chunk (FIRST_VALUE's value) is released too; it leaked.
func TestWindowChunkErrorReleasesCarry(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	ec := exec.NewContext(checked)
	ec.MemoryLimit, ec.TempDir = 16<<10, t.TempDir()
	src := exec.NewSeries(ec, "x", exec.Series{Start: 1, Stop: 20000, Step: 1, Inclusive: true, Type: arrow.PrimitiveTypes.Int64})
	x := exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "x")
	running := &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.UnboundedPreceding}, End: exec.FrameBound{Kind: exec.CurrentRow}}
	op, err := exec.NewWindow(ec, src, nil, []exec.SortKey{{Expr: x}}, []exec.WindowFunc{
		{Func: "first_value", Args: []exec.Expr{x}, Frame: running},
		// Overflows after about 8,000 rows, in a later chunk.
		{Func: "sum", Args: []exec.Expr{exec.NewLiteral(scalar.NewInt64Scalar(1 << 50))}, Frame: running},
	})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := exec.Collect(context.Background(), op)
	for _, b := range bs {
		b.Release()
	}
	if err == nil || !strings.Contains(err.Error(), "overflow") || ec.SpilledRows() == 0 {
		t.Fatalf("want an overflow in a chunked partition, got %v (%d rows spilled)", err, ec.SpilledRows())
	}
}
