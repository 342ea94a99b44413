package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

var explainSchema = arrow.NewSchema([]arrow.Field{{Name: "plan", Type: arrow.BinaryTypes.String}}, nil)

// explain renders the plan of the target, one line per row. With ANALYZE
// the query runs to completion first (its rows are discarded; with several
// parameter rows, the first one's) and the plan shows actual rows, batches
// and time per operator and data skipping per scan, then the totals.
func (st *Statement) explain(ctx context.Context, ec *exec.Context, b *plan.Explain, params arrow.RecordBatch) (exec.Operator, error) {
	if b.Format == "SUBSTRAIT" {
		return explainSubstrait(ec, b.Target)
	}
	q := rowQuery(b.Target)
	if q == nil {
		return nil, fmt.Errorf("EXPLAIN of %T: %w", b.Target, ErrNotSupported)
	}
	text := q.Explain()
	if b.Analyze {
		var err error
		if text, err = analyze(ctx, ec, q, params); err != nil {
			return nil, err
		}
	} else if ex, ok := st.ast.(*sql.Explain); ok && b.Target == plan.Statement(q) && !q.Streaming() {
		line, err := st.endpointsLine(ctx, ex.Stmt)
		if err != nil {
			return nil, err
		}
		text += line
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	// The batch is built on open, so an operator closed unopened owns nothing.
	return exec.NewSource(ec, explainSchema, func(context.Context) (exec.BatchSource, error) {
		bldr := array.NewStringBuilder(ec.Mem)
		defer bldr.Release()
		bldr.AppendValues(lines, nil)
		col := bldr.NewArray()
		defer col.Release()
		return &oneBatch{b: array.NewRecordBatch(explainSchema, []arrow.Array{col}, int64(len(lines)))}, nil
	}), nil
}

func analyze(ctx context.Context, ec *exec.Context, q *plan.Query, params arrow.RecordBatch) (string, error) {
	rows, err := paramRows(ctx, ec, q, params, false)
	if err != nil {
		return "", err
	}
	defer func() {
		for _, r := range rows {
			if r != nil {
				r.Release()
			}
		}
	}()
	op, report, err := q.BuildAnalyze(ec, rows[0])
	if err != nil {
		return "", err
	}
	var n, batches int64
	start := time.Now()
	if err := drain(ctx, op, func(b arrow.RecordBatch) error {
		n += b.NumRows()
		batches++
		return nil
	}); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s\nactual: rows=%d batches=%d time=%s spilled_rows=%d",
		strings.TrimRight(report(), "\n"), n, batches, time.Since(start).Round(time.Microsecond), ec.SpilledRows()), nil
}

// oneBatch is a BatchSource over a single owned batch.
type oneBatch struct {
	b    arrow.RecordBatch
	sent bool
}

func (o *oneBatch) Next(context.Context) (arrow.RecordBatch, error) {
	if o.sent || o.b == nil {
		return nil, io.EOF
	}
	o.sent = true
	return o.b, nil
}

func (o *oneBatch) Close() error {
	if o.b != nil {
		o.b.Release()
		o.b = nil
	}
	return nil
}
