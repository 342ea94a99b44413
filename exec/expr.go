package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/vectorized"
)

// Expr is a compiled scalar expression over an input batch's columns.
// Exprs are immutable and may be shared by concurrent executions.
type Expr interface {
	DataType() arrow.DataType
	// Eval returns an array of b.NumRows() rows, owned by the caller.
	Eval(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error)
	String() string
}

// ColumnExpr reads one input column.
type ColumnExpr struct {
	Index int
	Type  arrow.DataType
	Name  string
}

// NewColumn returns the expression reading column index of the input.
func NewColumn(index int, typ arrow.DataType, name string) Expr {
	return &ColumnExpr{Index: index, Type: typ, Name: name}
}

// DataType implements Expr.
func (c *ColumnExpr) DataType() arrow.DataType { return c.Type }

// Eval implements Expr.
func (c *ColumnExpr) Eval(_ context.Context, _ *Context, b arrow.RecordBatch) (arrow.Array, error) {
	if c.Index < 0 || c.Index >= int(b.NumCols()) {
		return nil, fmt.Errorf("%w: column %s (#%d) out of range of a %d-column input", ErrInvalid, c.Name, c.Index, b.NumCols())
	}
	col := b.Column(c.Index)
	if !arrow.TypeEqual(col.DataType(), c.Type) {
		return nil, fmt.Errorf("%w: column %s (#%d) has type %s, expression expects %s", ErrInvalid, c.Name, c.Index, col.DataType(), c.Type)
	}
	col.Retain()
	return col, nil
}

func (c *ColumnExpr) String() string {
	if c.Name != "" {
		return c.Name
	}
	return fmt.Sprintf("#%d", c.Index)
}

// LiteralExpr is a constant.
type LiteralExpr struct {
	Value scalar.Scalar
}

// NewLiteral returns a constant expression; typed NULLs are allowed.
func NewLiteral(s scalar.Scalar) Expr { return &LiteralExpr{Value: s} }

// DataType implements Expr.
func (l *LiteralExpr) DataType() arrow.DataType { return l.Value.DataType() }

// Eval implements Expr.
func (l *LiteralExpr) Eval(_ context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	return l.array(ec, int(b.NumRows()))
}

func (l *LiteralExpr) array(ec *Context, n int) (arrow.Array, error) {
	if arr, ok := vectorized.Repeat(ec.Mem, l.Value, n); ok {
		return arr, nil
	}
	if s, ok := l.Value.(scalar.BinaryScalar); ok && s.IsValid() {
		if err := checkCopies(len(s.Data()), n); err != nil {
			return nil, err
		}
	}
	arr, err := scalar.MakeArrayFromScalar(l.Value, n, ec.Mem)
	if err != nil {
		return nil, fmt.Errorf("literal %s: %w", l, err)
	}
	return arr, nil
}

// checkCopies refuses copying a value of size bytes to each of n rows past
// vectorized.MaxComputedStrings: a constant string becomes a column so,
// and a 60 MB one made 60 GB for a batch of 1,024 rows.
func checkCopies(size, n int) error {
	if total := int64(size) * int64(n); total > vectorized.MaxComputedStrings {
		return fmt.Errorf("%w: a constant of %d bytes copied to each of %d rows would make %d bytes, over the limit of %d for a batch", vectorized.ErrTooLarge, size, n, total, int64(vectorized.MaxComputedStrings))
	}
	return nil
}

func (l *LiteralExpr) String() string {
	if !l.Value.IsValid() {
		return "NULL"
	}
	if vectorized.IsString(l.Value.DataType()) {
		return "'" + strings.ReplaceAll(l.Value.String(), "'", "''") + "'"
	}
	if d, ok := l.Value.(*scalar.Decimal128); ok {
		// With its scale: 18.00 is the decimal(7,2) constant, 18 an integer.
		return d.Value.ToString(d.DataType().(*arrow.Decimal128Type).Scale)
	}
	if st, ok := l.Value.(*scalar.Struct); ok {
		// Field by field: arrow's String of a struct repeats each level's
		// type, so ROWs nested 300 deep printed 1.1 MB in 0.2 s.
		fields := make([]string, len(st.Value))
		for i, v := range st.Value {
			fields[i] = (&LiteralExpr{Value: v}).String()
		}
		return "ROW(" + strings.Join(fields, ", ") + ")"
	}
	return l.Value.String()
}

// literalString returns the value of a non-NULL string literal.
func literalString(e Expr) (string, bool) {
	l, ok := e.(*LiteralExpr)
	if !ok || !l.Value.IsValid() || !vectorized.IsString(l.Value.DataType()) {
		return "", false
	}
	return l.Value.String(), true
}

// CastExpr converts its input with SQL CAST semantics.
type CastExpr struct {
	Input Expr
	To    arrow.DataType
	where string // see At
}

// NewCast returns CAST(e AS to), or an error if the conversion is not
// supported. Invalid values are errors at run time naming the value. A
// literal is converted once here instead of on every batch; one whose value
// does not convert stays a cast, so the error still comes at run time.
func NewCast(e Expr, to arrow.DataType) (Expr, error) {
	if arrow.TypeEqual(e.DataType(), to) {
		return e, nil
	}
	if !vectorized.CanCast(e.DataType(), to) {
		return nil, fmt.Errorf("%w: cannot cast %s from %s to %s", ErrInvalid, e, e.DataType(), to)
	}
	if l, ok := e.(*LiteralExpr); ok {
		if s, err := castScalar(l.Value, to); err == nil {
			return NewLiteral(s), nil
		}
	}
	return &CastExpr{Input: e, To: to}, nil
}

// castScalar converts a constant with the semantics of Cast.
func castScalar(s scalar.Scalar, to arrow.DataType) (scalar.Scalar, error) {
	// Plan-time constant, freed at once: not part of any execution's budget.
	mem := memory.NewGoAllocator()
	raw, err := scalar.MakeArrayFromScalar(s, 1, mem)
	if err != nil {
		return nil, err
	}
	defer raw.Release()
	a, err := vectorized.Cast(mem, raw, to)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	return scalar.GetScalar(a, 0)
}

// DataType implements Expr.
func (c *CastExpr) DataType() arrow.DataType { return c.To }

// Eval implements Expr.
func (c *CastExpr) Eval(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	in, err := c.Input.Eval(ctx, ec, b)
	if err != nil {
		return nil, err
	}
	defer in.Release()
	out, err := vectorized.Cast(ec.Mem, in, c.To)
	if err != nil && c.where != "" {
		return nil, fmt.Errorf("%s%w", c.where, err)
	}
	return out, err
}

// At records where e is in the statement ("line 1:8"), so that the errors
// a call or cast raises at run time (a division by zero, an overflow, a
// bad value) say where; other expressions, and one already placed (NewCast
// returns its input when no conversion is needed), are kept as they are.
func At(e Expr, where string) Expr {
	switch x := e.(type) {
	case *CallExpr:
		if x.where == "" {
			x.where = where + ": "
		}
	case *CastExpr:
		if x.where == "" {
			x.where = where + ": "
		}
	}
	return e
}

func (c *CastExpr) String() string { return fmt.Sprintf("CAST(%s AS %s)", c.Input, c.To) }

// evalAll evaluates exprs over b; on error it releases what it made.
func evalAll(ctx context.Context, ec *Context, exprs []Expr, b arrow.RecordBatch) ([]arrow.Array, error) {
	return evalAllWhere(ctx, ec, exprs, b, nil)
}

// evalAllWhere is evalAll of the rows of mask (see EvalWhere).
func evalAllWhere(ctx context.Context, ec *Context, exprs []Expr, b arrow.RecordBatch, mask []bool) ([]arrow.Array, error) {
	w := ec.Working()
	defer w.Release()
	return w.evalAll(ctx, exprs, b, mask)
}

// evalAll is evalAllWhere holding each result in w while it computes the
// next.
func (w *Working) evalAll(ctx context.Context, exprs []Expr, b arrow.RecordBatch, mask []bool) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(exprs))
	for i, e := range exprs {
		a, err := EvalWhere(ctx, w.ec, e, b, mask)
		if err == nil {
			if err = w.Hold(e, a); err != nil {
				a.Release()
			}
		}
		if err != nil {
			releaseArrays(out)
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// evalOne evaluates e over b and checks it made one row per input row.
func evalOne(ctx context.Context, ec *Context, e Expr, b arrow.RecordBatch) (arrow.Array, error) {
	a, err := e.Eval(ctx, ec, b)
	if err != nil {
		return nil, err
	}
	if a.Len() != int(b.NumRows()) {
		a.Release()
		return nil, fmt.Errorf("%w: %s produced %d rows for a %d-row batch", ErrInvalid, e, a.Len(), b.NumRows())
	}
	return a, nil
}

// EvalWhere evaluates e over b for the rows where mask is true (every row
// when mask is nil) and returns one value per row of b. An error e raises
// only on rows outside mask is not reported, as SQL evaluates a FILTERed
// aggregate's arguments only on the rows its FILTER keeps: e first runs
// over the whole batch (the common case, no error), and after an error
// again over the masked rows alone, whose values are then placed at
// their rows, NULL at the others.
func EvalWhere(ctx context.Context, ec *Context, e Expr, b arrow.RecordBatch, mask []bool) (arrow.Array, error) {
	a, err := evalOne(ctx, ec, e, b)
	if err == nil || mask == nil || ctx.Err() != nil {
		return a, err
	}
	var rows []int64
	for r, in := range mask {
		if in {
			rows = append(rows, int64(r))
		}
	}
	if len(rows) == len(mask) {
		return nil, err
	}
	sub, se, err := gatherFor(ctx, ec, e, b, rows)
	if err != nil {
		return nil, err
	}
	defer sub.Release()
	v, err := evalOne(ctx, ec, se, sub)
	if err != nil {
		return nil, err
	}
	defer v.Release()
	at := make([]int64, len(mask))
	for r := range at {
		at[r] = -1
	}
	for j, r := range rows {
		at[r] = int64(j)
	}
	return vectorized.Take(ctx, ec.Mem, v, at)
}

// releaseBatches releases each batch of bs.
func releaseBatches(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}

func releaseArrays(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// evalMask evaluates a boolean predicate (see predicate) and returns which
// rows are true and how many.
func evalMask(ctx context.Context, ec *Context, pred *predicate, b arrow.RecordBatch) ([]bool, int, error) {
	m, n, err := pred.mask(ctx, ec, b)
	if err != nil {
		return nil, 0, err
	}
	defer m.Release()
	bools, _ := vectorized.TrueMask(m)
	return bools, n, nil
}

func exprsString(es []Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}
