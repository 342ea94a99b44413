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

// TestCopyOverFlight: COPY through a Flight SQL client, sent as an update
// or as a query: files only in the server's files directory and only for
// users with the grants (write on the table COPY FROM appends to, read on
// what COPY TO reads); everything else is PermissionDenied, SQLSTATE
// 42501, and leaves tables and files as they were.
func TestCopyOverFlight(t *testing.T) {
	files := t.TempDir()
	ts := startServer(t, flightsql.Options{
		Users: map[string]string{"root": "r", "reader": "x", "writer": "y"},
		Grants: []flightsql.Grant{
			{User: "root", Database: "*", Privilege: engine.Admin},
			{User: "reader", Database: "sales", Privilege: engine.Read},
			{User: "writer", Database: "sales", Privilege: engine.Write},
		},
	}, func(c *engine.Config) { c.FilesDir = files })
	cl := ts.clientFrom(t, "127.0.0.1")
	root, reader, writer := basic("root", "r"), basic("reader", "x"), basic("writer", "y")
	update := func(ctx context.Context, q string) (int64, error) { return cl.ExecuteUpdate(ctx, q) }
	for _, q := range []string{
		"CREATE DATABASE sales", "CREATE TABLE sales.t (k BIGINT, s STRING)", "INSERT INTO sales.t VALUES (1, 'a'), (2, NULL)",
		"CREATE TABLE default.secret (s STRING)", "INSERT INTO default.secret VALUES ('x')",
	} {
		if _, err := update(root, q); err != nil {
			t.Fatalf("root: %s: %v", q, err)
		}
	}
	// The reader exports what it reads, as an update and as a query.
	if n, err := update(reader, "COPY sales.t TO 't.parquet'"); err != nil || n != 2 {
		t.Fatalf("reader: COPY TO: %d, %v", n, err)
	}
	// Run once, when GetFlightInfo prepares it.
	if _, err := cl.Execute(reader, "COPY (SELECT k FROM sales.t WHERE k > 1) TO 't.csv'"); err != nil {
		t.Fatalf("reader: COPY TO as a query: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(files, "t.csv")); err != nil || string(data) != "k\n2\n" {
		t.Fatalf("t.csv: %q, %v", data, err)
	}
	denied := func(ctx context.Context, who, q string) {
		t.Helper()
		_, err := update(ctx, q)
		wantCode(t, who+": "+q, err, codes.PermissionDenied)
		if !strings.Contains(err.Error(), "[SQLSTATE 42501]") {
			t.Fatalf("%s: %s: %v, want SQLSTATE 42501", who, q, err)
		}
	}
	denied(reader, "reader", "COPY sales.t FROM 't.parquet'")
	denied(reader, "reader", "COPY default.secret TO 's.csv'")
	denied(writer, "writer", "COPY sales.t FROM '../t.parquet'")
	denied(root, "root", "COPY sales.t TO '/tmp/flightd-copy-escape.csv'")
	if n, err := update(writer, "COPY sales.t FROM 't.parquet'"); err != nil || n != 2 {
		t.Fatalf("writer: COPY FROM: %d, %v", n, err)
	}
	_, err := update(root, "COPY sales.t TO 't.parquet'")
	wantCode(t, "COPY TO an existing file", err, codes.AlreadyExists)
	if n, err := update(root, "COPY (SELECT * FROM sales.t WHERE s = 'a') TO 'a.csv'"); err != nil || n != 2 {
		t.Fatalf("after COPY FROM, rows with s = 'a': %d, %v; want 2", n, err)
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
