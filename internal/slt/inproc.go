package slt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// InProc is a Harness that runs statements through the engine in-process,
// over a table store in a directory: sql + plan + exec + tablestore
// together, without the Flight layer.
type InProc struct {
	ctx  context.Context
	mem  memory.Allocator
	eng  *engine.Engine
	sess *engine.Session
	opts plan.Options
	dir  string
}

// NewInProc opens an engine over dir.
func NewInProc(ctx context.Context, dir string, mem memory.Allocator, opts plan.Options) (*InProc, error) {
	h := &InProc{ctx: ctx, mem: mem, opts: opts, dir: dir}
	return h, h.open(0)
}

func (h *InProc) open(batchSize int) error {
	eng, err := engine.Open(h.ctx, engine.Config{Mem: h.mem, Root: h.dir, BatchSize: batchSize, Plan: h.opts})
	if err != nil {
		return err
	}
	h.eng, h.sess = eng, eng.NewSession()
	return nil
}

// SetBatchSize sets the executor batch size (tests vary it) by reopening
// the engine over the same directory.
func (h *InProc) SetBatchSize(n int) error {
	if err := h.eng.Close(); err != nil {
		return err
	}
	return h.open(n)
}

// Close closes the engine.
func (h *InProc) Close() error { return h.eng.Close() }

// CurrentDatabase implements plan.Catalog.
func (h *InProc) CurrentDatabase() string { return h.sess.Database() }

// Table implements plan.Catalog (always the latest snapshot).
func (h *InProc) Table(ctx context.Context, id tablestore.Ident) (*tablestore.Table, int64, error) {
	t, err := h.eng.Store().Table(ctx, id)
	return t, 0, err
}

// Databases implements plan.Catalog.
func (h *InProc) Databases(ctx context.Context) ([]string, error) {
	return h.eng.Store().Databases(ctx)
}

// Tables implements plan.Catalog.
func (h *InProc) Tables(ctx context.Context, db string) ([]string, error) {
	return h.eng.Store().Tables(ctx, db)
}

// View implements plan.ViewCatalog.
func (h *InProc) View(ctx context.Context, id tablestore.Ident) (tablestore.ViewDef, error) {
	return h.eng.Store().View(ctx, id)
}

// Views implements plan.ViewCatalog.
func (h *InProc) Views(ctx context.Context, db string) ([]string, error) {
	return h.eng.Store().Views(ctx, db)
}

// Bind parses and binds one statement, for tests of the planner's own API.
func (h *InProc) Bind(text string) (plan.Statement, error) {
	ast, err := sql.ParseOne(text)
	if err != nil {
		return nil, err
	}
	return plan.Bind(h.ctx, ast, h, h.opts)
}

func (h *InProc) ec() *exec.Context {
	return exec.NewContext(h.mem)
}

// Exec implements Harness: each statement runs through the engine, queries
// drained.
func (h *InProc) Exec(text string) error {
	stmts, err := sql.Parse(text)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		st, err := h.sess.PrepareAST(h.ctx, s, nil)
		if err != nil {
			return err
		}
		if st.IsQuery() {
			if _, err := h.rows(st); err != nil {
				return err
			}
			continue
		}
		if _, err := st.Exec(h.ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// Query implements Harness.
func (h *InProc) Query(text string) (string, [][]string, error) {
	st, err := h.sess.Prepare(h.ctx, text, nil)
	if err != nil {
		return "", nil, err
	}
	if !st.IsQuery() {
		return "", nil, fmt.Errorf("not a query")
	}
	rows, err := h.rows(st)
	if err != nil {
		return "", nil, err
	}
	return ColTypes(st.Schema()), rows, nil
}

func (h *InProc) rows(st *engine.Statement) ([][]string, error) {
	op, err := st.Query(h.ctx, nil)
	if err != nil {
		return nil, err
	}
	return collect(h.ctx, op)
}

// Analyze runs q instrumented and returns the EXPLAIN ANALYZE report.
func (h *InProc) Analyze(q *plan.Query, params arrow.RecordBatch) (string, error) {
	op, report, err := q.BuildAnalyze(h.ec(), params)
	if err != nil {
		return "", err
	}
	if _, err := collect(h.ctx, op); err != nil {
		return "", err
	}
	return report(), nil
}

// QueryParams runs a bound query with one row of parameters.
func (h *InProc) QueryParams(q *plan.Query, params arrow.RecordBatch) ([][]string, error) {
	op, err := q.Build(h.ec(), params)
	if err != nil {
		return nil, err
	}
	return collect(h.ctx, op)
}

// collect drains an operator into formatted rows and closes it.
func collect(ctx context.Context, op exec.Operator) ([][]string, error) {
	defer op.Close()
	if err := op.Open(ctx); err != nil {
		return nil, err
	}
	var rows [][]string
	for {
		b, err := op.Next(ctx)
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
