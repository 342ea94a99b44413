package arrowstr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestViewer reads every value of each string and binary type back, sliced
// at an offset, and refuses other types.
func TestViewer(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	vals := []string{"a", "", "\xff\x00b", "long value"}
	for _, typ := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary} {
		bb := array.NewBuilder(mem, typ)
		for _, v := range vals {
			switch x := bb.(type) {
			case *array.StringBuilder:
				x.Append(v)
			case *array.LargeStringBuilder:
				x.Append(v)
			case *array.BinaryBuilder:
				x.Append([]byte(v))
			}
		}
		a := bb.NewArray()
		bb.Release()
		s := array.NewSlice(a, 1, int64(len(vals)))
		view, ok := Viewer(s)
		if !ok {
			t.Fatalf("%s: not viewed", typ)
		}
		for i := range s.Len() {
			if got := view(i); got != vals[i+1] {
				t.Errorf("%s: value %d is %q, want %q", typ, i, got, vals[i+1])
			}
		}
		s.Release()
		a.Release()
	}
	ints := array.NewInt64Builder(mem)
	a := ints.NewArray()
	if _, ok := Viewer(a); ok {
		t.Error("an int64 array is viewed")
	}
	a.Release()
	ints.Release()
}
