package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// UnnestSpec says what an unnest adds to each input row.
type UnnestSpec struct {
	// Expand: the element itself, a ROW element's fields, or a MAP's key
	// and value.
	Expand UnnestExpand
	// Ordinality adds the 1-based position of the element (INT).
	Ordinality bool
	// KeepEmpty keeps an input row whose collection is empty or NULL, once,
	// with NULL elements (LEFT JOIN UNNEST ... ON TRUE).
	KeepEmpty bool
}

// UnnestExpand is how an element becomes columns.
type UnnestExpand int

// Ways elements become columns.
const (
	UnnestElement UnnestExpand = iota
	UnnestRowFields
	UnnestMapEntry
)

// unnestOp repeats each input row once per element of its ARRAY (or entry
// of its MAP) and appends the element's columns.
type unnestOp struct {
	ec     *Context
	child  Operator
	arr    Expr
	spec   UnnestSpec
	schema *arrow.Schema
	cur    current
}

// NewUnnest returns the input columns followed by the element columns of
// arr (an ARRAY or MAP expression over the input) as described by spec;
// schema is the output schema.
func NewUnnest(ec *Context, child Operator, arr Expr, spec UnnestSpec, schema *arrow.Schema) (Operator, error) {
	if _, ok := arr.DataType().(arrow.ListLikeType); !ok {
		return nil, fmt.Errorf("%w: UNNEST needs an ARRAY or MAP, got %s", ErrInvalid, arr.DataType())
	}
	return &unnestOp{ec: ec, child: child, arr: arr, spec: spec, schema: schema}, nil
}

func (u *unnestOp) Schema() *arrow.Schema          { return u.schema }
func (u *unnestOp) Open(ctx context.Context) error { return u.child.Open(ctx) }

func (u *unnestOp) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		b, err := Next(ctx, u.child)
		if err != nil {
			return nil, err
		}
		out, err := u.expand(ctx, b)
		if err != nil {
			return nil, err
		}
		if out != nil {
			return u.cur.set(out), nil
		}
	}
}

// expand unnests one batch; nil when no row has an element to emit.
func (u *unnestOp) expand(ctx context.Context, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	a, err := evalOne(ctx, u.ec, u.arr, b)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	l := a.(array.ListLike)
	var rows, elems []int64
	var ords []int32
	for i := range a.Len() {
		lo, hi := int64(0), int64(0)
		if l.IsValid(i) {
			lo, hi = l.ValueOffsets(i)
		}
		for j := lo; j < hi; j++ {
			rows, elems, ords = append(rows, int64(i)), append(elems, j), append(ords, int32(j-lo+1))
		}
		if lo == hi && u.spec.KeepEmpty {
			rows, elems, ords = append(rows, int64(i)), append(elems, -1), append(ords, -1)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	cols, err := vectorized.TakeColumns(ctx, u.ec.Mem, b.Columns(), rows)
	if err != nil {
		return nil, err
	}
	defer releaseArrays(cols)
	el, err := vectorized.Take(ctx, u.ec.Mem, l.ListValues(), elems)
	if err != nil {
		return nil, err
	}
	defer el.Release()
	var added []arrow.Array
	defer func() { releaseArrays(added) }()
	switch u.spec.Expand {
	case UnnestRowFields:
		s := el.(*array.Struct)
		for f := range s.NumField() {
			added = append(added, structField(u.ec.Mem, s, f))
		}
	case UnnestMapEntry:
		s := el.(*array.Struct) // the entries: key, value
		added = append(added, structField(u.ec.Mem, s, 0), structField(u.ec.Mem, s, 1))
	default:
		el.Retain()
		added = append(added, el)
	}
	if u.spec.Ordinality {
		ob := array.NewInt32Builder(u.ec.Mem)
		defer ob.Release()
		for _, o := range ords {
			if o < 0 {
				ob.AppendNull()
			} else {
				ob.Append(o)
			}
		}
		added = append(added, ob.NewArray())
	}
	return array.NewRecordBatch(u.schema, append(cols, added...), int64(len(rows))), nil
}

func (u *unnestOp) Close() error {
	u.cur.release()
	return u.child.Close()
}
