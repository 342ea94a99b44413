package plan_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/slt"
	"github.com/flightd/flightd/plan"
)

var seedFlag = flag.Int64("seed", 0, "seed for TestRandomQueries (0: time-based)")

// TestRandomQueries is a metamorphic test: random queries over random data
// must give the same rows with every optimizer rule on, with all of them
// off, at batch size 1, and with one rule alone on, each rule in turn
// (different plans and batch boundaries, same answer). Replay a failure
// with -seed.
func TestRandomQueries(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))

	dir := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	setup, err := slt.NewInProc(ctx, dir, mem, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	val := func(null float64, f func() string) string {
		if rng.Float64() < null {
			return "NULL"
		}
		return f()
	}
	num := func(n int) func() string { return func() string { return fmt.Sprint(rng.Intn(n) - n/4) } }
	stmts := []string{
		"CREATE TABLE r1 (k INT NOT NULL, a INT, b BIGINT, c VARCHAR, d DECIMAL(5,1), PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
		"CREATE TABLE r2 (k INT NOT NULL, a INT, e INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
		"CREATE TABLE r3 (a INT, f VARCHAR)",
	}
	for _, s := range stmts {
		if err := setup.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	var rows []string
	for i := 0; i < 60; i++ {
		rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s, %s)", i, val(0.1, num(12)), val(0.1, num(100)),
			val(0.1, func() string { return fmt.Sprintf("'s%d'", rng.Intn(6)) }),
			val(0.1, func() string { return fmt.Sprintf("%d.%d", rng.Intn(50), rng.Intn(10)) })))
	}
	if err := setup.Exec("INSERT INTO r1 VALUES " + strings.Join(rows, ", ")); err != nil {
		t.Fatal(err)
	}
	rows = rows[:0]
	for i := 0; i < 40; i++ {
		rows = append(rows, fmt.Sprintf("(%d, %s, %s)", i*2, val(0.1, num(12)), val(0.2, num(30))))
	}
	if err := setup.Exec("INSERT INTO r2 VALUES " + strings.Join(rows, ", ")); err != nil {
		t.Fatal(err)
	}
	rows = rows[:0]
	for i := 0; i < 15; i++ {
		rows = append(rows, fmt.Sprintf("(%s, 'f%d')", val(0.2, num(12)), rng.Intn(4)))
	}
	if err := setup.Exec("INSERT INTO r3 VALUES " + strings.Join(rows, ", ")); err != nil {
		t.Fatal(err)
	}
	if err := setup.Close(); err != nil {
		t.Fatal(err)
	}

	type config struct {
		opts      plan.Options
		batchSize int
	}
	configs := []config{
		{plan.Options{}, 0},
		{plan.Options{DisabledRules: plan.Rules}, 0},
		{plan.Options{}, 1},
	}
	always := len(configs)
	for _, r := range plan.Rules {
		others := slices.DeleteFunc(slices.Clone(plan.Rules), func(o string) bool { return o == r })
		configs = append(configs, config{opts: plan.Options{DisabledRules: others}})
	}
	harnesses := make([]*slt.InProc, len(configs))
	for i, c := range configs {
		h, err := slt.NewInProc(ctx, dir, mem, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if c.batchSize > 0 {
			if err := h.SetBatchSize(c.batchSize); err != nil {
				t.Fatal(err)
			}
		}
		harnesses[i] = h
		defer h.Close()
	}
	g := &queryGen{rng: rng}
	for i := 0; i < 150; i++ {
		q := g.query()
		if b, err := harnesses[0].Bind(q); err == nil {
			if err := plan.CheckPhysical(b.(*plan.Query)); err != nil {
				t.Fatalf("seed %d query %d: %v\n%s", seed, i, err, q)
			}
		}
		var first []string
		// The configs with one rule alone take turns.
		alone := always + i%(len(configs)-always)
		for ci, h := range harnesses {
			if ci >= always && ci != alone {
				continue
			}
			_, res, err := h.Query(q)
			if err != nil {
				t.Fatalf("seed %d query %d (config %d): %v\n%s", seed, i, ci, err, q)
			}
			got := slt.Render(res, "rowsort")
			if ci == 0 {
				first = got
				continue
			}
			if strings.Join(got, "\n") != strings.Join(first, "\n") {
				t.Fatalf("seed %d query %d: config %d (%+v) differs\n%s\n--- config 0:\n%s\n--- config %d:\n%s", seed, i, ci, configs[ci], q,
					strings.Join(first, "\n"), ci, strings.Join(got, "\n"))
			}
		}
	}
}

type queryGen struct{ rng *rand.Rand }

func (g *queryGen) pick(s ...string) string { return s[g.rng.Intn(len(s))] }

func (g *queryGen) pred(depth int, cols []string) string {
	if depth > 0 && g.rng.Intn(3) == 0 {
		op := g.pick("AND", "OR")
		return "(" + g.pred(depth-1, cols) + " " + op + " " + g.pred(depth-1, cols) + ")"
	}
	if depth > 0 && g.rng.Intn(6) == 0 {
		return "NOT " + g.pred(depth-1, cols)
	}
	c := cols[g.rng.Intn(len(cols))]
	if base := c[strings.LastIndex(c, ".")+1:]; base == "c" || base == "f" {
		switch g.rng.Intn(4) {
		case 0:
			return c + " IS NULL"
		case 1:
			return c + " IN ('s1', 's3', 'f1')"
		case 2:
			return c + " LIKE '" + g.pick("s%", "%1", "f_") + "'"
		}
		return c + " " + g.pick("=", "<>", "<", ">=") + " '" + g.pick("s2", "s4", "f2") + "'"
	}
	switch g.rng.Intn(5) {
	case 0:
		return c + " IS NOT NULL"
	case 1:
		return fmt.Sprintf("%s BETWEEN %d AND %d", c, g.rng.Intn(10)-3, g.rng.Intn(40))
	case 2:
		return fmt.Sprintf("%s IN (%d, %d, %d)", c, g.rng.Intn(12), g.rng.Intn(12), g.rng.Intn(12))
	}
	return fmt.Sprintf("%s %s %d", c, g.pick("=", "<>", "<", "<=", ">", ">="), g.rng.Intn(30)-5)
}

func (g *queryGen) query() string {
	switch g.rng.Intn(12) {
	case 11: // outer joins under inner joins (outer-to-inner simplification)
		return fmt.Sprintf("SELECT r1.k, r2.e, r3.f FROM r1 %s r2 ON r1.a = r2.a, r3 WHERE %s AND %s",
			g.pick("LEFT JOIN", "RIGHT JOIN", "FULL JOIN"),
			g.pick("r2.a = r3.a", "coalesce(r2.a, 0) = r3.a", "r1.a = r3.a", "r2.e + 1 > r3.a", "r2.e IS NULL"),
			g.pred(1, []string{"r2.e", "r1.b", "r3.f"}))
	case 10: // filters above windows (pushed below on partition columns)
		return fmt.Sprintf("SELECT * FROM (SELECT a, c, k, sum(b) OVER (PARTITION BY a) AS s, count(*) OVER (PARTITION BY a, c) AS n FROM r1) w WHERE %s",
			g.pred(2, []string{"a", "c", "s", "n"}))
	case 6: // windows
		return fmt.Sprintf("SELECT k, a, sum(b) OVER (PARTITION BY a ORDER BY k ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), rank() OVER (PARTITION BY c ORDER BY b NULLS FIRST, k) FROM r1 WHERE %s",
			g.pred(2, []string{"a", "b", "c", "d"}))
	case 7: // subqueries in the select list
		return fmt.Sprintf("SELECT k, (SELECT max(e) FROM r2 WHERE r2.a = r1.a), a %s (SELECT a FROM r3 WHERE %s), EXISTS (SELECT 1 FROM r2 WHERE r2.k = r1.k) FROM r1 WHERE %s",
			g.pick("IN", "NOT IN"), g.pred(1, []string{"r3.a", "r3.f"}), g.pred(1, []string{"r1.b", "r1.c"}))
	case 8: // grouping sets
		return fmt.Sprintf("SELECT a, c, count(*), sum(b), GROUPING(a, c) FROM r1 WHERE %s GROUP BY %s(a, c)",
			g.pred(2, []string{"a", "b", "d"}), g.pick("ROLLUP", "CUBE"))
	case 9: // set operations
		return fmt.Sprintf("SELECT a FROM r1 WHERE %s %s SELECT a FROM r2 WHERE %s",
			g.pred(1, []string{"b", "c"}), g.pick("INTERSECT", "EXCEPT", "UNION", "INTERSECT ALL", "EXCEPT ALL"), g.pred(1, []string{"e", "k"}))
	case 0: // join with filters
		kind := g.pick("JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN")
		return fmt.Sprintf("SELECT r1.k, r1.a, r2.e FROM r1 %s r2 ON r1.a = r2.a AND %s WHERE %s",
			kind, g.pred(0, []string{"r2.e", "r1.b"}), g.pred(2, []string{"r1.a", "r1.b", "r1.c", "r2.e", "r1.k"}))
	case 1: // aggregation
		return fmt.Sprintf("SELECT r1.c, count(*), sum(r1.b), min(r1.a), max(r1.d) FROM r1 WHERE %s GROUP BY r1.c HAVING count(*) > %d",
			g.pred(2, []string{"r1.a", "r1.b", "r1.d"}), g.rng.Intn(3))
	case 2: // subqueries
		return fmt.Sprintf("SELECT r1.k FROM r1 WHERE %s AND r1.a %s (SELECT r3.a FROM r3 WHERE %s)",
			g.pred(1, []string{"r1.b", "r1.c"}), g.pick("IN", "NOT IN"), g.pred(1, []string{"r3.a", "r3.f"}))
	case 3:
		return fmt.Sprintf("SELECT r1.k, r1.b FROM r1 WHERE %sEXISTS (SELECT 1 FROM r2 WHERE r2.a = r1.a AND %s)",
			g.pick("", "NOT "), g.pred(1, []string{"r2.e", "r2.k"}))
	case 4: // three-way comma join, reordered by the optimizer
		return fmt.Sprintf("SELECT r1.k, r2.k, r3.f FROM r1, r2, r3 WHERE r1.k = r2.k AND r2.a = r3.a AND %s",
			g.pred(1, []string{"r1.b", "r2.e", "r3.f"}))
	}
	// derived table, set operation, top-N
	return fmt.Sprintf("SELECT x, y FROM (SELECT a AS x, b + 1 AS y FROM r1 WHERE %s UNION ALL SELECT a, e FROM r2) s WHERE %s ORDER BY x NULLS FIRST, y NULLS FIRST LIMIT %d",
		g.pred(1, []string{"a", "b", "c"}), g.pred(1, []string{"x", "y"}), 5+g.rng.Intn(20))
}
