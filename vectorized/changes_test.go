package vectorized

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestMarkChanges holds MarkChanges to NewComparator row by row (NULL
// equal to NULL only) on columns in runs of equal values and NULLs,
// sliced at an offset, over marks an earlier column left, which must stay.
func TestMarkChanges(t *testing.T) {
	mem := checked(t)
	rng := testSeed(t)
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Timestamp_us,
		&arrow.Decimal128Type{Precision: 12, Scale: 2}, arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String,
		arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeString,
	}
	for _, dt := range types {
		for iter := range 20 {
			base := randomTakeArray(t, mem, rng, dt, 1+rng.IntN(40), []int{0, 20}[iter%2])
			var idx []int64
			for len(idx) < 200 {
				v := int64(rng.IntN(base.Len()))
				if rng.IntN(8) == 0 {
					v = -1 // a run of NULLs
				}
				for range 1 + rng.IntN(4) {
					idx = append(idx, v)
				}
			}
			whole, err := Take(context.Background(), mem, base, idx)
			base.Release()
			if err != nil {
				t.Fatal(err)
			}
			off := rng.IntN(10)
			a := array.NewSlice(whole, int64(off), int64(len(idx)))
			whole.Release()
			n := a.Len()
			changed := make([]bool, n)
			for i := range changed {
				changed[i] = rng.IntN(10) == 0
			}
			want := slices.Clone(changed)
			cmp, err := NewComparator(a, a)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < n; i++ {
				pn, cn := a.IsNull(i-1), a.IsNull(i)
				want[i] = want[i] || pn != cn || !pn && !cn && cmp(i-1, i) != 0
			}
			if err := MarkChanges(a, changed); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(changed, want) {
				t.Fatalf("%s, iteration %d: marks differ from the comparator's\ngot  %v\nwant %v", dt, iter, changed, want)
			}
			a.Release()
		}
	}
}
