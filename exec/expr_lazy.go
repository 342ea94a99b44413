package exec

import (
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// evalCoalesce evaluates COALESCE as the CASE the standard defines it as:
// argument k only for the rows every earlier argument left NULL, so
// COALESCE(x, 1 / 0) fails only where x is NULL.
func evalCoalesce(ctx context.Context, ec *Context, typ arrow.DataType, args []Expr, b arrow.RecordBatch) (arrow.Array, error) {
	n := int(b.NumRows())
	pick := make([]int32, n) // as in CaseExpr.Eval: the part that decided row i, -1 = NULL
	pos := make([]int32, n)
	rows := make([]int64, n) // rows still NULL
	for i := range rows {
		pick[i], rows[i] = -1, int64(i)
	}
	var parts []arrow.Array
	defer func() { releaseArrays(parts) }()
	for _, a := range args {
		if len(rows) == 0 {
			break
		}
		if isNullConst(a) {
			continue
		}
		v, err := evalRows(ctx, ec, a, b, rows)
		if err != nil {
			return nil, err
		}
		parts = append(parts, v.arr)
		left := rows[:0]
		for j, r := range rows {
			if p := v.at(j, r); v.arr.IsValid(p) {
				pick[r], pos[r] = int32(len(parts)-1), int32(p)
			} else {
				left = append(left, r)
			}
		}
		rows = left
	}
	switch {
	case len(parts) == 0:
		return array.MakeArrayOfNull(ec.Mem, typ, n), nil
	case len(parts) == 1 && parts[0].Len() == n && !slices.Contains(pick, -1):
		parts[0].Retain()
		return parts[0], nil
	}
	return assembleCase(ec.Mem, typ, parts, pick, pos), nil
}

// evalLogic evaluates AND (dominant false) or OR (dominant true) left to
// right, as Flink does: the right operand only for the rows the left one
// does not decide, so z <> 0 AND k / z > 1 never divides by zero.
func evalLogic(ctx context.Context, ec *Context, dominant bool, args []Expr, b arrow.RecordBatch) (arrow.Array, error) {
	l, err := evalOne(ctx, ec, args[0], b)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	lb := l.(*array.Boolean)
	n := lb.Len()
	open := n - vectorized.CountDecided(lb, dominant) // rows the left operand leaves open
	if open == 0 {
		l.Retain()
		return l, nil
	}
	// When most rows are open, or the right operand is cheaper than
	// gathering them, it runs over the whole batch, tentatively, as
	// evalRows does: where it succeeds, three-valued AND/OR of the two
	// bitmaps is the lazy result, 64 rows at a time. An error goes on to
	// evalRows, which retries on the open rows alone, so a row the left
	// operand decided cannot fail the query.
	if 2*open >= n || batchCheap(args[1]) {
		r, err := evalOne(ctx, ec, args[1], b)
		if err == nil {
			defer r.Release()
			return kleene(ec, dominant, l, r), nil
		}
		if open == n || ctx.Err() != nil {
			return nil, err
		}
	}
	rows := make([]int64, 0, open)
	for i := 0; i < n; i++ {
		if lb.IsNull(i) || lb.Value(i) != dominant {
			rows = append(rows, int64(i))
		}
	}
	v, err := evalRows(ctx, ec, args[1], b, rows)
	if err != nil {
		return nil, err
	}
	defer v.arr.Release()
	if v.full {
		return kleene(ec, dominant, l, v.arr), nil
	}
	rb := v.arr.(*array.Boolean)
	vals := make([]bool, n)
	valid := make([]bool, n)
	for i := range vals {
		vals[i], valid[i] = dominant, true
	}
	for j, r := range rows {
		switch p := v.at(j, r); {
		case rb.IsValid(p) && rb.Value(p) == dominant:
		case lb.IsNull(int(r)) || rb.IsNull(p):
			valid[r] = false
		default:
			vals[r] = !dominant
		}
	}
	return vectorized.BoolsToArray(ec.Mem, vals, valid), nil
}

// kleene is three-valued AND (dominant false) or OR (dominant true) of two
// whole-batch operands.
func kleene(ec *Context, dominant bool, l, r arrow.Array) arrow.Array {
	if dominant {
		return vectorized.Or(ec.Mem, l, r)
	}
	return vectorized.And(ec.Mem, l, r)
}

// batchCheapNodes bounds the expressions batchCheap admits.
const batchCheapNodes = 8

// batchCheapCalls are the functions batchCheap admits: a kernel pass over
// fixed-width values that rarely fails (add and multiply only on
// overflow, then retried on the open rows; division is left out, as it
// fails on every zero divisor the open rows may have excluded).
var batchCheapCalls = map[string]bool{
	"equal": true, "not_equal": true, "less": true, "less_equal": true, "greater": true, "greater_equal": true,
	"add": true, "subtract": true, "multiply": true, "and": true, "or": true, "not": true,
	"is_null": true, "is_not_null": true,
}

// batchCheap reports whether e costs less over a whole batch than over
// some of its rows: a comparison, arithmetic or cast of fixed-width
// columns and constants, of at most batchCheapNodes nodes. Its kernels
// cost less per row than gathering the rows' columns and scattering the
// result back (q62's (d > 90) AND (d <= 120) left a quarter of the rows
// open).
func batchCheap(e Expr) bool {
	nodes := 0
	var walk func(e Expr) bool
	walk = func(e Expr) bool {
		if nodes++; nodes > batchCheapNodes {
			return false
		}
		switch x := e.(type) {
		case *LiteralExpr:
			return true
		case *ColumnExpr:
			_, fixed := x.Type.(arrow.FixedWidthDataType)
			return fixed
		case *CastExpr:
			_, fixed := x.To.(arrow.FixedWidthDataType)
			return fixed && walk(x.Input)
		case *CallExpr:
			if !batchCheapCalls[x.Name] {
				return false
			}
			for _, a := range x.Args {
				if !walk(a) {
					return false
				}
			}
			return true
		}
		return false
	}
	return walk(e)
}
