package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/vectorized"
)

// When is one WHEN cond THEN value arm of a CASE.
type When struct {
	Cond Expr
	Then Expr
}

// CaseExpr is a searched CASE. Each THEN (and the ELSE) is evaluated only
// on the rows that select it, so CASE WHEN x <> 0 THEN 1 / x END never
// divides by zero.
type CaseExpr struct {
	Whens []When
	Else  Expr // nil = NULL
	typ   arrow.DataType
}

// NewCase returns CASE WHEN ... THEN ... [ELSE ...] END; the result type is
// the common type of the THEN and ELSE values.
func NewCase(whens []When, elseExpr Expr) (Expr, error) {
	if len(whens) == 0 {
		return nil, fmt.Errorf("%w: CASE needs at least one WHEN", ErrInvalid)
	}
	types := []arrow.DataType{}
	for i, w := range whens {
		if w.Cond.DataType().ID() != arrow.BOOL && w.Cond.DataType().ID() != arrow.NULL {
			return nil, fmt.Errorf("%w: CASE WHEN condition %d (%s) has type %s, not boolean", ErrInvalid, i+1, w.Cond, w.Cond.DataType())
		}
		types = append(types, w.Then.DataType())
	}
	if elseExpr != nil {
		types = append(types, elseExpr.DataType())
	}
	t, ok := commonTypeOf(types)
	if !ok {
		return nil, fmt.Errorf("%w: CASE branches have no common type: %s", ErrInvalid, typesString(types))
	}
	c := &CaseExpr{typ: t}
	for _, w := range whens {
		th, err := castTo(w.Then, t)
		if err != nil {
			return nil, err
		}
		cond := w.Cond
		if cond.DataType().ID() == arrow.NULL {
			cond = NewLiteral(scalar.MakeNullScalar(boolType))
		}
		c.Whens = append(c.Whens, When{Cond: cond, Then: th})
	}
	if elseExpr != nil {
		el, err := castTo(elseExpr, t)
		if err != nil {
			return nil, err
		}
		c.Else = el
	}
	return c, nil
}

// DataType implements Expr.
func (c *CaseExpr) DataType() arrow.DataType { return c.typ }

func (c *CaseExpr) String() string {
	var sb strings.Builder
	sb.WriteString("CASE")
	for _, w := range c.Whens {
		fmt.Fprintf(&sb, " WHEN %s THEN %s", w.Cond, w.Then)
	}
	if c.Else != nil {
		fmt.Fprintf(&sb, " ELSE %s", c.Else)
	}
	sb.WriteString(" END")
	return sb.String()
}

// Eval implements Expr.
func (c *CaseExpr) Eval(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	n := int(b.NumRows())
	// src[i] is the arm that decided row i (-1 = none yet) and pos[i] its
	// position in that arm's value array.
	src := make([]int, n)
	pos := make([]int, n)
	for i := range src {
		src[i] = -1
	}
	var parts []arrow.Array
	defer func() { releaseArrays(parts) }()
	rows := make([]int64, n) // rows of b still undecided
	for i := range rows {
		rows[i] = int64(i)
	}
	cur := b
	cur.Retain()
	defer func() { cur.Release() }()
	arms := len(c.Whens)
	if c.Else != nil {
		arms++
	}
	for arm := 0; arm < arms && len(rows) > 0; arm++ {
		var mask []bool
		cnt := len(rows)
		if arm < len(c.Whens) {
			var err error
			if mask, cnt, err = evalMask(ctx, ec, c.Whens[arm].Cond, cur); err != nil {
				return nil, err
			}
			if cnt == 0 {
				continue
			}
		}
		sel := cur
		var keep []int64
		if cnt < len(rows) {
			idx := make([]int64, 0, cnt)
			for i, m := range mask {
				if m {
					idx = append(idx, int64(i))
				} else {
					keep = append(keep, int64(i))
				}
			}
			var err error
			if sel, err = vectorized.TakeBatch(ctx, ec.Mem, cur, cur.Schema(), idx); err != nil {
				return nil, err
			}
		} else {
			sel.Retain()
		}
		then := c.Else
		if arm < len(c.Whens) {
			then = c.Whens[arm].Then
		}
		v, err := then.Eval(ctx, ec, sel)
		sel.Release()
		if err != nil {
			return nil, err
		}
		parts = append(parts, v)
		p := 0
		for i, r := range rows {
			if mask == nil || mask[i] {
				src[r], pos[r] = len(parts)-1, p
				p++
			}
		}
		if keep == nil {
			rows = rows[:0]
			break
		}
		next, err := vectorized.TakeBatch(ctx, ec.Mem, cur, cur.Schema(), keep)
		if err != nil {
			return nil, err
		}
		cur.Release()
		cur = next
		nr := make([]int64, len(keep))
		for i, k := range keep {
			nr[i] = rows[k]
		}
		rows = nr
	}
	if len(parts) == 1 && parts[0].Len() == n {
		parts[0].Retain()
		return parts[0], nil
	}
	bld := array.NewBuilder(ec.Mem, c.typ)
	defer bld.Release()
	bld.Reserve(n)
	for i := 0; i < n; i++ {
		if src[i] < 0 {
			bld.AppendNull()
			continue
		}
		vectorized.AppendValue(bld, parts[src[i]], pos[i])
	}
	return bld.NewArray(), nil
}

// InExpr is SQL e IN (list) with three-valued logic: true if e equals an
// element, NULL if e is NULL or no element matches but one is NULL, else
// false.
type InExpr struct {
	Input Expr
	List  []Expr
	// set is used when every element is a literal.
	set     map[string]struct{}
	setNull bool
	or      Expr // otherwise an OR of equalities
}

// NewIn returns e IN (list).
func NewIn(e Expr, list []Expr) (Expr, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: IN needs a non-empty list", ErrInvalid)
	}
	types := []arrow.DataType{e.DataType()}
	allLit := true
	for _, x := range list {
		types = append(types, x.DataType())
		if _, ok := x.(*LiteralExpr); !ok {
			allLit = false
		}
	}
	t, ok := commonTypeOf(types)
	if !ok {
		return nil, fmt.Errorf("%w: IN list has no common type: %s", ErrInvalid, typesString(types))
	}
	in := &InExpr{List: list}
	var err error
	if in.Input, err = castTo(e, t); err != nil {
		return nil, err
	}
	if !allLit {
		var or Expr
		for _, x := range list {
			eq, err := NewCall("equal", in.Input, x)
			if err != nil {
				return nil, err
			}
			if or == nil {
				or = eq
			} else if or, err = NewCall("or", or, eq); err != nil {
				return nil, err
			}
		}
		in.or = or
		return in, nil
	}
	in.set = map[string]struct{}{}
	for _, x := range list {
		s := x.(*LiteralExpr).Value
		if !s.IsValid() {
			in.setNull = true
			continue
		}
		key, err := scalarKey(s, t)
		if err != nil {
			return nil, fmt.Errorf("%w: IN element %s: %v", ErrInvalid, x, err)
		}
		in.set[key] = struct{}{}
	}
	return in, nil
}

// scalarKey encodes a scalar converted to t the way KeyEncoder encodes a row.
func scalarKey(s scalar.Scalar, t arrow.DataType) (string, error) {
	// Plan-time constant, freed at once: not part of any execution's budget.
	mem := memory.NewGoAllocator()
	raw, err := scalar.MakeArrayFromScalar(s, 1, mem)
	if err != nil {
		return "", err
	}
	defer raw.Release()
	a, err := vectorized.Cast(mem, raw, t)
	if err != nil {
		return "", err
	}
	defer a.Release()
	var enc vectorized.KeyEncoder
	if err := enc.Encode([]arrow.Array{a}, 1); err != nil {
		return "", err
	}
	return string(enc.Key(0)), nil
}

// DataType implements Expr.
func (in *InExpr) DataType() arrow.DataType { return boolType }

func (in *InExpr) String() string {
	return fmt.Sprintf("%s IN (%s)", in.Input, exprsString(in.List))
}

// Eval implements Expr.
func (in *InExpr) Eval(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	if in.or != nil {
		return in.or.Eval(ctx, ec, b)
	}
	a, err := in.Input.Eval(ctx, ec, b)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	var enc vectorized.KeyEncoder
	if err := enc.Encode([]arrow.Array{a}, n); err != nil {
		return nil, err
	}
	vals := make([]bool, n)
	valid := make([]bool, n)
	for i := 0; i < n; i++ {
		if a.IsNull(i) {
			continue
		}
		_, hit := in.set[string(enc.Key(i))]
		vals[i] = hit
		valid[i] = hit || !in.setNull
	}
	return vectorized.BoolsToArray(ec.Mem, vals, valid), nil
}
