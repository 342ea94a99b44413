package slt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// InProc is a Harness over a table store in a directory, with a minimal
// executor (no transactions): enough to test sql + plan + exec + tablestore
// together without the engine.
type InProc struct {
	ctx       context.Context
	mem       memory.Allocator
	store     *tablestore.Store
	db        string
	opts      plan.Options
	batchSize int
}

// NewInProc opens a store in dir with a "default" database.
func NewInProc(ctx context.Context, dir string, mem memory.Allocator, opts plan.Options) (*InProc, error) {
	st, err := tablestore.Open(ctx, tablestore.NewLocalFS(), dir, tablestore.Options{Mem: mem})
	if err != nil {
		return nil, err
	}
	if err := st.CreateDatabase(ctx, "default", true); err != nil {
		_ = st.Close()
		return nil, err
	}
	return &InProc{ctx: ctx, mem: mem, store: st, db: "default", opts: opts, batchSize: exec.DefaultBatchSize}, nil
}

// SetBatchSize sets the executor batch size (tests vary it).
func (h *InProc) SetBatchSize(n int) { h.batchSize = n }

// Close closes the store.
func (h *InProc) Close() error { return h.store.Close() }

// CurrentDatabase implements plan.Catalog.
func (h *InProc) CurrentDatabase() string { return h.db }

// Table implements plan.Catalog (always the latest snapshot).
func (h *InProc) Table(ctx context.Context, id tablestore.Ident) (*tablestore.Table, int64, error) {
	t, err := h.store.Table(ctx, id)
	return t, 0, err
}

// Databases implements plan.Catalog.
func (h *InProc) Databases(ctx context.Context) ([]string, error) { return h.store.Databases(ctx) }

// Tables implements plan.Catalog.
func (h *InProc) Tables(ctx context.Context, db string) ([]string, error) {
	return h.store.Tables(ctx, db)
}

// Bind parses and binds one statement.
func (h *InProc) Bind(text string) (plan.Statement, error) {
	ast, err := sql.ParseOne(text)
	if err != nil {
		return nil, err
	}
	return plan.Bind(h.ctx, ast, h, h.opts)
}

func (h *InProc) ec() *exec.Context {
	ec := exec.NewContext(h.mem)
	ec.BatchSize = h.batchSize
	return ec
}

// Exec implements Harness.
func (h *InProc) Exec(text string) error {
	stmts, err := sql.Parse(text)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		b, err := plan.Bind(h.ctx, s, h, h.opts)
		if err != nil {
			return err
		}
		if err := h.run(b); err != nil {
			return err
		}
	}
	return nil
}

func (h *InProc) run(b plan.Statement) error {
	ctx := h.ctx
	switch b := b.(type) {
	case *plan.Query:
		_, err := h.collect(b, nil)
		return err
	case *plan.Explain:
		return nil
	case *plan.Insert:
		return h.write(b.Table, b.Source, tablestore.Insert, tablestore.WriteOptions{Overwrite: b.Overwrite, OverwritePartition: b.Partition})
	case *plan.Delete:
		if len(b.Table.PrimaryKey()) > 0 {
			return h.write(b.Table, b.Deleted, tablestore.Delete, tablestore.WriteOptions{})
		}
		return h.write(b.Table, b.Kept, tablestore.Insert, tablestore.WriteOptions{Overwrite: true})
	case *plan.Update:
		if len(b.Table.PrimaryKey()) > 0 {
			return h.write(b.Table, b.Updated, tablestore.UpdateAfter, tablestore.WriteOptions{})
		}
		return h.write(b.Table, b.All, tablestore.Insert, tablestore.WriteOptions{Overwrite: true})
	case *plan.CreateTable:
		t, err := h.store.CreateTable(ctx, b.Ident, b.Def, b.IfNotExists)
		if err != nil || b.As == nil {
			return err
		}
		return h.write(t, b.As, tablestore.Insert, tablestore.WriteOptions{})
	case *plan.DropTable:
		return h.store.DropTable(ctx, b.Ident, b.IfExists)
	case *plan.AlterTable:
		return h.store.AlterTable(ctx, b.Ident, b.Changes...)
	case *plan.CreateDatabase:
		return h.store.CreateDatabase(ctx, b.Name, b.IfNotExists)
	case *plan.DropDatabase:
		return h.store.DropDatabase(ctx, b.Name, b.IfExists, b.Cascade)
	case *plan.UseDatabase:
		dbs, err := h.store.Databases(ctx)
		if err != nil {
			return err
		}
		if !slices.Contains(dbs, b.Name) {
			return fmt.Errorf("database %s: %w", b.Name, tablestore.ErrDatabaseNotFound)
		}
		h.db = b.Name
		return nil
	case *plan.Transaction:
		return fmt.Errorf("transactions are not supported by the in-process harness")
	}
	return fmt.Errorf("cannot run %T", b)
}

func (h *InProc) write(t *tablestore.Table, q *plan.Query, kind tablestore.RowKind, wo tablestore.WriteOptions) error {
	op, err := q.Build(h.ec(), nil)
	if err != nil {
		return err
	}
	defer op.Close()
	if err := op.Open(h.ctx); err != nil {
		return err
	}
	w := t.NewWrite(wo)
	for {
		b, err := op.Next(h.ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.Abort()
			return err
		}
		if err := w.Write(h.ctx, b, kind); err != nil {
			w.Abort()
			return err
		}
	}
	_, err = w.Commit(h.ctx)
	return err
}

// Query implements Harness.
func (h *InProc) Query(text string) (string, [][]string, error) {
	b, err := h.Bind(text)
	if err != nil {
		return "", nil, err
	}
	switch b := b.(type) {
	case *plan.Query:
		rows, err := h.collect(b, nil)
		if err != nil {
			return "", nil, err
		}
		return ColTypes(b.Schema()), rows, nil
	case *plan.Explain:
		q, ok := b.Target.(*plan.Query)
		if !ok {
			return "", nil, fmt.Errorf("EXPLAIN of %T is not supported here", b.Target)
		}
		text := q.Explain()
		if b.Analyze {
			if text, err = h.Analyze(q, nil); err != nil {
				return "", nil, err
			}
		}
		var rows [][]string
		for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			rows = append(rows, []string{l})
		}
		return "T", rows, nil
	}
	return "", nil, fmt.Errorf("not a query")
}

// Analyze runs q instrumented and returns the EXPLAIN ANALYZE report.
func (h *InProc) Analyze(q *plan.Query, params arrow.RecordBatch) (string, error) {
	op, report, err := q.BuildAnalyze(h.ec(), params)
	if err != nil {
		return "", err
	}
	defer op.Close()
	if err := op.Open(h.ctx); err != nil {
		return "", err
	}
	for {
		_, err := op.Next(h.ctx)
		if errors.Is(err, io.EOF) {
			return report(), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// QueryParams runs a prepared query with one row of parameters.
func (h *InProc) QueryParams(q *plan.Query, params arrow.RecordBatch) ([][]string, error) {
	return h.collect(q, params)
}

func (h *InProc) collect(q *plan.Query, params arrow.RecordBatch) ([][]string, error) {
	op, err := q.Build(h.ec(), params)
	if err != nil {
		return nil, err
	}
	defer op.Close()
	if err := op.Open(h.ctx); err != nil {
		return nil, err
	}
	var rows [][]string
	for {
		b, err := op.Next(h.ctx)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		for r := 0; r < int(b.NumRows()); r++ {
			row := make([]string, b.NumCols())
			for c := range row {
				row[c] = FormatValue(b.Column(c), r)
			}
			rows = append(rows, row)
		}
	}
}

// ColTypes returns the sqllogictest type letters of a schema.
func ColTypes(s *arrow.Schema) string {
	var sb strings.Builder
	for _, f := range s.Fields() {
		switch f.Type.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
			sb.WriteByte('I')
		case arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128:
			sb.WriteByte('R')
		case arrow.BOOL:
			sb.WriteByte('B')
		default:
			sb.WriteByte('T')
		}
	}
	return sb.String()
}

// FormatValue renders one value by the sqllogictest rules.
func FormatValue(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	switch a := a.(type) {
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'f', 3, 64)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'f', 3, 64)
	case *array.Decimal128:
		typ := a.DataType().(*arrow.Decimal128Type)
		return decimalString(a.Value(i), typ.Scale)
	case *array.String:
		if a.Value(i) == "" {
			return "(empty)"
		}
		return a.Value(i)
	case *array.LargeString:
		if a.Value(i) == "" {
			return "(empty)"
		}
		return a.Value(i)
	case *array.Date32:
		return a.Value(i).FormattedString()
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).Format("2006-01-02 15:04:05.999999999")
	}
	return a.ValueStr(i)
}

func decimalString(v decimal128.Num, scale int32) string {
	bi := v.BigInt()
	neg := bi.Sign() < 0
	s := new(big.Int).Abs(bi).String()
	if scale > 0 {
		for len(s) <= int(scale) {
			s = "0" + s
		}
		s = s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	}
	if neg {
		s = "-" + s
	}
	return s
}
