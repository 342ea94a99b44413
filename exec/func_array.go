package exec

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/vectorized"
)

// Flink's collection functions over ARRAY and MAP values. A NULL array
// gives NULL; elements compare as SQL values of one type, NULL equal to
// NULL (Flink compares with Java's equals).
func init() {
	register(resolveArrayContains(false), "array_contains")
	register(resolveArrayContains(true), "array_position")
	register(resolveArrayJoin, "array_join")
	register(resolveArrayExtreme(-1), "array_min")
	register(resolveArrayExtreme(1), "array_max")
	register(resolveElement, "element")
	register(resolveArrayPick("array_reverse"), "array_reverse")
	register(resolveArrayPick("array_distinct"), "array_distinct")
	register(resolveArrayRemove, "array_remove")
	register(resolveArrayAdd(false), "array_append")
	register(resolveArrayAdd(true), "array_prepend")
	register(resolveArrayConcat, "array_concat")
	register(resolveArraySlice, "array_slice")
	register(resolveArraySort, "array_sort")
	register(resolveArrayUnion, "array_union")
	register(resolveMapPart(true), "map_keys")
	register(resolveMapPart(false), "map_values")
}

func listArg(types []arrow.DataType, n int) (*arrow.ListType, error) {
	if err := wantArgs(types, n, n); err != nil {
		return nil, err
	}
	lt, ok := types[0].(*arrow.ListType)
	if !ok {
		return nil, fmt.Errorf("argument 1 must be an ARRAY, not %s", types[0])
	}
	return lt, nil
}

// elementMatcher returns whether element j of values equals needle[i]:
// both NULL, or both not NULL and equal.
func elementMatcher(values, needle arrow.Array) (func(j, i int) bool, error) {
	cmp, err := vectorized.NewComparator(values, needle)
	if err != nil {
		return nil, err
	}
	return func(j, i int) bool {
		if values.IsNull(j) || needle.IsNull(i) {
			return values.IsNull(j) && needle.IsNull(i)
		}
		return cmp(j, i) == 0
	}, nil
}

// resolveArrayContains is ARRAY_CONTAINS(arr, x), a BOOLEAN, or with
// position ARRAY_POSITION(arr, x), the 1-based INT position of x's first
// occurrence, 0 without one.
func resolveArrayContains(position bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		lt, err := listArg(types, 2)
		if err != nil {
			return nil, err
		}
		if !vectorized.CanCast(types[1], lt.Elem()) {
			return nil, fmt.Errorf("cannot look for a %s in an ARRAY of %s", types[1], lt.Elem())
		}
		ret := arrow.DataType(arrow.FixedWidthTypes.Boolean)
		if position {
			ret = arrow.PrimitiveTypes.Int32
		}
		return &impl{ret: ret, args: []arrow.DataType{types[0], lt.Elem()}, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			l := a[0].(*array.List)
			eq, err := elementMatcher(l.ListValues(), a[1])
			if err != nil {
				return nil, err
			}
			b := array.NewBuilder(ec.Mem, ret)
			defer b.Release()
			for i := 0; i < n; i++ {
				if l.IsNull(i) {
					b.AppendNull()
					continue
				}
				lo, hi := l.ValueOffsets(i)
				at := int32(0)
				for j := lo; j < hi; j++ {
					if eq(int(j), i) {
						at = int32(j-lo) + 1
						break
					}
				}
				if position {
					b.(*array.Int32Builder).Append(at)
				} else {
					b.(*array.BooleanBuilder).Append(at > 0)
				}
			}
			return b.NewArray(), nil
		}}, nil
	}
}

// resolveArrayJoin is ARRAY_JOIN(arr, sep [, nullText]): the elements as
// strings joined by sep, NULL elements left out or written as nullText.
func resolveArrayJoin(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 3); err != nil {
		return nil, err
	}
	lt, err := listArg(types[:1], 1)
	if err != nil {
		return nil, err
	}
	if !vectorized.IsString(lt.Elem()) {
		return nil, fmt.Errorf("argument 1 must be an ARRAY of strings, not %s", types[0])
	}
	st, err := stringArgs(types[1:])
	if err != nil {
		return nil, err
	}
	return &impl{ret: strType, args: append([]arrow.DataType{nil}, st...), fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		l := a[0].(*array.List)
		vals := l.ListValues()
		var sb strings.Builder
		return mapNullableStrings(ec, a, n, false, func(i int) (string, bool, error) {
			sb.Reset()
			lo, hi := l.ValueOffsets(i)
			first := true
			for j := lo; j < hi; j++ {
				s := ""
				switch {
				case vals.IsValid(int(j)):
					s = vectorized.StringAt(vals, int(j))
				case len(a) == 3:
					s = vectorized.StringAt(a[2], i)
				default:
					continue
				}
				if !first {
					if err := writeBounded(&sb, "ARRAY_JOIN", vectorized.StringAt(a[1], i)); err != nil {
						return "", false, err
					}
				}
				first = false
				if err := writeBounded(&sb, "ARRAY_JOIN", s); err != nil {
					return "", false, err
				}
			}
			return sb.String(), true, nil
		})
	}}, nil
}

// resolveArrayExtreme is ARRAY_MIN (dir -1) and ARRAY_MAX (dir 1): the
// least or greatest non-NULL element, NULL for an array without one.
func resolveArrayExtreme(dir int) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		lt, err := listArg(types, 1)
		if err != nil {
			return nil, err
		}
		if vectorized.IsNested(lt.Elem()) {
			return nil, fmt.Errorf("ARRAY elements of type %s have no order", lt.Elem())
		}
		return &impl{ret: lt.Elem(), fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			l := a[0].(*array.List)
			vals := l.ListValues()
			cmp, err := vectorized.NewComparator(vals, vals)
			if err != nil {
				return nil, err
			}
			idx := make([]int64, n)
			for i := range idx {
				idx[i] = -1
				if l.IsNull(i) {
					continue
				}
				lo, hi := l.ValueOffsets(i)
				for j := lo; j < hi; j++ {
					if vals.IsValid(int(j)) && (idx[i] < 0 || cmp(int(j), int(idx[i]))*dir > 0) {
						idx[i] = j
					}
				}
			}
			return vectorized.Take(ctx, ec.Mem, vals, idx)
		}}, nil
	}
}

// resolveElement is ELEMENT(arr): the one element of arr, NULL for an
// empty array; more than one is an error, as in Flink.
func resolveElement(types []arrow.DataType, _ []Expr) (*impl, error) {
	lt, err := listArg(types, 1)
	if err != nil {
		return nil, err
	}
	return &impl{ret: lt.Elem(), fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		l := a[0].(*array.List)
		idx := make([]int64, n)
		for i := range idx {
			idx[i] = -1
			if l.IsNull(i) {
				continue
			}
			switch lo, hi := l.ValueOffsets(i); {
			case hi-lo > 1:
				return nil, fmt.Errorf("%w: ELEMENT of an array of %d elements (it takes one or none)", vectorized.ErrInvalidValue, hi-lo)
			case hi > lo:
				idx[i] = lo
			}
		}
		return vectorized.Take(ctx, ec.Mem, l.ListValues(), idx)
	}}, nil
}

// resolveArrayPick is ARRAY_REVERSE(arr) and ARRAY_DISTINCT(arr) (the
// first of equal elements, in order).
func resolveArrayPick(name string) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		lt, err := listArg(types, 1)
		if err != nil {
			return nil, err
		}
		return &impl{ret: lt, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			l := a[0].(*array.List)
			vals := l.ListValues()
			return pickElements(ctx, ec.Mem, l, func(i int, lo, hi int64, pick func(int64)) {
				if name == "array_reverse" {
					for j := hi - 1; j >= lo; j-- {
						pick(j)
					}
					return
				}
				keep := distinctPicker(vals, pick)
				for j := lo; j < hi; j++ {
					keep(j)
				}
			})
		}}, nil
	}
}

// resolveArraySort is ARRAY_SORT(arr [, ascending [, nullsFirst]]): the
// elements in order, ascending by default, NULLs first when ascending and
// last when descending unless nullsFirst says.
func resolveArraySort(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 3); err != nil {
		return nil, err
	}
	lt, err := listArg(types[:1], 1)
	if err != nil {
		return nil, err
	}
	if vectorized.IsNested(lt.Elem()) {
		return nil, fmt.Errorf("ARRAY elements of type %s have no order", lt.Elem())
	}
	for i, t := range types[1:] {
		if t.ID() != arrow.BOOL && t.ID() != arrow.NULL {
			return nil, fmt.Errorf("argument %d must be a BOOLEAN, not %s", i+2, t)
		}
	}
	boolType := arrow.FixedWidthTypes.Boolean
	return &impl{ret: lt, args: []arrow.DataType{nil, boolType, boolType}[:len(types)], fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		l := a[0].(*array.List)
		vals := l.ListValues()
		cmp, err := vectorized.NewComparator(vals, vals)
		if err != nil {
			return nil, err
		}
		return buildList(ctx, ec.Mem, lt, n, vals, func(i int, pick func(int64)) bool {
			if vectorized.AnyNull(a, i) {
				return false
			}
			asc := len(a) < 2 || a[1].(*array.Boolean).Value(i)
			nullsFirst := asc
			if len(a) == 3 {
				nullsFirst = a[2].(*array.Boolean).Value(i)
			}
			lo, hi := l.ValueOffsets(i)
			idx := make([]int64, 0, hi-lo)
			for j := lo; j < hi; j++ {
				idx = append(idx, j)
			}
			slices.SortStableFunc(idx, func(x, y int64) int {
				xn, yn := vals.IsNull(int(x)), vals.IsNull(int(y))
				switch {
				case xn || yn:
					if xn == yn {
						return 0
					}
					if xn == nullsFirst {
						return -1
					}
					return 1
				case asc:
					return cmp(int(x), int(y))
				}
				return cmp(int(y), int(x))
			})
			for _, j := range idx {
				pick(j)
			}
			return true
		})
	}}, nil
}

// resolveArrayUnion is ARRAY_UNION(a, b): the distinct elements of a, then
// those of b not in a, in order; NULL if either array is.
func resolveArrayUnion(types []arrow.DataType, _ []Expr) (*impl, error) {
	lt, err := listArg(types, 2)
	if err != nil {
		return nil, err
	}
	if !arrow.TypeEqual(types[1], lt) && types[1].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument 2 is %s, not %s like argument 1", types[1], lt)
	}
	return &impl{ret: lt, args: []arrow.DataType{lt, lt}, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		l, r := a[0].(*array.List), a[1].(*array.List)
		src, err := array.Concatenate([]arrow.Array{l.ListValues(), r.ListValues()}, ec.Mem)
		if err != nil {
			return nil, err
		}
		defer src.Release()
		base := int64(l.ListValues().Len())
		return buildList(ctx, ec.Mem, lt, n, src, func(i int, pick func(int64)) bool {
			if vectorized.AnyNull(a, i) {
				return false
			}
			keep := distinctPicker(src, pick)
			lo, hi := l.ValueOffsets(i)
			for j := lo; j < hi; j++ {
				keep(j)
			}
			lo, hi = r.ValueOffsets(i)
			for j := lo; j < hi; j++ {
				keep(base + j)
			}
			return true
		})
	}}, nil
}

// distinctPicker returns a function passing element j of vals on to pick
// unless an equal element passed before (NULLs are equal; FormatValue
// tells equal values of one type apart as Java's equals does: -0.0 from
// 0.0, NaN equal to NaN).
func distinctPicker(vals arrow.Array, pick func(int64)) func(j int64) {
	seen := map[string]bool{}
	sawNull := false
	return func(j int64) {
		if vals.IsNull(int(j)) {
			if !sawNull {
				pick(j)
			}
			sawNull = true
			return
		}
		if k := vectorized.FormatValue(vals, int(j)); !seen[k] {
			seen[k] = true
			pick(j)
		}
	}
}

// resolveArrayRemove is ARRAY_REMOVE(arr, x): arr without the elements
// equal to x (NULL removes the NULLs).
func resolveArrayRemove(types []arrow.DataType, _ []Expr) (*impl, error) {
	lt, err := listArg(types, 2)
	if err != nil {
		return nil, err
	}
	if !vectorized.CanCast(types[1], lt.Elem()) {
		return nil, fmt.Errorf("cannot remove a %s from an ARRAY of %s", types[1], lt.Elem())
	}
	return &impl{ret: lt, args: []arrow.DataType{nil, lt.Elem()}, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		l := a[0].(*array.List)
		eq, err := elementMatcher(l.ListValues(), a[1])
		if err != nil {
			return nil, err
		}
		return pickElements(ctx, ec.Mem, l, func(i int, lo, hi int64, pick func(int64)) {
			for j := lo; j < hi; j++ {
				if !eq(int(j), i) {
					pick(j)
				}
			}
		})
	}}, nil
}

// pickElements builds an array of l's type whose row i holds the elements
// of l that rows picks (by index into l's values), NULL where l is.
func pickElements(ctx context.Context, mem memory.Allocator, l *array.List, rows func(i int, lo, hi int64, pick func(int64))) (arrow.Array, error) {
	return buildList(ctx, mem, l.DataType(), l.Len(), l.ListValues(), func(i int, pick func(int64)) bool {
		if l.IsNull(i) {
			return false
		}
		lo, hi := l.ValueOffsets(i)
		rows(i, lo, hi, pick)
		return true
	})
}

// buildList builds a list array of type typ and n rows whose row i holds
// the elements of src that rows picks (by index), or is NULL where rows
// returns false.
func buildList(ctx context.Context, mem memory.Allocator, typ arrow.DataType, n int, src arrow.Array, rows func(i int, pick func(int64)) bool) (arrow.Array, error) {
	offsets := memory.NewResizableBuffer(mem)
	defer offsets.Release()
	offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	valid := memory.NewResizableBuffer(mem)
	defer valid.Release()
	valid.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := valid.Bytes()
	clear(bits)
	var idx []int64
	pick := func(j int64) { idx = append(idx, j) }
	offs[0] = 0
	nulls := 0
	for i := 0; i < n; i++ {
		if rows(i, pick) {
			bitutil.SetBit(bits, i)
		} else {
			nulls++
		}
		if len(idx) > math.MaxInt32 {
			return nil, fmt.Errorf("%w: an ARRAY of more than %d elements", vectorized.ErrOverflow, math.MaxInt32)
		}
		offs[i+1] = int32(len(idx))
	}
	child, err := vectorized.Take(ctx, mem, src, idx)
	if err != nil {
		return nil, err
	}
	defer child.Release()
	d := array.NewData(typ, n, []*memory.Buffer{valid, offsets}, []arrow.ArrayData{child.Data()}, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

// resolveArrayAdd is ARRAY_APPEND(arr, x) and, with front,
// ARRAY_PREPEND(arr, x): arr with x added at its end or start.
func resolveArrayAdd(front bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		lt, err := listArg(types, 2)
		if err != nil {
			return nil, err
		}
		if !vectorized.CanCast(types[1], lt.Elem()) {
			return nil, fmt.Errorf("cannot add a %s to an ARRAY of %s", types[1], lt.Elem())
		}
		return &impl{ret: lt, args: []arrow.DataType{nil, lt.Elem()}, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			l := a[0].(*array.List)
			src, err := array.Concatenate([]arrow.Array{l.ListValues(), a[1]}, ec.Mem)
			if err != nil {
				return nil, err
			}
			defer src.Release()
			base := int64(l.ListValues().Len())
			return buildList(ctx, ec.Mem, lt, n, src, func(i int, pick func(int64)) bool {
				if l.IsNull(i) {
					return false
				}
				if front {
					pick(base + int64(i))
				}
				lo, hi := l.ValueOffsets(i)
				for j := lo; j < hi; j++ {
					pick(j)
				}
				if !front {
					pick(base + int64(i))
				}
				return true
			})
		}}, nil
	}
}

// resolveArrayConcat is ARRAY_CONCAT(arr1, ...): the arrays' elements one
// after the other; NULL if any array is.
func resolveArrayConcat(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) == 0 {
		return nil, fmt.Errorf("needs at least one ARRAY")
	}
	lt, err := listArg(types[:1], 1)
	if err != nil {
		return nil, err
	}
	for i, t := range types {
		if !arrow.TypeEqual(t, lt) && t.ID() != arrow.NULL {
			return nil, fmt.Errorf("argument %d is %s, not %s like argument 1", i+1, t, lt)
		}
	}
	return &impl{ret: lt, args: repeatType(lt, len(types)), fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		lists := make([]*array.List, len(a))
		values := make([]arrow.Array, len(a))
		bases := make([]int64, len(a))
		for k, x := range a {
			lists[k] = x.(*array.List)
			values[k] = lists[k].ListValues()
			if k > 0 {
				bases[k] = bases[k-1] + int64(values[k-1].Len())
			}
		}
		src, err := array.Concatenate(values, ec.Mem)
		if err != nil {
			return nil, err
		}
		defer src.Release()
		return buildList(ctx, ec.Mem, lt, n, src, func(i int, pick func(int64)) bool {
			if vectorized.AnyNull(a, i) {
				return false
			}
			for k, l := range lists {
				lo, hi := l.ValueOffsets(i)
				for j := lo; j < hi; j++ {
					pick(bases[k] + j)
				}
			}
			return true
		})
	}}, nil
}

// resolveArraySlice is ARRAY_SLICE(arr, from [, to]): the elements from
// position from to to, inclusive; positions count from 1 (0 is the start
// too), negative ones from the end, to defaults to the end.
func resolveArraySlice(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 3); err != nil {
		return nil, err
	}
	lt, err := listArg(types[:1], 1)
	if err != nil {
		return nil, err
	}
	for _, t := range types[1:] {
		if !isIntegerType(t) && t.ID() != arrow.NULL {
			return nil, fmt.Errorf("ARRAY_SLICE positions must be integers, not %s", t)
		}
	}
	return &impl{ret: lt, args: []arrow.DataType{nil, i64Type, i64Type}[:len(types)], fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		l := a[0].(*array.List)
		from := vectorized.Values[int64](a[1])
		return buildList(ctx, ec.Mem, lt, n, l.ListValues(), func(i int, pick func(int64)) bool {
			if vectorized.AnyNull(a, i) {
				return false
			}
			lo, hi := l.ValueOffsets(i)
			size := hi - lo
			// position converts a position to a 0-based index.
			position := func(p int64) int64 {
				switch {
				case p < 0:
					return size + p
				case p == 0:
					return 0
				}
				return p - 1
			}
			start, end := position(from[i]), size-1
			if len(a) == 3 {
				end = position(vectorized.Values[int64](a[2])[i])
			}
			for j := max(start, 0); j <= min(end, size-1); j++ {
				pick(lo + j)
			}
			return true
		})
	}}, nil
}

// resolveMapPart is MAP_KEYS(m) (keys) and MAP_VALUES(m): the map's keys or
// values as an ARRAY, in the map's order.
func resolveMapPart(keys bool) resolver {
	return func(types []arrow.DataType, _ []Expr) (*impl, error) {
		if err := wantArgs(types, 1, 1); err != nil {
			return nil, err
		}
		mt, ok := types[0].(*arrow.MapType)
		if !ok {
			return nil, fmt.Errorf("argument 1 must be a MAP, not %s", types[0])
		}
		elem := mt.ItemType()
		if keys {
			elem = mt.KeyType()
		}
		ret := arrow.ListOf(elem)
		return &impl{ret: ret, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			m := a[0].(*array.Map)
			part := m.Items()
			if keys {
				part = m.Keys()
			}
			d := m.Data()
			// The map's validity and offsets over the keys or values.
			ld := array.NewData(ret, d.Len(), d.Buffers()[:2], []arrow.ArrayData{part.Data()}, d.NullN(), d.Offset())
			defer ld.Release()
			return array.MakeFromData(ld), nil
		}}, nil
	}
}
