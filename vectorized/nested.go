package vectorized

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// IsNested reports whether dt is a list variant, a map or a struct.
func IsNested(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW, arrow.FIXED_SIZE_LIST, arrow.MAP, arrow.STRUCT:
		return true
	}
	return false
}

// MaxMapNesting is how many MAP types a type may nest. arrow-go makes the
// value array of a MAP twice (as the field of its entries and as its
// items), so each MAP level doubles the work of making an array of the
// type: one row of MAPs 18 deep took 13 s to ingest, 25 deep ran for
// minutes past 7 GB, and no cancel stopped it.
const MaxMapNesting = 8

// MapNesting returns how many MAP types nest along the deepest path of dt.
func MapNesting(dt arrow.DataType) int {
	n := 0
	switch t := dt.(type) {
	case *arrow.MapType:
		return 1 + max(MapNesting(t.KeyType()), MapNesting(t.ItemType()))
	case arrow.NestedType:
		for _, f := range t.Fields() {
			n = max(n, MapNesting(f.Type))
		}
	}
	return n
}

// tri is a SQL truth value.
type tri int8

const (
	triFalse tri = iota
	triTrue
	triNull
)

// nestedEq compares a[i] with b[j] as SQL's = does on rows and arrays:
// NULL if either is NULL; FALSE if a part differs (arrays of different
// lengths differ); else NULL if a compared part was NULL, else TRUE. Null
// safe, as IS NOT DISTINCT FROM, two NULLs (values or parts) are the same
// and a NULL differs from any value: never NULL.
type nestedEq func(i, j int) tri

func newNestedEq(a, b arrow.Array, nullSafe bool) (nestedEq, error) {
	if !arrow.TypeEqual(a.DataType(), b.DataType()) {
		return nil, fmt.Errorf("compare: mismatched types %s and %s", a.DataType(), b.DataType())
	}
	var parts func(i, j int) tri
	switch a := a.(type) {
	case *array.Struct:
		b := b.(*array.Struct)
		fields := make([]nestedEq, a.NumField())
		for f := range fields {
			eq, err := newNestedEq(a.Field(f), b.Field(f), nullSafe)
			if err != nil {
				return nil, err
			}
			fields[f] = eq
		}
		parts = func(i, j int) tri {
			res := triTrue
			for _, eq := range fields {
				switch eq(i, j) {
				case triFalse:
					return triFalse
				case triNull:
					res = triNull
				}
			}
			return res
		}
	case array.ListLike:
		b := b.(array.ListLike)
		elems, err := newNestedEq(a.ListValues(), b.ListValues(), nullSafe)
		if err != nil {
			return nil, err
		}
		parts = func(i, j int) tri {
			alo, ahi := a.ValueOffsets(i)
			blo, bhi := b.ValueOffsets(j)
			if ahi-alo != bhi-blo {
				return triFalse
			}
			res := triTrue
			for k := range ahi - alo {
				switch elems(int(alo+k), int(blo+k)) {
				case triFalse:
					return triFalse
				case triNull:
					res = triNull
				}
			}
			return res
		}
	default:
		cmp, err := NewComparator(a, b)
		if err != nil {
			return nil, err
		}
		parts = func(i, j int) tri {
			if cmp(i, j) == 0 {
				return triTrue
			}
			return triFalse
		}
	}
	return func(i, j int) tri {
		an, bn := a.IsNull(i), b.IsNull(j)
		switch {
		case nullSafe && (an || bn):
			if an && bn {
				return triTrue
			}
			return triFalse
		case an || bn:
			return triNull
		}
		return parts(i, j)
	}, nil
}

// NestedEqual compares rows, arrays and maps row by row with SQL's = (or
// <> when negate), three-valued: a NULL part that could decide the result
// makes it NULL. Maps compare entry by entry in order.
func NestedEqual(mem memory.Allocator, a, b arrow.Array, negate bool) (arrow.Array, error) {
	eq, err := newNestedEq(a, b, false)
	if err != nil {
		return nil, err
	}
	out := array.NewBooleanBuilder(mem)
	defer out.Release()
	out.Reserve(a.Len())
	for i := range a.Len() {
		switch eq(i, i) {
		case triNull:
			out.AppendNull()
		case triTrue:
			out.UnsafeAppend(!negate)
		default:
			out.UnsafeAppend(negate)
		}
	}
	return out.NewArray(), nil
}

// NestedDistinct is IS DISTINCT FROM (IS NOT DISTINCT FROM when not
// distinct) on rows, arrays and maps, row by row: NULLs, at the top or in
// a part, equal each other and differ from values; never NULL.
func NestedDistinct(mem memory.Allocator, a, b arrow.Array, distinct bool) (arrow.Array, error) {
	eq, err := newNestedEq(a, b, true)
	if err != nil {
		return nil, err
	}
	vals := make([]bool, a.Len())
	for i := range vals {
		vals[i] = (eq(i, i) == triTrue) != distinct
	}
	return BoolsToArray(mem, vals, nil), nil
}

// canCastNested: a ROW to a ROW of as many fields (by position, as Flink
// casts rows, so ROW(1, 'x') goes into ROW<a INT, b STRING>), an ARRAY or
// MAP to one whose parts cast.
func canCastNested(from, to arrow.DataType) bool {
	switch to := to.(type) {
	case *arrow.StructType:
		f, ok := from.(*arrow.StructType)
		if !ok || f.NumFields() != to.NumFields() {
			return false
		}
		for i := range f.NumFields() {
			if !CanCast(f.Field(i).Type, to.Field(i).Type) {
				return false
			}
		}
		return true
	case *arrow.MapType:
		f, ok := from.(*arrow.MapType)
		return ok && CanCast(f.KeyType(), to.KeyType()) && CanCast(f.ItemType(), to.ItemType())
	case *arrow.ListType:
		f, ok := from.(*arrow.ListType)
		return ok && CanCast(f.Elem(), to.Elem())
	}
	return false
}

// castNested casts part by part; lists and maps keep their offsets.
func castNested(mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	d := a.Data()
	var children []arrow.ArrayData
	defer func() {
		for _, c := range children {
			c.Release()
		}
	}()
	bufs := d.Buffers()
	off := d.Offset()
	switch to := to.(type) {
	case *arrow.StructType:
		s := a.(*array.Struct)
		for i, f := range to.Fields() {
			c, err := Cast(mem, s.Field(i), f.Type) // fields are sliced to s
			if err == nil {
				if err = CheckNotNull(f, c, a); err != nil {
					c.Release()
				}
			}
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			children = append(children, c.Data())
			c.Data().Retain()
			c.Release()
		}
		if off != 0 && a.NullN() > 0 {
			// Children now start at row 0: so must the validity.
			valid := memory.NewResizableBuffer(mem)
			defer valid.Release()
			valid.Resize(int(bitutil.BytesForBits(int64(a.Len()))))
			bitutil.CopyBitmap(bufs[0].Bytes(), off, a.Len(), valid.Bytes(), 0)
			bufs = []*memory.Buffer{valid}
		} else if off != 0 {
			bufs = []*memory.Buffer{nil}
		}
		off = 0
	case arrow.ListLikeType: // list or map
		c, err := Cast(mem, a.(array.ListLike).ListValues(), to.Elem())
		if err != nil {
			return nil, err
		}
		if err := CheckNotNull(to.ElemField(), c, nil); err != nil {
			c.Release()
			return nil, err
		}
		children = append(children, c.Data())
		c.Data().Retain()
		c.Release()
	}
	out := array.NewData(to, a.Len(), bufs, children, a.NullN(), off)
	defer out.Release()
	return array.MakeFromData(out), nil
}

// CheckNotNull refuses NULLs in a part a (a struct field or list elements)
// of a NOT NULL field f, except under the NULL rows of its struct parent
// (when not nil).
func CheckNotNull(f arrow.Field, a, parent arrow.Array) error {
	if f.Nullable || a.NullN() == 0 {
		return nil
	}
	for i := range a.Len() {
		if a.IsNull(i) && (parent == nil || parent.IsValid(i)) {
			return fmt.Errorf("%w: NULL in NOT NULL %s", ErrInvalidValue, f.Name)
		}
	}
	return nil
}

// nestedStringBytes is the bytes of the strings and binaries in non-NULL
// a[i], nested at any depth: a lower bound of the length of its text.
func nestedStringBytes(a arrow.Array, i int) int64 {
	if a.IsNull(i) {
		return 0
	}
	switch x := a.(type) {
	case *array.String:
		return int64(x.ValueLen(i))
	case *array.LargeString:
		return int64(len(x.Value(i)))
	case *array.Binary:
		return int64(x.ValueLen(i))
	case *array.Struct:
		var n int64
		for f := 0; f < x.NumField(); f++ {
			n += nestedStringBytes(x.Field(f), i)
		}
		return n
	case array.ListLike: // lists and maps
		lo, hi := x.ValueOffsets(i)
		var n int64
		for j := lo; j < hi; j++ {
			n += nestedStringBytes(x.ListValues(), int(j))
		}
		return n
	}
	return 0
}
