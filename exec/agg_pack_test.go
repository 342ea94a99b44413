package exec

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestGroupPackLayout: the field widths the key types get, and which rows
// leave the packed path (TestRandomPackedGroups checks the groups).
func TestGroupPackLayout(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ints := func(dt arrow.DataType, vals ...int64) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		for _, v := range vals {
			switch {
			case v == -99:
				b.AppendNull()
			case dt.ID() == arrow.INT8:
				b.(*array.Int8Builder).Append(int8(v))
			case dt.ID() == arrow.INT32:
				b.(*array.Int32Builder).Append(int32(v))
			case dt.ID() == arrow.INT64:
				b.(*array.Int64Builder).Append(v)
			}
		}
		return b.NewArray()
	}
	for _, tc := range []struct {
		name   string
		keys   []arrow.Array
		widths []uint // nil: does not pack
		wide   []bool
	}{
		{"two int32: 32-bit fields, negatives wide", []arrow.Array{
			ints(arrow.PrimitiveTypes.Int32, 0, 1<<31-1, -1, -99),
			ints(arrow.PrimitiveTypes.Int32, 5, 7, 0, 3),
		}, []uint{32, 32}, []bool{false, false, true, false}},
		{"int8 and int32: whole types", []arrow.Array{
			ints(arrow.PrimitiveTypes.Int8, -128, 127, -99),
			ints(arrow.PrimitiveTypes.Int32, -1<<31, 1<<31-1, -99),
		}, []uint{9, 33}, nil},
		{"int64, int32, int32: narrowed", []arrow.Array{
			ints(arrow.PrimitiveTypes.Int64, 1<<21-2, 1<<21-1, 0),
			ints(arrow.PrimitiveTypes.Int32, 1<<21-2, 0, 1<<21-1),
			ints(arrow.PrimitiveTypes.Int32, 0, 0, 0),
		}, []uint{21, 21, 22}, []bool{false, true, true}},
		{"five int32: too narrow", []arrow.Array{
			ints(arrow.PrimitiveTypes.Int32, 1), ints(arrow.PrimitiveTypes.Int32, 1), ints(arrow.PrimitiveTypes.Int32, 1),
			ints(arrow.PrimitiveTypes.Int32, 1), ints(arrow.PrimitiveTypes.Int32, 1),
		}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer releaseArrays(tc.keys)
			p := newGroupPack(tc.keys)
			if p == nil || tc.widths == nil {
				if (p == nil) != (tc.widths == nil) {
					t.Fatalf("pack %v, want widths %v", p, tc.widths)
				}
				return
			}
			if !slices.Equal(p.widths, tc.widths) {
				t.Fatalf("widths %v, want %v", p.widths, tc.widths)
			}
			n := tc.keys[0].Len()
			vals, wide := p.pack(tc.keys, n, &packScratch{})
			if !slices.Equal(wide, tc.wide) {
				t.Fatalf("wide %v, want %v", wide, tc.wide)
			}
			// Packed keys are distinct for distinct rows (NULL apart from 0).
			seen := map[int64]int{}
			for i, v := range vals {
				if wide != nil && wide[i] {
					continue
				}
				if j, dup := seen[v]; dup {
					t.Fatalf("rows %d and %d pack to %#x", j, i, v)
				}
				seen[v] = i
			}
		})
	}
}
