package flightsql_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// TestMetadataHugeNames: a filter pattern over 8 KiB is refused before it
// is compiled, and a long table name is quoted to 64 bytes and its length.
// A 100 MB pattern took the real binary 7 s and 2 GB RSS to compile
// before the regexp package refused it, quoted whole; now 2 s and 1 GB,
// the rest being the Flight SQL layer's copies of the command.
func TestMetadataHugeNames(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	mustExec(t, ts.connect(t, nil), "CREATE TABLE t1 (a INT)")
	long := strings.Repeat("x", 1_000_000)
	fetch := func(info *flight.FlightInfo, err error) error {
		if err != nil {
			return err
		}
		rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return err
		}
		defer rdr.Release()
		for rdr.Next() {
		}
		return rdr.Err()
	}
	// Fits: the longest name escaped byte by byte, % between each.
	ok := strings.Repeat(`\x%`, 1000)
	if err := fetch(cl.GetTables(ctx, &arrowflightsql.GetTablesOpts{TableNameFilterPattern: &ok})); err != nil {
		t.Fatalf("a pattern of %d bytes: %v", len(ok), err)
	}
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"GetTables", func() error {
			return fetch(cl.GetTables(ctx, &arrowflightsql.GetTablesOpts{TableNameFilterPattern: &long}))
		}, "longer than 8192 bytes"},
		{"GetDbSchemas", func() error {
			return fetch(cl.GetDBSchemas(ctx, &arrowflightsql.GetDBSchemasOpts{DbSchemaFilterPattern: &long}))
		}, "longer than 8192 bytes"},
		{"GetPrimaryKeys", func() error {
			return fetch(cl.GetPrimaryKeys(ctx, arrowflightsql.TableRef{Table: long}))
		}, "at most 200 bytes"},
	} {
		err := c.call()
		wantCode(t, c.name, err, codes.InvalidArgument)
		if msg := status.Convert(err).Message(); len(msg) > 1000 || !strings.Contains(msg, "… (1000000 bytes)") || !strings.Contains(msg, c.want) {
			t.Errorf("%s: a %d-byte message %.300q, want 64 bytes of the name, its length and %q", c.name, len(msg), msg, c.want)
		}
	}
}
