package exec

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestActiveRows: the rows active.rows lists are those at says count,
// for slices at every bit offset, lengths around the 64-row words, sparse
// and dense bitmaps, with and without a mask, and arrays with no bitmap.
func TestActiveRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(3, 4))
	var buf []int32
	for _, valid := range []float64{0, 1.0 / 7, 0.5, 0.97, 1} {
		b := array.NewInt64Builder(mem)
		for i := range 300 {
			if rng.Float64() < valid {
				b.Append(int64(i))
			} else {
				b.AppendNull()
			}
		}
		whole := b.NewArray()
		b.Release()
		for off := range 9 {
			for _, n := range []int{0, 1, 7, 63, 64, 65, 128, 200, 300 - off} {
				if off+n > whole.Len() {
					continue
				}
				a := array.NewSlice(whole, int64(off), int64(off+n))
				mask := make([]bool, n)
				for i := range mask {
					mask[i] = rng.IntN(3) > 0
				}
				for _, m := range [][]bool{nil, mask} {
					on := activeRows(a, m)
					var want []int32
					for i := range n {
						if on.at(i) {
							want = append(want, int32(i))
						}
					}
					buf = on.rows(n, buf)
					if !slices.Equal(buf, want) && len(buf)+len(want) > 0 {
						t.Fatalf("valid %.2f offset %d n %d mask %v: rows %v, want %v", valid, off, n, m != nil, buf, want)
					}
				}
				a.Release()
			}
		}
		whole.Release()
	}
	// An array without a bitmap, and the NULL type.
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{1, 2, 3}, nil)
	a := b.NewArray()
	b.Release()
	defer a.Release()
	if got := activeRows(a, nil).rows(3, nil); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("no bitmap: rows %v, want [0 1 2]", got)
	}
	nulls := array.MakeArrayOfNull(mem, arrow.Null, 3)
	defer nulls.Release()
	if got := activeRows(nulls, nil).rows(3, nil); len(got) != 0 {
		t.Fatalf("NULL type: rows %v, want none", got)
	}
}
