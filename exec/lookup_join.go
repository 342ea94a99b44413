package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/flightd/flightd/vectorized"
)

// LookupJoiner joins batches of probe rows with the rows of a primary-key
// table read by key (a lookup join): per batch, the keys of every row are
// read in one lookup. Both the batch lookup join and the streaming temporal
// join use it; it keeps no state between batches.
type LookupJoiner struct {
	ec *Context
	// keys are evaluated over a probe batch, one per key column of the
	// table, of its key types.
	keys []Expr
	// residual, over the probe's columns then the looked-up ones (nil:
	// none), decides which found rows match.
	residual *predicate
	outer    bool
	schema   *arrow.Schema // the output: the probe's columns, then the table's
	r        KeyReader
}

// NewLookupJoiner joins through r (which it closes); with outer, probe rows
// without a match keep NULLs in the table's columns (LEFT JOIN). schema is
// the output's.
func NewLookupJoiner(ec *Context, r KeyReader, keys []Expr, residual Expr, outer bool, schema *arrow.Schema) *LookupJoiner {
	j := &LookupJoiner{ec: ec, keys: keys, outer: outer, schema: schema, r: r}
	if residual != nil {
		j.residual = newPredicate(residual)
	}
	return j
}

// Join returns the joined rows of the probe batch b (nil when there are
// none), in b's order; the caller releases them.
func (j *LookupJoiner) Join(ctx context.Context, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	keys := make([]arrow.Array, 0, len(j.keys))
	defer func() {
		for _, k := range keys {
			k.Release()
		}
	}()
	for _, e := range j.keys {
		k, err := evalOne(ctx, j.ec, e, b)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	found, err := j.r.Read(ctx, keys)
	if err != nil {
		return nil, err
	}
	defer found.Release()
	nleft := int(b.NumCols())
	last := int(found.NumCols()) - 1
	if nleft+last != j.schema.NumFields() {
		return nil, fmt.Errorf("%w: lookup join of %d probe and %d table columns, want %d", ErrInvalid, nleft, last, j.schema.NumFields())
	}
	flags, ok := found.Column(last).(*array.Boolean)
	if !ok {
		return nil, fmt.Errorf("%w: key lookup result's last column is %s, not the found flag", ErrInvalid, found.Column(last).DataType())
	}
	cols := make([]arrow.Array, 0, j.schema.NumFields())
	cols = append(append(cols, b.Columns()...), found.Columns()[:last]...)
	joined := array.NewRecordBatch(j.schema, cols, b.NumRows())
	defer joined.Release()
	match, cnt := vectorized.TrueBits(j.ec.Mem, flags)
	defer func() { match.Release() }()
	if j.residual != nil && cnt > 0 {
		res, _, err := j.residual.mask(ctx, j.ec, joined)
		if err != nil {
			return nil, err
		}
		both, n := vectorized.AndMasks(j.ec.Mem, match, res)
		res.Release()
		match.Release()
		match, cnt = both, n
	}
	if !j.outer {
		if cnt == 0 {
			return nil, nil
		}
		return vectorized.FilterMask(ctx, j.ec.Mem, joined, match, cnt)
	}
	if cnt == int(b.NumRows()) {
		joined.Retain()
		return joined, nil
	}
	return nullUnmatched(ctx, j.ec, joined, nleft, match.(*array.Boolean))
}

// nullUnmatched sets the table's columns (from column nleft on) of the
// rows match does not set to NULL.
func nullUnmatched(ctx context.Context, ec *Context, joined arrow.RecordBatch, nleft int, match *array.Boolean) (arrow.RecordBatch, error) {
	idx := array.NewInt32Builder(ec.Mem)
	defer idx.Release()
	for i := range match.Len() {
		if match.IsValid(i) && match.Value(i) {
			idx.Append(int32(i))
		} else {
			idx.AppendNull()
		}
	}
	ind := idx.NewArray()
	defer ind.Release()
	cols := make([]arrow.Array, 0, joined.NumCols())
	defer func() {
		for _, c := range cols[nleft:] {
			c.Release()
		}
	}()
	cols = append(cols, joined.Columns()[:nleft]...)
	ctx = compute.WithAllocator(ctx, ec.Mem)
	for _, c := range joined.Columns()[nleft:] {
		t, err := compute.TakeArray(ctx, c, ind)
		if err != nil {
			return nil, err
		}
		cols = append(cols, t)
	}
	return array.NewRecordBatch(joined.Schema(), cols, joined.NumRows()), nil
}

// Close ends the use of the reader.
func (j *LookupJoiner) Close() {
	if j.r != nil {
		j.r.Close()
		j.r = nil
	}
}

// NewLookupJoin joins each batch of left through the joiner open makes
// at Open (see LookupJoiner).
func NewLookupJoin(ec *Context, left Operator, schema *arrow.Schema, open func(ctx context.Context) (*LookupJoiner, error)) Operator {
	return &lookupJoinOp{ec: ec, left: left, schema: schema, open: open}
}

type lookupJoinOp struct {
	ec     *Context
	left   Operator
	schema *arrow.Schema
	open   func(ctx context.Context) (*LookupJoiner, error)
	j      *LookupJoiner
	cur    current
}

func (o *lookupJoinOp) Schema() *arrow.Schema { return o.schema }

func (o *lookupJoinOp) Open(ctx context.Context) error {
	if o.j != nil {
		return nil
	}
	if err := o.left.Open(ctx); err != nil {
		return err
	}
	j, err := o.open(ctx)
	if err != nil {
		return err
	}
	o.j = j
	return nil
}

func (o *lookupJoinOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if o.j == nil {
		return nil, fmt.Errorf("%w: lookup join read before Open", ErrInvalid)
	}
	for {
		b, err := Next(ctx, o.left)
		if err != nil {
			return nil, err
		}
		out, err := o.j.Join(ctx, b)
		if err != nil {
			return nil, err
		}
		if out != nil && out.NumRows() > 0 {
			return o.cur.set(out), nil
		}
		if out != nil {
			out.Release()
		}
	}
}

func (o *lookupJoinOp) Close() error {
	o.cur.release()
	if o.j != nil {
		o.j.Close()
		o.j = nil
	}
	return o.left.Close()
}
