package exec_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// TestWindowFrameStopsOnCancel: a sliding frame of an aggregate that cannot
// merge states folds each row's frame from scratch, rows times frame width:
// VAR_POP(x) OVER (ORDER BY x ROWS
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
	// VAR_POP cannot merge states, so its sliding frames are still folded
	// row by row (SUM's slide: TestSlidingFramesAreLinear).
	op, err := exec.NewWindow(ec, src, nil, []exec.SortKey{{Expr: x}}, []exec.WindowFunc{{Func: "var_pop", Args: []exec.Expr{x}, Frame: frame}})
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

// TestSlidingFramesAreLinear: SUM, COUNT, AVG, MIN and MAX over frames
// bounded at both ends by offsets fold each row once, not once per frame it
// is in: over 100,000 rows, ROWS BETWEEN 9223372036854775807 PRECEDING AND
// 9223372036854775807 FOLLOWING (every row's frame the whole table) took
// 102 s through a server, 50000 PRECEDING AND CURRENT ROW 57 s.
func TestSlidingFramesAreLinear(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	ec := exec.NewContext(checked)
	const rows = 100_000
	src := exec.NewSeries(ec, "x", exec.Series{Start: 1, Stop: rows, Step: 1, Inclusive: true, Type: arrow.PrimitiveTypes.Int64})
	x := exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "x")
	bound := func(k exec.FrameBoundKind, off int64) exec.FrameBound { return exec.FrameBound{Kind: k, Offset: off} }
	whole := &exec.Frame{Rows: true, Start: bound(exec.Preceding, math.MaxInt64), End: bound(exec.Following, math.MaxInt64)}
	behind := &exec.Frame{Rows: true, Start: bound(exec.Preceding, rows/2), End: bound(exec.CurrentRow, 0)}
	around := &exec.Frame{Start: bound(exec.Preceding, rows/4), End: bound(exec.Following, rows/4)} // RANGE
	var funcs []exec.WindowFunc
	for _, fr := range []*exec.Frame{whole, behind, around} {
		for _, fn := range []string{"sum", "count", "avg", "min", "max"} {
			funcs = append(funcs, exec.WindowFunc{Func: fn, Args: []exec.Expr{x}, Frame: fr})
		}
	}
	op, err := exec.NewWindow(ec, src, nil, []exec.SortKey{{Expr: x}}, funcs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	bs, err := exec.Collect(ctx, op)
	defer func() {
		for _, b := range bs {
			b.Release()
		}
	}()
	if err != nil {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
	// Row i (from 1): whole sums all, behind rows max(1, i-50000)..i,
	// around i-25000..i+25000 within 1..rows.
	sumTo := func(k int64) int64 { return k * (k + 1) / 2 }
	want := func(i int64) []int64 {
		var out []int64
		for _, r := range [][2]int64{{1, rows}, {max(1, i-rows/2), i}, {max(1, i-rows/4), min(rows, i+rows/4)}} {
			s, c := sumTo(r[1])-sumTo(r[0]-1), r[1]-r[0]+1
			out = append(out, s, c, s/c, r[0], r[1])
		}
		return out
	}
	i := int64(1)
	for _, b := range bs {
		for r := 0; r < int(b.NumRows()); r++ {
			for f, w := range want(i) {
				if got := b.Column(1 + f).(*array.Int64).Value(r); got != w {
					t.Fatalf("row %d: %s over frame %d is %d, want %d", i, funcs[f].Func, f/5, got, w)
				}
			}
			i++
		}
	}
	if i != rows+1 {
		t.Fatalf("%d rows", i-1)
	}
}

// TestSlidingFramesMatchModel compares the sliding frames of mergeable
// aggregates, with NULL values, partitions, ROWS and RANGE offsets (some
// past every row) and empty frames, computed whole and in chunks of a
// partition, with each frame folded from scratch here.
func TestSlidingFramesMatchModel(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	offsets := []int64{0, 1, 2, 3, 7, math.MaxInt64}
	kinds := []exec.FrameBoundKind{exec.Preceding, exec.CurrentRow, exec.Following}
	for iter := range 40 {
		// Rows of partition p with distinct ascending keys o (gaps for RANGE).
		type row struct {
			p    string
			o    int64
			v    int64
			null bool
		}
		var rows []row
		for p := range 1 + rng.IntN(3) {
			o := int64(rng.IntN(5))
			for range rng.IntN(60) {
				o += 1 + int64(rng.IntN(3))
				rows = append(rows, row{p: fmt.Sprint("p", p), o: o, v: int64(rng.IntN(41)) - 20, null: rng.IntN(5) == 0})
			}
		}
		if len(rows) == 0 {
			continue
		}
		fr := &exec.Frame{Rows: rng.IntN(2) == 0}
		k := rng.IntN(3)
		fr.Start = exec.FrameBound{Kind: kinds[k], Offset: offsets[rng.IntN(len(offsets))]}
		fr.End = exec.FrameBound{Kind: kinds[k+rng.IntN(3-k)], Offset: offsets[rng.IntN(len(offsets))]}
		// The model: row r's frame is the rows of its partition at positions
		// (ROWS) or keys (RANGE) from r's plus the start to r's plus the end.
		at := func(b exec.FrameBound, x int64) int64 {
			switch b.Kind {
			case exec.Preceding:
				if b.Offset == math.MaxInt64 {
					return math.MinInt64
				}
				return x - b.Offset
			case exec.Following:
				if b.Offset == math.MaxInt64 {
					return math.MaxInt64
				}
				return x + b.Offset
			}
			return x
		}
		var want []string
		tb := exectest.Table{Schema: arrow.NewSchema([]arrow.Field{
			{Name: "p", Type: arrow.BinaryTypes.String}, {Name: "o", Type: arrow.PrimitiveTypes.Int64},
			{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)}
		for i, r := range rows {
			v := fmt.Sprint(r.v)
			if r.null {
				v = "NULL"
			}
			tb.Rows = append(tb.Rows, []string{r.p, fmt.Sprint(r.o), v})
			pos := func(j int) int64 {
				if fr.Rows {
					return int64(j)
				}
				return rows[j].o
			}
			lo, hi := at(fr.Start, pos(i)), at(fr.End, pos(i))
			var sum, cnt, stars, mn, mx int64
			for j, s := range rows {
				if s.p != r.p || pos(j) < lo || pos(j) > hi {
					continue
				}
				stars++
				if s.null {
					continue
				}
				if cnt == 0 || s.v < mn {
					mn = s.v
				}
				if cnt == 0 || s.v > mx {
					mx = s.v
				}
				sum += s.v
				cnt++
			}
			cells := []string{r.p, fmt.Sprint(r.o), v, "NULL", fmt.Sprint(cnt), "NULL", "NULL", "NULL", fmt.Sprint(stars)}
			if cnt > 0 {
				cells[3], cells[5], cells[6], cells[7] = fmt.Sprint(sum), fmt.Sprint(sum/cnt), fmt.Sprint(mn), fmt.Sprint(mx)
			}
			want = append(want, strings.Join(cells, " | "))
		}
		s := tb.Schema
		v := exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "v")
		var funcs []exec.WindowFunc
		for _, fn := range []string{"sum", "count", "avg", "min", "max"} {
			funcs = append(funcs, exec.WindowFunc{Func: fn, Args: []exec.Expr{v}, Frame: fr})
		}
		funcs = append(funcs, exec.WindowFunc{Func: "count_star", Frame: fr})
		for _, limit := range []int64{0, 2 << 10} {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			ec := exec.NewContext(mem)
			ec.MemoryLimit, ec.TempDir, ec.BatchSize = limit, t.TempDir(), 1+rng.IntN(16)
			bs, err := tb.Split(mem, rng, 1+rng.IntN(16), true)
			if err != nil {
				t.Fatal(err)
			}
			op, err := exec.NewWindow(ec, exectest.Source(ec, s, bs), []exec.Expr{exec.NewColumn(0, arrow.BinaryTypes.String, "p")},
				[]exec.SortKey{{Expr: exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "o")}}, funcs)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Collect(context.Background(), op)
			got := exectest.Rows(out)
			for _, b := range out {
				b.Release()
			}
			mem.AssertSize(t, 0)
			if limit > 0 && errors.Is(err, exec.ErrMemoryLimit) {
				continue // frames reaching far cannot be computed in chunks
			}
			if err != nil {
				t.Fatalf("iteration %d, frame %+v, memory limit %d: %v", iter, *fr, limit, err)
			}
			if !exectest.Unordered(got, want) {
				t.Fatalf("iteration %d, frame %+v, memory limit %d:\ngot  %q\nwant %q", iter, *fr, limit, got, want)
			}
		}
	}
}
