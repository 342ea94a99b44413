package tablestore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// paimonReader runs one of Paimon's implementations (pypaimon, Paimon
// Java) with args and returns the rows it prints, by table.
type paimonReader func(t *testing.T, args ...string) map[string][][]string

// paimonJava runs interop/paimon-java's PaimonInterop (Paimon Java 1.3.1
// from Maven) and decodes its JSON output. Without Maven or the artifacts
// in the local repository the test skips; in CI (CI=true) it fails instead
// once .ci/run builds interop/paimon-java.
func paimonJava(t *testing.T, args ...string) map[string][][]string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "interop", "paimon-java")
	missing := func(format string, a ...any) {
		t.Helper()
		ci, _ := os.ReadFile(filepath.Join(root, ".ci", "run"))
		if os.Getenv("CI") != "" && strings.Contains(string(ci), "interop/paimon-java") {
			t.Fatalf(format, a...)
		}
		t.Skipf(format, a...)
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		missing("Maven not found: %v", err)
	}
	javaOnce.Do(func() {
		build := exec.Command("mvn", "-o", "-q", "-B", "compile", "dependency:build-classpath", "-Dmdep.outputFile=target/cp.txt")
		build.Dir = dir
		if out, err := build.CombinedOutput(); err != nil {
			javaErr = fmt.Errorf("%v\n%s", err, out)
			return
		}
		cp, err := os.ReadFile(filepath.Join(dir, "target", "cp.txt"))
		javaCP, javaErr = filepath.Join(dir, "target", "classes")+string(os.PathListSeparator)+string(cp), err
	})
	if javaErr != nil {
		missing("Paimon Java not built offline (mvn -o in interop/paimon-java): %v", javaErr)
	}
	cmd := exec.Command("java", append([]string{"-cp", javaCP, "flightd.PaimonInterop"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Paimon Java %v: %v\n%s", args, err, stderr.String())
	}
	var res map[string][][]string
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("Paimon Java %v: %v: %s", args, err, out)
	}
	return res
}

var (
	javaOnce sync.Once
	javaCP   string
	javaErr  error
)

// TestPaimonInterop: pypaimon reads the tables flightd writes with the
// rows flightd reads, flightd reads pypaimon's tables with the rows
// pypaimon wrote, and flightd's upserts into pypaimon's bucketed key table
// land in the buckets pypaimon's writer uses (pypaimon then reads each key
// once, with flightd's value).
func TestPaimonInterop(t *testing.T) {
	t.Parallel() // mostly waiting on Python: overlaps the Java test
	testPaimonInterop(t, pypaimon, "py")
}

// TestPaimonJavaInterop: the same with Apache Paimon Java.
func TestPaimonJavaInterop(t *testing.T) {
	t.Parallel()
	testPaimonInterop(t, paimonJava, "java")
}

// testPaimonInterop checks one Paimon implementation against flightd:
// flightd's append tables and key tables of every merge engine
// (partitioned, several buckets or none set, updates and deletes) read the
// same in both; the tables the implementation writes (in database db: an
// append table app and a key table pk partitioned by dt, keyed by dt and
// id, in 2 buckets) read in flightd as written; flightd's upserts into pk
// land in the implementation's buckets.
func testPaimonInterop(t *testing.T, paimon paimonReader, db string) {
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
	// keyed makes up to n rows of distinct keys below keys, by row(k).
	keyed := func(n, keys int, row func(k int) []any) [][]any {
		var rows [][]any
		seen := map[int]bool{}
		for i := 0; i < 1+r.IntN(n); i++ {
			if k := r.IntN(keys); !seen[k] {
				seen[k] = true
				rows = append(rows, row(k))
			}
		}
		return rows
	}
	kv := arrow.NewSchema([]arrow.Field{{Name: "k", Type: i64}, {Name: "a", Type: str, Nullable: true}, {Name: "b", Type: i32, Nullable: true}}, nil)
	kvRows := func(c int) ([][]any, RowKind) {
		return keyed(30, 20, func(k int) []any {
			return []any{k, maybe(fmt.Sprintf("a%d-%d", c, r.IntN(100))), maybe(r.IntN(100))}
		}), Insert
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
				rows := keyed(40, 40, func(k int) []any {
					return []any{fmt.Sprintf("d%d", k%3), k, maybe(fmt.Sprintf("c%d-%d", c, r.IntN(100)))}
				})
				if c == 3 {
					return rows[:1+len(rows)/3], Delete
				}
				return rows, Insert
			}},
		// No bucket option: flightd writes one fixed bucket, which Paimon
		// must not take for dynamic bucketing.
		{"onebucket", TableDef{Schema: kv, PrimaryKey: []string{"k"}},
			func(c int) ([][]any, RowKind) {
				rows, _ := kvRows(c)
				if c == 3 {
					return rows[:1+len(rows)/2], Delete
				}
				return rows, Insert
			}},
		{"pu", TableDef{Schema: kv, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2", "merge-engine": "partial-update"}}, kvRows},
		// Level-0 files of another codec than file.compression's.
		{"pklz4", TableDef{Schema: kv, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2", "file.compression.per.level": "0:lz4,1:zstd"}}, kvRows},
		{"applz4", TableDef{Schema: kv, Options: map[string]string{"file.compression.per.level": "0:lz4"}}, kvRows},
		// Small commits whose row groups compaction concatenates (below
		// minCopyRows, 4 here, of long strings): one row group of several
		// pages.
		{"appconcat", TableDef{Schema: kv, Options: map[string]string{"file.row-group-rows": "64"}},
			func(c int) ([][]any, RowKind) {
				var rows [][]any
				for i := 0; i < 1+r.IntN(3); i++ {
					rows = append(rows, []any{c*10 + i, strings.Repeat(fmt.Sprintf("a%d-", r.IntN(100)), 20_000), maybe(r.IntN(100))})
				}
				return rows, Insert
			}},
		{"fr", TableDef{Schema: kv, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2", "merge-engine": "first-row"}}, kvRows},
		{"agg", TableDef{Schema: arrow.NewSchema([]arrow.Field{{Name: "k", Type: i64}, {Name: "total", Type: i64, Nullable: true}, {Name: "last", Type: str, Nullable: true}}, nil),
			PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2", "merge-engine": "aggregation",
				"fields.total.aggregate-function": "sum", "fields.last.aggregate-function": "last_non_null_value"}},
			func(c int) ([][]any, RowKind) {
				return keyed(30, 20, func(k int) []any {
					return []any{k, maybe(r.IntN(1000)), maybe(fmt.Sprintf("l%d", r.IntN(100)))}
				}), Insert
			}},
	}
	compactFirst := map[string]bool{"appconcat": true}
	// One run of Paimon reads every table: starting it dominates the test.
	read := []string{"read", dir}
	want := map[string][]string{}
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
		if compactFirst[c.name] {
			if err := tbl.Compact(ctx, true); err != nil {
				t.Fatal(err)
			}
			live := liveEntries(t, tbl)
			if len(live) != 1 || concatenatedPages(t, tbl, live[0]) < 4 {
				t.Fatalf("%s: %d files after compaction, want 1 of 4 pages a column", c.name, len(live))
			}
		}
		// No compaction of the others before Paimon reads: its first-row
		// scans skip level 0, which flightd's commits move out as Paimon's
		// do.
		want["db."+c.name] = scanAll(t, tbl, ScanSpec{})
		read = append(read, "db."+c.name)
	}
	got := paimon(t, read...)
	for name, rows := range want {
		if g := joinRows(got[name]); !slices.Equal(g, rows) {
			t.Errorf("table %s: Paimon reads\n %q\nflightd reads\n %q", name, g, rows)
		}
	}

	// Paimon upserts keys 0-11 into flightd's key table without a bucket
	// option (bucket 1): in dynamic bucket mode it would keep an index of
	// its own and could place a key beside flightd's copy.
	tbl, err := s.Table(ctx, Ident{Database: "db", Table: "onebucket"})
	if err != nil {
		t.Fatal(err)
	}
	merged := map[string]string{}
	for _, row := range scanAll(t, tbl, ScanSpec{}) {
		k, _, _ := strings.Cut(row, "|")
		merged[k] = row
	}
	const upserted = 12
	afterUpsert := paimon(t, "upsert", dir, "db.onebucket", fmt.Sprint(upserted))["db.onebucket"]
	for k := range upserted {
		merged[fmt.Sprint(k)] = fmt.Sprintf("%d|paimon-%d|%d", k, k, k)
	}
	upserts := slices.Sorted(maps.Values(merged))
	if got := joinRows(afterUpsert); !slices.Equal(got, upserts) {
		t.Errorf("db.onebucket after Paimon's upserts: Paimon reads\n %q\nwant\n %q", got, upserts)
	}
	if got := scanAll(t, tbl, ScanSpec{}); !slices.Equal(got, upserts) {
		t.Errorf("db.onebucket after Paimon's upserts: flightd reads\n %q\nwant\n %q", got, upserts)
	}

	// Paimon writes; flightd reads.
	written := paimon(t, "write", dir, fmt.Sprint(r.Int64N(1<<40)))
	for name, rows := range written {
		db, tname, _ := strings.Cut(name, ".")
		tbl, err := s.Table(ctx, Ident{Database: db, Table: tname})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, want := scanAll(t, tbl, ScanSpec{}), joinRows(rows); !slices.Equal(got, want) {
			t.Errorf("table %s written by Paimon: flightd reads\n %q\nPaimon wrote\n %q", name, got, want)
		}
	}

	// flightd upserts every key of Paimon's key table (2 buckets): with
	// another bucket function a key would be in two buckets and read twice.
	pk := db + ".pk"
	tbl, err = s.Table(ctx, Ident{Database: db, Table: "pk"})
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	var pkWant []string
	for _, row := range written[pk] {
		var k int
		fmt.Sscan(row[1], &k)
		v := fmt.Sprintf("flightd-%d", k)
		rows = append(rows, []any{row[0], k, v})
		pkWant = append(pkWant, strings.Join([]string{row[0], row[1], v}, "|"))
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
	slices.Sort(pkWant)
	if got := joinRows(paimon(t, "read", dir, pk)[pk]); !slices.Equal(got, pkWant) {
		t.Errorf("%s after flightd's upserts: Paimon reads\n %q\nwant\n %q", pk, got, pkWant)
	}
	if got := scanAll(t, tbl, ScanSpec{}); !slices.Equal(got, pkWant) {
		t.Errorf("%s after flightd's upserts: flightd reads\n %q\nwant\n %q", pk, got, pkWant)
	}
}
