package arrowshare

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBytesSlices: the batch-sized slices of one array count together
// about what the array counts (its rows, not once per slice), each about
// its share, and the whole array at least its values; a dictionary array's
// slices each count the whole dictionary and a list's the whole list.
func TestBytesSlices(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const n, batch = 10_000, 1024

	ints := array.NewInt64Builder(mem)
	strs := array.NewStringBuilder(mem)
	decs := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 12, Scale: 2})
	bools := array.NewBooleanBuilder(mem)
	for i := range n {
		if i%7 == 0 {
			ints.AppendNull()
		} else {
			ints.Append(int64(i))
		}
		strs.Append(fmt.Sprintf("value %d", i*i)) // lengths grow along the array
		decs.Append(decimal128.FromI64(int64(i)))
		bools.Append(i%3 == 0)
	}
	cases := []struct {
		name    string
		a       arrow.Array
		atLeast int64 // the whole array's values alone
	}{
		{"int64", ints.NewArray(), 8 * n},
		{"string", strs.NewArray(), 4*n + 7*n},
		{"decimal128", decs.NewArray(), 16 * n},
		{"bool", bools.NewArray(), n / 8},
	}
	for _, b := range []array.Builder{ints, strs, decs, bools} {
		b.Release()
	}
	for _, c := range cases {
		whole := Bytes(c.a.Data())
		if whole < c.atLeast || whole > WholeBytes(c.a.Data()) {
			t.Errorf("%s: whole array counts %d, want %d to %d", c.name, whole, c.atLeast, WholeBytes(c.a.Data()))
		}
		var sum int64
		slices := 0
		for lo := 0; lo < n; lo += batch {
			s := array.NewSlice(c.a, int64(lo), int64(min(lo+batch, n)))
			got := Bytes(s.Data())
			// Its rows' share, with room for a longer string at the end.
			if share := whole * int64(s.Len()) / n; got > 2*share+64 || got == 0 {
				t.Errorf("%s: slice [%d, %d) counts %d, its share is %d", c.name, lo, lo+s.Len(), got, share)
			}
			sum += got
			slices++
			s.Release()
		}
		// Slices overlap by an offset and round their bitmaps up.
		if slack := int64(slices) * 10; sum < whole-slack || sum > whole+slack {
			t.Errorf("%s: %d slices count %d together, the array %d", c.name, slices, sum, whole)
		}
		c.a.Release()
	}

	dict := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	defer dict.Release()
	for i := range n {
		if err := dict.AppendString(fmt.Sprintf("category %d", i%50)); err != nil {
			t.Fatal(err)
		}
	}
	da := dict.NewArray().(*array.Dictionary)
	defer da.Release()
	values := WholeBytes(da.Dictionary().Data())
	s := array.NewSlice(da, 0, batch)
	defer s.Release()
	if got, want := Bytes(s.Data()), values+4*batch+batch/8; got < values+4*batch || got > want {
		t.Errorf("dictionary slice counts %d, want its indices and the dictionary, %d to %d", got, values+4*batch, want)
	}

	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	defer lb.Release()
	vb := lb.ValueBuilder().(*array.Int64Builder)
	for i := range n {
		lb.Append(true)
		vb.Append(int64(i))
	}
	la := lb.NewArray()
	defer la.Release()
	ls := array.NewSlice(la, 0, batch)
	defer ls.Release()
	if got, want := Bytes(ls.Data()), WholeBytes(la.Data()); got != want {
		t.Errorf("list slice counts %d, want its whole buffers, %d", got, want)
	}
}
