package plan_test

import (
	"context"
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

// TestEagerAggregate checks rules eager_aggregate (and the aggregation
// before a join with one row, which it also does) and semi_join_set_ops on
// random sales rows over a
// dimension whose keys repeat (a key matching two rows counts each partial
// group twice, as it counts each row twice without the rule) and are
// sometimes NULL: each query gives the same rows with the rule and without
// it, and the rule rewrites exactly the queries it should.
func TestEagerAggregate(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	null := func(p float64, s string) string {
		if rng.Float64() < p {
			return "NULL"
		}
		return s
	}
	var dim, fact []string
	for k := 0; k < 40; k++ {
		for range 1 + rng.Intn(2) {
			dim = append(dim, fmt.Sprintf("(%s, %s, 'n%d')", null(0.05, fmt.Sprint(k)), null(0.1, fmt.Sprintf("'c%d'", rng.Intn(5))), rng.Intn(8)))
		}
	}
	for range 12000 {
		fact = append(fact, fmt.Sprintf("(%s, %d, %s, %s)", null(0.05, fmt.Sprint(rng.Intn(45))), rng.Intn(3),
			null(0.1, fmt.Sprint(rng.Intn(100)-20)), null(0.1, fmt.Sprintf("%d.%02d", rng.Intn(1000), rng.Intn(100)))))
	}
	on, off := ruleHarness(t, []string{
		"CREATE TABLE dim (k INT, cat VARCHAR, name VARCHAR)",
		"CREATE TABLE fact (fk INT, yr INT, q INT, price DECIMAL(7,2))",
		"INSERT INTO dim VALUES " + strings.Join(dim, ", "),
		"INSERT INTO fact VALUES " + strings.Join(fact, ", "),
	}, "eager_aggregate", "semi_join_set_ops")
	for _, c := range []struct {
		q     string
		eager bool
	}{
		{"SELECT cat, name, yr, sum(q), sum(price), count(*), count(q), min(price), max(q) FROM fact JOIN dim ON fk = k GROUP BY cat, name, yr", true},
		{"SELECT cat, sum(price) FILTER (WHERE q > 10), count(*) FILTER (WHERE price < 500) FROM fact, dim WHERE k = fk GROUP BY cat", true},
		{"SELECT name, yr * 10 + 1, min(q) FROM dim JOIN fact ON fk = k GROUP BY name, yr * 10 + 1", true},
		// Pivots: SUM, MIN and MAX of a CASE picking by the dimension's
		// strings among arms over the fact side (q59's day names), and a
		// union of fact rows (q02's web and catalog sales).
		{"SELECT yr, sum(CASE WHEN name = 'n1' THEN price END), sum(CASE WHEN name = 'n2' THEN price ELSE NULL END), min(CASE WHEN cat = 'c1' THEN q WHEN cat = 'c2' THEN q * 2 END), max(CASE WHEN name < 'n3' THEN q END), count(*) FROM fact JOIN dim ON fk = k GROUP BY yr", true},
		{"SELECT k % 3, sum(CASE WHEN name = 'n1' THEN q END), sum(q) FROM fact JOIN dim ON fk = k GROUP BY k % 3", true},
		{"SELECT name, sum(p), max(p) FROM (SELECT fk AS f, price AS p FROM fact UNION ALL SELECT fk, price FROM fact) u JOIN dim ON f = k GROUP BY name", true},
		// Two dimensions: the partial aggregation splits again over its
		// own join (q62's).
		{"SELECT d1.cat, d2.name, sum(q), count(*), min(price), avg(q) FROM fact JOIN dim d1 ON fk = d1.k JOIN dim d2 ON yr = d2.k GROUP BY d1.cat, d2.name", true},
		{"SELECT d2.cat, d1.name, yr, max(CASE WHEN d1.cat = 'c1' THEN q END), sum(price) FROM fact JOIN dim d1 ON fk = d1.k JOIN dim d2 ON yr = d2.k GROUP BY d2.cat, d1.name, yr", true},
		// Not pivots: COUNT (no pick counts 0), an ELSE, a condition or an
		// arm over both sides, a fixed-width condition with no string to
		// save.
		{"SELECT yr, count(CASE WHEN name = 'n1' THEN q END) FROM fact JOIN dim ON fk = k GROUP BY yr", false},
		{"SELECT yr, sum(CASE WHEN name = 'n1' THEN q ELSE 0 END) FROM fact JOIN dim ON fk = k GROUP BY yr", false},
		{"SELECT yr, sum(CASE WHEN name = 'n1' AND q > 5 THEN price END) FROM fact JOIN dim ON fk = k GROUP BY yr", false},
		{"SELECT yr, sum(CASE WHEN name = 'n1' THEN length(cat) END) FROM fact JOIN dim ON fk = k GROUP BY yr", false},
		{"SELECT yr, sum(CASE WHEN k > 5 THEN q END) FROM fact JOIN dim ON fk = k GROUP BY yr", false},
		// An integer AVG: the folded sum over the folded count (all-NULL
		// groups, negative means truncated toward zero, a FILTER).
		{"SELECT cat, avg(q), avg(fk) FILTER (WHERE q < 0), count(*) FROM fact JOIN dim ON fk = k GROUP BY cat", true},
		{"SELECT name, avg(CASE WHEN q > 70 THEN q END) FROM fact JOIN dim ON fk = k GROUP BY name", true},
		// Grouping sets (q22's ROLLUP), with GROUPING() and a fact-side
		// group column among the sets.
		{"SELECT cat, name, avg(q), sum(price), grouping(cat, name) FROM fact JOIN dim ON fk = k GROUP BY ROLLUP (cat, name)", true},
		{"SELECT cat, yr, name, min(q), count(*) FROM fact JOIN dim ON fk = k GROUP BY GROUPING SETS ((cat, yr), (name), (yr), ())", true},
		{"SELECT cat, name, sum(q) FROM fact JOIN dim ON fk = k GROUP BY CUBE (cat, name)", true},
		// Not rewritten: AVG of a decimal or a float (its sum would round
		// differently) and DISTINCT do not fold over partial results; a
		// fixed-width dimension group saves no strings; an aggregate over
		// both sides; a join dropping most rows.
		{"SELECT cat, avg(price) FROM fact JOIN dim ON fk = k GROUP BY cat", false},
		{"SELECT cat, avg(q * 1.5e0) FROM fact JOIN dim ON fk = k GROUP BY cat", false},
		{"SELECT cat, count(DISTINCT q) FROM fact JOIN dim ON fk = k GROUP BY cat", false},
		{"SELECT k, sum(q) FROM fact JOIN dim ON fk = k GROUP BY k", false},
		{"SELECT cat, sum(q + length(name)) FROM fact JOIN dim ON fk = k GROUP BY cat", false},
		{"SELECT cat, sum(q) FROM fact JOIN dim ON fk = k WHERE name = 'n1' GROUP BY cat", false},
		// A join with one row (a global aggregate): the aggregation runs
		// first, its MIN/MAX of the one row are that row's values (q23's
		// best_ss_customer), also with no input row, a NULL value, a
		// HAVING.
		{"SELECT fk, sum(q), max(m), min(m * 2), any_value(m) FROM fact, (SELECT max(q) AS m FROM fact) s GROUP BY fk", true},
		{"SELECT fk, count(*) FROM fact, (SELECT max(q) AS m FROM fact) s WHERE q > 1000 GROUP BY fk", true},
		{"SELECT yr, sum(q) FROM (SELECT min(price) AS m FROM fact WHERE q > 1000) s, fact GROUP BY yr HAVING sum(q) > max(m) OR max(m) IS NULL", true},
		{"SELECT fk, sum(q * 2) FROM fact, (SELECT avg(q) AS m FROM fact) s GROUP BY fk HAVING sum(q) > 10 * max(m)", true},
		// Not: SUM or COUNT of the one row's value (repeated per row), a
		// global aggregate or grouping sets (a row for no input), a side
		// that is not known to give one row.
		{"SELECT fk, sum(m) FROM fact, (SELECT max(q) AS m FROM fact) s GROUP BY fk", false},
		{"SELECT fk, count(m) FROM fact, (SELECT max(q) AS m FROM fact) s GROUP BY fk", false},
		{"SELECT max(m), sum(q) FROM fact, (SELECT max(q) AS m FROM fact) s WHERE q > 1000", false},
		{"SELECT fk, yr, max(m) FROM fact, (SELECT max(q) AS m FROM fact) s GROUP BY ROLLUP (fk, yr)", false},
		{"SELECT fk, max(m) FROM fact, (SELECT q AS m FROM fact ORDER BY q LIMIT 1) s GROUP BY fk", false},
		// Rule semi_join_set_ops: INTERSECT, EXCEPT and DISTINCT of one
		// side's columns of a join read that side semi-joined (q14's
		// cross_items); not INTERSECT ALL, nor columns of both sides.
		{"SELECT cat, name FROM fact JOIN dim ON fk = k INTERSECT SELECT cat, name FROM dim JOIN fact ON k = fk WHERE q > 50", true},
		{"SELECT name FROM dim JOIN fact ON k = fk EXCEPT SELECT name FROM fact JOIN dim ON fk = k WHERE yr = 1", true},
		{"SELECT DISTINCT yr, q FROM fact JOIN dim ON fk = k WHERE q < 0", true},
		{"SELECT cat FROM fact JOIN dim ON fk = k INTERSECT ALL SELECT cat FROM dim", false},
		// Columns of both sides, a string among the dimension's: the fact
		// side is deduplicated first, on its columns and join key (q38's),
		// under DISTINCT, INTERSECT and EXCEPT, the fact side left or right;
		// not with only fixed-width dimension columns, a volatile
		// projection, a residual, ALL, or a fact side estimated under
		// eagerMinRows.
		{"SELECT DISTINCT cat, yr FROM fact JOIN dim ON fk = k", true},
		{"SELECT DISTINCT name, q, yr FROM dim JOIN fact ON k = fk", true},
		{"SELECT DISTINCT name, q, yr FROM dim JOIN fact ON k = fk WHERE price > 100", false}, // too few rows to pay
		{"SELECT cat, yr FROM fact JOIN dim ON fk = k INTERSECT SELECT cat, yr FROM fact JOIN dim ON fk = k WHERE q > 10", true},
		{"SELECT name, q FROM fact JOIN dim ON fk = k EXCEPT SELECT name, q FROM dim JOIN fact ON k = fk WHERE yr = 2", true},
		{"SELECT DISTINCT k, yr FROM fact JOIN dim ON fk = k", false},
		{"SELECT DISTINCT cat, yr + random() * 0 FROM fact JOIN dim ON fk = k", false},
		{"SELECT DISTINCT cat, yr FROM fact JOIN dim ON fk = k AND q > length(name)", false},
		{"SELECT cat, yr FROM fact JOIN dim ON fk = k UNION ALL SELECT cat, yr FROM fact JOIN dim ON fk = k", false},
	} {
		checkRule(t, seed, on, off, c.q, c.eager)
	}
}

// ruleHarness loads setup into a fresh warehouse and opens it twice: with
// every rule, and with rules switched off. Both close at the test's end.
func ruleHarness(t *testing.T, setup []string, rules ...string) (on, off *slt.InProc) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	load, err := slt.NewInProc(ctx, dir, mem, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range setup {
		if err := load.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := load.Close(); err != nil {
		t.Fatal(err)
	}
	open := func(opts plan.Options) *slt.InProc {
		h, err := slt.NewInProc(ctx, dir, mem, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	return open(plan.Options{}), open(plan.Options{DisabledRules: rules})
}

// checkRule fails unless q gives the same rows on and off, and the rules
// off change q's plan exactly when rewritten.
func checkRule(t *testing.T, seed int64, on, off *slt.InProc, q string, rewritten bool) {
	t.Helper()
	b, err := on.Bind(q)
	if err != nil {
		t.Fatal(err)
	}
	bOff, err := off.Bind(q)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.(*plan.Query).Explain() != bOff.(*plan.Query).Explain(); got != rewritten {
		t.Errorf("%s: rewritten %v, want %v\n%s", q, got, rewritten, b.(*plan.Query).Explain())
	}
	_, want, err := off.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := on.Query(q)
	if err != nil {
		t.Fatalf("%s: %v with the rules, no error without", q, err)
	}
	w, g := slt.Render(want, "rowsort"), slt.Render(got, "rowsort")
	if !slices.Equal(w, g) {
		t.Errorf("seed %d: %s: with the rule\n%s\nwithout\n%s", seed, q, strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}
