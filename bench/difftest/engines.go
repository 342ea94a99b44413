package difftest

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

// Flightd runs statements through flightd's engine in-process, over a
// warehouse directory: parser, planner, executor and table store without
// the Flight layer.
type Flightd struct {
	eng  *engine.Engine
	sess *engine.Session
}

// OpenFlightd opens an engine over dir. batchSize 0 is the engine default;
// opts switches planner rules off.
func OpenFlightd(ctx context.Context, mem memory.Allocator, dir string, batchSize int, opts plan.Options) (*Flightd, error) {
	eng, err := engine.Open(ctx, engine.Config{Mem: mem, Root: dir, BatchSize: batchSize, Plan: opts})
	if err != nil {
		return nil, err
	}
	return &Flightd{eng: eng, sess: eng.NewSession()}, nil
}

// Close closes the engine.
func (f *Flightd) Close() error { return f.eng.Close() }

// Exec runs statements that return no rows.
func (f *Flightd) Exec(ctx context.Context, text string) error {
	stmts, err := sql.Parse(text)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		st, err := f.sess.PrepareAST(ctx, s, nil)
		if err != nil {
			return err
		}
		if _, err := st.Exec(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// Query runs one query and returns its whole result.
func (f *Flightd) Query(ctx context.Context, text string) (*tpcds.Result, error) {
	res, _, err := f.QueryTyped(ctx, text)
	return res, err
}

// QueryTyped is Query that also returns the result's Arrow schema.
func (f *Flightd) QueryTyped(ctx context.Context, text string) (*tpcds.Result, *arrow.Schema, error) {
	st, err := f.sess.Prepare(ctx, text, nil)
	if err != nil {
		return nil, nil, err
	}
	if !st.IsQuery() {
		return nil, nil, fmt.Errorf("not a query: %s", text)
	}
	res, err := f.rows(ctx, st)
	return res, st.Schema(), err
}

func (f *Flightd) rows(ctx context.Context, st *engine.Statement) (*tpcds.Result, error) {
	op, err := st.Query(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer op.Close()
	if err := op.Open(ctx); err != nil {
		return nil, err
	}
	res := &tpcds.Result{}
	for _, fd := range st.Schema().Fields() {
		res.Columns = append(res.Columns, fd.Name)
		res.Types = append(res.Types, tpcds.ArrowTypeClass(fd.Type))
	}
	for {
		b, err := op.Next(ctx)
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		for i := 0; i < int(b.NumRows()); i++ {
			row := make([]tpcds.Value, b.NumCols())
			for c, col := range b.Columns() {
				if row[c], err = tpcds.FromArrow(col, i); err != nil {
					return nil, fmt.Errorf("column %s: %w", res.Columns[c], err)
				}
			}
			res.Rows = append(res.Rows, row)
		}
	}
}
