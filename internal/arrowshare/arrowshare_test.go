package arrowshare

import (
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestSettle: after Settle, a slice's data and its children's and
// dictionary's hold their null counts (arrow-go leaves them unknown until
// first read), the counts are right, and readers on many goroutines write
// nothing (the race detector checks that).
func TestSettle(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	typ := arrow.StructOf(
		arrow.Field{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	)
	b := array.NewStructBuilder(mem, typ)
	defer b.Release()
	ib := b.FieldBuilder(0).(*array.Int64Builder)
	db := b.FieldBuilder(1).(*array.BinaryDictionaryBuilder)
	for i := range 100 {
		if i%7 == 0 {
			b.AppendNull()
			ib.AppendNull()
			db.AppendNull()
			continue
		}
		b.Append(true)
		if i%3 == 0 {
			ib.AppendNull()
		} else {
			ib.Append(int64(i))
		}
		if err := db.AppendString([]string{"a", "b", "c"}[i%3]); err != nil {
			t.Fatal(err)
		}
	}
	whole := b.NewArray()
	defer whole.Release()
	a := array.NewSlice(whole, 10, 90)
	defer a.Release()

	// unknown counts the null counts not yet computed in what readers of a
	// see: the struct, its fields (slices of their own) and the
	// dictionary's indices.
	unknown := func() int {
		n := 0
		s := a.(*array.Struct)
		for _, d := range []arrow.ArrayData{s.Data(), s.Field(0).Data(), s.Field(1).Data()} {
			if d.NullN() == array.UnknownNullCount {
				n++
			}
		}
		return n
	}
	if unknown() == 0 {
		t.Fatal("the slice has no unknown null count: the test shows nothing")
	}
	Settle(a)
	if n := unknown(); n != 0 {
		t.Fatalf("%d null counts still unknown after Settle", n)
	}

	want := 0
	for i := 10; i < 90; i++ {
		if i%7 == 0 {
			want++
		}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if got := a.NullN(); got != want {
				t.Errorf("struct nulls %d, want %d", got, want)
			}
			s := a.(*array.Struct)
			s.Field(0).NullN()
			d := s.Field(1).(*array.Dictionary)
			d.NullN()
			d.Dictionary().Len()
		})
	}
	wg.Wait()
}
