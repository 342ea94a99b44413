package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// Sentinel errors.
var (
	// ErrNotImplemented wraps valid SQL that flightd does not run yet.
	ErrNotImplemented = errors.New("not implemented")
	// ErrParams reports missing or mistyped parameter values at Build.
	ErrParams = errors.New("bad parameters")
	// errInternal marks broken planner invariants (a bug, not user error).
	errInternal = errors.New("internal planner error")
)

// Catalog is what binding needs from the session: tables at the snapshots
// of the current transaction.
type Catalog interface {
	CurrentDatabase() string
	// Table returns a table and the snapshot to read (0 = latest).
	Table(ctx context.Context, id tablestore.Ident) (t *tablestore.Table, snapshotID int64, err error)
	Databases(ctx context.Context) ([]string, error)
	Tables(ctx context.Context, db string) ([]string, error)
}

// Options tune binding; DisabledRules switches optimizer rules off by name
// (see Rules).
type Options struct {
	DisabledRules []string
	// StreamAll reads every table without a hint as a stream from its
	// latest snapshot in full (scan.mode latest-full): the continuous
	// refresh of a materialized table keeps its query's answer on the
	// sources' current content.
	StreamAll bool
	// StreamHeartbeat, if not zero, is how often StreamAll's streams
	// report progress while idle (DefaultHeartbeat otherwise).
	StreamHeartbeat time.Duration
	// FreshnessThreshold: a materialized table whose FRESHNESS is below it
	// runs CONTINUOUS unless REFRESH_MODE says otherwise (0:
	// DefaultFreshnessThreshold).
	FreshnessThreshold time.Duration
	// ProcTime, when set, is the clock of processing-time windows (window
	// TVFs over a PROCTIME() attribute) in streaming queries and jobs;
	// nil: the wall clock. Tests set it to drive windows closed.
	ProcTime func() time.Time
	// MinParallelGroups: an aggregation estimated at no more groups runs
	// serially, not in parallel (0: DefaultMinParallelGroups; negative:
	// every grouped one may run in parallel, however few its groups or
	// little it reduces its rows).
	MinParallelGroups float64
	// Trace, when set, receives each plan as bound, then the name of each
	// logical rule applied followed by the plan it left (or "no change"):
	// a debugging aid.
	Trace io.Writer
}

// DefaultMinParallelGroups is Options.MinParallelGroups by default. Every
// worker of a parallel aggregation reads every input row to pick out its
// own groups' rows, which for a few groups costs more CPU than it spreads:
// serial, TPC-DS q70 (12 stores), q62 and q43 took 20-25% less CPU at the
// same or a shorter wall time.
const DefaultMinParallelGroups = 1000

// Statement is a bound statement: one of *Query, *Insert, *Delete, *Update,
// *CreateTable, *DropTable, *AlterTable, *CreateDatabase, *DropDatabase,
// *Merge, *UseDatabase, *Explain, *Transaction, *CreateView, *DropView, *CallProcedure.
type Statement interface{ boundStmt() }

// Query is a bound, optimized query. It is immutable: Build may be called
// any number of times, concurrently (prepared statements).
type Query struct {
	root Node // the logical plan
	// batch is the batch physical plan (nil for a streaming query).
	batch  PhysicalNode
	schema *arrow.Schema
	params *arrow.Schema
	// streaming: the query reads a change stream and does not end; stream
	// is its physical plan (root is the logical one).
	streaming bool
	stream    *streamPlan
	// batchParams: Build takes several parameter rows at once (a key
	// lookup of all their keys, batchesParams).
	batchParams bool
}

// Schema is the result schema.
func (q *Query) Schema() *arrow.Schema { return q.schema }

// Logical is the optimized logical plan (for producers of other plan
// formats, such as Substrait).
func (q *Query) Logical() Node { return q.root }

// Params is the schema of the parameters ($1 is field 0), nil if none.
func (q *Query) Params() *arrow.Schema { return q.params }

// ConvertParams returns params (owned by the caller) with every column of
// its parameter's type, converted as Build's plans would convert each
// value, so that a value that does not convert is refused before any row
// is read (a parameter compared in a filter is otherwise converted only
// when a batch reaches it, which an empty table never does) and no plan
// converts it again.
func (q *Query) ConvertParams(ctx context.Context, ec *exec.Context, params arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(q.params.Fields()))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, f := range q.params.Fields() {
		col := params.Column(i)
		if arrow.TypeEqual(col.DataType(), f.Type) {
			col.Retain()
			cols[i] = col
			continue
		}
		if bin, ok := col.(*array.Binary); ok && vectorized.IsString(f.Type) {
			// A cast shows such bytes as U+FFFD: bound, they would be
			// stored changed (bulk ingest refuses them too).
			for r := range bin.Len() {
				if bin.IsValid(r) && !utf8.Valid(bin.Value(r)) {
					return nil, fmt.Errorf("%w: parameter $%d, row %d: a BINARY value of %d bytes that is not UTF-8, where the statement takes %s", ErrParams, i+1, r+1, len(bin.Value(r)), SQLTypeName(f.Type))
				}
			}
		}
		cast, err := exec.NewCast(exec.NewColumn(i, col.DataType(), f.Name), f.Type)
		if err != nil {
			return nil, fmt.Errorf("%w: parameter $%d: %v", ErrParams, i+1, err)
		}
		if cols[i], err = cast.Eval(ctx, ec, params); err != nil {
			return nil, fmt.Errorf("%w: %sparameter $%d does not convert to %s: %v", ErrParams, badRow(ctx, ec, params, cast, col, false), i+1, SQLTypeName(f.Type), err)
		}
		if err := checkExact(ctx, ec, col, cols[i]); err != nil {
			return nil, fmt.Errorf("%w: %sparameter $%d is %s where the statement takes %s, and %v (CAST(? AS %s) in the statement takes it as it is)",
				ErrParams, badRow(ctx, ec, params, cast, col, true), i+1, SQLTypeName(col.DataType()), SQLTypeName(f.Type), err, SQLTypeName(col.DataType()))
		}
	}
	return array.NewRecordBatch(q.params, cols, params.NumRows()), nil
}

// badRow names the first parameter row (1-based) of several whose
// conversion by cast fails (exact: or is not exact), as "parameter row N
// of M: "; "" for one row, or when no single row fails.
func badRow(ctx context.Context, ec *exec.Context, params arrow.RecordBatch, cast exec.Expr, col arrow.Array, exact bool) string {
	n := params.NumRows()
	if n <= 1 {
		return ""
	}
	for r := range n {
		one := params.NewSlice(r, r+1)
		conv, err := cast.Eval(ctx, ec, one)
		if err == nil && exact {
			orig := array.NewSlice(col, r, r+1)
			err = checkExact(ctx, ec, orig, conv)
			orig.Release()
		}
		if conv != nil {
			conv.Release()
		}
		one.Release()
		if err != nil {
			return fmt.Sprintf("parameter row %d of %d: ", r+1, n)
		}
	}
	return ""
}

// checkExact reports an error when converting a number or a time (orig)
// to the parameter's type (conv) lost information: 5.5 bound where the
// statement compares an integer column would otherwise find 5, and a
// DECIMAL(29, 28) multiplied by 2 would be taken as an integer. The
// conversion is exact when converting back gives every value again.
func checkExact(ctx context.Context, ec *exec.Context, orig, conv arrow.Array) error {
	if !exactlyComparable(orig.DataType()) || !exactlyComparable(conv.DataType()) {
		return nil // strings parse or fail; the rest converts without loss or not at all
	}
	if vectorized.IsFloat(orig.DataType()) && vectorized.IsFloat(conv.DataType()) {
		return nil // a float rounds to the nearest of its own: 0.1 bound to a REAL column is its 0.1
	}
	one := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: conv.DataType(), Nullable: true}}, nil), []arrow.Array{conv}, int64(conv.Len()))
	defer one.Release()
	cast, err := exec.NewCast(exec.NewColumn(0, conv.DataType(), "v"), orig.DataType())
	if err != nil {
		return nil
	}
	back, err := cast.Eval(ctx, ec, one)
	if err != nil {
		return fmt.Errorf("its values do not convert back: %v", err)
	}
	defer back.Release()
	if array.Equal(orig, back) {
		return nil
	}
	for r := range orig.Len() {
		if !array.SliceEqual(orig, int64(r), int64(r+1), back, int64(r), int64(r+1)) {
			return fmt.Errorf("row %d's %s would become %s", r+1, orig.ValueStr(r), conv.ValueStr(r))
		}
	}
	return nil
}

func exactlyComparable(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.DECIMAL256,
		arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64:
		return true
	}
	return false
}

// BatchesParams reports whether Build takes several parameter rows at once,
// giving the results of the rows concatenated in row order (one batched
// lookup of all their keys). Otherwise each row is an execution of its own.
func (q *Query) BatchesParams() bool { return q.batchParams }

// Build creates the operator tree for one execution. params holds one row
// with a column per parameter (nil when there are none), or several when
// BatchesParams.
func (q *Query) Build(ec *exec.Context, params arrow.RecordBatch) (exec.Operator, error) {
	if err := q.checkParams(params); err != nil {
		return nil, err
	}
	if q.stream != nil {
		return q.stream.build(ec, params)
	}
	b := &builder{ec: ec, params: params, bucket: -1, spools: newSpoolSet(), ranges: &rangeSet{}}
	return b.build(q.batch)
}

func (q *Query) checkParams(params arrow.RecordBatch) error {
	if q.params != nil {
		if params == nil {
			return fmt.Errorf("%w: the statement has %d parameters and none were given", ErrParams, len(q.params.Fields()))
		}
		if int(params.NumCols()) != len(q.params.Fields()) {
			return fmt.Errorf("%w: the statement has %d parameters, got %d values", ErrParams, len(q.params.Fields()), params.NumCols())
		}
		if params.NumRows() != 1 && !(q.batchParams && params.NumRows() > 1) {
			return fmt.Errorf("%w: parameters must be one row, got %d", ErrParams, params.NumRows())
		}
	}
	return nil
}

// BuildAnalyze is Build with every operator instrumented: after the
// returned operator has been drained, report renders the plan with actual
// rows, batches and times per operator and the data skipping of each scan
// (EXPLAIN ANALYZE).
func (q *Query) BuildAnalyze(ec *exec.Context, params arrow.RecordBatch) (op exec.Operator, report func() string, err error) {
	if err := q.checkParams(params); err != nil {
		return nil, nil, err
	}
	if q.batch == nil {
		return nil, nil, fmt.Errorf("%w: EXPLAIN ANALYZE of a streaming query would never end", ErrNotImplemented)
	}
	a := &analyzeState{ops: map[PhysicalNode][]*exec.Instrumented{}, scans: map[*TableScan][]*tablestore.Scan{}}
	b := &builder{ec: ec, params: params, bucket: -1, analyze: a, spools: newSpoolSet(), ranges: &rangeSet{}}
	op, err = b.build(q.batch)
	if err != nil {
		return nil, nil, err
	}
	return op, func() string { return a.report(q.batch) }, nil
}

// Explain renders the physical plan with pushdowns, algorithms and estimated
// row counts.
func (q *Query) Explain() string {
	var sb strings.Builder
	if q.stream != nil {
		q.stream.explain(&sb)
		return sb.String()
	}
	explainPhysical(&sb, q.batch, 0)
	explainSpools(&sb, q.batch, explainPhysical)
	return sb.String()
}

// Insert writes Source into Table. Source's schema equals the table schema.
// An overwrite replaces Partition (a static spec, nil: all), and with
// DynamicOverwrite only the partitions Source writes within it
// (tablestore.WriteOptions).
type Insert struct {
	Table            *tablestore.Table
	Overwrite        bool
	Partition        map[string]string
	DynamicOverwrite bool
	Source           *Query
}

// Delete removes the rows matching a predicate. Deleted yields the full
// matching rows, Kept the full rows that stay.
type Delete struct {
	Table   *tablestore.Table
	Deleted *Query
	Kept    *Query
}

// Update changes matching rows. Updated yields the new full rows of the
// matched rows; All every row after the update.
type Update struct {
	Table   *tablestore.Table
	Updated *Query
	All     *Query
}

// CreateTable creates a table (from a query for CTAS), or with OrReplace
// puts a new one in place of the table of that name.
type CreateTable struct {
	Ident       tablestore.Ident
	Def         tablestore.TableDef
	IfNotExists bool
	OrReplace   bool
	As          *Query
}

// DropTable drops a table.
type DropTable struct {
	Ident    tablestore.Ident
	IfExists bool
}

// AlterTable changes a table's schema or options.
type AlterTable struct {
	Ident   tablestore.Ident
	Changes []tablestore.SchemaChange
}

// CreateDatabase creates a database, with Options when it creates it.
type CreateDatabase struct {
	Name        string
	IfNotExists bool
	Options     map[string]string
}

// AlterDatabase sets options of a database.
type AlterDatabase struct {
	Name    string
	Options map[string]string
}

// DropDatabase drops a database.
type DropDatabase struct {
	Name     string
	IfExists bool
	Cascade  bool
}

// UseDatabase switches the session's current database.
type UseDatabase struct{ Name string }

// Explain wraps a statement for EXPLAIN [ANALYZE].
type Explain struct {
	Target  Statement
	Analyze bool
	Format  string // "" or SUBSTRAIT (sql.Explain.Format)
}

// TxnKind is the kind of a transaction statement.
type TxnKind int

// Transaction statement kinds.
const (
	Begin TxnKind = iota
	Commit
	Rollback
)

// Transaction is BEGIN, COMMIT or ROLLBACK.
type Transaction struct{ Kind TxnKind }

func (*Query) boundStmt()          {}
func (*Insert) boundStmt()         {}
func (*Delete) boundStmt()         {}
func (*Update) boundStmt()         {}
func (*CreateTable) boundStmt()    {}
func (*DropTable) boundStmt()      {}
func (*AlterTable) boundStmt()     {}
func (*CreateDatabase) boundStmt() {}
func (*AlterDatabase) boundStmt()  {}
func (*DropDatabase) boundStmt()   {}
func (*UseDatabase) boundStmt()    {}
func (*Explain) boundStmt()        {}
func (*Transaction) boundStmt()    {}
