package vectorized

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// TestKleeneRandom checks And, Or, Not and IS [NOT] NULL against SQL's
// truth tables row by row, over arrays with and without NULLs, sliced at
// random offsets.
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
	isNull := func(x, _ int) int { return map[int]int{0: 0, 1: 0, 2: 1}[x] }
	isNotNull := func(x, _ int) int { return map[int]int{0: 1, 1: 1, 2: 0}[x] }
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
			{"is null", IsNull(mem, a, false), isNull},
			{"is not null", IsNull(mem, a, true), isNotNull},
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

// TestIsNullOfNullType: a NULL-typed array has no validity bitmap, and
// every row is NULL.
func TestIsNullOfNullType(t *testing.T) {
	a := array.NewNull(11)
	defer a.Release()
	for _, negate := range []bool{false, true} {
		got := IsNull(checked(t), a, negate)
		for i := range a.Len() {
			if got.(*array.Boolean).Value(i) == negate || got.IsNull(i) {
				t.Fatalf("IS NULL (negate %v) row %d: %v", negate, i, got.(*array.Boolean).Value(i))
			}
		}
		got.Release()
	}
}

// TestMasksRandom checks TrueBits, the mask operations, MaskRows and
// RowsMask against TrueMask's row-by-row answer, over sliced arrays with
// and without NULLs.
func TestMasksRandom(t *testing.T) {
	mem := checked(t)
	rng := testSeed(t)
	for range 200 {
		n := rng.IntN(300) + 1
		a := randomArray(t, mem, rng, arrow.FixedWidthTypes.Boolean, n, rng.IntN(2) == 0)
		b := randomArray(t, mem, rng, arrow.FixedWidthTypes.Boolean, n, rng.IntN(2) == 0)
		wa, ca := TrueMask(a)
		wb, _ := TrueMask(b)
		ma, gotA := TrueBits(mem, a)
		mb, _ := TrueBits(mem, b)
		both, gotBoth := AndMasks(mem, ma, mb)
		either, nEither := OrMasks(mem, ma, mb)
		aNotB, nANotB := AndNotMasks(mem, ma, mb)
		notA, nNotA := NotMask(mem, ma)
		wantEither, wantANotB, wantNotA := 0, 0, 0
		for i := range n {
			for _, c := range []struct {
				m    arrow.Array
				want bool
				cnt  *int
			}{{either, wa[i] || wb[i], &wantEither}, {aNotB, wa[i] && !wb[i], &wantANotB}, {notA, !wa[i], &wantNotA}} {
				if c.m.(*array.Boolean).Value(i) != c.want {
					t.Fatalf("row %d of %d: mask op gives %v, want %v", i, n, !c.want, c.want)
				}
				if c.want {
					*c.cnt++
				}
			}
		}
		if nEither != wantEither || nANotB != wantANotB || nNotA != wantNotA || CountMask(either) != wantEither {
			t.Fatalf("counts %d %d %d, want %d %d %d", nEither, nANotB, nNotA, wantEither, wantANotB, wantNotA)
		}
		for _, x := range []arrow.Array{either, aNotB, notA} {
			x.Release()
		}
		rows := MaskRows(both, nil)
		back := RowsMask(mem, n, rows)
		var wantRows []int32
		for i := range n {
			if ma.(*array.Boolean).Value(i) != wa[i] || ma.IsNull(i) {
				t.Fatalf("TrueBits row %d of %d (offset %d): %v, want %v", i, n, a.Data().Offset(), ma.(*array.Boolean).Value(i), wa[i])
			}
			if wa[i] && wb[i] {
				wantRows = append(wantRows, int32(i))
			}
			if both.(*array.Boolean).Value(i) != (wa[i] && wb[i]) || back.(*array.Boolean).Value(i) != (wa[i] && wb[i]) {
				t.Fatalf("AndMasks/RowsMask row %d of %d differs", i, n)
			}
		}
		if gotA != ca || gotBoth != len(wantRows) || fmt.Sprint(rows) != fmt.Sprint(wantRows) {
			t.Fatalf("counts %d %d, want %d %d; rows %v, want %v", gotA, gotBoth, ca, len(wantRows), rows, wantRows)
		}
		for _, x := range []arrow.Array{a, b, ma, mb, both, back} {
			x.Release()
		}
	}
}

// TestFilterMaskRandom checks FilterMask over columns of every type (sliced,
// with and without NULLs) against arrow-go's record-batch filter.
func TestFilterMaskRandom(t *testing.T) {
	mem := checked(t)
	rng := testSeed(t)
	ctx := context.Background()
	for range 30 {
		n := rng.IntN(300) + 1
		fields := make([]arrow.Field, len(randomTypes))
		cols := make([]arrow.Array, len(randomTypes))
		for i, dt := range randomTypes {
			fields[i] = arrow.Field{Name: fmt.Sprint("c", i), Type: dt, Nullable: true}
			cols[i] = randomArray(t, mem, rng, dt, n, rng.IntN(2) == 0)
		}
		b := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
		releaseAll(cols)
		pred := randomArray(t, mem, rng, arrow.FixedWidthTypes.Boolean, n, true)
		mask, cnt := TrueBits(mem, pred)
		got, err := FilterMask(ctx, mem, b, mask, cnt)
		if err != nil {
			t.Fatal(err)
		}
		want, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), b, mask, compute.DefaultFilterOptions())
		if err != nil {
			t.Fatal(err)
		}
		if got.NumRows() != int64(cnt) || want.NumRows() != int64(cnt) {
			t.Fatalf("%d rows, want %d", got.NumRows(), cnt)
		}
		for i := range fields {
			if !array.ApproxEqual(got.Column(i), want.Column(i), array.WithNaNsEqual(true)) || got.Column(i).NullN() != want.Column(i).NullN() {
				t.Fatalf("%s:\n got %v\nwant %v", fields[i].Type, got.Column(i), want.Column(i))
			}
		}
		for _, x := range []interface{ Release() }{b, pred, mask, got, want} {
			x.Release()
		}
	}
}
