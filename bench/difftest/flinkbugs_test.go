package difftest

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/tpcds"
)

// TestFlinkBugRules checks the rules that explain a Flink bug by
// reproducing it on flightd (flinkbugs.go), on seed 3000's tables: each
// case's Flink answer is flightd's answer to the query spelled as Flink
// computes it (checked against Flink 2.3 with TestProbe), and a rule must
// explain the difference exactly where the bug's shape is in the query,
// and only when DuckDB gave flightd's answer.
func TestFlinkBugRules(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	env, err := Setup(ctx, mem, t.TempDir(), 3000)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Close(); err != nil {
			t.Error(err)
		}
		mem.AssertSize(t, 0)
	}()
	query := func(sql string) *tpcds.Result {
		t.Helper()
		r, err := env.F.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return r
	}
	const (
		notIn      = "SELECT a1.k AS c0, (a1.s NOT IN (SELECT a2.s FROM t4 AS a2 WHERE a2.d = a1.d)) AS c1 FROM t1 AS a1"
		notInFlink = "SELECT a1.k AS c0, CASE WHEN a1.s IS NULL THEN CAST(NULL AS BOOLEAN) ELSE (a1.s NOT IN (SELECT a2.s FROM t4 AS a2 WHERE a2.d = a1.d)) END AS c1 FROM t1 AS a1"
		// Uncorrelated, Flink gets it right: no rule may explain it.
		notInUncorr      = "SELECT a1.k AS c0, (a1.s NOT IN (SELECT a2.s FROM t4 AS a2 WHERE a2.d > 100000)) AS c1 FROM t1 AS a1"
		notInUncorrFlink = "SELECT a1.k AS c0, CASE WHEN a1.s IS NULL THEN CAST(NULL AS BOOLEAN) ELSE (a1.s NOT IN (SELECT a2.s FROM t4 AS a2 WHERE a2.d > 100000)) END AS c1 FROM t1 AS a1"

		exists      = "SELECT a1.i4 AS c0, (NOT EXISTS (SELECT 1 FROM t4 AS a4 WHERE a4.i4 > 100000)) AS c1, (SELECT count(*) FROM t2 AS a3 WHERE a3.s = a1.s) AS c2 FROM t3 AS a1"
		existsFlink = "SELECT a1.i4 AS c0, (NOT TRUE) AS c1, (SELECT count(*) FROM t2 AS a3 WHERE a3.s = a1.s) AS c2 FROM t3 AS a1"
		// Without a correlated subquery Flink gets it right.
		existsAlone      = "SELECT a1.i4 AS c0, (NOT EXISTS (SELECT 1 FROM t4 AS a4 WHERE a4.i4 > 100000)) AS c1 FROM t3 AS a1"
		existsAloneFlink = "SELECT a1.i4 AS c0, (NOT TRUE) AS c1 FROM t3 AS a1"

		rollup      = "SELECT count(*) AS c0 FROM t1 AS a1 WHERE a1.k > 1000 GROUP BY ROLLUP (a1.s) UNION ALL SELECT a2.k AS c0 FROM t2 AS a2"
		rollupFlink = "SELECT a2.k AS c0 FROM t2 AS a2"
		// Flink lacking another row than the empty grouping set's.
		rollupOther = "SELECT a2.k AS c0 FROM t2 AS a2 WHERE a2.k <> 5 UNION ALL SELECT 0 AS c0"

		constKey      = "SELECT min(a1.dt) AS c0 FROM t4 AS a1 WHERE a1.k > 1000 GROUP BY (CAST(NULL AS DOUBLE) * a1.f) UNION ALL SELECT (SELECT max(a4.dt) FROM t4 AS a4 WHERE a4.i2 = a2.k) AS c0 FROM t3 AS a2 WHERE FALSE"
		constKeyFlink = "SELECT CAST(NULL AS DATE) AS c0"
		// Without a correlated subquery Calcite's decorrelator does not run.
		constKeyAlone = "SELECT min(a1.dt) AS c0 FROM t4 AS a1 WHERE a1.k > 1000 GROUP BY (CAST(NULL AS DOUBLE) * a1.f) UNION ALL SELECT a2.dt AS c0 FROM t3 AS a2 WHERE FALSE"

		nullOuter      = "SELECT a1.k AS c0, (SELECT count(*) FROM t4 AS a2 WHERE a2.dt < COALESCE(a1.dt, DATE '2020-04-16')) AS c1 FROM t2 AS a1"
		nullOuterFlink = "SELECT a1.k AS c0, (SELECT count(*) FROM t4 AS a2 WHERE (a1.dt IS NOT NULL) AND a2.dt < COALESCE(a1.dt, DATE '2020-04-16')) AS c1 FROM t2 AS a1"
		// Uncorrelated, the subquery's rows do not depend on the outer row.
		nullOuterUncorr      = "SELECT a1.k AS c0, (SELECT count(*) FROM t4 AS a2 WHERE a2.dt < DATE '2020-04-16') AS c1 FROM t2 AS a1"
		nullOuterUncorrFlink = "SELECT a1.k AS c0, CASE WHEN a1.dt IS NULL THEN 0 ELSE (SELECT count(*) FROM t4 AS a2 WHERE a2.dt < DATE '2020-04-16') END AS c1 FROM t2 AS a1"

		cube      = "SELECT a1.i1 AS c0, count(*) AS c1 FROM t1 AS a1 GROUP BY CUBE (a1.i1, a1.i1)"
		cubeFlink = "SELECT a1.i1 AS c0, count(*) AS c1 FROM t1 AS a1 GROUP BY CUBE (a1.i1)"
		// Flink keeps a grouping set listed twice.
		sets = "SELECT a1.i1 AS c0, count(*) AS c1 FROM t1 AS a1 GROUP BY GROUPING SETS ((a1.i1), (a1.i1), ())"

		avg      = "SELECT a1.k AS c0, avg(a1.i4) OVER (ORDER BY a1.i4 NULLS FIRST) AS c1 FROM t2 AS a1"
		avgFlink = "SELECT a1.k AS c0, CAST((MOD(MOD(sum(CAST(a1.i4 AS BIGINT)) OVER (ORDER BY a1.i4 NULLS FIRST) + 2147483648, 4294967296) + 4294967296, 4294967296) - 2147483648) / NULLIF(count(a1.i4) OVER (ORDER BY a1.i4 NULLS FIRST), 0) AS INT) AS c1 FROM t2 AS a1"
		// Another wrap width than INT's is not Flink's.
		avgOther = "SELECT a1.k AS c0, CAST((MOD(MOD(sum(CAST(a1.i4 AS BIGINT)) OVER (ORDER BY a1.i4 NULLS FIRST) + 1073741824, 2147483648) + 2147483648, 2147483648) - 1073741824) / NULLIF(count(a1.i4) OVER (ORDER BY a1.i4 NULLS FIRST), 0) AS INT) AS c1 FROM t2 AS a1"

		castChain      = "SELECT (a1.d + CAST(CAST(1.88 AS DECIMAL(12,1)) AS DECIMAL(12,2))) AS c0 FROM t1 AS a1"
		castChainFlink = "SELECT (a1.d + 1.88) AS c0 FROM t1 AS a1"
		// Of a column the inner cast counts in Flink too.
		castColumn      = "SELECT CAST(CAST((a1.d / 7) AS DECIMAL(12,1)) AS DECIMAL(12,2)) AS c0 FROM t1 AS a1"
		castColumnFlink = "SELECT CAST((a1.d / 7) AS DECIMAL(12,2)) AS c0 FROM t1 AS a1"

		// a1 has no rows (its HAVING is never TRUE): Flink's HAVING reads
		// t1's rows alone.
		emptySide      = "SELECT DISTINCT 1 AS c0 FROM (SELECT min(a2.i1) AS c0 FROM t4 AS a2 HAVING MAX(FALSE)) AS a1 JOIN t1 AS a3 ON a3.b WHERE (a1.c0 > 0) HAVING MAX(a3.b)"
		emptySideFlink = "SELECT 1 AS c0"
		// Both sides have rows: the join's aggregate is the standard's.
		fullSides = "SELECT DISTINCT 1 AS c0 FROM (SELECT min(a2.i1) AS c0 FROM t4 AS a2) AS a1 JOIN t1 AS a3 ON a3.b HAVING MAX(a3.b) IS NULL"
		// A condition reading both sides is no aggregate of one side.
		bothSides = "SELECT DISTINCT 1 AS c0 FROM (SELECT min(a2.i1) AS c0 FROM t4 AS a2 HAVING MAX(FALSE)) AS a1 JOIN t1 AS a3 ON a3.i1 = a1.c0 HAVING MAX(a3.b)"

		caseWhere      = "SELECT a1.k AS c0 FROM t1 AS a1 WHERE (NULLIF(a1.k, (SELECT max(a2.k) FROM t2 AS a2)) > 1000000) ORDER BY 1"
		caseWhereFlink = "SELECT a1.k AS c0 FROM t1 AS a1 ORDER BY 1"
		// The subquery outside CASE and NULLIF.
		plainWhere = "SELECT a1.k AS c0 FROM t1 AS a1 WHERE ((a1.k + (SELECT max(a2.k) FROM t2 AS a2)) > 1000000) ORDER BY 1"

		belowLimit      = "SELECT count(*) AS c0 FROM (SELECT a2.k AS c0, (a2.k > 50) AS c1 FROM t1 AS a2 WHERE TRUE ORDER BY 1 LIMIT 5) AS a1 WHERE a1.c1"
		belowLimitFlink = "SELECT count(*) AS c0 FROM (SELECT a2.k AS c0, (a2.k > 50) AS c1 FROM t1 AS a2 WHERE (a2.k > 50) ORDER BY 1 LIMIT 5) AS a1"
		// Without a LIMIT, where the filter goes makes no difference.
		noLimit = "SELECT count(*) AS c0 FROM (SELECT a2.k AS c0, (a2.k > 50) AS c1 FROM t1 AS a2 WHERE TRUE ORDER BY 1) AS a1 WHERE a1.c1"
	)
	for _, tc := range []struct {
		sql, flink string
		duckAgrees bool
		rule       bool
	}{
		{notIn, notInFlink, true, true},
		{notIn, notInFlink, false, false},
		{notInUncorr, notInUncorrFlink, true, false},
		{exists, existsFlink, true, true},
		{existsAlone, existsAloneFlink, true, false},
		{rollup, rollupFlink, true, true},
		{rollup, rollupFlink, false, false},
		{rollup, rollupOther, true, false},
		{constKey, constKeyFlink, true, true},
		{constKeyAlone, constKeyFlink, true, false},
		{nullOuter, nullOuterFlink, true, true},
		{nullOuterUncorr, nullOuterUncorrFlink, true, false},
		{cube, cubeFlink, true, true},
		{sets, cubeFlink, true, false},
		{castChain, castChainFlink, true, true},
		{castColumn, castColumnFlink, true, false},
		{avg, avgFlink, true, true},
		{avg, avgOther, true, false},
		{emptySide, emptySideFlink, true, true},
		{emptySide, emptySideFlink, false, false},
		{fullSides, emptySideFlink, true, false},
		{bothSides, emptySideFlink, true, false},
		{caseWhere, caseWhereFlink, true, true},
		{plainWhere, caseWhereFlink, true, false},
		{belowLimit, belowLimitFlink, true, true},
		{noLimit, belowLimitFlink, true, false},
	} {
		c := flinkCase{sql: tc.sql, got: query(tc.sql), want: query(tc.flink), duckAgrees: tc.duckAgrees,
			flightd: func(sql string) (*tpcds.Result, error) { return env.F.Query(ctx, sql) }}
		if c.diff = tpcds.Compare(c.sql, c.want, c.got); c.diff == "" {
			t.Fatalf("%s: the Flink answer is flightd's: the case tests nothing", tc.sql)
		}
		if got := explainFlink(&c); (got != "") != tc.rule {
			t.Errorf("%s (Flink as %s, DuckDB agrees %v): explained by %q, want a rule: %v", tc.sql, tc.flink, tc.duckAgrees, got, tc.rule)
		}
	}

	// INTERSECT ALL: Flink's answer without the ORDER BY stands in as
	// flightd's (flightd answers it), Flink's with it as a bogus row more.
	const intersect = "SELECT a1.k AS c0 FROM t1 AS a1 INTERSECT ALL SELECT a2.k AS c0 FROM t2 AS a2"
	bogus := query(intersect + " UNION ALL SELECT -1 AS c0")
	for _, tc := range []struct {
		sql  string
		rule bool
	}{
		{intersect + " ORDER BY 1", true},
		{intersect, false},
		{intersect + " ORDER BY 1 LIMIT 100", true},
		{intersect + " ORDER BY 1 LIMIT 100 OFFSET 0", true},
		{intersect + " ORDER BY 1 LIMIT 2", false}, // the LIMIT cuts flightd's rows
		{"SELECT a1.k AS c0 FROM t1 AS a1 INTERSECT SELECT a2.k AS c0 FROM t2 AS a2 ORDER BY 1", false},
	} {
		c := flinkCase{sql: tc.sql, got: query(tc.sql), want: bogus, duckAgrees: true,
			flink: func(sql string) (*tpcds.Result, error) { return env.F.Query(ctx, sql) }}
		c.diff = tpcds.Compare(c.sql, c.want, c.got)
		if got := explainFlink(&c); (got != "") != tc.rule {
			t.Errorf("%s: explained by %q, want a rule: %v", tc.sql, got, tc.rule)
		}
	}

	// A literal [NOT] IN a correlated subquery: flightd stands in for
	// Flink asked the query with the literal hidden (it answers as the
	// query), the bogus answer for Flink's to the query.
	for _, tc := range []struct {
		sql  string
		rule bool
	}{
		{"SELECT a1.k AS c0, ('x' NOT IN (SELECT a2.s FROM t4 AS a2 WHERE a2.d = a1.d)) AS c1 FROM t1 AS a1", true},
		{"SELECT a1.k AS c0, (7 IN (SELECT a2.k FROM t4 AS a2 WHERE a2.d = a1.d)) AS c1 FROM t1 AS a1", true},
		{"SELECT a1.k AS c0, ('x' NOT IN (SELECT a2.s FROM t4 AS a2 WHERE a2.d > 0)) AS c1 FROM t1 AS a1", false},     // uncorrelated
		{"SELECT a1.k AS c0, (a1.s NOT IN (SELECT a2.s FROM t4 AS a2 WHERE a2.d = a1.d)) AS c1 FROM t1 AS a1", false}, // a column
	} {
		c := flinkCase{sql: tc.sql, got: query(tc.sql), want: query(tc.sql + " UNION ALL SELECT -1 AS c0, TRUE AS c1"), duckAgrees: true,
			flink: func(sql string) (*tpcds.Result, error) { return env.F.Query(ctx, sql) }}
		c.diff = tpcds.Compare(c.sql, c.want, c.got)
		if got := literalInOperand(&c); got != tc.rule {
			t.Errorf("%s: explained %v, want %v", tc.sql, got, tc.rule)
		}
	}
}

// TestRewriteSpans checks the rewrites' places on the generator's shapes.
func TestRewriteSpans(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		spans func(string) []span
		want  []string // the query rewritten at each place alone
	}{
		{"SELECT (a1.s IN (SELECT a2.s FROM t4 AS a2 WHERE a2.d = a1.d)) AS c0, (a1.s NOT IN (SELECT a3.s FROM t4 AS a3)) AS c1 FROM t1 AS a1", nullOperandIn, []string{
			"SELECT (CASE WHEN (a1.s) IS NULL THEN CAST(NULL AS BOOLEAN) ELSE (a1.s IN (SELECT a2.s FROM t4 AS a2 WHERE a2.d = a1.d)) END) AS c0, (a1.s NOT IN (SELECT a3.s FROM t4 AS a3)) AS c1 FROM t1 AS a1"}},
		{"SELECT a1.k AS c0 FROM t1 AS a1 GROUP BY CUBE (a1.k) HAVING (a1.k > 1) UNION SELECT a2.k AS c0 FROM t2 AS a2 GROUP BY GROUPING SETS ((a2.k), (a2.s)) UNION SELECT a3.k AS c0 FROM t2 AS a3 GROUP BY GROUPING SETS ((), (a3.k)) ORDER BY 1", noEmptyGroupingSet, []string{
			"SELECT a1.k AS c0 FROM t1 AS a1 GROUP BY CUBE (a1.k) HAVING count(*) > 0 AND ((a1.k > 1)) UNION SELECT a2.k AS c0 FROM t2 AS a2 GROUP BY GROUPING SETS ((a2.k), (a2.s)) UNION SELECT a3.k AS c0 FROM t2 AS a3 GROUP BY GROUPING SETS ((), (a3.k)) ORDER BY 1",
			"SELECT a1.k AS c0 FROM t1 AS a1 GROUP BY CUBE (a1.k) HAVING (a1.k > 1) UNION SELECT a2.k AS c0 FROM t2 AS a2 GROUP BY GROUPING SETS ((a2.k), (a2.s)) UNION SELECT a3.k AS c0 FROM t2 AS a3 GROUP BY GROUPING SETS ((), (a3.k)) HAVING count(*) > 0 ORDER BY 1"}},
		{"SELECT max(a1.k) AS c0 FROM t1 AS a1 WHERE (a1.k IN (SELECT a2.k FROM t2 AS a2 WHERE a2.s = a1.s)) GROUP BY (a1.f * NULL), a1.s HAVING (max(a1.k) > 0)", constantKeysGlobal, []string{
			"SELECT max(a1.k) AS c0 FROM t1 AS a1 WHERE (a1.k IN (SELECT a2.k FROM t2 AS a2 WHERE a2.s = a1.s)) GROUP BY GROUPING SETS (((a1.f * NULL), a1.s), ()) HAVING (GROUPING((a1.f * NULL), a1.s) = 0 OR count(*) = 0) AND ((max(a1.k) > 0))"}},
		{"SELECT (SELECT min(a2.s) FROM t4 AS a2 WHERE a2.dt < a1.dt AND (a2.k = a1.k)) AS c0, (SELECT 1 FROM t2 AS a3) AS c1 FROM t1 AS a1", nullOuterNoRows, []string{
			"SELECT (SELECT min(a2.s) FROM t4 AS a2 WHERE (a1.dt IS NOT NULL AND a1.k IS NOT NULL) AND a2.dt < a1.dt AND (a2.k = a1.k)) AS c0, (SELECT 1 FROM t2 AS a3) AS c1 FROM t1 AS a1"}},
		{"SELECT a1.k AS c0 FROM t1 AS a1 GROUP BY ROLLUP (a1.k, abs(a1.k), a1.k) UNION SELECT a2.k AS c0 FROM t1 AS a2 GROUP BY CUBE (a2.k, a2.i1)", distinctKeys, []string{
			"SELECT a1.k AS c0 FROM t1 AS a1 GROUP BY ROLLUP (a1.k, abs(a1.k)) UNION SELECT a2.k AS c0 FROM t1 AS a2 GROUP BY CUBE (a2.k, a2.i1)"}},
		{"SELECT CAST(CAST(1.88 AS DECIMAL(12,1)) AS DECIMAL(12,2)) AS c0, CAST(CAST(a1.d AS DECIMAL(12,1)) AS DECIMAL(12,2)) AS c1, CAST(CAST(CAST(CAST(-0.78 AS DECIMAL(12,1)) AS DECIMAL(12,2)) AS DECIMAL(12,1)) AS DECIMAL(12,2)) AS c2 FROM t1 AS a1", literalOuterCast, []string{
			"SELECT CAST(1.88 AS DECIMAL(12,2)) AS c0, CAST(CAST(a1.d AS DECIMAL(12,1)) AS DECIMAL(12,2)) AS c1, CAST(-0.78 AS DECIMAL(12,2)) AS c2 FROM t1 AS a1"}},
		{"SELECT CAST(CAST(CAST(-7.25 AS DOUBLE) AS DECIMAL(12,1)) AS DECIMAL(12,2)) AS c0 FROM t1 AS a1", literalOuterCast, []string{
			"SELECT CAST(CAST(-7.25 AS DOUBLE) AS DECIMAL(12,2)) AS c0 FROM t1 AS a1"}},
		{"SELECT a1.k AS c0 FROM t1 AS a1 WHERE CASE WHEN a1.b THEN (a1.k IN (SELECT a2.k FROM t2 AS a2)) ELSE FALSE END GROUP BY a1.k UNION SELECT a3.k AS c0 FROM t1 AS a3 WHERE (a3.k + (SELECT 1)) > 0 AND NULLIF(a3.k, (SELECT 2)) > 0", caseSubqueryWhere, []string{
			"SELECT a1.k AS c0 FROM t1 AS a1 WHERE TRUE GROUP BY a1.k UNION SELECT a3.k AS c0 FROM t1 AS a3 WHERE (a3.k + (SELECT 1)) > 0 AND NULLIF(a3.k, (SELECT 2)) > 0",
			"SELECT a1.k AS c0 FROM t1 AS a1 WHERE CASE WHEN a1.b THEN (a1.k IN (SELECT a2.k FROM t2 AS a2)) ELSE FALSE END GROUP BY a1.k UNION SELECT a3.k AS c0 FROM t1 AS a3 WHERE TRUE"}},
		{"SELECT a1.c0 AS c0 FROM (SELECT a2.k AS c0, (a2.s IN (SELECT a3.s FROM t2 AS a3 WHERE a3.k = a2.k)) AS c1 FROM t1 AS a2 WHERE a2.b ORDER BY 1 LIMIT 5) AS a1 WHERE a1.c1 UNION SELECT a4.c0 AS c0 FROM (SELECT a5.k AS c0, a5.b AS c1 FROM t1 AS a5 WHERE TRUE) AS a4 WHERE a4.c1", filterBelowLimit, []string{
			"SELECT a1.c0 AS c0 FROM (SELECT a2.k AS c0, (a2.s IN (SELECT a3.s FROM t2 AS a3 WHERE a3.k = a2.k)) AS c1 FROM t1 AS a2 WHERE ((a2.s IN (SELECT a3.s FROM t2 AS a3 WHERE a3.k = a2.k))) AND a2.b ORDER BY 1 LIMIT 5) AS a1 WHERE a1.c1 UNION SELECT a4.c0 AS c0 FROM (SELECT a5.k AS c0, a5.b AS c1 FROM t1 AS a5 WHERE TRUE) AS a4 WHERE a4.c1"}},
		{"SELECT (NOT EXISTS (SELECT 1 FROM t2 AS a2)) AS c0, EXISTS (SELECT 1 FROM t2 AS a3 WHERE a3.k = a1.k) AS c1 FROM t1 AS a1", trueExists, []string{
			"SELECT (NOT TRUE) AS c0, EXISTS (SELECT 1 FROM t2 AS a3 WHERE a3.k = a1.k) AS c1 FROM t1 AS a1"}},
	} {
		spans := tc.spans(tc.sql)
		if len(spans) != len(tc.want) {
			t.Errorf("%s: %d places, want %d", tc.sql, len(spans), len(tc.want))
			continue
		}
		for i, want := range tc.want {
			if got, _ := rewrite(tc.sql, spans, 1<<i); got != want {
				t.Errorf("%s place %d:\n got %s\nwant %s", tc.sql, i, got, want)
			}
		}
	}
}
