package plan

import (
	"fmt"
	"slices"
	"strings"
)

// A rule is a logical rewrite: it returns a plan with the same result as
// root (possibly root itself, changed in place). Rules choose no physical
// operators: the batch physical planner (physical_plan.go) and the
// streaming one (stream_plan.go) both read the plan they leave.
type rule struct {
	name string
	// required rules run even when named in Options.DisabledRules: the
	// physical planners rely on what they do.
	required bool
	// needs names the rules this one completes: it runs only when they do.
	needs []string
	apply func(b *binder, root Node) Node
}

// ruleSharedCTE switches a choice of the binder: a CTE read twice is
// computed once (cte.go).
const ruleSharedCTE = "shared_cte"

// logicalRules run in this order on every bound plan.
var logicalRules = []rule{
	{name: "inline_ctes", required: true, apply: (*binder).resolveCTEs},
	{name: "fold_constants", apply: foldConstants},
	{name: "push_filters", apply: func(b *binder, root Node) Node {
		if b.enabled("prune_columns") {
			root = pruneScans(root)
		}
		return pushFilters(root, nil)
	}},
	// Pushing through projections and unions substitutes definitions into
	// filters: a union branch's constant ('s' = 's') folds now.
	{name: "refold_constants", needs: []string{"fold_constants", "push_filters"}, apply: (*binder).foldNode},
	{name: "cte_filters", needs: []string{ruleSharedCTE}, apply: func(b *binder, root Node) Node {
		b.recordCTEFilters(root)
		return root
	}},
	// A streaming plan keeps its joins as written: its shape must not
	// depend on the tables' sizes, as a continuous job's checkpoint is
	// restored into the plan it binds at its restart (and its hash
	// tables are both sides' state, whatever their order).
	{name: "join_order", apply: func(b *binder, root Node) Node {
		if b.streamPos != nil {
			return root
		}
		return reorderJoins(b.ctx, root)
	}},
	{name: "join_keys", required: true, apply: func(b *binder, root Node) Node { return splitJoinKeys(root, b.streamPos == nil) }},
	// After join_keys: it rewrites the joins' split keys (rules_eager.go).
	{name: "eager_aggregate", apply: func(b *binder, root Node) Node {
		if b.streamPos != nil {
			return root
		}
		return eagerAggregate(b, root)
	}},
	// After join_keys: it keeps the joins' split keys (rules_setop.go). A
	// streaming plan keeps its joins: their state differs.
	{name: "semi_join_set_ops", apply: func(b *binder, root Node) Node {
		if b.streamPos != nil {
			return root
		}
		return semiJoinSetOps(root)
	}},
	// After eager_aggregate, which splits the aggregates it moves.
	{name: "aggregate_subexpressions", apply: func(b *binder, root Node) Node {
		if b.streamPos != nil {
			return root
		}
		return aggregateSubexpressions(b, root)
	}},
	{name: "prune_columns", apply: func(_ *binder, root Node) Node { return pruneColumns(root, idSet(root.Columns())) }},
	{name: "scan_predicates", needs: []string{"push_filters"}, apply: func(_ *binder, root Node) Node {
		derivePushdown(root)
		return root
	}},
}

// Rules lists what Options.DisabledRules can switch off: the logical rules
// in the order they run, then the batch physical planner's choices.
var Rules = ruleSwitches()

func ruleSwitches() []string {
	out := []string{ruleSharedCTE, ruleMergeScalars}
	for _, r := range logicalRules {
		if !r.required {
			out = append(out, r.name)
		}
	}
	return append(out, physicalChoices...)
}

func (b *binder) enabled(name string) bool { return !slices.Contains(b.opts.DisabledRules, name) }

func (b *binder) runs(r rule) bool {
	if r.required {
		return true
	}
	if !b.enabled(r.name) {
		return false
	}
	for _, n := range r.needs {
		if !b.enabled(n) {
			return false
		}
	}
	return true
}

// optimize applies the logical rules in order, restores the output column
// order rules may have permuted, then optimizes the shared CTEs the plan
// reads.
func (b *binder) optimize(root Node) Node {
	want := root.Columns()
	if b.opts.Trace != nil {
		fmt.Fprintf(b.opts.Trace, "bound:\n%s", logicalText(root))
	}
	for _, r := range logicalRules {
		if !b.runs(r) {
			continue
		}
		checkCtx(b.ctx)
		if b.opts.Trace == nil {
			root = r.apply(b, root)
			continue
		}
		before := logicalText(root)
		root = r.apply(b, root)
		if after := logicalText(root); after != before {
			fmt.Fprintf(b.opts.Trace, "%s:\n%s", r.name, after)
		} else {
			fmt.Fprintf(b.opts.Trace, "%s: no change\n", r.name)
		}
	}
	got := root.Columns()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].ID == want[i].ID
	}
	if !same {
		root = (&binder{}).project(root, want)
	}
	if b.cteDepth == 0 {
		b.cteDepth++
		b.optimizeShared(root)
		b.cteDepth--
	}
	return root
}

// logicalText renders a logical plan for Options.Trace.
func logicalText(root Node) string {
	var sb strings.Builder
	explainTree(&sb, root, 1)
	explainShared(&sb, root, explainTree)
	return sb.String()
}

func idSet(cols []Column) map[ColumnID]bool {
	s := make(map[ColumnID]bool, len(cols))
	for _, c := range cols {
		s[c.ID] = true
	}
	return s
}
