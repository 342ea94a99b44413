package plan

// The batch physical planner turns an optimized logical plan into physical
// nodes. Its choices can be switched off by name (Options.DisabledRules),
// as the logical rules can; each falls back to the operator that always
// works (hash join, hash aggregation, sort then limit, one scan pipeline).
const (
	choiceTopN              = "top_n"
	choiceMergeJoin         = "merge_join"
	choiceSortAggregate     = "sort_aggregate"
	choiceParallelScan      = "parallel_scan"
	choiceParallelAggregate = "parallel_aggregate"
	choiceRuntimeFilter     = "runtime_filter"
)

// physicalChoices lists the physical planner's switchable choices.
var physicalChoices = []string{
	choiceTopN, choiceMergeJoin, choiceSortAggregate, choiceParallelScan,
	choiceParallelAggregate, choiceRuntimeFilter, choiceLookupScan, choiceLookupJoin,
}

type physicalPlanner struct {
	enabled func(choice string) bool
	// minParallelGroups is Options.MinParallelGroups resolved.
	minParallelGroups float64
	// spools are the shared CTEs planned so far: every reference reads
	// the same body.
	spools map[*SharedCTE]PhysicalNode
	// lookups reads tables by key (choice lookup_scan); nil: the catalog
	// cannot, or the scans being planned must keep their key order.
	lookups LookupCatalog
}

// ordered plans n for an operator that relies on its scans' key order:
// they stay table scans (a lookup reads keys in the filter's order).
func (pp *physicalPlanner) ordered(n Node) PhysicalNode {
	saved := pp.lookups
	pp.lookups = nil
	defer func() { pp.lookups = saved }()
	return pp.node(n)
}

// planPhysical plans root, whose logical plan is final, for batch
// execution.
func (b *binder) planPhysical(root Node) PhysicalNode {
	pp := &physicalPlanner{enabled: b.enabled, spools: map[*SharedCTE]PhysicalNode{}, minParallelGroups: b.opts.MinParallelGroups}
	if pp.minParallelGroups == 0 {
		pp.minParallelGroups = DefaultMinParallelGroups
	}
	pp.lookups, _ = b.cat.(LookupCatalog)
	return pp.plan(root)
}

// parallelMinReduction: an aggregation estimated to reduce its input rows
// less runs serially (unless Options.MinParallelGroups is negative). Each worker of a parallel aggregation reads every
// input row and copies its own rows' arguments, which pays only when the
// hash table's work per row outweighs it: at about 630K groups in 1M rows
// (BenchmarkHashAggregate many-2int) the parallel aggregation took more
// wall and CPU time than the serial one (227-398 against 167-261 ms wall,
// load ~4). On the 28 TPC-DS SF1 queries it changes (quiet machine, two
// alternated rounds) it took 0.94x the wall and 0.92x the CPU time in the
// geometric mean: q04 0.75x, q11 0.77x; q35 1.28x and q23 1.20x slower.
const parallelMinReduction = 2

func (pp *physicalPlanner) plan(root Node) PhysicalNode {
	p := pp.node(root)
	if pp.enabled(choiceParallelScan) {
		p = parallelScans(p, false)
	}
	if pp.enabled(choiceRuntimeFilter) {
		runtimeFilters(p, estimator{})
	}
	keepOrders(p, true, map[PhysicalNode]bool{})
	return p
}

// node chooses the operators of n and of its inputs.
func (pp *physicalPlanner) node(n Node) PhysicalNode {
	switch x := n.(type) {
	case *ScanNode:
		if ls := pp.lookupScan(x); ls != nil {
			return ls
		}
		return &TableScan{physical: physicalOf(x), Scan: x}
	case *CTEScanNode:
		body, ok := pp.spools[x.Shared]
		if !ok {
			// A query of its own: its pipelines are gathered and its
			// joins publish ranges within it.
			body = pp.plan(x.Shared.Root)
			pp.spools[x.Shared] = body
		}
		return &SpoolScan{physical: physicalOf(x), Ref: x, Body: body}
	case *JoinNode:
		if lj := pp.lookupJoin(x); lj != nil {
			return lj
		}
		if buckets, ok := mergeBuckets(x); ok && len(x.LeftKeys) > 0 && pp.enabled(choiceMergeJoin) {
			l, r := pp.ordered(x.Left), pp.ordered(x.Right)
			return &MergeJoin{physical: physicalOf(x), Join: x, Left: l, Right: r, Buckets: buckets}
		}
		l, r := pp.node(x.Left), pp.node(x.Right)
		if len(x.LeftKeys) == 0 {
			return &NestedLoopJoin{physical: physicalOf(x), Join: x, Left: l, Right: r}
		}
		return &HashJoin{physical: physicalOf(x), Join: x, Left: l, Right: r}
	case *AggNode:
		if sortable(x) && pp.enabled(choiceSortAggregate) {
			return &SortAggregate{physical: physicalOf(x), Agg: x, Input: pp.ordered(x.Input)}
		}
		in := pp.node(x.Input)
		if len(x.Groups) > 0 && x.Sets == nil && pp.enabled(choiceParallelAggregate) && x.Rows() > pp.minParallelGroups &&
			(pp.minParallelGroups < 0 || x.Rows()*parallelMinReduction <= x.Input.Rows()) {
			return &ParallelHashAggregate{physical: physicalOf(x), Agg: x, Input: in}
		}
		return &HashAggregate{physical: physicalOf(x), Agg: x, Input: in}
	case *LimitNode:
		if p := pp.topN(x); p != nil {
			return p
		}
	}
	inputs := n.Inputs()
	p := &PlainOp{physical: physicalOf(n), Inputs: make([]PhysicalNode, len(inputs))}
	for i, in := range inputs {
		p.Inputs[i] = pp.node(in)
	}
	return p
}

// topN plans LIMIT over ORDER BY, with projections between them, as a
// top-N below the projection (choice top_n); nil when l is not that.
func (pp *physicalPlanner) topN(l *LimitNode) PhysicalNode {
	if l.Count == nil || !pp.enabled(choiceTopN) {
		return nil
	}
	in := l.Input
	project, _ := in.(*ProjectNode)
	if project != nil {
		in = project.Input
	}
	s, ok := in.(*SortNode)
	if !ok {
		return nil
	}
	top := &TopN{physical: physical{logical: s, estimate: l}, Sort: s, Limit: l, Input: pp.node(s.Input)}
	if project == nil {
		return top
	}
	return &PlainOp{physical: physical{logical: project, estimate: l}, Inputs: []PhysicalNode{top}}
}

// parallelScans puts a Gather above each pipeline of filters and
// projections over a scan, unless an operator above relies on the scan's
// order (merge joins, sort aggregation).
func parallelScans(n PhysicalNode, ordered bool) PhysicalNode {
	if isPipeline(n) {
		if ordered {
			return n
		}
		return &Gather{physical: physical{logical: n.Logical(), estimate: n.Logical()}, Input: n}
	}
	switch x := n.(type) {
	case *MergeJoin:
		x.Left, x.Right = parallelScans(x.Left, true), parallelScans(x.Right, true)
	case *SortAggregate:
		x.Input = parallelScans(x.Input, true)
	case *HashJoin:
		x.Left, x.Right = parallelScans(x.Left, false), parallelScans(x.Right, false)
	case *NestedLoopJoin:
		x.Left, x.Right = parallelScans(x.Left, false), parallelScans(x.Right, false)
	case *HashAggregate:
		x.Input = parallelScans(x.Input, false)
	case *ParallelHashAggregate:
		x.Input = parallelScans(x.Input, false)
	case *TopN:
		x.Input = parallelScans(x.Input, false)
	case *LookupJoin:
		x.Left = parallelScans(x.Left, false)
	case *PlainOp:
		for i, in := range x.Inputs {
			x.Inputs[i] = parallelScans(in, false)
		}
	}
	return n
}

// isPipeline reports whether n is filters and projections over one scan.
func isPipeline(n PhysicalNode) bool {
	switch x := n.(type) {
	case *TableScan:
		return true
	case *PlainOp:
		switch x.logical.(type) {
		case *FilterNode, *ProjectNode:
			return isPipeline(x.Inputs[0])
		}
	}
	return false
}

// keepOrders sets HashJoin.KeepOrder in n, whose output order may be seen
// (need), and reports whether n's output carries an order that a sort made
// below (or may: a window's output). A hash join probing
// on several cores returns its rows in no particular order, so one whose
// left input carries such an order probes serially where that may be
// seen: by the query's result, a LIMIT or a window above (which rows, and
// a window's ties or its numbering without ORDER BY), or an aggregate
// whose value depends on its input's order (orderSensitive). A sort or
// top-N above orders rows again, and a hash join's build side is read
// whole. Scan order is not such an order: what relies on it (merge joins,
// sort aggregations) takes scans directly (orderOf), never a join.
func keepOrders(n PhysicalNode, need bool, bodies map[PhysicalNode]bool) bool {
	switch x := n.(type) {
	case *HashJoin:
		keepOrders(x.Right, false, bodies)
		ordered := keepOrders(x.Left, need, bodies) && need
		// Right and full joins probe serially anyway (exec): no mark.
		x.KeepOrder = ordered && x.Join.Kind != RightJoin && x.Join.Kind != FullJoin
		return ordered
	case *NestedLoopJoin:
		keepOrders(x.Right, false, bodies)
		return keepOrders(x.Left, need, bodies)
	case *LookupJoin:
		return keepOrders(x.Left, need, bodies)
	case *HashAggregate:
		keepOrders(x.Input, orderSensitive(x.Agg), bodies)
		return false
	case *ParallelHashAggregate:
		keepOrders(x.Input, orderSensitive(x.Agg), bodies)
		return false
	case *TopN:
		keepOrders(x.Input, false, bodies)
		return true
	case *SpoolScan:
		// Every reader sees the body's order: as at a query's root.
		// Each body once: CTEs reading CTEs twice make 2^n paths to one.
		ordered, done := bodies[x.Body]
		if !done {
			ordered = keepOrders(x.Body, true, bodies)
			bodies[x.Body] = ordered
		}
		return ordered
	case *PlainOp:
		switch x.logical.(type) {
		case *SortNode:
			keepOrders(x.Inputs[0], false, bodies)
			return true
		case *WindowNode:
			keepOrders(x.Inputs[0], true, bodies)
			return true
		case *LimitNode:
			return keepOrders(x.Inputs[0], true, bodies)
		}
		ordered := false
		for _, in := range x.Inputs {
			ordered = keepOrders(in, need, bodies) || ordered
		}
		return ordered
	}
	// Scans, gathers, merge joins and sort aggregations read scans.
	for _, c := range n.Children() {
		keepOrders(c, false, bodies)
	}
	return false
}

// orderSensitive reports whether an aggregate of a depends on the order of
// its input rows (the values it collects, or the one it picks).
func orderSensitive(a *AggNode) bool {
	for _, c := range a.Aggs {
		switch c.Fn {
		case "array_agg", "array_agg_ignore_nulls", "json_arrayagg", "json_arrayagg_null_on_null",
			"json_objectagg", "json_objectagg_absent_on_null", "listagg", "any_value", "arbitrary",
			"first_value", "last_value":
			return true
		}
	}
	return false
}
