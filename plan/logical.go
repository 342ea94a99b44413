package plan

import (
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
	Tag    string
	Label  string   // db.table [AS alias]
	Cols   []Column // output columns
	Names  []string // the table column behind each output column
	Filter Expr
	Pushed tablestore.Predicate
	// ParamPushed are the conditions of Filter on parameters that are
	// pushed, with the parameters' values, at each execution.
	ParamPushed []Expr
	TableRows   float64
	// Stream, when set, reads the table's changes instead of a snapshot;
	// Names then include tablestore.RowKindColumn.
	Stream *tablestore.StreamSpec
	// Stats are the snapshot's column statistics for estimates (nil when
	// unavailable).
	Stats *tablestore.Statistics
	// Read is what the scan reads of the snapshot: its rows, or those of
	// t$ro or t$audit_log (plan/systables.go).
	Read ScanRead
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

// JoinNode joins two inputs. Cond is the full condition (nil = cross).
// Rule join_keys splits it into equality keys and a residual, which both
// physical planners read; which algorithm joins is theirs to choose.
type JoinNode struct {
	Kind                JoinKind
	Left, Right         Node
	Cond                Expr
	LeftKeys, RightKeys []Expr
	Residual            Expr
	// Temporal: a processing-time temporal join (`JOIN d FOR SYSTEM_TIME
	// AS OF l.pt`, plan/temporal.go): each left row meets the row of d
	// (Right, a scan of a primary-key table) of its key as of when it is
	// processed. In batch that is d's latest snapshot; a stream looks each
	// row up when it arrives and never retracts it when d changes. Join
	// ordering leaves it in place.
	Temporal bool
	// AsOf (set: an event-time temporal join, plan/temporal_rowtime.go) is
	// the left side's event time, VersionTime the right table's WATERMARK
	// column: each left row meets the version of its key valid at AsOf.
	AsOf, VersionTime Expr
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
}

// SortKey is one ORDER BY key.
type SortKey struct {
	Expr       Expr
	Desc       bool
	NullsFirst bool
}

// SortNode sorts.
type SortNode struct {
	Input Node
	Keys  []SortKey
}

// LimitNode is LIMIT/OFFSET without ordering.
type LimitNode struct {
	Input  Node
	Offset Expr
	Count  Expr
}

// DistinctNode removes duplicate rows. A Partial one removes them as far
// as it pays and may leave some: the planner puts it below a join whose
// rows count as a set above (rules_setop.go), where what it leaves the set
// operation or the distinct above removes.
type DistinctNode struct {
	Input   Node
	Partial bool
}

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

func (n *ScanNode) Columns() []Column     { return n.Cols }
func (n *ValuesNode) Columns() []Column   { return n.Cols }
func (n *FilterNode) Columns() []Column   { return n.Input.Columns() }
func (n *ProjectNode) Columns() []Column  { return n.Cols }
func (n *SortNode) Columns() []Column     { return n.Input.Columns() }
func (n *LimitNode) Columns() []Column    { return n.Input.Columns() }
func (n *DistinctNode) Columns() []Column { return n.Input.Columns() }
func (n *SetOpNode) Columns() []Column    { return n.Cols }
func (n *Max1RowNode) Columns() []Column  { return n.Input.Columns() }
func (n *JoinNode) Columns() []Column     { return appendJoinCols(nil, n, false) }

// appendJoinCols appends n's columns to dst (made nullable if null) in one
// walk down a tree of joins and filters: concatenating the inputs' columns
// at each level cost the square of the depth, and join ordering and
// estimates ask for a join's columns at every level.
func appendJoinCols(dst []Column, n Node, null bool) []Column {
	switch x := n.(type) {
	case *FilterNode:
		return appendJoinCols(dst, x.Input, null)
	case *JoinNode:
		if semiLike(x.Kind) {
			return appendJoinCols(dst, x.Left, null)
		}
		dst = appendJoinCols(dst, x.Left, null || x.Kind == RightJoin || x.Kind == FullJoin)
		return appendJoinCols(dst, x.Right, null || x.Kind == LeftJoin || x.Kind == FullJoin)
	}
	if !null {
		return append(dst, n.Columns()...)
	}
	for _, c := range n.Columns() {
		c.Nullable = true
		dst = append(dst, c)
	}
	return dst
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
func (n *ValuesNode) Rows() float64 { return float64(len(n.Values)) }
func (n *FilterNode) Rows() float64 { return n.rowsFrom(n.Input.Rows()) }

// rowsFrom is Rows given the input's estimated rows in.
func (n *FilterNode) rowsFrom(in float64) float64 { return max(1, in*selectivity(n.Pred, n.Input)) }

func (n *ProjectNode) Rows() float64 { return n.Input.Rows() }
func (n *JoinNode) Rows() float64    { return n.rowsFrom(n.Left.Rows(), n.Right.Rows()) }

// rowsFrom is Rows given the inputs' estimated rows l and r.
func (n *JoinNode) rowsFrom(l, r float64) float64 {
	switch {
	case semiLike(n.Kind):
		return max(1, l*semiSel(n, l, r))
	case n.Cond == nil:
		return l * r
	}
	est := joinRows(n, l, r, nil)
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
func (n *SortNode) Rows() float64 { return n.Input.Rows() }
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
	case *FilterNode, *ProjectNode, *SortNode, *LimitNode:
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

func schemaOf(cols []Column) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type, Nullable: c.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}

func setInput(n Node, i int, in Node) {
	switch x := n.(type) {
	case *FilterNode:
		x.Input = in
	case *ProjectNode:
		x.Input = in
	case *AggNode:
		x.Input = in
	case *SortNode:
		x.Input = in
	case *LimitNode:
		x.Input = in
	case *DistinctNode:
		x.Input = in
	case *WindowNode:
		x.Input = in
	case *UnnestNode:
		x.Input = in
	case *Max1RowNode:
		x.Input = in
	case *JoinNode:
		if i == 0 {
			x.Left = in
		} else {
			x.Right = in
		}
	case *SetOpNode:
		if i == 0 {
			x.Left = in
		} else {
			x.Right = in
		}
	}
}
