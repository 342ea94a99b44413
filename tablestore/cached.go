package tablestore

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/cache"
)

// cachedSource reads a file's selected row groups one column chunk at a
// time through the store's cache of decoded columns: a chunk is decoded
// once and then served from memory to every scan that needs it. Data files
// are immutable and their paths unique, so a path, row group and column
// name a chunk for good.
type cachedSource struct {
	ctx   context.Context
	cache *cache.Arrays
	df    *dataFile
	cols  []int
	rgs   []int
	batch int
	mem   memory.Allocator

	chunk  []arrow.Array // current row group's columns (owned)
	schema *arrow.Schema
	off, n int
	out    arrow.RecordBatch
}

func newCachedSource(ctx context.Context, c *cache.Arrays, mem memory.Allocator, df *dataFile, cols, rgs []int, batch int) *cachedSource {
	return &cachedSource{ctx: ctx, cache: c, mem: mem, df: df, cols: cols, rgs: rgs, batch: batch}
}

func (c *cachedSource) Read() (arrow.RecordBatch, error) {
	c.releaseOut()
	for c.off >= c.n {
		c.releaseChunk()
		if len(c.rgs) == 0 {
			return nil, io.EOF
		}
		rg := c.rgs[0]
		c.rgs = c.rgs[1:]
		if err := c.load(rg); err != nil {
			return nil, err
		}
	}
	end := min(c.off+c.batch, c.n)
	cols := make([]arrow.Array, len(c.chunk))
	for i, a := range c.chunk {
		cols[i] = array.NewSlice(a, int64(c.off), int64(end))
	}
	c.out = array.NewRecordBatch(c.schema, cols, int64(end-c.off))
	for _, a := range cols {
		a.Release()
	}
	c.off = end
	return c.out, nil
}

// load makes the columns of one row group current.
func (c *cachedSource) load(rg int) error {
	c.chunk = make([]arrow.Array, len(c.cols))
	fields := make([]arrow.Field, len(c.cols))
	for i, col := range c.cols {
		key := fmt.Sprintf("%s#%d#%d", c.df.path, rg, col)
		a, ok := c.cache.Get(key)
		if !ok {
			var err error
			if a, err = c.decode(rg, col); err != nil {
				return err
			}
			c.cache.Put(key, a)
		}
		c.chunk[i] = a
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", col), Type: a.DataType(), Nullable: true}
	}
	c.schema = arrow.NewSchema(fields, nil)
	c.off, c.n = 0, c.chunk[0].Len()
	return nil
}

// decode reads one column chunk as a single array.
func (c *cachedSource) decode(rg, col int) (arrow.Array, error) {
	tbl, err := c.df.fr.ReadRowGroups(c.ctx, c.df.leaves[col], []int{rg})
	if err != nil {
		if c.ctx.Err() != nil {
			return nil, c.ctx.Err()
		}
		return nil, corruptf(c.df.path, err)
	}
	defer tbl.Release()
	chunks := tbl.Column(0).Data().Chunks()
	if len(chunks) == 1 {
		chunks[0].Retain()
		return chunks[0], nil
	}
	a, err := array.Concatenate(chunks, c.mem)
	if err != nil {
		return nil, corruptf(c.df.path, err)
	}
	return a, nil
}

func (c *cachedSource) releaseOut() {
	if c.out != nil {
		c.out.Release()
		c.out = nil
	}
}

func (c *cachedSource) releaseChunk() {
	for _, a := range c.chunk {
		if a != nil { // nil after a failed load
			a.Release()
		}
	}
	c.chunk = nil
}

func (c *cachedSource) Release() {
	c.releaseOut()
	c.releaseChunk()
}
