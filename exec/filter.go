package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/vectorized"
)

// filterOp keeps the rows where its predicate is true. A predicate that is
// an AND evaluates its conjuncts one after another, each only on the rows
// the earlier ones kept: after a conjunct that keeps at most half of the
// rows, the batch is narrowed to those rows and to the columns the later
// conjuncts read. Rows come out as without narrowing, in input order. A
// conjunct fails only on rows every earlier conjunct kept: when it fails on
// a batch that was not narrowed, it runs again on the kept rows alone.
type filterOp struct {
	ec    *Context
	child Operator
	conj  []Expr // the predicate's conjuncts, over the input
	// After narrowing, conjunct k >= 1 is narrowConj[k-1], over the input
	// columns cols (schema narrow). nil when a conjunct reads through an
	// expression remapColumns does not know: then nothing is narrowed.
	cols       []int
	narrow     *arrow.Schema
	narrowConj []Expr
	rows       []int32 // scratch: the input row of each narrowed row
	sel        []int32 // scratch for keepRows
	cur        current
}

// NewFilter keeps the rows where pred is true (not false, not NULL).
func NewFilter(ec *Context, child Operator, pred Expr) Operator {
	f := &filterOp{ec: ec, child: child, conj: conjuncts(pred, nil)}
	if len(f.conj) > 1 {
		// Later conjuncts that read no column (constants) keep the whole
		// batch: a batch of no columns would lose its row count.
		if cols, narrow, nes, ok := narrowExprs(child.Schema(), f.conj[1:]...); ok && len(cols) > 0 {
			f.cols, f.narrow, f.narrowConj = cols, narrow, nes
		}
	}
	return f
}

// conjuncts appends the operands of e's top-level ANDs to dst, in order.
func conjuncts(e Expr, dst []Expr) []Expr {
	if c, ok := e.(*CallExpr); ok && c.Name == "and" && len(c.Args) == 2 {
		return conjuncts(c.Args[1], conjuncts(c.Args[0], dst))
	}
	return append(dst, e)
}

func (f *filterOp) Schema() *arrow.Schema          { return f.child.Schema() }
func (f *filterOp) Open(ctx context.Context) error { return f.child.Open(ctx) }

func (f *filterOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		b, err := Next(ctx, f.child)
		if err != nil {
			return nil, err
		}
		out, err := f.filter(ctx, b)
		if err != nil {
			return nil, err
		}
		if out != nil {
			return f.cur.set(out), nil
		}
	}
}

// filter returns the rows of b the predicate keeps, or nil if none.
func (f *filterOp) filter(ctx context.Context, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	mem := f.ec.Mem
	// sub is the batch conjunct k runs on: b, or once narrowed the kept
	// rows of b's columns f.cols (f.rows maps them back to b). keep is the
	// mask of sub's rows that every conjunct so far holds for, cnt their
	// count (keep nil: every row).
	sub := b
	sub.Retain()
	var keep arrow.Array
	cnt := 0
	defer func() {
		sub.Release()
		if keep != nil {
			keep.Release()
		}
	}()
	narrowed := false
	narrow := func() error {
		var next arrow.RecordBatch
		var err error
		if narrowed {
			f.rows, f.sel = keepRows(f.rows, keep, f.sel)
			next, err = vectorized.FilterMask(ctx, mem, sub, keep, cnt)
		} else {
			f.rows = vectorized.MaskRows(keep, f.rows[:0])
			cols := vectorized.SelectColumns(b, f.narrow, f.cols)
			next, err = vectorized.FilterMask(ctx, mem, cols, keep, cnt)
			cols.Release()
		}
		if err != nil {
			return err
		}
		sub.Release()
		sub, narrowed = next, true
		keep.Release()
		keep = nil
		return nil
	}
	for k := 0; k < len(f.conj); k++ {
		e := f.conj[k]
		if narrowed {
			e = f.narrowConj[k-1]
		}
		m, c, err := trueMask(ctx, f.ec, e, sub)
		if err != nil {
			// The failing rows may be ones earlier conjuncts removed:
			// evaluate again on the kept rows alone.
			if keep == nil || cnt == int(sub.NumRows()) || f.narrowConj == nil || ctx.Err() != nil {
				return nil, err
			}
			if err := narrow(); err != nil {
				return nil, err
			}
			k--
			continue
		}
		if keep != nil {
			m2, c2 := vectorized.AndMasks(mem, keep, m)
			m.Release()
			keep.Release()
			m, c = m2, c2
		}
		keep, cnt = m, c
		if cnt == 0 {
			return nil, nil
		}
		// After a selective conjunct, carry on with the kept rows alone.
		if k < len(f.conj)-1 && f.narrowConj != nil && 2*cnt <= int(sub.NumRows()) {
			if err := narrow(); err != nil {
				return nil, err
			}
		}
	}
	if !narrowed {
		return vectorized.FilterMask(ctx, mem, b, keep, cnt)
	}
	if keep != nil {
		f.rows, f.sel = keepRows(f.rows, keep, f.sel)
	}
	full := vectorized.RowsMask(mem, int(b.NumRows()), f.rows)
	defer full.Release()
	return vectorized.FilterMask(ctx, mem, b, full, len(f.rows))
}

// keepRows keeps the entries of rows that mask selects; sel is scratch
// space, returned for reuse.
func keepRows(rows []int32, mask arrow.Array, sel []int32) ([]int32, []int32) {
	sel = vectorized.MaskRows(mask, sel[:0])
	for i, r := range sel {
		rows[i] = rows[r]
	}
	return rows[:len(sel)], sel
}

// trueMask evaluates the boolean predicate e over b: the mask of the rows
// where it is true, and their count.
func trueMask(ctx context.Context, ec *Context, e Expr, b arrow.RecordBatch) (arrow.Array, int, error) {
	a, err := evalOne(ctx, ec, e, b)
	if err != nil {
		return nil, 0, err
	}
	defer a.Release()
	if a.DataType().ID() != arrow.BOOL {
		return nil, 0, fmt.Errorf("%w: predicate %s has type %s, not boolean", ErrInvalid, e, a.DataType())
	}
	m, n := vectorized.TrueBits(ec.Mem, a)
	return m, n, nil
}

func (f *filterOp) Close() error {
	f.cur.release()
	return f.child.Close()
}
