package plan

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/stream"
)

// OVER aggregations over a stream (Flink's over aggregation): aggregates
// OVER (PARTITION BY ... ORDER BY the WATERMARK column ROWS or RANGE
// from n or UNBOUNDED PRECEDING to CURRENT ROW), over an input that only
// inserts. Each row is emitted once, when the watermark passes its event
// time (stream.OverAggregate).

// sOver is an OVER aggregation; cs are its input's columns, then the
// aggregates'.
type sOver struct {
	in      sNode
	w       *WindowNode
	rowtime ColumnID
	frames  []stream.OverFrame
	relies  []string
	cs      []Column
}

func (s *sOver) cols() []Column { return s.cs }

// rankFuncs are the window functions a streaming top-N numbers rows by.
var rankFuncs = map[string]stream.RankFunc{"row_number": stream.RowNumber, "rank": stream.RankNumber, "dense_rank": stream.DenseRank}

// isRankWindow reports whether w is one ranking function (a top-N when
// filtered), not OVER aggregates.
func isRankWindow(w *WindowNode) bool {
	if len(w.Funcs) != 1 {
		return false
	}
	_, ok := rankFuncs[w.Funcs[0].Fn]
	return ok
}

// overShape is the OVER aggregation a streaming query maintains.
const overShape = "aggregates OVER (PARTITION BY ... ORDER BY <the WATERMARK column> [ROWS|RANGE BETWEEN n|UNBOUNDED PRECEDING AND CURRENT ROW])"

// planOver plans w's aggregates as an OVER aggregation.
func (p *streamPlanner) planOver(w *WindowNode) sNode {
	for _, f := range w.Funcs {
		if windowOnly[f.Fn] {
			p.refuse("%s OVER (...) is not supported yet: only %s, or %s", f.Fn, overShape, rankShape)
		}
	}
	in := p.plan(w.Input)
	p.stateful, p.eventTime = true, true
	if p.what == "" {
		p.what = "an OVER aggregation"
	}
	if len(w.OrderBy) != 1 {
		p.refuse("an OVER aggregation over a stream must be ordered by one column, its table's WATERMARK column (event time), ascending, as Flink requires")
	}
	k := w.OrderBy[0]
	r, ok := k.Expr.(*ColRef)
	if !ok || !p.rowtimes[r.ID] || k.Desc {
		p.refuse("an OVER aggregation over a stream must be ordered by its table's WATERMARK column (event time) ascending, as Flink requires, not by %s (processing time is not supported yet)", sortKeysString(w.OrderBy))
	}
	for _, e := range w.PartitionBy {
		p.checkKind(e)
	}
	s := &sOver{in: in, w: w, rowtime: r.ID, cs: append([]Column(nil), in.cols()...)}
	for _, f := range w.Funcs {
		p.checkKind(f.Args...)
		a := AggCall{Fn: f.Fn, Args: f.Args, Col: f.Col}
		if why := streamAggSupported(a); why != "" {
			p.refuse("%s: %s", aggString(a), why)
		}
		s.frames = append(s.frames, p.overFrame(f, k.Expr.Type()))
		s.cs = append(s.cs, f.Col)
	}
	var insertOnly bool
	if s.relies, insertOnly = insertOnlySources(in); !insertOnly {
		p.refuse("an OVER aggregation over a stream needs an input that only inserts (an append table, a window aggregation or join, as Flink's): this one updates or deletes rows (a primary-key table, an aggregation, a top-N, an outer join)")
	}
	return s
}

// overFrame reads f's frame (nil: RANGE UNBOUNDED PRECEDING to CURRENT
// ROW), RANGE offsets in microseconds of the event time (of type tt).
func (p *streamPlanner) overFrame(f WindowFunc, tt arrow.DataType) stream.OverFrame {
	fr := f.Frame
	if fr == nil {
		return stream.OverFrame{Unbounded: true}
	}
	if fr.End.Kind != exec.CurrentRow {
		p.refuse("the frame of %s ends after or before the current row: an OVER aggregation over a stream ends its frames at CURRENT ROW, as Flink's", f.Col.Name)
	}
	out := stream.OverFrame{Rows: fr.Rows}
	switch fr.Start.Kind {
	case exec.UnboundedPreceding:
		out.Unbounded = true
	case exec.Preceding:
		out.Preceding = fr.Start.Offset
	case exec.CurrentRow:
	default:
		p.refuse("the frame of %s starts after the current row", f.Col.Name)
	}
	if !out.Rows && !out.Unbounded {
		// The offset is in units of the event time's type.
		per := int64(tt.(*arrow.TimestampType).Unit.Multiplier()) // nanoseconds
		switch {
		case per >= 1000 && out.Preceding > math.MaxInt64/4/(per/1000):
			out.Unbounded = true // past every event time
		case per >= 1000:
			out.Preceding *= per / 1000
		default:
			out.Preceding /= 1000 // a nanosecond key: whole microseconds reach as far
		}
	}
	return out
}

// over builds an OVER aggregation.
func (sb *streamBuilder) over(x *sOver, in stream.Operator) (stream.Operator, error) {
	lay := sb.layout(x.in.cols())
	spec := stream.OverSpec{Frames: x.frames, Sources: strings.Join(x.relies, ", ")}
	var err error
	if spec.Partition, err = compileAll(x.w.PartitionBy, lay, sb.params); err != nil {
		return nil, err
	}
	if spec.Rowtime, err = compile(x.w.OrderBy[0].Expr, lay, sb.params); err != nil {
		return nil, err
	}
	calls := make([]AggCall, len(x.w.Funcs))
	for i, f := range x.w.Funcs {
		calls[i] = AggCall{Fn: f.Fn, Args: f.Args, Col: f.Col}
	}
	if spec.Aggs, err = sb.aggSpecs(calls, lay); err != nil {
		return nil, err
	}
	return stream.NewOverAggregate(sb.ec, in, spec, sb.budget)
}

// overString renders an OVER aggregation for EXPLAIN.
func overString(x *sOver) string {
	f := make([]string, len(x.w.Funcs))
	for i, fn := range x.w.Funcs {
		fr := x.frames[i]
		unit, from := "RANGE", "UNBOUNDED"
		if fr.Rows {
			unit = "ROWS"
		}
		switch {
		case fr.Unbounded:
		case fr.Rows:
			from = fmt.Sprint(fr.Preceding)
		default:
			from = fmt.Sprint(time.Duration(fr.Preceding) * time.Microsecond)
		}
		f[i] = fmt.Sprintf("%s(%s) %s %s PRECEDING AS %s", fn.Fn, exprList(fn.Args), unit, from, fn.Col.Name)
	}
	s := "OverAggregate " + strings.Join(f, ", ")
	if len(x.w.PartitionBy) > 0 {
		s += " partition: " + exprList(x.w.PartitionBy)
	}
	return s + " order: " + sortKeysString(x.w.OrderBy)
}
