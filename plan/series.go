package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/vectorized"
)

// stateInvalidParameter is SQLSTATE invalid_parameter_value (Postgres's
// for generate_series with a zero step).
const stateInvalidParameter = "22023"

// SeriesNode is range(...) or generate_series(...): a column of integers
// or timestamps counted from a start to a stop.
type SeriesNode struct {
	Series exec.Series
	// Args, when some arguments are parameters, are all of them (constants
	// and parameters, BIGINT): the bounds are read when the statement runs.
	Args []Expr
	Cols []Column
}

func (n *SeriesNode) Columns() []Column { return n.Cols }
func (n *SeriesNode) Inputs() []Node    { return nil }

// Rows is the series' length for integers, a guess for timestamps.
func (n *SeriesNode) Rows() float64 {
	s := n.Series
	if s.Type.ID() != arrow.INT64 || n.Args != nil {
		return 1000
	}
	// In float64: the distance between two int64s may not fit one.
	return max(0, (float64(s.Stop)-float64(s.Start))/float64(s.Step)) + 1
}

func (n *SeriesNode) explain() string {
	s := n.Series
	bound := "<"
	if s.Inclusive {
		bound = "<="
	}
	if up, _ := s.Ascending(); !up {
		bound = strings.Replace(bound, "<", ">", 1)
	}
	step := fmt.Sprint(s.Step)
	if s.Type.ID() != arrow.INT64 {
		step = scalar.NewMonthDayNanoIntervalScalar(s.Interval).String()
	}
	if n.Args != nil {
		args := make([]string, len(n.Args))
		for i, a := range n.Args {
			args[i] = fmt.Sprint(a)
		}
		return fmt.Sprintf("Series of (%s) inclusive=%t [%s]", strings.Join(args, ", "), s.Inclusive, colNames(n.Cols))
	}
	return fmt.Sprintf("Series from %d %s %d step %s [%s]", s.Start, bound, s.Stop, step, colNames(n.Cols))
}

// isSeriesFunc reports whether a table function is range or
// generate_series.
func isSeriesFunc(name string) bool { return name == "range" || name == "generate_series" }

// bindSeries binds range([start,] stop [, step]) and generate_series, as
// DuckDB has them: range stops before stop, generate_series at it; start
// defaults to 0 and step to 1. Over timestamps (or dates, read as
// timestamps) the step is an interval and start and stop are required.
// The arguments must be constants or parameters (then the series counts
// integers); a NULL one makes no rows, as in Postgres. The column is named after the function, or after the alias
// when no column alias is given (Postgres: `generate_series(1, 3) AS g`
// has column g).
func (b *binder) bindSeries(f *sql.TableFunc) (Node, *scope) {
	call := f.Call
	name := call.Name
	args := call.Args
	if len(args) == 0 || len(args) > 3 {
		b.fail(call.Pos, "%s takes 1 to 3 arguments ([start,] stop [, step]), got %d", name, len(args))
	}
	for _, a := range args {
		sql.Walk(a, func(n sql.Node) bool {
			switch n.(type) {
			case *sql.Ident, *sql.Subquery, *sql.NamedArg:
				b.notImplemented(a.Position(), name+" over columns, subqueries or named arguments (its arguments must be constants or parameters)")
			}
			return true
		})
	}
	s := exec.Series{Type: arrow.PrimitiveTypes.Int64, Inclusive: name == "generate_series", Step: 1}
	var params []Expr
	vals := make([]*Const, len(args))
	if slices.ContainsFunc(args, isParam) {
		params = b.seriesParams(f)
	} else {
		for i, a := range args {
			vals[i] = b.constExpr(a, nil)
		}
		first := vals[0].Value.DataType()
		switch {
		case vectorized.IsInteger(first) || first.ID() == arrow.NULL:
			b.seriesInts(f, vals, &s)
		case first.ID() == arrow.TIMESTAMP || first.ID() == arrow.DATE32:
			b.seriesTimes(f, vals, &s)
		default:
			b.failState(stateDatatypeMismatch, args[0].Position(), "%s counts integers or timestamps, not %s", name, SQLTypeName(first))
		}
	}
	col := b.newCol(name, s.Type, false)
	if f.Alias != "" && f.ColAliases == nil {
		col.Name = f.Alias
	}
	qual := f.Alias
	if qual == "" {
		qual = name
	}
	var n Node = &SeriesNode{Series: s, Args: params, Cols: []Column{col}}
	for _, v := range vals {
		if v != nil && !v.Value.IsValid() {
			n = &ValuesNode{Cols: n.Columns()}
		}
	}
	return n, b.aliasScope(n, qual, f.ColAliases, f.Pos)
}

func isParam(e sql.Expr) bool {
	_, ok := e.(*sql.Param)
	return ok
}

// seriesParams binds range's arguments when some are parameters: the
// series counts integers, and the constants must be integers too.
func (b *binder) seriesParams(f *sql.TableFunc) []Expr {
	out := make([]Expr, len(f.Call.Args))
	for i, a := range f.Call.Args {
		if p, ok := a.(*sql.Param); ok {
			out[i] = b.intParam(p)
			continue
		}
		out[i] = b.seriesInt(f, i, b.constExpr(a, nil))
	}
	return out
}

// seriesInt checks that argument i of range over integers, v, is one, and
// returns it as a BIGINT.
func (b *binder) seriesInt(f *sql.TableFunc, i int, v *Const) *Const {
	t := v.Value.DataType()
	if !vectorized.IsInteger(t) && t.ID() != arrow.NULL {
		b.failState(stateDatatypeMismatch, f.Call.Args[i].Position(), "%s over integers takes integer arguments, got %s", f.Call.Name, SQLTypeName(t))
	}
	if !v.Value.IsValid() {
		return v
	}
	return b.constExpr(f.Call.Args[i], arrow.PrimitiveTypes.Int64)
}

// seriesInts reads range's integer arguments into s.
func (b *binder) seriesInts(f *sql.TableFunc, vals []*Const, s *exec.Series) {
	ints := make([]int64, len(vals))
	for i, v := range vals {
		if c := b.seriesInt(f, i, v); c.Value.IsValid() {
			ints[i] = c.Value.(*scalar.Int64).Value
		}
	}
	setSeriesInts(s, ints)
	if len(vals) == 3 && vals[2].Value.IsValid() {
		b.checkStep(f, *s)
	}
}

// setSeriesInts sets s from range's integer arguments ([start,] stop [,
// step]).
func setSeriesInts(s *exec.Series, ints []int64) {
	switch len(ints) {
	case 1:
		s.Stop = ints[0]
	case 3:
		s.Step = ints[2]
		fallthrough
	default:
		s.Start, s.Stop = ints[0], ints[1]
	}
}

// series is n's series, with its parameters' values when it has some; a
// NULL one makes an empty series, a zero step fails when the series is
// read.
func (bd *builder) series(n *SeriesNode) (exec.Series, error) {
	s := n.Series
	if n.Args == nil {
		return s, nil
	}
	ints := make([]int64, len(n.Args))
	for i, a := range n.Args {
		v, err := bd.int64Value(a)
		if err != nil {
			return s, err
		}
		iv, ok := v.(*scalar.Int64)
		if !ok || !iv.Valid {
			s.Start, s.Stop, s.Step, s.Inclusive = 0, 0, 1, false
			return s, nil
		}
		ints[i] = iv.Value
	}
	setSeriesInts(&s, ints)
	return s, nil
}

// seriesTimes reads range's timestamp arguments into s.
func (b *binder) seriesTimes(f *sql.TableFunc, vals []*Const, s *exec.Series) {
	call := f.Call
	if len(vals) != 3 {
		b.fail(call.Pos, "%s over timestamps takes a start, a stop and an interval step", call.Name)
	}
	// A date reads as a plain TIMESTAMP (FixedWidthTypes.Timestamp_us has
	// a UTC zone: TIMESTAMP_LTZ).
	ts := &arrow.TimestampType{Unit: arrow.Microsecond}
	if t, ok := vals[0].Value.DataType().(*arrow.TimestampType); ok {
		ts = t
	}
	s.Type = ts
	for i, p := range []*int64{&s.Start, &s.Stop} {
		c := b.constExpr(call.Args[i], ts)
		if c.Value.IsValid() {
			*p = int64(c.Value.(*scalar.Timestamp).Value)
		}
	}
	iv := vals[2].Value.DataType()
	if iv.ID() != arrow.INTERVAL_MONTH_DAY_NANO && iv.ID() != arrow.NULL {
		b.failState(stateDatatypeMismatch, call.Args[2].Position(), "%s over timestamps steps by an INTERVAL, got %s", call.Name, SQLTypeName(iv))
	}
	if v, ok := vals[2].Value.(*scalar.MonthDayNanoInterval); ok && v.IsValid() {
		s.Interval = v.Value
		b.checkStep(f, *s)
	}
}

// checkStep fails a step that goes nowhere, at bind time rather than when
// the first batch is asked for.
func (b *binder) checkStep(f *sql.TableFunc, s exec.Series) {
	if _, err := s.Ascending(); err != nil {
		b.failState(stateInvalidParameter, f.Call.Args[2].Position(), "%s: %s", f.Call.Name, cleanErr(err))
	}
}
