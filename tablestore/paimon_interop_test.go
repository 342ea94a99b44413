package tablestore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// pypaimon runs interop/paimon/paimon_interop.py with pypaimon 2.1.0 (the
// venv .ci/run makes in interop/paimon/venv) and decodes its JSON output.
// Without the venv the test skips, except in CI (CI=true), where it fails.
func pypaimon(t *testing.T, args ...string) map[string][][]string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	python := filepath.Join(root, "interop", "paimon", "venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("pypaimon venv missing at %s (.ci/run makes it)", python)
		}
		t.Skipf("pypaimon venv missing at %s; run .ci/run to make it", python)
	}
	cmd := exec.Command(python, append([]string{filepath.Join(root, "interop", "paimon", "paimon_interop.py")}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pypaimon %v: %v\n%s", args, err, stderr.String())
	}
	var res map[string][][]string
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("pypaimon %v: %v: %s", args, err, out)
	}
	return res
}

func joinRows(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "|")
	}
	slices.Sort(out)
	return out
}

// TestPaimonInterop: pypaimon reads the tables flightd writes (append, and
// key tables of the deduplicate, partial-update and aggregation engines,
// partitioned, in several buckets, with updates and deletes) with the rows
// flightd reads; flightd reads the tables pypaimon writes with the rows
// pypaimon wrote; and flightd's upserts into pypaimon's bucketed key table
// land in the buckets pypaimon's writer uses (pypaimon then reads each key
// once, with flightd's value).
func TestPaimonInterop(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 1))
	ctx := context.Background()
	s, mem, dir := newTestStore(t)

	type tableCase struct {
		name string
		def  TableDef
		rows func(commit int) ([][]any, RowKind)
	}
	str := arrow.BinaryTypes.String
	i64 := arrow.PrimitiveTypes.Int64
	i32 := arrow.PrimitiveTypes.Int32
	maybe := func(v any) any {
		if r.IntN(5) == 0 {
			return nil
		}
		return v
	}
	cases := []tableCase{
		{"app", TableDef{Schema: arrow.NewSchema([]arrow.Field{{Name: "id", Type: i64}, {Name: "s", Type: str, Nullable: true}, {Name: "n", Type: i32, Nullable: true}}, nil)},
			func(c int) ([][]any, RowKind) {
				var rows [][]any
				for i := 0; i < 1+r.IntN(50); i++ {
					rows = append(rows, []any{c*100 + i, maybe(fmt.Sprintf("s%d", r.IntN(1000))), maybe(r.IntN(2000) - 1000)})
				}
				return rows, Insert
			}},
		{"pk", TableDef{Schema: arrow.NewSchema([]arrow.Field{{Name: "dt", Type: str}, {Name: "id", Type: i64}, {Name: "v", Type: str, Nullable: true}}, nil),
			PrimaryKey: []string{"dt", "id"}, PartitionKeys: []string{"dt"}, Options: map[string]string{"bucket": "3"}},
			func(c int) ([][]any, RowKind) {
				var rows [][]any
				seen := map[int]bool{}
				for i := 0; i < 1+r.IntN(40); i++ {
					k := r.IntN(40)
					if !seen[k] {
						seen[k] = true
						rows = append(rows, []any{fmt.Sprintf("d%d", k%3), k, maybe(fmt.Sprintf("c%d-%d", c, r.IntN(100)))})
					}
				}
				if c == 3 {
					return rows[:1+len(rows)/3], Delete
				}
				return rows, Insert
			}},
		{"pu", TableDef{Schema: arrow.NewSchema([]arrow.Field{{Name: "k", Type: i64}, {Name: "a", Type: str, Nullable: true}, {Name: "b", Type: i32, Nullable: true}}, nil),
			PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2", "merge-engine": "partial-update"}},
			func(c int) ([][]any, RowKind) {
				var rows [][]any
				seen := map[int]bool{}
				for i := 0; i < 1+r.IntN(30); i++ {
					if k := r.IntN(20); !seen[k] {
						seen[k] = true
						rows = append(rows, []any{k, maybe(fmt.Sprintf("a%d", r.IntN(100))), maybe(r.IntN(100))})
					}
				}
				return rows, Insert
			}},
		{"agg", TableDef{Schema: arrow.NewSchema([]arrow.Field{{Name: "k", Type: i64}, {Name: "total", Type: i64, Nullable: true}, {Name: "last", Type: str, Nullable: true}}, nil),
			PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2", "merge-engine": "aggregation",
				"fields.total.aggregate-function": "sum", "fields.last.aggregate-function": "last_non_null_value"}},
			func(c int) ([][]any, RowKind) {
				var rows [][]any
				seen := map[int]bool{}
				for i := 0; i < 1+r.IntN(30); i++ {
					if k := r.IntN(20); !seen[k] {
						seen[k] = true
						rows = append(rows, []any{k, maybe(r.IntN(1000)), maybe(fmt.Sprintf("l%d", r.IntN(100)))})
					}
				}
				return rows, Insert
			}},
	}
	for _, c := range cases {
		id := Ident{Database: "db", Table: c.name}
		tbl, err := s.CreateTable(ctx, id, c.def, false)
		if err != nil {
			t.Fatal(err)
		}
		for commit := 0; commit < 4; commit++ {
			rows, kind := c.rows(commit)
			writeRows(t, tbl, mem, WriteOptions{}, kind, rows)
		}
		want := scanAll(t, tbl, ScanSpec{})
		got := joinRows(pypaimon(t, "read", dir, "db."+c.name)["db."+c.name])
		if !slices.Equal(got, want) {
			t.Errorf("table %s: pypaimon reads\n %q\nflightd reads\n %q", c.name, got, want)
		}
	}

	// pypaimon writes; flightd reads.
	written := pypaimon(t, "write", dir, fmt.Sprint(r.Int64N(1<<40)))
	for name, rows := range written {
		db, tname, _ := strings.Cut(name, ".")
		tbl, err := s.Table(ctx, Ident{Database: db, Table: tname})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, want := scanAll(t, tbl, ScanSpec{}), joinRows(rows); !slices.Equal(got, want) {
			t.Errorf("table %s written by pypaimon: flightd reads\n %q\npypaimon wrote\n %q", name, got, want)
		}
	}

	// flightd upserts every key of pypaimon's key table (2 buckets): with
	// another bucket function a key would be in two buckets and read twice.
	tbl, err := s.Table(ctx, Ident{Database: "py", Table: "pk"})
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	var want []string
	for _, row := range written["py.pk"] {
		var k int
		fmt.Sscan(row[1], &k)
		v := fmt.Sprintf("flightd-%d", k)
		rows = append(rows, []any{row[0], k, v})
		want = append(want, strings.Join([]string{row[0], row[1], v}, "|"))
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
	slices.Sort(want)
	if got := joinRows(pypaimon(t, "read", dir, "py.pk")["py.pk"]); !slices.Equal(got, want) {
		t.Errorf("py.pk after flightd's upserts: pypaimon reads\n %q\nwant\n %q", got, want)
	}
	if got := scanAll(t, tbl, ScanSpec{}); !slices.Equal(got, want) {
		t.Errorf("py.pk after flightd's upserts: flightd reads\n %q\nwant\n %q", got, want)
	}
}
