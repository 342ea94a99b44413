package plan

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/tablestore"
)

// Node is an operator of a plan. Nodes are mutated only while binding and
// optimizing; after Bind returns they are shared read-only by every Build.
type Node interface {
	Columns() []Column
	Inputs() []Node
	// Rows estimates the output row count.
	Rows() float64
}

// ScanNode reads a table snapshot. Filter is re-applied above the scan
// (Pushed only lets the store skip data).
type ScanNode struct {
	Table    *tablestore.Table
	Snapshot int64
	// Tag, when set, reads the tagged snapshot (Snapshot is its id, for
	// statistics): it stays readable after expiry.
	Tag       string
	Label     string   // db.table [AS alias]
	Cols      []Column // output columns
	Names     []string // the table column behind each output column
	Filter    Expr
	Pushed    tablestore.Predicate
	TableRows float64
	// Stream, when set, reads the table's changes instead of a snapshot;
	// Names then include tablestore.RowKindColumn.
	Stream *tablestore.StreamSpec
	// Stats are the snapshot's column statistics for estimates (nil when
	// unavailable).
	Stats *tablestore.Statistics
	// Ranges are key ranges hash joins above publish at run time (rule
	// runtime_filter): files and row groups outside them are skipped.
	Ranges []*KeyRangeFilter
}

// KeyRangeFilter links build key i of a hash join (JoinNode.Ranges[i]) to
// the scan column on its probe side that the key reads.
type KeyRangeFilter struct {
	Column string // the table column
	Type   arrow.DataType
}

// ValuesNode is a constant relation.
type ValuesNode struct {
	Values [][]Expr
	Cols   []Column
}

// FilterNode keeps rows where Pred is true.
type FilterNode struct {
	Input Node
	Pred  Expr
}

// ProjectNode computes Exprs.
type ProjectNode struct {
	Input Node
	Exprs []Expr
	Cols  []Column
}

// JoinKind is the kind of a join.
type JoinKind int

// Join kinds. Semi and anti joins output the left columns only;
// AntiNullAware is NOT IN (no output if the right side has a NULL key).
const (
	InnerJoin JoinKind = iota
	LeftJoin
	RightJoin
	FullJoin
	SemiJoin
	AntiJoin
	AntiNullAwareJoin
)

func (k JoinKind) String() string {
	return [...]string{"inner", "left", "right", "full", "semi", "anti", "anti (null-aware)"}[k]
}

// JoinNode joins two inputs. Cond is the full condition (nil = cross); the
// physical planner splits it into equality keys and a residual.
type JoinNode struct {
	Kind        JoinKind
	Left, Right Node
	Cond        Expr
	// Set by physical planning:
	LeftKeys, RightKeys []Expr
	Residual            Expr
	Algo                string // hash, merge, nested-loop
	// Buckets > 1: a merge join run bucket by bucket (both inputs are
	// scans of tables bucketed alike on the keys).
	Buckets int
	// Ranges[i], when set, is the scan filter build key i feeds.
	Ranges []*KeyRangeFilter
}

// AggCall is one aggregate function.
type AggCall struct {
	Fn       string
	Args     []Expr
	Distinct bool
	Filter   Expr
	Col      Column
}

// AggNode groups and aggregates. With grouping sets, absent group columns
// are NULL and GroupingID (if non-nil) receives the grouping id.
type AggNode struct {
	Input      Node
	Groups     []Expr
	GroupCols  []Column
	Aggs       []AggCall
	Sets       [][]int
	GroupingID *Column
	Sorted     bool // input ordered on the groups: sort aggregation
	Parallel   bool // hash aggregation partitioned by group over the cores
}

// SortKey is one ORDER BY key.
type SortKey struct {
	Expr       Expr
	Desc       bool
	NullsFirst bool
}

// SortNode sorts; with Count >= 0 it is a top-N.
type SortNode struct {
	Input  Node
	Keys   []SortKey
	Offset Expr // nil = 0
	Count  Expr // nil = all
}

// LimitNode is LIMIT/OFFSET without ordering.
type LimitNode struct {
	Input  Node
	Offset Expr
	Count  Expr
}

// DistinctNode removes duplicate rows.
type DistinctNode struct{ Input Node }

// SetOpKind is a set operation.
type SetOpKind int

// Set operations.
const (
	Union SetOpKind = iota
	Intersect
	Except
)

func (k SetOpKind) String() string { return [...]string{"union", "intersect", "except"}[k] }

// SetOpNode combines inputs with the same column types; output columns are
// Cols (inputs positionally).
type SetOpNode struct {
	Kind        SetOpKind
	All         bool
	Left, Right Node
	Cols        []Column
}

// WindowFunc is one window function over the node's window.
type WindowFunc struct {
	Fn    string
	Args  []Expr
	Frame *exec.Frame // nil: the SQL default
	Col   Column
}

// WindowNode appends window function results to its input columns.
type WindowNode struct {
	Input       Node
	PartitionBy []Expr
	OrderBy     []SortKey
	Funcs       []WindowFunc
}

// Max1RowNode passes through at most one row and fails on a second one
// (scalar subqueries); with zero rows it yields one row of NULLs. With
// PerKeyCount set it instead checks that the count column of every row is
// at most 1 (a correlated scalar subquery grouped by its correlation key).
type Max1RowNode struct {
	Input       Node
	PerKeyCount *Column
}

// GatherNode runs copies of its input pipeline (filters and projections
// over a scan) in parallel, each reading a stripe of the scan's splits, and
// merges their rows in no particular order.
type GatherNode struct{ Input Node }

func (n *GatherNode) Columns() []Column { return n.Input.Columns() }
func (n *GatherNode) Inputs() []Node    { return []Node{n.Input} }
func (n *GatherNode) Rows() float64     { return n.Input.Rows() }

func (n *ScanNode) Columns() []Column     { return n.Cols }
func (n *ValuesNode) Columns() []Column   { return n.Cols }
func (n *FilterNode) Columns() []Column   { return n.Input.Columns() }
func (n *ProjectNode) Columns() []Column  { return n.Cols }
func (n *SortNode) Columns() []Column     { return n.Input.Columns() }
func (n *LimitNode) Columns() []Column    { return n.Input.Columns() }
func (n *DistinctNode) Columns() []Column { return n.Input.Columns() }
func (n *SetOpNode) Columns() []Column    { return n.Cols }
func (n *Max1RowNode) Columns() []Column  { return n.Input.Columns() }
func (n *JoinNode) Columns() []Column {
	l, r := n.Left.Columns(), n.Right.Columns()
	switch n.Kind {
	case SemiJoin, AntiJoin, AntiNullAwareJoin:
		return l
	case LeftJoin:
		return concatCols(l, nullable(r))
	case RightJoin:
		return concatCols(nullable(l), r)
	case FullJoin:
		return concatCols(nullable(l), nullable(r))
	}
	return concatCols(l, r)
}
func (n *AggNode) Columns() []Column {
	out := make([]Column, 0, len(n.GroupCols)+len(n.Aggs)+1)
	out = append(out, n.GroupCols...)
	for _, a := range n.Aggs {
		out = append(out, a.Col)
	}
	if n.GroupingID != nil {
		out = append(out, *n.GroupingID)
	}
	return out
}
func (n *WindowNode) Columns() []Column {
	out := append([]Column(nil), n.Input.Columns()...)
	for _, f := range n.Funcs {
		out = append(out, f.Col)
	}
	return out
}

func concatCols(a, b []Column) []Column {
	out := make([]Column, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

func nullable(cols []Column) []Column {
	out := make([]Column, len(cols))
	for i, c := range cols {
		c.Nullable = true
		out[i] = c
	}
	return out
}

func (n *ScanNode) Inputs() []Node     { return nil }
func (n *ValuesNode) Inputs() []Node   { return nil }
func (n *FilterNode) Inputs() []Node   { return []Node{n.Input} }
func (n *ProjectNode) Inputs() []Node  { return []Node{n.Input} }
func (n *JoinNode) Inputs() []Node     { return []Node{n.Left, n.Right} }
func (n *AggNode) Inputs() []Node      { return []Node{n.Input} }
func (n *SortNode) Inputs() []Node     { return []Node{n.Input} }
func (n *LimitNode) Inputs() []Node    { return []Node{n.Input} }
func (n *DistinctNode) Inputs() []Node { return []Node{n.Input} }
func (n *SetOpNode) Inputs() []Node    { return []Node{n.Left, n.Right} }
func (n *WindowNode) Inputs() []Node   { return []Node{n.Input} }
func (n *Max1RowNode) Inputs() []Node  { return []Node{n.Input} }

func (n *ScanNode) Rows() float64 {
	return max(1, n.TableRows*selectivity(n.Filter, n))
}
func (n *ValuesNode) Rows() float64  { return float64(len(n.Values)) }
func (n *FilterNode) Rows() float64  { return max(1, n.Input.Rows()*selectivity(n.Pred, n.Input)) }
func (n *ProjectNode) Rows() float64 { return n.Input.Rows() }
func (n *JoinNode) Rows() float64 {
	l, r := n.Left.Rows(), n.Right.Rows()
	switch {
	case semiLike(n.Kind):
		return max(1, l*semiSel(n, l, r))
	case n.Cond == nil:
		return l * r
	}
	est := joinRows(n, l, r)
	switch n.Kind {
	case LeftJoin:
		est = max(est, l)
	case RightJoin:
		est = max(est, r)
	case FullJoin:
		est = max(est, l+r)
	}
	return max(1, est)
}
func (n *AggNode) Rows() float64 {
	if len(n.Groups) == 0 {
		return 1
	}
	sets := max(1, len(n.Sets))
	in := n.Input.Rows()
	return max(1, groupRows(n.Input, n.Groups, in, 0.1)*float64(sets))
}
func (n *SortNode) Rows() float64 {
	r := n.Input.Rows()
	if c, ok := constInt(n.Count); ok {
		return min(r, float64(c))
	}
	return r
}
func (n *LimitNode) Rows() float64 {
	r := n.Input.Rows()
	if c, ok := constInt(n.Count); ok {
		return min(r, float64(c))
	}
	return r
}
func (n *DistinctNode) Rows() float64 {
	cols := n.Input.Columns()
	groups := make([]Expr, len(cols))
	for i, c := range cols {
		groups[i] = colRef(c)
	}
	return groupRows(n.Input, groups, n.Input.Rows(), 0.5)
}
func (n *SetOpNode) Rows() float64 {
	switch n.Kind {
	case Union:
		return n.Left.Rows() + n.Right.Rows()
	case Intersect:
		return min(n.Left.Rows(), n.Right.Rows())
	}
	return n.Left.Rows()
}
func (n *WindowNode) Rows() float64 { return n.Input.Rows() }
func (n *Max1RowNode) Rows() float64 {
	if n.PerKeyCount != nil {
		return n.Input.Rows()
	}
	return 1
}

// baseRows is the row count of n's input before filters: what bounds the
// number of distinct join keys.
func baseRows(n Node) float64 {
	switch x := n.(type) {
	case *ScanNode:
		return max(1, x.TableRows)
	case *FilterNode, *ProjectNode, *GatherNode, *SortNode, *LimitNode:
		return baseRows(n.Inputs()[0])
	}
	return n.Rows()
}

func constInt(e Expr) (int64, bool) {
	c, ok := e.(*Const)
	if !ok || !c.Value.IsValid() {
		return 0, false
	}
	v, ok := c.Value.(*scalar.Int64)
	if !ok {
		return 0, false
	}
	return v.Value, true
}

// ---- EXPLAIN

func explainTree(sb *strings.Builder, n Node, depth int) {
	sb.WriteString(strings.Repeat("  ", depth))
	sb.WriteString(explainLine(n))
	fmt.Fprintf(sb, " (rows=%s)\n", fmtRows(n.Rows()))
	for _, c := range n.Inputs() {
		explainTree(sb, c, depth+1)
	}
}

func fmtRows(r float64) string {
	switch {
	case r >= 1e9:
		return fmt.Sprintf("%.1fG", r/1e9)
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

func colNames(cols []Column) string {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = c.Name
	}
	return strings.Join(s, ", ")
}

func sortKeysString(keys []SortKey) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = k.Expr.String()
		if k.Desc {
			s[i] += " DESC"
		}
		if k.NullsFirst != k.Desc {
			if k.NullsFirst {
				s[i] += " NULLS FIRST"
			} else {
				s[i] += " NULLS LAST"
			}
		}
	}
	return strings.Join(s, ", ")
}

func explainLine(n Node) string {
	switch n := n.(type) {
	case *CTEScanNode:
		return "CTEScan " + n.Shared.Name
	case *ScanNode:
		s := fmt.Sprintf("Scan %s [%s]", n.Label, strings.Join(n.Names, ", "))
		if n.Stream != nil {
			s = "Stream" + s[len("Scan"):] + " from " + n.Stream.Start.String()
		}
		if n.Pushed != nil {
			s += " pushed: " + n.Pushed.String()
		}
		if n.Filter != nil {
			s += " filter: " + n.Filter.String()
		}
		if len(n.Ranges) > 0 {
			var cols []string
			for _, r := range n.Ranges {
				cols = append(cols, r.Column)
			}
			s += " join ranges: " + strings.Join(cols, ", ")
		}
		return s
	case *ValuesNode:
		return fmt.Sprintf("Values %d rows [%s]", len(n.Values), colNames(n.Cols))
	case *FilterNode:
		return "Filter " + n.Pred.String()
	case *ProjectNode:
		s := make([]string, len(n.Exprs))
		for i, e := range n.Exprs {
			s[i] = e.String()
			if c, ok := e.(*ColRef); !ok || c.Name != n.Cols[i].Name {
				s[i] += " AS " + n.Cols[i].Name
			}
		}
		return "Project " + strings.Join(s, ", ")
	case *JoinNode:
		algo := n.Algo
		if algo == "" {
			algo = "hash"
		}
		s := fmt.Sprintf("%sJoin %s", titleCase(algo), n.Kind)
		if len(n.LeftKeys) > 0 {
			k := make([]string, len(n.LeftKeys))
			for i := range n.LeftKeys {
				k[i] = n.LeftKeys[i].String() + " = " + n.RightKeys[i].String()
			}
			s += " keys: " + strings.Join(k, ", ")
			if n.Residual != nil {
				s += " residual: " + n.Residual.String()
			}
		} else if n.Cond != nil {
			s += " on: " + n.Cond.String()
		}
		if n.Buckets > 1 {
			s += fmt.Sprintf(" (bucket by bucket, %d buckets)", n.Buckets)
		}
		return s
	case *AggNode:
		algo := "Hash"
		switch {
		case n.Sorted:
			algo = "Sort"
		case n.Parallel:
			algo = "ParallelHash"
		}
		s := algo + "Aggregate"
		if len(n.Groups) > 0 {
			s += " group: " + exprList(n.Groups)
		}
		if n.Sets != nil {
			s += fmt.Sprintf(" sets: %v", n.Sets)
		}
		if len(n.Aggs) > 0 {
			a := make([]string, len(n.Aggs))
			for i, ag := range n.Aggs {
				a[i] = aggString(ag)
			}
			s += " aggs: " + strings.Join(a, ", ")
		}
		return s
	case *SortNode:
		if n.Count != nil {
			s := "TopN " + n.Count.String()
			if n.Offset != nil {
				s += " offset " + n.Offset.String()
			}
			return s + " by " + sortKeysString(n.Keys)
		}
		return "Sort " + sortKeysString(n.Keys)
	case *LimitNode:
		s := "Limit"
		if n.Count != nil {
			s += " " + n.Count.String()
		}
		if n.Offset != nil {
			s += " offset " + n.Offset.String()
		}
		return s
	case *DistinctNode:
		return "Distinct"
	case *SetOpNode:
		s := titleCase(n.Kind.String())
		if n.All {
			s += " all"
		}
		return s
	case *WindowNode:
		f := make([]string, len(n.Funcs))
		for i, w := range n.Funcs {
			f[i] = w.Fn + "(" + exprList(w.Args) + ") AS " + w.Col.Name
		}
		s := "Window " + strings.Join(f, ", ")
		if len(n.PartitionBy) > 0 {
			s += " partition: " + exprList(n.PartitionBy)
		}
		if len(n.OrderBy) > 0 {
			s += " order: " + sortKeysString(n.OrderBy)
		}
		return s
	case *GatherNode:
		return "Gather"
	case *UnnestNode:
		return n.String()
	case *Max1RowNode:
		if n.PerKeyCount != nil {
			return "Max1RowPerKey " + n.PerKeyCount.Name
		}
		return "Max1Row"
	}
	return fmt.Sprintf("%T", n)
}

func aggString(a AggCall) string {
	s := a.Fn + "("
	if a.Distinct {
		s += "DISTINCT "
	}
	if a.Fn == "count_star" {
		s = "count(*"
	} else {
		s += exprList(a.Args)
	}
	s += ")"
	if a.Filter != nil {
		s += " FILTER (WHERE " + a.Filter.String() + ")"
	}
	return s + " AS " + a.Col.Name
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func schemaOf(cols []Column) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type, Nullable: c.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}
