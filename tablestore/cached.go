package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/cache"
)

// chunkSource reads a file's selected row groups one row group at a time,
// each column chunk decoded whole (decodeChunk) and the row group's columns
// decoded in parallel as the scan's decoders allow; batches are slices of
// the chunks. With the store's cache of decoded columns, a chunk is decoded
// once and then served from memory to every scan that needs it. Data files
// are immutable and their paths unique, so a path, row group and column
// name a chunk for good.
type chunkSource struct {
	ctx      context.Context
	cache    *cache.Arrays // nil: decode every chunk
	decoders chan struct{} // tokens for extra decoding goroutines; nil: none
	// ranges gives the rows of a row group to read (ok false: all of
	// them); nil: all rows of every row group.
	ranges func(rg int) (rows []rowRange, ok bool)
	df     *dataFile
	cols   []int
	rgs    []int
	batch  int
	mem    memory.Allocator

	chunk  []arrow.Array // current row group's columns (owned)
	schema *arrow.Schema
	off, n int
	out    arrow.RecordBatch
}

func (c *chunkSource) Read() (arrow.RecordBatch, error) {
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

// load makes the columns of one row group current: cached ones from the
// cache, the others decoded on this goroutine and on as many more as
// decoder tokens are free. When only some rows are read (page index),
// whole cached chunks are cut to them, and chunks decoded in part are
// cached under their rows: a warm query whose filter skips pages would
// otherwise decode its pages at every run.
func (c *chunkSource) load(rg int) error {
	var ranges []rowRange
	if c.ranges != nil {
		if rs, ok := c.ranges(rg); ok {
			if len(rs) == 0 {
				c.off, c.n = 0, 0 // no page may match: next row group
				return nil
			}
			ranges = rs
		}
	}
	c.chunk = make([]arrow.Array, len(c.cols))
	keys := make([]string, len(c.cols))
	errs := make([]error, len(c.cols))
	var wg sync.WaitGroup
	for i, col := range c.cols {
		if c.cache != nil {
			key := chunkKey(c.df.path, rg, col)
			if a, ok := c.cache.Get(key); ok {
				if ranges == nil {
					c.chunk[i] = a
				} else {
					c.chunk[i], errs[i] = takeRanges(c.mem, a, ranges)
					a.Release()
				}
				continue
			}
			if ranges != nil {
				// The same pages read again (the same filter, or one
				// whose pages match alike) are served as read.
				key += rangesKey(ranges)
				if a, ok := c.cache.Get(key); ok {
					c.chunk[i] = a
					continue
				}
			}
			keys[i] = key // decoded below, cached once all are
		}
		select {
		case c.decoders <- struct{}{}:
			wg.Add(1)
			go func() {
				defer func() { <-c.decoders; wg.Done() }()
				c.chunk[i], errs[i] = c.df.decodeChunk(c.ctx, c.mem, rg, col, ranges)
			}()
		default:
			c.chunk[i], errs[i] = c.df.decodeChunk(c.ctx, c.mem, rg, col, ranges)
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fields := make([]arrow.Field, len(c.cols))
	for i, col := range c.cols {
		if keys[i] != "" {
			c.cache.Put(keys[i], c.chunk[i])
		}
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", col), Type: c.chunk[i].DataType(), Nullable: true}
	}
	c.schema = arrow.NewSchema(fields, nil)
	c.off, c.n = 0, c.chunk[0].Len()
	return nil
}

func (c *chunkSource) releaseOut() {
	if c.out != nil {
		c.out.Release()
		c.out = nil
	}
}

func (c *chunkSource) releaseChunk() {
	for _, a := range c.chunk {
		if a != nil { // nil after a failed load
			a.Release()
		}
	}
	c.chunk = nil
}

func (c *chunkSource) Release() {
	c.releaseOut()
	c.releaseChunk()
}

// chunkKey names a column chunk in the cache: data files are immutable
// and their paths unique, so a path, row group and column name a chunk for
// good; a path is a prefix of its chunks' keys (Store.forgetColumns).
func chunkKey(path string, rg, col int) string {
	return fmt.Sprintf("%s#%d#%d", path, rg, col)
}

// rangesKey is the part of a cache key that names the rows of a chunk
// decoded in part.
func rangesKey(ranges []rowRange) string {
	b := make([]byte, 0, 16*len(ranges))
	for _, r := range ranges {
		b = strconv.AppendInt(append(b, '@'), r.start, 10)
		b = strconv.AppendInt(append(b, '-'), r.end, 10)
	}
	return string(b)
}
