package lookup

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
)

// checkTypes reports a column whose type lookups cannot hold.
func checkTypes(s *arrow.Schema) error {
	for _, f := range s.Fields() {
		switch f.Type.ID() {
		case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64,
			arrow.STRING, arrow.BINARY, arrow.DATE32, arrow.TIME64, arrow.TIMESTAMP, arrow.DECIMAL128:
		default:
			return fmt.Errorf("column %s has type %s, which lookups do not support yet", f.Name, f.Type)
		}
	}
	return nil
}

// A segment is rows in Arrow columns, read in place: the rows of one read
// from the store (all the table's columns), or keys known to be missing
// (key columns only). Cached segments live in Go memory (cacheMem) and are
// never released: a lookup may gather from one that eviction or a commit
// just dropped from the cache, and the garbage collector frees it after.
type segment struct {
	cols []view // the table's columns; nil: the keys are missing
	keys []view // the key columns
	// cost is the bytes of one row: its share of the columns and the
	// cache's entry.
	cost int64
}

// cacheMem holds cached segments (see segment).
var cacheMem = memory.NewGoAllocator()

// entryBytes is a cache entry's own cost beyond its row: its 32-byte slot
// in the cache's table, which is 3/8 to 3/4 full.
const entryBytes = 64

// newRowSegment makes a segment of rows (the table's columns) whose key
// columns are keyIdx.
func newRowSegment(cols []arrow.Array, keyIdx []int) *segment {
	s := &segment{cols: viewsOf(cols)}
	s.keys = make([]view, len(keyIdx))
	for c, i := range keyIdx {
		s.keys[c] = s.cols[i]
	}
	s.cost = perRow(cols)
	return s
}

// newMissingSegment makes a segment of keys that are not in the table.
func newMissingSegment(keys []arrow.Array) *segment {
	return &segment{keys: viewsOf(keys), cost: perRow(keys)}
}

func perRow(cols []arrow.Array) int64 {
	n := int64(cols[0].Len())
	var size int64
	for _, c := range cols {
		size += util.TotalArraySize(c)
	}
	return size/max(n, 1) + entryBytes
}
