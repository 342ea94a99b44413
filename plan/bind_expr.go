package plan

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/internal/arrowshare"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/vectorized"
)

// exprOpts is the context of one expression.
type exprOpts struct {
	hint     arrow.DataType    // expected type: decides parameter and NULL types
	noAgg    string            // when set, aggregates are rejected "in <noAgg>"
	aggs     map[string]Column // aggregate call (formatted) -> output column
	wins     map[string]Column // window call (formatted) -> output column
	grouping *groupInfo
}

func withHint(t arrow.DataType) exprOpts { return exprOpts{hint: t, noAgg: "this context"} }

var boolType = arrow.FixedWidthTypes.Boolean

// bindPredicate binds a boolean condition of a clause.
func (b *binder) bindPredicate(e sql.Expr, sc *scope, node *Node, clause string) Expr {
	x := b.bindScalar(e, sc, node, exprOpts{noAgg: clause, hint: boolType})
	if x.Type().ID() == arrow.NULL {
		return &Const{Value: scalar.MakeNullScalar(boolType)}
	}
	if x.Type().ID() != arrow.BOOL {
		b.fail(e.Position(), "%s condition must be boolean, got %s", clause, SQLTypeName(x.Type()))
	}
	return x
}

// bindScalar binds an expression over scope sc. Subqueries add joins to
// *node, the relation the expression is evaluated over.
func (b *binder) bindScalar(e sql.Expr, sc *scope, node *Node, o exprOpts) Expr {
	switch e := e.(type) {
	case *sql.Ident:
		return b.bindPath(sc, e)
	case *sql.FieldAccess:
		return b.bindFieldAccess(e, sc, node, o)
	case *sql.Subscript:
		return b.bindSubscript(e, sc, node, o)
	case *sql.Collection:
		return b.bindCollection(e, sc, node, o)
	case *sql.Literal:
		return b.literal(e, o.hint)
	case *sql.TypedLiteral:
		return b.typedLiteral(e)
	case *sql.IntervalLiteral:
		return b.intervalLiteral(e)
	case *sql.Param:
		p := b.param(e)
		if p.slot.typ == nil && o.hint != nil {
			p.slot.typ = o.hint
		}
		return p
	case *sql.Unary:
		switch e.Op {
		case "+":
			return b.bindScalar(e.X, sc, node, o)
		case "-":
			if lit, ok := e.X.(*sql.Literal); ok && lit.Kind == sql.LitNumber {
				return b.literal(&sql.Literal{Pos: e.Pos, Kind: sql.LitNumber, Value: "-" + lit.Value}, o.hint)
			}
			x := b.bindScalar(e.X, sc, node, o)
			return b.call(e.Pos, "negate", x)
		}
		x := b.bindScalar(e.X, sc, node, o.with(boolType))
		return b.call(e.Pos, "not", b.boolArg(x, e.X, "NOT"))
	case *sql.Binary:
		return b.bindBinary(e, sc, node, o)
	case *sql.FuncCall:
		return b.bindCall(e, sc, node, o)
	case *sql.Cast:
		typ, err := ArrowType(e.Type)
		if err != nil {
			panic(bindFail{err})
		}
		x := b.bindScalar(e.X, sc, node, o.with(typ))
		c := b.castTo(x, typ, e.Pos)
		if _, ok := c.(*Cast); ok && e.Try {
			// NULL for a value CAST refuses; the NULL argument carries the type.
			c = &Call{Fn: "try_cast_to", Args: []Expr{x, &Const{Value: scalar.MakeNullScalar(typ)}}, Typ: typ, Pos: e.Pos}
		}
		return b.charLength(c, e.Type)
	case *sql.Case:
		return b.bindCase(e, sc, node, o)
	case *sql.Between:
		x := b.settle(b.bindScalar(e.X, sc, node, o.with(nil)))
		lo := b.bindScalar(e.Lo, sc, node, o.with(x.Type()))
		hi := b.bindScalar(e.Hi, sc, node, o.with(x.Type()))
		r := b.and(b.compare("greater_equal", x, lo, e.Pos), b.compare("less_equal", x, hi, e.Pos))
		if e.Not {
			return b.call(e.Pos, "not", r)
		}
		return r
	case *sql.InList:
		x := b.settle(b.bindScalar(e.X, sc, node, o.with(nil)))
		list := make([]Expr, len(e.List))
		typ := x.Type()
		for i, it := range e.List {
			list[i] = b.settle(b.bindScalar(it, sc, node, o.with(x.Type())))
			list[i] = b.coerceLiteral(list[i], x.Type())
			t, ok := commonType(typ, list[i].Type())
			if !ok {
				b.fail(it.Position(), "IN list value of type %s does not match %s", SQLTypeName(list[i].Type()), SQLTypeName(typ))
			}
			typ = t
		}
		x = b.castTo(x, typ, e.Pos)
		for i := range list {
			list[i] = b.castTo(list[i], typ, e.List[i].Position())
		}
		var r Expr = &In{X: x, List: list}
		if e.Not {
			r = b.call(e.Pos, "not", r)
		}
		return r
	case *sql.Like:
		x := b.bindScalar(e.X, sc, node, o.with(arrow.BinaryTypes.String))
		p := b.bindScalar(e.Pattern, sc, node, o.with(arrow.BinaryTypes.String))
		fn := "like"
		if e.Insensitive {
			fn = "ilike"
		}
		if e.Not {
			fn = "not_" + fn
		}
		args := []Expr{x, p}
		if e.Escape != nil {
			args = append(args, b.bindScalar(e.Escape, sc, node, o.with(arrow.BinaryTypes.String)))
		}
		return b.call(e.Pos, fn, args...)
	case *sql.Is:
		x := b.settle(b.bindScalar(e.X, sc, node, o.with(nil)))
		var r Expr
		switch e.What {
		case "NULL", "UNKNOWN":
			if e.Not {
				return b.call(e.Pos, "is_not_null", x)
			}
			return b.call(e.Pos, "is_null", x)
		case "TRUE":
			r = b.call(e.Pos, "coalesce", b.boolArg(x, e.X, "IS TRUE"), &Const{Value: boolScalar(false)})
		case "FALSE":
			r = b.call(e.Pos, "coalesce", b.call(e.Pos, "not", b.boolArg(x, e.X, "IS FALSE")), &Const{Value: boolScalar(false)})
		case "DISTINCT FROM":
			y := b.bindScalar(e.Y, sc, node, o.with(x.Type()))
			fn := "is_distinct_from"
			if e.Not {
				fn = "is_not_distinct_from"
			}
			return b.compare(fn, x, y, e.Pos)
		}
		if e.Not {
			r = b.call(e.Pos, "not", r)
		}
		return r
	case *sql.Extract:
		x := b.settle(b.bindScalar(e.X, sc, node, o.with(nil)))
		return b.call(e.Pos, "extract", &Const{Value: stringScalar(strings.ToLower(e.Field))}, x)
	case *sql.Subquery:
		return b.scalarSubquery(e, sc, node)
	case *sql.Exists:
		sub, corr := b.bindSubquery(e.Query, sc)
		if v, ok := b.existsConst(corr, e.Pos); ok {
			return &Const{Value: boolScalar(v != e.Not)}
		}
		var r Expr
		if len(corr.pulled) > 0 && !keyCorrelated(corr.pulled, sc.ids()) {
			cnt := b.newCol("_count", arrow.PrimitiveTypes.Int64, false)
			b.applyAggs(node, &AggNode{Input: sub, Aggs: []AggCall{{Fn: "count_star", Col: cnt}}}, andAll(corr.pulled), e.Pos)
			r = b.call(e.Pos, "greater", colRef(cnt), int64Const(0))
		} else {
			r = b.markJoin(node, sub, corr, nil, e.Pos, sc)
		}
		if e.Not {
			return b.call(e.Pos, "not", r)
		}
		return r
	case *sql.InSubquery:
		x := b.settle(b.bindScalar(e.X, sc, node, o.with(nil)))
		sub, corr := b.bindSubquery(e.Query, sc)
		if len(corr.pulled) > 0 && corr.agg && corr.scalarAgg && !corr.having {
			// Exactly one row for every outer row: x IN (v) is x = v.
			v := b.scalarSubquery(&sql.Subquery{Pos: e.Pos, Query: e.Query}, sc, node)
			r := b.compare("equal", x, v, e.Pos)
			if e.Not {
				r = b.call(e.Pos, "not", r)
			}
			return r
		}
		y := b.subqueryValue(sub, corr, e.Query.Pos)
		eq := b.compare("equal", x, y, e.Pos)
		// Three-valued IN: TRUE on a match; FALSE if the subquery yields no
		// rows (for this outer row); NULL if x is NULL or the subquery
		// yields a NULL; otherwise FALSE.
		null := &Const{Value: scalar.MakeNullScalar(boolType)}
		var whens []CaseWhen
		if ids := sc.ids(); len(corr.pulled) > 0 && (!keyCorrelated(corr.pulled, ids) || !keyCorrelated(append([]Expr{eq}, corr.pulled...), ids)) {
			found := b.newCol("_found", arrow.PrimitiveTypes.Int64, false)
			cnt := b.newCol("_count", arrow.PrimitiveTypes.Int64, false)
			hasNull := b.newCol("_has_null", boolType, true)
			b.applyAggs(node, &AggNode{Input: sub, Aggs: []AggCall{
				{Fn: "count_star", Filter: eq, Col: found},
				{Fn: "count_star", Col: cnt},
				{Fn: "bool_or", Args: []Expr{b.call(e.Pos, "is_null", y)}, Col: hasNull},
			}}, andAll(corr.pulled), e.Pos)
			whens = []CaseWhen{
				{Cond: b.call(e.Pos, "greater", colRef(found), int64Const(0)), Then: &Const{Value: boolScalar(true)}},
				{Cond: b.call(e.Pos, "equal", colRef(cnt), int64Const(0)), Then: &Const{Value: boolScalar(false)}},
				{Cond: b.call(e.Pos, "is_null", x), Then: null},
				{Cond: colRef(hasNull), Then: null},
			}
		} else {
			found := b.markJoin(node, sub, corr, eq, e.Pos, sc)
			// _has_null is bool_or(y IS NULL) over the subquery's rows
			// (grouped by the correlated columns), so it is NULL exactly
			// when there are none.
			sub2, corr2 := b.bindSubquery(e.Query, sc)
			y2 := b.subqueryValue(sub2, corr2, e.Query.Pos)
			hasNull := b.newCol("_has_null", boolType, true)
			agg := &AggNode{Input: sub2, Aggs: []AggCall{{Fn: "bool_or", Args: []Expr{b.call(e.Pos, "is_null", y2)}, Col: hasNull}}}
			for _, c := range corr2.inner {
				agg.Groups = append(agg.Groups, colRef(c))
				agg.GroupCols = append(agg.GroupCols, c)
			}
			*node = &JoinNode{Kind: LeftJoin, Left: *node, Right: agg, Cond: andAll(corr2.pulled)}
			whens = []CaseWhen{
				{Cond: found, Then: &Const{Value: boolScalar(true)}},
				{Cond: b.call(e.Pos, "is_null", colRef(hasNull)), Then: &Const{Value: boolScalar(false)}},
				{Cond: b.call(e.Pos, "is_null", x), Then: null},
				{Cond: colRef(hasNull), Then: null},
			}
		}
		var r Expr = &Case{Typ: boolType, Whens: whens, Else: &Const{Value: boolScalar(false)}}
		if e.Not {
			r = b.call(e.Pos, "not", r)
		}
		return r
	case *sql.Star:
		b.fail(e.Pos, "* is not allowed here")
	case *sql.GroupingSets, *sql.Rollup, *sql.Cube:
		b.fail(e.Position(), "grouping sets are allowed only in GROUP BY")
	case *sql.TableArg, *sql.Descriptor, *sql.NamedArg:
		b.fail(e.Position(), "%s is allowed only as a table function argument", sql.Format(e))
	}
	b.fail(e.Position(), "unsupported expression %s", sql.Format(e))
	return nil
}

func (o exprOpts) with(hint arrow.DataType) exprOpts {
	o.hint = hint
	return o
}

func (b *binder) boolArg(x Expr, src sql.Expr, what string) Expr {
	if p, ok := x.(*ParamRef); ok && p.slot.typ == nil {
		p.slot.typ = boolType
	}
	switch x.Type().ID() {
	case arrow.BOOL:
		return x
	case arrow.NULL:
		return &Const{Value: scalar.MakeNullScalar(boolType)}
	}
	b.fail(src.Position(), "argument of %s must be boolean, got %s", what, SQLTypeName(x.Type()))
	return nil
}

func (b *binder) and(l, r Expr) Expr {
	return &Call{Fn: "and", Args: []Expr{l, r}, Typ: boolType}
}

var arithFns = map[string]string{"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "%": "modulo"}
var compareFns = map[string]string{"=": "equal", "<>": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}

func (b *binder) bindBinary(e *sql.Binary, sc *scope, node *Node, o exprOpts) Expr {
	switch e.Op {
	case "AND", "OR":
		l := b.boolArg(b.bindScalar(e.Left, sc, node, o.with(boolType)), e.Left, e.Op)
		r := b.boolArg(b.bindScalar(e.Right, sc, node, o.with(boolType)), e.Right, e.Op)
		return &Call{Fn: strings.ToLower(e.Op), Args: []Expr{l, r}, Typ: boolType}
	case "||":
		l := b.bindScalar(e.Left, sc, node, o.with(arrow.BinaryTypes.String))
		r := b.bindScalar(e.Right, sc, node, o.with(arrow.BinaryTypes.String))
		return b.call(e.Pos, "concat", l, r)
	}
	l := b.bindScalar(e.Left, sc, node, o.with(nil))
	r := b.bindScalar(e.Right, sc, node, o.with(l.Type()))
	if fn, ok := compareFns[e.Op]; ok {
		return b.compare(fn, l, r, e.Pos)
	}
	b.inferParams(l, r)
	return b.call(e.Pos, arithFns[e.Op], l, r)
}

// settle gives an untyped parameter a type (string) where no context
// decides one, so that every bound expression has a type.
func (b *binder) settle(e Expr) Expr {
	if p, ok := e.(*ParamRef); ok && p.slot.typ == nil {
		p.slot.typ = arrow.BinaryTypes.String
	}
	return e
}

// inferParams gives untyped parameters the type of the other operand.
func (b *binder) inferParams(args ...Expr) {
	var typ arrow.DataType
	for _, a := range args {
		if p, ok := a.(*ParamRef); ok && p.slot.typ == nil {
			continue
		}
		if a.Type() != nil && a.Type().ID() != arrow.NULL {
			typ = a.Type()
			break
		}
	}
	if typ == nil {
		typ = arrow.BinaryTypes.String
	}
	for _, a := range args {
		if p, ok := a.(*ParamRef); ok && p.slot.typ == nil {
			p.slot.typ = typ
		}
	}
}

// coerceLiteral applies the implicit conversions of comparisons: a string
// constant compared with a date, timestamp or number becomes one (TPC-DS
// writes d_date = '2000-01-03'), and NULL takes the other side's type.
func (b *binder) coerceLiteral(x Expr, other arrow.DataType) Expr {
	if other == nil {
		return x
	}
	c, ok := x.(*Const)
	if !ok {
		if cast, ok := x.(*Cast); ok && family(cast.X.Type()) == famString && family(other) == famTemporal {
			return x
		}
		return x
	}
	switch {
	case c.Value.DataType().ID() == arrow.NULL && other.ID() != arrow.NULL:
		return &Const{Value: scalar.MakeNullScalar(other)}
	case family(c.Value.DataType()) == famString && (family(other) == famTemporal || family(other) == famNumeric):
		return &Cast{X: c, Typ: other}
	}
	return x
}

// compare binds a comparison with implicit conversions.
func (b *binder) compare(fn string, l, r Expr, pos sql.Pos) Expr {
	b.inferParams(l, r)
	l = b.coerceLiteral(l, r.Type())
	r = b.coerceLiteral(r, l.Type())
	// A string column against a date: compare as dates.
	if family(l.Type()) == famString && family(r.Type()) == famTemporal {
		l = b.castTo(l, r.Type(), pos)
	} else if family(r.Type()) == famString && family(l.Type()) == famTemporal {
		r = b.castTo(r, l.Type(), pos)
	}
	return b.call(pos, fn, l, r)
}

// call resolves a scalar function through exec.
// charLength gives x, cast to t, t's length when t is CHAR(n) or
// VARCHAR(n): cut to n characters, and a CHAR padded with spaces to n, as
// Flink casts since 1.15 (FLINK-24413). Values are STRING whatever their
// declared length, so CHAR and VARCHAR without one stay unbounded
// (Flink's are 1 long).
func (b *binder) charLength(x Expr, t *sql.TypeName) Expr {
	if t.Name != "CHAR" && t.Name != "VARCHAR" || len(t.Params) == 0 {
		return x
	}
	n := t.Params[0]
	if n < 1 {
		b.fail(t.Pos, "%s length %d is out of range (1 or more)", t.Name, n)
	}
	length := &Const{Value: scalar.NewInt64Scalar(int64(n))}
	if t.Name == "CHAR" {
		return b.call(t.Pos, "rpad", x, length, &Const{Value: scalar.NewStringScalar(" ")})
	}
	return b.call(t.Pos, "substring", x, &Const{Value: scalar.NewInt64Scalar(1)}, length)
}

func (b *binder) call(pos sql.Pos, fn string, args ...Expr) Expr {
	b.inferParams(args...)
	typ, err := exec.ResolveFunction(fn, typesOfExprs(args))
	if err != nil {
		b.fail(pos, "%s", callError(fn, args, err))
	}
	return &Call{Fn: fn, Args: args, Typ: typ, Pos: pos}
}

// callError restates a resolution error in SQL terms: the operator or
// function and the SQL names of the argument types.
func callError(fn string, args []Expr, err error) string {
	msg := cleanErr(err)
	if i := strings.Index(msg, "): "); i >= 0 {
		msg = msg[i+3:]
	}
	types := make([]string, len(args))
	for i, a := range args {
		types[i] = SQLTypeName(a.Type())
	}
	if op, ok := infixOps[fn]; ok && len(args) == 2 {
		return fmt.Sprintf("operator %s cannot be applied to %s and %s: %s", op, types[0], types[1], msg)
	}
	return fmt.Sprintf("function %s(%s): %s", fn, strings.Join(types, ", "), msg)
}

// cleanErr drops exec's sentinel prefix, which means nothing to a user.
func cleanErr(err error) string {
	return strings.TrimPrefix(err.Error(), exec.ErrInvalid.Error()+": ")
}

// castTo converts e to typ, checking that exec can.
func (b *binder) castTo(e Expr, typ arrow.DataType, pos sql.Pos) Expr {
	if p, ok := e.(*ParamRef); ok && p.slot.typ == nil {
		p.slot.typ = typ
	}
	from := e.Type()
	if arrow.TypeEqual(from, typ) {
		return e
	}
	if from.ID() == arrow.NULL {
		return &Const{Value: scalar.MakeNullScalar(typ)}
	}
	if _, err := exec.NewCast(exec.NewColumn(0, from, "x"), typ); err != nil {
		b.fail(pos, "cannot cast %s to %s", SQLTypeName(from), SQLTypeName(typ))
	}
	return &Cast{X: e, Typ: typ, Pos: pos}
}

func (b *binder) bindCase(e *sql.Case, sc *scope, node *Node, o exprOpts) Expr {
	var operand Expr
	if e.Operand != nil {
		operand = b.settle(b.bindScalar(e.Operand, sc, node, o.with(nil)))
	}
	c := &Case{}
	var thens []Expr
	for _, w := range e.Whens {
		var cond Expr
		if operand != nil {
			v := b.bindScalar(w.Cond, sc, node, o.with(operand.Type()))
			cond = b.compare("equal", operand, v, w.Pos)
		} else {
			cond = b.boolArg(b.bindScalar(w.Cond, sc, node, o.with(boolType)), w.Cond, "WHEN")
		}
		c.Whens = append(c.Whens, CaseWhen{Cond: cond})
		thens = append(thens, b.settle(b.bindScalar(w.Then, sc, node, o)))
	}
	if e.Else != nil {
		c.Else = b.settle(b.bindScalar(e.Else, sc, node, o))
		thens = append(thens, c.Else)
	}
	var typ arrow.DataType = arrow.Null
	for i, t := range thens {
		ct, ok := commonType(typ, t.Type())
		if !ok {
			b.fail(e.Pos, "CASE branches have types %s and %s with no common type (branch %d)", SQLTypeName(typ), SQLTypeName(t.Type()), i+1)
		}
		typ = ct
	}
	if typ.ID() == arrow.NULL {
		typ = arrow.BinaryTypes.String
	}
	for i := range c.Whens {
		c.Whens[i].Then = b.castTo(thens[i], typ, e.Pos)
	}
	if c.Else != nil {
		c.Else = b.castTo(c.Else, typ, e.Pos)
	}
	c.Typ = typ
	return c
}

func (b *binder) bindCall(e *sql.FuncCall, sc *scope, node *Node, o exprOpts) Expr {
	key := sql.Format(e)
	if e.Over != nil {
		if col, ok := o.wins[key]; ok {
			return colRef(col)
		}
		b.fail(e.Pos, "window function %s is not allowed here", e.Name)
	}
	if isAggregate(e.Name) {
		if col, ok := o.aggs[key]; ok {
			return colRef(col)
		}
		where := o.noAgg
		if where == "" {
			where = "this context"
		}
		b.fail(e.Pos, "aggregate function %s is not allowed in %s", e.Name, where)
	}
	if windowOnly[e.Name] {
		b.fail(e.Pos, "window function %s needs an OVER clause", e.Name)
	}
	if e.Distinct || e.Star || e.Filter != nil {
		b.fail(e.Pos, "%s is not an aggregate function", e.Name)
	}
	if e.Name == "grouping" {
		return b.grouping(e, sc, o)
	}
	if e.Name == "if" {
		// IF(cond, a, b) is CASE WHEN cond THEN a ELSE b END.
		if len(e.Args) != 3 {
			b.fail(e.Pos, "IF takes 3 arguments, got %d", len(e.Args))
		}
		return b.bindCase(&sql.Case{Pos: e.Pos, Whens: []*sql.When{{Pos: e.Pos, Cond: e.Args[0], Then: e.Args[1]}}, Else: e.Args[2]}, sc, node, o)
	}
	if e.Name == "timestampadd" || e.Name == "timestampdiff" {
		return b.timestampArith(e, sc, node, o)
	}
	args := make([]Expr, len(e.Args))
	for i, a := range e.Args {
		var hint arrow.DataType
		if i > 0 {
			hint = args[0].Type()
		}
		args[i] = b.bindScalar(a, sc, node, o.with(hint))
	}
	fn := e.Name
	if part, ok := extractAliases[fn]; ok && len(args) == 1 {
		return b.call(e.Pos, "extract", &Const{Value: stringScalar(part)}, args[0])
	}
	switch fn {
	case "ifnull":
		// Flink's IFNULL(x, y) is COALESCE(x, y).
		if len(args) != 2 {
			b.fail(e.Pos, "IFNULL takes 2 arguments, got %d", len(args))
		}
		fn = "coalesce"
	case "regexp":
		fn = "regexp_like"
	}
	switch fn {
	case "typeof":
		// TYPEOF(x [, force]) is x's flightd type, known when binding.
		if len(args) < 1 || len(args) > 2 {
			b.fail(e.Pos, "TYPEOF takes 1 or 2 arguments, got %d", len(args))
		}
		return &Const{Value: stringScalar(SQLTypeName(args[0].Type()))}
	case "current_watermark":
		return b.bindCurrentWatermark(e, args)
	case "overlaps":
		// (s, e) OVERLAPS (s, e) over one date/time type; an interval end
		// is the start plus it.
		for i := 1; i < len(args); i += 2 {
			if _, ok := args[i].Type().(*arrow.MonthDayNanoIntervalType); ok {
				args[i] = b.bindScalar(&sql.Binary{Pos: e.Args[i].Position(), Op: "+", Left: e.Args[i-1], Right: e.Args[i]}, sc, node, o)
			}
		}
		typ := arrow.DataType(arrow.Null)
		for i, a := range args {
			t, ok := commonType(typ, a.Type())
			if !ok {
				b.fail(e.Args[i].Position(), "OVERLAPS periods have types %s and %s with no common type", SQLTypeName(typ), SQLTypeName(a.Type()))
			}
			typ = t
		}
		for i := range args {
			args[i] = b.castTo(b.coerceLiteral(args[i], typ), typ, e.Args[i].Position())
		}
	case "substring":
		fn = "substr"
	case "ceiling":
		fn = "ceil"
	case "localtimestamp", "now":
		fn = "current_timestamp"
	case "localtime":
		fn = "current_time"
	case "nullif":
		// Typed as its first argument, as in Calcite: NULLIF(a, b) is CASE
		// WHEN a = b THEN NULL ELSE a END. exec compares in the common type.
		if len(args) == 2 {
			b.inferParams(args...)
			args[0] = b.coerceLiteral(args[0], args[1].Type())
			args[1] = b.coerceLiteral(args[1], args[0].Type())
		}
	case "coalesce", "greatest", "least":
		// Same-typed arguments: unify with casts.
		typ := arrow.DataType(arrow.Null)
		b.inferParams(args...)
		for i, a := range args {
			t, ok := commonType(typ, a.Type())
			if !ok {
				b.fail(e.Args[i].Position(), "%s arguments have types %s and %s with no common type", fn, SQLTypeName(typ), SQLTypeName(a.Type()))
			}
			typ = t
		}
		if typ.ID() != arrow.NULL {
			for i := range args {
				args[i] = b.castTo(b.coerceLiteral(args[i], typ), typ, e.Args[i].Position())
			}
		}
	}
	if _, err := exec.ResolveFunction(fn, nil); err != nil && strings.Contains(err.Error(), "unknown function") {
		var names []string
		for n := range aggregateNames {
			names = append(names, n)
		}
		b.fail(e.Pos, "unknown function %s%s", e.Name, didYouMean(e.Name, names))
	}
	return b.call(e.Pos, fn, args...)
}

// timestampUnits are the units of TIMESTAMPADD and TIMESTAMPDIFF.
var timestampUnits = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "day": true, "hour": true, "minute": true, "second": true}

// timestampArith binds TIMESTAMPADD(unit, n, x) as date_add and
// TIMESTAMPDIFF(unit, x, y) as exec's timestampdiff (whole units from x to
// y, an INT as in Flink); the unit is a keyword (DAY, or SQL_TSI_DAY).
func (b *binder) timestampArith(e *sql.FuncCall, sc *scope, node *Node, o exprOpts) Expr {
	if len(e.Args) != 3 {
		b.fail(e.Pos, "%s takes 3 arguments, got %d", strings.ToUpper(e.Name), len(e.Args))
	}
	id, ok := e.Args[0].(*sql.Ident)
	unit := ""
	if ok && len(id.Parts) == 1 {
		unit = strings.TrimPrefix(strings.ToLower(id.Parts[0]), "sql_tsi_")
	}
	if !timestampUnits[unit] {
		b.fail(e.Args[0].Position(), "%s: the first argument must be a unit (YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE or SECOND), not %s", strings.ToUpper(e.Name), sql.Format(e.Args[0]))
	}
	u := &Const{Value: stringScalar(unit)}
	x := b.bindScalar(e.Args[1], sc, node, o.with(nil))
	y := b.bindScalar(e.Args[2], sc, node, o.with(nil))
	if e.Name == "timestampdiff" {
		return b.castTo(b.call(e.Pos, "timestampdiff", u, x, y), arrow.PrimitiveTypes.Int32, e.Pos)
	}
	if y.Type().ID() == arrow.DATE32 && unit != "year" && unit != "quarter" && unit != "month" && unit != "week" && unit != "day" {
		// As Calcite: adding hours to a DATE gives a TIMESTAMP.
		y = b.castTo(y, &arrow.TimestampType{Unit: arrow.Microsecond}, e.Args[2].Position())
	}
	return b.call(e.Pos, "date_add", u, x, y)
}

// extractAliases are Flink's date part functions: HOUR(ts) is
// EXTRACT(HOUR FROM ts).
var extractAliases = map[string]string{
	"year": "year", "quarter": "quarter", "month": "month", "week": "week", "dayofmonth": "day",
	"hour": "hour", "minute": "minute", "second": "second", "dayofweek": "dow", "dayofyear": "doy",
}

// grouping implements GROUPING(a, ...) from the grouping id column: bit i
// of the id is set when group expression i is absent from the row's set.
func (b *binder) grouping(e *sql.FuncCall, sc *scope, o exprOpts) Expr {
	if o.grouping == nil {
		b.fail(e.Pos, "GROUPING is allowed only with GROUP BY")
	}
	g := o.grouping
	if g.gid == nil {
		return &Const{Value: scalar.NewInt64Scalar(0)}
	}
	if len(e.Args) > 63 {
		// A bit per argument in a BIGINT: more overflowed as the query ran.
		panic(bindFail{sql.StateErrorf(sql.StateTooComplex, e.Pos, "statement too complex: GROUPING of more than 63 arguments")})
	}
	var out Expr
	gid := colRef(*g.gid)
	for _, a := range e.Args {
		var n Node
		x := b.bindScalar(a, sc, &n, exprOpts{noAgg: "GROUPING"})
		i, ok := g.index[exprKey(x)]
		if !ok {
			b.fail(a.Position(), "GROUPING argument %s is not a GROUP BY expression", sql.Format(a))
		}
		bit := b.call(e.Pos, "modulo", b.call(e.Pos, "divide", gid, int64Const(1<<i)), int64Const(2))
		if out == nil {
			out = bit
		} else {
			out = b.call(e.Pos, "add", b.call(e.Pos, "multiply", out, int64Const(2)), bit)
		}
	}
	return out
}

func int64Const(v int64) Expr { return &Const{Value: scalar.NewInt64Scalar(v)} }

// scalarSubquery joins a scalar subquery to *node and returns its value.
func (b *binder) scalarSubquery(e *sql.Subquery, sc *scope, node *Node) Expr {
	sub, corr := b.bindSubquery(e.Query, sc)
	v := b.subqueryValue(sub, corr, e.Pos)
	if len(corr.pulled) == 0 {
		if m, i, ok := b.mergedScalar(e.Query); ok {
			cols := m.Columns()
			sub, v = m, colRef(cols[i])
			if len(cols) > 1 {
				// Only its own value: the merged query has a column per
				// subquery, and n joins each carrying all n made
				// planning (which reads each join's columns) cost n^3.
				sub = &ProjectNode{Input: m, Exprs: []Expr{v}, Cols: []Column{cols[i]}}
			}
		}
		*node = &JoinNode{Kind: LeftJoin, Left: *node, Right: &Max1RowNode{Input: sub}}
		return v
	}
	if !corr.agg || !corr.scalarAgg {
		// One value per correlation key, or an error: group the subquery
		// by its correlated columns and check each group has one row
		// (without aggregates, or with GROUP BY, there may be several).
		if !keyCorrelated(corr.pulled, sc.ids()) {
			b.notImplemented(e.Pos, "a correlated scalar subquery whose correlation is not inner_column = outer_expression")
		}
		var groups []Expr
		for _, c := range corr.inner {
			groups = append(groups, colRef(c))
		}
		val := b.newCol(v.Name, v.Typ, true)
		cnt := b.newCol("_count", arrow.PrimitiveTypes.Int64, false)
		agg := &AggNode{Input: sub, Groups: groups, GroupCols: corr.inner, Aggs: []AggCall{
			{Fn: "any_value", Args: []Expr{v}, Col: val},
			{Fn: "count_star", Col: cnt},
		}}
		*node = &JoinNode{Kind: LeftJoin, Left: *node, Right: &Max1RowNode{Input: agg, PerKeyCount: &cnt}, Cond: andAll(corr.pulled)}
		return colRef(val)
	}
	if p, ok := sub.(*ProjectNode); ok {
		in, having := p.Input, Expr(nil)
		if f, ok := in.(*FilterNode); ok && corr.having {
			in, having = f.Input, f.Pred
		}
		if agg, ok := in.(*AggNode); ok {
			// The select expression (and HAVING) is evaluated above the
			// join, so that an outer row without inner rows sees the
			// aggregates of no rows (COUNT 0, the others NULL) rather than
			// NULL-extended columns: (SELECT count(*) + 1 ...) is 1 there,
			// not NULL.
			var v Expr
			if corr.apply {
				b.applyAggs(node, agg, andAll(corr.pulled), e.Pos)
				v = p.Exprs[0]
			} else {
				*node = &JoinNode{Kind: LeftJoin, Left: *node, Right: agg, Cond: andAll(corr.pulled)}
				v = b.overNoRows(p.Exprs[0], agg, e.Pos)
				if having != nil {
					having = b.overNoRows(having, agg, e.Pos)
				}
			}
			if having != nil {
				v = &Case{Typ: v.Type(), Whens: []CaseWhen{{Cond: having, Then: v}}, Else: &Const{Value: scalar.MakeNullScalar(v.Type())}}
			}
			return v
		}
	}
	if corr.apply {
		b.notImplemented(e.Pos, "this correlated aggregate subquery")
	}
	*node = &JoinNode{Kind: LeftJoin, Left: *node, Right: sub, Cond: andAll(corr.pulled)}
	// COUNT over no rows is 0, but the outer join yields NULL.
	if isCountQuery(e.Query) && !corr.having {
		return b.call(e.Pos, "coalesce", v, b.castTo(int64Const(0), v.Type(), e.Pos))
	}
	return v
}

// overNoRows rewrites e, an expression over agg's outputs, for rows where
// a left join found no group: COUNT results become 0 instead of NULL.
func (b *binder) overNoRows(e Expr, agg *AggNode, pos sql.Pos) Expr {
	defs := map[ColumnID]Expr{}
	for _, a := range agg.Aggs {
		if a.Fn == "count" || a.Fn == "count_star" {
			ref := colRef(a.Col)
			defs[a.Col.ID] = b.call(pos, "coalesce", ref, b.castTo(int64Const(0), a.Col.Type, pos))
		}
	}
	return substitute(e, defs)
}

func colRef(c Column) *ColRef { return &ColRef{ID: c.ID, Name: c.Name, Typ: c.Type} }

// applyAggs computes agg (without groups, over an inner input) once per
// row of *node, over the inner rows that satisfy cond with that row: the
// rows of *node are numbered and left joined with the inner rows, and agg
// groups by the row number and the outer columns, aggregating matched rows
// only. *node becomes agg: the outer columns (same IDs) and the aggregates.
// It decorrelates what the grouped join cannot (x.k < o.k, a condition on
// the outer row alone) at the cost of materializing the outer rows once
// for the numbering.
func (b *binder) applyAggs(node *Node, agg *AggNode, cond Expr, pos sql.Pos) {
	outer := (*node).Columns()
	row := b.newCol("_row", arrow.PrimitiveTypes.Int64, false)
	numbered := &WindowNode{Input: *node, Funcs: []WindowFunc{{Fn: "row_number", Col: row}}}
	match := b.newCol("_match", boolType, true)
	innerCols := agg.Input.Columns()
	var exprs []Expr
	for _, c := range innerCols {
		exprs = append(exprs, colRef(c))
	}
	inner := &ProjectNode{Input: agg.Input, Exprs: append(exprs, &Const{Value: boolScalar(true)}),
		Cols: append(slices.Clone(innerCols), match)}
	agg.Input = &JoinNode{Kind: LeftJoin, Left: numbered, Right: inner, Cond: cond}
	matched := b.call(pos, "is_not_null", colRef(match))
	for i := range agg.Aggs {
		if f := agg.Aggs[i].Filter; f != nil {
			agg.Aggs[i].Filter = b.call(pos, "and", matched, f)
		} else {
			agg.Aggs[i].Filter = matched
		}
	}
	agg.Groups = []Expr{colRef(row)}
	agg.GroupCols = []Column{row}
	for _, c := range outer {
		agg.Groups = append(agg.Groups, colRef(c))
		agg.GroupCols = append(agg.GroupCols, c)
	}
	*node = agg
}

func isCountQuery(q *sql.Query) bool {
	for pq, ok := q.Body.(*sql.ParenQuery); ok && len(q.OrderBy) == 0; pq, ok = q.Body.(*sql.ParenQuery) {
		q = pq.Query
	}
	sel, ok := q.Body.(*sql.Select)
	if !ok || len(sel.Items) != 1 {
		return false
	}
	f, ok := sel.Items[0].Expr.(*sql.FuncCall)
	return ok && f.Name == "count" && f.Over == nil
}

// markJoin evaluates EXISTS / IN anywhere in an expression: a left join with
// the distinct matching keys and a marker column that is non-NULL on a match.
func (b *binder) markJoin(node *Node, sub Node, corr *corrResult, eq Expr, pos sql.Pos, sc *scope) Expr {
	keys := corr.pulled
	if eq != nil {
		keys = append([]Expr{eq}, keys...)
	}
	if !keyCorrelated(keys, sc.ids()) {
		// Several distinct inner rows could match one outer row.
		b.notImplemented(pos, "EXISTS or IN (subquery) inside an expression with a correlation that is not inner_column = outer_expression")
	}
	var exprs []Expr
	var cols []Column
	need := map[ColumnID]bool{}
	for _, p := range corr.pulled {
		for id := range colsOf(p) {
			need[id] = true
		}
	}
	if eq != nil {
		for id := range colsOf(eq) {
			need[id] = true
		}
	}
	for _, c := range sub.Columns() {
		if need[c.ID] {
			exprs = append(exprs, colRef(c))
			cols = append(cols, c)
		}
	}
	mark := b.newCol("_mark", boolType, true)
	exprs = append(exprs, &Const{Value: boolScalar(true)})
	cols = append(cols, mark)
	right := &DistinctNode{Input: &ProjectNode{Input: sub, Exprs: exprs, Cols: cols}}
	conds := append([]Expr{}, corr.pulled...)
	if eq != nil {
		conds = append(conds, eq)
	}
	*node = &JoinNode{Kind: LeftJoin, Left: *node, Right: right, Cond: andAll(conds)}
	return b.call(pos, "is_not_null", colRef(mark))
}

// ---- literals

func (b *binder) literal(l *sql.Literal, hint arrow.DataType) Expr {
	switch l.Kind {
	case sql.LitString:
		return &Const{Value: stringScalar(l.Value)}
	case sql.LitBool:
		return &Const{Value: boolScalar(l.Value == "TRUE")}
	case sql.LitNull:
		if hint != nil {
			return &Const{Value: scalar.MakeNullScalar(hint)}
		}
		return &Const{Value: scalar.MakeNullScalar(arrow.Null)}
	}
	v := l.Value
	if !strings.ContainsAny(v, ".eE") {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			if n >= -1<<31 && n < 1<<31 {
				return &Const{Value: scalar.NewInt32Scalar(int32(n))}
			}
			return &Const{Value: scalar.NewInt64Scalar(n)}
		}
		// Too large for BIGINT: a decimal.
	}
	if strings.ContainsAny(v, "eE") {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.fail(l.Pos, "invalid number %s", v)
		}
		return &Const{Value: scalar.NewFloat64Scalar(f)}
	}
	neg := strings.HasPrefix(v, "-")
	digits := strings.TrimPrefix(v, "-")
	intPart, frac, _ := strings.Cut(digits, ".")
	all := strings.TrimLeft(intPart+frac, "0")
	// Calcite's precision: the digits as written, leading zeros too
	// (0.29 is DECIMAL(3, 2)).
	prec := max(len(intPart)+len(frac), 1)
	if prec > 38 {
		b.fail(l.Pos, "number %s has more than 38 digits", v)
	}
	bi, ok := new(big.Int).SetString("0"+all, 10)
	if !ok {
		b.fail(l.Pos, "invalid number %s", v)
	}
	if neg {
		bi.Neg(bi)
	}
	typ := &arrow.Decimal128Type{Precision: int32(prec), Scale: int32(len(frac))}
	return &Const{Value: scalar.NewDecimal128Scalar(decimal128.FromBigInt(bi), typ)}
}

func (b *binder) typedLiteral(l *sql.TypedLiteral) Expr {
	switch l.Type {
	case "DATE":
		t, err := time.Parse("2006-01-02", strings.TrimSpace(l.Value))
		if err != nil {
			b.fail(l.Pos, "invalid DATE literal %q (want YYYY-MM-DD)", l.Value)
		}
		return &Const{Value: scalar.NewDate32Scalar(arrow.Date32FromTime(t))}
	case "TIMESTAMP":
		t, ok := parseTimestamp(l.Value)
		if !ok {
			b.fail(l.Pos, "invalid TIMESTAMP literal %q (want YYYY-MM-DD HH:MM:SS[.fff])", l.Value)
		}
		// Flink types the literal TIMESTAMP(p), p its fractional digits
		// (which CAST to STRING prints): the unit that holds them.
		unit := [...]arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond}[(fracDigits(l.Value)+2)/3]
		typ := &arrow.TimestampType{Unit: unit}
		// Nine fractional digits make nanoseconds, which hold 1678 to 2262.
		v, err := vectorized.TimeValue(t, typ)
		if err != nil {
			b.failState("22003", l.Pos, "numeric overflow: TIMESTAMP literal %q is out of the range of TIMESTAMP(9) (1678 to 2262); fewer fractional digits make TIMESTAMP(6)", l.Value)
		}
		return &Const{Value: scalar.NewTimestampScalar(arrow.Timestamp(v), typ)}
	case "X":
		v, err := hex.DecodeString(l.Value)
		if err != nil {
			b.fail(l.Pos, "invalid binary literal X'%s' (want an even number of hex digits)", l.Value)
		}
		return &Const{Value: scalar.NewBinaryScalar(memory.NewBufferBytes(v), arrow.BinaryTypes.Binary)}
	case "TIME":
		t, err := time.Parse("15:04:05.999999999", strings.TrimSpace(l.Value))
		if err != nil {
			b.fail(l.Pos, "invalid TIME literal %q (want HH:MM:SS[.fff])", l.Value)
		}
		ns := int64(t.Hour())*3600e9 + int64(t.Minute())*60e9 + int64(t.Second())*1e9 + int64(t.Nanosecond())
		if fracDigits(l.Value) > 6 {
			return &Const{Value: scalar.NewTime64Scalar(arrow.Time64(ns), &arrow.Time64Type{Unit: arrow.Nanosecond})}
		}
		return &Const{Value: scalar.NewTime64Scalar(arrow.Time64(ns/1000), &arrow.Time64Type{Unit: arrow.Microsecond})}
	}
	b.fail(l.Pos, "unsupported literal type %s", l.Type)
	return nil
}

// fracDigits is the number of fractional second digits of a TIME or
// TIMESTAMP literal (at most 9, which parsing checks).
func fracDigits(v string) int {
	_, frac, _ := strings.Cut(strings.TrimSpace(v), ".")
	return min(len(frac), 9)
}

func parseTimestamp(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func (b *binder) intervalLiteral(l *sql.IntervalLiteral) Expr {
	v := strings.TrimSpace(l.Value)
	neg := l.Negative
	if strings.HasPrefix(v, "-") {
		neg = !neg
		v = v[1:]
	}
	var iv arrow.MonthDayNanoInterval
	bad := func() { b.fail(l.Pos, "invalid interval %s", sql.Format(l)) }
	// Every field is computed with overflow checks: INTERVAL '99999999999'
	// YEAR wrapped to 1704124404 months, and a timestamp plus
	// INTERVAL '9223372036854775807' SECOND landed in 1727.
	overflow := func() {
		b.failState("22003", l.Pos, "numeric overflow: interval %s is out of range", sql.Format(l))
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			overflow()
		}
		if err != nil {
			bad()
		}
		return n
	}
	times := func(n, unit int64) int64 {
		if n > math.MaxInt64/unit || n < -math.MaxInt64/unit { // symmetric: the sign may flip

			overflow()
		}
		return n * unit
	}
	plus := func(a, c int64) int64 {
		if (c > 0 && a > math.MaxInt64-c) || (c < 0 && a < -math.MaxInt64-c) {
			overflow()
		}
		return a + c
	}
	int32Of := func(n int64) int32 {
		if n > math.MaxInt32 || n < -math.MaxInt32 {
			overflow()
		}
		return int32(n)
	}
	seconds := func(s string) int64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			bad()
		}
		if math.Abs(f*1e9) >= math.MaxInt64 {
			overflow()
		}
		return int64(f * 1e9)
	}
	switch {
	case l.ToUnit == "" && l.Unit == "SECOND":
		iv.Nanoseconds = seconds(v)
	case l.ToUnit == "":
		n := num(v)
		switch l.Unit {
		case "YEAR":
			iv.Months = int32Of(times(n, 12))
		case "QUARTER":
			iv.Months = int32Of(times(n, 3))
		case "MONTH":
			iv.Months = int32Of(n)
		case "WEEK":
			iv.Days = int32Of(times(n, 7))
		case "DAY":
			iv.Days = int32Of(n)
		case "HOUR":
			iv.Nanoseconds = times(n, 3600e9)
		case "MINUTE":
			iv.Nanoseconds = times(n, 60e9)
		case "MILLISECOND":
			iv.Nanoseconds = times(n, 1e6)
		case "MICROSECOND":
			iv.Nanoseconds = times(n, 1e3)
		default:
			bad()
		}
	case l.Unit == "YEAR" && l.ToUnit == "MONTH":
		y, m, ok := strings.Cut(v, "-")
		if !ok {
			bad()
		}
		iv.Months = int32Of(plus(times(num(y), 12), num(m)))
	case l.Unit == "DAY" && (l.ToUnit == "SECOND" || l.ToUnit == "MINUTE" || l.ToUnit == "HOUR"):
		d, rest, _ := strings.Cut(v, " ")
		iv.Days = int32Of(num(d))
		parts := strings.Split(rest, ":")
		mult := []int64{3600e9, 60e9, 1e9}
		for i, p := range parts {
			if i >= 3 || p == "" {
				break
			}
			if i == 2 {
				iv.Nanoseconds = plus(iv.Nanoseconds, seconds(p))
				continue
			}
			iv.Nanoseconds = plus(iv.Nanoseconds, times(num(p), mult[i]))
		}
	default:
		bad()
	}
	if neg {
		iv.Months, iv.Days, iv.Nanoseconds = -iv.Months, -iv.Days, -iv.Nanoseconds
	}
	return &Const{Value: scalar.NewMonthDayNanoIntervalScalar(iv)}
}

// constExpr binds and folds an expression that must be constant, cast to
// typ (nil: of its own type).
func (b *binder) constExpr(e sql.Expr, typ arrow.DataType) *Const {
	var n Node
	x := b.bindScalar(e, &scope{}, &n, exprOpts{hint: typ, noAgg: "a constant"})
	if n != nil {
		b.fail(e.Position(), "expected a constant, found a subquery")
	}
	if typ != nil {
		x = b.castTo(x, typ, e.Position())
	}
	f, err := foldExpr(b.ctx, x, nil)
	if err != nil {
		b.fail(e.Position(), "%s", cleanErr(err))
	}
	c, ok := f.(*Const)
	if !ok {
		b.fail(e.Position(), "expected a constant, found %s", sql.Format(e))
	}
	return c
}

// ---- helpers

func boolScalar(v bool) scalar.Scalar     { return scalar.NewBooleanScalar(v) }
func stringScalar(v string) scalar.Scalar { return scalar.NewStringScalar(v) }
func nullOf(t arrow.DataType) Expr        { return &Const{Value: scalar.MakeNullScalar(t)} }

// notTrue is NOT COALESCE(p, FALSE): rows where p is false or NULL.
func notTrue(p Expr) Expr {
	return &Call{Fn: "not", Typ: boolType, Args: []Expr{
		&Call{Fn: "coalesce", Typ: boolType, Args: []Expr{p, &Const{Value: boolScalar(false)}}},
	}}
}

func commonType(a, b arrow.DataType) (arrow.DataType, bool) {
	if a == nil {
		return b, b != nil
	}
	return exec.CommonType(a, b)
}

func parseInt64(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

func timestampOf(c *Const) (time.Time, bool) {
	ts, ok := c.Value.(*scalar.Timestamp)
	if !ok || !ts.Valid {
		return time.Time{}, false
	}
	unit := ts.Type.(*arrow.TimestampType).Unit
	return ts.Value.ToTime(unit), true
}

// exprKey identifies an expression structurally (columns by ID), for
// matching GROUP BY and ORDER BY expressions.
func exprKey(e Expr) string {
	switch x := e.(type) {
	case *ColRef:
		return "#" + strconv.Itoa(int(x.ID))
	case *Const:
		return x.Value.DataType().String() + ":" + constString(x.Value)
	case *ParamRef:
		return "$" + strconv.Itoa(x.Index)
	case *Call:
		s := make([]string, len(x.Args))
		for i, a := range x.Args {
			s[i] = exprKey(a)
		}
		return x.Fn + "(" + strings.Join(s, ",") + ")"
	case *Cast:
		return "cast(" + exprKey(x.X) + "," + x.Typ.String() + ")"
	case *Case:
		var sb strings.Builder
		sb.WriteString("case(")
		for _, w := range x.Whens {
			sb.WriteString(exprKey(w.Cond) + "," + exprKey(w.Then) + ",")
		}
		if x.Else != nil {
			sb.WriteString(exprKey(x.Else))
		}
		return sb.String() + ")"
	case *In:
		s := make([]string, len(x.List))
		for i, a := range x.List {
			s[i] = exprKey(a)
		}
		return "in(" + exprKey(x.X) + "," + strings.Join(s, ",") + ")"
	}
	return fmt.Sprintf("%T", e)
}

// volatile functions are evaluated per execution, never folded.
var volatile = map[string]bool{"proctime": true, "current_date": true, "current_timestamp": true, "current_time": true, "now": true, "localtimestamp": true, "rand": true, "random": true, "rand_integer": true, "uuid": true}

// jsonConstructors stay calls: JSON_OBJECT and JSON_ARRAY insert a nested
// constructor's result as JSON, and exec tells it by the call, which a
// folded string would hide.
var jsonConstructors = map[string]bool{"json_object": true, "json_object_absent_on_null": true, "json_array": true, "json_array_null_on_null": true}

// maxFoldedBytes bounds the values folding puts into one statement's plan,
// where no query budget counts them: each call's value is bounded alone
// (vectorized.MaxComputedString), but twelve REPEAT('x', 60000000) in one
// SELECT took 720 MB and 3.4 s to bind, and a statement can name thousands.
// Past it the calls stay in the plan, computed at run time within the
// statement's working memory (exec.Working).
const maxFoldedBytes = 64 << 20

// foldExpr evaluates constant subexpressions at plan time; folded, if not
// nil, counts the bytes of the values it folds, at most maxFoldedBytes.
func foldExpr(ctx context.Context, e Expr, folded *int64) (Expr, error) {
	var ferr error
	out := mapExpr(e, func(x Expr) Expr {
		if ferr != nil {
			return x
		}
		switch y := x.(type) {
		case *Call:
			if volatile[y.Fn] || jsonConstructors[y.Fn] {
				return x
			}
			if s, ok := simplifyLogic(y); ok {
				return s
			}
		case *Cast, *Case, *In:
		default:
			return x
		}
		for _, c := range children(x) {
			if _, ok := c.(*Const); !ok {
				return x
			}
		}
		if c, ok := x.(*Call); ok && c.Fn == "row" {
			// Built directly: evaluated, a ROW d deep costs d^2 (arrow-go
			// makes a struct array's descendants again at each level), so
			// folding d nested ROWs cost d^3: 300 deep took 5.8 s to plan.
			vals := make([]scalar.Scalar, len(c.Args))
			for i, a := range c.Args {
				vals[i] = a.(*Const).Value
			}
			return &Const{Value: scalar.NewStructScalar(vals, c.Typ)}
		}
		if folded != nil && *folded >= maxFoldedBytes {
			return x
		}
		v, err := evalConst(ctx, x)
		if err != nil {
			ferr = err
			return x
		}
		if folded != nil {
			if n := scalarBytes(v); *folded+n <= maxFoldedBytes {
				*folded += n
			} else {
				*folded = maxFoldedBytes // and fold no more: each try computes
				return x
			}
		}
		return &Const{Value: v}
	})
	return out, ferr
}

// simplifyLogic folds AND and OR with one constant TRUE or FALSE side:
// FALSE AND x is FALSE and TRUE OR x is TRUE whatever x is (NULL
// included); TRUE AND x and FALSE OR x are x.
func simplifyLogic(c *Call) (Expr, bool) {
	if c.Fn != "and" && c.Fn != "or" {
		return nil, false
	}
	dominant := c.Fn == "or" // the value that decides alone
	for i, a := range c.Args {
		k, ok := a.(*Const)
		if !ok || !k.Value.IsValid() {
			continue
		}
		v, ok := k.Value.(*scalar.Boolean)
		if !ok {
			continue
		}
		if v.Value == dominant {
			return k, true
		}
		return c.Args[1-i], true
	}
	return nil, false
}

// evalConst evaluates a constant expression on a one-row, zero-column batch.
// The allocator is local: the value is copied into a scalar that outlives
// no buffer accounting of any query.
// scalarBytes is about the memory of a constant's value: its bytes for a
// string or binary, its array's for a list or map, its fields' for a row.
func scalarBytes(v scalar.Scalar) int64 {
	switch x := v.(type) {
	case scalar.BinaryScalar:
		if x.IsValid() {
			return int64(len(x.Data()))
		}
	case scalar.ListScalar:
		if x.IsValid() {
			return arrowshare.WholeBytes(x.GetList().Data())
		}
	case *scalar.Struct:
		var n int64
		for _, f := range x.Value {
			n += scalarBytes(f)
		}
		return n
	}
	return 16
}

func evalConst(ctx context.Context, e Expr) (scalar.Scalar, error) {
	mem := memory.NewGoAllocator()
	x, err := compile(e, layout{}, nil)
	if err != nil {
		return nil, err
	}
	batch := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer batch.Release()
	ec := exec.NewContext(mem)
	arr, err := x.Eval(ctx, ec, batch)
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	return scalar.GetScalar(arr, 0)
}

func resolveAggregate(fn string, types []arrow.DataType) (arrow.DataType, error) {
	t, err := exec.ResolveAggregate(fn, types)
	if err != nil {
		return nil, fmt.Errorf("%s", cleanErr(err))
	}
	return t, nil
}

func resolveWindow(fn string, types []arrow.DataType) (arrow.DataType, error) {
	t, err := exec.ResolveWindow(fn, types)
	if err != nil {
		return nil, fmt.Errorf("%s", cleanErr(err))
	}
	return t, nil
}
