package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/vectorized"
)

func init() {
	for name, op := range map[string]vectorized.CmpOp{
		"equal": vectorized.Eq, "not_equal": vectorized.Ne, "less": vectorized.Lt,
		"less_equal": vectorized.Le, "greater": vectorized.Gt, "greater_equal": vectorized.Ge,
	} {
		register(compareResolver(op), name)
	}
	register(logicResolver(false), "and")
	register(logicResolver(true), "or")
	register(resolveNot, "not")
	register(isNullResolver(false), "is_null")
	register(isNullResolver(true), "is_not_null")
	register(distinctResolver(true), "is_distinct_from")
	register(distinctResolver(false), "is_not_distinct_from")
	register(resolveCoalesce, "coalesce")
	register(resolveNullif, "nullif")
	register(extremeResolver(1), "greatest")
	register(extremeResolver(-1), "least")
}

// commonArgs returns the common type of all argument types.
func commonArgs(types []arrow.DataType) (arrow.DataType, error) {
	t, ok := commonTypeOf(types)
	if !ok {
		return nil, fmt.Errorf("no common type for %s", typesString(types))
	}
	if t.ID() == arrow.NULL {
		t = arrow.Null
	}
	return t, nil
}

func compareResolver(op vectorized.CmpOp) resolver {
	return func(types []arrow.DataType, args []Expr) (*impl, error) {
		if err := wantArgs(types, 2, 2); err != nil {
			return nil, err
		}
		t, err := commonArgs(types)
		if err != nil {
			return nil, err
		}
		if vectorized.IsNested(t) {
			return nestedCompare(op, t)
		}
		if !vectorized.Comparable(t) {
			return nil, fmt.Errorf("type %s is not comparable", t)
		}
		if x, c, ok := constOperand(args); ok {
			t = compareIn(x, []*LiteralExpr{c}, t)
		}
		return &impl{ret: boolType, args: []arrow.DataType{t, t}, fn: func(_ context.Context, ec *Context, a []arrow.Array, _ int) (arrow.Array, error) {
			return vectorized.Compare(ec.Mem, op, a[0], a[1])
		}, withConst: func(ec *Context, x arrow.Array, c scalar.Scalar, constLeft bool) (arrow.Array, error) {
			if constLeft {
				return vectorized.CompareScalar(ec.Mem, op.Flip(), x, c)
			}
			return vectorized.CompareScalar(ec.Mem, op, x, c)
		}}, nil
	}
}

// nestedCompare is = and <> on ARRAY, MAP and ROW values; SQL defines no
// order on them.
func nestedCompare(op vectorized.CmpOp, t arrow.DataType) (*impl, error) {
	if op != vectorized.Eq && op != vectorized.Ne {
		return nil, fmt.Errorf("%s values can only be compared with = and <>", t)
	}
	return &impl{ret: boolType, args: []arrow.DataType{t, t}, fn: func(_ context.Context, ec *Context, a []arrow.Array, _ int) (arrow.Array, error) {
		return vectorized.NestedEqual(ec.Mem, a[0], a[1], op == vectorized.Ne)
	}}, nil
}

// constOperand splits the operands of a binary call into the expression
// and the literal, when exactly one of them is a literal.
func constOperand(args []Expr) (x Expr, c *LiteralExpr, ok bool) {
	if len(args) != 2 {
		return nil, nil, false
	}
	for i, a := range args {
		if l, isLit := a.(*LiteralExpr); isLit {
			if _, both := args[1-i].(*LiteralExpr); both {
				return nil, nil, false
			}
			return args[1-i], l, true
		}
	}
	return nil, nil, false
}

// boolArgs checks that every argument is boolean (or an untyped NULL).
func boolArgs(types []arrow.DataType, arity int) error {
	if err := wantArgs(types, arity, arity); err != nil {
		return err
	}
	for _, t := range types {
		if t.ID() != arrow.BOOL && t.ID() != arrow.NULL {
			return fmt.Errorf("needs boolean arguments")
		}
	}
	return nil
}

// logicResolver implements AND (dominant false) and OR (dominant true).
func logicResolver(dominant bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if err := boolArgs(types, 2); err != nil {
			return nil, err
		}
		return &impl{ret: boolType, args: repeatType(boolType, 2), lazy: func(ctx context.Context, ec *Context, args []Expr, b arrow.RecordBatch) (arrow.Array, error) {
			return evalLogic(ctx, ec, dominant, args, b)
		}}, nil
	}
}

func resolveNot(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := boolArgs(types, 1); err != nil {
		return nil, err
	}
	return &impl{ret: boolType, args: []arrow.DataType{boolType}, fn: func(_ context.Context, ec *Context, a []arrow.Array, _ int) (arrow.Array, error) {
		return vectorized.Not(ec.Mem, a[0]), nil
	}}, nil
}

func isNullResolver(negate bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if err := wantArgs(types, 1, 1); err != nil {
			return nil, err
		}
		return &impl{ret: boolType, fn: func(_ context.Context, ec *Context, a []arrow.Array, _ int) (arrow.Array, error) {
			return vectorized.IsNull(ec.Mem, a[0], negate), nil
		}}, nil
	}
}

func distinctResolver(distinct bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if err := wantArgs(types, 2, 2); err != nil {
			return nil, err
		}
		t, err := commonArgs(types)
		if err != nil {
			return nil, err
		}
		if vectorized.IsNested(t) {
			return &impl{ret: boolType, args: []arrow.DataType{t, t}, fn: func(_ context.Context, ec *Context, a []arrow.Array, _ int) (arrow.Array, error) {
				return vectorized.NestedDistinct(ec.Mem, a[0], a[1], distinct)
			}}, nil
		}
		return &impl{ret: boolType, args: []arrow.DataType{t, t}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			c, err := vectorized.NewComparator(a[0], a[1])
			if err != nil {
				return nil, err
			}
			vals := make([]bool, n)
			for i := range vals {
				xn, yn := a[0].IsNull(i), a[1].IsNull(i)
				same := xn && yn || !xn && !yn && c(i, i) == 0
				vals[i] = same != distinct
			}
			return vectorized.BoolsToArray(ec.Mem, vals, nil), nil
		}}, nil
	}
}

func resolveCoalesce(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) == 0 {
		return nil, fmt.Errorf("needs at least one argument")
	}
	t, err := commonArgs(types)
	if err != nil {
		return nil, err
	}
	return &impl{ret: t, args: repeatType(t, len(types)), lazy: func(ctx context.Context, ec *Context, args []Expr, b arrow.RecordBatch) (arrow.Array, error) {
		return evalCoalesce(ctx, ec, t, args, b)
	}}, nil
}

// resolveNullif types NULLIF(a, b) as a, comparing a and b in their
// common type.
func resolveNullif(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	t, err := commonArgs(types)
	if err != nil {
		return nil, err
	}
	ret := types[0]
	if ret.ID() == arrow.NULL {
		ret = t
	}
	return &impl{ret: ret, args: []arrow.DataType{ret, nil}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		x, y, err := castBoth(ec, a[0], a[1], t)
		if err != nil {
			return nil, err
		}
		defer x.Release()
		defer y.Release()
		c, err := vectorized.NewComparator(x, y)
		if err != nil {
			return nil, err
		}
		b := array.NewBuilder(ec.Mem, ret)
		defer b.Release()
		b.Reserve(n)
		for i := 0; i < n; i++ {
			if x.IsValid(i) && y.IsValid(i) && c(i, i) == 0 {
				b.AppendNull()
				continue
			}
			vectorized.AppendValue(b, a[0], i)
		}
		return b.NewArray(), nil
	}}, nil
}

// castBoth returns x and y converted to t (new references either way).
func castBoth(ec *Context, x, y arrow.Array, t arrow.DataType) (arrow.Array, arrow.Array, error) {
	cx, err := castArray(ec, x, t)
	if err != nil {
		return nil, nil, err
	}
	cy, err := castArray(ec, y, t)
	if err != nil {
		cx.Release()
		return nil, nil, err
	}
	return cx, cy, nil
}

// castArray returns a converted to t, or a retained when it has type t.
func castArray(ec *Context, a arrow.Array, t arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(a.DataType(), t) {
		a.Retain()
		return a, nil
	}
	return vectorized.Cast(ec.Mem, a, t)
}

// extremeResolver implements greatest (sign 1) and least (sign -1); the
// result is NULL if any argument is NULL.
func extremeResolver(sign int) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if len(types) == 0 {
			return nil, fmt.Errorf("needs at least one argument")
		}
		t, err := commonArgs(types)
		if err != nil {
			return nil, err
		}
		if !vectorized.Comparable(t) {
			return nil, fmt.Errorf("type %s is not comparable", t)
		}
		// Values are compared in place (CompareAt), not through a
		// comparator per pair of arguments: those cost the square of the
		// argument count, 16 GB for GREATEST of 100,000 constants.
		return &impl{ret: t, args: repeatType(t, len(types)), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			b := array.NewBuilder(ec.Mem, t)
			defer b.Release()
			b.Reserve(n)
			for i := 0; i < n; i++ {
				if vectorized.AnyNull(a, i) {
					b.AppendNull()
					continue
				}
				best := 0
				for x := 1; x < len(a); x++ {
					if vectorized.CompareAt(a[x], i, a[best], i)*sign > 0 {
						best = x
					}
				}
				vectorized.AppendValue(b, a[best], i)
			}
			return b.NewArray(), nil
		}}, nil
	}
}
