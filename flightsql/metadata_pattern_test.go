package flightsql_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/protobuf/proto"

	"github.com/flightd/flightd/flightsql"
)

// TestMetadataEmptyPattern: an empty filter pattern in GetDbSchemas and
// GetTables is a LIKE pattern that matches only empty names (so nothing
// here), as FlightSql.proto has only an absent pattern not narrow the
// search; an absent one lists all. "" listed everything, as if absent.
func TestMetadataEmptyPattern(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE DATABASE sales")
	mustExec(t, cnxn, "CREATE TABLE sales.t1 (a INT)")
	mustExec(t, cnxn, "CREATE TABLE sales.t2 (a INT)")
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	list := func(info *flight.FlightInfo, err error, cols ...int) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		var out []string
		for rdr.Next() {
			for _, r := range batchRows(rdr.RecordBatch()) {
				var parts []string
				for _, c := range cols {
					parts = append(parts, r[c])
				}
				out = append(out, strings.Join(parts, "."))
			}
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	schemas := func(p *string) []string {
		info, err := cl.GetDBSchemas(ctx, &arrowflightsql.GetDBSchemasOpts{DbSchemaFilterPattern: p})
		return list(info, err, 1)
	}
	tables := func(db, table *string) []string {
		info, err := cl.GetTables(ctx, &arrowflightsql.GetTablesOpts{DbSchemaFilterPattern: db, TableNameFilterPattern: table})
		return list(info, err, 1, 2)
	}
	if got := schemas(nil); !slices.Contains(got, "sales") || !slices.Contains(got, "default") {
		t.Errorf("GetDbSchemas, no pattern: %v, want all", got)
	}
	if got := schemas(proto.String("%")); !slices.Contains(got, "sales") {
		t.Errorf("GetDbSchemas %%: %v, want all", got)
	}
	if got := schemas(proto.String("")); len(got) != 0 {
		t.Errorf("GetDbSchemas '': %v, want none (no database has an empty name)", got)
	}
	if got := schemas(proto.String("sal_s")); !slices.Equal(got, []string{"sales"}) {
		t.Errorf("GetDbSchemas sal_s: %v", got)
	}
	if got := tables(proto.String("sales"), nil); !slices.Equal(got, []string{"sales.t1", "sales.t2"}) {
		t.Errorf("GetTables sales, no table pattern: %v, want both", got)
	}
	if got := tables(proto.String("sales"), proto.String("")); len(got) != 0 {
		t.Errorf("GetTables sales, table '': %v, want none", got)
	}
	if got := tables(proto.String(""), nil); len(got) != 0 {
		t.Errorf("GetTables db '': %v, want none", got)
	}
	if got := tables(proto.String("sales"), proto.String("%2")); !slices.Equal(got, []string{"sales.t2"}) {
		t.Errorf("GetTables sales, %%2: %v", got)
	}
}
