package exec

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// KeyReader reads rows of a primary-key table by key (the planner wires a
// lookup index behind it; exec knows no storage).
type KeyReader interface {
	// Read returns, per key (one per row of keys, the key columns in
	// order) in order, the row's columns followed by a boolean column that
	// says whether the key was found. The caller releases it.
	Read(ctx context.Context, keys []arrow.Array) (arrow.RecordBatch, error)
	// Close ends the use of the reader.
	Close()
}

// NewKeyLookup reads the rows of keys (key columns, one key per row; the
// operator owns them and releases them when closed) through the reader
// open returns at Open, BatchSize keys at a time: the rows found, in key
// order, with schema (the reader's columns without the found flag).
func NewKeyLookup(ec *Context, schema *arrow.Schema, keys []arrow.Array, open func(ctx context.Context) (KeyReader, error)) Operator {
	k := &keyLookup{ec: ec, schema: schema, keys: keys}
	src := NewSource(ec, schema, func(ctx context.Context) (BatchSource, error) {
		r, err := open(ctx)
		if err != nil {
			return nil, err
		}
		k.r = r
		return k, nil
	})
	return &keyLookupOp{Operator: src, k: k}
}

// keyLookupOp releases the keys even when the lookup never opened.
type keyLookupOp struct {
	Operator
	k *keyLookup
}

func (o *keyLookupOp) Close() error {
	err := o.Operator.Close()
	o.k.releaseKeys()
	return err
}

type keyLookup struct {
	ec     *Context
	schema *arrow.Schema
	keys   []arrow.Array
	pos    int
	r      KeyReader
	cur    current
}

func (k *keyLookup) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if len(k.keys) == 0 || k.pos >= k.keys[0].Len() {
			return nil, io.EOF
		}
		end := min(k.pos+k.ec.BatchSize, k.keys[0].Len())
		part := make([]arrow.Array, len(k.keys))
		for i, c := range k.keys {
			part[i] = array.NewSlice(c, int64(k.pos), int64(end))
		}
		k.pos = end
		b, err := k.r.Read(ctx, part)
		for _, p := range part {
			p.Release()
		}
		if err != nil {
			return nil, err
		}
		out, err := foundRows(ctx, k.ec, k.schema, b)
		b.Release()
		if err != nil {
			return nil, err
		}
		if out == nil {
			continue
		}
		return k.cur.set(out), nil
	}
}

// foundRows keeps the rows of a reader's result whose found flag is set,
// without the flag, as schema; nil when none is.
func foundRows(ctx context.Context, ec *Context, schema *arrow.Schema, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	last := int(b.NumCols()) - 1
	if last != schema.NumFields() {
		return nil, fmt.Errorf("%w: key lookup returned %d columns, want %d and the found flag", ErrInvalid, last, schema.NumFields())
	}
	found, ok := b.Column(last).(*array.Boolean)
	if !ok {
		return nil, fmt.Errorf("%w: key lookup result's last column is %s, not the found flag", ErrInvalid, b.Column(last).DataType())
	}
	mask, cnt := vectorized.TrueBits(ec.Mem, found)
	defer mask.Release()
	if cnt == 0 {
		return nil, nil
	}
	rows := array.NewRecordBatch(schema, b.Columns()[:last], b.NumRows())
	defer rows.Release()
	return vectorized.FilterMask(ctx, ec.Mem, rows, mask, cnt)
}

func (k *keyLookup) Close() error {
	k.cur.release()
	if k.r != nil {
		k.r.Close()
		k.r = nil
	}
	return nil
}

func (k *keyLookup) releaseKeys() {
	for _, c := range k.keys {
		c.Release()
	}
	k.keys = nil
}
