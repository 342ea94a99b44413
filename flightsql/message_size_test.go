package flightsql_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/flightsql"
)

// TestLargeBatchesFitDefaultClients: a scan returns a whole Parquet row
// group (64Ki rows, here about 7 MB) as one batch, and arrow-go's Flight
// SQL client with gRPC's defaults refuses messages over 4 MiB; the server
// sends such a batch in pieces, and the client reads every row.
func TestLargeBatchesFitDefaultClients(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k BIGINT, s STRING)")
	const rows = 100_000
	mustExec(t, cnxn, "INSERT INTO t SELECT x, rpad(CAST(x AS VARCHAR), 100, 'x') FROM range(100000) AS r(x)")

	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	info, err := cl.Execute(ctx, "SELECT k, s FROM t")
	if err != nil {
		t.Fatal(err)
	}
	rd, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	var n, sum, batches int64
	for rd.Next() {
		b := rd.RecordBatch()
		batches++
		k, s := b.Column(0).(*array.Int64), b.Column(1).(*array.String)
		for i := range b.NumRows() {
			sum += k.Value(int(i))
			if len(s.Value(int(i))) != 100 {
				t.Fatalf("row %d: %q", n+i, s.Value(int(i)))
			}
		}
		n += b.NumRows()
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("after %d rows in %d batches: %v", n, batches, err)
	}
	if n != rows || sum != rows*(rows-1)/2 {
		t.Fatalf("%d rows summing to %d, want %d and %d", n, sum, rows, rows*(rows-1)/2)
	}
	t.Logf("%d rows in %d batches", n, batches)
}

// TestGetTablesWithSchemasFitDefaultClients: GetTables with schemas (what
// ADBC's GetObjects of columns and JDBC's getColumns ask) answers in
// messages a client with gRPC's defaults accepts. It was one batch: wide
// tables made it one message of tens of MB, and clients could not list
// columns at all.
func TestGetTablesWithSchemasFitDefaultClients(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	cols := make([]string, 1500)
	for i := range cols {
		cols[i] = fmt.Sprintf("column_%d BIGINT", i)
	}
	const tables = 6
	for i := range tables {
		mustExec(t, cnxn, fmt.Sprintf("CREATE TABLE wide%d (%s)", i, strings.Join(cols, ", ")))
	}

	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	info, err := cl.GetTables(ctx, &arrowflightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	var names []string
	for rd.Next() {
		b := rd.RecordBatch()
		for i := range int(b.NumRows()) {
			sch, err := flight.DeserializeSchema(b.Column(4).(*array.Binary).Value(i), memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, fmt.Sprint(b.Column(2).(*array.String).Value(i), ":", sch.NumFields()))
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("after tables %v: %v", names, err)
	}
	if len(names) != tables || names[0] != "wide0:1500" || names[tables-1] != "wide5:1500" {
		t.Fatalf("tables %v", names)
	}
}
