package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// PhysicalNode is an operator of a batch physical plan: it computes its
// logical node (the same columns, in the same order) with the algorithm its
// type names, over physical inputs. The batch physical planner
// (physical_plan.go) makes them from the optimized logical plan and Build
// turns them into exec operators; the streaming planner never sees them.
type PhysicalNode interface {
	// Logical is the logical node computed: its expressions are compiled
	// against the columns of its logical inputs, which its physical
	// inputs produce in the same order (CheckPhysical, export_test.go,
	// checks it on the random and TPC-DS queries).
	Logical() Node
	Children() []PhysicalNode
	Columns() []Column
	// Rows estimates the output row count.
	Rows() float64
	// estimated is the logical node whose rows Rows estimates.
	estimated() Node
}

// physical is what every physical node carries.
type physical struct {
	logical Node
	// estimate is the logical node whose row estimate this node has:
	// usually logical, the LimitNode for a top-N. Estimates are made only
	// when asked for (EXPLAIN, choice runtime_filter): each walks the
	// subtree.
	estimate Node
}

func physicalOf(n Node) physical { return physical{logical: n, estimate: n} }

func (p *physical) Logical() Node     { return p.logical }
func (p *physical) Columns() []Column { return p.logical.Columns() }
func (p *physical) Rows() float64     { return p.estimate.Rows() }
func (p *physical) estimated() Node   { return p.estimate }

// TableScan reads a table snapshot (its ScanNode).
type TableScan struct {
	physical
	Scan *ScanNode
	// Ranges are key ranges hash joins above publish at run time (choice
	// runtime_filter): files and row groups outside them are skipped, and
	// rows that are not build keys dropped (exec.KeySetExpr).
	Ranges []ScanRange
}

// KeyRangeFilter links build key i of a hash join (HashJoin.Ranges[i]) to
// the scan columns on its probe side that the key reads (ScanRange): more
// than one under a UNION.
type KeyRangeFilter struct {
	Type arrow.DataType
}

// ScanRange is a key range filter on a scan, with the table column it
// applies to.
type ScanRange struct {
	Filter *KeyRangeFilter
	Column string
}

// SpoolScan replays a shared CTE that each execution computes once into
// an exec.Spool; the references of one CTE share one Body.
type SpoolScan struct {
	physical
	Ref  *CTEScanNode
	Body PhysicalNode
}

// PlainOp is an operator with a single implementation, the one of its
// logical node: Values, Filter, Project, Limit, Sort, Distinct, SetOp,
// Window or Max1Row.
type PlainOp struct {
	physical
	Inputs []PhysicalNode
}

// HashJoin builds a hash table of its right input on the join keys and
// probes it with the left one.
type HashJoin struct {
	physical
	Join        *JoinNode
	Left, Right PhysicalNode
	// Ranges[i], when set, is the probe-side scan filter build key i
	// feeds (choice runtime_filter).
	Ranges []*KeyRangeFilter
	// KeepOrder: the left input's order, which a sort below made, may be
	// seen above (keepOrders), so the join probes serially, keeping it.
	// Otherwise it may probe on several cores, in no particular order.
	KeepOrder bool
}

// MergeJoin merges inputs both ordered on the join keys (each a chain of
// filters and projections over a primary-key scan whose key starts with
// the join keys, choice merge_join).
type MergeJoin struct {
	physical
	Join        *JoinNode
	Left, Right PhysicalNode
	// Buckets > 1: the inputs are scans of tables bucketed alike on the
	// keys, ordered within each bucket only; the join runs bucket by
	// bucket, the buckets in parallel.
	Buckets int
}

// NestedLoopJoin evaluates the join condition on every pair of rows: the
// condition has no equality between the two sides.
type NestedLoopJoin struct {
	physical
	Join        *JoinNode
	Left, Right PhysicalNode
}

// HashAggregate groups in a hash table.
type HashAggregate struct {
	physical
	Agg   *AggNode
	Input PhysicalNode
}

// SortAggregate aggregates an input clustered by the groups, one group
// after another (choice sort_aggregate): the groups are a prefix of the
// primary-key order of the scan below, and cover its split columns.
type SortAggregate struct {
	physical
	Agg   *AggNode
	Input PhysicalNode
}

// ParallelHashAggregate is a hash aggregation partitioned over the cores
// by the hash of the groups, each worker owning its partitions' groups
// (choice parallel_aggregate).
type ParallelHashAggregate struct {
	physical
	Agg   *AggNode
	Input PhysicalNode
}

// TopN keeps the first rows of a sort (LIMIT over ORDER BY, choice
// top_n) without sorting the rest. Its logical node is the SortNode; its
// estimate and Count and Offset are the LimitNode's.
type TopN struct {
	physical
	Sort  *SortNode
	Limit *LimitNode
	Input PhysicalNode
}

// Gather runs copies of its input pipeline (filters and projections over a
// scan) in parallel, each reading a stripe of the scan's splits, and
// merges their rows in no particular order (choice parallel_scan). Its
// logical node is its input's.
type Gather struct {
	physical
	Input PhysicalNode
}

func (n *TableScan) Children() []PhysicalNode             { return nil }
func (n *SpoolScan) Children() []PhysicalNode             { return nil }
func (n *PlainOp) Children() []PhysicalNode               { return n.Inputs }
func (n *HashJoin) Children() []PhysicalNode              { return []PhysicalNode{n.Left, n.Right} }
func (n *MergeJoin) Children() []PhysicalNode             { return []PhysicalNode{n.Left, n.Right} }
func (n *NestedLoopJoin) Children() []PhysicalNode        { return []PhysicalNode{n.Left, n.Right} }
func (n *HashAggregate) Children() []PhysicalNode         { return []PhysicalNode{n.Input} }
func (n *SortAggregate) Children() []PhysicalNode         { return []PhysicalNode{n.Input} }
func (n *ParallelHashAggregate) Children() []PhysicalNode { return []PhysicalNode{n.Input} }
func (n *TopN) Children() []PhysicalNode                  { return []PhysicalNode{n.Input} }
func (n *Gather) Children() []PhysicalNode                { return []PhysicalNode{n.Input} }
