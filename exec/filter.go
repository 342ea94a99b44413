package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/vectorized"
)

// filterOp keeps the rows where its predicate is true, evaluated as a
// predicate: the operands of ANDs and ORs run only on the rows the earlier
// ones leave undecided. Rows come out in input order.
type filterOp struct {
	ec    *Context
	child Operator
	pred  *predicate
	cur   current
}

// NewFilter keeps the rows where pred is true (not false, not NULL).
func NewFilter(ec *Context, child Operator, pred Expr) Operator {
	return &filterOp{ec: ec, child: child, pred: newPredicate(pred)}
}

func (f *filterOp) Schema() *arrow.Schema          { return f.child.Schema() }
func (f *filterOp) Open(ctx context.Context) error { return f.child.Open(ctx) }

func (f *filterOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		b, err := Next(ctx, f.child)
		if err != nil {
			return nil, err
		}
		mask, cnt, err := f.pred.mask(ctx, f.ec, b)
		if err != nil {
			return nil, err
		}
		if cnt == 0 {
			mask.Release()
			continue
		}
		out, err := vectorized.FilterMask(ctx, f.ec.Mem, b, mask, cnt)
		mask.Release()
		if err != nil {
			return nil, err
		}
		return f.cur.set(out), nil
	}
}

func (f *filterOp) Close() error {
	f.cur.release()
	return f.child.Close()
}
