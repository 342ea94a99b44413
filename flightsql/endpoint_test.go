package flightsql_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/flightsql"
)

func wantRows(t *testing.T, got [][]string, want ...string) {
	t.Helper()
	var rendered []string
	for _, r := range got {
		rendered = append(rendered, strings.Join(r, ","))
	}
	if !reflect.DeepEqual(rendered, want) && !(len(rendered) == 0 && len(want) == 0) {
		t.Fatalf("rows:\n got %q\nwant %q", rendered, want)
	}
}

// TestWalkingSkeleton: create, ingest and query through every layer.
func TestWalkingSkeleton(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)

	mustExec(t, cnxn, `CREATE TABLE orders (id BIGINT NOT NULL, customer VARCHAR, amount DOUBLE, PRIMARY KEY (id) NOT ENFORCED)`)
	if n := mustExec(t, cnxn, `INSERT INTO orders VALUES (1, 'ann', 10.5), (2, 'bob', NULL), (3, 'cy', 7)`); n != 3 {
		t.Fatalf("insert count = %d, want 3", n)
	}

	// Bulk ingest (what adbc_ingest sends) into the same table.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{4, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"dee", "bob"}, nil)
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{1, 99}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	if n := ingest(t, cnxn, "orders", adbc.OptionValueIngestModeAppend, rec); n != 2 {
		t.Fatalf("ingest count = %d, want 2", n)
	}

	// id 2 was upserted by the ingest (primary-key table, deduplicate).
	wantRows(t, query(t, cnxn, `SELECT id, customer, amount FROM orders WHERE id >= 2 ORDER BY id`),
		"2,bob,99", "3,cy,7", "4,dee,1")
}

func ingest(t *testing.T, cnxn adbc.Connection, table, mode string, rec arrow.RecordBatch) int64 {
	t.Helper()
	n, err := tryIngest(cnxn, table, mode, rec)
	if err != nil {
		t.Fatalf("ingest into %s: %v", table, err)
	}
	return n
}

func tryIngest(cnxn adbc.Connection, table, mode string, rec arrow.RecordBatch) (int64, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, table); err != nil {
		return 0, err
	}
	if err := stmt.SetOption(adbc.OptionKeyIngestMode, mode); err != nil {
		return 0, err
	}
	// BindStream, not Bind: the ADBC Go driver (v1.12.0) wraps a bound
	// batch in a reader it never releases, which the checked allocator
	// would report as a leak of the test's batch.
	rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return 0, err
	}
	defer rdr.Release() // the statement retains its own reference
	if err := stmt.BindStream(context.Background(), rdr); err != nil {
		return 0, err
	}
	return stmt.ExecuteUpdate(context.Background())
}

// TestDDLThroughQueryPathRunsOnce: ADBC's execute() sends DDL/DML as
// CommandStatementQuery; it must run at GetFlightInfo, exactly once, even if
// the client never fetches.
func TestDDLThroughQueryPathRunsOnce(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	for _, q := range []string{`CREATE TABLE t (a BIGINT)`, `INSERT INTO t VALUES (1), (2)`} {
		if err := stmt.SetSqlQuery(q); err != nil {
			t.Fatal(err)
		}
		rdr, _, err := stmt.ExecuteQuery(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		rdr.Release() // never fetched
	}
	wantRows(t, query(t, cnxn, `SELECT a FROM t ORDER BY a`), "1", "2")
}

// TestPreparedStatements: parameter schema, several parameter rows per
// bind for queries and updates.
func TestPreparedStatements(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, `CREATE TABLE kv (k BIGINT NOT NULL, v VARCHAR, PRIMARY KEY (k) NOT ENFORCED)`)

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()

	ins, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	if err := ins.SetSqlQuery(`INSERT INTO kv VALUES (?, ?)`); err != nil {
		t.Fatal(err)
	}
	if err := ins.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	ps, err := ins.GetParameterSchema()
	if err != nil {
		t.Fatal(err)
	}
	if ps.NumFields() != 2 {
		t.Fatalf("parameter schema %v, want 2 fields", ps)
	}
	params := paramBatch(mem, ps, [][]any{{int64(1), "one"}, {int64(2), "two"}, {int64(3), nil}})
	defer params.Release()
	if err := ins.Bind(ctx, params); err != nil {
		t.Fatal(err)
	}
	n, err := ins.ExecuteUpdate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("update count %d, want 3", n)
	}

	wantRows(t, queryPrepared(t, cnxn, mem, `SELECT k, v FROM kv WHERE k = ?`, [][]any{{int64(3)}, {int64(1)}}), "3,NULL", "1,one")
	// A series' bounds as parameters, one series per parameter row.
	wantRows(t, queryPrepared(t, cnxn, mem, `SELECT * FROM generate_series(1, ?)`, [][]any{{int64(2)}, {int64(3)}}), "1", "2", "1", "2", "3")
}

// queryPrepared prepares q, binds the parameter rows params (paramBatch's
// values) and returns what it reads.
func queryPrepared(t *testing.T, cnxn adbc.Connection, mem memory.Allocator, q string, params [][]any) [][]string {
	t.Helper()
	ctx := context.Background()
	st, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetSqlQuery(q); err != nil {
		t.Fatal(err)
	}
	if err := st.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	ps, err := st.GetParameterSchema()
	if err != nil {
		t.Fatal(err)
	}
	b := paramBatch(mem, ps, params)
	defer b.Release()
	if err := st.Bind(ctx, b); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := st.ExecuteQuery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	rows, err := readRows(rdr)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// paramBatch builds a batch of the given schema from Go values (int64,
// string, float64, nil), converting integers to the parameter's type.
func paramBatch(mem memory.Allocator, schema *arrow.Schema, rows [][]any) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, row := range rows {
		for i, v := range row {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(v.(int64))
			case *array.Int32Builder:
				fb.Append(int32(v.(int64)))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			default:
				panic(fmt.Sprintf("paramBatch: builder %T", fb))
			}
		}
	}
	return b.NewRecordBatch()
}

// TestErrors: bad input gets the right code and a message saying what and
// where, and changes nothing.
func TestErrors(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, `CREATE TABLE t (a BIGINT NOT NULL, b VARCHAR)`)
	mustExec(t, cnxn, `INSERT INTO t VALUES (1, 'x')`)

	cases := []struct {
		sql    string
		status adbc.Status
		msg    string
	}{
		{`SELEC a FROM t`, adbc.StatusInvalidArgument, "line 1:1"},
		{`SELECT a FROM t WHERE`, adbc.StatusInvalidArgument, "line 1:"},
		{`SELECT nope FROM t`, adbc.StatusInvalidArgument, "nope"},
		{`SELECT a FROM missing`, adbc.StatusNotFound, "line 1:15: table default.missing not found"},
		{`CREATE TABLE t (a BIGINT)`, adbc.StatusAlreadyExists, "t"},
	}
	for _, c := range cases {
		_, err := tryQuery(cnxn, c.sql)
		var ae adbc.Error
		if !errors.As(err, &ae) {
			t.Fatalf("%s: error %v (%T), want adbc.Error", c.sql, err, err)
		}
		if !strings.Contains(ae.Msg, c.msg) {
			t.Errorf("%s: message %q does not mention %q", c.sql, ae.Msg, c.msg)
		}
		if ae.Code != c.status {
			t.Errorf("%s: status %v, want %v (%s)", c.sql, ae.Code, c.status, ae.Msg)
		}
	}
	// A type mismatch in ingest names the column and writes nothing.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("2")
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := tryIngest(cnxn, "t", adbc.OptionValueIngestModeAppend, rec); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("ingest with wrong type: %v, want an error naming column a", err)
	}
	wantRows(t, query(t, cnxn, `SELECT a, b FROM t`), "1,x")
}

// TestTransactions: rollback discards, commit publishes, and a
// transaction reads its starting snapshot with its own writes.
func TestTransactions(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	other := ts.connect(t, nil)
	mustExec(t, cnxn, `CREATE TABLE t (a BIGINT)`)
	mustExec(t, cnxn, `INSERT INTO t VALUES (1)`)

	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	mustExec(t, cnxn, `INSERT INTO t VALUES (2)`)
	wantRows(t, query(t, other, `SELECT a FROM t ORDER BY a`), "1")
	wantRows(t, query(t, cnxn, `SELECT a FROM t ORDER BY a`), "1", "2")
	if err := cnxn.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRows(t, query(t, other, `SELECT a FROM t ORDER BY a`), "1")

	mustExec(t, cnxn, `INSERT INTO t VALUES (3)`)
	mustExec(t, other, `INSERT INTO t VALUES (4)`) // after the transaction began
	wantRows(t, query(t, cnxn, `SELECT a FROM t ORDER BY a`), "1", "3")
	if err := cnxn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRows(t, query(t, other, `SELECT a FROM t ORDER BY a`), "1", "3", "4")
}

// TestMetadata: catalogs, schemas, tables with columns, primary keys,
// table types and info, as ADBC's GetObjects/GetTableSchema read them.
func TestMetadata(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, `CREATE TABLE items (id INT NOT NULL, name VARCHAR, price DECIMAL(10,2), PRIMARY KEY (id) NOT ENFORCED)`)
	mustExec(t, cnxn, `CREATE VIEW cheap (item, label) AS SELECT id, name FROM items WHERE price < 10`)
	ctx := context.Background()

	vschema, err := cnxn.GetTableSchema(ctx, nil, nil, "cheap")
	if err != nil {
		t.Fatal(err)
	}
	if got := vschema.String(); !strings.Contains(got, "item: type=int32") || !strings.Contains(got, "label: type=utf8") {
		t.Fatalf("view schema:\n%s", got)
	}

	schema, err := cnxn.GetTableSchema(ctx, nil, nil, "items")
	if err != nil {
		t.Fatal(err)
	}
	if got := schema.String(); !strings.Contains(got, "id: type=int32") || !strings.Contains(got, "price: type=decimal(10, 2)") {
		t.Fatalf("table schema:\n%s", got)
	}

	rdr, err := cnxn.GetObjects(ctx, adbc.ObjectDepthAll, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for rdr.Next() {
		js, err := rdr.RecordBatch().MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		sb.Write(js)
	}
	rdr.Release()
	for _, want := range []string{`"catalog_name":"flightd"`, `"db_schema_name":"default"`, `"table_name":"items"`, `"column_name":"price"`,
		`"table_name":"cheap","table_type":"VIEW"`, `"column_name":"label"`} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("GetObjects lacks %s:\n%s", want, sb.String())
		}
	}

	types, err := cnxn.GetTableTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readRows(types)
	types.Release()
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, rows, "TABLE", "VIEW")

	info, err := cnxn.GetInfo(ctx, []adbc.InfoCode{adbc.InfoVendorName})
	if err != nil {
		t.Fatal(err)
	}
	infoRows, err := readRows(info)
	info.Release()
	if err != nil {
		t.Fatal(err)
	}
	if len(infoRows) != 1 || !strings.Contains(strings.Join(infoRows[0], ","), "flightd") {
		t.Fatalf("vendor name info: %v", infoRows)
	}
}
