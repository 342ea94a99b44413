package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/stream"
)

// CURRENT_WATERMARK(rowtime), Flink's function: the watermark of the
// input where it is evaluated, NULL before the first; NULL in batch
// queries, which have no watermark (as in Flink's batch mode). In a
// streaming query it may appear in filters and projections over streams
// whose argument is a table's WATERMARK column: the planner puts below
// them an operator appending the input's watermark as a column
// (stream.WatermarkColumn) and reads that.

// bindCurrentWatermark binds CURRENT_WATERMARK(args).
func (b *binder) bindCurrentWatermark(e *sql.FuncCall, args []Expr) Expr {
	if len(args) != 1 {
		b.fail(e.Pos, "CURRENT_WATERMARK takes 1 argument (a rowtime attribute), got %d", len(args))
	}
	typ, ok := args[0].Type().(*arrow.TimestampType)
	if !ok {
		b.fail(e.Pos, "CURRENT_WATERMARK takes a rowtime attribute (a timestamp), not %s", SQLTypeName(args[0].Type()))
	}
	if b.streamPos == nil {
		return &Const{Value: scalar.MakeNullScalar(typ)}
	}
	return &Call{Fn: "current_watermark", Args: args, Typ: typ, Pos: e.Pos}
}

// isCurrentWatermark reports whether e is a CURRENT_WATERMARK call.
func isCurrentWatermark(e Expr) bool {
	c, ok := e.(*Call)
	return ok && c.Fn == "current_watermark"
}

// watermarkCall is the first CURRENT_WATERMARK call in exprs, or nil.
func watermarkCall(exprs ...Expr) *Call {
	var call *Call
	for _, e := range exprs {
		walkExpr(e, func(x Expr) {
			if isCurrentWatermark(x) && call == nil {
				call = x.(*Call)
			}
		})
	}
	return call
}

// sWatermarkCol appends the watermark of in as column col.
type sWatermarkCol struct {
	in  sNode
	col Column
}

func (s *sWatermarkCol) cols() []Column { return append(append([]Column{}, s.in.cols()...), s.col) }

// withWatermark gives in and exprs, over in, as they read CURRENT_WATERMARK:
// when they call it, in with the watermark column appended and the calls
// reading it; unchanged otherwise.
func (p *streamPlanner) withWatermark(in sNode, exprs []Expr) (sNode, []Expr) {
	call := watermarkCall(exprs...)
	if call == nil {
		return in, exprs
	}
	w := &sWatermarkCol{in: in, col: p.b.newCol("current_watermark", call.Typ, true)}
	out := make([]Expr, len(exprs))
	for i, e := range exprs {
		out[i] = mapExpr(e, func(x Expr) Expr {
			if !isCurrentWatermark(x) {
				return x
			}
			if r, ok := x.(*Call).Args[0].(*ColRef); !ok || !p.rowtimes[r.ID] {
				p.refuse("%s: the argument of CURRENT_WATERMARK must be the WATERMARK column of a streamed table, passed on unchanged", x)
			}
			return colRef(w.col)
		})
	}
	p.eventTime = true
	return w, out
}

// filter is in filtered by pred, through a watermark column (dropped
// after the filter) when pred reads CURRENT_WATERMARK.
func (p *streamPlanner) filter(in sNode, pred Expr) sNode {
	w, preds := p.withWatermark(in, []Expr{pred})
	if w == in {
		return &sFilter{in: in, pred: pred}
	}
	pr := &sProject{in: &sFilter{in: w, pred: preds[0]}, cs: in.cols()}
	for _, c := range pr.cs {
		pr.exprs = append(pr.exprs, colRef(c))
	}
	return pr
}

// watermarkColumn builds x.
func (sb *streamBuilder) watermarkColumn(x *sWatermarkCol) (stream.Operator, error) {
	in, err := sb.build(x.in)
	if err != nil {
		return nil, err
	}
	return stream.NewWatermarkColumn(sb.ec, in, x.col.Name, x.col.Type.(*arrow.TimestampType)), nil
}

// checkWatermarkCalls refuses CURRENT_WATERMARK in n but for filters and
// projections, the operators that can read their input's watermark.
func (p *streamPlanner) checkWatermarkCalls(n Node) {
	switch n.(type) {
	case *FilterNode, *ProjectNode, *ScanNode:
	default:
		if c := watermarkCall(nodeExprs(n)...); c != nil {
			p.refuse("%s: CURRENT_WATERMARK is supported in filters and projections (WHERE, the select list) only, not in aggregates, join conditions or window functions", c)
		}
	}
	for _, in := range n.Inputs() {
		p.checkWatermarkCalls(in)
	}
}
