package plan

import (
	"context"
	"maps"
	"math"
	"math/bits"
	"slices"
)

// reorderJoins rebuilds trees of inner joins: by dynamic programming over
// the inputs (dpJoin), or greedily for many or unconnected inputs
// (greedyJoin). A semi or anti join over such a tree may move down to the
// input its condition reads (pushSemiJoin).
func reorderJoins(ctx context.Context, n Node) Node {
	j, ok := n.(*JoinNode)
	switch {
	case ok && j.Kind == InnerJoin && !j.Temporal:
		var rels []Node
		var conds []Expr
		flattenInner(j, &rels, &conds)
		for i := range rels {
			rels[i] = reorderJoins(ctx, rels[i])
		}
		return pullSemiJoins(ctx, rels, conds)
	case ok && semiLike(j.Kind):
		j.Left, j.Right = reorderJoins(ctx, j.Left), reorderJoins(ctx, j.Right)
		if t := pushSemiJoin(ctx, j); t != nil {
			return t
		}
		return j
	}
	for i, in := range n.Inputs() {
		setInput(n, i, reorderJoins(ctx, in))
	}
	return n
}

// orderJoins joins rels (at least two) with the conditions conds.
func orderJoins(ctx context.Context, rels []Node, conds []Expr) Node {
	if len(rels) == 2 {
		return &JoinNode{Kind: InnerJoin, Left: rels[0], Right: rels[1], Cond: andAll(conds)}
	}
	if t := dpJoin(ctx, rels, conds); t != nil {
		return t
	}
	return greedyJoin(ctx, rels, conds)
}

func flattenInner(n Node, rels *[]Node, conds *[]Expr) {
	if j, ok := n.(*JoinNode); ok && j.Kind == InnerJoin && !j.Temporal {
		flattenInner(j.Left, rels, conds)
		flattenInner(j.Right, rels, conds)
		*conds = append(*conds, conjuncts(j.Cond)...)
		return
	}
	if f, ok := n.(*FilterNode); ok {
		if j, ok := f.Input.(*JoinNode); ok && j.Kind == InnerJoin && !j.Temporal {
			flattenInner(j, rels, conds)
			*conds = append(*conds, conjuncts(f.Pred)...)
			return
		}
	}
	*rels = append(*rels, n)
}

func semiLike(k JoinKind) bool { return k == SemiJoin || k == AntiJoin || k == AntiNullAwareJoin }

// pushSemiJoin returns the inner joins below j with j moved down to the one
// input its condition reads, when that is estimated cheaper; nil if not.
// IN/EXISTS subqueries are bound above the whole FROM list, but a semi join
// filters per left row on that input's columns only, so it commutes with
// the joins. Moved, it runs on all of the input's rows and the join order
// sees the input filtered: q58's `d_date IN (...)` shrinks date_dim to 7
// rows before it meets store_sales. Left above, it runs on the join's
// result: q16's EXISTS over catalog_sales waits for the date, address and
// call center filters.
func pushSemiJoin(ctx context.Context, j *JoinNode) Node {
	var rels []Node
	var conds []Expr
	flattenInner(j.Left, &rels, &conds)
	if len(rels) < 2 {
		return nil
	}
	need := colsOf(j.Cond)
	for _, c := range j.Right.Columns() {
		delete(need, c.ID)
	}
	for i, r := range rels {
		if !subset(need, r.Columns()) {
			continue
		}
		moved := *j
		moved.Left = r
		rels[i] = &moved
		if t := orderJoins(ctx, rels, conds); joinCost(t) < joinCost(j) {
			return t
		}
		return nil
	}
	return nil
}

// pullSemiJoins joins rels, first moving semi, anti and left joins among
// them above all the joins where that is estimated cheaper (the opposite
// of pushSemiJoin). q78's anti join and q80's left join of store_sales
// with store_returns then run on the part of store_sales the date filter
// keeps.
func pullSemiJoins(ctx context.Context, rels []Node, conds []Expr) Node {
	best := orderJoins(ctx, rels, conds)
	bestCost := joinCost(best)
	condCols := map[ColumnID]bool{}
	for _, c := range conds {
		maps.Copy(condCols, colsOf(c))
	}
	var above []*JoinNode
	var nulls []*ProjectNode // the NULL columns antiFromLeftJoin added
	for i, r := range rels {
		proj, _ := r.(*ProjectNode)
		if proj != nil {
			r = proj.Input
		}
		s, ok := r.(*JoinNode)
		switch {
		case !ok:
			continue
		case s.Kind == LeftJoin:
			// (A LEFT JOIN B) JOIN C = (A JOIN C) LEFT JOIN B when no
			// condition of the inner joins reads B.
			if proj != nil || readsAny(condCols, s.Right.Columns()) {
				continue
			}
		case !semiLike(s.Kind) || proj != nil && !nullsOver(proj, s, condCols):
			continue
		}
		alt := slices.Clone(rels)
		alt[i] = s.Left
		t := orderJoins(ctx, alt, conds)
		for _, a := range append(above, s) {
			moved := *a
			moved.Left = t
			t = &moved
		}
		moreNulls := nulls
		if proj != nil {
			moreNulls = append(slices.Clone(nulls), proj)
		}
		for _, p := range moreNulls {
			t = withNulls(t, p)
		}
		if c := joinCost(t); c < bestCost {
			best, bestCost, rels, above, nulls = t, c, alt, append(above, s), moreNulls
		}
	}
	return best
}

// readsAny reports whether any of cols is in read.
func readsAny(read map[ColumnID]bool, cols []Column) bool {
	for _, c := range cols {
		if read[c.ID] {
			return true
		}
	}
	return false
}

// nullsOver reports whether p passes s's columns through and adds only
// constants no condition in cond reads (antiFromLeftJoin's shape).
func nullsOver(p *ProjectNode, s *JoinNode, condCols map[ColumnID]bool) bool {
	in := idSet(s.Columns())
	for i, e := range p.Exprs {
		switch x := e.(type) {
		case *ColRef:
			if !in[x.ID] || x.ID != p.Cols[i].ID {
				return false
			}
		case *Const:
			if condCols[p.Cols[i].ID] {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// withNulls adds p's constant columns to n's output.
func withNulls(n Node, p *ProjectNode) Node {
	cols := n.Columns()
	out := &ProjectNode{Input: n, Cols: slices.Clone(cols)}
	for _, c := range cols {
		out.Exprs = append(out.Exprs, colRef(c))
	}
	for i, e := range p.Exprs {
		if _, ok := e.(*Const); ok {
			out.Exprs = append(out.Exprs, e)
			out.Cols = append(out.Cols, p.Cols[i])
		}
	}
	return out
}

// joinCost is the estimated rows every join in n outputs (C_out), plus the
// left rows each semi or anti join reads.
func joinCost(n Node) float64 {
	return joinCostOf(n, estimator{})
}

func joinCostOf(n Node, est estimator) float64 {
	var c float64
	if j, ok := n.(*JoinNode); ok {
		c = est.rows(j)
		if semiLike(j.Kind) {
			c += est.rows(j.Left)
		}
	}
	for _, in := range n.Inputs() {
		c += joinCostOf(in, est)
	}
	return c
}

// maxDPRelations bounds dpJoin: it looks at 3^n splits.
const maxDPRelations = 10

// dpJoin finds, by dynamic programming over subsets of rels, the bushy join
// tree with the least estimated sum of intermediate result rows and hash
// table rows (C_out plus the build sides), joining only connected subsets. Greedy ordering from the smallest pair
// can start on two dimensions the fact table meets only through a join
// that keeps most of it (q61: customer with customer_address first, then
// 40% of store_sales, before the date filter that keeps 2%). nil when
// rels are too many or not connected (greedyJoin then adds cross products).
func dpJoin(ctx context.Context, rels []Node, conds []Expr) Node {
	n := len(rels)
	if n > maxDPRelations {
		return nil
	}
	owner := map[ColumnID]int{}
	for i, r := range rels {
		for _, c := range r.Columns() {
			owner[c.ID] = i
		}
	}
	// A condition on one input filters it; one on none stays on top.
	rels = slices.Clone(rels)
	local := make([][]Expr, n)
	var top, joinConds []Expr
	var masks []uint
	for _, c := range conds {
		var m uint
		for id := range colsOf(c) {
			i, ok := owner[id]
			if !ok {
				return nil // not from these inputs: leave it to greedyJoin
			}
			m |= 1 << i
		}
		switch {
		case m == 0:
			top = append(top, c)
		case m&(m-1) == 0:
			i := bits.TrailingZeros(m)
			local[i] = append(local[i], c)
		default:
			joinConds = append(joinConds, c)
			masks = append(masks, m)
		}
	}
	best := make([]Node, 1<<n)
	cost := make([]float64, 1<<n)
	// rows[s] is best[s].Rows(), kept because Rows re-estimates the whole
	// subtree and the split loop below asks for it 3^n times.
	rows := make([]float64, 1<<n)
	for i := range rels {
		best[1<<i] = filterOver(rels[i], local[i])
		rows[1<<i] = best[1<<i].Rows()
	}
	full := uint(1)<<n - 1
	for s := uint(3); s <= full; s++ {
		if s&(s-1) == 0 {
			continue
		}
		checkCtx(ctx)
		low := s & -s
		var bl, br uint
		bestCost := math.Inf(1)
		// Each split once: the left part holds s's lowest input.
		for l := (s - 1) & s; l > 0; l = (l - 1) & s {
			r := s ^ l
			if l&low == 0 || best[l] == nil || best[r] == nil {
				continue
			}
			// Plus the hash table: the smaller side is built.
			c := cost[l] + cost[r] + min(rows[l], rows[r])
			if c < bestCost && joins(masks, l, r) {
				bl, br, bestCost = l, r, c
			}
		}
		if bl == 0 {
			continue
		}
		var jc []Expr
		for k, m := range masks {
			if m&s == m && m&bl != m && m&br != m {
				jc = append(jc, joinConds[k])
			}
		}
		l, r := best[bl], best[br]
		// The right input is the hash table: keep the smaller side there.
		if rows[br] > rows[bl] {
			l, r = r, l
		}
		j := &JoinNode{Kind: InnerJoin, Left: l, Right: r, Cond: andAll(jc)}
		best[s], rows[s] = j, j.Rows()
		cost[s] = bestCost + rows[s]
	}
	if best[full] == nil {
		return nil
	}
	return filterOver(best[full], top)
}

// joins reports whether a condition connects the disjoint input sets l and r.
func joins(masks []uint, l, r uint) bool {
	for _, m := range masks {
		if m&l != 0 && m&r != 0 && m&^(l|r) == 0 {
			return true
		}
	}
	return false
}

func greedyJoin(ctx context.Context, rels []Node, conds []Expr) Node {
	used := make([]bool, len(conds))
	joined := make([]bool, len(rels))
	// Each input's columns and rows are computed once, the growing join's
	// once per step from its inputs', and each condition is indexed by the
	// inputs it reads: recomputing them for every candidate at every step
	// made a FROM list of n tables cost n^4 (200 tables took 13 s).
	relCols := make([][]Column, len(rels))
	relRows := make([]float64, len(rels))
	owner := map[ColumnID]int{}
	for i, r := range rels {
		relCols[i], relRows[i] = r.Columns(), r.Rows()
		for _, c := range relCols[i] {
			owner[c.ID] = i
		}
	}
	// condRels[k] are the inputs conds[k] reads; foreign: it reads a
	// column of none of them, so it never joins and stays on top.
	condRels := make([][]int, len(conds))
	foreign := make([]bool, len(conds))
	byRel := make([][]int, len(rels)) // the conditions reading each input
	var free []int                    // conditions reading no column
	for k, c := range conds {
		for id := range colsOf(c) {
			i, ok := owner[id]
			switch {
			case !ok:
				foreign[k] = true
			case !slices.Contains(condRels[k], i):
				condRels[k] = append(condRels[k], i)
				byRel[i] = append(byRel[i], k)
			}
		}
		if len(condRels[k]) == 0 && !foreign[k] {
			free = append(free, k)
		}
	}
	// within reports whether conds[k] reads only the joined inputs and b.
	within := func(k, b int) bool {
		if foreign[k] {
			return false
		}
		for _, i := range condRels[k] {
			if i != b && !joined[i] {
				return false
			}
		}
		return true
	}
	// connecting returns the unused conditions that join the joined inputs
	// to b: they read b, some joined input and nothing else.
	connecting := func(b int) []Expr {
		var jc []Expr
		for _, k := range byRel[b] {
			if !used[k] && len(condRels[k]) > 1 && within(k, b) {
				jc = append(jc, conds[k])
			}
		}
		return jc
	}
	estimate := func(cur Node, curCols []Column, curRows float64, next int, jc []Expr) float64 {
		if len(jc) == 0 {
			return curRows * relRows[next]
		}
		return max(1, joinRows(&JoinNode{Kind: InnerJoin, Left: cur, Right: rels[next], Cond: andAll(jc)}, curRows, relRows[next], curCols))
	}
	// Start: the connected pair with the smallest estimated join, or the
	// smallest input if none is connected.
	first, second, best := -1, -1, 0.0
	for i := range rels {
		checkCtx(ctx)
		joined[i] = true
		for j := range rels {
			if i == j {
				continue
			}
			if jc := connecting(j); len(jc) > 0 {
				if e := estimate(rels[i], relCols[i], relRows[i], j, jc); first < 0 || e < best {
					first, second, best = i, j, e
				}
			}
		}
		joined[i] = false
	}
	if first < 0 {
		first = 0
		for i := range rels {
			if relRows[i] < relRows[first] {
				first = i
			}
		}
	}
	cur, curCols, curRows := rels[first], relCols[first], relRows[first]
	joined[first] = true
	for done := 1; done < len(rels); done++ {
		checkCtx(ctx)
		next, nextEst, connected := -1, 0.0, false
		if done == 1 && second >= 0 {
			next, connected = second, true
		} else {
			for i := range rels {
				if joined[i] {
					continue
				}
				jc := connecting(i)
				c := len(jc) > 0
				e := estimate(cur, curCols, curRows, i, jc)
				if next < 0 || (c && !connected) || (c == connected && e < nextEst) {
					next, nextEst, connected = i, e, c
				}
			}
		}
		// The conditions the join covers now: those reading next, and at
		// the first join those reading first or no column.
		cand := byRel[next]
		if done == 1 {
			cand = slices.Concat(free, byRel[first], cand)
			slices.Sort(cand)
		}
		var jc []Expr
		for _, k := range cand {
			if !used[k] && within(k, next) {
				used[k] = true
				jc = append(jc, conds[k])
			}
		}
		joined[next] = true
		// The right input is the hash table: keep the smaller side there.
		l, r, lc, rc, lr, rr := cur, rels[next], curCols, relCols[next], curRows, relRows[next]
		if rr > lr {
			l, r, lc, rc, lr, rr = r, l, rc, lc, rr, lr
		}
		j := &JoinNode{Kind: InnerJoin, Left: l, Right: r, Cond: andAll(jc)}
		cur, curCols, curRows = j, concatCols(lc, rc), j.rowsFrom(lr, rr)
	}
	var rest []Expr
	for k, c := range conds {
		if !used[k] {
			rest = append(rest, c)
		}
	}
	return filterOver(cur, rest)
}
