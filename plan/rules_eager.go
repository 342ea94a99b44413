package plan

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/vectorized"
)

// Eager aggregation: an aggregation over an inner join whose aggregates
// read one side (the fact side) only, or pick by the other side's columns
// among arms over the fact side (eagerArgs), and whose other side (the
// dimension) contributes group columns only is split in two: the fact
// side's rows are first aggregated by their join keys and own group
// columns, then joined, then the joined partial groups aggregated by the
// original groups. q04's
// sales rows each carried customer's seven strings through the join and
// into the group keys; aggregated first by (customer key, year) only the
// partial groups (one in sixteen rows) carry them.
//
// Correct for any join multiplicity: a dimension row matching a partial
// group stands for the same row matching every fact row of the group, and
// SUM, COUNT, MIN and MAX fold over partial results; an integer AVG is the
// folded SUM divided by the folded COUNT (truncated, as AVG truncates). With
// grouping sets (q22's ROLLUP of four item strings over 2.34M inventory
// rows) the final aggregation keeps them: the rows of one partial group
// joined to one dimension row agree on every group column, so each falls
// in one group of every set. Worth it only when the
// partial aggregation reduces the rows and the join keeps them: both are
// estimated. The product of the groups' NDVs bounds the partial groups from
// above, and sales rows come clustered (an order's lines share customer
// and date), so reductions run well above the estimate: q04's web sales,
// estimated 1.4x, reduce 13x; q23's 1.65M rows by item and date, estimated
// at no reduction, reduce 1.07x.
const eagerMinReduction = 1.25

// eagerMinRows: below it the fact side aggregates in a millisecond either
// way and the plan stays as written.
const eagerMinRows = 10000

func eagerAggregate(b *binder, n Node) Node {
	for i, in := range n.Inputs() {
		setInput(n, i, eagerAggregate(b, in))
	}
	if a, ok := n.(*AggNode); ok {
		if out := b.aggregateBeforeOneRow(a); out != nil {
			return out
		}
		if out := b.splitAggregate(a); out != nil {
			return out
		}
	}
	return n
}

// eagerFinal is the function folding partial results of each aggregate.
var eagerFinal = map[string]string{"sum": "sum", "count": "sum", "count_star": "sum", "min": "min", "max": "max"}

// splitAggregate returns a's eager form, or nil where it does not apply or
// is not estimated to pay.
func (b *binder) splitAggregate(a *AggNode) Node {
	j, ok := a.Input.(*JoinNode)
	if !ok || j.Kind != InnerJoin || j.Temporal || j.AsOf != nil || j.Residual != nil ||
		len(j.LeftKeys) == 0 || len(a.Groups) == 0 {
		return nil
	}
	fact, factKeys, dim := j.Left, j.LeftKeys, j.Right
	pivots, wideCond, ok := eagerArgs(a.Aggs, fact.Columns(), dim.Columns())
	if !ok {
		fact, factKeys, dim = j.Right, j.RightKeys, j.Left
		if pivots, wideCond, ok = eagerArgs(a.Aggs, fact.Columns(), dim.Columns()); !ok {
			return nil
		}
	}
	factCols, dimCols := fact.Columns(), dim.Columns()
	var preGroups []Expr
	factGroup := make([]bool, len(a.Groups))
	wide := wideCond
	for i, g := range a.Groups {
		cols := colsOf(g)
		switch {
		case len(cols) > 0 && subset(cols, factCols):
			factGroup[i] = true
			preGroups = append(preGroups, g)
		case subset(cols, dimCols):
			_, fixed := g.Type().(arrow.FixedWidthDataType)
			wide = wide || len(cols) > 0 && !fixed
		default:
			return nil
		}
	}
	if !wide || !b.eagerPays(j, fact, append(append([]Expr(nil), preGroups...), factKeys...)) {
		return nil
	}

	// The partial aggregation: the fact side's groups, its join keys, and
	// one partial result per aggregate.
	pre := &AggNode{Input: fact}
	refs := map[any]*ColRef{} // a column by its ID: a join key that is also a group is one group
	group := func(e Expr) *ColRef {
		var k any = e
		if r, ok := e.(*ColRef); ok {
			k = r.ID
		}
		if r, ok := refs[k]; ok {
			return r
		}
		name := "eager_group"
		if r, ok := e.(*ColRef); ok {
			name = r.Name
		}
		c := b.newCol(name, e.Type(), true)
		pre.Groups, pre.GroupCols = append(pre.Groups, e), append(pre.GroupCols, c)
		refs[k] = colRef(c)
		return refs[k]
	}
	for _, g := range preGroups {
		group(g)
	}
	newKeys := make([]Expr, len(factKeys))
	for i, k := range factKeys {
		newKeys[i] = group(k)
	}
	final := &AggNode{GroupCols: a.GroupCols, Groups: make([]Expr, len(a.Groups)), Sets: a.Sets, GroupingID: a.GroupingID}
	outExprs := make([]Expr, 0, len(a.Columns()))
	for i, g := range a.Groups {
		final.Groups[i] = g
		if factGroup[i] {
			final.Groups[i] = group(g)
		}
		outExprs = append(outExprs, colRef(a.GroupCols[i]))
	}
	project := false
	arms := map[string]Column{} // a pivot's partial results, by function and arm
	partial := func(c AggCall) Column {
		k := c.Fn + " " + exprKey(c.Args[0])
		if col, ok := arms[k]; ok {
			return col
		}
		typ, _ := resolveAggregate(c.Fn, []arrow.DataType{c.Args[0].Type()})
		c.Col = b.newCol("eager_"+c.Fn, typ, true)
		pre.Aggs = append(pre.Aggs, c)
		arms[k] = c.Col
		return c.Col
	}
	for i, c := range a.Aggs {
		if c.Fn == "avg" {
			// SUM and COUNT of the partial groups, folded by SUM, divided.
			var folded [2]Expr
			for k, fn := range []string{"sum", "count"} {
				part := c
				part.Fn = fn
				typ, err := resolveAggregate(fn, []arrow.DataType{c.Args[0].Type()})
				if err != nil {
					return nil
				}
				part.Col = b.newCol("eager_"+fn, typ, true)
				pre.Aggs = append(pre.Aggs, part)
				if typ, err = resolveAggregate("sum", []arrow.DataType{typ}); err != nil {
					return nil
				}
				col := b.newCol(c.Col.Name+"_"+fn, typ, true)
				final.Aggs = append(final.Aggs, AggCall{Fn: "sum", Args: []Expr{colRef(part.Col)}, Col: col})
				folded[k] = colRef(col)
			}
			// A group whose values are all NULL has a NULL sum (and a
			// zero count), so the quotient is NULL, as AVG's.
			div := &Call{Fn: "divide", Args: folded[:], Typ: folded[0].Type()}
			outExprs = append(outExprs, &Cast{X: div, Typ: c.Col.Type})
			project = true
			continue
		}
		fn := eagerFinal[c.Fn]
		var arg Expr
		if p := pivots[i]; p != nil {
			pick := &Case{Typ: p.Typ}
			for _, w := range p.Whens {
				part := partial(AggCall{Fn: c.Fn, Args: []Expr{w.Then}})
				pick.Whens = append(pick.Whens, CaseWhen{Cond: w.Cond, Then: colRef(part)})
				pick.Typ = part.Type
			}
			arg = pick
		} else {
			part := c
			part.Col = b.newCol("eager_"+c.Fn, c.Col.Type, true)
			pre.Aggs = append(pre.Aggs, part)
			arg = colRef(part.Col)
		}
		typ, err := resolveAggregate(fn, []arrow.DataType{arg.Type()})
		if err != nil {
			return nil
		}
		col := c.Col
		if !arrow.TypeEqual(typ, c.Col.Type) {
			// SUM widens a decimal: the final sum is cast back to the
			// type the original had (its value fits it as the original's
			// did).
			col = b.newCol(c.Col.Name, typ, true)
			project = true
		}
		final.Aggs = append(final.Aggs, AggCall{Fn: fn, Args: []Expr{arg}, Col: col})
		if col.ID == c.Col.ID {
			outExprs = append(outExprs, colRef(col))
		} else {
			outExprs = append(outExprs, &Cast{X: colRef(col), Typ: c.Col.Type})
		}
	}
	// The partial aggregation may split again over the fact side's own
	// join (q62's sales joined to ship_mode, then web_site: grouped by their
	// keys first, the joins and string groups see the partial groups).
	var preNode Node = pre
	if out := b.splitAggregate(pre); out != nil {
		preNode = out
	}
	join := &JoinNode{Kind: InnerJoin, Left: j.Left, Right: j.Right, LeftKeys: j.LeftKeys, RightKeys: j.RightKeys}
	if fact == j.Left {
		join.Left, join.LeftKeys = preNode, newKeys
	} else {
		join.Right, join.RightKeys = preNode, newKeys
	}
	conds := make([]Expr, len(newKeys))
	for i := range newKeys {
		conds[i] = &Call{Fn: "equal", Args: []Expr{join.LeftKeys[i], join.RightKeys[i]}, Typ: arrow.FixedWidthTypes.Boolean}
	}
	join.Cond = andAll(conds)
	final.Input = join
	if !project {
		return final
	}
	if a.GroupingID != nil {
		outExprs = append(outExprs, colRef(*a.GroupingID))
	}
	return &ProjectNode{Input: final, Exprs: outExprs, Cols: a.Columns()}
}

// eagerArgs says whether a's aggregates can be split with fact as the side
// aggregated first: each reads the fact side only (SUM, COUNT, MIN, MAX, or
// AVG of an integer), or is a pivot (pivots[i] non-nil): SUM, MIN or MAX of
// a CASE without ELSE whose conditions read
// the dimension only and whose arms the fact side only, as q59's
// sum(CASE WHEN d_day_name = 'Sunday' THEN ss_sales_price END). Within a
// partial group each dimension row picks one arm for all its fact rows, so
// the partial aggregation folds each arm and the final one picks among the
// partial results by the conditions (a CASE that picks none gives NULL,
// which SUM, MIN and MAX skip, as they skipped the rows' NULLs). COUNT of
// such a CASE is not split: no pick would count 0 there, not NULL. wide: a
// condition reads a dimension column that is not fixed-width (the strings
// the join would carry for every fact row).
func eagerArgs(aggs []AggCall, fact, dim []Column) (pivots []*Case, wide, ok bool) {
	factCols := map[ColumnID]bool{}
	for _, c := range fact {
		factCols[c.ID] = true
	}
	dimCols := map[ColumnID]Column{}
	for _, c := range dim {
		dimCols[c.ID] = c
	}
	inFact := func(e Expr) bool {
		for id := range colsOf(e) {
			if !factCols[id] {
				return false
			}
		}
		return true
	}
	reads := false
	pivots = make([]*Case, len(aggs))
	for i, c := range aggs {
		_, folds := eagerFinal[c.Fn]
		intAvg := c.Fn == "avg" && len(c.Args) == 1 && vectorized.IsInteger(c.Args[0].Type()) && c.Args[0].Type().ID() != arrow.UINT64
		if !folds && !intAvg || c.Distinct {
			return nil, false, false
		}
		plain := inFact(c.Filter)
		for _, e := range c.Args {
			plain = plain && inFact(e)
			reads = reads || len(colsOf(e)) > 0
		}
		reads = reads || c.Filter != nil && len(colsOf(c.Filter)) > 0
		if plain {
			continue
		}
		p, isCase := c.Args[0].(*Case)
		if !folds || c.Fn == "count" || c.Fn == "count_star" || c.Filter != nil || !isCase || !isNullExpr(p.Else) {
			return nil, false, false
		}
		for _, w := range p.Whens {
			if !inFact(w.Then) || !arrow.TypeEqual(w.Then.Type(), p.Typ) {
				return nil, false, false
			}
			for id := range colsOf(w.Cond) {
				d, ok := dimCols[id]
				if !ok {
					return nil, false, false
				}
				_, fixed := d.Type.(arrow.FixedWidthDataType)
				wide = wide || !fixed
			}
		}
		pivots[i] = p
	}
	return pivots, wide, reads
}

// isNullExpr reports whether e is absent (a CASE without ELSE) or a NULL
// constant.
func isNullExpr(e Expr) bool {
	if e == nil {
		return true
	}
	c, ok := e.(*Const)
	return ok && !c.Value.IsValid()
}

// eagerPays estimates whether aggregating fact by groups first reduces its
// rows eagerMinReduction-fold and the join keeps most of them (a join that
// drops most fact rows would be better run first).
func (b *binder) eagerPays(j *JoinNode, fact Node, groups []Expr) bool {
	rows := fact.Rows()
	if rows < eagerMinRows || j.Rows() < rows/2 {
		return false
	}
	est := 1.0
	for _, g := range groups {
		d := filteredNDV(fact, g, rows)
		if d <= 0 {
			return false
		}
		est *= d
	}
	return est*eagerMinReduction <= rows
}

// filteredNDV estimates the distinct values of e over rows of n: a column
// its scan filters keeps the filter's fraction of its values (d_year of the
// two years asked for), any other the values rows draws from its table
// (Cardenas); an expression has at most the product of its columns'. 0
// when unknown.
func filteredNDV(n Node, e Expr, rows float64) float64 {
	r, ok := e.(*ColRef)
	if !ok {
		d := 1.0
		for id := range colsOf(e) {
			d *= filteredNDV(n, &ColRef{ID: id}, rows)
		}
		return min(d, rows)
	}
	if u, i := unionColumn(n, r.ID); u != nil {
		// A union's column has at most its branches' values (q02's sales
		// dates of web and catalog sales).
		d := 0.0
		for _, in := range []Node{u.Left, u.Right} {
			b := filteredNDV(in, colRef(in.Columns()[i]), in.Rows())
			if b <= 0 {
				return 0
			}
			d += b
		}
		return max(1, min(d, rows))
	}
	st := findStat(n, r.ID)
	if st == nil || st.NDV <= 0 {
		return 0
	}
	d := st.NDV
	if s := scanOf(n, r.ID); s != nil && s.Filter != nil && colsOf(s.Filter)[r.ID] {
		return max(1, d*min(1, s.Rows()/max(1, s.TableRows)))
	}
	if total := st.tableRows; total > 0 && rows < total {
		d *= 1 - math.Pow(1-rows/total, total/d)
	}
	return max(1, min(d, rows))
}

// unionColumn returns the UNION in n whose column i n outputs as id,
// through projections that rename it, or nil.
func unionColumn(n Node, id ColumnID) (*SetOpNode, int) {
	switch x := n.(type) {
	case *SetOpNode:
		for i, c := range x.Cols {
			if c.ID == id && x.Kind == Union {
				return x, i
			}
		}
		return nil, 0
	case *ProjectNode:
		return unionThrough(x.Input, x.Cols, x.Exprs, id)
	case *AggNode:
		return unionThrough(x.Input, x.GroupCols, x.Groups, id)
	}
	for _, in := range n.Inputs() {
		if u, i := unionColumn(in, id); u != nil {
			return u, i
		}
	}
	return nil, 0
}

// unionThrough follows column id of a node computing cols as exprs over
// input, when it is a column of input.
func unionThrough(input Node, cols []Column, exprs []Expr, id ColumnID) (*SetOpNode, int) {
	for i, c := range cols {
		if c.ID == id {
			if r, ok := exprs[i].(*ColRef); ok {
				return unionColumn(input, r.ID)
			}
			return nil, 0
		}
	}
	return nil, 0
}

// scanOf returns the scan in n that outputs column id, or nil.
func scanOf(n Node, id ColumnID) *ScanNode {
	if s, ok := n.(*ScanNode); ok {
		for _, c := range s.Cols {
			if c.ID == id {
				return s
			}
		}
		return nil
	}
	for _, in := range n.Inputs() {
		if s := scanOf(in, id); s != nil {
			return s
		}
	}
	return nil
}
