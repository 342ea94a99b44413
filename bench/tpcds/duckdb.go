package tpcds

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightd/flightd/bench/tpcds/gen"
)

// DuckDB is the reference engine: one DuckDB database and one connection
// (settings such as the NULL order are per connection).
type DuckDB struct {
	connector *duckdb.Connector
	db        *sql.DB
	conn      *sql.Conn
}

// OpenDuckDB opens a DuckDB database at path ("" for in-memory) with
// threads worker threads (0 for DuckDB's default) and flightd's NULL order,
// Flink's.
func OpenDuckDB(ctx context.Context, path string, threads int) (*DuckDB, error) {
	connector, err := duckdb.NewConnector(path, nil)
	if err != nil {
		return nil, fmt.Errorf("duckdb: open %q: %w", path, err)
	}
	d := &DuckDB{connector: connector, db: sql.OpenDB(connector)}
	d.conn, err = d.db.Conn(ctx)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("duckdb: connect: %w", err)
	}
	settings := []string{nullOrder, flinkAvgMacro}
	if threads > 0 {
		settings = append(settings, fmt.Sprintf("SET threads = %d", threads))
	}
	for _, s := range settings {
		if _, err := d.conn.ExecContext(ctx, s); err != nil {
			d.Close()
			return nil, fmt.Errorf("duckdb: %s: %w", s, err)
		}
	}
	return d, nil
}

// nullOrder sorts NULLs as Flink and flightd do, as the smallest value
// (first ascending, last descending); DuckDB sets it per connection.
const nullOrder = "SET default_null_order = 'nulls_first_on_asc_last_on_desc'"

// flinkAvgMacro is AVG as Flink and flightd compute it, for the queries
// DuckDB runs (flinkAvg): over an integer type the mean truncated toward
// zero (DuckDB: a DOUBLE mean). The result stays a DOUBLE; answers compare
// by value. The argument's type is min's (an aggregate: the macro's
// argument is a column of an aggregate query).
const flinkAvgMacro = `CREATE OR REPLACE TEMP MACRO flink_avg(x) AS
	CASE WHEN typeof(min(x)) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT')
	THEN trunc(avg(x)) ELSE avg(x) END`

var (
	// avgCall matches the start of an AVG call, overNext a window's OVER
	// after its closing parenthesis.
	avgCall  = regexp.MustCompile(`(?i)\bavg\s*\(`)
	overNext = regexp.MustCompile(`(?i)^\s*over\b`)
)

// flinkAvg is query with every AVG call that flinkAvgMacro can stand for
// calling it instead: not AVG(DISTINCT ...) and not a window function
// (TPC-DS's window AVGs are over decimal sums, as are DuckDB's and
// flightd's results alike).
func flinkAvg(query string) string {
	var b strings.Builder
	rest := query
	for {
		loc := avgCall.FindStringIndex(rest)
		if loc == nil {
			return b.String() + rest
		}
		end, err := ClosingParen(rest, loc[1]-1)
		arg := strings.TrimSpace(rest[loc[1]:max(end, loc[1])])
		over := err == nil && overNext.MatchString(rest[end+1:])
		b.WriteString(rest[:loc[0]])
		if err != nil || over || len(arg) >= 8 && strings.EqualFold(arg[:8], "DISTINCT") {
			b.WriteString(rest[loc[0]:loc[1]])
		} else {
			b.WriteString("flink_avg(")
		}
		rest = rest[loc[1]:]
	}
}

// ClosingParen is the index of the parenthesis closing the one at open,
// outside quotes.
func ClosingParen(s string, open int) (int, error) {
	depth := 0
	var quote byte
	for i := open; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '`' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("unbalanced parentheses after %q", s[open:min(len(s), open+40)])
}

// Conn opens another connection to the same database, with the same NULL
// order and flink_avg; closing it leaves the database open.
func (d *DuckDB) Conn(ctx context.Context) (*DuckDB, error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("duckdb: connect: %w", err)
	}
	for _, s := range []string{nullOrder, flinkAvgMacro} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			conn.Close()
			return nil, fmt.Errorf("duckdb: %s: %w", s, err)
		}
	}
	return &DuckDB{db: d.db, conn: conn}, nil
}

// Close closes the connection, and the database unless Conn opened it.
func (d *DuckDB) Close() error {
	var errs []error
	if d.conn != nil {
		errs = append(errs, d.conn.Close())
	}
	if d.connector != nil {
		errs = append(errs, d.db.Close(), d.connector.Close())
	}
	return errors.Join(errs...)
}

// CreateTableSQL renders the DDL of a schema table.
func CreateTableSQL(t *gen.Table) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "CREATE TABLE %s (", t.Name)
	for i, c := range t.Columns {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%s %s", c.Name, c.SQLType)
		if c.NotNull {
			sb.WriteString(" NOT NULL")
		}
	}
	sb.WriteString(")")
	return sb.String()
}

// Load creates table t and appends every batch of the reader to it.
// progress, if not nil, is called with the rows loaded so far.
func (d *DuckDB) Load(ctx context.Context, t *gen.Table, rd BatchReader, progress func(rows int64)) error {
	if _, err := d.conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+t.Name); err != nil {
		return fmt.Errorf("duckdb: drop %s: %w", t.Name, err)
	}
	if _, err := d.conn.ExecContext(ctx, CreateTableSQL(t)); err != nil {
		return fmt.Errorf("duckdb: create %s: %w", t.Name, err)
	}
	return d.conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", t.Name)
		if err != nil {
			return fmt.Errorf("duckdb: appender for %s: %w", t.Name, err)
		}
		var rows int64
		err = appendAll(ctx, app, rd, func(n int64) {
			rows += n
			if progress != nil {
				progress(rows)
			}
		})
		if cerr := app.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("duckdb: flush %s: %w", t.Name, cerr)
		}
		return err
	})
}

// BatchReader is the iterator the loaders consume (gen.Reader implements
// it): Next returns io.EOF at the end and the caller owns each batch.
type BatchReader interface {
	Schema() *arrow.Schema
	Next(ctx context.Context) (arrow.RecordBatch, error)
}

func appendAll(ctx context.Context, app *duckdb.Appender, rd BatchReader, done func(int64)) error {
	row := make([]driver.Value, rd.Schema().NumFields())
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = appendBatch(app, b, row)
		n := b.NumRows()
		b.Release()
		if err != nil {
			return err
		}
		done(n)
	}
}

func appendBatch(app *duckdb.Appender, b arrow.RecordBatch, row []driver.Value) error {
	cols := b.Columns()
	for i := 0; i < int(b.NumRows()); i++ {
		for c, col := range cols {
			if col.IsNull(i) {
				row[c] = nil
				continue
			}
			switch a := col.(type) {
			case *array.Int32:
				row[c] = a.Value(i)
			case *array.Int64:
				row[c] = a.Value(i)
			case *array.String:
				row[c] = a.Value(i)
			case *array.Date32:
				row[c] = a.Value(i).ToTime()
			case *array.Decimal128:
				// DuckDB stores narrow decimals as unscaled integers.
				row[c] = a.Value(i).LowBits()
			default:
				return fmt.Errorf("duckdb: cannot append %s column %s", col.DataType(), b.Schema().Field(c).Name)
			}
		}
		if err := app.AppendRow(row...); err != nil {
			return fmt.Errorf("duckdb: append: %w", err)
		}
	}
	return nil
}

// Query runs one statement and returns its whole result. AVG calls run as
// Flink's (flinkAvg).
func (d *DuckDB) Query(ctx context.Context, query string) (*Result, error) {
	rows, err := d.conn.QueryContext(ctx, flinkAvg(query))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: cols}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	for _, ct := range types {
		res.Types = append(res.Types, duckTypeClass(ct.DatabaseTypeName()))
	}
	dest := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range dest {
		ptrs[i] = &dest[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out := make([]Value, len(cols))
		for i, v := range dest {
			out[i], err = fromGo(v)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", cols[i], err)
			}
		}
		res.Rows = append(res.Rows, out)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return res, rows.Err()
}

// Exec runs a statement that returns no rows.
func (d *DuckDB) Exec(ctx context.Context, stmt string) error {
	_, err := d.conn.ExecContext(ctx, stmt)
	return err
}

func fromGo(v any) (Value, error) {
	switch x := v.(type) {
	case nil:
		return Value{Kind: KNull}, nil
	case bool:
		return Value{Kind: KBool, Bool: x}, nil
	case int8:
		return intValue(int64(x)), nil
	case int16:
		return intValue(int64(x)), nil
	case int32:
		return intValue(int64(x)), nil
	case int64:
		return intValue(x), nil
	case uint8:
		return intValue(int64(x)), nil
	case uint16:
		return intValue(int64(x)), nil
	case uint32:
		return intValue(int64(x)), nil
	case uint64:
		return decValueBig(new(big.Int).SetUint64(x), 0), nil
	case float32:
		return Value{Kind: KFloat, F: float64(x)}, nil
	case float64:
		return Value{Kind: KFloat, F: x}, nil
	case string:
		return Value{Kind: KString, S: x}, nil
	case []byte:
		return Value{Kind: KString, S: string(x)}, nil
	case time.Time:
		return timeValue(x), nil
	case duckdb.Decimal:
		return decValueBig(x.Value, int32(x.Scale)), nil
	case *big.Int:
		return decValueBig(x, 0), nil
	}
	return Value{}, fmt.Errorf("unsupported DuckDB value %T", v)
}

// duckTypeClass maps a DuckDB type name to its class (value.go).
func duckTypeClass(name string) string {
	name = strings.ToUpper(name)
	if i := strings.IndexByte(name, '('); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
		"UBIGINT", "UHUGEINT", "DECIMAL", "FLOAT", "DOUBLE":
		return TypeNumber
	case "VARCHAR":
		return TypeString
	case "BOOLEAN":
		return TypeBool
	case "DATE":
		return TypeDate
	case "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMPTZ":
		return TypeTimestamp
	case "TIME":
		return TypeTime
	}
	return TypeOther
}
