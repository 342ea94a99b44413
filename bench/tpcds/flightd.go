package tpcds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds/gen"
)

// Flightd is a flightd server reached through the ADBC Flight SQL driver.
type Flightd struct {
	db   adbc.Database
	cnxn adbc.Connection
}

// OpenFlightd connects to the Flight SQL endpoint at uri
// (e.g. grpc://127.0.0.1:31337).
func OpenFlightd(ctx context.Context, mem memory.Allocator, uri string) (*Flightd, error) {
	drv := flightsql.NewDriver(mem)
	db, err := drv.NewDatabase(map[string]string{adbc.OptionKeyURI: uri})
	if err != nil {
		return nil, fmt.Errorf("flightd %s: %w", uri, err)
	}
	cnxn, err := db.Open(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("flightd %s: connect: %w", uri, err)
	}
	// gRPC dials lazily: ask for the server's name so that a wrong address
	// fails here, before any data is generated.
	info, err := cnxn.GetInfo(ctx, []adbc.InfoCode{adbc.InfoVendorName})
	if err == nil {
		for info.Next() {
		}
		err = info.Err()
		info.Release()
	}
	if err != nil {
		cnxn.Close()
		db.Close()
		return nil, fmt.Errorf("flightd %s: not reachable: %w", uri, err)
	}
	return &Flightd{db: db, cnxn: cnxn}, nil
}

// Close closes the connection.
func (f *Flightd) Close() error {
	return errors.Join(f.cnxn.Close(), f.db.Close())
}

// Load creates table t through ADBC bulk ingest (mode create) from the
// reader's batches. An existing table of that name is dropped first.
func (f *Flightd) Load(ctx context.Context, t *gen.Table, rd BatchReader, progress func(rows int64)) error {
	// A failing DROP (no such table, or no DROP support) is not fatal: the
	// create below fails with its own clear error if the table is still there.
	_ = f.Exec(ctx, "DROP TABLE IF EXISTS "+t.Name)
	stmt, err := f.cnxn.NewStatement()
	if err != nil {
		return fmt.Errorf("flightd: new statement: %w", err)
	}
	defer stmt.Close()
	if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, t.Name); err != nil {
		return fmt.Errorf("flightd: ingest %s: %w", t.Name, err)
	}
	if err := stmt.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeCreate); err != nil {
		return fmt.Errorf("flightd: ingest %s: %w", t.Name, err)
	}
	rr := &recordReader{ctx: ctx, src: rd, progress: progress}
	rr.refs.Store(1)
	defer rr.Release()
	if err := stmt.BindStream(ctx, rr); err != nil {
		return fmt.Errorf("flightd: ingest %s: bind: %w", t.Name, err)
	}
	if _, err := stmt.ExecuteUpdate(ctx); err != nil {
		return fmt.Errorf("flightd: ingest %s: %w", t.Name, err)
	}
	return rr.err
}

// Exec runs a statement that returns no rows (DDL, DML).
func (f *Flightd) Exec(ctx context.Context, query string) error {
	stmt, err := f.cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}

// Append appends a batch to table through ADBC bulk ingest (mode append),
// in one commit.
func (f *Flightd) Append(ctx context.Context, table string, b arrow.RecordBatch) error {
	stmt, err := f.cnxn.NewStatement()
	if err != nil {
		return fmt.Errorf("flightd: new statement: %w", err)
	}
	defer stmt.Close()
	if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, table); err != nil {
		return fmt.Errorf("flightd: ingest %s: %w", table, err)
	}
	if err := stmt.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeAppend); err != nil {
		return fmt.Errorf("flightd: ingest %s: %w", table, err)
	}
	// Through a reader of our own: for a bound batch the driver (v1.12)
	// makes a reader it never releases, which leaks the batch.
	rdr, err := array.NewRecordReader(b.Schema(), []arrow.RecordBatch{b})
	if err != nil {
		return fmt.Errorf("flightd: ingest %s: %w", table, err)
	}
	defer rdr.Release()
	if err := stmt.BindStream(ctx, rdr); err != nil {
		return fmt.Errorf("flightd: ingest %s: bind: %w", table, err)
	}
	if _, err := stmt.ExecuteUpdate(ctx); err != nil {
		return fmt.Errorf("flightd: ingest %s: %w", table, err)
	}
	return nil
}

// Query runs one query and returns its whole result.
func (f *Flightd) Query(ctx context.Context, query string) (*Result, error) {
	return f.run(ctx, func(st adbc.Statement) error { return st.SetSqlQuery(query) })
}

// Substrait is an Engine that runs each query as the Substrait plan
// flightd's producer makes for it (EXPLAIN (FORMAT SUBSTRAIT)), sent back
// as a Substrait command: SQL -> logical plan -> Substrait -> logical plan
// -> execution.
type Substrait struct{ *Flightd }

// Query implements Engine.
func (s Substrait) Query(ctx context.Context, query string) (*Result, error) {
	plan, err := s.plan(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("EXPLAIN (FORMAT SUBSTRAIT): %w", err)
	}
	return s.run(ctx, func(st adbc.Statement) error { return st.SetSubstraitPlan(plan) })
}

func (s Substrait) plan(ctx context.Context, query string) ([]byte, error) {
	stmt, err := s.cnxn.NewStatement()
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("EXPLAIN (FORMAT SUBSTRAIT) " + query); err != nil {
		return nil, err
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var plan []byte
	for rdr.Next() {
		b := rdr.RecordBatch()
		col, ok := b.Column(0).(*array.Binary)
		if !ok || b.NumRows() != 1 || plan != nil {
			return nil, fmt.Errorf("want one binary value, got %d rows of %s", b.NumRows(), b.Column(0).DataType())
		}
		plan = append([]byte{}, col.Value(0)...)
	}
	return plan, rdr.Err()
}

func (f *Flightd) run(ctx context.Context, set func(adbc.Statement) error) (*Result, error) {
	res := &Result{}
	cols, types, err := f.each(ctx, set, func(row []Value) error {
		res.Rows = append(res.Rows, slices.Clone(row))
		return nil
	})
	res.Columns, res.Types = cols, types
	return res, err
}

// QueryRows runs one query and passes its rows to fn one at a time, so a
// caller that keeps less than the rows (a digest, a file) needs no memory
// for the whole result. row is reused: fn must copy what it keeps.
func (f *Flightd) QueryRows(ctx context.Context, query string, fn func(row []Value) error) (columns []string, err error) {
	columns, _, err = f.each(ctx, func(st adbc.Statement) error { return st.SetSqlQuery(query) }, fn)
	return columns, err
}

func (f *Flightd) each(ctx context.Context, set func(adbc.Statement) error, fn func(row []Value) error) (columns, types []string, err error) {
	stmt, err := f.cnxn.NewStatement()
	if err != nil {
		return nil, nil, err
	}
	defer stmt.Close()
	if err := set(stmt); err != nil {
		return nil, nil, err
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer rdr.Release()
	for _, fd := range rdr.Schema().Fields() {
		columns = append(columns, fd.Name)
		types = append(types, ArrowTypeClass(fd.Type))
	}
	row := make([]Value, len(columns))
	for rdr.Next() {
		b := rdr.RecordBatch()
		for i := 0; i < int(b.NumRows()); i++ {
			for c, col := range b.Columns() {
				if row[c], err = FromArrow(col, i); err != nil {
					return nil, nil, fmt.Errorf("column %s: %w", columns[c], err)
				}
			}
			if err := fn(row); err != nil {
				return nil, nil, err
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
	}
	return columns, types, rdr.Err()
}

// ArrowTypeClass maps an Arrow type to its class (value.go).
func ArrowTypeClass(t arrow.DataType) string {
	switch {
	case arrow.IsInteger(t.ID()), arrow.IsFloating(t.ID()), arrow.IsDecimal(t.ID()):
		return TypeNumber
	}
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return TypeString
	case arrow.BOOL:
		return TypeBool
	case arrow.DATE32, arrow.DATE64:
		return TypeDate
	case arrow.TIMESTAMP:
		return TypeTimestamp
	case arrow.TIME32, arrow.TIME64:
		return TypeTime
	}
	return TypeOther
}

// FromArrow converts row i of an Arrow result column.
func FromArrow(col arrow.Array, i int) (Value, error) {
	if col.IsNull(i) {
		return Value{Kind: KNull}, nil
	}
	switch a := col.(type) {
	case *array.Boolean:
		return Value{Kind: KBool, Bool: a.Value(i)}, nil
	case *array.Int8:
		return intValue(int64(a.Value(i))), nil
	case *array.Int16:
		return intValue(int64(a.Value(i))), nil
	case *array.Int32:
		return intValue(int64(a.Value(i))), nil
	case *array.Int64:
		return intValue(a.Value(i)), nil
	case *array.Uint8:
		return intValue(int64(a.Value(i))), nil
	case *array.Uint16:
		return intValue(int64(a.Value(i))), nil
	case *array.Uint32:
		return intValue(int64(a.Value(i))), nil
	case *array.Uint64:
		return fromGo(a.Value(i))
	case *array.Float32:
		return Value{Kind: KFloat, F: float64(a.Value(i))}, nil
	case *array.Float64:
		return Value{Kind: KFloat, F: a.Value(i)}, nil
	case *array.Decimal128:
		return decValueBig(decimal128.Num(a.Value(i)).BigInt(), a.DataType().(*arrow.Decimal128Type).Scale), nil
	case *array.Decimal256:
		return decValueBig(decimal256.Num(a.Value(i)).BigInt(), a.DataType().(*arrow.Decimal256Type).Scale), nil
	case *array.String:
		return Value{Kind: KString, S: a.Value(i)}, nil
	case *array.LargeString:
		return Value{Kind: KString, S: a.Value(i)}, nil
	case *array.StringView:
		return Value{Kind: KString, S: a.Value(i)}, nil
	case *array.Date32:
		return Value{Kind: KDate, I: int64(a.Value(i))}, nil
	case *array.Date64:
		return Value{Kind: KDate, I: int64(a.Value(i)) / 86400000}, nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return timeValue(a.Value(i).ToTime(unit)), nil
	}
	return Value{}, fmt.Errorf("unsupported result type %s", col.DataType())
}

// recordReader adapts a BatchReader to array.RecordReader for BindStream,
// reporting progress as the driver pulls batches.
type recordReader struct {
	ctx      context.Context
	src      BatchReader
	progress func(int64)
	refs     atomic.Int64
	cur      arrow.RecordBatch
	rows     int64
	err      error
}

func (r *recordReader) Retain() { r.refs.Add(1) }

func (r *recordReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *recordReader) Schema() *arrow.Schema { return r.src.Schema() }

func (r *recordReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	b, err := r.src.Next(r.ctx)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			r.err = err
		}
		return false
	}
	r.cur = b
	r.rows += b.NumRows()
	if r.progress != nil {
		r.progress(r.rows)
	}
	return true
}

func (r *recordReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated name of RecordBatch, required by the interface.
func (r *recordReader) Record() arrow.RecordBatch { return r.cur }

func (r *recordReader) Err() error { return r.err }
