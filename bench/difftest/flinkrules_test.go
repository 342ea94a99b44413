package difftest

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/bench/tpcds"
	"github.com/flightd/flightd/internal/flink"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/vectorized"
)

// explainFlink returns the name of the first rule explaining c, "" if
// none.
func explainFlink(c *flinkCase) string {
	for _, r := range flinkRules {
		if r.match(c) {
			return r.name
		}
	}
	return ""
}

// TestFlinkErrorRules checks that the rules about Flink's failures explain
// their failures only where flightd answered, and the overflow rule
// flightd's integer overflows only where Flink answered.
func TestFlinkErrorRules(t *testing.T) {
	answered := &tpcds.Result{Rows: [][]tpcds.Value{{{Kind: tpcds.KNull}}}}
	for _, tc := range []struct {
		c    flinkCase
		rule bool
	}{
		{flinkCase{sql: "SELECT 1", kerr: "IndexOutOfBoundsException: Index: 3, Size: 1", got: answered}, true},
		{flinkCase{sql: "SELECT 1", kerr: "TableException: unexpected correlate variable $cor44 in the plan", got: answered}, true},
		{flinkCase{sql: "SELECT 1", kerr: "IndexOutOfBoundsException: Index: 3, Size: 1", ferr: errors.New("x")}, false},
		{flinkCase{sql: "SELECT 1", kerr: "IllegalArgumentException: null", got: answered}, true},
		{flinkCase{sql: "SELECT 1", kerr: "CodeGenException: Mismatch of function's argument data type 'DATE NOT NULL' and actual argument type 'DATE'.", got: answered}, true},
		{flinkCase{sql: "SELECT 1", kerr: "TableException: This must be a bug, could not find table scan", got: answered}, true},
		{flinkCase{sql: "SELECT 1", kerr: "TableException: Table 'x' not found", got: answered}, false},
		{flinkCase{sql: "SELECT 1", kerr: "IllegalArgumentException: Invalid interval", got: answered}, false},
		{flinkCase{sql: "SELECT 1", kerr: "SqlValidatorException: Column 'x' not found", got: answered}, false},
		{flinkCase{sql: "SELECT last_value((a.k - a.k)) OVER (ORDER BY a.k) AS c0 FROM t1 AS a", kerr: "ParseException: Encountered \"(\" at line 1, column 17.", got: answered}, true},
		{flinkCase{sql: "SELECT last_value(a.k) OVER (ORDER BY a.k) AS c0 FROM t1 AS a", kerr: "ParseException: Encountered \"(\" at line 1, column 17.", got: answered}, false},
		{flinkCase{sql: "SELECT DISTINCT a1.s AS c0 FROM t1 AS a1 ORDER BY 1", kerr: "SqlValidatorException: Expression 'a1.d' is not in the select clause", got: answered}, true},
		{flinkCase{sql: "SELECT a1.s AS c0 FROM t1 AS a1 ORDER BY 1", kerr: "SqlValidatorException: Expression 'a1.d' is not in the select clause", got: answered}, false},
		{flinkCase{sql: "SELECT POSITION((SELECT min(a2.s) FROM t1 AS a2) IN a1.s) AS c0 FROM t1 AS a1", kerr: "ParseException: Encountered \"(\" at line 1, column 17.", got: answered}, true},
		{flinkCase{sql: "SELECT POSITION(a1.s IN a1.s) AS c0 FROM t1 AS a1", kerr: "ParseException: Encountered \"(\" at line 1, column 17.", got: answered}, false},
		{flinkCase{sql: "SELECT POSITION((max(a1.s) || 'b') IN 'b') AS c0 FROM t1 AS a1", kerr: "ParseException: Encountered \"(\" at line 1, column 17.", got: answered}, true},
		{flinkCase{sql: "SELECT 1", kerr: "IllegalArgumentException: Cannot compute compatible row type for arguments to set op: RecordType(VARCHAR(2147483647) c0), RecordType(CHAR(1) $f0)", got: answered}, true},
		{flinkCase{sql: "SELECT MIN(a2.s) AS c0 FROM t4 AS a2 GROUP BY greatest(COALESCE(a2.d, -1.81), -1.81) HAVING (greatest(COALESCE(a2.d, -1.81), -1.81) > 0)", kerr: "SqlValidatorException: Expression 'a2.d' is not being grouped", got: answered}, true},
		{flinkCase{sql: "SELECT MIN(a2.s) AS c0 FROM t4 AS a2 GROUP BY greatest(COALESCE(a2.d, -1.81), -1.81) HAVING (a2.d > 0)", kerr: "SqlValidatorException: Expression 'a2.d' is not being grouped", got: answered}, false},
		{flinkCase{sql: "SELECT a2.d AS c0 FROM t4 AS a2 GROUP BY a2.s", kerr: "SqlValidatorException: Expression 'a2.d' is not being grouped", got: answered}, false},
		{flinkCase{sql: "SELECT sum(a2.d) AS c0 FROM t3 AS a2 GROUP BY CUBE (least(COALESCE(a2.i2, 0), 0), a2.s) HAVING (sum(a2.d) > least(COALESCE(a2.i2, 0), 0))", kerr: "SqlValidatorException: Expression 'a2.i2' is not being grouped", got: answered}, true},
		{flinkCase{sql: "SELECT sum(a2.d) AS c0 FROM t3 AS a2 GROUP BY GROUPING SETS ((least(COALESCE(a2.i2, 0), 0)), ()) HAVING (sum(a2.d) > least(COALESCE(a2.i2, 0), 0))", kerr: "SqlValidatorException: Expression 'a2.i2' is not being grouped", got: answered}, true},
		{flinkCase{sql: "SELECT sum(a2.d) AS c0 FROM t3 AS a2 GROUP BY CUBE (least(COALESCE(a2.i2, 0), 0), a2.s) HAVING (sum(a2.d) > a2.i2)", kerr: "SqlValidatorException: Expression 'a2.i2' is not being grouped", got: answered}, false},
		{flinkCase{sql: "SELECT 1", kerr: "TableException: Join: Equality join predicate on incompatible types. \tLeft type: ROW<`i2` SMALLINT>", got: answered}, true},
		// The HAVING uses a2.d outside the grouped expression: it shares only
		// a prefix, up to a comma inside the call, with it.
		{flinkCase{sql: "SELECT MIN(a2.s) AS c0 FROM t4 AS a2 GROUP BY greatest(COALESCE(a2.d, -1.81), -1.81) HAVING (greatest(COALESCE(a2.d, 0), 0) > 0)", kerr: "SqlValidatorException: Expression 'a2.d' is not being grouped", got: answered}, false},
		{flinkCase{sql: "SELECT rank() OVER (ORDER BY 1) AS c0 FROM t1", kerr: "ValidationException: Over Agg: The window rank function requires order by clause with non-constant fields.", got: answered}, true},
		{flinkCase{sql: "SELECT 1", kerr: "", ferr: errors.New("overflow"), want: answered}, false},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("line 1:294: add: %w: -2147483648 + -2 (int32)", vectorized.ErrOverflow), want: answered}, true},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("%w: -(-9223372036854775808) (int64)", vectorized.ErrOverflow), want: answered}, true},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("%w: sum exceeds the int64 range (1 + 2)", vectorized.ErrOverflow), want: answered}, true},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("%w: 4611686018427387904 * 2 (int64)", vectorized.ErrOverflow), want: answered}, true},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("%w: abs(-128)", vectorized.ErrOverflow), want: answered}, true},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf(`line 1:1595: abs: cannot cast int64 value "2147483648" to int32: %w`, vectorized.ErrOverflow), want: answered}, true},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf(`line 1:15: cast: cannot cast int64 value "2147483648" to int32: %w`, vectorized.ErrOverflow), want: answered}, false}, // a CAST's overflow
		// Floats and dates: Flink does not wrap them around.
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("%w: 1e+308 * 10 (float64)", vectorized.ErrOverflow), want: answered}, false},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("%w: date 9999-12-31 + 1 days", vectorized.ErrOverflow), want: answered}, false},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("%w: -2147483648 + -2 (int32)", vectorized.ErrOverflow), kerr: "ArithmeticException: overflow"}, false},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("%w: decimal sum exceeds decimal(38, 2)", vectorized.ErrOverflow), want: answered}, false},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf("%w: 1 / 0", vectorized.ErrDivideByZero), want: answered}, false},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf(`line 1:35: cannot cast decimal(29, 2) value "525887350148.16" to decimal(12, 1): %w`, vectorized.ErrOverflow), want: answered}, true},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf(`line 1:35: cannot cast decimal(29, 2) value "525887350148.16" to decimal(12, 1): %w`, vectorized.ErrOverflow), kerr: "ArithmeticException: overflow"}, false},
		{flinkCase{sql: "SELECT 1", ferr: fmt.Errorf(`line 1:35: cannot cast double value "1e+300" to decimal(12, 1): %w`, vectorized.ErrOverflow), want: answered}, false},
	} {
		if got := explainFlink(&tc.c) != ""; got != tc.rule {
			t.Errorf("%q (Flink: %q, flightd: %v): explained %v, want %v", tc.c.sql, tc.c.kerr, tc.c.ferr, got, tc.rule)
		}
	}
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

// TestTypeRules checks that a type rule explains a column only where the
// column's select item calls its function, and only its type pair.
func TestTypeRules(t *testing.T) {
	const q = "WITH w0 AS (SELECT sum(a.i4) AS c0, a.i4 AS c1 FROM t1 AS a) SELECT sum(a.i4) AS c0, (a.k + 1) AS c1, a.d AS c2, concat_ws(',', 'sum(', a.s) AS c3 FROM t1 AS a UNION SELECT a.i2 AS c0, a.i4 AS c1, sum(a.d) AS c2, a.s AS c3 FROM t2 AS a"
	for _, tc := range []struct {
		d    TypeDiff
		rule bool
	}{
		{TypeDiff{Column: 0, Flink: "INT", Flightd: "BIGINT"}, true},
		{TypeDiff{Column: 0, Flink: "INT", Flightd: "DOUBLE"}, false},
		{TypeDiff{Column: 1, Flink: "INT", Flightd: "BIGINT"}, false},                   // the CTE's sum is not this column
		{TypeDiff{Column: 2, Flink: "DECIMAL(38, 2)", Flightd: "DECIMAL(22, 2)"}, true}, // the other branch's sum
		{TypeDiff{Column: 2, Flink: "DECIMAL(20, 2)", Flightd: "DECIMAL(22, 2)"}, false},
		{TypeDiff{Column: 3, Flink: "INT", Flightd: "BIGINT"}, false}, // 'sum(' is a string
		{TypeDiff{Column: 4, Flink: "INT", Flightd: "BIGINT"}, false},
	} {
		if got := typeRule(tc.d, q) != ""; got != tc.rule {
			t.Errorf("%v: explained %v, want %v", tc.d, got, tc.rule)
		}
	}
	const lag = "SELECT lag((-1 % NULLIF(a1.i1, 0)), 3, 3) OVER (ORDER BY a1.k) AS c0, a1.i1 AS c1 FROM t2 AS a1"
	for _, tc := range []struct {
		d    TypeDiff
		rule bool
	}{
		{TypeDiff{Column: 0, Flink: "TINYINT", Flightd: "INT"}, true},
		{TypeDiff{Column: 0, Flink: "INT", Flightd: "TINYINT"}, false},
		{TypeDiff{Column: 0, Flink: "TINYINT", Flightd: "DOUBLE"}, false},
		{TypeDiff{Column: 1, Flink: "TINYINT", Flightd: "INT"}, false},
	} {
		if got := typeRule(tc.d, lag) != ""; got != tc.rule {
			t.Errorf("%v: explained %v, want %v", tc.d, got, tc.rule)
		}
	}
	// A SUM reaching the column through a derived table or a WITH query.
	for _, tc := range []struct {
		sql  string
		col  int
		rule bool
	}{
		{"SELECT ((a1.c0 + -3) * 7) AS c0, a1.c1 AS c1 FROM (SELECT sum(a2.d) AS c0, max(a2.d) AS c1 FROM t4 AS a2) AS a1", 0, true},
		{"SELECT ((a1.c0 + -3) * 7) AS c0, a1.c1 AS c1 FROM (SELECT sum(a2.d) AS c0, max(a2.d) AS c1 FROM t4 AS a2) AS a1", 1, false},
		{"SELECT a1.c2 AS c0 FROM (SELECT 4 AS c0, 1 AS c1, (SELECT COALESCE(sum(a4.d), -8.39) FROM t2 AS a4) AS c2 FROM t1 AS a3) AS a1", 0, true},
		{"WITH w0 AS (SELECT sum(a.d) AS c0, a.d AS c1 FROM t1 AS a) SELECT a1.c1 AS c0, a1.c0 AS c1 FROM w0 AS a1", 1, true},
		{"WITH w0 AS (SELECT sum(a.d) AS c0, a.d AS c1 FROM t1 AS a) SELECT a1.c1 AS c0, a1.c0 AS c1 FROM w0 AS a1", 0, false},
		{"SELECT a1.c0 AS c0 FROM (SELECT a2.s AS c0 FROM t4 AS a2 WHERE a2.s = 'sum(') AS a1", 0, false},
	} {
		d := TypeDiff{Column: tc.col, Flink: "DECIMAL(38, 2)", Flightd: "DECIMAL(25, 2)"}
		if got := typeRule(d, tc.sql) != ""; got != tc.rule {
			t.Errorf("%s: column %d explained %v, want %v", tc.sql, tc.col, got, tc.rule)
		}
	}
	// SUM of integers (flightd BIGINT, Flink INT) added to a DECIMAL.
	const sumPlus = "SELECT (abs(min(a2.d)) + NULLIF(sum(-8), 0)) AS c0, (abs(min(a2.d)) + 1) AS c1 FROM t4 AS a2"
	for _, tc := range []struct {
		d    TypeDiff
		rule bool
	}{
		{TypeDiff{Column: 0, Flink: "DECIMAL(13, 2)", Flightd: "DECIMAL(22, 2)"}, true},
		{TypeDiff{Column: 0, Flink: "DECIMAL(22, 2)", Flightd: "DECIMAL(13, 2)"}, false},
		{TypeDiff{Column: 0, Flink: "DECIMAL(13, 1)", Flightd: "DECIMAL(22, 2)"}, false},
		// The DECIMAL's integer digits outnumber the narrower integer's
		// (DECIMAL(20, 2) + INT is DECIMAL(21, 2), + BIGINT DECIMAL(22, 2)).
		{TypeDiff{Column: 0, Flink: "DECIMAL(21, 2)", Flightd: "DECIMAL(22, 2)"}, true},
		{TypeDiff{Column: 0, Flink: "DECIMAL(6, 2)", Flightd: "DECIMAL(22, 2)"}, true},
		{TypeDiff{Column: 0, Flink: "DECIMAL(5, 2)", Flightd: "DECIMAL(22, 2)"}, false}, // 17 digits: more than BIGINT has over TINYINT
		{TypeDiff{Column: 0, Flink: "DECIMAL(22, 2)", Flightd: "DECIMAL(22, 2)"}, false},
		{TypeDiff{Column: 1, Flink: "DECIMAL(13, 2)", Flightd: "DECIMAL(22, 2)"}, false},
	} {
		if got := typeRule(tc.d, sumPlus) != ""; got != tc.rule {
			t.Errorf("%v: explained %v, want %v", tc.d, got, tc.rule)
		}
	}
	if typeRule(TypeDiff{Column: 0, Flink: "TINYINT", Flightd: "INT"}, "SELECT lag((a1.i1 + 1), 3) OVER (ORDER BY a1.k) AS c0 FROM t2 AS a1") != "" {
		t.Error("LAG without a default: a narrower type explained")
	}
}

// TestLagDefaultRule checks that Flink's -1 for a NULL LAG reads is
// explained only in a LAG column and only where flightd has NULL.
func TestLagDefaultRule(t *testing.T) {
	const q = "SELECT lag(a1.i1, 1, 3) OVER (ORDER BY a1.k) AS c0, a1.i1 AS c1 FROM t2 AS a1"
	num := func(x int64) tpcds.Value { return tpcds.Value{Kind: tpcds.KNum, Num: big.NewRat(x, 1)} }
	null := tpcds.Value{Kind: tpcds.KNull}
	res := func(rows ...[]tpcds.Value) *tpcds.Result {
		return &tpcds.Result{Columns: []string{"c0", "c1"}, Types: []string{tpcds.TypeNumber, tpcds.TypeNumber}, Rows: rows}
	}
	got := res([]tpcds.Value{null, num(1)}, []tpcds.Value{num(3), null})
	for _, tc := range []struct {
		want *tpcds.Result
		rule bool
	}{
		{res([]tpcds.Value{num(-1), num(1)}, []tpcds.Value{num(3), null}), true},
		{res([]tpcds.Value{num(-2), num(1)}, []tpcds.Value{num(3), null}), false},
		{res([]tpcds.Value{null, num(1)}, []tpcds.Value{num(3), num(-1)}), false}, // not a LAG column
	} {
		c := flinkCase{sql: q, want: tc.want, got: got, diff: "differs"}
		if got := explainFlink(&c) != ""; got != tc.rule {
			t.Errorf("Flink %v: explained %v, want %v", tc.want.Rows, got, tc.rule)
		}
	}
	// Without a default, a -1 where flightd has NULL is not Flink's bug.
	for _, q := range []string{
		"SELECT lag(a1.i1, 1) OVER (ORDER BY a1.k) AS c0, a1.i1 AS c1 FROM t2 AS a1",
		"SELECT lag(a1.i1, 1) OVER (ORDER BY a1.k, a1.i1) AS c0, a1.i1 AS c1 FROM t2 AS a1",
		"SELECT lead(coalesce(a1.i1, 2)) OVER (ORDER BY a1.k) AS c0, a1.i1 AS c1 FROM t2 AS a1",
	} {
		c := flinkCase{sql: q, want: res([]tpcds.Value{num(-1), num(1)}, []tpcds.Value{num(3), null}), got: got, diff: "differs"}
		if explainFlink(&c) != "" {
			t.Errorf("%s: Flink's -1 explained", q)
		}
	}
}

// TestWrappedSumRule checks that Flink's SUM wrapping around in its
// argument's type is explained only in a column that is a SUM Flink types
// narrower than BIGINT, and only by that type's wrap.
func TestWrappedSumRule(t *testing.T) {
	const q = "SELECT sum(a1.i1) AS c0, (sum(a1.i1) + 1) AS c1, a1.k AS c2 FROM t2 AS a1 GROUP BY a1.k"
	num := func(x int64) tpcds.Value { return tpcds.Value{Kind: tpcds.KNum, Num: big.NewRat(x, 1)} }
	res := func(vs ...int64) *tpcds.Result {
		r := &tpcds.Result{Columns: []string{"c0", "c1", "c2"}, Types: []string{tpcds.TypeNumber, tpcds.TypeNumber, tpcds.TypeNumber}}
		r.Rows = [][]tpcds.Value{{num(vs[0]), num(vs[1]), num(vs[2])}}
		return r
	}
	got := res(-1292, -1291, 3) // -1292 is -12 - 5 * 256
	for _, tc := range []struct {
		want  *tpcds.Result
		types []string
		rule  bool
	}{
		{res(-12, -1291, 3), []string{"TINYINT", "INT", "INT NOT NULL"}, true},
		{res(-12, -1291, 3), []string{"SMALLINT", "INT", "INT NOT NULL"}, false}, // SMALLINT holds -1292
		{res(-13, -1291, 3), []string{"TINYINT", "INT", "INT NOT NULL"}, false},
		{res(-12, -1291, 3), []string{"BIGINT", "INT", "INT NOT NULL"}, false},
		{res(-1292, -11, 3), []string{"BIGINT", "TINYINT", "INT NOT NULL"}, false}, // not a SUM alone
		{res(-1292, -1291, 3-256), []string{"BIGINT", "INT", "TINYINT"}, false},    // not a SUM
	} {
		c := flinkCase{sql: q, want: tc.want, got: got, flinkTypes: tc.types, diff: "differs"}
		if got := wrappedSum(&c); got != tc.rule {
			t.Errorf("Flink %v typed %v: explained %v, want %v", tc.want.Rows, tc.types, got, tc.rule)
		}
	}
	for x, want := range map[int64]int64{-1292: -12, 127: 127, 128: -128, -129: 127, 256: 0} {
		if got := wrapInt(big.NewInt(x), 8); got.Int64() != want {
			t.Errorf("wrapInt(%d, 8) = %v, want %d", x, got, want)
		}
	}
}

// TestTimedOut checks that a query Flink did not answer in time is
// explained only where Flink was still planning it and flightd and DuckDB
// agree.
func TestTimedOut(t *testing.T) {
	const planning = `"main" #1 prio=5 os_prio=0 tid=0x1 nid=0x2 runnable
   java.lang.Thread.State: RUNNABLE
	at org.apache.calcite.rex.RexProgramBuilder.mergePrograms(RexProgramBuilder.java:701)
	at org.apache.flink.table.planner.plan.rules.logical.FlinkCalcMergeRule.onMatch(FlinkCalcMergeRule.java:79)
	at org.apache.calcite.plan.volcano.VolcanoPlanner.findBestExp(VolcanoPlanner.java:524)
	at org.apache.flink.table.planner.delegation.PlannerBase.optimize(PlannerBase.scala:395)`
	const running = `"main" #1 prio=5 os_prio=0 tid=0x1 nid=0x2 waiting on condition
   java.lang.Thread.State: WAITING (parking)
	at java.util.concurrent.CompletableFuture.get(CompletableFuture.java:2096)
	at org.apache.flink.table.api.internal.TableResultImpl.await(TableResultImpl.java:112)`
	for _, tc := range []struct {
		err        error
		duckAgrees bool
		want       FlinkClass
	}{
		{&flink.TimeoutError{SQL: "q", MainStack: planning}, true, FlinkTimedOut},
		{&flink.TimeoutError{SQL: "q", MainStack: planning}, false, FlinkFinding},
		{&flink.TimeoutError{SQL: "q", MainStack: running}, true, FlinkFinding},
		{&flink.TimeoutError{SQL: "q"}, true, FlinkFinding}, // no stack
		{flink.ErrTimeout, true, FlinkFinding},
	} {
		var r FlinkResult
		timedOut(&r, tc.err, tc.duckAgrees)
		if r.Class != tc.want {
			t.Errorf("%v (DuckDB agrees %v): %v, want %v (%s)", tc.err, tc.duckAgrees, r.Class, tc.want, r.Detail)
		}
		if tc.want == FlinkTimedOut && !strings.Contains(r.Detail, "FlinkCalcMergeRule") {
			t.Errorf("the detail does not name the planner rule: %s", r.Detail)
		}
	}
}
