package tablestore

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/tablestore/merge"
)

// rowOrder orders the rows of one batch laid out with the system columns
// first (seq, kind, then table columns as in schema order of idx).
type rowOrder struct {
	key  func(i, j int) int // primary key columns
	ver  func(i, j int) int // sequence.field columns, then sequence number
	kind []int8
}

// newRowOrder builds the order of rec, whose columns after the two system
// columns are the table columns listed by cols (schema indexes).
func newRowOrder(sch *tableSchema, rec arrow.RecordBatch, cols []int) rowOrder {
	colOf := func(name string) arrow.Array {
		i := sch.fieldIndex(name)
		for k, c := range cols {
			if c == i {
				return rec.Column(2 + k)
			}
		}
		panic("tablestore: row order column not read: " + name)
	}
	var keys []arrow.Array
	for _, k := range sch.PrimaryKeys {
		keys = append(keys, colOf(k))
	}
	seq := rec.Column(0).(*array.Int64).Int64Values()
	seqCmp := func(i, j int) int {
		switch {
		case seq[i] < seq[j]:
			return -1
		case seq[i] > seq[j]:
			return 1
		}
		return 0
	}
	ver := seqCmp
	if len(sch.opts.sequenceField) > 0 {
		var sf []arrow.Array
		for _, c := range sch.opts.sequenceField {
			sf = append(sf, colOf(c))
		}
		sfCmp := rowsCmp(sf)
		ver = func(i, j int) int {
			if c := sfCmp(i, j); c != 0 {
				return c
			}
			return seqCmp(i, j)
		}
	}
	return rowOrder{key: rowsCmp(keys), ver: ver, kind: rec.Column(1).(*array.Int8).Int8Values()}
}

func (o rowOrder) full(i, j int) int {
	if c := o.key(i, j); c != 0 {
		return c
	}
	return o.ver(i, j)
}

// mergeSorted walks rows already sorted by o.full and returns the survivor
// of each key (as the picking engine mo picks), in key order; retracting
// survivors are dropped when dropRetracts.
func mergeSorted(o rowOrder, mo *merge.Options, sorted []int, dropRetracts bool) []int {
	out := make([]int, 0, len(sorted))
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && o.key(sorted[i], sorted[j]) == 0 {
			j++
		}
		w := sorted[i]
		if j-i > 1 {
			w = sorted[i+mo.Pick(j-i)]
		}
		if !dropRetracts || !RowKind(o.kind[w]).IsRetract() {
			out = append(out, w)
		}
		i = j
	}
	return out
}
