package plan

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/vectorized"
)

// ColumnID identifies a column of a plan uniquely within one bound statement.
// Expressions refer to columns by ID, so that rules can move operators
// without renumbering; Build maps IDs to positions.
type ColumnID int

// Column is an output column of a plan node.
type Column struct {
	ID       ColumnID
	Name     string
	Type     arrow.DataType
	Nullable bool
}

// Expr is a bound scalar expression.
type Expr interface {
	Type() arrow.DataType
	String() string
}

// ColRef reads a column.
type ColRef struct {
	ID   ColumnID
	Name string
	Typ  arrow.DataType
}

// Const is a constant (a typed NULL when the scalar is not valid).
type Const struct{ Value scalar.Scalar }

// ParamRef is a placeholder; its type is inferred while binding.
type ParamRef struct {
	Index int // 1-based
	slot  *paramSlot
}

type paramSlot struct{ typ arrow.DataType }

// Call is a scalar function resolved by exec.ResolveFunction.
type Call struct {
	Fn   string
	Args []Expr
	Typ  arrow.DataType
	Pos  sql.Pos // where in the statement, for run-time errors (zero: unknown)
}

// Cast converts with SQL CAST semantics.
type Cast struct {
	X   Expr
	Typ arrow.DataType
	Pos sql.Pos // as Call.Pos
}

// Case is a searched CASE.
type Case struct {
	Whens []CaseWhen
	Else  Expr // nil = NULL
	Typ   arrow.DataType
}

// CaseWhen is one branch of a Case.
type CaseWhen struct{ Cond, Then Expr }

// In is x IN (list) with SQL three-valued semantics.
type In struct {
	X    Expr
	List []Expr
}

func (e *ColRef) Type() arrow.DataType   { return e.Typ }
func (e *Const) Type() arrow.DataType    { return e.Value.DataType() }
func (e *ParamRef) Type() arrow.DataType { return e.slot.typ }
func (e *Call) Type() arrow.DataType     { return e.Typ }
func (e *Cast) Type() arrow.DataType     { return e.Typ }
func (e *Case) Type() arrow.DataType     { return e.Typ }
func (e *In) Type() arrow.DataType       { return arrow.FixedWidthTypes.Boolean }

func (e *ColRef) String() string { return e.Name }
func (e *Const) String() string  { return constString(e.Value) }
func (e *ParamRef) String() string {
	return fmt.Sprintf("$%d", e.Index)
}

var infixOps = map[string]string{
	"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "modulo": "%",
	"equal": "=", "not_equal": "<>", "less": "<", "less_equal": "<=", "greater": ">",
	"greater_equal": ">=", "and": "AND", "or": "OR", "concat": "||",
}

func (e *Call) String() string {
	if op, ok := infixOps[e.Fn]; ok && len(e.Args) == 2 {
		return "(" + e.Args[0].String() + " " + op + " " + e.Args[1].String() + ")"
	}
	switch e.Fn {
	case "not":
		return "NOT " + e.Args[0].String()
	case "is_null":
		return e.Args[0].String() + " IS NULL"
	case "is_not_null":
		return e.Args[0].String() + " IS NOT NULL"
	}
	return e.Fn + "(" + exprList(e.Args) + ")"
}

func (e *Cast) String() string { return "CAST(" + e.X.String() + " AS " + SQLTypeName(e.Typ) + ")" }

func (e *Case) String() string {
	var sb strings.Builder
	sb.WriteString("CASE")
	for _, w := range e.Whens {
		fmt.Fprintf(&sb, " WHEN %s THEN %s", w.Cond, w.Then)
	}
	if e.Else != nil {
		fmt.Fprintf(&sb, " ELSE %s", e.Else)
	}
	sb.WriteString(" END")
	return sb.String()
}

func (e *In) String() string { return e.X.String() + " IN (" + exprList(e.List) + ")" }

func exprList(l []Expr) string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}

func constString(s scalar.Scalar) string {
	if !s.IsValid() {
		return "NULL"
	}
	switch s.DataType().ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return "'" + strings.ReplaceAll(s.String(), "'", "''") + "'"
	case arrow.DATE32:
		return "DATE '" + s.String() + "'"
	case arrow.STRUCT:
		// Field by field: arrow's String of a struct repeats each level's
		// type, so ROWs nested 300 deep printed 1.1 MB in 0.2 s.
		st := s.(*scalar.Struct)
		fields := make([]string, len(st.Value))
		for i, v := range st.Value {
			fields[i] = constString(v)
		}
		return "ROW(" + strings.Join(fields, ", ") + ")"
	}
	return s.String()
}

// children returns the direct sub-expressions.
func children(e Expr) []Expr {
	switch e := e.(type) {
	case *Call:
		return e.Args
	case *Cast:
		return []Expr{e.X}
	case *Case:
		var out []Expr
		for _, w := range e.Whens {
			out = append(out, w.Cond, w.Then)
		}
		if e.Else != nil {
			out = append(out, e.Else)
		}
		return out
	case *In:
		return append([]Expr{e.X}, e.List...)
	}
	return nil
}

// mapExpr rebuilds e bottom-up with f applied to every node; f returns
// its argument to keep a node.
func mapExpr(e Expr, f func(Expr) Expr) Expr {
	return f(rebuild(e, func(c Expr) Expr { return mapExpr(c, f) }))
}

// rebuild returns a copy of x with f applied to its children (x itself
// when it has none).
func rebuild(x Expr, f func(Expr) Expr) Expr {
	switch c := x.(type) {
	case *Call:
		args := make([]Expr, len(c.Args))
		for i, a := range c.Args {
			args[i] = f(a)
		}
		return &Call{Fn: c.Fn, Args: args, Typ: c.Typ, Pos: c.Pos}
	case *Cast:
		return &Cast{X: f(c.X), Typ: c.Typ, Pos: c.Pos}
	case *Case:
		out := &Case{Typ: c.Typ}
		for _, w := range c.Whens {
			out.Whens = append(out.Whens, CaseWhen{Cond: f(w.Cond), Then: f(w.Then)})
		}
		if c.Else != nil {
			out.Else = f(c.Else)
		}
		return out
	case *In:
		l := make([]Expr, len(c.List))
		for i, a := range c.List {
			l[i] = f(a)
		}
		return &In{X: f(c.X), List: l}
	}
	return x
}

// walkExpr calls f on every node of e.
func walkExpr(e Expr, f func(Expr)) {
	f(e)
	for _, c := range children(e) {
		walkExpr(c, f)
	}
}

// anyExpr reports whether f holds for e or a node below it.
func anyExpr(e Expr, f func(Expr) bool) bool {
	found := false
	walkExpr(e, func(x Expr) { found = found || f(x) })
	return found
}

// sizeAtMost reports whether e has at most n nodes, visiting no more than
// n+1 of them (counting all of a large tree at each of its nodes is
// quadratic).
func sizeAtMost(e Expr, n int) bool {
	var walk func(Expr) bool
	walk = func(x Expr) bool {
		if n--; n < 0 {
			return false
		}
		for _, c := range children(x) {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	return walk(e)
}

// colsOf returns the set of columns e reads.
func colsOf(e Expr) map[ColumnID]bool {
	s := map[ColumnID]bool{}
	if e != nil {
		walkExpr(e, func(x Expr) {
			if c, ok := x.(*ColRef); ok {
				s[c.ID] = true
			}
		})
	}
	return s
}

func subset(a map[ColumnID]bool, cols []Column) bool {
	for id := range a {
		found := false
		for _, c := range cols {
			if c.ID == id {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// conjuncts splits e on AND.
func conjuncts(e Expr) []Expr {
	if e == nil {
		return nil
	}
	if c, ok := e.(*Call); ok && c.Fn == "and" {
		return append(conjuncts(c.Args[0]), conjuncts(c.Args[1])...)
	}
	return []Expr{e}
}

// andAll joins conjuncts with AND (nil when empty).
func andAll(l []Expr) Expr { return chain("and", l) }

// orAll joins disjuncts with OR (nil when empty).
func orAll(l []Expr) Expr { return chain("or", l) }

// chain folds l left to right with the boolean function fn.
func chain(fn string, l []Expr) Expr {
	var out Expr
	for _, e := range l {
		if out == nil {
			out = e
		} else {
			out = &Call{Fn: fn, Args: []Expr{out, e}, Typ: arrow.FixedWidthTypes.Boolean}
		}
	}
	return out
}

// layout maps column IDs to positions of an operator's output.
type layout map[ColumnID]int

func layoutOf(cols []Column) layout {
	l := make(layout, len(cols))
	for i, c := range cols {
		l[c.ID] = i
	}
	return l
}

// compile turns a bound expression into an exec.Expr over an input whose
// columns are laid out as lay, with parameter values from params.
func compile(e Expr, lay layout, params arrow.RecordBatch) (exec.Expr, error) {
	switch x := e.(type) {
	case *ColRef:
		i, ok := lay[x.ID]
		if !ok {
			return nil, fmt.Errorf("%w: column %s (#%d) is not available here", errInternal, x.Name, x.ID)
		}
		return exec.NewColumn(i, x.Typ, x.Name), nil
	case *Const:
		return exec.NewLiteral(x.Value), nil
	case *ParamRef:
		if params == nil || int(params.NumCols()) < x.Index || params.NumRows() != 1 {
			return nil, fmt.Errorf("%w: parameter $%d has no value", ErrParams, x.Index)
		}
		s, err := paramScalar(params.Column(x.Index - 1))
		if err != nil {
			return nil, fmt.Errorf("parameter $%d: %w", x.Index, err)
		}
		lit := exec.NewLiteral(s)
		if !arrow.TypeEqual(s.DataType(), x.slot.typ) {
			c, err := exec.NewCast(lit, x.slot.typ)
			if err != nil {
				return nil, fmt.Errorf("%w: parameter $%d: %v", ErrParams, x.Index, err)
			}
			return c, nil
		}
		return lit, nil
	case *Call:
		args, err := compileAll(x.Args, lay, params)
		if err != nil {
			return nil, err
		}
		c, err := exec.NewCall(x.Fn, args...)
		return placed(c, x.Pos), err
	case *Cast:
		in, err := compile(x.X, lay, params)
		if err != nil {
			return nil, err
		}
		c, err := exec.NewCast(in, x.Typ)
		return placed(c, x.Pos), err
	case *Case:
		whens := make([]exec.When, len(x.Whens))
		for i, w := range x.Whens {
			c, err := compile(w.Cond, lay, params)
			if err != nil {
				return nil, err
			}
			t, err := compile(w.Then, lay, params)
			if err != nil {
				return nil, err
			}
			whens[i] = exec.When{Cond: c, Then: t}
		}
		var els exec.Expr
		if x.Else != nil {
			var err error
			if els, err = compile(x.Else, lay, params); err != nil {
				return nil, err
			}
		}
		return exec.NewCase(whens, els)
	case *In:
		v, err := compile(x.X, lay, params)
		if err != nil {
			return nil, err
		}
		l, err := compileAll(x.List, lay, params)
		if err != nil {
			return nil, err
		}
		return exec.NewIn(v, l)
	}
	return nil, fmt.Errorf("%w: cannot compile %T", errInternal, e)
}

// paramScalar is the value of a one-row parameter column.
func paramScalar(col arrow.Array) (scalar.Scalar, error) {
	return ownScalar(col, 0)
}

// ownScalar is row i of a as a scalar that holds none of a's memory. A
// nested or binary value's scalar keeps a slice of its array's buffers:
// copy it to the Go heap, as other plan constants are. A BYTES parameter's
// buffer stayed held for good (its plan never releases scalars), a leak
// of the client's parameters on every execution.
func ownScalar(a arrow.Array, i int) (scalar.Scalar, error) {
	switch a.DataType().ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY, arrow.BINARY_VIEW:
	default:
		if !vectorized.IsNested(a.DataType()) {
			return scalar.GetScalar(a, i)
		}
	}
	one := array.NewSlice(a, int64(i), int64(i+1))
	defer one.Release()
	c, err := array.Concatenate([]arrow.Array{one}, memory.NewGoAllocator())
	if err != nil {
		return nil, err
	}
	defer c.Release()
	return scalar.GetScalar(c, 0)
}

// placed gives a compiled call or cast its position in the statement.
func placed(e exec.Expr, pos sql.Pos) exec.Expr {
	if e == nil || pos.Line == 0 {
		return e
	}
	return exec.At(e, fmt.Sprintf("line %d:%d", pos.Line, pos.Col))
}

func compileAll(es []Expr, lay layout, params arrow.RecordBatch) ([]exec.Expr, error) {
	out := make([]exec.Expr, len(es))
	for i, e := range es {
		c, err := compile(e, lay, params)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}
