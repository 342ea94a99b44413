package plan_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

// joinQuery joins n copies of t: a chain (ti joins ti-1) or a star (every
// ti joins t1), with JOIN ... ON or as a FROM list with the conditions in
// WHERE.
func joinQuery(n int, star, comma bool) string {
	var from, where []string
	from = append(from, "t t1")
	for i := 2; i <= n; i++ {
		prev := i - 1
		if star {
			prev = 1
		}
		cond := fmt.Sprintf("t%d.a = t%d.a", prev, i)
		if comma {
			from = append(from, fmt.Sprintf(", t t%d", i))
			where = append(where, cond)
		} else {
			from = append(from, fmt.Sprintf(" JOIN t t%d ON %s", i, cond))
		}
	}
	q := "SELECT count(*) FROM " + strings.Join(from, "")
	if comma {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q
}

// planBytes is what planning q allocates: a measure of the planner's work
// that, unlike time, a loaded machine does not change.
func planBytes(t testing.TB, h *slt.InProc, q string) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := h.Bind(q); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestJoinPlanningScales: planning a join of n tables grows at most about
// as n^2.5 up to sql.MaxTables. Join estimates used to rebuild each join's
// column list at every level below it and re-estimate whole subtrees for
// every candidate of join ordering: 200 tables took 28 s to plan, about as
// n^4.
func TestJoinPlanningScales(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (a BIGINT, b BIGINT); INSERT INTO t VALUES (1, 2), (2, 3)"); err != nil {
		t.Fatal(err)
	}
	const small, large = sql.MaxTables / 4, sql.MaxTables
	for _, star := range []bool{false, true} {
		for _, comma := range []bool{false, true} {
			s := planBytes(t, h, joinQuery(small, star, comma))
			l := planBytes(t, h, joinQuery(large, star, comma))
			t.Logf("star=%v comma=%v: %d tables %d KiB, %d tables %d KiB", star, comma, small, s>>10, large, l>>10)
			if l > s*32 { // 4^2.5
				t.Errorf("star=%v comma=%v: %d tables allocate %d KiB to plan, %d tables %d KiB: more than (4x)^2.5", star, comma, small, s>>10, large, l>>10)
			}
		}
	}
}

// cancelAfter is a context whose Err reports context.Canceled from its
// call number n+1 on, and records what had been allocated by then: it
// cancels planning at the same point in every run.
type cancelAfter struct {
	context.Context
	n, calls  int64
	allocated uint64 // TotalAlloc when Err first reported the cancellation
}

func (c *cancelAfter) Err() error {
	if c.calls++; c.calls <= c.n {
		return nil
	}
	if c.calls == c.n+1 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		c.allocated = m.TotalAlloc
	}
	return context.Canceled
}

// TestPlanningStopsWhenCancelled: planning a 256-table join returns the
// context's error when the context is done before it starts or while it
// runs, having done little work after the cancellation. Planning did not
// look at the context: a client that went away kept a core busy for as
// long as the plan took.
func TestPlanningStopsWhenCancelled(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (a BIGINT, b BIGINT); INSERT INTO t VALUES (1, 2), (2, 3)"); err != nil {
		t.Fatal(err)
	}
	for _, star := range []bool{false, true} {
		ast, err := sql.ParseOne(joinQuery(sql.MaxTables, star, false))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := plan.Bind(ctx, ast, h, plan.Options{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("star=%v, cancelled before planning: got %v, want %v", star, err, context.Canceled)
		}
		// How often planning checks, and what it allocates in all.
		all := &cancelAfter{Context: context.Background(), n: 1 << 62}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := plan.Bind(all, ast, h, plan.Options{}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		total := after.TotalAlloc - before.TotalAlloc
		if all.calls < sql.MaxTables {
			t.Fatalf("star=%v: planning %d tables checks its context %d times, want one per table at least", star, sql.MaxTables, all.calls)
		}
		for _, n := range []int64{all.calls / 4, all.calls / 2, all.calls * 3 / 4} {
			c := &cancelAfter{Context: context.Background(), n: n}
			if _, err := plan.Bind(c, ast, h, plan.Options{}); !errors.Is(err, context.Canceled) {
				t.Fatalf("star=%v, cancelled at check %d of %d: got %v, want %v", star, c.n+1, all.calls, err, context.Canceled)
			}
			runtime.ReadMemStats(&after)
			if late := after.TotalAlloc - c.allocated; late > total/50 {
				t.Errorf("star=%v, cancelled at check %d of %d: planning allocated %d KiB more before it stopped (%d KiB in all when not cancelled)", star, c.n+1, all.calls, late>>10, total>>10)
			}
		}
	}
}

// TestNestedArrayPlanningScales: folding ARRAY[ARRAY[...]] n deep costs
// about n^2 (each level's value is n deep). Building each level copied the
// whole value below it again, level by level, n^3 in all: 480 levels took
// 31 s to plan.
func TestNestedArrayPlanningScales(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	nested := func(n int) string { return "SELECT " + strings.Repeat("ARRAY[", n) + "1" + strings.Repeat("]", n) }
	s, l := planBytes(t, h, nested(120)), planBytes(t, h, nested(480))
	t.Logf("%d KiB, %d KiB", s>>10, l>>10)
	if l > s*32 { // 4^2.5
		t.Errorf("ARRAY[...] 120 deep allocates %d KiB to plan, 480 deep %d KiB: more than (4x)^2.5", s>>10, l>>10)
	}
}

// TestCTEChainPlanningScales: planning CTEs that each join the one before
// with itself costs about the square of their number. Estimates, the
// physical planner's walk for join orders and the check of whether a
// query's parts can be pinned to snapshots followed every path through
// the CTEs, 2^n of them: 20 CTEs allocated 2.9 GB, each more doubling it.
func TestCTEChainPlanningScales(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (a BIGINT, b BIGINT); INSERT INTO t VALUES (1, 2), (2, 3)"); err != nil {
		t.Fatal(err)
	}
	cost := func(n int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		st, err := h.Bind(cteChain(n))
		if err != nil {
			t.Fatal(err)
		}
		st.(*plan.Query).Partitioning()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	s, l := cost(10), cost(20)
	if l > s*8 { // 2^3
		t.Errorf("10 chained CTEs allocate %d KiB to plan, 20 %d KiB: more than (2x)^3", s>>10, l>>10)
	}
}

// cteChain is a query of n CTEs, each joining the one before with itself.
func cteChain(n int) string {
	ctes := []string{"c0 AS (SELECT a FROM t)"}
	for i := 1; i <= n; i++ {
		ctes = append(ctes, fmt.Sprintf("c%d AS (SELECT x.a FROM c%d x JOIN c%d y ON x.a = y.a)", i, i-1, i-1))
	}
	return fmt.Sprintf("WITH %s SELECT count(*) FROM c%d", strings.Join(ctes, ", "), n)
}

// TestScannedTablesWalksEachCTEOnce: the tables a plan reads, which the
// cycle checks of materialized tables and continuous jobs follow, are
// found walking each shared CTE once: 40 chained CTEs each reading the one
// before twice make 2^40 paths to t.
func TestScannedTablesWalksEachCTEOnce(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (a BIGINT, b BIGINT); INSERT INTO t VALUES (1, 2), (2, 3)"); err != nil {
		t.Fatal(err)
	}
	st, err := h.Bind(cteChain(40))
	if err != nil {
		t.Fatal(err)
	}
	tables := plan.ScannedTables(st.(*plan.Query).Logical())
	if len(tables) != 1 || tables[0].Ident().Table != "t" {
		t.Fatalf("scanned %v, want t alone", tables)
	}
}

// TestScalarSubqueriesPlanningScales: planning n uncorrelated scalar
// subqueries over one table (merged into one query, scalar_merge.go) costs
// about n^2. Each subquery's join carried every merged value, n^2 columns
// in all, which planning read at every join: 240 took 11 s and 8.8 GB.
func TestScalarSubqueriesPlanningScales(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (a BIGINT, b BIGINT); INSERT INTO t VALUES (1, 2), (2, 3)"); err != nil {
		t.Fatal(err)
	}
	subqueries := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf("(SELECT max(a) + %d FROM t)", i)
		}
		return "SELECT " + strings.Join(items, ", ") + " FROM t"
	}
	s, l := planBytes(t, h, subqueries(60)), planBytes(t, h, subqueries(240))
	if l > s*32 { // 4^2.5
		t.Errorf("60 scalar subqueries allocate %d KiB to plan, 240 %d KiB: more than (4x)^2.5", s>>10, l>>10)
	}
}

// TestWideJoinPlanning: a chain of 64 joins of a 200-column table, reading
// one column, costs at most 25 times as much to plan as one of a 2-column
// table. The rules that read every join's columns ran before unread
// columns were pruned, and binding copied each join's columns for the
// next: 256 such joins allocated 16 GB, and at 64 joins 110 times what the
// narrow table's did. What is left is the binder's scope of each join,
// which lists the columns of all the tables joined so far.
func TestWideJoinPlanning(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	cols := make([]string, 199)
	for i := range cols {
		cols[i] = fmt.Sprintf("c%d BIGINT", i)
	}
	if err := h.Exec("CREATE TABLE t (a BIGINT, b BIGINT); CREATE TABLE w (a BIGINT, " + strings.Join(cols, ", ") + ")"); err != nil {
		t.Fatal(err)
	}
	narrow := planBytes(t, h, joinQuery(64, false, false))
	wide := planBytes(t, h, strings.ReplaceAll(joinQuery(64, false, false), " t t", " w t"))
	if wide > narrow*25 {
		t.Errorf("64 joins of a 200-column table allocate %d KiB to plan, of a 2-column table %d KiB: more than 25 times as much", wide>>10, narrow>>10)
	}
}

// TestCTEExpansionLimit: a WITH query that is not shared (a streaming
// query binds it again at each reference) counts against the view
// expansion limit, so 40 chained CTEs each reading the one before twice
// (2^40 bindings: a server reached 17.5 GB RSS binding a materialized
// table of them) are refused with SQLSTATE 54001, and a short chain still
// binds.
func TestCTEExpansionLimit(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (a BIGINT, b BIGINT); INSERT INTO t VALUES (1, 2), (2, 3)"); err != nil {
		t.Fatal(err)
	}
	streamed := func(n int) string {
		return strings.Replace(cteChain(n), "FROM t)", "FROM t /*+ OPTIONS('scan.mode'='latest-full') */)", 1)
	}
	if _, err := h.Bind(streamed(4)); err != nil {
		t.Fatal(err)
	}
	var e *sql.Error
	if _, err := h.Bind(streamed(40)); !errors.As(err, &e) || e.SQLState != sql.StateTooComplex || !strings.Contains(e.Msg, "views expand to more than") {
		t.Fatalf("40 chained CTEs: want SQLSTATE %s, got %v", sql.StateTooComplex, err)
	}
}

// TestLongGroupByPlanningScales: binding a GROUP BY of n items costs about
// linearly in n, with and without grouping sets after them. Each item
// copied the grouping set built from the items before it, n^2 in all: a
// 1 MB statement grouping by x 200,000 times kept a core busy for
// minutes, after its client had cancelled too.
func TestLongGroupByPlanningScales(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	if err := h.Exec("CREATE TABLE t (a BIGINT, b BIGINT); INSERT INTO t VALUES (1, 2), (2, 3)"); err != nil {
		t.Fatal(err)
	}
	for _, tail := range []string{"", ", ROLLUP(a, b)"} {
		q := func(n int) string {
			return "SELECT count(*) FROM t GROUP BY " + strings.TrimSuffix(strings.Repeat("a, b, ", n/2), ", ") + tail
		}
		s, l := planBytes(t, h, q(2000)), planBytes(t, h, q(16000))
		t.Logf("%d KiB, %d KiB", s>>10, l>>10)
		if l > s*16 { // linear: 8x
			t.Errorf("GROUP BY of 2,000 items%s allocates %d KiB to plan, 16,000 items %d KiB: more than twice 8x", tail, s>>10, l>>10)
		}
	}
}

// Folding puts at most maxFoldedBytes of values into a statement's plan,
// where no query budget counts them: eight REPEAT('x', 20000000) held 160
// MB in the bound plan before; past the bound the calls stay, computed at
// run time within the statement's working memory.
func TestFoldedValuesBounded(t *testing.T) {
	h, _ := newHarness(t, plan.Options{})
	items := make([]string, 8)
	for i := range items {
		items[i] = fmt.Sprintf("repeat('x', 20000000) || '%d' AS c%d", i, i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	st, err := h.Bind("SELECT " + strings.Join(items, ", "))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(st)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 100<<20 {
		t.Fatalf("the bound plan holds %d MB", held>>20)
	}
}
