package difftest

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/internal/flink"
	"github.com/flightd/flightd/plan"
)

// explainFlinkBug returns the name of the first rule of Flink's bugs
// explaining c, "" if none.
func explainFlinkBug(c *flinkCase) string {
	for _, r := range flinkRules {
		if r.class == FlinkBug && r.match(nil, c) {
			return r.name
		}
	}
	return ""
}

// TestFlinkErrorRules checks that the rules about Flink's failures explain
// their failures only where flightd answered.
func TestFlinkErrorRules(t *testing.T) {
	answered := &tpcds.Result{Rows: [][]tpcds.Value{{{Kind: tpcds.KNull}}}}
	for _, tc := range []struct {
		c    flinkCase
		rule bool
	}{
		{flinkCase{sql: "SELECT 1", kerr: "IndexOutOfBoundsException: Index: 3, Size: 1", got: answered}, true},
		{flinkCase{sql: "SELECT 1", kerr: "TableException: unexpected correlate variable $cor44 in the plan", got: answered}, true},
		{flinkCase{sql: "SELECT 1", kerr: "IndexOutOfBoundsException: Index: 3, Size: 1", ferr: errors.New("x")}, false},
		{flinkCase{sql: "SELECT 1", kerr: "SqlValidatorException: Column 'x' not found", got: answered}, false},
		{flinkCase{sql: "SELECT last_value((a.k - a.k)) OVER (ORDER BY a.k) AS c0 FROM t1 AS a", kerr: "ParseException: Encountered \"(\" at line 1, column 17.", got: answered}, true},
		{flinkCase{sql: "SELECT last_value(a.k) OVER (ORDER BY a.k) AS c0 FROM t1 AS a", kerr: "ParseException: Encountered \"(\" at line 1, column 17.", got: answered}, false},
		{flinkCase{sql: "SELECT DISTINCT a1.s AS c0 FROM t1 AS a1 ORDER BY 1", kerr: "SqlValidatorException: Expression 'a1.d' is not in the select clause", got: answered}, true},
		{flinkCase{sql: "SELECT a1.s AS c0 FROM t1 AS a1 ORDER BY 1", kerr: "SqlValidatorException: Expression 'a1.d' is not in the select clause", got: answered}, false},
		{flinkCase{sql: "SELECT rank() OVER (ORDER BY 1) AS c0 FROM t1", kerr: "ValidationException: Over Agg: The window rank function requires order by clause with non-constant fields.", got: answered}, true},
		{flinkCase{sql: "SELECT count(*) AS c0 FROM t1 GROUP BY ROLLUP (k)", want: &tpcds.Result{}, got: answered, diff: "1 rows, want 0"}, true},
		{flinkCase{sql: "SELECT count(*) AS c0 FROM t1 GROUP BY k", want: &tpcds.Result{}, got: answered, diff: "1 rows, want 0"}, false},
		{flinkCase{sql: "SELECT 1", kerr: "", ferr: errors.New("overflow"), want: answered}, false},
	} {
		if got := explainFlinkBug(&tc.c) != ""; got != tc.rule {
			t.Errorf("%q (Flink: %q, flightd: %v): explained %v, want %v", tc.c.sql, tc.c.kerr, tc.c.ferr, got, tc.rule)
		}
	}
}

// TestFlinkSemanticsRules checks the rules that explain a difference by
// running the query spelled with Flink's semantics on flightd: for
// generated queries whose answer the spelling changes, the answer to the
// spelled query (Flink's, as the rule sees it) is explained and a
// different answer is not.
func TestFlinkSemanticsRules(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	const seed = 7
	t.Logf("seed %d", seed)
	env, err := Setup(ctx, mem, t.TempDir(), seed)
	if err != nil {
		t.Fatal(err)
	}
	for _, as := range []flinkSemantics{flinkNulls, flinkAvg} {
		checked := 0
		for i := 0; i < 400 && checked < 3; i++ {
			plain := NewFlinkGen(seed, i, env.TableNames()).Query()
			g := NewFlinkGen(seed, i, env.TableNames())
			g.as = as
			spelled := g.Query()
			if spelled == plain {
				continue
			}
			got, ferr := env.F.Query(ctx, plain)
			want, werr := env.F.Query(ctx, spelled)
			if ferr != nil || werr != nil || tpcds.Compare(plain, want, got) == "" {
				continue
			}
			checked++
			c := flinkCase{ctx: ctx, query: i, sql: plain, want: want, got: got, diff: "differs"}
			if !semanticsRule(as)(env, &c) {
				t.Errorf("semantics %d, query %d: flightd's answer to\n%s\nis not explained by it", as, i, spelled)
			}
			other := *want
			other.Rows = append(other.Rows[:len(other.Rows):len(other.Rows)], other.Rows...)
			c.want = &other
			if len(want.Rows) > 0 && semanticsRule(as)(env, &c) {
				t.Errorf("semantics %d, query %d: an answer with every row twice is explained", as, i)
			}
		}
		if checked == 0 {
			t.Errorf("semantics %d: no generated query whose answer it changes", as)
		}
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
}

func TestFlinkTypes(t *testing.T) {
	for dt, want := range map[arrow.DataType]string{
		arrow.PrimitiveTypes.Int8:                      "TINYINT",
		arrow.PrimitiveTypes.Int32:                     "INT",
		arrow.PrimitiveTypes.Float64:                   "DOUBLE",
		&arrow.Decimal128Type{Precision: 38, Scale: 2}: "DECIMAL(38, 2)",
		arrow.BinaryTypes.LargeString:                  "STRING",
		arrow.FixedWidthTypes.Date32:                   "DATE",
	} {
		if got := plan.SQLTypeName(dt); got != want {
			t.Errorf("%s: %s, want %s", dt, got, want)
		}
	}
	for flinkType, want := range map[string]string{"VARCHAR(3) NOT NULL": "STRING", "CHAR(32)": "STRING", "DECIMAL(10, 2) NOT NULL": "DECIMAL(10, 2)", "INT": "INT"} {
		if got := flinkTypeName(flinkType); got != want {
			t.Errorf("%s: %s, want %s", flinkType, got, want)
		}
	}
	for _, tc := range []struct{ v, typ, want string }{
		{"1.0E20", "DOUBLE", "1e+20"}, {"-3.50", "DECIMAL(5, 2)", "-3.5"}, {"2021-02-03", "DATE NOT NULL", "2021-02-03"},
		{"TRUE", "STRING", `"TRUE"`}, {"true", "BOOLEAN", "true"}, {flink.Null, "INT", "NULL"},
	} {
		v, err := flinkValue(tc.v, tc.typ)
		if err != nil || v.String() != tc.want {
			t.Errorf("%s %q: %v %v, want %s", tc.typ, tc.v, v, err, tc.want)
		}
	}
	if _, err := flinkValue("x", "INT"); err == nil {
		t.Error("INT x: no error")
	}
}
