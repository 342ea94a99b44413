package flightsql_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// TestCopyOverFlight: COPY and read_parquet through a Flight SQL client,
// sent as an update or as a query: files only in the server's files
// directory and, with authentication, only for users with admin on every
// database (files hold exports of any database); everything else is
// PermissionDenied, SQLSTATE 42501, and leaves tables and files as they
// were.
func TestCopyOverFlight(t *testing.T) {
	files := t.TempDir()
	ts := startServer(t, flightsql.Options{
		Users: map[string]string{"root": "r", "owner": "o", "writer": "y"},
		Grants: []flightsql.Grant{
			{User: "root", Database: "*", Privilege: engine.Admin},
			{User: "owner", Database: "sales", Privilege: engine.Admin},
			{User: "writer", Database: "sales", Privilege: engine.Write},
		},
	}, func(c *engine.Config) { c.FilesDir = files })
	cl := ts.clientFrom(t, "127.0.0.1")
	root, owner, writer := basic("root", "r"), basic("owner", "o"), basic("writer", "y")
	update := func(ctx context.Context, q string) (int64, error) { return cl.ExecuteUpdate(ctx, q) }
	for _, q := range []string{
		"CREATE DATABASE sales", "CREATE TABLE sales.t (k BIGINT, s STRING)", "INSERT INTO sales.t VALUES (1, 'a'), (2, NULL)",
	} {
		if _, err := update(root, q); err != nil {
			t.Fatalf("root: %s: %v", q, err)
		}
	}
	if n, err := update(root, "COPY sales.t TO 't.parquet'"); err != nil || n != 2 {
		t.Fatalf("root: COPY TO: %d, %v", n, err)
	}
	// Run once, when GetFlightInfo prepares it.
	if _, err := cl.Execute(root, "COPY (SELECT k FROM sales.t WHERE k > 1) TO 't.csv'"); err != nil {
		t.Fatalf("root: COPY TO as a query: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(files, "t.csv")); err != nil || string(data) != "k\n2\n" {
		t.Fatalf("t.csv: %q, %v", data, err)
	}
	denied := func(ctx context.Context, who, q string) {
		t.Helper()
		_, err := update(ctx, q)
		if q[0] == 'S' {
			_, err = cl.Execute(ctx, q)
		}
		wantCode(t, who+": "+q, err, codes.PermissionDenied)
		if !strings.Contains(err.Error(), "[SQLSTATE 42501]") {
			t.Fatalf("%s: %s: %v, want SQLSTATE 42501", who, q, err)
		}
	}
	for _, who := range []struct {
		name string
		ctx  context.Context
	}{{"owner", owner}, {"writer", writer}} {
		denied(who.ctx, who.name, "COPY sales.t FROM 't.parquet'")
		denied(who.ctx, who.name, "COPY sales.t TO 'mine.csv'")
		denied(who.ctx, who.name, "SELECT * FROM read_parquet('t.parquet')")
	}
	denied(root, "root", "COPY sales.t FROM '../t.parquet'")
	outside := t.TempDir()
	denied(root, "root", "COPY sales.t TO '"+filepath.Join(outside, "escape.csv")+"'")
	denied(root, "root", "SELECT * FROM read_csv('"+filepath.Join(outside, "escape.csv")+"')")
	if n, err := update(root, "COPY sales.t FROM 't.parquet'"); err != nil || n != 2 {
		t.Fatalf("root: COPY FROM: %d, %v", n, err)
	}
	_, err := update(root, "COPY sales.t TO 't.parquet'")
	wantCode(t, "COPY TO an existing file", err, codes.AlreadyExists)
	if n, err := update(root, "COPY (SELECT * FROM sales.t WHERE s = 'a') TO 'a.csv'"); err != nil || n != 2 {
		t.Fatalf("after COPY FROM, rows with s = 'a': %d, %v; want 2", n, err)
	}
	info, err := cl.Execute(root, "SELECT k, s FROM read_parquet('t.parquet') WHERE k = 2")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := fetchAll(root, cl, info); err != nil || n != 1 {
		t.Fatalf("read_parquet: %d rows, %v", n, err)
	}
	if names, _ := os.ReadDir(outside); len(names) != 0 {
		t.Fatalf("files written outside: %v", names)
	}
	if names, _ := os.ReadDir(files); len(names) != 3 {
		t.Fatalf("files directory holds %v, want t.parquet, t.csv and a.csv", names)
	}

	// A server without a files directory refuses COPY.
	off := startServer(t, flightsql.Options{})
	ocl := off.clientFrom(t, "127.0.0.1")
	if _, err := ocl.ExecuteUpdate(context.Background(), "CREATE TABLE c (k BIGINT)"); err != nil {
		t.Fatal(err)
	}
	_, err = ocl.ExecuteUpdate(context.Background(), "COPY c TO 'c.csv'")
	wantCode(t, "COPY without -files-dir", err, codes.PermissionDenied)
}
