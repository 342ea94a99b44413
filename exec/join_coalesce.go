package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// coalescer joins a stream of batches, in order, into batches of at least
// half the batch size: a selective join yields a few rows per probe batch,
// and every operator above pays per batch. Batches that are large enough
// on their own pass through without a copy; a merged batch holds less than
// half the batch size plus the batch that completed it.
type coalescer struct {
	parts []arrow.RecordBatch
	rows  int
}

// add takes ownership of b and returns a batch to emit (owned by the
// caller) or nil while it collects.
func (c *coalescer) add(ec *Context, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	half := int64(max(1, ec.batchSize()/2))
	if len(c.parts) == 0 && b.NumRows() >= half {
		return b, nil
	}
	c.parts = append(c.parts, b)
	c.rows += int(b.NumRows())
	if int64(c.rows) < half {
		return nil, nil
	}
	return c.flush(ec)
}

// flush returns the collected rows as one batch, or nil if there are none.
func (c *coalescer) flush(ec *Context) (arrow.RecordBatch, error) {
	defer c.release()
	switch len(c.parts) {
	case 0:
		return nil, nil
	case 1:
		b := c.parts[0]
		b.Retain()
		return b, nil
	}
	schema := c.parts[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	parts := make([]arrow.Array, len(c.parts))
	for i := range cols {
		for p, b := range c.parts {
			parts[p] = b.Column(i)
		}
		a, err := array.Concatenate(parts, ec.Mem)
		if err != nil {
			releaseArrays(cols[:i])
			return nil, err
		}
		cols[i] = a
	}
	out := array.NewRecordBatch(schema, cols, int64(c.rows))
	releaseArrays(cols)
	return out, nil
}

func (c *coalescer) release() {
	releaseBatches(c.parts)
	c.parts, c.rows = c.parts[:0], 0
}
