package exec_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

func TestSortAggregateMatchesHash(t *testing.T) {
	in := exectest.NewTable(t, "g:string, h:int32, v:int64, f:float64",
		"a | 1 | 1 | 1.5", "a | 1 | 2 | 2.5", "a | 2 | NULL | NULL", "b | 1 | 4 | 0.5",
		"c | NULL | 5 | 1", "c | NULL | 6 | 2", "NULL | 3 | 7 | 3")
	s := in.Schema
	aggs := []exec.AggregateSpec{
		{Func: "count_star"},
		{Func: "sum", Args: []exec.Expr{col(s, "v")}},
		{Func: "max", Args: []exec.Expr{col(s, "f")}},
		{Func: "count", Args: []exec.Expr{col(s, "v")}, Distinct: true},
		{Func: "sum", Args: []exec.Expr{col(s, "v")}, Filter: call(t, "greater", col(s, "v"), lit(int64(1)))},
		{Func: "stddev_samp", Args: []exec.Expr{col(s, "f")}},
	}
	groups := []exec.Expr{col(s, "g"), col(s, "h")}
	want := []string{
		"a | 1 | 2 | 3 | 2.5 | 2 | 2 | 0.7071067811865476",
		"a | 2 | 1 | NULL | NULL | 0 | NULL | NULL",
		"b | 1 | 1 | 4 | 0.5 | 1 | 4 | NULL",
		"c | NULL | 2 | 11 | 2 | 2 | 11 | 0.7071067811865476",
		"NULL | 3 | 1 | 7 | 3 | 1 | 7 | NULL",
	}
	exectest.Run(t, []exectest.Table{in}, want, exectest.Ordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewSortAggregate(ec, ops[0], groups, nil, aggs, nil)
	})
	exectest.Run(t, []exectest.Table{in}, want, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewHashAggregate(ec, ops[0], groups, nil, aggs, nil)
	})
}

func TestGroupingSets(t *testing.T) {
	in := exectest.NewTable(t, "a:string, b:int64, v:int64", "x | 1 | 10", "x | 2 | 20", "y | 1 | 30")
	s := in.Schema
	exectest.Run(t, []exectest.Table{in}, []string{
		"x | 1 | 10 | 0", "x | 2 | 20 | 0", "y | 1 | 30 | 0",
		"x | NULL | 30 | 2", "y | NULL | 30 | 2",
		"NULL | NULL | 60 | 3",
	}, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "a"), col(s, "b")}, nil,
			[]exec.AggregateSpec{{Func: "sum", Args: []exec.Expr{col(s, "v")}}}, [][]int{{0, 1}, {0}, {}})
	})
}

func TestMergeAndNestedLoopJoin(t *testing.T) {
	l := exectest.NewTable(t, "k:int64, lv:string", "NULL | n", "1 | a", "2 | b", "2 | b2", "4 | d")
	r := exectest.NewTable(t, "k:int64, rv:string", "1 | w", "2 | x", "2 | y", "3 | z", "NULL | rn")
	lk := []exec.Expr{col(l.Schema, "k")}
	rk := []exec.Expr{col(r.Schema, "k")}
	for _, typ := range []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.RightJoin, exec.FullJoin, exec.SemiJoin, exec.AntiJoin} {
		t.Run(typ.String(), func(t *testing.T) {
			// The hash join is the reference for the merge and nested-loop joins.
			want := reference(t, []exectest.Table{l, r}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				return exec.NewHashJoin(ec, ops[0], ops[1], typ, lk, rk, nil)
			})
			exectest.Run(t, []exectest.Table{l, r}, want, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				return exec.NewMergeJoin(ec, ops[0], ops[1], typ, lk, rk, nil)
			})
			exectest.Run(t, []exectest.Table{l, r}, want, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				cond := call(t, "equal", exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "l.k"), exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "r.k"))
				return exec.NewNestedLoopJoin(ec, ops[0], ops[1], typ, cond)
			})
		})
	}
	t.Run("unsorted", func(t *testing.T) {
		bad := exectest.NewTable(t, "k:int64, rv:string", "3 | z", "1 | w")
		exectest.Run(t, []exectest.Table{l, bad}, []string{"error: not ordered"}, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewMergeJoin(ec, ops[0], ops[1], exec.InnerJoin, lk, rk, nil)
		})
	})
	t.Run("non-equi", func(t *testing.T) {
		exectest.Run(t, []exectest.Table{l, r}, []string{"1 | a | 2 | x", "1 | a | 2 | y", "1 | a | 3 | z", "2 | b | 3 | z", "2 | b2 | 3 | z"}, exectest.Unordered,
			func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				cond := call(t, "less", exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "l.k"), exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "r.k"))
				return exec.NewNestedLoopJoin(ec, ops[0], ops[1], exec.InnerJoin, cond)
			})
	})
}

// reference runs ctor once at the default batch size.
func reference(t *testing.T, inputs []exectest.Table, ctor exectest.Ctor) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ops := make([]exec.Operator, len(inputs))
	for i, in := range inputs {
		b, err := in.Batch(mem, 0, len(in.Rows), 0)
		if err != nil {
			t.Fatal(err)
		}
		ops[i] = exectest.Source(ec, in.Schema, []arrow.RecordBatch{b})
	}
	op, err := ctor(ec, ops)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := exec.Collect(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	rows := exectest.Rows(bs)
	for _, b := range bs {
		b.Release()
	}
	return rows
}

func TestSetOpsDistinct(t *testing.T) {
	l := exectest.NewTable(t, "a:int64, b:string", "1 | x", "1 | x", "1 | x", "2 | NULL", "2 | NULL", "3 | z")
	r := exectest.NewTable(t, "a:int64, b:string", "1 | x", "2 | NULL", "2 | NULL", "4 | w")
	cases := []struct {
		op   exec.SetOpKind
		all  bool
		want []string
	}{
		{exec.Intersect, false, []string{"1 | x", "2 | NULL"}},
		{exec.Intersect, true, []string{"1 | x", "2 | NULL", "2 | NULL"}},
		{exec.Except, false, []string{"3 | z"}},
		{exec.Except, true, []string{"1 | x", "1 | x", "3 | z"}},
	}
	for _, c := range cases {
		exectest.Run(t, []exectest.Table{l, r}, c.want, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSetOp(ec, ops[0], ops[1], c.op, c.all)
		})
	}
	exectest.Run(t, []exectest.Table{l}, []string{"1 | x", "2 | NULL", "3 | z"}, exectest.Ordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewDistinct(ec, ops[0]), nil
	})
}

func TestWindow(t *testing.T) {
	in := exectest.NewTable(t, "p:string, o:int64, v:int64",
		"a | 1 | 10", "a | 2 | 20", "a | 2 | 30", "a | 4 | NULL", "b | 1 | 5", "b | 3 | 7")
	s := in.Schema
	funcs := []exec.WindowFunc{
		{Func: "row_number"}, {Func: "rank"}, {Func: "dense_rank"},
		{Func: "sum", Args: []exec.Expr{col(s, "v")}}, // default frame: running over peers
		{Func: "count_star", Frame: &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.Preceding, Offset: 1}, End: exec.FrameBound{Kind: exec.Following, Offset: 1}}},
		{Func: "max", Args: []exec.Expr{col(s, "v")}, Frame: &exec.Frame{Rows: true, Start: exec.FrameBound{Kind: exec.CurrentRow}, End: exec.FrameBound{Kind: exec.UnboundedFollowing}}},
		{Func: "lag", Args: []exec.Expr{col(s, "v"), lit(int64(1)), lit(int64(-1))}},
		{Func: "lead", Args: []exec.Expr{col(s, "o")}},
		{Func: "last_value", Args: []exec.Expr{col(s, "v")}},
		{Func: "ntile", Args: []exec.Expr{lit(int64(3))}},
	}
	exectest.Run(t, []exectest.Table{in}, []string{
		"a | 1 | 10 | 1 | 1 | 1 | 10 | 2 | 30 | -1 | 2 | 10 | 1",
		"a | 2 | 20 | 2 | 2 | 2 | 60 | 3 | 30 | 10 | 2 | 30 | 1",
		"a | 2 | 30 | 3 | 2 | 2 | 60 | 3 | 30 | 20 | 4 | 30 | 2",
		"a | 4 | NULL | 4 | 4 | 3 | 60 | 2 | NULL | 30 | NULL | 30 | 3", // last_value skips NULLs (Flink)
		"b | 1 | 5 | 1 | 1 | 1 | 5 | 2 | 7 | -1 | 3 | 5 | 1",
		"b | 3 | 7 | 2 | 2 | 2 | 12 | 2 | 7 | 5 | NULL | 7 | 2",
	}, exectest.Ordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "p")}, []exec.SortKey{{Expr: col(s, "o")}}, funcs)
	})
	// Sorting by p alone: ties within a partition may come in any order.
	exectest.Run(t, []exectest.Table{in}, []string{"a | 1 | 10", "a | 2 | 20", "a | 2 | 30", "a | 4 | NULL", "b | 1 | 5", "b | 3 | 7"},
		exectest.OrderedOn(0), func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewSort(ec, ops[0], []exec.SortKey{{Expr: col(s, "p")}}), nil
		})
}

func TestRecordReaderAndInstrument(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	ec.BatchSize = 2
	in := exectest.NewTable(t, "a:int64", "1", "2", "3", "4", "5")
	b, err := in.Batch(mem, 0, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	src := exectest.Source(ec, in.Schema, []arrow.RecordBatch{b})
	inst := exec.Instrument(exec.NewSort(ec, src, []exec.SortKey{{Expr: col(in.Schema, "a"), Descending: true}}), "sort")
	rr := exec.NewRecordReader(context.Background(), inst)
	var got []string
	for rr.Next() {
		got = append(got, exectest.BatchRows(rr.RecordBatch())...)
	}
	if rr.Err() != nil {
		t.Fatal(rr.Err())
	}
	rr.Release()
	if !exectest.Ordered(got, []string{"5", "4", "3", "2", "1"}) {
		t.Fatalf("got %q", got)
	}
	st := inst.(*exec.Instrumented).Stats()
	if st.Rows != 5 || st.Batches != 3 {
		t.Fatalf("stats %+v", st)
	}

	// Errors surface through Err, and the operator is closed.
	b2, err := in.Batch(mem, 0, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad := exec.NewProject(ec, exectest.Source(ec, in.Schema, []arrow.RecordBatch{b2}), []exec.Expr{exec.NewColumn(3, arrow.PrimitiveTypes.Int64, "x")}, nil)
	rr = exec.NewRecordReader(context.Background(), bad)
	if rr.Next() || !errors.Is(rr.Err(), exec.ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", rr.Err())
	}
	rr.Release()
}

func TestWindowRangeOffsets(t *testing.T) {
	in := exectest.NewTable(t, "p:string, o:int64, v:int64",
		"a | 1 | 10", "a | 2 | 20", "a | 2 | 30", "a | 4 | NULL", "b | 1 | 5", "b | 3 | 7", "b | NULL | 1")
	s := in.Schema
	around := &exec.Frame{Start: exec.FrameBound{Kind: exec.Preceding, Offset: 1}, End: exec.FrameBound{Kind: exec.Following, Offset: 1}}
	back2 := &exec.Frame{Start: exec.FrameBound{Kind: exec.Preceding, Offset: 2}, End: exec.FrameBound{Kind: exec.CurrentRow}}
	exectest.Run(t, []exectest.Table{in}, []string{
		"a | 1 | 10 | 60", "a | 2 | 20 | 60", "a | 2 | 30 | 60", "a | 4 | NULL | NULL",
		"b | 1 | 5 | 5", "b | 3 | 7 | 7", "b | NULL | 1 | 1",
	}, exectest.Ordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "p")}, []exec.SortKey{{Expr: col(s, "o")}},
			[]exec.WindowFunc{{Func: "sum", Args: []exec.Expr{col(s, "v")}, Frame: around}})
	})
	exectest.Run(t, []exectest.Table{in}, []string{
		"a | 4 | NULL | 1", "a | 2 | 20 | 3", "a | 2 | 30 | 3", "a | 1 | 10 | 3",
		"b | NULL | 1 | 1", "b | 3 | 7 | 1", "b | 1 | 5 | 2",
	}, exectest.Ordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewWindow(ec, ops[0], []exec.Expr{col(s, "p")}, []exec.SortKey{{Expr: col(s, "o"), Descending: true, NullsFirst: true}},
			[]exec.WindowFunc{{Func: "count_star", Frame: back2}})
	})
	if _, err := exec.NewWindow(exec.NewContext(nil), exectest.Source(nil, s, nil), nil, []exec.SortKey{{Expr: col(s, "p")}},
		[]exec.WindowFunc{{Func: "count_star", Frame: back2}}); !errors.Is(err, exec.ErrNotImplemented) {
		t.Fatalf("RANGE offset over a string key: %v", err)
	}
}

// TestGroupingSetsDerived checks the grouping sets computed from a finer
// set's groups (COUNT, SUM, AVG, MIN, MAX fold) against each set
// aggregated alone from the rows, with its absent columns NULL: a ROLLUP,
// a set repeated in another column order, an empty set twice, and a set
// with no finer one. With a DISTINCT aggregate in the list every set reads
// the rows; the answer is the same.
func TestGroupingSetsDerived(t *testing.T) {
	rng := rand.New(rand.NewPCG(exectest.Seed(t), 7))
	in := exectest.NewTable(t, "a:string, b:int64, c:int32, v:int64, f:float64, d:decimal(7,2), w:string")
	cell := func(p int, s string) string {
		if rng.IntN(p) == 0 {
			return "NULL"
		}
		return s
	}
	for i := 0; i < 3000; i++ {
		in.Rows = append(in.Rows, []string{cell(20, fmt.Sprintf("a%d", rng.IntN(5))), cell(20, fmt.Sprint(rng.IntN(7))),
			cell(20, fmt.Sprint(rng.IntN(30))), cell(8, fmt.Sprint(rng.IntN(1000)-300)), cell(8, fmt.Sprint(rng.IntN(64))+".25"),
			cell(8, fmt.Sprintf("%d.%02d", rng.IntN(2000)-500, rng.IntN(100))), cell(8, fmt.Sprintf("w%d", rng.IntN(500)))})
	}
	s := in.Schema
	groups := []exec.Expr{col(s, "a"), col(s, "b"), col(s, "c")}
	folding := []exec.AggregateSpec{{Func: "count_star"}, {Func: "count", Args: []exec.Expr{col(s, "v")}},
		{Func: "sum", Args: []exec.Expr{col(s, "v")}}, {Func: "sum", Args: []exec.Expr{col(s, "f")}},
		{Func: "sum", Args: []exec.Expr{col(s, "d")}}, {Func: "min", Args: []exec.Expr{col(s, "v")}},
		{Func: "max", Args: []exec.Expr{col(s, "d")}}, {Func: "min", Args: []exec.Expr{col(s, "w")}},
		{Func: "max", Args: []exec.Expr{col(s, "w")}}, {Func: "max", Args: []exec.Expr{col(s, "f")}},
		{Func: "sum", Args: []exec.Expr{col(s, "v")}, Filter: call(t, "greater", col(s, "v"), lit(int64(0)))},
		{Func: "avg", Args: []exec.Expr{col(s, "v")}}, {Func: "avg", Args: []exec.Expr{col(s, "f")}},
		{Func: "avg", Args: []exec.Expr{col(s, "d")}}}
	sets := [][]int{{0, 1, 2}, {0, 1}, {0}, {}, {2, 1}, {1, 0}, {2}, {}, {1}}
	for name, aggs := range map[string][]exec.AggregateSpec{
		"folding":       folding,
		"with-distinct": append(slices.Clone(folding), exec.AggregateSpec{Func: "count", Args: []exec.Expr{col(s, "w")}, Distinct: true}),
	} {
		t.Run(name, func(t *testing.T) {
			var want []string
			for _, set := range sets {
				keep := make([]bool, len(groups))
				for _, g := range set {
					keep[g] = true
				}
				var gid int64
				rows := reference(t, []exectest.Table{in}, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
					var gs []exec.Expr
					for i, g := range groups {
						if keep[i] {
							gs = append(gs, g)
						} else {
							gs = append(gs, exec.NewLiteral(scalar.MakeNullScalar(g.DataType())))
							gid |= 1 << i
						}
					}
					return exec.NewHashAggregate(ec, ops[0], gs, nil, aggs, nil)
				})
				for _, r := range rows {
					want = append(want, fmt.Sprintf("%s | %d", r, gid))
				}
			}
			exectest.Run(t, []exectest.Table{in}, want, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				return exec.NewHashAggregate(ec, ops[0], groups, nil, aggs, sets)
			})
		})
	}
}

// TestAggregateNullTypedArgument: an argument of the NULL type has no
// validity bitmap, and every row of it is NULL: COUNT counts none, the
// others see no value.
func TestAggregateNullTypedArgument(t *testing.T) {
	in := exectest.NewTable(t, "g:string, v:int64", "a | 1", "a | 2", "b | NULL")
	s := in.Schema
	null := exec.NewLiteral(scalar.MakeNullScalar(arrow.Null))
	aggs := []exec.AggregateSpec{{Func: "count", Args: []exec.Expr{null}}, {Func: "count_star"}, {Func: "sum", Args: []exec.Expr{null}},
		{Func: "min", Args: []exec.Expr{null}}, {Func: "count", Args: []exec.Expr{col(s, "v")}}}
	exectest.Run(t, []exectest.Table{in}, []string{"a | 0 | 2 | NULL | (null) | 2", "b | 0 | 1 | NULL | (null) | 0"}, exectest.Unordered,
		func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewHashAggregate(ec, ops[0], []exec.Expr{col(s, "g")}, nil, aggs, nil)
		})
}

// A partial distinct gives the set of its input's rows, each at most as
// often as in the input: exactly the set while deduplicating pays, and
// every row (after the first partialProbeRows) once it does not or its set
// passes the budget.
func TestPartialDistinct(t *testing.T) {
	l := exectest.NewTable(t, "a:int64, b:string", "1 | x", "1 | x", "1 | x", "2 | NULL", "2 | NULL", "3 | z", "NULL | NULL", "NULL | NULL")
	exectest.Run(t, []exectest.Table{l}, []string{"1 | x", "2 | NULL", "3 | z", "NULL | NULL"}, exectest.Unordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		return exec.NewPartialDistinct(ec, ops[0]), nil
	})

	// genSource's rows (i*7919) % distinct: a permutation of the
	// distinct values, repeated.
	cases := []struct {
		name     string
		rows     int
		distinct int
		budget   int64
		// Output rows: exactly the distinct keys, or more (passing through).
		exact bool
	}{
		{name: "reducing", rows: 200_000, distinct: 50, exact: true},
		// Unique rows, then each again: past partialProbeRows it kept every
		// row, so the repeats pass through.
		{name: "not-reducing", rows: 200_000, distinct: 100_000},
		{name: "over-budget", rows: 200_000, distinct: 500, budget: 1 << 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ec, mem, checked := spillContext(c.budget, t.TempDir())
			defer checked.AssertSize(t, 0)
			schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
			src := exec.NewSource(ec, schema, func(context.Context) (exec.BatchSource, error) {
				return &genSource{mem: mem, schema: schema, n: c.rows, distinct: c.distinct}, nil
			})
			got := map[int64]int{}
			n := 0
			drainOp(t, exec.NewPartialDistinct(ec, src), func(b arrow.RecordBatch) {
				for _, v := range b.Column(0).(*array.Int64).Int64Values() {
					got[v]++
					n++
				}
			})
			if len(got) != c.distinct {
				t.Fatalf("%d distinct keys, want %d", len(got), c.distinct)
			}
			for k, g := range got {
				if want := c.rows / c.distinct; g > want {
					t.Fatalf("key %d %d times, the input has it %d times", k, g, want)
				}
			}
			if c.exact && n != c.distinct {
				t.Fatalf("%d rows, want the %d distinct ones: it stopped deduplicating", n, c.distinct)
			}
			if !c.exact && n == c.distinct {
				t.Fatalf("%d rows, all distinct: it never passed rows through", n)
			}
			noSpillFilesLeft(t, ec)
		})
	}
}
