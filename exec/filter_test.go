package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// TestFilterConjunctsRandom runs random chains of ANDs and ORs, nested,
// over comparisons of selectivities from none to all (and NOTs), through
// Filter under the harness's batch sizes and slicings, against the
// predicate evaluated whole over the table.
func TestFilterConjunctsRandom(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	var rows []string
	for range 60 {
		cell := func(v string) string {
			if rng.IntN(8) == 0 {
				return "NULL"
			}
			return v
		}
		rows = append(rows, strings.Join([]string{
			cell(fmt.Sprint(rng.IntN(100))),
			cell(fmt.Sprint(rng.IntN(10))),
			cell(fmt.Sprintf("%d.%02d", rng.IntN(50), rng.IntN(100))),
			cell([]string{"a", "b", "c", "d"}[rng.IntN(4)]),
			fmt.Sprint(rng.IntN(20)),
		}, " | "))
	}
	in := exectest.NewTable(t, "a:int64, b:int32, c:decimal(7,2), s:string, other:int64", rows...)
	s := in.Schema
	atom := func() exec.Expr {
		ops := []string{"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
		op := ops[rng.IntN(len(ops))]
		switch rng.IntN(4) {
		case 0:
			return call(t, op, col(s, "a"), lit(int64(rng.IntN(110)-5)))
		case 1:
			return call(t, op, lit(int32(rng.IntN(12)-1)), col(s, "b"))
		case 2:
			return call(t, op, col(s, "c"), lit(int32(rng.IntN(52))))
		}
		return call(t, op, col(s, "s"), lit([]string{"a", "b", "c", "d"}[rng.IntN(4)]))
	}
	term := func() exec.Expr {
		switch rng.IntN(5) {
		case 0:
			return call(t, "or", atom(), atom())
		case 1:
			return call(t, "not", atom())
		}
		return atom()
	}
	// chainOf joins 2-5 operands with and or or; operands nest chains of
	// the other connective.
	var chainOf func(depth int) exec.Expr
	chainOf = func(depth int) exec.Expr {
		fn := []string{"and", "or"}[rng.IntN(2)]
		operand := func() exec.Expr {
			if depth < 2 && rng.IntN(3) == 0 {
				return chainOf(depth + 1)
			}
			return term()
		}
		pred := operand()
		for range 1 + rng.IntN(4) {
			pred = call(t, fn, pred, operand())
		}
		return pred
	}
	for i := range 40 {
		pred := chainOf(0)
		want := filterRows(t, in, pred)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			exectest.Run(t, []exectest.Table{in}, want, exectest.Ordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
				return exec.NewFilter(ec, ops[0], pred), nil
			})
		})
	}
}

// filterRows is the definition: the rows of the whole table where pred,
// evaluated at once, is true.
func filterRows(t *testing.T, in exectest.Table, pred exec.Expr) []string {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b, err := in.Batch(mem, 0, len(in.Rows), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	p, err := pred.Eval(context.Background(), exec.NewContext(mem), b)
	if err != nil {
		t.Fatalf("%s: %v", pred, err)
	}
	defer p.Release()
	mask, cnt := vectorized.TrueMask(p)
	out, err := vectorized.FilterBatch(context.Background(), mem, b, mask, cnt)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	return exectest.BatchRows(out)
}

// TestFilterConjunctErrors: a conjunct fails only on rows the conjuncts
// before it keep, whether or not the batch was narrowed.
func TestFilterConjunctErrors(t *testing.T) {
	// z is 0 exactly where keep is not true. keep holds for most rows, so
	// most batches are not narrowed and the division first sees the zeros.
	in := exectest.NewTable(t, "keep:bool, z:int64, v:int64",
		"true | 1 | 10", "true | 2 | 40", "false | 0 | 30", "true | 1 | 20",
		"true | 5 | 60", "NULL | 0 | 50", "true | 9 | 90", "false | 0 | 70")
	s := in.Schema
	div := func(z exec.Expr) exec.Expr {
		return call(t, "greater", call(t, "divide", col(s, "v"), z), lit(int64(10)))
	}
	exectest.Run(t, []exectest.Table{in}, []string{"true | 2 | 40", "true | 1 | 20", "true | 5 | 60"}, exectest.Ordered,
		func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewFilter(ec, ops[0], call(t, "and", col(s, "keep"), div(col(s, "z")))), nil
		})
	// Rows every conjunct before keeps still fail.
	exectest.Run(t, []exectest.Table{in}, []string{"error: division by zero"}, exectest.Ordered,
		func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			zero := call(t, "subtract", col(s, "z"), col(s, "z"))
			return exec.NewFilter(ec, ops[0], call(t, "and", col(s, "keep"), div(zero))), nil
		})
	// An OR's later operands see only the rows no earlier one is true for
	// (the first is true where z is 0).
	exectest.Run(t, []exectest.Table{in}, []string{"true | 2 | 40", "false | 0 | 30", "true | 1 | 20", "true | 5 | 60", "NULL | 0 | 50", "false | 0 | 70"}, exectest.Ordered,
		func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			zeroRow := call(t, "not", call(t, "is_not_distinct_from", col(s, "keep"), lit(true)))
			return exec.NewFilter(ec, ops[0], call(t, "or", zeroRow, div(col(s, "z")))), nil
		})
	// The first conjunct sees every row.
	exectest.Run(t, []exectest.Table{in}, []string{"error: division by zero"}, exectest.Ordered,
		func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewFilter(ec, ops[0], call(t, "and", div(col(s, "z")), col(s, "keep"))), nil
		})
}

// TestFilterNotBoolean: a predicate that is not boolean is an error naming it.
func TestFilterNotBoolean(t *testing.T) {
	in := people(t)
	exectest.Run(t, []exectest.Table{in}, []string{"error: has type int64, not boolean"}, exectest.Ordered,
		func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
			return exec.NewFilter(ec, ops[0], col(in.Schema, "id")), nil
		})
}
