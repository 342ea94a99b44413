package plan

// pruneScans prunes the columns nobody reads before the rules that read
// every join's columns: joining n tables of w columns each cost them
// n^2*w, 256 tables of 200 columns 16 GB. The shared CTEs' reads are
// noted again by rule prune_columns.
func pruneScans(root Node) Node {
	root = pruneColumns(root, idSet(root.Columns()))
	for _, sh := range sharedCTEs(root) {
		sh.read = nil
	}
	return root
}

// pruneColumns drops scan and projection outputs nobody reads.
func pruneColumns(n Node, need map[ColumnID]bool) Node {
	add := func(s map[ColumnID]bool, es ...Expr) {
		for _, e := range es {
			for id := range colsOf(e) {
				s[id] = true
			}
		}
	}
	switch x := n.(type) {
	case *CTEScanNode:
		x.Shared.noteRead(x, need)
		return x
	case *ScanNode:
		add(need, x.Filter)
		var cols []Column
		var names []string
		for i, c := range x.Cols {
			// t$audit_log's splits always begin with the row kind.
			if need[c.ID] || (i == 0 && x.Read == ReadAuditLog) {
				cols = append(cols, c)
				names = append(names, x.Names[i])
			}
		}
		if len(cols) == 0 && len(x.Cols) > 0 {
			// COUNT(*) still needs rows: keep the narrowest column.
			cols, names = x.Cols[:1], x.Names[:1]
		}
		x.Cols, x.Names = cols, names
		return x
	case *ProjectNode:
		var exprs []Expr
		var cols []Column
		for i, c := range x.Cols {
			if need[c.ID] {
				exprs = append(exprs, x.Exprs[i])
				cols = append(cols, c)
			}
		}
		if len(cols) == 0 && len(x.Cols) > 0 {
			exprs, cols = x.Exprs[:1], x.Cols[:1]
		}
		x.Exprs, x.Cols = exprs, cols
		inner := map[ColumnID]bool{}
		add(inner, exprs...)
		x.Input = pruneColumns(x.Input, inner)
		return x
	case *AggNode:
		// Aggregates nobody reads need not be computed.
		var aggs []AggCall
		for _, a := range x.Aggs {
			if need[a.Col.ID] {
				aggs = append(aggs, a)
			}
		}
		x.Aggs = aggs
		inner := map[ColumnID]bool{}
		add(inner, nodeExprs(x)...)
		x.Input = pruneColumns(x.Input, inner)
		return x
	case *WindowNode:
		var funcs []WindowFunc
		for _, f := range x.Funcs {
			if need[f.Col.ID] {
				funcs = append(funcs, f)
			}
		}
		if len(funcs) == 0 {
			return pruneColumns(x.Input, need)
		}
		x.Funcs = funcs
		inner := map[ColumnID]bool{}
		for id := range need {
			inner[id] = true
		}
		add(inner, nodeExprs(x)...)
		x.Input = pruneColumns(x.Input, inner)
		return x
	case *DistinctNode, *SetOpNode, *Max1RowNode:
		// Every column matters to the result.
		for i, in := range n.Inputs() {
			setInput(n, i, pruneColumns(in, idSet(in.Columns())))
		}
		return n
	}
	inner := map[ColumnID]bool{}
	for id := range need {
		inner[id] = true
	}
	add(inner, nodeExprs(n)...)
	for i, in := range n.Inputs() {
		setInput(n, i, pruneColumns(in, inner))
	}
	return n
}
