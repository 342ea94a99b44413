package plan

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/sql"
)

// SQLSTATEs of misused ARRAY, MAP and ROW values.
const (
	stateUndefinedField   = "42703" // undefined_column: no such field
	stateDatatypeMismatch = "42804" // a field of a non-row, an index of a non-array
	stateNotNull          = "23502" // not_null_violation: a NOT NULL column without a value
	stateNameTooLong      = "42622" // name_too_long: a view's column name
	stateTooManyColumns   = "54011" // too_many_columns: a select list or VALUES row
)

func (b *binder) failState(state string, pos sql.Pos, format string, args ...any) {
	panic(bindFail{sql.StateErrorf(state, pos, format, args...)})
}

// bindPath resolves a dotted name: the longest prefix that names a column
// (qualified names first, as `t.c` means table t's column c), then the
// remaining parts as fields of that ROW column: r.a, t.r.a, r.a.b.
func (b *binder) bindPath(s *scope, id *sql.Ident) Expr {
	parts := id.Parts
	for k := min(len(parts), 3); k >= 1 && len(parts) > 1; k-- {
		qual := ""
		if k >= 2 {
			qual = parts[k-2]
		}
		if !s.hasColumn(qual, parts[k-1]) {
			continue
		}
		var x Expr = b.lookup(s, &sql.Ident{Pos: id.Pos, Parts: parts[:k]})
		for _, f := range parts[k:] {
			x = b.field(x, sql.Format(&sql.Ident{Parts: parts[:k]}), f, id.Pos)
		}
		return x
	}
	return b.lookup(s, id) // reports the error when nothing resolves
}

// hasColumn reports whether a column qual.name (or name, with qual empty) is in
// s or an enclosing scope.
func (s *scope) hasColumn(qual, name string) bool {
	for sc := s; sc != nil; sc = sc.parent {
		for _, c := range sc.cols {
			if c.name == name && (qual == "" && !c.hidden || qual != "" && c.qual == qual) {
				return true
			}
		}
	}
	return false
}

// field is x.name for a ROW value x (what names x in errors). Names match
// exactly, else case-insensitively when that is unambiguous (struct fields
// ingested from Arrow keep their case; unquoted SQL names are lower case).
func (b *binder) field(x Expr, what, name string, pos sql.Pos) Expr {
	st, ok := x.Type().(*arrow.StructType)
	if !ok {
		b.failState(stateDatatypeMismatch, pos, "cannot access field %q of %s: it is %s, not a ROW", name, what, SQLTypeName(x.Type()))
	}
	idx, ok := st.FieldIdx(name)
	if !ok {
		idx = -1
		for i, f := range st.Fields() {
			if strings.EqualFold(f.Name, name) {
				if idx >= 0 {
					b.failState(stateUndefinedField, pos, "field %q of %s is ambiguous (%q and %q); quote it", name, what, st.Field(idx).Name, f.Name)
				}
				idx = i
			}
		}
	}
	if idx < 0 {
		var names []string
		for _, f := range st.Fields() {
			names = append(names, f.Name)
		}
		b.failState(stateUndefinedField, pos, "field %q not found in %s of type %s%s", name, what, SQLTypeName(st), didYouMean(name, names))
	}
	return &Call{Fn: "field", Args: []Expr{x, &Const{Value: scalar.NewInt32Scalar(int32(idx))}}, Typ: st.Field(idx).Type}
}

func (b *binder) bindFieldAccess(e *sql.FieldAccess, sc *scope, node *Node, o exprOpts) Expr {
	x := b.bindScalar(e.X, sc, node, o.with(nil))
	b.inferParams(x)
	return b.field(x, sql.Format(e.X), e.Field, e.Pos)
}

// bindSubscript is arr[i] (1-based; NULL outside the array) or map[key].
func (b *binder) bindSubscript(e *sql.Subscript, sc *scope, node *Node, o exprOpts) Expr {
	x := b.bindScalar(e.X, sc, node, o.with(nil))
	b.inferParams(x)
	// A parameter index takes the index type, not the collection's.
	typed := func(i Expr, t arrow.DataType) Expr {
		if p, ok := i.(*ParamRef); ok && p.slot.typ == nil {
			p.slot.typ = t
		}
		return i
	}
	switch t := x.Type().(type) {
	case *arrow.MapType:
		k := b.coerceLiteral(b.bindScalar(e.Index, sc, node, o.with(t.KeyType())), t.KeyType())
		return b.call(e.Pos, "element_at", x, typed(k, t.KeyType()))
	case *arrow.ListType:
		i := b.bindScalar(e.Index, sc, node, o.with(arrow.PrimitiveTypes.Int64))
		return b.call(e.Pos, "element_at", x, typed(i, arrow.PrimitiveTypes.Int64))
	}
	b.failState(stateDatatypeMismatch, e.Pos, "cannot subscript %s: it is %s, not an ARRAY or MAP", sql.Format(e.X), SQLTypeName(x.Type()))
	return nil
}

// bindCollection is ARRAY[...] (elements of one common type) or MAP[k, v,
// ...] (keys of one type, values of one type).
func (b *binder) bindCollection(e *sql.Collection, sc *scope, node *Node, o exprOpts) Expr {
	if len(e.Elems) == 0 {
		// An empty collection takes its type from the context (a column
		// it is inserted into, the other side of a comparison).
		if o.hint != nil && o.hint.ID() == map[string]arrow.Type{"ARRAY": arrow.LIST, "MAP": arrow.MAP}[e.Kind] {
			return b.emptyCollection(o.hint)
		}
		b.fail(e.Pos, "%s[] needs at least one element, or a context that gives its type", e.Kind)
	}
	args := make([]Expr, len(e.Elems))
	for i, a := range e.Elems {
		args[i] = b.bindScalar(a, sc, node, o.with(nil))
	}
	if e.Kind == "ARRAY" {
		b.unify(args, e.Elems, "ARRAY elements")
		return b.call(e.Pos, "array", args...)
	}
	if len(args)%2 != 0 {
		b.fail(e.Pos, "MAP[] needs key and value pairs, got %d expressions", len(args))
	}
	var keys, vals []Expr
	var keySrc, valSrc []sql.Expr
	for i := 0; i < len(args); i += 2 {
		keys, vals = append(keys, args[i]), append(vals, args[i+1])
		keySrc, valSrc = append(keySrc, e.Elems[i]), append(valSrc, e.Elems[i+1])
	}
	b.unify(keys, keySrc, "MAP keys")
	b.unify(vals, valSrc, "MAP values")
	for i := range keys {
		args[2*i], args[2*i+1] = keys[i], vals[i]
	}
	return b.call(e.Pos, "map", args...)
}

// unify casts args (bound from srcs) to their common type in place.
func (b *binder) unify(args []Expr, srcs []sql.Expr, what string) {
	typ := arrow.DataType(arrow.Null)
	b.inferParams(args...)
	for i, a := range args {
		t, ok := commonType(typ, a.Type())
		if !ok {
			b.fail(srcs[i].Position(), "%s have types %s and %s with no common type", what, SQLTypeName(typ), SQLTypeName(a.Type()))
		}
		typ = t
	}
	if typ.ID() == arrow.NULL {
		return
	}
	for i := range args {
		args[i] = b.castTo(b.coerceLiteral(args[i], typ), typ, srcs[i].Position())
	}
}

// emptyCollection is a constant empty ARRAY or MAP of type typ.
func (b *binder) emptyCollection(typ arrow.DataType) Expr {
	bld := array.NewBuilder(memory.NewGoAllocator(), typ) // a plan constant
	defer bld.Release()
	bld.(interface{ Append(bool) }).Append(true)
	arr := bld.NewArray()
	defer arr.Release()
	s, err := scalar.GetScalar(arr, 0)
	if err != nil {
		b.fail(sql.Pos{}, "empty %s: %v", SQLTypeName(typ), err)
	}
	return &Const{Value: s}
}
