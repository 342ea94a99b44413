package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// runtimeFilters links the integer keys of hash joins that drop unmatched
// probe rows (inner, semi, right), with a build side estimated at most a
// tenth of the probe side, to the probe-side scan columns each key reads
// (through a UNION, one per input): at run time the join publishes its
// build keys before it opens the probe side (exec.KeyRange); the scans
// skip the files and row groups outside their range and drop the rows
// whose key is not one of them (exec.KeySetExpr). Only rows the join
// would drop are dropped, so a key range never changes a result.
func runtimeFilters(n PhysicalNode, est estimator) {
	for _, in := range n.Children() {
		runtimeFilters(in, est)
	}
	j, ok := n.(*HashJoin)
	if !ok || j.Join.Kind != InnerJoin && j.Join.Kind != SemiJoin && j.Join.Kind != RightJoin {
		return
	}
	// The probe side then opens only after the build, instead of reading
	// in parallel with it: worth it for a small build before a big probe.
	if est.rows(j.Right.estimated())*10 > est.rows(j.Left.estimated()) {
		return
	}
	for i, k := range j.Join.LeftKeys {
		ref, ok := k.(*ColRef)
		if !ok || !rangeKeyType(ref.Typ) || !arrow.TypeEqual(ref.Typ, j.Join.RightKeys[i].Type()) {
			continue
		}
		scans := probeScans(j.Left, ref.ID, nil)
		if len(scans) == 0 {
			continue
		}
		if j.Ranges == nil {
			j.Ranges = make([]*KeyRangeFilter, len(j.Join.LeftKeys))
		}
		f := &KeyRangeFilter{Type: ref.Typ}
		for _, sc := range scans {
			sc.scan.Ranges = append(sc.scan.Ranges, ScanRange{Filter: f, Column: sc.col})
		}
		j.Ranges[i] = f
	}
}

// probeColumn is a table scan and the name of one of its columns.
type probeColumn struct {
	scan *TableScan
	col  string
}

func rangeKeyType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32:
		return true
	}
	return false
}

// probeScans appends to out the table scans whose column becomes id in n's
// output, through operators where dropping the scan's rows with other key
// values can only drop output rows with those key values (or a NULL key,
// when an outer join NULL-extends instead): the join above drops both.
// Through a UNION, each input's scan (the key is part of every row's
// identity, so a deduplicating union only loses rows the join drops).
// Through an aggregation whose group column it is: the rows with other key
// values make only the groups of those values, which the join drops (q62's
// sales aggregated by ship mode before the ship mode join), and the groups
// of a grouping set without the column, whose key is NULL, which it drops
// too. It stops at other aggregations, limits, windows and shared CTEs.
func probeScans(n PhysicalNode, id ColumnID, out []probeColumn) []probeColumn {
	switch x := n.(type) {
	case *TableScan:
		if x.Scan.Stream != nil {
			return out
		}
		for i, c := range x.Scan.Cols {
			if c.ID == id {
				return append(out, probeColumn{x, x.Scan.Names[i]})
			}
		}
	case *PlainOp:
		switch l := x.logical.(type) {
		case *ProjectNode:
			for i, c := range l.Cols {
				if c.ID == id {
					if r, ok := l.Exprs[i].(*ColRef); ok {
						return probeScans(x.Inputs[0], r.ID, out)
					}
					return out
				}
			}
		case *FilterNode:
			return probeScans(x.Inputs[0], id, out)
		case *SetOpNode:
			if l.Kind != Union {
				return out
			}
			for p, c := range l.Cols {
				if c.ID == id {
					for _, in := range x.Inputs {
						out = probeScans(in, in.Columns()[p].ID, out)
					}
					return out
				}
			}
		}
	case *Gather:
		return probeScans(x.Input, id, out)
	case *HashAggregate:
		return aggProbeScans(x.Agg, x.Input, id, out)
	case *ParallelHashAggregate:
		return aggProbeScans(x.Agg, x.Input, id, out)
	case *SortAggregate:
		return aggProbeScans(x.Agg, x.Input, id, out)
	case *HashJoin, *MergeJoin, *NestedLoopJoin:
		for _, side := range n.Children() {
			for _, c := range side.Columns() {
				if c.ID == id {
					return probeScans(side, id, out)
				}
			}
		}
	}
	return out
}

// aggProbeScans is probeScans through aggregation a over in: id must be a
// group column that is an input column.
func aggProbeScans(a *AggNode, in PhysicalNode, id ColumnID, out []probeColumn) []probeColumn {
	for i, c := range a.GroupCols {
		if c.ID == id {
			if r, ok := a.Groups[i].(*ColRef); ok {
				return probeScans(in, r.ID, out)
			}
			return out
		}
	}
	return out
}
