package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/vectorized"
)

// Functions over ARRAY, MAP and ROW values. "field" is the one function
// whose result type depends on a literal (the field index): the binder
// builds those calls itself, NewCall resolves them with the literal.
func init() {
	register(resolveField, "field")
	register(resolveElementAt, "element_at")
	register(resolveCardinality, "cardinality")
	register(resolveArray, "array")
	register(resolveMap, "map")
	register(resolveRow, "row")
}

func resolveField(types []arrow.DataType, args []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	st, ok := types[0].(*arrow.StructType)
	if !ok {
		return nil, fmt.Errorf("needs a ROW argument, got %s", types[0])
	}
	var lit *LiteralExpr
	if args != nil {
		lit, _ = args[1].(*LiteralExpr)
	}
	if lit == nil || !lit.Value.IsValid() || lit.Value.DataType().ID() != arrow.INT32 {
		return nil, fmt.Errorf("needs a constant field index")
	}
	idx := int(lit.Value.(*scalar.Int32).Value)
	if idx < 0 || idx >= st.NumFields() {
		return nil, fmt.Errorf("field index %d out of range for %s", idx, st)
	}
	return &impl{ret: st.Field(idx).Type, fn: func(_ context.Context, ec *Context, a []arrow.Array, _ int) (arrow.Array, error) {
		return structField(ec.Mem, a[0].(*array.Struct), idx), nil
	}}, nil
}

// structField is field idx of s, NULL where s is: Arrow keeps whatever
// values the field has under NULL rows of its struct.
func structField(mem memory.Allocator, s *array.Struct, idx int) arrow.Array {
	f := s.Field(idx)
	if s.NullN() == 0 {
		f.Retain()
		return f
	}
	d := f.Data()
	off, n := d.Offset(), f.Len()
	valid := memory.NewResizableBuffer(mem)
	defer valid.Release()
	valid.Resize(int(bitutil.BytesForBits(int64(off + n))))
	bits := valid.Bytes()
	clear(bits)
	nulls := 0
	for i := range n {
		if s.IsValid(i) && f.IsValid(i) {
			bitutil.SetBit(bits, off+i)
		} else {
			nulls++
		}
	}
	bufs := append([]*memory.Buffer{valid}, d.Buffers()[1:]...)
	out := array.NewData(d.DataType(), n, bufs, d.Children(), nulls, off)
	defer out.Release()
	return array.MakeFromData(out)
}

// resolveElementAt is arr[i] (1-based, NULL outside the array, as in
// Flink) and map[key] (NULL without the key; the last entry wins).
func resolveElementAt(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 2, 2); err != nil {
		return nil, err
	}
	switch t := types[0].(type) {
	case *arrow.MapType:
		return &impl{ret: t.ItemType(), args: []arrow.DataType{nil, t.KeyType()}, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			m := a[0].(*array.Map)
			cmp, err := vectorized.NewComparator(m.Keys(), a[1])
			if err != nil {
				return nil, err
			}
			idx := make([]int64, n)
			for i := range idx {
				idx[i] = -1
				if m.IsNull(i) || a[1].IsNull(i) {
					continue
				}
				lo, hi := m.ValueOffsets(i)
				for j := hi - 1; j >= lo; j-- {
					if cmp(int(j), i) == 0 {
						idx[i] = j
						break
					}
				}
			}
			return vectorized.Take(ctx, ec.Mem, m.Items(), idx)
		}}, nil
	case *arrow.ListType:
		if !isIntegerType(types[1]) && types[1].ID() != arrow.NULL {
			return nil, fmt.Errorf("array index must be an integer, got %s", types[1])
		}
		return &impl{ret: t.Elem(), args: []arrow.DataType{nil, arrow.PrimitiveTypes.Int64}, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
			l, ix := a[0].(*array.List), a[1].(*array.Int64)
			idx := make([]int64, n)
			for i := range idx {
				idx[i] = -1
				if l.IsNull(i) || ix.IsNull(i) {
					continue
				}
				lo, hi := l.ValueOffsets(i)
				if k := ix.Value(i); k >= 1 && k <= hi-lo {
					idx[i] = lo + k - 1
				}
			}
			return vectorized.Take(ctx, ec.Mem, l.ListValues(), idx)
		}}, nil
	}
	return nil, fmt.Errorf("needs an ARRAY or MAP, got %s", types[0])
}

func isIntegerType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return true
	}
	return false
}

func resolveCardinality(types []arrow.DataType, _ []Expr) (*impl, error) {
	if err := wantArgs(types, 1, 1); err != nil {
		return nil, err
	}
	if _, ok := types[0].(arrow.ListLikeType); !ok {
		return nil, fmt.Errorf("needs an ARRAY or MAP, got %s", types[0])
	}
	return &impl{ret: arrow.PrimitiveTypes.Int32, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		l := a[0].(array.ListLike)
		out := array.NewInt32Builder(ec.Mem)
		defer out.Release()
		out.Reserve(n)
		for i := range n {
			if l.IsNull(i) {
				out.UnsafeAppendBoolToBitmap(false)
				continue
			}
			lo, hi := l.ValueOffsets(i)
			out.UnsafeAppend(int32(hi - lo))
		}
		return out.NewArray(), nil
	}}, nil
}

// interleave returns the values of cols row by row (cols[0][0],
// cols[1][0], ..., cols[0][1], ...), the layout of list values built from
// one value per column.
func interleave(ctx context.Context, mem memory.Allocator, cols []arrow.Array, n int) (arrow.Array, error) {
	// One column, or one row, is in that layout already. Taking it again
	// copies every level of a nested value, so ARRAY[ARRAY[...]] n deep
	// cost n^3 (480 levels took 31 s to fold).
	if len(cols) == 1 {
		cols[0].Retain()
		return cols[0], nil
	}
	all, err := array.Concatenate(cols, mem)
	if err != nil || n == 1 {
		return all, err
	}
	defer all.Release()
	idx := make([]int64, 0, n*len(cols))
	for i := range n {
		for c := range cols {
			idx = append(idx, int64(c*n+i))
		}
	}
	return vectorized.Take(ctx, mem, all, idx)
}

// listOf builds a list (or map) array of n rows of k values each over
// the values' data.
func listOf(mem memory.Allocator, typ arrow.DataType, values []arrow.ArrayData, n, k int) arrow.Array {
	ob := memory.NewResizableBuffer(mem)
	defer ob.Release()
	ob.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	for i := range offs {
		offs[i] = int32(i * k)
	}
	d := array.NewData(typ, n, []*memory.Buffer{nil, ob}, values, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// resolveArray is ARRAY[a, b, ...]; the binder casts the elements to one type.
func resolveArray(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) == 0 {
		return nil, fmt.Errorf("needs at least one element")
	}
	t, err := commonArgs(types)
	if err != nil {
		return nil, err
	}
	return &impl{ret: arrow.ListOf(t), args: repeatType(t, len(types)), fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		vals, err := interleave(ctx, ec.Mem, a, n)
		if err != nil {
			return nil, err
		}
		defer vals.Release()
		return listOf(ec.Mem, arrow.ListOf(t), []arrow.ArrayData{vals.Data()}, n, len(a)), nil
	}}, nil
}

// resolveMap is MAP[k1, v1, k2, v2, ...]; keys must not be NULL.
func resolveMap(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) == 0 || len(types)%2 != 0 {
		return nil, fmt.Errorf("needs key and value pairs, got %d arguments", len(types))
	}
	var kts, vts []arrow.DataType
	for i := 0; i < len(types); i += 2 {
		kts, vts = append(kts, types[i]), append(vts, types[i+1])
	}
	kt, err := commonArgs(kts)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	vt, err := commonArgs(vts)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if vectorized.IsNested(kt) || kt.ID() == arrow.NULL {
		return nil, fmt.Errorf("map keys cannot be of type %s", kt)
	}
	ret := arrow.MapOf(kt, vt)
	var argTypes []arrow.DataType
	for range len(types) / 2 {
		argTypes = append(argTypes, kt, vt)
	}
	return &impl{ret: ret, args: argTypes, fn: func(ctx context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		var ks, vs []arrow.Array
		for i := 0; i < len(a); i += 2 {
			if a[i].NullN() > 0 {
				return nil, fmt.Errorf("%w: map key is NULL", vectorized.ErrInvalidValue)
			}
			ks, vs = append(ks, a[i]), append(vs, a[i+1])
		}
		keys, err := interleave(ctx, ec.Mem, ks, n)
		if err != nil {
			return nil, err
		}
		defer keys.Release()
		items, err := interleave(ctx, ec.Mem, vs, n)
		if err != nil {
			return nil, err
		}
		defer items.Release()
		entries := array.NewData(ret.Elem(), keys.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{keys.Data(), items.Data()}, 0, 0)
		defer entries.Release()
		return listOf(ec.Mem, ret, []arrow.ArrayData{entries}, n, len(ks)), nil
	}}, nil
}

// resolveRow is ROW(a, b, ...); fields are named EXPR$0, EXPR$1, ... as in
// Flink.
func resolveRow(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) == 0 {
		return nil, fmt.Errorf("needs at least one field")
	}
	fields := make([]arrow.Field, len(types))
	for i, t := range types {
		fields[i] = arrow.Field{Name: fmt.Sprintf("EXPR$%d", i), Type: t, Nullable: true}
	}
	ret := arrow.StructOf(fields...)
	return &impl{ret: ret, fn: func(_ context.Context, _ *Context, a []arrow.Array, n int) (arrow.Array, error) {
		children := make([]arrow.ArrayData, len(a))
		for i, c := range a {
			children[i] = c.Data()
		}
		d := array.NewData(ret, n, []*memory.Buffer{nil}, children, 0, 0)
		defer d.Release()
		return array.MakeFromData(d), nil
	}}, nil
}
