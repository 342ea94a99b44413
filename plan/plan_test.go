package plan_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/datadriven"

	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

var timeRe = regexp.MustCompile(`time=[0-9.]+[a-zµ]+`)

func newHarness(t *testing.T, opts plan.Options) (*slt.InProc, *memory.CheckedAllocator) {
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
// [disable=rule,...]` prints the plan, `query` prints rows, `error` prints a
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
					if a.Key == "disable" {
						for _, v := range a.Vals {
							opts.DisabledRules = append(opts.DisabledRules, strings.Split(v, ",")...)
						}
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

// TestTPCDS creates the TPC-DS schema and binds and plans all 99 queries;
// each must bind, and each must also run on the empty tables.
func TestTPCDS(t *testing.T) {
	root := "/work/shared/bench/tpcds"
	if _, err := os.Stat(root); err != nil {
		root = "../../shared/bench/tpcds"
		if _, err := os.Stat(root); err != nil {
			t.Skip("TPC-DS kit not present")
		}
	}
	h, _ := newHarness(t, plan.Options{})
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
	queries, _ := filepath.Glob(filepath.Join(root, "queries", "*.sql"))
	bound, ran := 0, 0
	var failures []string
	for _, f := range queries {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		if _, err := h.Bind(string(src)); err != nil {
			failures = append(failures, fmt.Sprintf("%s: bind: %v", name, err))
			continue
		}
		bound++
		if _, _, err := h.Query(string(src)); err != nil {
			failures = append(failures, fmt.Sprintf("%s: run: %v", name, err))
			continue
		}
		ran++
	}
	t.Logf("TPC-DS: %d of %d queries bind, %d run on empty tables", bound, len(queries), ran)
	for _, f := range failures {
		t.Log(f)
	}
	if bound < 80 {
		t.Errorf("only %d TPC-DS queries bind", bound)
	}
}
