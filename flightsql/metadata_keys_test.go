package flightsql_test

import (
	"context"
	"strings"
	"testing"

	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"

	"github.com/flightd/flightd/flightsql"
)

// TestPrimaryKeysOfView: GetPrimaryKeys of a view answers with no rows, as
// JDBC tools listing a view's keys expect; it was NotFound ("table
// default.v: table not found") though the view exists. A table's keys
// and a missing table's NotFound are as before.
func TestPrimaryKeysOfView(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE pkt (k BIGINT PRIMARY KEY NOT ENFORCED, v STRING)")
	mustExec(t, cnxn, "CREATE VIEW pkv AS SELECT k, v FROM pkt")
	cl, _ := ts.rawClient(t)
	ctx := context.Background()
	keys := func(table string) ([]string, error) {
		info, err := cl.GetPrimaryKeys(ctx, arrowflightsql.TableRef{Table: table})
		if err != nil {
			return nil, err
		}
		rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return nil, err
		}
		defer rdr.Release()
		var out []string
		for rdr.Next() {
			for _, r := range batchRows(rdr.RecordBatch()) {
				out = append(out, strings.Join(r, ","))
			}
		}
		return out, rdr.Err()
	}
	if got, err := keys("pkt"); err != nil || len(got) != 1 || got[0] != "flightd,default,pkt,k,1,NULL" {
		t.Fatalf("keys of pkt: %q, %v", got, err)
	}
	if got, err := keys("pkv"); err != nil || len(got) != 0 {
		t.Fatalf("keys of view pkv: %q, %v; want no rows", got, err)
	}
	_, err := keys("nosuch")
	wantCode(t, "keys of a missing table", err, codes.NotFound)
}
