package flightsql_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// The Python and Java clients run against a flightd this test starts. On a
// developer machine without them the tests skip; in CI (CI=true, where
// .ci/run installs them) a missing client is a failure.
func requireTool(t *testing.T, path string, what string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if _, err := exec.LookPath(path); err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not found at %s (.ci/run installs it)", what, path)
	}
	t.Skipf("%s not found at %s; run .ci/run to install the interop clients", what, path)
}

func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestInteropPython(t *testing.T) {
	python := os.Getenv("FLIGHTD_PYTHON")
	if python == "" {
		python = filepath.Join(repoRoot(t), ".venv", "bin", "python")
	}
	requireTool(t, python, "Python with pyarrow and adbc_driver_flightsql")
	// Results of any size split for clients that ask (test_endpoints.py);
	// COPY reads and writes files of a directory the tests share
	// (test_copy.py).
	files := t.TempDir()
	ts := startServerLimits(t, splitLimits, 0, flightsql.Options{}, func(c *engine.Config) { c.FilesDir = files })
	cmd := exec.Command(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", filepath.Join(repoRoot(t), "interop", "python"))
	cmd.Env = append(os.Environ(), "FLIGHTD_URI="+ts.URI, "FLIGHTD_FILES_DIR="+files)
	out, err := cmd.CombinedOutput()
	t.Logf("pytest:\n%s", out)
	if err != nil {
		t.Fatalf("pytest failed: %v", err)
	}
}

func TestInteropJDBC(t *testing.T) {
	requireTool(t, "mvn", "Maven")
	ts := startServer(t, flightsql.Options{})
	loadSequence(t, ts, "big", 1_000_000)
	cmd := exec.Command("mvn", "-q", "-B", "test")
	cmd.Dir = filepath.Join(repoRoot(t), "interop", "java")
	cmd.Env = append(os.Environ(), "FLIGHTD_URI="+ts.URI)
	out, err := cmd.CombinedOutput()
	t.Logf("mvn test:\n%s", out)
	if err != nil {
		t.Fatalf("JDBC tests failed: %v", err)
	}
}

// loadSequence creates table name(id BIGINT) holding 0..n-1 via bulk
// ingest.
func loadSequence(t *testing.T, ts *testServer, name string, n int64) {
	t.Helper()
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	const chunk = 64 * 1024
	var batches []arrow.RecordBatch
	for start := int64(0); start < n; start += chunk {
		b := array.NewInt64Builder(mem)
		for i := start; i < min(start+chunk, n); i++ {
			b.Append(i)
		}
		col := b.NewArray()
		b.Release()
		batches = append(batches, array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len())))
		col.Release()
	}
	rdr, err := array.NewRecordReader(schema, batches)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		b.Release()
	}
	defer rdr.Release() // the statement retains its own reference
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, name); err != nil {
		t.Fatal(err)
	}
	if err := stmt.BindStream(context.Background(), rdr); err != nil {
		t.Fatal(err)
	}
	got, err := stmt.ExecuteUpdate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("ingested %d rows, want %d", got, n)
	}
}
