package exec

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// exprColumns returns the input columns e reads, sorted, or false if e
// contains an expression type this package does not know.
func exprColumns(e Expr) ([]int, bool) {
	var cols []int
	var walk func(e Expr) bool
	walk = func(e Expr) bool {
		switch x := e.(type) {
		case *ColumnExpr:
			cols = append(cols, x.Index)
		case *KeySetExpr:
			cols = append(cols, x.Index)
		case *KeySetsExpr:
			for _, k := range x.Sets {
				cols = append(cols, k.Index)
			}
		case *LiteralExpr:
		case *CastExpr:
			return walk(x.Input)
		case *CallExpr:
			for _, a := range x.Args {
				if !walk(a) {
					return false
				}
			}
		case *CaseExpr:
			for _, w := range x.Whens {
				if !walk(w.Cond) || !walk(w.Then) {
					return false
				}
			}
			if x.Else != nil {
				return walk(x.Else)
			}
		case *InExpr:
			if !walk(x.Input) {
				return false
			}
			for _, l := range x.List {
				if !walk(l) {
					return false
				}
			}
			if x.or != nil {
				return walk(x.or)
			}
		default:
			return false
		}
		return true
	}
	if !walk(e) {
		return nil, false
	}
	slices.Sort(cols)
	return slices.Compact(cols), true
}

// NarrowExpr rewrites e over only the columns of schema it reads: those
// columns (sorted), their schema, and e remapped to it. ok is false when
// exprColumns does not know e or e reads a column schema lacks.
func NarrowExpr(e Expr, schema *arrow.Schema) (cols []int, narrow *arrow.Schema, ne Expr, ok bool) {
	cols, narrow, nes, ok := narrowExprs(schema, e)
	if !ok {
		return nil, nil, nil, false
	}
	return cols, narrow, nes[0], true
}

// narrowExprs is NarrowExpr for several expressions over the union of the
// columns they read.
func narrowExprs(schema *arrow.Schema, es ...Expr) (cols []int, narrow *arrow.Schema, nes []Expr, ok bool) {
	for _, e := range es {
		c, ok := exprColumns(e)
		if !ok {
			return nil, nil, nil, false
		}
		cols = append(cols, c...)
	}
	slices.Sort(cols)
	cols = slices.Compact(cols)
	if len(cols) > 0 && (cols[0] < 0 || cols[len(cols)-1] >= schema.NumFields()) {
		return nil, nil, nil, false
	}
	to := make(map[int]int, len(cols))
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		to[c] = i
		fields[i] = schema.Field(c)
	}
	nes = make([]Expr, len(es))
	for i, e := range es {
		nes[i] = remapColumns(e, to)
	}
	return cols, arrow.NewSchema(fields, nil), nes, true
}

// remapColumns returns a copy of e reading column to[i] where e read
// column i; e must pass exprColumns.
func remapColumns(e Expr, to map[int]int) Expr {
	switch x := e.(type) {
	case *ColumnExpr:
		c := *x
		c.Index = to[x.Index]
		return &c
	case *KeySetExpr:
		c := *x
		c.Index = to[x.Index]
		return &c
	case *KeySetsExpr:
		c := *x
		c.Sets = make([]*KeySetExpr, len(x.Sets))
		for i, k := range x.Sets {
			c.Sets[i] = remapColumns(k, to).(*KeySetExpr)
		}
		return &c
	case *CastExpr:
		c := *x
		c.Input = remapColumns(x.Input, to)
		return &c
	case *CallExpr:
		c := *x
		c.Args = make([]Expr, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = remapColumns(a, to)
		}
		return &c
	case *CaseExpr:
		c := *x
		c.Whens = make([]When, len(x.Whens))
		for i, w := range x.Whens {
			c.Whens[i] = When{Cond: remapColumns(w.Cond, to), Then: remapColumns(w.Then, to)}
		}
		if x.Else != nil {
			c.Else = remapColumns(x.Else, to)
		}
		return &c
	case *InExpr:
		c := *x
		c.Input = remapColumns(x.Input, to)
		c.List = make([]Expr, len(x.List))
		for i, l := range x.List {
			c.List[i] = remapColumns(l, to)
		}
		if x.or != nil {
			c.or = remapColumns(x.or, to)
		}
		return &c
	}
	return e
}
