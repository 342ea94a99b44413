package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/vectorized"
)

// kernel computes a function over evaluated arguments of n rows.
type kernel func(ctx context.Context, ec *Context, args []arrow.Array, n int) (arrow.Array, error)

// impl is a resolved function: result type, the types the arguments are cast
// to (nil entry = as is), and the kernel.
type impl struct {
	ret  arrow.DataType
	args []arrow.DataType
	fn   kernel
	// lazy, if set, replaces fn for functions that must not evaluate every
	// argument on every row (COALESCE); it gets the argument expressions.
	lazy func(ctx context.Context, ec *Context, args []Expr, b arrow.RecordBatch) (arrow.Array, error)
	// withConst, if set, computes a binary function whose argument
	// constLeft ? 0 : 1 is the constant c, without expanding c into an array.
	withConst func(ec *Context, x arrow.Array, c scalar.Scalar, constLeft bool) (arrow.Array, error)
}

// resolver picks an implementation for argument types. args holds the
// argument expressions when known (NewCall) and is nil for ResolveFunction,
// so resolvers must not require literals to derive the result type (but
// "field", whose calls the binder types itself: func_nested.go).
type resolver func(types []arrow.DataType, args []Expr) (*impl, error)

var registry = map[string]resolver{}

func register(r resolver, names ...string) {
	for _, n := range names {
		registry[n] = r
	}
}

func typesString(ts []arrow.DataType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}

func resolveImpl(name string, types []arrow.DataType, args []Expr) (*impl, error) {
	r, ok := registry[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("%w: unknown function %s", ErrInvalid, name)
	}
	im, err := r(types, args)
	if err == nil && vectorized.MapNesting(im.ret) > vectorized.MaxMapNesting {
		err = fmt.Errorf("its result would nest MAP types %d deep, over the limit of %d", vectorized.MapNesting(im.ret), vectorized.MaxMapNesting)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s(%s): %v", ErrInvalid, strings.ToLower(name), typesString(types), err)
	}
	return im, nil
}

// ResolveFunction returns the result type of name applied to argTypes, or
// an error naming the function and the types.
func ResolveFunction(name string, argTypes []arrow.DataType) (arrow.DataType, error) {
	im, err := resolveImpl(name, argTypes, nil)
	if err != nil {
		return nil, err
	}
	return im.ret, nil
}

// CallExpr is a scalar function call.
type CallExpr struct {
	Name string
	Args []Expr
	impl *impl
	// konst is the literal argument impl.withConst takes, at Args[0] when
	// konstLeft, else at Args[1]; nil when the call evaluates every argument.
	konst     *LiteralExpr
	konstLeft bool
	where     string // see At
}

// NewCall resolves the function name for the argument types and returns the
// call, with internal widening casts inserted where needed.
func NewCall(name string, args ...Expr) (Expr, error) {
	types := make([]arrow.DataType, len(args))
	for i, a := range args {
		types[i] = a.DataType()
	}
	im, err := resolveImpl(name, types, args)
	if err != nil {
		return nil, err
	}
	cargs := make([]Expr, len(args))
	for i, a := range args {
		cargs[i] = a
		if i < len(im.args) && im.args[i] != nil && !arrow.TypeEqual(im.args[i], a.DataType()) {
			if cargs[i], err = NewCast(a, im.args[i]); err != nil {
				return nil, fmt.Errorf("%s: argument %d: %w", name, i+1, err)
			}
		}
	}
	c := &CallExpr{Name: strings.ToLower(name), Args: cargs, impl: im}
	if im.withConst != nil {
		if x, k, ok := constOperand(cargs); ok && arrow.TypeEqual(x.DataType(), k.DataType()) {
			c.konst, c.konstLeft = k, k == cargs[0]
		}
	}
	return c, nil
}

// DataType implements Expr.
func (c *CallExpr) DataType() arrow.DataType { return c.impl.ret }

// Eval implements Expr.
func (c *CallExpr) Eval(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	if c.konst != nil {
		return c.evalWithConst(ctx, ec, b)
	}
	if c.impl.lazy != nil {
		return c.impl.lazy(ctx, ec, c.Args, b)
	}
	// The arguments stay counted while the kernel computes from them.
	w := ec.Working()
	defer w.Release()
	args, err := w.evalAll(ctx, c.Args, b, nil)
	if err != nil {
		return nil, err
	}
	defer releaseArrays(args)
	out, err := c.impl.fn(ctx, ec, args, int(b.NumRows()))
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", c.where, c.Name, err)
	}
	return out, nil
}

func (c *CallExpr) evalWithConst(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	xe := c.Args[0]
	if c.konstLeft {
		xe = c.Args[1]
	}
	x, err := evalOne(ctx, ec, xe, b)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	out, err := c.impl.withConst(ec, x, c.konst.Value, c.konstLeft)
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", c.where, c.Name, err)
	}
	return out, nil
}

func (c *CallExpr) String() string {
	return c.Name + "(" + exprsString(c.Args) + ")"
}

func wantArgs(types []arrow.DataType, lo, hi int) error {
	if len(types) < lo || len(types) > hi {
		if lo == hi {
			return fmt.Errorf("takes %d arguments, got %d", lo, len(types))
		}
		return fmt.Errorf("takes %d to %d arguments, got %d", lo, hi, len(types))
	}
	return nil
}

func repeatType(t arrow.DataType, n int) []arrow.DataType {
	out := make([]arrow.DataType, n)
	for i := range out {
		out[i] = t
	}
	return out
}
