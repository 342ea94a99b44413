package plan

import "fmt"

// CheckPhysical checks that q's physical plan mirrors its logical plan:
// each physical node has an input per input of its logical node, producing
// the columns that input has, in its order (Build compiles expressions
// against the logical inputs' columns).
func CheckPhysical(q *Query) error {
	if q.batch == nil {
		return nil
	}
	var walk func(n PhysicalNode) error
	walk = func(n PhysicalNode) error {
		var want [][]Column
		switch x := n.(type) {
		case *TopN:
			want = [][]Column{x.Sort.Input.Columns()}
		case *Gather:
			want = [][]Column{x.Input.Logical().Columns()}
		default:
			for _, in := range n.Logical().Inputs() {
				want = append(want, in.Columns())
			}
		}
		if s, ok := n.(*SpoolScan); ok {
			if !sameColumnIDs(s.Body.Columns(), s.Ref.Shared.Root.Columns()) {
				return fmt.Errorf("%s: its body produces %s, the CTE %s", physicalLine(n), colNames(s.Body.Columns()), colNames(s.Ref.Shared.Root.Columns()))
			}
			return walk(s.Body)
		}
		children := n.Children()
		if len(children) != len(want) {
			return fmt.Errorf("%s: %d inputs, its logical node %d", physicalLine(n), len(children), len(want))
		}
		for i, c := range children {
			if !sameColumnIDs(c.Columns(), want[i]) {
				return fmt.Errorf("%s: input %d produces %s, want %s", physicalLine(n), i, colNames(c.Columns()), colNames(want[i]))
			}
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(q.batch)
}

func sameColumnIDs(a, b []Column) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}
