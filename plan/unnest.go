package plan

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/sql"
)

// UnnestNode repeats each input row once per element of Arr (an ARRAY or
// MAP over the input) and appends the element's columns (Cols).
type UnnestNode struct {
	Input Node
	Arr   Expr
	Spec  exec.UnnestSpec
	Cols  []Column
}

func (n *UnnestNode) Columns() []Column { return append(slices.Clone(n.Input.Columns()), n.Cols...) }
func (n *UnnestNode) Inputs() []Node    { return []Node{n.Input} }

// Rows guesses a few elements per collection.
func (n *UnnestNode) Rows() float64 { return 4 * n.Input.Rows() }

func (n *UnnestNode) String() string {
	s := "Unnest " + n.Arr.String()
	if n.Spec.Ordinality {
		s += " with ordinality"
	}
	if n.Spec.KeepEmpty {
		s += " keep empty"
	}
	return s
}

// bindUnnest binds UNNEST(x) over input, whose columns (scope in) x may
// use: `t CROSS JOIN UNNEST(t.arr) AS u(v)`, `FROM t, UNNEST(t.arr)`, and
// with keepEmpty `LEFT JOIN UNNEST(..) ON TRUE`. It returns the node and the
// scope of the added columns. ARRAY<ROW<..>> adds the row's fields and a
// MAP its key and value, as in Flink; WITH ORDINALITY adds the position.
func (b *binder) bindUnnest(u *sql.Unnest, input Node, in *scope, keepEmpty bool) (Node, *scope) {
	x := b.bindScalar(u.X, &scope{cols: in.cols}, &input, exprOpts{noAgg: "UNNEST"})
	b.inferParams(x)
	n := &UnnestNode{Input: input, Arr: x, Spec: exec.UnnestSpec{KeepEmpty: keepEmpty, Ordinality: u.Ordinality}}
	var fields []arrow.Field
	switch t := x.Type().(type) {
	case *arrow.MapType:
		n.Spec.Expand = exec.UnnestMapEntry
		fields = []arrow.Field{{Name: "key", Type: t.KeyType()}, {Name: "value", Type: t.ItemType()}}
	case *arrow.ListType:
		if st, ok := t.Elem().(*arrow.StructType); ok {
			n.Spec.Expand = exec.UnnestRowFields
			fields = st.Fields()
		} else {
			fields = []arrow.Field{{Name: "EXPR$0", Type: t.Elem()}}
		}
	default:
		b.failState(stateDatatypeMismatch, u.X.Position(), "UNNEST needs an ARRAY or MAP, got %s", SQLTypeName(x.Type()))
	}
	if u.Ordinality {
		fields = append(fields, arrow.Field{Name: "ordinality", Type: arrow.PrimitiveTypes.Int32})
	}
	if u.ColAliases != nil && len(u.ColAliases) != len(fields) {
		b.fail(u.Pos, "UNNEST of %s makes %d columns but %d aliases are given", SQLTypeName(x.Type()), len(fields), len(u.ColAliases))
	}
	sc := &scope{}
	for i, f := range fields {
		name := f.Name
		if u.ColAliases != nil {
			name = u.ColAliases[i]
		}
		c := b.newCol(name, f.Type, true)
		n.Cols = append(n.Cols, c)
		sc.cols = append(sc.cols, scopeCol{qual: u.Alias, name: name, col: c})
	}
	return n, sc
}

// bindUnnestJoin binds `left [CROSS | INNER | LEFT] JOIN UNNEST(..) [ON
// cond]`: the unnest reads the left side's rows, so it is no join. A LEFT
// join keeps rows with empty collections and allows ON TRUE only.
func (b *binder) bindUnnestJoin(j *sql.Join, u *sql.Unnest, ln Node, ls, outer *scope) (Node, *scope) {
	if j.Natural || j.Using != nil || (j.Kind != "INNER" && j.Kind != "CROSS" && j.Kind != "LEFT") {
		b.fail(j.Pos, "UNNEST can be joined only with CROSS, INNER or LEFT JOIN ... ON")
	}
	var lit *sql.Literal
	if j.On != nil {
		lit, _ = j.On.(*sql.Literal)
	}
	onTrue := j.On == nil || lit != nil && lit.Kind == sql.LitBool && lit.Value == "TRUE"
	if j.Kind == "LEFT" && !onTrue {
		b.notImplemented(j.On.Position(), "LEFT JOIN UNNEST with a condition other than ON TRUE")
	}
	n, us := b.bindUnnest(u, ln, ls, j.Kind == "LEFT")
	merged := &scope{parent: outer, cols: append(slices.Clone(ls.cols), us.cols...)}
	var node Node = n
	if !onTrue {
		cond := b.bindPredicate(j.On, merged, &node, "JOIN ON")
		node = &FilterNode{Input: node, Pred: cond}
	}
	return node, merged
}

func (bd *builder) unnest(n *UnnestNode, in exec.Operator) (exec.Operator, error) {
	arr, err := bd.compile(n.Arr, n.Input.Columns())
	if err != nil {
		return nil, err
	}
	op, err := exec.NewUnnest(bd.ec, in, arr, n.Spec, schemaOf(n.Columns()))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	return op, nil
}
