package substrait

import (
	"fmt"
	"slices"
	"strconv"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/flightd/flightd/sql"
)

func (c *consumer) aggregate(x *pb.AggregateRel, path string) (*rel, error) {
	r, err := c.rel(x.GetInput(), path+".input")
	if err != nil {
		return nil, err
	}
	if !r.flat() {
		r = c.wrap(r)
	}
	in := r.cols
	// The output's group columns: grouping_expressions (newer producers,
	// sets refer to them), or every distinct expression of the sets in
	// order of appearance (older ones).
	var keys []sql.Expr
	var keyText []string
	sets := make([][]int, len(x.GetGroupings()))
	keyOf := func(e sql.Expr) int {
		t := sql.Format(e)
		for i, k := range keyText {
			if k == t {
				return i
			}
		}
		keys, keyText = append(keys, e), append(keyText, t)
		return len(keys) - 1
	}
	for i, g := range x.GetGroupingExpressions() {
		e, err := c.expr(g, in, fmt.Sprintf("%s.grouping_expressions[%d]", path, i))
		if err != nil {
			return nil, err
		}
		keys, keyText = append(keys, e), append(keyText, sql.Format(e))
	}
	for i, g := range x.GetGroupings() {
		gp := fmt.Sprintf("%s.groupings[%d]", path, i)
		for j, ref := range g.GetExpressionReferences() {
			if int(ref) >= len(x.GetGroupingExpressions()) {
				return nil, errAt(gp, "expression_references[%d] = %d is out of range (%d grouping expressions)", j, ref, len(x.GetGroupingExpressions()))
			}
			sets[i] = append(sets[i], int(ref))
		}
		for j, ge := range g.GetGroupingExpressions() {
			e, err := c.expr(ge, in, fmt.Sprintf("%s.grouping_expressions[%d]", gp, j))
			if err != nil {
				return nil, err
			}
			sets[i] = append(sets[i], keyOf(e))
		}
		sets[i] = slices.Compact(slices.Sorted(slices.Values(sets[i])))
	}
	// Each grouping set prints its keys again.
	for i, s := range sets {
		for _, k := range s {
			if err := c.charge(keys[k], fmt.Sprintf("%s.groupings[%d]", path, i)); err != nil {
				return nil, err
			}
		}
	}
	out := &rel{from: r.from, where: r.where, grouped: true}
	out.cols = append(out.cols, keys...)
	switch {
	case len(sets) == 1:
		for _, k := range sets[0] {
			out.groupBy = append(out.groupBy, keys[k])
		}
	case len(sets) > 1:
		gs := &sql.GroupingSets{}
		for _, s := range sets {
			set := []sql.Expr{}
			for _, k := range s {
				set = append(set, keys[k])
			}
			gs.Sets = append(gs.Sets, set)
		}
		out.groupBy = []sql.Expr{gs}
	}
	if len(sets) > 0 && len(keys) > 0 && len(out.groupBy) == 0 {
		out.groupBy = nil
	}
	for i, m := range x.GetMeasures() {
		mp := fmt.Sprintf("%s.measures[%d]", path, i)
		call, err := c.aggCall(m.GetMeasure(), in, mp+".measure")
		if err != nil {
			return nil, err
		}
		if m.GetFilter() != nil {
			if call.Filter, err = c.expr(m.GetFilter(), in, mp+".filter"); err != nil {
				return nil, err
			}
		}
		out.cols = append(out.cols, call)
	}
	if len(sets) > 1 {
		// The spec's extra column: which grouping set a row belongs to.
		// GROUPING(keys...) has a bit per key, set when the key is absent.
		g := &sql.FuncCall{Name: "grouping", Args: keys}
		cs := &sql.Case{Operand: g}
		for i, s := range sets {
			mask := 0
			for k := range keys {
				present := false
				for _, j := range s {
					present = present || j == k
				}
				if !present {
					mask |= 1 << (len(keys) - 1 - k)
				}
			}
			cs.Whens = append(cs.Whens, &sql.When{Cond: number(mask), Then: typed(number(i), "INT")})
		}
		out.cols = append(out.cols, cs)
	}
	return out, nil
}

func number(n int) sql.Expr { return &sql.Literal{Kind: sql.LitNumber, Value: strconv.Itoa(n)} }

func typed(e sql.Expr, name string) sql.Expr {
	return &sql.Cast{X: e, Type: &sql.TypeName{Name: name}}
}

func (c *consumer) join(x *pb.JoinRel, path string) (*rel, error) {
	l, err := c.rel(x.GetLeft(), path+".left")
	if err != nil {
		return nil, err
	}
	r, err := c.rel(x.GetRight(), path+".right")
	if err != nil {
		return nil, err
	}
	if x.GetType() == pb.JoinRel_JOIN_TYPE_RIGHT_SEMI || x.GetType() == pb.JoinRel_JOIN_TYPE_RIGHT_ANTI {
		l, r = r, l
	}
	l, r = c.joinable(l), c.joinable(r)
	both := append(append([]sql.Expr(nil), l.cols...), r.cols...)
	if x.GetType() == pb.JoinRel_JOIN_TYPE_RIGHT_SEMI || x.GetType() == pb.JoinRel_JOIN_TYPE_RIGHT_ANTI {
		// The condition's fields are numbered left (the original one) first.
		both = append(append([]sql.Expr(nil), r.cols...), l.cols...)
	}
	cond := sql.Expr(&sql.Literal{Kind: sql.LitBool, Value: "TRUE"})
	if x.GetExpression() != nil {
		if cond, err = c.expr(x.GetExpression(), both, path+".expression"); err != nil {
			return nil, err
		}
	}
	if x.GetPostJoinFilter() != nil {
		pf, err := c.expr(x.GetPostJoinFilter(), both, path+".post_join_filter")
		if err != nil {
			return nil, err
		}
		if x.GetType() != pb.JoinRel_JOIN_TYPE_INNER {
			return nil, errAt(path+".post_join_filter", "a post-join filter on a %s join is not supported", x.GetType())
		}
		cond = and(cond, pf)
	}
	// copies charges the right input and the condition printed n more
	// times (in a subquery per column, or two for a mark).
	copies := func(n int) error {
		for range n {
			for _, e := range []sql.Node{r.from, r.where, cond} {
				if err := c.charge(e, path); err != nil {
					return err
				}
			}
		}
		return nil
	}
	kind := ""
	switch x.GetType() {
	case pb.JoinRel_JOIN_TYPE_INNER:
		kind = "INNER"
	case pb.JoinRel_JOIN_TYPE_LEFT:
		kind = "LEFT"
	case pb.JoinRel_JOIN_TYPE_RIGHT:
		kind = "RIGHT"
	case pb.JoinRel_JOIN_TYPE_OUTER:
		kind = "FULL"
	case pb.JoinRel_JOIN_TYPE_LEFT_SINGLE:
		// Each left row with the right's columns of its one match (NULLs
		// without one, an error with several): a scalar subquery per
		// right column.
		if err := copies(len(r.cols) - 1); err != nil {
			return nil, err
		}
		for _, rc := range r.cols {
			sub := &sql.Select{Items: []*sql.SelectItem{{Expr: rc}}, From: []sql.TableRef{r.from}, Where: and(r.where, cond)}
			l.cols = append(l.cols, &sql.Subquery{Query: &sql.Query{Body: sub}})
		}
		return l, nil
	case pb.JoinRel_JOIN_TYPE_LEFT_MARK:
		// The left rows and a mark: TRUE with a match, else NULL if the
		// condition was NULL for some right row, else FALSE.
		if err := copies(1); err != nil {
			return nil, err
		}
		exists := func(c sql.Expr) sql.Expr {
			sub := &sql.Select{Items: []*sql.SelectItem{{Expr: number(1)}}, From: []sql.TableRef{r.from}, Where: and(r.where, c)}
			return &sql.Exists{Query: &sql.Query{Body: sub}}
		}
		l.cols = append(l.cols, &sql.Case{Whens: []*sql.When{
			{Cond: exists(cond), Then: &sql.Literal{Kind: sql.LitBool, Value: "TRUE"}},
			{Cond: exists(&sql.Is{X: cond, What: "NULL"}), Then: &sql.Cast{X: &sql.Literal{Kind: sql.LitNull, Value: "NULL"}, Type: &sql.TypeName{Name: "BOOLEAN"}}},
		}, Else: &sql.Literal{Kind: sql.LitBool, Value: "FALSE"}})
		return l, nil
	case pb.JoinRel_JOIN_TYPE_LEFT_SEMI, pb.JoinRel_JOIN_TYPE_RIGHT_SEMI, pb.JoinRel_JOIN_TYPE_LEFT_ANTI, pb.JoinRel_JOIN_TYPE_RIGHT_ANTI:
		anti := x.GetType() == pb.JoinRel_JOIN_TYPE_LEFT_ANTI || x.GetType() == pb.JoinRel_JOIN_TYPE_RIGHT_ANTI
		sub := &sql.Select{Items: []*sql.SelectItem{{Expr: number(1)}}, From: []sql.TableRef{r.from}, Where: and(r.where, cond)}
		l.where = and(l.where, &sql.Exists{Not: anti, Query: &sql.Query{Body: sub}})
		return l, nil
	default:
		return nil, errAt(path, "join type %s is not supported", x.GetType())
	}
	out := &rel{from: &sql.Join{Kind: kind, Left: l.from, Right: paren(r.from), On: cond}, cols: both}
	if kind == "INNER" {
		out.where = and(l.where, r.where)
	} else if l.where != nil || r.where != nil {
		return nil, errAt(path, "internal: outer join of filtered inputs")
	}
	return out, nil
}

// joinable makes r a FROM item that a join can take as is: its columns
// must be plain column references, as an outer join makes computed ones
// (a constant TRUE, say) NULL only if they are columns of the FROM item.
func (c *consumer) joinable(r *rel) *rel {
	if r.flat() && r.where == nil && r.from != nil {
		plain := true
		for _, e := range r.cols {
			_, ok := e.(*sql.Ident)
			plain = plain && ok
		}
		if plain {
			return r
		}
	}
	return c.wrap(r)
}

func (c *consumer) cross(x *pb.CrossRel, path string) (*rel, error) {
	l, err := c.rel(x.GetLeft(), path+".left")
	if err != nil {
		return nil, err
	}
	r, err := c.rel(x.GetRight(), path+".right")
	if err != nil {
		return nil, err
	}
	l, r = c.joinable(l), c.joinable(r)
	return &rel{
		from: &sql.Join{Kind: "CROSS", Left: l.from, Right: paren(r.from)},
		cols: append(append([]sql.Expr(nil), l.cols...), r.cols...),
	}, nil
}

func (c *consumer) sort(x *pb.SortRel, path string) (*rel, error) {
	r, err := c.rel(x.GetInput(), path+".input")
	if err != nil {
		return nil, err
	}
	if r.limit != nil || r.offset != nil || r.distinct {
		r = c.wrap(r)
	}
	keys, err := c.sortKeys(x.GetSorts(), r.cols, path+".sorts")
	if err != nil {
		return nil, err
	}
	r.orderBy = keys
	return r, nil
}

func (c *consumer) sortKeys(sorts []*pb.SortField, cols []sql.Expr, path string) ([]*sql.OrderItem, error) {
	var out []*sql.OrderItem
	for i, s := range sorts {
		sp := fmt.Sprintf("%s[%d]", path, i)
		e, err := c.expr(s.GetExpr(), cols, sp+".expr")
		if err != nil {
			return nil, err
		}
		it := &sql.OrderItem{Expr: e}
		first := true
		switch s.GetDirection() {
		case pb.SortField_SORT_DIRECTION_ASC_NULLS_FIRST:
		case pb.SortField_SORT_DIRECTION_ASC_NULLS_LAST:
			first = false
		case pb.SortField_SORT_DIRECTION_DESC_NULLS_FIRST:
			it.Desc = true
		case pb.SortField_SORT_DIRECTION_DESC_NULLS_LAST:
			it.Desc, first = true, false
		default:
			return nil, errAt(sp, "sort direction %s is not supported", s.GetDirection())
		}
		it.NullsFirst = &first
		out = append(out, it)
	}
	return out, nil
}

func (c *consumer) fetch(x *pb.FetchRel, path string) (*rel, error) {
	r, err := c.rel(x.GetInput(), path+".input")
	if err != nil {
		return nil, err
	}
	if r.limit != nil || r.offset != nil {
		r = c.wrap(r)
	}
	count := func(n int64) sql.Expr { return &sql.Literal{Kind: sql.LitNumber, Value: strconv.FormatInt(n, 10)} }
	switch t := x.GetCountMode().(type) {
	case *pb.FetchRel_Count:
		if t.Count < -1 {
			return nil, errAt(path+".count", "negative count %d", t.Count)
		}
		if t.Count >= 0 {
			r.limit = count(t.Count)
		}
	case *pb.FetchRel_CountExpr:
		if r.limit, err = c.expr(t.CountExpr, nil, path+".count_expr"); err != nil {
			return nil, err
		}
	}
	switch t := x.GetOffsetMode().(type) {
	case *pb.FetchRel_Offset:
		if t.Offset < 0 {
			return nil, errAt(path+".offset", "negative offset %d", t.Offset)
		}
		if t.Offset > 0 {
			r.offset = count(t.Offset)
		}
	case *pb.FetchRel_OffsetExpr:
		if r.offset, err = c.expr(t.OffsetExpr, nil, path+".offset_expr"); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (c *consumer) set(x *pb.SetRel, path string) (*rel, error) {
	op, all := "", false
	switch x.GetOp() {
	case pb.SetRel_SET_OP_UNION_ALL:
		op, all = "UNION", true
	case pb.SetRel_SET_OP_UNION_DISTINCT:
		op = "UNION"
	case pb.SetRel_SET_OP_MINUS_PRIMARY:
		op = "EXCEPT"
	case pb.SetRel_SET_OP_MINUS_PRIMARY_ALL:
		op, all = "EXCEPT", true
	case pb.SetRel_SET_OP_INTERSECTION_MULTISET:
		op = "INTERSECT"
	case pb.SetRel_SET_OP_INTERSECTION_MULTISET_ALL:
		op, all = "INTERSECT", true
	default:
		return nil, errAt(path+".op", "set operation %s is not supported", x.GetOp())
	}
	if len(x.GetInputs()) < 2 {
		return nil, errAt(path+".inputs", "a set operation needs two or more inputs, not %d", len(x.GetInputs()))
	}
	var body sql.SetExpr
	n := 0
	for i, in := range x.GetInputs() {
		r, err := c.rel(in, fmt.Sprintf("%s.inputs[%d]", path, i))
		if err != nil {
			return nil, err
		}
		if i == 0 {
			n = len(r.cols)
		} else if len(r.cols) != n {
			return nil, errAt(fmt.Sprintf("%s.inputs[%d]", path, i), "%d columns, the first input has %d", len(r.cols), n)
		}
		if r.orderBy != nil || r.limit != nil || r.offset != nil {
			r = c.wrap(r)
		}
		// A plain SELECT as operand: SQL text starting ((SELECT in FROM
		// reads as a parenthesized join.
		q := r.query().Body
		if body == nil {
			body = q
		} else {
			body = &sql.SetOp{Op: op, All: all, Left: body, Right: q}
		}
	}
	return c.derived(&sql.Query{Body: body}, n), nil
}

func (c *consumer) window(x *pb.ConsistentPartitionWindowRel, path string) (*rel, error) {
	r, err := c.rel(x.GetInput(), path+".input")
	if err != nil {
		return nil, err
	}
	if r.limit != nil || r.offset != nil || r.windowed || r.distinct {
		r = c.wrap(r)
	}
	in := r.cols
	spec := &sql.WindowSpec{}
	for i, p := range x.GetPartitionExpressions() {
		e, err := c.expr(p, in, fmt.Sprintf("%s.partition_expressions[%d]", path, i))
		if err != nil {
			return nil, err
		}
		spec.PartitionBy = append(spec.PartitionBy, e)
	}
	if spec.OrderBy, err = c.sortKeys(x.GetSorts(), in, path+".sorts"); err != nil {
		return nil, err
	}
	cols := append([]sql.Expr(nil), in...)
	for i, f := range x.GetWindowFunctions() {
		fp := fmt.Sprintf("%s.window_functions[%d]", path, i)
		call, err := c.windowCall(f.GetFunctionReference(), f.GetArguments(), f.GetInvocation(), in, fp)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			// Each function prints the partition and the order again.
			for _, e := range spec.PartitionBy {
				if err := c.charge(e, fp); err != nil {
					return nil, err
				}
			}
			for _, o := range spec.OrderBy {
				if err := c.charge(o, fp); err != nil {
					return nil, err
				}
			}
		}
		s := *spec
		if s.Frame, err = c.frame(f.GetBoundsType(), f.GetLowerBound(), f.GetUpperBound(), len(s.OrderBy) > 0, fp); err != nil {
			return nil, err
		}
		call.Over = &s
		cols = append(cols, call)
	}
	r.cols = cols
	r.windowed = true
	return r, nil
}

// paren parenthesizes a join on the right of a join, which SQL text would
// otherwise read as left-deep.
func paren(t sql.TableRef) sql.TableRef {
	if j, ok := t.(*sql.Join); ok {
		return &sql.ParenTableRef{Inner: j}
	}
	return t
}
