package arrowstr

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCheckUTF8 finds the value that is not UTF-8 in string arrays (sliced
// ones at their own index), nested in lists, structs and maps, and passes
// valid and empty ones.
func TestCheckUTF8(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	vals := []string{"a", "é", "\xff", "b"}
	for _, typ := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString} {
		b := array.NewBuilder(mem, typ)
		for _, v := range vals {
			b.AppendValueFromString(v)
		}
		a := b.NewArray()
		b.Release()
		var bad *NotUTF8
		if err := CheckUTF8(a); !errors.As(err, &bad) || bad.Index != 2 || string(bad.Value) != "\xff" || bad.Nested {
			t.Errorf("%s: %v", typ, err)
		}
		for _, c := range []struct {
			i, j, want int
		}{{0, 2, -1}, {1, 4, 1}, {3, 4, -1}, {2, 2, -1}} {
			s := array.NewSlice(a, int64(c.i), int64(c.j))
			err := CheckUTF8(s)
			s.Release()
			got := -1
			if errors.As(err, &bad) {
				got = bad.Index
			}
			if got != c.want || (err == nil) != (c.want < 0) {
				t.Errorf("%s[%d:%d]: %v, want index %d", typ, c.i, c.j, err, c.want)
			}
		}
		a.Release()
	}
	lb := array.NewMapBuilder(mem, arrow.BinaryTypes.String, arrow.BinaryTypes.String, false)
	lb.Append(true)
	lb.KeyBuilder().(*array.StringBuilder).Append("k")
	lb.ItemBuilder().(*array.StringBuilder).Append("v\xc3")
	m := lb.NewArray()
	lb.Release()
	defer m.Release()
	var bad *NotUTF8
	if err := CheckUTF8(m); !errors.As(err, &bad) || !bad.Nested || string(bad.Value) != "v\xc3" {
		t.Errorf("map: %v", err)
	}
	sb := array.NewStructBuilder(mem, arrow.StructOf(arrow.Field{Name: "x", Type: arrow.ListOf(arrow.BinaryTypes.String)}))
	sb.Append(true)
	xb := sb.FieldBuilder(0).(*array.ListBuilder)
	xb.Append(true)
	xb.ValueBuilder().(*array.StringBuilder).AppendValues([]string{"ok", "日本"}, nil)
	st := sb.NewArray()
	sb.Release()
	defer st.Release()
	if err := CheckUTF8(st); err != nil {
		t.Errorf("valid struct: %v", err)
	}
}
