package flightsql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/flightsql"
)

// TestIngestIntoView: bulk ingest appending to a view is refused saying
// it is a view, with InvalidArgument as INSERT INTO the view is; it said
// "table default.v: table not found" (NotFound, as INSERT did) though the
// name exists. Creating or replacing over a view stays AlreadyExists, as
// CREATE TABLE over it is. Nothing is written or replaced.
func TestIngestIntoView(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE base (a BIGINT)")
	mustExec(t, cnxn, "INSERT INTO base VALUES (1)")
	mustExec(t, cnxn, "CREATE VIEW v AS SELECT a FROM base")
	cl, mem := ts.rawClient(t)
	ctx := context.Background()

	_, err := cl.ExecuteUpdate(ctx, "INSERT INTO v VALUES (2)")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "default.v is a view, not a table") {
		t.Errorf("INSERT INTO v: %v, want InvalidArgument saying it is a view", err)
	}
	ingest := func(mode arrowflightsql.TableDefinitionOptionsTableExistsOption, notExist arrowflightsql.TableDefinitionOptionsTableNotExistOption) error {
		b := variantBatch(t, mem, []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, `[2, 3]`)
		defer b.Release()
		rdr, err := array.NewRecordReader(b.Schema(), []arrow.RecordBatch{b})
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		_, err = cl.ExecuteIngest(ctx, rdr, &arrowflightsql.ExecuteIngestOpts{Table: "v",
			TableDefinitionOptions: &arrowflightsql.TableDefinitionOptions{IfNotExist: notExist, IfExists: mode}})
		return err
	}
	cases := []struct {
		name     string
		exists   arrowflightsql.TableDefinitionOptionsTableExistsOption
		notExist arrowflightsql.TableDefinitionOptionsTableNotExistOption
		code     codes.Code
		msg      string
	}{
		{"append", arrowflightsql.TableDefinitionOptionsTableExistsOptionAppend, arrowflightsql.TableDefinitionOptionsTableNotExistOptionFail,
			codes.InvalidArgument, "ingest: default.v is a view, not a table"},
		{"create", arrowflightsql.TableDefinitionOptionsTableExistsOptionFail, arrowflightsql.TableDefinitionOptionsTableNotExistOptionCreate,
			codes.AlreadyExists, "default.v is a view"},
		{"replace", arrowflightsql.TableDefinitionOptionsTableExistsOptionReplace, arrowflightsql.TableDefinitionOptionsTableNotExistOptionCreate,
			codes.AlreadyExists, "default.v is a view"},
		{"create_append", arrowflightsql.TableDefinitionOptionsTableExistsOptionAppend, arrowflightsql.TableDefinitionOptionsTableNotExistOptionCreate,
			codes.AlreadyExists, "default.v is a view"},
	}
	for _, c := range cases {
		if err := ingest(c.exists, c.notExist); status.Code(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ingest %s into view v: %v, want %v with %q", c.name, err, c.code, c.msg)
		}
	}
	wantRows(t, query(t, cnxn, "SELECT a FROM v"), "1")
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM base"), "1")
	// A missing table is still NotFound.
	_, err = cl.ExecuteUpdate(ctx, "INSERT INTO nosuch VALUES (2)")
	if status.Code(err) != codes.NotFound {
		t.Errorf("INSERT INTO nosuch: %v, want NotFound", err)
	}
}
