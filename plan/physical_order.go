package plan

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// ordering describes how a node's output is ordered: each split (stream of
// a scan, read one after another) is sorted ascending by cols, and splitBy
// are the columns whose values decide the split (nil: a single split, so
// the order is global). Rows with equal splitBy values are in one split, so
// the output is clustered by any prefix of cols that covers splitBy.
type ordering struct {
	cols    []ColumnID
	splitBy []ColumnID
	scan    *ScanNode
}

// orderOf follows a chain of filters and column-preserving projections down
// to a primary-key table scan.
func orderOf(n Node) (ordering, bool) {
	switch x := n.(type) {
	case *ScanNode:
		t := x.Table
		pk := t.PrimaryKey()
		if len(pk) == 0 {
			return ordering{}, false
		}
		id := func(name string) (ColumnID, bool) {
			i := slices.Index(x.Names, name)
			if i < 0 {
				return 0, false
			}
			return x.Cols[i].ID, true
		}
		var o ordering
		o.scan = x
		for _, k := range pk {
			c, ok := id(k)
			if !ok {
				break
			}
			o.cols = append(o.cols, c)
		}
		if t.Buckets() > 1 || len(t.PartitionKeys()) > 0 {
			for _, k := range append(t.BucketKey(), t.PartitionKeys()...) {
				c, ok := id(k)
				if !ok {
					return ordering{}, false
				}
				o.splitBy = append(o.splitBy, c)
			}
			if len(o.splitBy) == 0 {
				// Several splits but nothing to say which rows go where.
				return ordering{}, false
			}
		}
		return o, len(o.cols) > 0
	case *FilterNode:
		return orderOf(x.Input)
	case *ProjectNode:
		o, ok := orderOf(x.Input)
		if !ok {
			return o, false
		}
		out := map[ColumnID]ColumnID{}
		for i, e := range x.Exprs {
			if c, ok := e.(*ColRef); ok {
				if _, dup := out[c.ID]; !dup {
					out[c.ID] = x.Cols[i].ID
				}
			}
		}
		var cols []ColumnID
		for _, c := range o.cols {
			m, ok := out[c]
			if !ok {
				break
			}
			cols = append(cols, m)
		}
		var split []ColumnID
		for _, c := range o.splitBy {
			m, ok := out[c]
			if !ok {
				return ordering{}, false
			}
			split = append(split, m)
		}
		return ordering{cols: cols, splitBy: split, scan: o.scan}, len(cols) > 0
	}
	return ordering{}, false
}

func colRefIDs(es []Expr) ([]ColumnID, bool) {
	out := make([]ColumnID, len(es))
	for i, e := range es {
		c, ok := e.(*ColRef)
		if !ok {
			return nil, false
		}
		out[i] = c.ID
	}
	return out, true
}

func sameSet(a, b []ColumnID) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func containsAll(set, sub []ColumnID) bool {
	for _, x := range sub {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

// sortable says whether a can be a sort aggregation (choice
// sort_aggregate): its input is clustered by the groups when they are a
// prefix (in any order) of the scan order that covers the split columns.
func sortable(a *AggNode) bool {
	if a.Sets != nil || len(a.Groups) == 0 {
		return false
	}
	g, ok := colRefIDs(a.Groups)
	if !ok {
		return false
	}
	o, ok := orderOf(a.Input)
	return ok && len(g) <= len(o.cols) && sameSet(o.cols[:len(g)], g) && containsAll(g, o.splitBy)
}

// mergeBuckets says whether j can be a sort-merge join (choice merge_join):
// both inputs ordered on the join keys, either globally (single-split
// tables, buckets 0) or bucket by bucket (tables with the same bucket count
// bucketed on the join keys, joined split by split: buckets > 1).
func mergeBuckets(j *JoinNode) (buckets int, ok bool) {
	if len(j.LeftKeys) == 0 {
		return 0, false
	}
	lk, ok1 := colRefIDs(j.LeftKeys)
	rk, ok2 := colRefIDs(j.RightKeys)
	if !ok1 || !ok2 {
		return 0, false
	}
	for i := range j.LeftKeys {
		if !arrow.TypeEqual(j.LeftKeys[i].Type(), j.RightKeys[i].Type()) {
			return 0, false
		}
	}
	lo, ok1 := orderOf(j.Left)
	ro, ok2 := orderOf(j.Right)
	if !ok1 || !ok2 || len(lk) > len(lo.cols) || len(rk) > len(ro.cols) {
		return 0, false
	}
	// The keys must be the leading order columns, pairwise.
	for i := range lk {
		if lo.cols[i] != lk[i] || ro.cols[i] != rk[i] {
			return 0, false
		}
	}
	switch {
	case lo.splitBy == nil && ro.splitBy == nil:
		return 0, true
	case lo.scan.Table.Buckets() == ro.scan.Table.Buckets() && lo.scan.Table.Buckets() > 1 &&
		len(lo.scan.Table.PartitionKeys()) == 0 && len(ro.scan.Table.PartitionKeys()) == 0 &&
		len(lo.splitBy) == len(ro.splitBy) && len(lo.splitBy) <= len(lk):
		// Bucket keys must pair up with join keys at the same positions,
		// so equal keys hash to the same bucket on both sides.
		for i := range lo.splitBy {
			li, ri := slices.Index(lk, lo.splitBy[i]), slices.Index(rk, ro.splitBy[i])
			if li < 0 || li != ri {
				return 0, false
			}
		}
		return lo.scan.Table.Buckets(), true
	}
	return 0, false
}
