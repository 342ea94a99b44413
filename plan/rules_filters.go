package plan

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

func isTrue(e Expr) bool {
	c, ok := e.(*Const)
	if !ok || !c.Value.IsValid() {
		return false
	}
	v, ok := c.Value.(*scalar.Boolean)
	return ok && v.Value
}

func filterOver(n Node, preds []Expr) Node {
	var keep []Expr
	for _, p := range preds {
		if !isTrue(p) {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return n
	}
	return &FilterNode{Input: n, Pred: andAll(keep)}
}

// pushFilters moves the conjuncts preds (to be applied above n) and the
// filters inside n as far down as they can go.
func pushFilters(n Node, preds []Expr) Node {
	switch x := n.(type) {
	case *FilterNode:
		return pushFilters(x.Input, append(preds, conjuncts(x.Pred)...))
	case *ScanNode:
		all := append(conjuncts(x.Filter), preds...)
		var keep []Expr
		for _, p := range all {
			if !isTrue(p) {
				keep = append(keep, p)
			}
		}
		x.Filter = andAll(keep)
		return x
	case *ProjectNode:
		defs := map[ColumnID]Expr{}
		for i, c := range x.Cols {
			defs[c.ID] = x.Exprs[i]
		}
		var down, up []Expr
		for _, p := range preds {
			if subset(colsOf(p), x.Cols) {
				down = append(down, substitute(p, defs))
			} else {
				up = append(up, p)
			}
		}
		x.Input = pushFilters(x.Input, down)
		return filterOver(x, up)
	case *SortNode:
		x.Input = pushFilters(x.Input, preds)
		return x
	case *DistinctNode:
		x.Input = pushFilters(x.Input, preds)
		return x
	case *AggNode:
		var down, up []Expr
		groupIDs := map[ColumnID]bool{}
		if x.Sets == nil {
			for i, g := range x.Groups {
				if c, ok := g.(*ColRef); ok && c.ID == x.GroupCols[i].ID {
					groupIDs[c.ID] = true
				}
			}
		}
		for _, p := range preds {
			if cols := colsOf(p); len(cols) > 0 && allIn(cols, groupIDs) {
				down = append(down, p)
				continue
			}
			up = append(up, p)
			// (year = 2001 AND sum > 0) OR year = 2002 stays above, but
			// year = 2001 OR year = 2002 follows from it and can go below.
			if w := impliedOn(p, groupIDs); w != nil && len(colsOf(w)) > 0 {
				down = append(down, w)
			}
		}
		x.Input = pushFilters(x.Input, down)
		return filterOver(x, up)
	case *SetOpNode:
		if x.Kind == Union {
			lmap, rmap := map[ColumnID]Expr{}, map[ColumnID]Expr{}
			lc, rc := x.Left.Columns(), x.Right.Columns()
			for i, c := range x.Cols {
				lmap[c.ID] = colRef(lc[i])
				rmap[c.ID] = colRef(rc[i])
			}
			var lp, rp []Expr
			for _, p := range preds {
				lp = append(lp, substitute(p, lmap))
				rp = append(rp, substitute(p, rmap))
			}
			x.Left = pushFilters(x.Left, lp)
			x.Right = pushFilters(x.Right, rp)
			return x
		}
		x.Left = pushFilters(x.Left, nil)
		x.Right = pushFilters(x.Right, nil)
		return filterOver(x, preds)
	case *JoinNode:
		return pushJoin(x, preds)
	case *WindowNode:
		// Conjuncts on partition columns select whole partitions, so they
		// may run before the window functions.
		parts := map[ColumnID]bool{}
		for _, p := range x.PartitionBy {
			if c, ok := p.(*ColRef); ok {
				parts[c.ID] = true
			}
		}
		var down, up []Expr
		for _, p := range preds {
			if cols := colsOf(p); len(cols) > 0 && allIn(cols, parts) {
				down = append(down, p)
			} else {
				up = append(up, p)
			}
		}
		x.Input = pushFilters(x.Input, down)
		return filterOver(x, up)
	}
	for i, in := range n.Inputs() {
		setInput(n, i, pushFilters(in, nil))
	}
	return filterOver(n, preds)
}

// impliedOn weakens a disjunction to the columns in cols: each disjunct
// keeps its conjuncts on those columns only (constants included). nil when
// p is no disjunction or a disjunct keeps nothing (nothing follows).
func impliedOn(p Expr, cols map[ColumnID]bool) Expr {
	ds := disjuncts(p)
	if len(ds) < 2 {
		return nil
	}
	implied := make([]Expr, len(ds))
	for i, d := range ds {
		var keep []Expr
		for _, c := range conjuncts(d) {
			if allIn(colsOf(c), cols) {
				keep = append(keep, c)
			}
		}
		if implied[i] = andAll(keep); implied[i] == nil {
			return nil
		}
	}
	return orAll(implied)
}

// allIn reports whether every column of cols is in ids.
func allIn(cols, ids map[ColumnID]bool) bool {
	for id := range cols {
		if !ids[id] {
			return false
		}
	}
	return true
}

func disjuncts(e Expr) []Expr {
	if c, ok := e.(*Call); ok && c.Fn == "or" {
		return append(disjuncts(c.Args[0]), disjuncts(c.Args[1])...)
	}
	return []Expr{e}
}

// substitute replaces column references by their definitions.
func substitute(e Expr, defs map[ColumnID]Expr) Expr {
	return mapExpr(e, func(x Expr) Expr {
		if c, ok := x.(*ColRef); ok {
			if d, ok := defs[c.ID]; ok {
				return d
			}
		}
		return x
	})
}

func pushJoin(j *JoinNode, preds []Expr) Node {
	lc, rc := j.Left.Columns(), j.Right.Columns()
	simplifyOuter(j, preds)
	if n, rest, ok := antiFromLeftJoin(j, preds); ok {
		return pushFilters(n, rest)
	}
	if j.Kind == InnerJoin {
		// The inner join drops rows its condition rejects: that may make
		// outer joins below it inner too.
		conds := append(conjuncts(j.Cond), preds...)
		for _, child := range []Node{j.Left, j.Right} {
			for {
				if f, ok := child.(*FilterNode); ok {
					child = f.Input
					continue
				}
				break
			}
			if cj, ok := child.(*JoinNode); ok {
				simplifyOuter(cj, conds)
			}
		}
	}
	var left, right, up []Expr
	var cond []Expr
	side := func(p Expr) int {
		c := colsOf(p)
		switch {
		case len(c) == 0:
			return 0
		case subset(c, lc):
			return 1
		case subset(c, rc):
			return 2
		}
		return 3
	}
	// Conditions above the join.
	for _, p := range preds {
		s := side(p)
		switch {
		case s == 1 && (j.Kind == InnerJoin || j.Kind == LeftJoin || j.Kind == SemiJoin || j.Kind == AntiJoin || j.Kind == AntiNullAwareJoin):
			left = append(left, p)
		case s == 2 && (j.Kind == InnerJoin || j.Kind == RightJoin):
			right = append(right, p)
		case j.Kind == InnerJoin && s != 0:
			cond = append(cond, p)
		default:
			up = append(up, p)
		}
	}
	// The join's own condition.
	for _, p := range conjuncts(j.Cond) {
		s := side(p)
		switch {
		case s == 1 && (j.Kind == InnerJoin || j.Kind == RightJoin || j.Kind == SemiJoin):
			left = append(left, p)
		case s == 2 && (j.Kind == InnerJoin || j.Kind == LeftJoin || j.Kind == SemiJoin || j.Kind == AntiJoin):
			right = append(right, p)
		default:
			cond = append(cond, p)
		}
	}
	left, right = inferConstants(j, cond, left, right)
	left, right = impliedSides(j, cond, left, right)
	j.Cond = andAll(cond)
	j.Left = pushFilters(j.Left, left)
	j.Right = pushFilters(j.Right, right)
	return filterOver(j, up)
}

// impliedSides adds to the filters of each side of j what a disjunction
// in its condition implies for that side alone (impliedOn): q85's
// (cd.marital = 'M' AND cd.education = 'Advanced Degree' AND ws.price
// BETWEEN 100 AND 150) OR ... keeps three of the 35 status pairs of
// customer_demographics before 1.9M rows of it meet web_sales. As in
// inferConstants, only where the rows it removes match nothing and are not
// kept unmatched.
func impliedSides(j *JoinNode, cond, left, right []Expr) ([]Expr, []Expr) {
	toLeft := j.Kind == InnerJoin || j.Kind == SemiJoin
	toRight := toLeft || j.Kind == LeftJoin || j.Kind == AntiJoin
	if !toRight {
		return left, right
	}
	lc, rc := idSet(j.Left.Columns()), idSet(j.Right.Columns())
	for _, p := range cond {
		if w := impliedOn(p, lc); toLeft && w != nil && len(colsOf(w)) > 0 {
			left = append(left, w)
		}
		if w := impliedOn(p, rc); w != nil && len(colsOf(w)) > 0 {
			right = append(right, w)
		}
	}
	return left, right
}

// inferConstants adds to the filters of each side of j `b = k` where the
// condition cond has `a = b` and a is constant k on the other side
// (constCols, or a filter about to be pushed there), where that filter cannot change the join's result: rows
// it removes match nothing and are not kept unmatched.
func inferConstants(j *JoinNode, cond, left, right []Expr) ([]Expr, []Expr) {
	toRight := j.Kind == InnerJoin || j.Kind == LeftJoin || j.Kind == SemiJoin || j.Kind == AntiJoin
	toLeft := j.Kind == InnerJoin || j.Kind == RightJoin || j.Kind == SemiJoin
	if !toRight && !toLeft {
		return left, right
	}
	lc, rc := idSet(j.Left.Columns()), idSet(j.Right.Columns())
	var lk, rk map[ColumnID]*Const
	for _, c := range cond {
		a, b, ok := colEqualsCol(c)
		if !ok {
			continue
		}
		if !lc[a.ID] {
			a, b = b, a
		}
		if !lc[a.ID] || !rc[b.ID] {
			continue
		}
		if lk == nil {
			lk, rk = constCols(j.Left), constCols(j.Right)
			addConstants(lk, left)
			addConstants(rk, right)
		}
		if k, ok := lk[a.ID]; ok && toRight {
			right = append(right, &Call{Fn: "equal", Args: []Expr{b, k}, Typ: boolType})
		}
		if k, ok := rk[b.ID]; ok && toLeft {
			left = append(left, &Call{Fn: "equal", Args: []Expr{a, k}, Typ: boolType})
		}
	}
	return left, right
}

// antiFromLeftJoin turns `L LEFT JOIN R ON ... WHERE r IS NULL` into an
// anti join when r cannot be NULL in a matched row (a NOT NULL column of R,
// or one the condition compares with =): the filter then keeps exactly the
// unmatched rows. R's columns stay as NULL constants for what reads them
// above. It returns the new node and the other predicates. An anti join
// needs no R columns and no NULL-extended rows, and is estimated as a
// filter of L instead of from a guess at how many rows IS NULL keeps.
func antiFromLeftJoin(j *JoinNode, preds []Expr) (Node, []Expr, bool) {
	if j.Kind != LeftJoin {
		return nil, nil, false
	}
	rc := j.Right.Columns()
	for k, p := range preds {
		call, ok := p.(*Call)
		if !ok || call.Fn != "is_null" {
			continue
		}
		ref, ok := call.Args[0].(*ColRef)
		if !ok {
			continue
		}
		i := slices.IndexFunc(rc, func(c Column) bool { return c.ID == ref.ID })
		if i < 0 || rc[i].Nullable && !comparedEqual(j.Cond, ref.ID) {
			continue
		}
		lc := j.Left.Columns()
		out := &ProjectNode{Cols: append(slices.Clone(lc), rc...)}
		for _, c := range lc {
			out.Exprs = append(out.Exprs, colRef(c))
		}
		for i := range rc {
			out.Exprs = append(out.Exprs, &Const{Value: scalar.MakeNullScalar(rc[i].Type)})
			out.Cols[len(lc)+i].Nullable = true
		}
		j.Kind = AntiJoin
		out.Input = j
		return out, slices.Delete(slices.Clone(preds), k, k+1), true
	}
	return nil, nil, false
}

// comparedEqual reports whether a conjunct of cond is `col = ...` or
// `... = col`: no row where col is NULL satisfies cond.
func comparedEqual(cond Expr, col ColumnID) bool {
	for _, c := range conjuncts(cond) {
		if call, ok := c.(*Call); ok && call.Fn == "equal" {
			for _, a := range call.Args {
				if r, ok := a.(*ColRef); ok && r.ID == col {
					return true
				}
			}
		}
	}
	return false
}

// simplifyOuter makes an outer join inner (or less outer) when conditions
// applied to its output reject its NULL-extended rows; the join can then be
// reordered and filtered below.
func simplifyOuter(j *JoinNode, preds []Expr) {
	lc, rc := idSet(j.Left.Columns()), idSet(j.Right.Columns())
	rejectL, rejectR := false, false
	for _, p := range preds {
		rejectL = rejectL || nullRejects(p, lc)
		rejectR = rejectR || nullRejects(p, rc)
	}
	switch {
	case j.Kind == LeftJoin && rejectR, j.Kind == RightJoin && rejectL, j.Kind == FullJoin && rejectL && rejectR:
		j.Kind = InnerJoin
	case j.Kind == FullJoin && rejectR:
		j.Kind = RightJoin
	case j.Kind == FullJoin && rejectL:
		j.Kind = LeftJoin
	}
}

// nullRejects reports whether condition p is never true when every column
// of side is NULL.
func nullRejects(p Expr, side map[ColumnID]bool) bool {
	c, ok := p.(*Call)
	if !ok {
		if in, ok := p.(*In); ok {
			return strictOn(in.X, side)
		}
		return false
	}
	switch c.Fn {
	case "and":
		return nullRejects(c.Args[0], side) || nullRejects(c.Args[1], side)
	case "or":
		return nullRejects(c.Args[0], side) && nullRejects(c.Args[1], side)
	case "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "like", "not_like", "ilike", "not_ilike":
		for _, a := range c.Args {
			if strictOn(a, side) {
				return true
			}
		}
	case "is_not_null":
		return strictOn(c.Args[0], side)
	}
	return false
}

// strictFns return NULL when any argument is NULL.
var strictFns = map[string]bool{
	"add": true, "subtract": true, "multiply": true, "divide": true, "modulo": true, "negate": true,
	"upper": true, "lower": true, "substr": true, "trim": true, "ltrim": true, "rtrim": true,
	"length": true, "abs": true, "extract": true,
}

// strictOn reports whether e is NULL whenever the columns of side are.
func strictOn(e Expr, side map[ColumnID]bool) bool {
	switch x := e.(type) {
	case *ColRef:
		return side[x.ID]
	case *Cast:
		return strictOn(x.X, side)
	case *Call:
		if !strictFns[x.Fn] {
			return false
		}
		for _, a := range x.Args {
			if strictOn(a, side) {
				return true
			}
		}
	}
	return false
}

// derivePushdown translates scan filters into table store predicates (for
// skipping; the filter itself stays). Conditions on parameters cannot be
// translated before their values are known: they are kept in ParamPushed
// and translated at each execution (pushedFilter), like literals.
func derivePushdown(n Node) {
	if s, ok := n.(*ScanNode); ok {
		names := scanColumnNames(s)
		var ps []tablestore.Predicate
		s.ParamPushed = nil
		for _, c := range conjuncts(s.Filter) {
			if p := toPredicate(c, names, constValue); p != nil {
				ps = append(ps, p)
			} else if hasParam(c) && toPredicate(c, names, placeholderValue) != nil {
				s.ParamPushed = append(s.ParamPushed, c)
			}
		}
		s.Pushed = andPredicates(ps)
	}
	for _, in := range n.Inputs() {
		derivePushdown(in)
	}
}

// scanColumnNames maps a scan's output columns to its table's columns.
func scanColumnNames(s *ScanNode) map[ColumnID]string {
	names := map[ColumnID]string{}
	for i, c := range s.Cols {
		streamKind := s.Stream != nil && s.Names[i] == tablestore.RowKindColumn
		auditKind := s.Read == ReadAuditLog && i == 0 // kept first by pruning
		if !streamKind && !auditKind {
			names[c.ID] = s.Names[i]
		}
	}
	return names
}

func andPredicates(ps []tablestore.Predicate) tablestore.Predicate {
	switch len(ps) {
	case 0:
		return nil
	case 1:
		return ps[0]
	}
	return tablestore.And(ps)
}

// pushedFilter is the scan's pushed predicate with the conditions on
// parameters translated with their values in row (params: one execution's
// parameter rows).
func pushedFilter(s *ScanNode, params arrow.RecordBatch, row int) (tablestore.Predicate, error) {
	if len(s.ParamPushed) == 0 {
		return s.Pushed, nil
	}
	names := scanColumnNames(s)
	var ps []tablestore.Predicate
	if s.Pushed != nil {
		ps = append(ps, s.Pushed)
	}
	var err error
	value := func(e Expr) (scalar.Scalar, bool) {
		if p, ok := e.(*ParamRef); ok {
			v, perr := paramValue(params, row, p)
			if perr != nil {
				err = perr
				return nil, false
			}
			return v, true
		}
		return constValue(e)
	}
	for _, c := range s.ParamPushed {
		if p := toPredicate(c, names, value); p != nil {
			ps = append(ps, p)
		}
	}
	return andPredicates(ps), err
}

// paramValue is parameter p's value in row of params, of p's type.
func paramValue(params arrow.RecordBatch, row int, p *ParamRef) (scalar.Scalar, error) {
	if params == nil || int(params.NumCols()) < p.Index || int(params.NumRows()) <= row {
		return nil, fmt.Errorf("%w: parameter $%d has no value", ErrParams, p.Index)
	}
	v, err := ownScalar(params.Column(p.Index-1), row)
	if err != nil {
		return nil, fmt.Errorf("%w: parameter $%d: %v", ErrParams, p.Index, err)
	}
	if !arrow.TypeEqual(v.DataType(), p.slot.typ) {
		if v, err = v.CastTo(p.slot.typ); err != nil {
			return nil, fmt.Errorf("%w: parameter $%d: %v", ErrParams, p.Index, err)
		}
	}
	return v, nil
}

func constValue(e Expr) (scalar.Scalar, bool) {
	c, ok := e.(*Const)
	if !ok {
		return nil, false
	}
	return c.Value, true
}

// placeholderValue stands for a parameter's value when deciding whether a
// condition on it can be pushed: a valid zero of its type.
func placeholderValue(e Expr) (scalar.Scalar, bool) {
	p, ok := e.(*ParamRef)
	if !ok || p.slot.typ == nil {
		return constValue(e)
	}
	if vectorized.IsNested(p.slot.typ) {
		// Nested columns have no statistics to skip by, and a nested
		// parameter may come in another list variant (converted where the
		// filter is evaluated).
		return nil, false
	}
	b := array.NewBuilder(memory.NewGoAllocator(), p.slot.typ)
	defer b.Release()
	b.AppendEmptyValue()
	a := b.NewArray()
	defer a.Release()
	v, err := scalar.GetScalar(a, 0)
	return v, err == nil
}

func hasParam(e Expr) bool {
	found := false
	walkExpr(e, func(x Expr) {
		if _, ok := x.(*ParamRef); ok {
			found = true
		}
	})
	return found
}

var cmpOps = map[string]tablestore.CmpOp{
	"equal": tablestore.EQ, "not_equal": tablestore.NE, "less": tablestore.LT,
	"less_equal": tablestore.LE, "greater": tablestore.GT, "greater_equal": tablestore.GE,
}

var flipOps = map[tablestore.CmpOp]tablestore.CmpOp{
	tablestore.EQ: tablestore.EQ, tablestore.NE: tablestore.NE, tablestore.LT: tablestore.GT,
	tablestore.LE: tablestore.GE, tablestore.GT: tablestore.LT, tablestore.GE: tablestore.LE,
}

// toPredicate converts column-versus-constant conditions (value gives
// the constant of an expression, if it is one); anything else
// returns nil (not pushed).
func toPredicate(e Expr, names map[ColumnID]string, value func(Expr) (scalar.Scalar, bool)) tablestore.Predicate {
	colConst := func(a, b Expr) (string, scalar.Scalar, bool) {
		c, ok := a.(*ColRef)
		k, ok2 := value(b)
		if !ok || !ok2 || !k.IsValid() {
			return "", nil, false
		}
		v, ok := losslessCast(k, c.Typ)
		if !ok {
			return "", nil, false
		}
		n, ok := names[c.ID]
		return n, v, ok
	}
	switch x := e.(type) {
	case *Call:
		if op, ok := cmpOps[x.Fn]; ok {
			if n, v, ok := colConst(x.Args[0], x.Args[1]); ok {
				return tablestore.Compare{Column: n, Op: op, Value: v}
			}
			if n, v, ok := colConst(x.Args[1], x.Args[0]); ok {
				return tablestore.Compare{Column: n, Op: flipOps[op], Value: v}
			}
			return nil
		}
		switch x.Fn {
		case "is_null":
			if c, ok := x.Args[0].(*ColRef); ok && names[c.ID] != "" {
				return tablestore.IsNull{Column: names[c.ID]}
			}
		case "and", "or":
			l, r := toPredicate(x.Args[0], names, value), toPredicate(x.Args[1], names, value)
			if x.Fn == "and" {
				// Dropping one side of AND keeps a superset: still safe.
				switch {
				case l != nil && r != nil:
					return tablestore.And{l, r}
				case l != nil:
					return l
				}
				return r
			}
			if l != nil && r != nil {
				return tablestore.Or{l, r}
			}
		}
	case *In:
		c, ok := x.X.(*ColRef)
		if !ok || names[c.ID] == "" {
			return nil
		}
		var vals []scalar.Scalar
		for _, v := range x.List {
			k, ok := value(v)
			if !ok || !k.IsValid() {
				return nil
			}
			cv, ok := losslessCast(k, c.Typ)
			if !ok {
				return nil
			}
			vals = append(vals, cv)
		}
		return tablestore.In{Column: names[c.ID], Values: vals}
	}
	return nil
}

// losslessCast converts a constant to a column's type when the value
// survives the round trip (so a pushed predicate keeps its meaning).
func losslessCast(v scalar.Scalar, to arrow.DataType) (scalar.Scalar, bool) {
	if arrow.TypeEqual(v.DataType(), to) {
		return v, true
	}
	if family(v.DataType()) != family(to) {
		return nil, false
	}
	c, err := v.CastTo(to)
	if err != nil || !c.IsValid() {
		return nil, false
	}
	back, err := c.CastTo(v.DataType())
	if err != nil || !scalar.Equals(back, v) {
		return nil, false
	}
	return c, true
}
