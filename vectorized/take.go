package vectorized

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// indexArray builds an int64 index array; negative indices become NULL
// (which Take turns into NULL output rows).
func indexArray(mem memory.Allocator, idx []int64) arrow.Array {
	out := NewFixedOut[int64](mem, len(idx))
	copy(out.Vals, idx)
	var valid []bool
	for i, x := range idx {
		if x < 0 {
			if valid == nil {
				valid = make([]bool, len(idx))
				for j := range valid {
					valid[j] = true
				}
			}
			valid[i] = false
			out.Vals[i] = 0
		}
	}
	var v Validity
	if valid != nil {
		v = BoolsToValidity(mem, valid)
	}
	return out.Finish(arrow.PrimitiveTypes.Int64, v.Buf, v.Nulls)
}

// Take gathers a[idx[i]] for every i; idx[i] < 0 yields NULL. It uses
// arrow-go's take kernel (see take_test.go for the benchmark against a
// builder loop).
func Take(ctx context.Context, mem memory.Allocator, a arrow.Array, idx []int64) (arrow.Array, error) {
	ia := indexArray(mem, idx)
	defer ia.Release()
	return compute.TakeArray(compute.WithAllocator(ctx, mem), a, ia)
}

// TakeColumns gathers the same rows of several columns.
func TakeColumns(ctx context.Context, mem memory.Allocator, cols []arrow.Array, idx []int64) ([]arrow.Array, error) {
	ia := indexArray(mem, idx)
	defer ia.Release()
	cctx := compute.WithAllocator(ctx, mem)
	out := make([]arrow.Array, len(cols))
	for i, c := range cols {
		t, err := compute.TakeArray(cctx, c, ia)
		if err != nil {
			for _, o := range out[:i] {
				o.Release()
			}
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// TakeBatch gathers rows idx of b into a new batch with schema.
func TakeBatch(ctx context.Context, mem memory.Allocator, b arrow.RecordBatch, schema *arrow.Schema, idx []int64) (arrow.RecordBatch, error) {
	cols, err := TakeColumns(ctx, mem, b.Columns(), idx)
	if err != nil {
		return nil, err
	}
	out := array.NewRecordBatch(schema, cols, int64(len(idx)))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// FilterBatch keeps the rows of b where mask is true (count of them given).
// It uses arrow-go's filter kernel, faster than gathering by index
// (BenchmarkFilterBatch).
func FilterBatch(ctx context.Context, mem memory.Allocator, b arrow.RecordBatch, mask []bool, count int) (arrow.RecordBatch, error) {
	if count == len(mask) {
		b.Retain()
		return b, nil
	}
	m := BoolsToArray(mem, mask, nil)
	defer m.Release()
	return FilterMask(ctx, mem, b, m, count)
}
