package plan_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/datadriven"

	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

var timeRe = regexp.MustCompile(`time=[0-9.]+[a-zµ]+`)

func newHarness(t testing.TB, opts plan.Options) (*slt.InProc, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	h, err := slt.NewInProc(context.Background(), t.TempDir(), mem, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
		mem.AssertSize(t, 0)
	})
	return h, mem
}

// TestExplain runs testdata/explain: `exec` runs statements, `explain
// [disable=rule,...] [min-parallel-groups=n]` prints the plan, `query` prints rows, `error` prints a
// bind error with its caret.
func TestExplain(t *testing.T) {
	datadriven.Walk(t, "testdata/explain", func(t *testing.T, path string) {
		h, _ := newHarness(t, plan.Options{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "exec":
				if err := h.Exec(d.Input); err != nil {
					return "error: " + err.Error() + "\n"
				}
				return ""
			case "explain":
				var opts plan.Options
				for _, a := range d.CmdArgs {
					switch a.Key {
					case "disable":
						for _, v := range a.Vals {
							opts.DisabledRules = append(opts.DisabledRules, strings.Split(v, ",")...)
						}
					case "min-parallel-groups":
						n, err := strconv.ParseFloat(a.Vals[0], 64)
						if err != nil {
							t.Fatal(err)
						}
						opts.MinParallelGroups = n
					}
				}
				ast, err := sql.ParseOne(d.Input)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				b, err := plan.Bind(context.Background(), ast, h, opts)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				q, ok := b.(*plan.Query)
				if !ok {
					return fmt.Sprintf("not a query: %T\n", b)
				}
				return q.Explain()
			case "analyze":
				b, err := h.Bind(d.Input)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				text, err := h.Analyze(b.(*plan.Query), nil)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return timeRe.ReplaceAllString(text, "time=X")
			case "query":
				_, rows, err := h.Query(d.Input)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return strings.Join(slt.Render(rows, ""), "\n") + "\n"
			case "error":
				_, err := h.Bind(d.Input)
				if err == nil {
					return "no error\n"
				}
				var se *sql.Error
				if errors.As(err, &se) {
					return se.Snippet(d.Input) + "\n"
				}
				return "unpositioned: " + err.Error() + "\n"
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

// TestParams binds a query with placeholders once and runs it with several
// parameter rows, as a prepared statement would.
func TestParams(t *testing.T) {
	h, mem := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (a BIGINT NOT NULL, b VARCHAR, PRIMARY KEY (a) NOT ENFORCED); INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, NULL)"); err != nil {
		t.Fatal(err)
	}
	b, err := h.Bind("SELECT b FROM t WHERE a >= ? AND a < $2 ORDER BY a LIMIT 5")
	if err == nil {
		t.Fatal("mixing ? and $n must fail")
	}
	b, err = h.Bind("SELECT b FROM t WHERE a >= ? AND b <> ? ORDER BY a LIMIT ?")
	if err != nil {
		t.Fatal(err)
	}
	q := b.(*plan.Query)
	ps := q.Params()
	if ps == nil || len(ps.Fields()) != 3 {
		t.Fatalf("params schema: %v", ps)
	}
	want := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64}
	for i, f := range ps.Fields() {
		if !arrow.TypeEqual(f.Type, want[i]) {
			t.Fatalf("param %d: type %s, want %s", i+1, f.Type, want[i])
		}
	}
	run := func(a int64, b string, limit int64) string {
		bld := array.NewRecordBuilder(mem, ps)
		defer bld.Release()
		bld.Field(0).(*array.Int64Builder).Append(a)
		bld.Field(1).(*array.StringBuilder).Append(b)
		bld.Field(2).(*array.Int64Builder).Append(limit)
		rec := bld.NewRecordBatch()
		defer rec.Release()
		rows, err := h.QueryParams(q, rec)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(slt.Render(rows, ""), ",")
	}
	if got := run(1, "zz", 10); got != "x,y" {
		t.Fatalf("run 1: %q", got)
	}
	if got := run(2, "y", 10); got != "" {
		t.Fatalf("run 2: %q", got)
	}
	if got := run(1, "q", 1); got != "x" {
		t.Fatalf("run 3: %q", got)
	}
	if _, err := h.QueryParams(q, nil); !errors.Is(err, plan.ErrParams) {
		t.Fatalf("missing params: %v", err)
	}
	// A bound query is immutable: concurrent executions share it.
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			bld := array.NewRecordBuilder(mem, ps)
			defer bld.Release()
			bld.Field(0).(*array.Int64Builder).Append(int64(1 + i%3))
			bld.Field(1).(*array.StringBuilder).Append("zz")
			bld.Field(2).(*array.Int64Builder).Append(10)
			rec := bld.NewRecordBatch()
			defer rec.Release()
			rows, err := h.QueryParams(q, rec)
			if err != nil {
				errs <- err.Error()
				return
			}
			want := map[int]int{0: 2, 1: 1, 2: 0}[i%3]
			if len(rows) != want {
				errs <- fmt.Sprintf("execution %d: %d rows, want %d", i, len(rows), want)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// INSERT parameters take the target column types.
	b, err = h.Bind("INSERT INTO t VALUES (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	ins := b.(*plan.Insert)
	if f := ins.Source.Params().Fields(); !arrow.TypeEqual(f[0].Type, arrow.PrimitiveTypes.Int64) || !arrow.TypeEqual(f[1].Type, arrow.BinaryTypes.String) {
		t.Fatalf("insert params: %v", ins.Source.Params())
	}
}

// TestTPCDS creates the TPC-DS schema, binds and plans all 99 queries,
// then fills every table with random rows (keys in small ranges so joins
// match) and runs them all: the gauge of completeness.
func TestTPCDS(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	root := createTPCDS(t, h)
	queries, _ := filepath.Glob(filepath.Join(root, "queries", "*.sql"))
	run := func(stage string) (bound, ran int) {
		var failures []string
		nonEmpty := 0
		for _, f := range queries {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(f)
			b, err := h.Bind(string(src))
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: bind: %v", name, err))
				continue
			}
			if err := plan.CheckPhysical(b.(*plan.Query)); err != nil {
				failures = append(failures, fmt.Sprintf("%s: physical plan: %v", name, err))
				continue
			}
			bound++
			_, rows, err := h.Query(string(src))
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: run: %v", name, err))
				continue
			}
			ran++
			if len(rows) > 0 {
				nonEmpty++
			}
		}
		t.Logf("TPC-DS %s: %d of %d queries bind, %d run, %d return rows", stage, bound, len(queries), ran, nonEmpty)
		for _, f := range failures {
			t.Log(f)
		}
		return bound, ran
	}
	if bound, ran := run("empty tables"); bound < len(queries) || ran < len(queries) {
		t.Errorf("TPC-DS on empty tables: %d bind, %d run, want %d", bound, ran, len(queries))
	}
	seed := time.Now().UnixNano()
	t.Logf("data seed %d", seed)
	fillRandom(t, h, rand.New(rand.NewSource(seed)), 40)
	if _, ran := run("random data"); ran < len(queries)-5 {
		t.Errorf("TPC-DS on random data: only %d queries run", ran)
	}
}

// createTPCDS creates the TPC-DS tables in h and returns the kit's
// directory (the test is skipped without the kit).
func createTPCDS(t testing.TB, h *slt.InProc) string {
	root := "../../shared/bench/tpcds" // shared/ beside the repository
	if _, err := os.Stat(root); err != nil {
		t.Skip("TPC-DS kit not present")
	}
	schemas, _ := filepath.Glob(filepath.Join(root, "schema", "*.sql"))
	for _, f := range schemas {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Exec(string(src)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return root
}

// fillRandom inserts n random rows into every table of the default database.
func fillRandom(t testing.TB, h *slt.InProc, rng *rand.Rand, n int) {
	tables, err := h.Tables(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"'Books'", "'Home'", "'Music'", "'TN'", "'CA'", "'M'", "'F'", "'S'", "'Y'", "'N'", "'Unknown'", "'Women'", "'Men'", "'ese'", "'pri'"}
	for _, name := range tables {
		tb, _, err := h.Table(context.Background(), tablestoreIdent(name))
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for i := 0; i < n; i++ {
			var vals []string
			for _, f := range tb.Schema().Fields() {
				if f.Nullable && rng.Intn(20) == 0 {
					vals = append(vals, "NULL")
					continue
				}
				switch f.Type.ID() {
				case arrow.INT32, arrow.INT64:
					if strings.HasSuffix(f.Name, "_sk") || strings.HasSuffix(f.Name, "_number") {
						vals = append(vals, fmt.Sprint(1+rng.Intn(20)))
					} else if strings.Contains(f.Name, "year") {
						vals = append(vals, fmt.Sprint(1998+rng.Intn(6)))
					} else {
						vals = append(vals, fmt.Sprint(rng.Intn(100)))
					}
				case arrow.DECIMAL128:
					vals = append(vals, fmt.Sprintf("%d.%02d", rng.Intn(200), rng.Intn(100)))
				case arrow.DATE32:
					vals = append(vals, fmt.Sprintf("DATE '%d-%02d-%02d'", 1998+rng.Intn(6), 1+rng.Intn(12), 1+rng.Intn(28)))
				default:
					vals = append(vals, words[rng.Intn(len(words))])
				}
			}
			rows = append(rows, "("+strings.Join(vals, ", ")+")")
		}
		if err := h.Exec("INSERT INTO " + name + " VALUES " + strings.Join(rows, ", ")); err != nil {
			t.Fatalf("fill %s: %v", name, err)
		}
	}
}

func tablestoreIdent(name string) tablestore.Ident {
	return tablestore.Ident{Database: "default", Table: name}
}

// TestSeriesParams: range and generate_series take parameters for their
// integer arguments, read when the prepared statement runs; a NULL one
// gives no rows, a zero step or a value that is not an integer fails.
func TestSeriesParams(t *testing.T) {
	h, mem := newHarness(t, plan.Options{})
	run := func(query string, vals ...any) (string, error) {
		t.Helper()
		b, err := h.Bind(query)
		if err != nil {
			t.Fatal(err)
		}
		q := b.(*plan.Query)
		bld := array.NewRecordBuilder(mem, q.Params())
		defer bld.Release()
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
				bld.Field(i).AppendNull()
			case int64:
				bld.Field(i).(*array.Int64Builder).Append(v)
			}
		}
		rec := bld.NewRecordBatch()
		defer rec.Release()
		rows, err := h.QueryParams(q, rec)
		return strings.Join(slt.Render(rows, ""), ","), err
	}
	for _, c := range []struct {
		query string
		vals  []any
		want  string
	}{
		{"SELECT * FROM range(?)", []any{int64(3)}, "0,1,2"},
		{"SELECT * FROM range(?)", []any{int64(5)}, "0,1,2,3,4"},
		{"SELECT * FROM range(1, ?, 2)", []any{int64(6)}, "1,3,5"},
		{"SELECT * FROM generate_series($1, $2, $3)", []any{int64(3), int64(1), int64(-1)}, "3,2,1"},
		{"SELECT g FROM generate_series(?, 2) AS g", []any{nil}, ""},
		{"SELECT * FROM range(?) LIMIT ?", []any{int64(9223372036854775807), int64(2)}, "0,1"},
	} {
		got, err := run(c.query, c.vals...)
		if err != nil || got != c.want {
			t.Errorf("%s with %v: %q, %v; want %q", c.query, c.vals, got, err, c.want)
		}
	}
	if _, err := run("SELECT * FROM range(0, 5, ?)", int64(0)); err == nil || !strings.Contains(err.Error(), "step") {
		t.Errorf("zero step: %v", err)
	}
	b, err := h.Bind("SELECT * FROM range(?)")
	if err != nil {
		t.Fatal(err)
	}
	if f := b.(*plan.Query).Params().Field(0); !arrow.TypeEqual(f.Type, arrow.PrimitiveTypes.Int64) {
		t.Errorf("parameter type %s, want BIGINT", f.Type)
	}
	if _, err := h.Bind("SELECT * FROM range(?, 'x')"); err == nil || !strings.Contains(err.Error(), "integer arguments") {
		t.Errorf("string argument beside a parameter: %v", err)
	}
}
