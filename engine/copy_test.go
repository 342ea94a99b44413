package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/engine"
)

// openFilesEngine opens an engine whose COPY reads and writes files of a
// fresh directory, which it returns.
func openFilesEngine(t *testing.T) (*engine.Engine, *memory.CheckedAllocator, string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	files := t.TempDir()
	e, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: t.TempDir(), SpillDir: t.TempDir(), FilesDir: files})
	if err != nil {
		t.Fatal(err)
	}
	return e, mem, files
}

const copyTable = "CREATE TABLE %s (i INT, b BIGINT, s STRING, d DOUBLE, m DECIMAL(10, 2), dt DATE, ts TIMESTAMP(6), f BOOLEAN)"

// randomCopyRows inserts n random rows (NULLs included) into table name.
func randomCopyRows(t *testing.T, s *engine.Session, rng *rand.Rand, name string, n int) {
	t.Helper()
	var vals []string
	lit := func(v string) string {
		if rng.IntN(6) == 0 {
			return "NULL"
		}
		return v
	}
	for range n {
		str := []string{"x", "a,b", "q\"uote", "line\nbreak", "ü", "; semi"}[rng.IntN(6)]
		vals = append(vals, fmt.Sprintf("(%s, %s, %s, %s, %s, %s, %s, %s)",
			lit(fmt.Sprint(rng.Int32N(1000)-500)), lit(fmt.Sprint(rng.Int64())), lit("'"+strings.ReplaceAll(str, "'", "''")+"'"),
			lit(fmt.Sprint(float64(rng.IntN(1e6))/8)), lit(fmt.Sprintf("%d.%02d", rng.IntN(1e6), rng.IntN(100))),
			lit(fmt.Sprintf("DATE '20%02d-%02d-%02d'", rng.IntN(50), 1+rng.IntN(12), 1+rng.IntN(28))),
			lit(fmt.Sprintf("TIMESTAMP '2024-05-%02d 10:11:12.%06d'", 1+rng.IntN(28), rng.IntN(1e6))),
			lit([]string{"TRUE", "FALSE"}[rng.IntN(2)])))
	}
	mustExec(t, s, "INSERT INTO "+name+" VALUES "+strings.Join(vals, ", "))
}

// TestCopyRoundTrip: COPY TO writes a table's rows to a Parquet or CSV
// file and COPY FROM appends them back in one commit, every value equal,
// on random rows (the seed is logged).
func TestCopyRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	e, mem, dir := openFilesEngine(t)
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, fmt.Sprintf(copyTable, "src"))
	randomCopyRows(t, s, rng, "src", 1+rng.IntN(300))
	want := rowSet(t, s, "SELECT * FROM src")
	for i, c := range []struct{ file, opts string }{
		{"out.parquet", ""},
		{"out.csv", ""},
		{"out2.csv", " (FORMAT csv, HEADER false, DELIMITER ';')"},
		{"sub/plain", " (FORMAT parquet)"},
	} {
		if strings.HasPrefix(c.file, "sub/") {
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		mustCount(t, s, "COPY src TO '"+c.file+"'"+c.opts, int64(len(want)))
		dst := fmt.Sprintf("dst%d", i)
		mustExec(t, s, fmt.Sprintf(copyTable, dst))
		mustCount(t, s, "COPY "+dst+" FROM '"+c.file+"'"+c.opts, int64(len(want)))
		if got := rowSet(t, s, "SELECT * FROM "+dst); !slices.Equal(got, want) {
			t.Fatalf("%s: read back\n%v\nwant\n%v", c.file, got, want)
		}
		if snaps := queryInt(t, s, "SELECT count(*) FROM "+dst+"$snapshots"); snaps != 1 {
			t.Fatalf("%s: COPY FROM made %d snapshots, want 1", c.file, snaps)
		}
	}
	// A query's rows, with a parameter.
	st, err := s.Prepare(context.Background(), "COPY (SELECT i, s FROM src WHERE i > 0 ORDER BY i) TO 'q.csv'", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.Exec(context.Background(), nil)
	if err != nil || n != queryInt(t, s, "SELECT count(*) FROM src WHERE i > 0") {
		t.Fatalf("COPY (query) TO: %d, %v", n, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "q.csv"))
	if err != nil || !strings.HasPrefix(string(data), "i,s\n") {
		t.Fatalf("q.csv: %q, %v", data, err)
	}
	// No rows: the header alone, as a CSV reader needs it to name the
	// columns.
	mustCount(t, s, "COPY (SELECT i, s FROM src WHERE false) TO 'none.csv'", 0)
	if data, err := os.ReadFile(filepath.Join(dir, "none.csv")); err != nil || string(data) != "i,s\n" {
		t.Fatalf("none.csv: %q, %v", data, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".copy-*"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestCopyConfined: COPY touches files of its directory only: without
// one, and for paths that leave it (.., absolute paths elsewhere, symbolic
// links out of it), it is refused (SQLSTATE 42501) and changes nothing.
func TestCopyConfined(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.csv")
	if err := os.WriteFile(secret, []byte("i\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e0, mem0 := openEngine(t, t.TempDir())
	s0 := e0.NewSession()
	mustExec(t, s0, "CREATE TABLE c (i INT)")
	for _, q := range []string{"COPY c FROM 'a.csv'", "COPY c TO 'a.csv'"} {
		_, err := exec(ctx, s0, nil, q)
		if !errors.Is(err, engine.ErrDenied) || engine.SQLState(err) != "42501" || !strings.Contains(err.Error(), "-files-dir") {
			t.Fatalf("%s without a files directory: %v", q, err)
		}
	}
	closeEngine(t, e0, mem0)

	e, mem, dir := openFilesEngine(t)
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE c (i INT)")
	mustExec(t, s, "INSERT INTO c VALUES (7)")
	if err := os.Symlink(secret, filepath.Join(dir, "link.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../secret.csv", filepath.Join(outside, "new.csv"), secret, "link.csv", "out/secret.csv", "out/new.csv", "a/../../x.csv", ""} {
		for _, q := range []string{"COPY c FROM '%s' (FORMAT csv)", "COPY c TO '%s' (FORMAT csv)"} {
			q := fmt.Sprintf(q, p)
			_, err := exec(ctx, s, nil, q)
			if p == "" {
				if err == nil || !strings.Contains(err.Error(), "needs a file path") {
					t.Fatalf("%s: %v", q, err)
				}
				continue
			}
			if p == "link.csv" && strings.Contains(q, " TO ") { // never written through
				if err == nil || !strings.Contains(err.Error(), "the file exists") {
					t.Fatalf("%s: %v", q, err)
				}
				continue
			}
			if !errors.Is(err, engine.ErrDenied) || engine.SQLState(err) != "42501" {
				t.Fatalf("%s: %v, want permission denied", q, err)
			}
		}
	}
	if got := rowSet(t, s, "SELECT * FROM c"); !slices.Equal(got, []string{"7"}) {
		t.Fatalf("table after refused COPYs: %v", got)
	}
	if names, _ := os.ReadDir(outside); len(names) != 1 {
		t.Fatalf("files written outside: %v", names)
	}
	// An absolute path inside the directory is its file.
	mustCount(t, s, "COPY c TO '"+filepath.Join(dir, "in.csv")+"'", 1)
	mustCount(t, s, "COPY c FROM 'in.csv'", 1)
}

// TestCopyBadInput: a bad file, a value of the wrong type in the middle of
// a long file, an existing output file, and bad options fail with the
// reason and change nothing.
func TestCopyBadInput(t *testing.T) {
	ctx := context.Background()
	e, mem, dir := openFilesEngine(t)
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE c (i INT, s STRING)")
	mustExec(t, s, "INSERT INTO c VALUES (1, 'one')")
	var b strings.Builder
	b.WriteString("i,s\n")
	for i := range 200_000 {
		fmt.Fprintf(&b, "%d,v%d\n", i, i)
	}
	b.WriteString("nope,x\n")
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("long.csv", b.String())
	write("junk.parquet", "PAR1 this is not parquet")
	write("exists.csv", "keep")
	if err := os.Mkdir(filepath.Join(dir, "d.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ q, want string }{
		{"COPY c FROM 'long.csv'", "nope"},
		{"COPY c FROM 'junk.parquet'", "not a readable Parquet file"},
		{"COPY c FROM 'missing.csv'", "no such file"},
		{"COPY c FROM 'd.csv'", "not a regular file"},
		{"COPY c TO 'exists.csv'", "the file exists"},
		{"COPY c TO 'nodir/x.csv'", "no such file"},
		{"COPY c FROM 'x.txt'", "cannot tell the format"},
		{"COPY c FROM 'x.csv' (FORMAT json)", "use parquet or csv"},
		{"COPY c FROM 'x.csv' (DELIMITER ';;')", "one character"},
		{"COPY c FROM 'x.parquet' (HEADER false)", "options of CSV"},
		{"COPY c FROM 'x.csv' (COMPRESSION zstd)", "unknown COPY option"},
		{"COPY nope FROM 'x.csv'", "not found"},
	} {
		_, err := exec(ctx, s, nil, c.q)
		if err == nil || !strings.Contains(err.Error(), c.want) || engine.KindOf(err) == engine.KindInternal {
			t.Fatalf("%s: %v (%v), want %q", c.q, err, engine.KindOf(err), c.want)
		}
	}
	if got := rowSet(t, s, "SELECT * FROM c"); !slices.Equal(got, []string{"1|one"}) {
		t.Fatalf("table after failed COPYs: %v", got)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "exists.csv")); string(data) != "keep" {
		t.Fatalf("exists.csv was changed: %q", data)
	}
}

// TestReadFiles: read_parquet and read_csv read files of the directory as
// tables: the rows COPY TO wrote, split over several files, equal to the
// table's (random rows, the seed logged), CSV types inferred from the
// values; outside the directory, refused.
func TestReadFiles(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	e, mem, dir := openFilesEngine(t)
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	// A column's type comes from its first 1,000 values, not the first
	// (arrow's inference made x BIGINT, and 2.5 failed the query).
	if err := os.WriteFile(filepath.Join(dir, "mixed.csv"), []byte("x,y,z\n1,true,\n2.5,,\n,false,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, s, "SELECT sum(x), count(*) FILTER (WHERE NOT y), count(z) FROM read_csv('mixed.csv')"); fmt.Sprint(got) != "[[3.5 1 0]]" {
		t.Fatalf("read_csv of mixed values: %v", got)
	}
	mustExec(t, s, fmt.Sprintf(copyTable, "src"))
	randomCopyRows(t, s, rng, "src", 1+rng.IntN(300))
	want := rowSet(t, s, "SELECT * FROM src")
	mustExec(t, s, "COPY (SELECT * FROM src WHERE i < 0) TO 'a.parquet'")
	mustExec(t, s, "COPY (SELECT * FROM src WHERE i >= 0 OR i IS NULL) TO 'b.parquet'")
	if got := rowSet(t, s, "SELECT * FROM read_parquet(ARRAY['a.parquet', 'b.parquet'])"); !slices.Equal(got, want) {
		t.Fatalf("read_parquet:\n%v\nwant\n%v", got, want)
	}
	mustExec(t, s, "COPY (SELECT * FROM src) TO 'c.parquet'")
	for _, q := range []string{"SELECT * FROM read_parquet('[ab].parquet')", "SELECT * FROM read_parquet(ARRAY['?.parquet', 'nope*'])"} {
		if _, _, err := query(ctx, s, q); q == "SELECT * FROM read_parquet(ARRAY['?.parquet', 'nope*'])" {
			if err == nil || !strings.Contains(err.Error(), "no file in the files directory matches") {
				t.Fatalf("%s: %v", q, err)
			}
		} else if got := rowSet(t, s, q); !slices.Equal(got, want) {
			t.Fatalf("%s:\n%v\nwant\n%v", q, got, want)
		}
	}
	if got := rowSet(t, s, "SELECT * FROM read_parquet('?.parquet')"); len(got) != 2*len(want) {
		t.Fatalf("read_parquet('?.parquet'): %d rows, want the %d of a, b and c", len(got), 2*len(want))
	}
	// A prepared query matches its pattern again each time it runs.
	st, err := s.Prepare(ctx, "SELECT * FROM read_parquet('?.parquet')", nil)
	if err != nil {
		t.Fatal(err)
	}
	countRows := func() int64 {
		t.Helper()
		op, err := st.Query(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		if err := op.Open(ctx); err != nil {
			t.Fatal(err)
		}
		var n int64
		for {
			b, err := op.Next(ctx)
			if errors.Is(err, io.EOF) {
				return n
			}
			if err != nil {
				t.Fatal(err)
			}
			n += b.NumRows()
		}
	}
	before := countRows()
	mustExec(t, s, "COPY (SELECT * FROM src) TO 'd.parquet'")
	if after := countRows(); after != before+int64(len(want)) {
		t.Fatalf("the prepared read_parquet('?.parquet') read %d rows, then %d after d.parquet was written; want %d more", before, after, len(want))
	}
	n := int64(len(want))
	if got := queryInt(t, s, "SELECT count(*) FROM read_parquet('b.parquet') AS f JOIN src ON f.b = src.b"); got != queryInt(t, s, "SELECT count(*) FROM src WHERE (i >= 0 OR i IS NULL) AND b IS NOT NULL") {
		t.Fatalf("join of read_parquet with its table: %d rows", got)
	}
	mustExec(t, s, "COPY (SELECT i, b, d, f FROM src) TO 'n.csv'")
	mustExec(t, s, "COPY (SELECT i, b, d, f FROM src) TO 'n2.csv' (HEADER false, DELIMITER ';')")
	wantNums := rowSet(t, s, "SELECT i, b, d, f FROM src")
	for _, q := range []string{
		"SELECT * FROM read_csv('n.csv')",
		"SELECT * FROM read_csv('n2.csv', header => FALSE, delimiter => ';')",
		"SELECT * FROM TABLE(read_csv(ARRAY['n.csv']))",
	} {
		got := rowSet(t, s, q)
		if int64(len(got)) != n {
			t.Fatalf("%s: %d rows, want %d", q, len(got), n)
		}
		if q == "SELECT * FROM read_csv('n.csv')" && !slices.Equal(rowSet(t, s, "SELECT CAST(i AS INT), b, d, f FROM read_csv('n.csv')"), wantNums) {
			t.Fatalf("%s: values differ from the table's", q)
		}
	}
	if plan := rows(t, s, "EXPLAIN SELECT * FROM read_parquet('a.parquet')"); !strings.Contains(fmt.Sprint(plan), "ReadFiles parquet [a.parquet]") {
		t.Fatalf("EXPLAIN: %v", plan)
	}
	mustExec(t, s, "COPY (SELECT s FROM src) TO 'other.parquet'")
	for _, c := range []struct{ q, want string }{
		{"SELECT * FROM read_parquet('../x.parquet')", "leaves the files directory"},
		{"SELECT * FROM read_parquet('../*.parquet')", "leaves the files directory"},
		{"SELECT * FROM read_parquet('')", "an empty path names no file"},
		{"SELECT * FROM read_parquet('missing.parquet')", "no such file"},
		{"SELECT * FROM read_parquet(ARRAY['a.parquet', 'other.parquet'])", "unlike"},
		{"SELECT * FROM read_parquet('a.parquet', header => TRUE)", "takes no options"},
		{"SELECT * FROM read_csv('n.csv', quote => '\"')", "unknown option"},
		{"SELECT * FROM read_csv(ARRAY[])", "takes a path"},
		{"SELECT * FROM read_parquet(1)", "takes a path"},
	} {
		_, _, err := query(ctx, s, c.q)
		if err == nil || !strings.Contains(err.Error(), c.want) || engine.KindOf(err) == engine.KindInternal {
			t.Fatalf("%s: %v, want %q", c.q, err, c.want)
		}
	}
	e0, mem0 := openEngine(t, t.TempDir())
	defer closeEngine(t, e0, mem0)
	_, err = e0.NewSession().Prepare(ctx, "SELECT * FROM read_parquet('a.parquet')", nil)
	if !errors.Is(err, engine.ErrDenied) || engine.SQLState(err) != "42501" {
		t.Fatalf("read_parquet without a files directory: %v", err)
	}
}

// TestCopyToSeenWhole: a reader polling the name COPY TO writes sees no
// file or the whole file, never part of one (the rows are written under
// a temporary name and linked to the name when complete).
func TestCopyToSeenWhole(t *testing.T) {
	e, mem, dir := openFilesEngine(t)
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE big (i BIGINT, s STRING)")
	digits := "(VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9))"
	mustExec(t, s, "INSERT INTO big SELECT a.x * 10000 + b.x * 1000 + c.x * 100 + d.x * 10 + f.x, 'row' FROM "+
		digits+" a(x), "+digits+" b(x), "+digits+" c(x), "+digits+" d(x), "+digits+" f(x)")
	for round := range 3 {
		name := fmt.Sprintf("big%d.csv", round)
		stop := make(chan struct{})
		seen := make(chan error, 1)
		go func() {
			partial := 0
			for {
				select {
				case <-stop:
					if partial > 0 {
						seen <- fmt.Errorf("%d reads saw part of the file", partial)
					}
					close(seen)
					return
				default:
				}
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err == nil && strings.Count(string(data), "\n") != 100001 {
					partial++
				}
			}
		}()
		mustCount(t, s, "COPY big TO '"+name+"'", 100000)
		close(stop)
		if err := <-seen; err != nil {
			t.Fatal(err)
		}
	}
}

// TestCopyNotUTF8: a CSV or Parquet file whose strings are not UTF-8 (at
// the top level or nested in a list) is refused by COPY FROM and by
// read_csv / read_parquet with 22021, naming the row and column, and
// changes nothing. arrow-go's readers pass any bytes on: COPY stored them,
// a string column that is invalid Arrow (pyarrow failed to decode it).
func TestCopyNotUTF8(t *testing.T) {
	ctx := context.Background()
	e, mem, dir := openFilesEngine(t)
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE c (i INT, s STRING)")
	mustExec(t, s, "CREATE TABLE l (i INT, s ARRAY<STRING>)")
	mustExec(t, s, "INSERT INTO c VALUES (1, 'one')")
	if err := os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("i,s\n1,ok\n2,é\n3,a\xff\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Past the first batch (64Ki rows), the row counts the batches before.
	var long strings.Builder
	long.WriteString("i,s\n")
	for i := range 70_000 {
		fmt.Fprintf(&long, "%d,v\n", i)
	}
	long.WriteString("0,\xc0\n")
	if err := os.WriteFile(filepath.Join(dir, "long.csv"), []byte(long.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	writeParquet := func(name string, cols ...arrow.Array) {
		t.Helper()
		fields := []arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "s", Type: cols[1].DataType(), Nullable: true}}
		rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(cols[0].Len()))
		defer rec.Release()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := pqarrow.NewFileWriter(rec.Schema(), f, nil, pqarrow.DefaultWriterProps())
		if err == nil {
			err = w.Write(rec)
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ib := array.NewInt32Builder(mem)
	ib.AppendValues([]int32{1, 2}, nil)
	ids := ib.NewArray()
	defer ids.Release()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"fine", "\xc3("}, nil) // a Go string holds any bytes
	strs := sb.NewArray()
	defer strs.Release()
	writeParquet("bad.parquet", ids, strs)
	lb := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	lb.Append(true)
	vb.Append("x")
	lb.Append(true)
	vb.AppendValues([]string{"y", "\xfe"}, nil)
	lists := lb.NewArray()
	defer lists.Release()
	writeParquet("nested.parquet", ids, lists)
	sb.Release()
	ib.Release()
	lb.Release()

	for _, c := range []struct{ q, want string }{
		{"COPY c FROM 'bad.csv'", `row 3, column s: "a\xff"`},
		{"COPY c FROM 'long.csv'", `row 70001, column s: "\xc0"`},
		{"COPY c FROM 'bad.parquet'", `row 2, column s: "\xc3("`},
		{"COPY l FROM 'nested.parquet'", `a value nested in rows 1 to 2, column s: "\xfe"`},
		{"SELECT count(*) FROM read_csv('bad.csv')", `row 3, column s`},
		{"SELECT * FROM read_parquet('bad.parquet')", `row 2, column s`},
	} {
		_, err := exec(ctx, s, nil, c.q)
		if strings.HasPrefix(c.q, "SELECT") {
			_, _, err = query(ctx, s, c.q)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || engine.SQLState(err) != "22021" {
			t.Errorf("%s: %v (SQLSTATE %s), want %s and 22021", c.q, err, engine.SQLState(err), c.want)
		}
	}
	if got := rowSet(t, s, "SELECT * FROM c"); !slices.Equal(got, []string{"1|one"}) {
		t.Fatalf("table after failed COPYs: %v", got)
	}
	if got := queryInt(t, s, "SELECT count(*) FROM l"); got != 0 {
		t.Fatalf("nested table after the failed COPY: %d rows", got)
	}
}
