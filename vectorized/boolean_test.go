package vectorized

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestKleeneRandom checks And, Or and Not against SQL's truth tables row by
// row, over arrays with and without NULLs, sliced at random offsets.
func TestKleeneRandom(t *testing.T) {
	mem := checked(t)
	rng := testSeed(t)
	// tri is a three-valued row: 0 false, 1 true, 2 NULL.
	tri := func(a arrow.Array, i int) int {
		if a.IsNull(i) {
			return 2
		}
		if a.(*array.Boolean).Value(i) {
			return 1
		}
		return 0
	}
	and := func(x, y int) int {
		switch {
		case x == 0 || y == 0:
			return 0
		case x == 2 || y == 2:
			return 2
		}
		return 1
	}
	or := func(x, y int) int {
		switch {
		case x == 1 || y == 1:
			return 1
		case x == 2 || y == 2:
			return 2
		}
		return 0
	}
	not := func(x, _ int) int { return map[int]int{0: 1, 1: 0, 2: 2}[x] }
	for range 200 {
		n := rng.IntN(300) + 1
		a := randomArray(t, mem, rng, arrow.FixedWidthTypes.Boolean, n, rng.IntN(2) == 0)
		b := randomArray(t, mem, rng, arrow.FixedWidthTypes.Boolean, n, rng.IntN(2) == 0)
		for _, c := range []struct {
			name string
			got  arrow.Array
			want func(x, y int) int
		}{
			{"and", And(mem, a, b), and},
			{"or", Or(mem, a, b), or},
			{"not", Not(mem, a), not},
		} {
			nulls := 0
			for i := range n {
				want := c.want(tri(a, i), tri(b, i))
				if want == 2 {
					nulls++
				}
				if got := tri(c.got, i); got != want {
					t.Fatalf("%s row %d of %d (offsets %d, %d): %v, %v gives %d, want %d",
						c.name, i, n, a.Data().Offset(), b.Data().Offset(), tri(a, i), tri(b, i), got, want)
				}
			}
			if c.got.NullN() != nulls {
				t.Fatalf("%s: NullN %d, counted %d", c.name, c.got.NullN(), nulls)
			}
			c.got.Release()
		}
		a.Release()
		b.Release()
	}
}
