package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// runtimeFilters links the integer keys of hash joins that drop unmatched
// probe rows (inner, semi, right), with a build side estimated at most a
// tenth of the probe side, to the probe-side scan column each key reads:
// at run time the join publishes its build keys' range before it opens the
// probe side, and the scan skips the files and row groups outside it
// (exec.KeyRange). Only the statistics of the data decide what is
// skipped, so a key range never changes a result.
func runtimeFilters(n PhysicalNode) {
	for _, in := range n.Children() {
		runtimeFilters(in)
	}
	j, ok := n.(*HashJoin)
	if !ok || j.Join.Kind != InnerJoin && j.Join.Kind != SemiJoin && j.Join.Kind != RightJoin {
		return
	}
	// The probe side then opens only after the build, instead of reading
	// in parallel with it: worth it for a small build before a big probe.
	if j.Right.Rows()*10 > j.Left.Rows() {
		return
	}
	for i, k := range j.Join.LeftKeys {
		ref, ok := k.(*ColRef)
		if !ok || !rangeKeyType(ref.Typ) || !arrow.TypeEqual(ref.Typ, j.Join.RightKeys[i].Type()) {
			continue
		}
		scan, col := probeScan(j.Left, ref.ID)
		if scan == nil {
			continue
		}
		if j.Ranges == nil {
			j.Ranges = make([]*KeyRangeFilter, len(j.Join.LeftKeys))
		}
		f := &KeyRangeFilter{Column: col, Type: ref.Typ}
		j.Ranges[i] = f
		scan.Ranges = append(scan.Ranges, f)
	}
}

func rangeKeyType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32:
		return true
	}
	return false
}

// probeScan finds the table scan whose column becomes id in n's output,
// through operators where dropping the scan's rows with other key values
// can only drop output rows with those key values (or a NULL key, when an
// outer join NULL-extends instead): the join above drops both. It stops at
// aggregations, limits, windows and shared CTEs.
func probeScan(n PhysicalNode, id ColumnID) (*TableScan, string) {
	switch x := n.(type) {
	case *TableScan:
		if x.Scan.Stream != nil {
			return nil, ""
		}
		for i, c := range x.Scan.Cols {
			if c.ID == id {
				return x, x.Scan.Names[i]
			}
		}
	case *PlainOp:
		switch l := x.logical.(type) {
		case *ProjectNode:
			for i, c := range l.Cols {
				if c.ID == id {
					if r, ok := l.Exprs[i].(*ColRef); ok {
						return probeScan(x.Inputs[0], r.ID)
					}
					return nil, ""
				}
			}
		case *FilterNode:
			return probeScan(x.Inputs[0], id)
		}
	case *Gather:
		return probeScan(x.Input, id)
	case *HashJoin, *MergeJoin, *NestedLoopJoin:
		for _, side := range n.Children() {
			for _, c := range side.Columns() {
				if c.ID == id {
					return probeScan(side, id)
				}
			}
		}
	}
	return nil, ""
}
