package flightsql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	"github.com/flightd/flightd/flightsql"
)

// TestPreparedUpdateNoParamRows: a prepared update bound to parameter
// columns with no rows (executemany of an empty frame) runs once per row,
// so not at all: 0 rows, no error, nothing written. It was refused ("takes
// 1 parameters but none were bound"), or, when the client had bound
// parameters before with a DoPut of the query command, ran again with
// those and wrote their rows once more.
func TestPreparedUpdateNoParamRows(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE u (a BIGINT)")
	cl, mem := ts.rawClient(t)
	ctx := context.Background()
	a := arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	empty := func(fields ...arrow.Field) array.RecordReader {
		rdr, err := array.NewRecordReader(arrow.NewSchema(fields, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		return rdr
	}

	p, err := cl.Prepare(ctx, "INSERT INTO u VALUES (?)")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	rdr := empty(a)
	p.SetRecordReader(rdr)
	rdr.Release()
	if n, err := p.ExecuteUpdate(ctx); err != nil || n != 0 {
		t.Fatalf("update with no parameter rows: %d, %v; want 0 rows", n, err)
	}

	// Parameters bound by a DoPut of the query command, then none.
	one := variantBatch(t, mem, []arrow.Field{a}, `[1]`)
	p.SetParameters(one)
	one.Release()
	if err := p.ExecutePut(ctx); err != nil {
		t.Fatal(err)
	}
	rdr = empty(a)
	p.SetRecordReader(rdr)
	rdr.Release()
	if n, err := p.ExecuteUpdate(ctx); err != nil || n != 0 {
		t.Fatalf("update with no parameter rows after a binding: %d, %v; want 0 rows", n, err)
	}
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM u"), "0")

	// Columns that are not the statement's parameters are still refused.
	rdr = empty(a, a)
	p.SetRecordReader(rdr)
	rdr.Release()
	_, err = p.ExecuteUpdate(ctx)
	wantCode(t, "two parameter columns and no rows for one parameter", err, codes.InvalidArgument)

	// Through ADBC, as Python's executemany sends an empty frame.
	st := prepare(t, cnxn, "INSERT INTO u VALUES (?)")
	defer st.Close()
	rdr = empty(a)
	if err := st.BindStream(ctx, rdr); err != nil {
		t.Fatal(err)
	}
	rdr.Release()
	if n, err := st.ExecuteUpdate(ctx); err != nil || n != 0 {
		t.Fatalf("ADBC update with no parameter rows: %d, %v; want 0 rows", n, err)
	}
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM u"), "0")

	// A statement without parameters still runs once (arrow-go sends an
	// empty schema for it).
	q, err := cl.Prepare(ctx, "INSERT INTO u VALUES (7)")
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	if n, err := q.ExecuteUpdate(ctx); err != nil || n != 1 {
		t.Fatalf("update without parameters: %d, %v; want 1 row", n, err)
	}
	wantRows(t, query(t, cnxn, "SELECT a FROM u"), "7")
}

// TestPreparedParamRowError: a prepared statement executed with several
// parameter rows whose third row fails says which parameter row (1-based)
// failed. The error said "VALUES row 1", the row of the SQL text each
// execution has, whatever the parameter row.
func TestPreparedParamRowError(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE pr (a INT NOT NULL, b BIGINT)")
	cl, mem := ts.rawClient(t)
	ctx := context.Background()
	fields := []arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
	cases := []struct {
		sql  string
		rows [2]string
		msg  string
	}{
		{"INSERT INTO pr VALUES (CAST(? AS INT), ?)", [2]string{`["1", "2", "x", "4"]`, `[1, 2, 3, 4]`}, "parameter row 3 of 4"},
		{"INSERT INTO pr VALUES (CAST(? AS INT), 10 / ?)", [2]string{`["1", "2"]`, `[1, 0]`}, "parameter row 2 of 2"},
		{"INSERT INTO pr VALUES (CAST(? AS INT), ?)", [2]string{`["1", null]`, `[1, 2]`}, "parameter row 2 of 2"},
		{"INSERT INTO pr VALUES (CAST(? AS INT), ?)", [2]string{`["y", "2"]`, `[1, 2]`}, "parameter row 1 of 2"},
	}
	for _, c := range cases {
		p, err := cl.Prepare(ctx, c.sql)
		if err != nil {
			t.Fatal(err)
		}
		b := variantBatch(t, mem, fields, c.rows[:]...)
		p.SetParameters(b)
		b.Release()
		n, err := p.ExecuteUpdate(ctx)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s with %s: %d, %v; want an error naming %q", c.sql, c.rows, n, err, c.msg)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM pr"), "0")

	// A query's parameter rows too.
	p, err := cl.Prepare(ctx, "SELECT CAST(? AS INT) + ?")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	b := variantBatch(t, mem, fields, `["1", "z"]`, `[1, 2]`)
	p.SetParameters(b)
	b.Release()
	info, err := p.Execute(ctx)
	if err == nil {
		_, err = fetchAll(ctx, cl, info)
	}
	if err == nil || !strings.Contains(err.Error(), "parameter row 2 of 2") {
		t.Errorf("query with a bad second parameter row: %v", err)
	}
}
