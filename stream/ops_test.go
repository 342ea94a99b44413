package stream

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// An aggregate emits one -U/+U per group and snapshot, the pair in one
// batch even at batch size 1; a group whose rows all go emits -D; HAVING
// turns entering and leaving into +I and -D.
func TestAggregateMiniBatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ec.BatchSize = 1
	in := int64Changes(t, mem, []string{"g", "x"}, 0, 1,
		[]string{"+I 1 10", "+I 1 20", "+I 2 5"},
		[]string{"-D 1 10", "+I 1 7", "-U 2 5", "+U 2 6"}, // group 2: same count, new sum
		[]string{"-D 2 6"},
	)
	agg, err := NewAggregate(ec, in, []exec.Expr{col(1, "g")}, []string{"g"}, []AggSpec{
		{Func: "count_star", Type: arrow.PrimitiveTypes.Int64, Name: "c"},
		{Func: "sum", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "s"},
		{Func: "max", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "m"},
	}, NewBudget(0))
	if err != nil {
		t.Fatal(err)
	}
	expectCollect(t, agg, []string{
		"[1]: +I 1 2 30 20", "[1]: +I 2 1 5 5", "[1]: marker",
		"[2]: -U 1 2 30 20 | +U 1 2 27 20", "[2]: -U 2 1 5 5 | +U 2 1 6 6", "[2]: marker",
		"[3]: -D 2 1 6 6", "[3]: marker",
	})
}

// Retracting the maximum finds the next one; a global aggregate has its
// row before any input and keeps it when every row goes.
func TestAggregateGlobalMinMax(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	in := int64Changes(t, mem, []string{"x"}, 0, 1,
		nil,
		[]string{"+I 3", "+I 9", "+I 9"},
		[]string{"-D 9"},
		[]string{"-D 9"},
		[]string{"-D 3"},
	)
	agg, err := NewAggregate(ec, in, nil, nil, []AggSpec{
		{Func: "count_star", Type: arrow.PrimitiveTypes.Int64, Name: "c"},
		{Func: "max", Arg: col(1, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "m"},
		{Func: "count", Arg: col(1, "x"), Distinct: true, Type: arrow.PrimitiveTypes.Int64, Name: "d"},
	}, NewBudget(0))
	if err != nil {
		t.Fatal(err)
	}
	expectCollect(t, agg, []string{
		"[1]: +I 0 (null) 0", "[1]: marker",
		"[2]: -U 0 (null) 0 | +U 3 9 2", "[2]: marker",
		"[3]: -U 3 9 2 | +U 2 9 2", "[3]: marker",
		"[4]: -U 2 9 2 | +U 1 3 1", "[4]: marker",
		"[5]: -U 1 3 1 | +U 0 (null) 0", "[5]: marker",
	})
}

// Normalize turns upserts into exact changes: a repeated row sends
// nothing, a delete sends the row it deletes.
func TestNormalize(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	in := int64Changes(t, mem, []string{"k", "v"}, 0, 1,
		[]string{"+I 1 10", "+I 2 20", "+I 1 11"},
		[]string{"+U 1 11", "+I 2 21", "-D 1 NULL", "+I 3 30", "-D 3 NULL"},
	)
	n, err := NewNormalize(ec, in, []int{1}, NewBudget(0))
	if err != nil {
		t.Fatal(err)
	}
	expectCollect(t, n, []string{
		"[1]: +I 1 11 | +I 2 20", "[1]: marker",
		"[2]: -D 1 11 | -U 2 20 | +U 2 21", "[2]: marker",
	})
}

// A left join's NULL-padded row is retracted when the first match comes
// and emitted again when the last one goes.
// Both with boxed rows and with rows held encoded (insert-only sides).
func TestJoinOuterPadding(t *testing.T) {
	for _, insertOnly := range []bool{false, true} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ec := exec.NewContext(mem)
		budget := NewBudget(0)
		left := int64Changes(t, mem, []string{"k", "a"}, 0, 2, []string{"+I 1 100"})
		right := int64Changes(t, mem, []string{"k", "b"}, 1, 2, nil, []string{"+I 1 7", "+I 1 8"}, []string{"-D 1 7"}, []string{"-D 1 8"})
		// The right side starts when the left one has ended: one order.
		left.done = make(chan struct{})
		right.wait = left.done
		spec := JoinSpec{Kind: exec.LeftJoin, LeftKeys: []exec.Expr{col(1, "k")}, RightKeys: []exec.Expr{col(1, "k")}, InsertOnly: [2]bool{insertOnly, insertOnly}}
		j, err := NewJoin(ec, left, right, spec, budget)
		if err != nil {
			t.Fatal(err)
		}
		expectCollect(t, j, []string{
			"[1 0]: +I 1 100 (null) (null)", "[1 0]: marker",
			"[1 1]: marker",
			"[1 2]: -D 1 100 (null) (null) | +I 1 100 1 7 | +I 1 100 1 8", "[1 2]: marker",
			"[1 3]: -D 1 100 1 7", "[1 3]: marker",
			"[1 4]: -D 1 100 1 8 | +I 1 100 (null) (null)", "[1 4]: marker",
		})
		if budget.Used() != 0 {
			t.Fatalf("insert-only %v: closed join holds %d bytes", insertOnly, budget.Used())
		}
		mem.AssertSize(t, 0)
	}
}

// Many rows of one key, duplicates among them, come and go in an order
// that moves rows within the key's entry: each change emits exactly its
// joined rows, and a retraction finds its row wherever it moved, with the
// index by whole row and without it (an insert-only side, whose copies
// are entries of their own).
func TestJoinRowsOfOneKey(t *testing.T) {
	for _, insertOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("insertOnly=%v", insertOnly), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ec := exec.NewContext(mem)
			budget := NewBudget(0)
			left := int64Changes(t, mem, []string{"k", "a"}, 0, 2, []string{"+I 1 100"})
			right := int64Changes(t, mem, []string{"k", "b"}, 1, 2,
				[]string{"+I 1 1", "+I 1 2", "+I 1 3", "+I 1 3", "+I 1 4"},
				[]string{"-D 1 1"},
				[]string{"-D 1 4"},
				[]string{"-D 1 3", "-D 1 3"},
				[]string{"+I 1 5", "-D 1 2"},
				[]string{"-D 1 5"},
				[]string{"+I 1 3"},
			)
			left.done = make(chan struct{})
			right.wait = left.done
			spec := JoinSpec{Kind: exec.InnerJoin, LeftKeys: []exec.Expr{col(1, "k")}, RightKeys: []exec.Expr{col(1, "k")}, InsertOnly: [2]bool{insertOnly, insertOnly}}
			j, err := NewJoin(ec, left, right, spec, budget)
			if err != nil {
				t.Fatal(err)
			}
			expectCollect(t, j, []string{
				"[1 0]: marker",
				"[1 1]: +I 1 100 1 1 | +I 1 100 1 2 | +I 1 100 1 3 | +I 1 100 1 3 | +I 1 100 1 4", "[1 1]: marker",
				"[1 2]: -D 1 100 1 1", "[1 2]: marker",
				"[1 3]: -D 1 100 1 4", "[1 3]: marker",
				"[1 4]: -D 1 100 1 3 | -D 1 100 1 3", "[1 4]: marker",
				"[1 5]: +I 1 100 1 5 | -D 1 100 1 2", "[1 5]: marker",
				"[1 6]: -D 1 100 1 5", "[1 6]: marker",
				"[1 7]: +I 1 100 1 3", "[1 7]: marker",
			})
		})
	}
}

// A residual is evaluated over batches of only the columns it reads (a
// left and a right one of six), with the right pairs passing whichever
// side's change made them (the left side's snapshots come first here),
// over several batches of the residual; both with boxed rows and with
// rows held encoded (insert-only sides).
func TestJoinResidualNarrowed(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ec.BatchSize = 2
	// Pair columns: kind, left k a x, right k b y; the residual reads a and b.
	res, err := exec.NewCall("less", col(2, "a"), col(5, "b"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		leftFirst bool
		want      []string
	}{
		{true, []string{
			"[1 0]: marker", "[2 0]: marker",
			"[2 1]: +I 1 5 100 1 7 200 | +I 1 5 100 1 10 201", "[2 1]: +I 2 1 102 2 3 203", "[2 1]: marker",
			"[2 2]: -D 1 5 100 1 10 201", "[2 2]: marker",
		}},
		{false, []string{
			"[0 1]: marker", "[0 2]: marker",
			"[1 2]: +I 1 5 100 1 7 200 | +I 2 1 102 2 3 203", "[1 2]: marker",
			"[2 2]: marker",
		}},
	} {
		for _, insertOnly := range []bool{false, true} {
			left := int64Changes(t, mem, []string{"k", "a", "x"}, 0, 2,
				[]string{"+I 1 5 100", "+I 1 9 101", "+I 2 1 102"},
				[]string{"-D 1 9 101"})
			right := int64Changes(t, mem, []string{"k", "b", "y"}, 1, 2,
				[]string{"+I 1 7 200", "+I 1 10 201", "+I 2 0 202", "+I 2 3 203", "+I 3 9 204"},
				[]string{"-D 1 10 201"})
			if c.leftFirst {
				left.done = make(chan struct{})
				right.wait = left.done
			} else {
				right.done = make(chan struct{})
				left.wait = right.done
			}
			spec := JoinSpec{Kind: exec.InnerJoin, LeftKeys: []exec.Expr{col(1, "k")}, RightKeys: []exec.Expr{col(1, "k")}, Residual: res, InsertOnly: [2]bool{insertOnly, insertOnly}}
			j, err := NewJoin(ec, left, right, spec, NewBudget(0))
			if err != nil {
				t.Fatal(err)
			}
			if j.res.whole || !slices.Equal(j.res.cols, []int{1, 4}) {
				t.Fatalf("residual reads pair columns %v (whole %v), want [1 4]", j.res.cols, j.res.whole)
			}
			expectCollect(t, j, c.want)
		}
	}
}

// An integer sum is exact whatever passes through it, and one that ends
// beyond int64 is an overflow, as in a batch sum, not a wrapped value.
func TestAggregateSumOverflow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	sum := func(snapshots ...[]string) *Aggregate {
		in := int64Changes(t, mem, []string{"x"}, 0, 1, snapshots...)
		agg, err := NewAggregate(ec, in, nil, nil, []AggSpec{
			{Func: "sum", Arg: col(1, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "s"},
		}, NewBudget(0))
		if err != nil {
			t.Fatal(err)
		}
		return agg
	}
	expectCollect(t, sum([]string{"+I 9223372036854775807", "+I 9223372036854775807", "-D 9223372036854775807", "+I -1"}), []string{
		"[1]: +I 9223372036854775806", "[1]: marker",
	})
	agg := sum([]string{"+I 9223372036854775807", "+I 1"})
	defer agg.Close()
	if err := agg.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	var err error
	for err == nil {
		_, err = agg.Next(t.Context())
	}
	if !errors.Is(err, vectorized.ErrOverflow) {
		t.Fatalf("got %v, want an overflow", err)
	}
}

// Past its budget an interval join whose watermark frees nothing (bounds
// of a day) moves its state to disk rather than failing, ends, and frees
// what it accounted when closed.
func TestStateBudget(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ec.TempDir = t.TempDir()
	side := func(seed int64) *events { return newEvents(mem, seed, 64, 1000, 10) }
	budget := NewBudget(4096)
	j, err := NewIntervalJoin(ec, side(1), side(2), IntervalSpec{
		LeftKeys: []exec.Expr{col(1, "k")}, RightKeys: []exec.Expr{col(1, "k")},
		LeftTime: exec.NewColumn(3, eventTS, "ts"), RightTime: exec.NewColumn(3, eventTS, "ts"),
		Lower: -24 * time.Hour, Upper: 24 * time.Hour,
	}, budget)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = j.Next(t.Context())
	}
	if !errors.Is(err, io.EOF) || j.store == nil {
		t.Fatalf("got %v (spilled: %v), want the end after spilling", err, j.store != nil)
	}
	j.Close()
	if budget.Used() != 0 {
		t.Fatalf("closed join holds %d bytes", budget.Used())
	}
}

// expectCollect checks that op's output, as collect renders it, is want.
func expectCollect(t *testing.T, op Operator, want []string) {
	t.Helper()
	if got := collect(t, op); !slices.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// When a bounded input ends after changes its last marker does not
// cover, an aggregation, a top-N and a normalization still emit them:
// the same rows as when a marker follows.
func TestMiniBatchFlushesAtEnd(t *testing.T) {
	snaps := [][]string{{"+I 1 10 1", "+I 2 5 2"}, {"+I 1 7 3", "-D 2 5 2", "+I 3 4 4"}}
	ops := map[string]func(ec *exec.Context, in Operator) (Operator, error){
		"aggregate": func(ec *exec.Context, in Operator) (Operator, error) {
			return NewAggregate(ec, in, []exec.Expr{col(1, "p")}, []string{"p"}, []AggSpec{
				{Func: "sum", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "s"},
			}, NewBudget(0))
		},
		"rank": func(ec *exec.Context, in Operator) (Operator, error) {
			return NewRank(ec, in, RankSpec{Order: []exec.SortKey{{Expr: col(2, "x")}}, Lo: 1, Hi: 2, Number: true}, NewBudget(0))
		},
		"normalize": func(ec *exec.Context, in Operator) (Operator, error) {
			return NewNormalize(ec, in, []int{1}, NewBudget(0))
		},
	}
	for name, newOp := range ops {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rows := func(endMarker bool) []string {
				in := int64Changes(t, mem, []string{"p", "x", "y"}, 0, 1, snaps...)
				if !endMarker {
					in.chunks = in.chunks[:len(in.chunks)-1]
				}
				op, err := newOp(exec.NewContext(mem), in)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, l := range collect(t, op) {
					if _, r, _ := strings.Cut(l, ": "); r != "marker" {
						out = append(out, r)
					}
				}
				return out
			}
			want := rows(true)
			if got := rows(false); len(want) < 2 || !slices.Equal(got, want) {
				t.Fatalf("ended without a marker: %q, with one: %q", got, want)
			}
		})
	}
}

// A queue's next batch starts with room for as many rows and string bytes
// as its last one held, and its batches hold what was added.
func TestOutQueueReserves(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ec.BatchSize = 100
	q, err := newOutQueue(ec, withKind([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}))
	if err != nil {
		t.Fatal(err)
	}
	defer q.release()
	long := strings.Repeat("x", 1000)
	for i := range 150 {
		q.add(kindInsert, []any{fmt.Sprint(i, long)})
	}
	sb := q.bld.Field(1).(*array.StringBuilder)
	if q.n != 50 || sb.Cap() < 100 || sb.DataCap() < 100*len(long) {
		t.Fatalf("after a batch of 100 rows: %d rows, room for %d rows and %d bytes", q.n, sb.Cap(), sb.DataCap())
	}
	q.seal()
	for i := 0; i < 150; {
		b := q.pop()
		if b == nil {
			t.Fatalf("%d rows popped of 150", i)
		}
		col := b.Column(1).(*array.String)
		for r := range col.Len() {
			if want := fmt.Sprint(i, long); col.Value(r) != want {
				t.Fatalf("row %d: %.10q", i, col.Value(r))
			}
			i++
		}
	}
}
