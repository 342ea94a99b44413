package plan

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/stream"
)

// Interval joins: an inner or outer join of streams whose condition
// bounds one side's event time by the other's, l.t BETWEEN r.t + lower
// AND r.t + upper (or the two comparisons with >= and <=), both t the
// WATERMARK columns of their tables, with at least one equality key (an
// outer one with no other condition: the operator decides the padding by
// the keys and bounds alone). Its state expires by watermark
// (stream.IntervalJoin); any other join of streams is a regular join.

// sIntervalJoin is an interval join; cs are its columns without row kinds.
type sIntervalJoin struct {
	l, r         sNode
	n            *JoinNode
	lt, rt       ColumnID // the event time columns
	lower, upper time.Duration
	cs           []Column
}

func (s *sIntervalJoin) cols() []Column { return s.cs }

// markRowtime records the event time columns of a stream scan's table
// that a scan or the projection of its computed columns outputs.
func (p *streamPlanner) markRowtime(n Node) {
	scan := streamScanOf(n)
	if scan == nil {
		return
	}
	_, wm := tableComputed(scan.Table.Options())
	if wm == nil {
		return
	}
	if n == Node(scan) {
		for i, name := range scan.Names {
			if name == wm.rowtime {
				p.rowtimes[scan.Cols[i].ID] = true
			}
		}
		return
	}
	x := n.(*ProjectNode)
	def := p.watermarkOf(scan).rowtime.String()
	for i, e := range x.Exprs {
		if x.Cols[i].Name == wm.rowtime && e.String() == def {
			p.rowtimes[x.Cols[i].ID] = true
		}
	}
}

// timeOffset reads e as column + constant day-time interval
// (microseconds).
func timeOffset(e Expr) (ColumnID, int64, bool) {
	switch x := e.(type) {
	case *ColRef:
		return x.ID, 0, true
	case *Cast:
		return timeOffset(x.X)
	case *Call:
		if (x.Fn != "add" && x.Fn != "subtract") || len(x.Args) != 2 {
			return 0, 0, false
		}
		id, off, ok := timeOffset(x.Args[0])
		c, isConst := x.Args[1].(*Const)
		if !ok || !isConst {
			return 0, 0, false
		}
		iv, isIv := c.Value.(*scalar.MonthDayNanoInterval)
		if !isIv || !iv.IsValid() || iv.Value.Months != 0 {
			return 0, 0, false
		}
		d, ok := intervalMicros(iv.Value)
		if !ok {
			return 0, 0, false
		}
		if x.Fn == "subtract" {
			d = -d
		}
		return id, off + d, true
	}
	return 0, 0, false
}

// planIntervalJoin returns the interval join of x, or nil when x is not
// one.
func (p *streamPlanner) planIntervalJoin(x *JoinNode, l, r sNode) *sIntervalJoin {
	switch x.Kind {
	case InnerJoin, LeftJoin, RightJoin, FullJoin:
	default:
		return nil
	}
	if len(x.LeftKeys) == 0 {
		return nil
	}
	left, right := idSet(x.Left.Columns()), idSet(x.Right.Columns())
	j := &sIntervalJoin{l: l, r: r, n: x}
	var hasLower, hasUpper bool
	var lower, upper int64
	others := 0 // conjuncts that are not bounds
	for _, c := range conjuncts(x.Residual) {
		others++
		call, ok := c.(*Call)
		if !ok || len(call.Args) != 2 || (call.Fn != "greater_equal" && call.Fn != "less_equal") {
			continue
		}
		a, oa, okA := timeOffset(call.Args[0])
		b, ob, okB := timeOffset(call.Args[1])
		if !okA || !okB || !p.rowtimes[a] || !p.rowtimes[b] {
			continue
		}
		ge := call.Fn == "greater_equal"
		if right[a] && left[b] { // a + oa >= b + ob is b + ob <= a + oa
			a, b, oa, ob, ge = b, a, ob, oa, !ge
		}
		if !left[a] || !right[b] || j.lt != 0 && (j.lt != a || j.rt != b) {
			continue
		}
		j.lt, j.rt = a, b
		others--
		// l + oa >= r + ob: l >= r + (ob - oa); <=: l <= r + (ob - oa).
		if d := ob - oa; ge && (!hasLower || d > lower) {
			lower, hasLower = d, true
		} else if !ge && (!hasUpper || d < upper) {
			upper, hasUpper = d, true
		}
	}
	if !hasLower || !hasUpper || x.Kind != InnerJoin && others > 0 {
		return nil
	}
	if lower > upper {
		p.refuse("interval join: the lower bound %s is above the upper bound %s", time.Duration(lower)*time.Microsecond, time.Duration(upper)*time.Microsecond)
	}
	j.lower, j.upper = time.Duration(lower)*time.Microsecond, time.Duration(upper)*time.Microsecond
	for _, c := range x.Columns() {
		if !p.kinds[c.ID] {
			j.cs = append(j.cs, c)
		}
	}
	p.eventTime = true
	return j
}

// intervalJoin builds an interval join and, for an inner join, the filter
// of its whole condition beyond the keys (the bounds included: an inner
// join may filter after joining; an outer one has only the bounds, which
// it applies itself).
func (sb *streamBuilder) intervalJoin(x *sIntervalJoin, l, r stream.Operator) (stream.Operator, error) {
	n := x.n
	spec := stream.IntervalSpec{Kind: exec.JoinType(n.Kind), Lower: x.lower, Upper: x.upper}
	var err error
	lc, rc := x.l.cols(), x.r.cols()
	if spec.LeftKeys, err = compileAll(n.LeftKeys, sb.layout(lc), sb.params); err != nil {
		return nil, err
	}
	if spec.RightKeys, err = compileAll(n.RightKeys, sb.layout(rc), sb.params); err != nil {
		return nil, err
	}
	if spec.LeftTime, err = compile(&ColRef{ID: x.lt, Typ: colType(lc, x.lt)}, sb.layout(lc), sb.params); err != nil {
		return nil, err
	}
	if spec.RightTime, err = compile(&ColRef{ID: x.rt, Typ: colType(rc, x.rt)}, sb.layout(rc), sb.params); err != nil {
		return nil, err
	}
	if n.Kind != InnerJoin {
		return stream.NewIntervalJoin(sb.ec, l, r, spec, sb.budget)
	}
	// Tracked here: build tracks the filter above it, which keeps nothing.
	j, err := sb.track(stream.NewIntervalJoin(sb.ec, l, r, spec, sb.budget))
	if err != nil {
		return nil, err
	}
	pred, err := sb.compile(n.Residual, concatCols(lc, rc))
	if err != nil {
		_ = j.Close()
		return nil, err
	}
	return stream.NewFilter(sb.ec, j, pred), nil
}

func colType(cols []Column, id ColumnID) arrow.DataType {
	for _, c := range cols {
		if c.ID == id {
			return c.Type
		}
	}
	return nil
}

// intervalString renders an interval join's bounds.
func intervalString(x *sIntervalJoin) string {
	return fmt.Sprintf("right time %s and %s", x.lower, x.upper)
}
