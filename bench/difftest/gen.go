package difftest

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
)

// Gen generates random queries over the tables of Columns: typed
// expression trees, so that nearly every query is valid in both engines.
//
// Left out because the two engines legitimately differ (flightd follows
// Flink and Postgres where DuckDB does not):
//   - integer / integer (flightd: integer division; DuckDB: DOUBLE) and
//     division or modulo by zero (flightd: error; DuckDB: NULL or Inf):
//     divisors are always NULLIF(x, 0) and one side of / is DOUBLE or
//     DECIMAL;
//   - CONCAT with a NULL argument (Flink: NULL) and GREATEST/LEAST with a
//     NULL argument (Flink: NULL; DuckDB skips NULLs): || is used instead,
//     GREATEST/LEAST only on non-NULL arguments;
//   - CAST of a fractional value to an integer (DuckDB rounds, flightd
//     truncates toward zero as Flink does): the value is truncated with
//     trunc() first; and CAST(DOUBLE AS VARCHAR) (digits);
//   - SUBSTR with a start below 1 (DuckDB counts from the end);
//   - the scale of decimal results where the engines type them apart:
//     round(x, n) (DuckDB: scale n) and DuckDB's common type of
//     DECIMAL(38,2) and DECIMAL(38,1), which keeps scale 1 and rounds.
//     Every decimal expression is scale 2 (rounding and casts to other
//     scales are cast back to DECIMAL(12,2)), and only columns are cast
//     to VARCHAR;
//   - sums of inexact doubles (order of summation): aggregate arguments
//     never divide, and the data's doubles are multiples of 1/4.
type Gen struct {
	r *rand.Rand
	// flink spells the query in Flink's dialect where DuckDB's spelling
	// differs (spell); the spelling never draws from r, so the two
	// spellings of a query are the same query.
	flink  bool
	alias  int
	tables []string
	// ctes are the WITH queries of the current query.
	ctes []cte
}

type cte struct {
	name  string
	types []Type
}

// NewGen returns the generator of query number query of run seed, over
// the named tables.
func NewGen(seed uint64, query int, tables []string) *Gen {
	return &Gen{r: rand.New(rand.NewPCG(seed, uint64(query))), tables: tables}
}

// NewFlinkGen is NewGen spelling the query in Flink's dialect: the same
// query as NewGen's for the same arguments.
func NewFlinkGen(seed uint64, query int, tables []string) *Gen {
	g := NewGen(seed, query, tables)
	g.flink = true
	return g
}

// avg returns the AVG call call over an argument of type t: over
// integers Flink's and flightd's AVG is the mean truncated toward zero,
// DuckDB's a DOUBLE, truncated here (its plain AVG calls DuckDB.Query
// rewrites; these may be DISTINCT or windows).
func (g *Gen) avg(call string, t Type) string {
	if t == TInt && !g.flink {
		return "trunc(" + call + ")"
	}
	return call
}

// spell returns the DuckDB or the Flink spelling of the same operation.
func (g *Gen) spell(duckdb, flink string) string {
	if g.flink {
		return flink
	}
	return duckdb
}

// term is a value a scope offers as an expression leaf.
type term struct {
	sql string
	t   Type
}

// scope is what an expression can refer to: the columns of the FROM
// clause, or (in an aggregate query) the group keys and aggregates of an
// inner scope. outer is the enclosing query's scope, for correlation.
type scope struct {
	terms []term
	// agg, if set, is the scope aggregates are computed over: the
	// expression generator may then call aggregate functions.
	agg   *scope
	outer *scope
	// rels are the FROM items: alias and its columns.
	rels []rel
}

type rel struct {
	alias string
	cols  []term
}

func (s *scope) ofType(t Type) []term {
	var out []term
	for _, x := range s.terms {
		if x.t == t {
			out = append(out, x)
		}
	}
	return out
}

// ectx is the state of one expression: where it is and what it may use.
type ectx struct {
	sc *scope
	// noDiv forbids division (aggregate arguments: sums stay exact).
	noDiv bool
	// sub allows subqueries.
	sub bool
	// noAgg forbids aggregates even where the scope has them.
	noAgg bool
}

func (g *Gen) n(k int) int         { return g.r.IntN(k) }
func (g *Gen) p(pct int) bool      { return g.r.IntN(100) < pct }
func pick[T any](g *Gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

func (g *Gen) newAlias() string {
	g.alias++
	return fmt.Sprintf("a%d", g.alias)
}

// literal returns a literal of type t, sometimes NULL (typed, so that
// both engines agree on the expression's type).
func (g *Gen) literal(t Type) string {
	if g.p(5) {
		return "CAST(NULL AS " + castName(t) + ")"
	}
	switch t {
	case TInt:
		return fmt.Sprint(g.n(21) - 10)
	case TDec:
		return decimalLit(int64(g.n(2001)-1000), 2)
	case TFloat:
		return "CAST(" + fmt.Sprint(float64(g.n(81)-40)/4) + " AS DOUBLE)"
	case TStr:
		return quote(pick(g, strPool))
	case TDate:
		return fmt.Sprintf("DATE '202%d-%02d-%02d'", g.n(2), 1+g.n(12), 1+g.n(28))
	default:
		return pick(g, []string{"TRUE", "FALSE"})
	}
}

func castName(t Type) string {
	return [...]string{"INT", "DECIMAL(12,2)", "DOUBLE", "VARCHAR", "DATE", "BOOLEAN"}[t]
}

// expr returns an expression of type t.
func (g *Gen) expr(c ectx, t Type, depth int) string {
	if depth <= 0 || g.p(30) {
		return g.leaf(c, t)
	}
	if c.sc.agg != nil && !c.noAgg && g.p(35) {
		if a, ok := g.aggregate(c, t, depth); ok {
			return a
		}
	}
	if c.sub && g.p(6) {
		if s, ok := g.scalarSubquery(c, t); ok {
			return s
		}
	}
	d := depth - 1
	switch g.n(10) {
	case 0:
		return fmt.Sprintf("CASE WHEN %s THEN %s ELSE %s END", g.expr(c, TBool, d), g.expr(c, t, d), g.expr(c, t, d))
	case 1:
		if t != TBool {
			return fmt.Sprintf("COALESCE(%s, %s)", g.expr(c, t, d), g.expr(c, t, d))
		}
	case 2:
		if t != TBool && t != TFloat {
			return fmt.Sprintf("CASE %s WHEN %s THEN %s WHEN %s THEN %s END", g.expr(c, t, d), g.literal(t), g.expr(c, t, d), g.literal(t), g.expr(c, t, d))
		}
	case 3:
		if t != TBool {
			return fmt.Sprintf("NULLIF(%s, %s)", g.expr(c, t, d), g.expr(c, t, d))
		}
	case 4:
		if t != TBool && t != TFloat {
			// Non-NULL arguments only (Flink: NULL if any is NULL).
			lit := g.literal(t)
			for strings.HasPrefix(lit, "CAST(NULL") {
				lit = g.literal(t)
			}
			return fmt.Sprintf("%s(COALESCE(%s, %s), %s)", pick(g, []string{"greatest", "least"}), g.expr(c, t, d), lit, lit)
		}
	}
	switch t {
	case TInt:
		return g.intExpr(c, d)
	case TDec:
		return g.decExpr(c, d)
	case TFloat:
		return g.floatExpr(c, d)
	case TStr:
		return g.strExpr(c, d)
	case TDate:
		return g.dateExpr(c, d)
	}
	return g.boolExpr(c, d)
}

func (g *Gen) leaf(c ectx, t Type) string {
	if g.p(85) {
		if ts := c.sc.ofType(t); len(ts) > 0 {
			return pick(g, ts).sql
		}
		if c.sc.agg != nil && !c.noAgg {
			if a, ok := g.aggregate(c, t, 1); ok {
				return a
			}
		}
	}
	return g.literal(t)
}

func (g *Gen) intExpr(c ectx, d int) string {
	switch g.n(12) {
	case 0, 1:
		return fmt.Sprintf("(%s + %s)", g.expr(c, TInt, d), g.expr(c, TInt, d))
	case 2:
		return fmt.Sprintf("(%s - %s)", g.expr(c, TInt, d), g.expr(c, TInt, d))
	case 3:
		return fmt.Sprintf("(%s * %s)", g.expr(c, TInt, d), g.expr(c, TInt, d))
	case 4:
		return fmt.Sprintf("(%s %% NULLIF(%s, 0))", g.expr(c, TInt, d), g.expr(c, TInt, d))
	case 5:
		return fmt.Sprintf("(- %s)", g.expr(c, TInt, d))
	case 6:
		return fmt.Sprintf("abs(%s)", g.expr(c, TInt, d))
	case 7:
		return fmt.Sprintf(g.spell("length(%s)", "CHAR_LENGTH(%s)"), g.expr(c, TStr, d))
	case 8:
		part := pick(g, []string{"year", "month", "day", "quarter", "doy", "dow", "isodow", "week"})
		if part == "dow" {
			// DuckDB counts Sunday as 0, Flink (and flightd) as 1; ISODOW
			// (Monday 1 to Sunday 7) is one in all three.
			return fmt.Sprintf(g.spell("(extract(isodow FROM %s) %% 7 + 1)", "extract(DOW FROM %s)"), g.expr(c, TDate, d))
		}
		return fmt.Sprintf("extract(%s FROM %s)", part, g.expr(c, TDate, d))
	case 9:
		from, to := g.expr(c, TDate, d), g.expr(c, TDate, d)
		return fmt.Sprintf(g.spell("date_diff('day', %s, %s)", "TIMESTAMPDIFF(DAY, %s, %s)"), from, to)
	case 10:
		return fmt.Sprintf(g.spell("CAST(trunc(%s) AS %s)", "CAST(TRUNCATE(%s) AS %s)"), g.expr(c, TDec, d), pick(g, []string{"INT", "BIGINT"}))
	}
	s, sub := g.expr(c, TStr, d), g.expr(c, TStr, d)
	if g.flink {
		return fmt.Sprintf("POSITION(%s IN %s)", sub, s)
	}
	return fmt.Sprintf("strpos(%s, %s)", s, sub)
}

func (g *Gen) decExpr(c ectx, d int) string {
	switch g.n(8) {
	case 0, 1:
		return fmt.Sprintf("(%s + %s)", g.expr(c, TDec, d), g.expr(c, pick(g, []Type{TDec, TInt}), d))
	case 2:
		return fmt.Sprintf("(%s - %s)", g.expr(c, TDec, d), g.expr(c, TDec, d))
	case 3:
		return fmt.Sprintf("(%s * %s)", g.expr(c, TDec, d), g.expr(c, TInt, d))
	case 4:
		return fmt.Sprintf("CAST(%s AS DECIMAL(12,2))", g.expr(c, TInt, d))
	case 5:
		return fmt.Sprintf("CAST(round(%s, %d) AS DECIMAL(12,2))", g.expr(c, TDec, d), g.n(3))
	case 6:
		return fmt.Sprintf("CAST(CAST(%s AS DECIMAL(12,1)) AS DECIMAL(12,2))", g.expr(c, pick(g, []Type{TDec, TFloat}), d))
	}
	return fmt.Sprintf("abs(%s)", g.expr(c, TDec, d))
}

func (g *Gen) floatExpr(c ectx, d int) string {
	switch g.n(7) {
	case 0, 1:
		return fmt.Sprintf("(%s + %s)", g.expr(c, TFloat, d), g.expr(c, pick(g, []Type{TFloat, TInt}), d))
	case 2:
		return fmt.Sprintf("(%s * %s)", g.expr(c, TFloat, d), g.expr(c, TFloat, d))
	case 3:
		if !c.noDiv {
			num := g.expr(c, pick(g, []Type{TFloat, TInt, TDec}), d)
			return fmt.Sprintf("(CAST(%s AS DOUBLE) / NULLIF(%s, 0))", num, g.expr(c, TFloat, d))
		}
	case 4:
		return fmt.Sprintf("CAST(%s AS DOUBLE)", g.expr(c, pick(g, []Type{TInt, TDec}), d))
	case 5:
		return fmt.Sprintf("floor(%s)", g.expr(c, TFloat, d))
	}
	return fmt.Sprintf("(- %s)", g.expr(c, TFloat, d))
}

func (g *Gen) strExpr(c ectx, d int) string {
	switch g.n(14) {
	case 0, 1:
		return fmt.Sprintf("(%s || %s)", g.expr(c, TStr, d), g.expr(c, TStr, d))
	case 2:
		return fmt.Sprintf("upper(%s)", g.expr(c, TStr, d))
	case 3:
		return fmt.Sprintf("lower(%s)", g.expr(c, TStr, d))
	case 4:
		return fmt.Sprintf("substr(%s, %d, %d)", g.expr(c, TStr, d), 1+g.n(3), g.n(4))
	case 5:
		return fmt.Sprintf("%s(%s)", pick(g, []string{"trim", "ltrim", "rtrim"}), g.expr(c, TStr, d))
	case 6:
		return fmt.Sprintf("replace(%s, %s, %s)", g.expr(c, TStr, d), quote(pick(g, []string{"a", "b", "ab", " "})), g.expr(c, TStr, d))
	case 7:
		if g.p(20) {
			return fmt.Sprintf("CAST(%s AS VARCHAR)", g.leaf(c, TDec))
		}
		t := pick(g, []Type{TInt, TDate, TBool})
		if t == TBool {
			// Flink writes TRUE and FALSE, DuckDB true and false.
			return fmt.Sprintf(g.spell("upper(CAST(%s AS VARCHAR))", "CAST(%s AS VARCHAR)"), g.expr(c, t, d))
		}
		return fmt.Sprintf("CAST(%s AS VARCHAR)", g.expr(c, t, d))
	case 8:
		return fmt.Sprintf("%s(%s, %d)", pick(g, []string{"left", "right"}), g.expr(c, TStr, d), g.n(4))
	case 9:
		return fmt.Sprintf("%s(%s, %d, 'x')", pick(g, []string{"lpad", "rpad"}), g.expr(c, TStr, d), g.n(5))
	case 10:
		// Both skip NULL arguments and give NULL for a NULL separator.
		return fmt.Sprintf("concat_ws(%s, %s, %s)", quote(pick(g, []string{",", "", "--"})), g.expr(c, TStr, d), g.expr(c, TStr, d))
	case 11:
		return fmt.Sprintf("%s(%s)", pick(g, []string{"md5", "sha256", "hex"}), g.expr(c, TStr, d))
	case 12:
		// from has no repeated character: the engines' rules for one differ.
		return fmt.Sprintf("translate(%s, %s, %s)", g.expr(c, TStr, d), quote(pick(g, []string{"ab", "a ", "eta"})), quote(pick(g, []string{"x", "", "XY", "123"})))
	}
	return g.expr(c, TStr, d)
}

func (g *Gen) dateExpr(c ectx, d int) string {
	switch g.n(3) {
	case 0:
		// Flink adds an INTERVAL to a DATE, not a number.
		return fmt.Sprintf(g.spell("(%s + %d)", "(%s + INTERVAL '%d' DAY)"), g.expr(c, TDate, d), g.n(61)-30)
	case 1:
		unit := pick(g, []string{"month", "year", "quarter"})
		if g.flink {
			return fmt.Sprintf("CAST(FLOOR(%s TO %s) AS DATE)", g.expr(c, TDate, d), strings.ToUpper(unit))
		}
		return fmt.Sprintf("CAST(date_trunc('%s', %s) AS DATE)", unit, g.expr(c, TDate, d))
	}
	return g.expr(c, TDate, d)
}

// comparable types for comparisons: the numeric classes mix.
func (g *Gen) cmpType() Type {
	return pick(g, []Type{TInt, TInt, TDec, TFloat, TStr, TDate, TBool})
}

func (g *Gen) boolExpr(c ectx, d int) string {
	switch g.n(14) {
	case 0, 1, 2:
		t := g.cmpType()
		return fmt.Sprintf("(%s %s %s)", g.expr(c, t, d), pick(g, []string{"=", "<>", "<", "<=", ">", ">="}), g.expr(c, t, d))
	case 3:
		return fmt.Sprintf("(%s AND %s)", g.expr(c, TBool, d), g.expr(c, TBool, d))
	case 4:
		return fmt.Sprintf("(%s OR %s)", g.expr(c, TBool, d), g.expr(c, TBool, d))
	case 5:
		return fmt.Sprintf("(NOT %s)", g.expr(c, TBool, d))
	case 6:
		return fmt.Sprintf("(%s IS %sNULL)", g.expr(c, g.cmpType(), d), pick(g, []string{"", "NOT "}))
	case 7:
		t := g.cmpType()
		var items []string
		for range 1 + g.n(4) {
			if g.p(70) {
				items = append(items, g.literal(t))
			} else {
				items = append(items, g.expr(c, t, d))
			}
		}
		return fmt.Sprintf("(%s %sIN (%s))", g.expr(c, t, d), pick(g, []string{"", "NOT "}), strings.Join(items, ", "))
	case 8:
		t := pick(g, []Type{TInt, TDec, TFloat, TStr, TDate})
		return fmt.Sprintf("(%s %sBETWEEN %s AND %s)", g.expr(c, t, d), pick(g, []string{"", "NOT "}), g.expr(c, t, d), g.expr(c, t, d))
	case 9:
		pat := pick(g, []string{"a%", "%b", "_b%", "ab_", "%", "", "%a%b%", "x_y", "A%"})
		x, not, op := g.expr(c, TStr, d), pick(g, []string{"", "NOT "}), pick(g, []string{"LIKE", "LIKE", "ILIKE"})
		if g.flink && op == "ILIKE" {
			// Flink has no ILIKE.
			x, op, pat = "LOWER("+x+")", "LIKE", strings.ToLower(pat)
		}
		return fmt.Sprintf("(%s %s%s '%s')", x, not, op, pat)
	case 10:
		t := g.cmpType()
		return fmt.Sprintf("(%s IS %sDISTINCT FROM %s)", g.expr(c, t, d), pick(g, []string{"", "NOT "}), g.expr(c, t, d))
	case 11:
		if c.sub {
			if s, ok := g.subqueryPredicate(c); ok {
				return s
			}
		}
	case 12:
		return fmt.Sprintf("(%s IS %s)", g.expr(c, TBool, d), pick(g, []string{"TRUE", "FALSE", "NOT TRUE", "NOT FALSE"}))
	}
	return g.expr(c, TBool, d)
}

// aggregate returns an aggregate call of result type t over the scope's
// aggregation input.
func (g *Gen) aggregate(c ectx, t Type, depth int) (string, bool) {
	in := ectx{sc: c.sc.agg, noDiv: true}
	d := max(depth-1, 1)
	switch t {
	case TInt:
		switch g.n(5) {
		case 0:
			return "count(*)", true
		case 1:
			return fmt.Sprintf("count(%s)", g.expr(in, pick(g, []Type{TInt, TStr, TDate, TDec}), d)), true
		case 2:
			return fmt.Sprintf("count(DISTINCT %s)", g.expr(in, pick(g, []Type{TInt, TStr, TDate, TDec, TBool}), d)), true
		case 3:
			return fmt.Sprintf("sum(%s%s)", pick(g, []string{"", "", "DISTINCT "}), g.expr(in, TInt, d)), true
		}
		return fmt.Sprintf("%s(%s)", pick(g, []string{"min", "max"}), g.expr(in, TInt, d)), true
	case TDec:
		if g.p(50) {
			return fmt.Sprintf("sum(%s)", g.expr(in, TDec, d)), true
		}
		return fmt.Sprintf("%s(%s)", pick(g, []string{"min", "max"}), g.expr(in, TDec, d)), true
	case TFloat:
		switch g.n(3) {
		case 0:
			distinct, t := pick(g, []string{"", "", "DISTINCT "}), pick(g, []Type{TInt, TFloat})
			return g.avg(fmt.Sprintf("avg(%s%s)", distinct, g.expr(in, t, d)), t), true
		case 1:
			return fmt.Sprintf("sum(%s)", g.expr(in, TFloat, d)), true
		}
		return fmt.Sprintf("%s(%s)", pick(g, []string{"min", "max"}), g.expr(in, TFloat, d)), true
	case TStr, TDate:
		return fmt.Sprintf("%s(%s)", pick(g, []string{"min", "max"}), g.expr(in, t, d)), true
	case TBool:
		// Flink has no BOOL_AND and BOOL_OR: MIN and MAX are them (FALSE < TRUE).
		f := pick(g, []string{"bool_and", "bool_or"})
		if g.flink {
			f = map[string]string{"bool_and": "MIN", "bool_or": "MAX"}[f]
		}
		return fmt.Sprintf("%s(%s)", f, g.expr(in, TBool, d)), true
	}
	return "", false
}

// fromItem is one table (or derived table) of a FROM clause.
func (g *Gen) fromItem(outer *scope, depth int) (string, rel) {
	alias := g.newAlias()
	derivedCols := func(types []Type) rel {
		r := rel{alias: alias}
		for i, t := range types {
			r.cols = append(r.cols, term{sql: fmt.Sprintf("%s.c%d", alias, i), t: t})
		}
		return r
	}
	if len(g.ctes) > 0 && g.p(30) {
		c := pick(g, g.ctes)
		return c.name + " AS " + alias, derivedCols(c.types)
	}
	if depth > 0 && g.p(12) {
		// A derived table: its output columns are c0, c1, ...
		q := g.selectCore(outer, nil, depth-1, false)
		if g.p(25) {
			q.sql += g.orderBy(len(q.types), true)
		}
		return fmt.Sprintf("(%s) AS %s", q.sql, alias), derivedCols(q.types)
	}
	return pick(g, g.tables) + " AS " + alias, rel{alias: alias, cols: columnTerms(alias)}
}

// columnTerms returns the columns of a generated table under alias.
func columnTerms(alias string) []term {
	var ts []term
	for _, col := range Columns {
		ts = append(ts, term{sql: alias + "." + col.Name, t: col.T})
	}
	return ts
}

// from builds a FROM clause of one to three items joined in various ways.
// At most one join is a cross product (CROSS JOIN or an ON without an
// equality), so that results stay small and queries fast.
func (g *Gen) from(outer *scope, depth int, top bool) (string, *scope) {
	sqlText, r := g.fromItem(outer, depth)
	sc := &scope{outer: outer, rels: []rel{r}, terms: slices.Clone(r.cols)}
	// Derived tables join only on equalities.
	crossed := !top
	for range g.n(3) {
		if g.p(40) {
			break
		}
		item, r2 := g.fromItem(outer, depth)
		kinds := []string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "JOIN"}
		if !crossed {
			kinds = append(kinds, "CROSS JOIN")
		}
		kind := pick(g, kinds)
		next := &scope{outer: outer, rels: append(slices.Clone(sc.rels), r2), terms: append(slices.Clone(sc.terms), r2.cols...)}
		if kind == "CROSS JOIN" {
			sqlText += " CROSS JOIN " + item
			crossed = true
		} else {
			on, equi := g.joinCond(sc, r2, next, crossed)
			crossed = crossed || !equi
			sqlText += fmt.Sprintf(" %s %s ON %s", kind, item, on)
		}
		sc = next
	}
	return sqlText, sc
}

// joinCond is mostly an equality of two same-typed columns (a hash join),
// sometimes with an extra conjunct, sometimes (unless needEqui) an
// arbitrary predicate. equi reports an equality.
func (g *Gen) joinCond(left *scope, right rel, both *scope, needEqui bool) (on string, equi bool) {
	c := ectx{sc: both}
	if needEqui || g.p(85) {
		rc := pick(g, right.cols)
		lc := left.ofType(rc.t)
		// Booleans make near cross products.
		if len(lc) > 0 && rc.t != TBool {
			cond := fmt.Sprintf("%s = %s", pick(g, lc).sql, rc.sql)
			switch {
			case rc.t == TInt && g.p(15):
				cond = fmt.Sprintf("(%s + %d) = %s", pick(g, lc).sql, g.n(5)-2, rc.sql)
			case g.p(20):
				// A second key.
				rc2 := pick(g, right.cols)
				if lc2 := left.ofType(rc2.t); len(lc2) > 0 && rc2.t != TBool {
					cond += fmt.Sprintf(" AND %s = %s", pick(g, lc2).sql, rc2.sql)
				}
			}
			if g.p(30) {
				cond += " AND " + g.expr(c, TBool, 2)
			}
			return cond, true
		}
		if needEqui {
			for _, i := range g.r.Perm(len(right.cols)) {
				if lc := left.ofType(right.cols[i].t); len(lc) > 0 && right.cols[i].t != TBool {
					return fmt.Sprintf("%s = %s", pick(g, lc).sql, right.cols[i].sql), true
				}
			}
			return "FALSE", true
		}
	}
	return g.expr(c, TBool, 2), false
}

type query struct {
	sql   string
	types []Type
}

// selectCore generates SELECT ... FROM ... [WHERE] [GROUP BY [HAVING]] with
// output columns named c0, c1, ...; want fixes the output types (set
// operations) when not nil. top allows window functions and DISTINCT.
func (g *Gen) selectCore(outer *scope, want []Type, depth int, top bool) query {
	from, sc := g.from(outer, depth, top)
	sub := depth > 0
	var sb strings.Builder
	where := ""
	if g.p(65) {
		where = " WHERE " + g.expr(ectx{sc: sc, sub: sub}, TBool, 3)
	}
	types := want
	if types == nil {
		for range 1 + g.n(4) {
			types = append(types, Type(g.n(int(numTypes))))
		}
	}
	var items []string
	tail := ""
	distinct := g.p(15)
	if g.p(35) {
		// Aggregate query: group keys are expressions over the FROM
		// scope; the select list sees the keys and aggregates.
		var keys []term
		for range g.n(3) {
			keys = append(keys, g.groupKey(sc))
		}
		asc := &scope{terms: keys, agg: sc, outer: outer}
		c := ectx{sc: asc}
		for i, t := range types {
			items = append(items, fmt.Sprintf("%s AS c%d", g.expr(c, t, 2), i))
		}
		if len(keys) > 0 {
			var ks []string
			for _, k := range keys {
				ks = append(ks, k.sql)
			}
			switch g.n(8) {
			case 0:
				tail = " GROUP BY ROLLUP (" + strings.Join(ks, ", ") + ")"
			case 1:
				tail = " GROUP BY CUBE (" + strings.Join(ks, ", ") + ")"
			case 2:
				sets := []string{"()", "(" + ks[0] + ")", "(" + strings.Join(ks, ", ") + ")"}
				tail = " GROUP BY GROUPING SETS (" + strings.Join(sets, ", ") + ")"
			default:
				tail = " GROUP BY " + strings.Join(ks, ", ")
			}
		}
		if g.p(40) {
			tail += " HAVING " + g.expr(c, TBool, 2)
		}
	} else {
		c := ectx{sc: sc, sub: sub}
		for i, t := range types {
			e := ""
			if top && g.p(15) {
				e = g.window(sc, t)
			}
			if e == "" {
				e = g.expr(c, t, 3)
			}
			items = append(items, fmt.Sprintf("%s AS c%d", e, i))
		}
	}
	sb.WriteString("SELECT ")
	if distinct {
		sb.WriteString("DISTINCT ")
	}
	sb.WriteString(strings.Join(items, ", "))
	sb.WriteString(" FROM " + from + where + tail)
	return query{sql: sb.String(), types: types}
}

// colRe matches a column reference.
var colRe = regexp.MustCompile(`\ba[0-9]+\.`)

// groupKey returns a GROUP BY expression that refers to a column: DuckDB
// reads a constant integer in GROUP BY as an output column number.
func (g *Gen) groupKey(sc *scope) term {
	t := Type(g.n(int(numTypes)))
	if e := g.expr(ectx{sc: sc}, t, 1); colRe.MatchString(e) {
		return term{sql: e, t: t}
	}
	return pick(g, sc.terms)
}

// window returns a window function of type t, or "" when none fits. Only
// functions whose result does not depend on the order of peers are used,
// unless the ORDER BY lists every column in scope.
func (g *Gen) window(sc *scope, t Type) string {
	c := ectx{sc: sc, noDiv: true}
	var part []string
	for range g.n(3) {
		part = append(part, g.expr(c, g.cmpType(), 1))
	}
	over := ""
	if len(part) > 0 {
		over = "PARTITION BY " + strings.Join(part, ", ")
	}
	var order []string
	for range 1 + g.n(2) {
		order = append(order, g.expr(c, g.cmpType(), 1)+pick(g, []string{"", " DESC", " NULLS FIRST", " DESC NULLS LAST"}))
	}
	orderBy := " ORDER BY " + strings.Join(order, ", ")
	var total []string
	for _, x := range sc.terms {
		total = append(total, x.sql)
	}
	totalBy := " ORDER BY " + strings.Join(total, ", ")
	// A ROWS frame over the total order.
	frame := totalBy + " " + pick(g, []string{
		"ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING", "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
		"ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING", "ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING",
		"ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"})
	switch t {
	case TInt:
		switch g.n(8) {
		case 0:
			return fmt.Sprintf("%s() OVER (%s%s)", pick(g, []string{"rank", "dense_rank"}), over, orderBy)
		case 1:
			return fmt.Sprintf("row_number() OVER (%s%s)", over, totalBy)
		case 2:
			return fmt.Sprintf("count(*) OVER (%s)", over)
		case 3:
			if g.p(50) {
				return fmt.Sprintf("%s(%s, %d, %s) OVER (%s%s)", pick(g, []string{"lag", "lead"}), g.expr(c, TInt, 1), 1+g.n(3), g.literal(TInt), over, totalBy)
			}
			return fmt.Sprintf("%s(%s) OVER (%s%s)", pick(g, []string{"lag", "lead"}), g.expr(c, TInt, 1), over, totalBy)
		case 4:
			return fmt.Sprintf("ntile(%d) OVER (%s%s)", 1+g.n(4), over, totalBy)
		case 5:
			return fmt.Sprintf("%s(%s) OVER (%s%s)", pick(g, []string{"sum", "count", "min", "max"}), g.expr(c, TInt, 1), over, frame)
		}
		return fmt.Sprintf("sum(%s) OVER (%s%s)", g.expr(c, TInt, 1), over, orderBy)
	case TDec, TStr, TDate:
		switch g.n(3) {
		case 0:
			// Flink's (and flightd's) skip NULL values; DuckDB's do with
			// IGNORE NULLS.
			return fmt.Sprintf(g.spell("%s(%s IGNORE NULLS) OVER (%s%s)", "%s(%s) OVER (%s%s)"), pick(g, []string{"first_value", "last_value"}), g.expr(c, t, 1), over, frame)
		case 1:
			return fmt.Sprintf("%s(%s) OVER (%s%s)", pick(g, []string{"min", "max"}), g.expr(c, t, 1), over, orderBy)
		}
		return fmt.Sprintf("%s(%s) OVER (%s)", pick(g, []string{"min", "max"}), g.expr(c, t, 1), over)
	case TFloat:
		if g.p(50) {
			return fmt.Sprintf("%s() OVER (%s%s)", pick(g, []string{"percent_rank", "cume_dist"}), over, orderBy)
		}
		return g.avg(fmt.Sprintf("avg(%s) OVER (%s%s)", g.expr(c, TInt, 1), over, orderBy), TInt)
	}
	return ""
}

// scalarSubquery returns an aggregate subquery of type t, correlated to
// the enclosing scope half of the time.
func (g *Gen) scalarSubquery(c ectx, t Type) (string, bool) {
	if t == TBool {
		return "", false
	}
	if outerInts := c.sc.ofType(TInt); len(outerInts) > 0 && g.p(25) {
		// Without an aggregate: a lookup by primary key, at most one row.
		alias := g.newAlias()
		inner := &scope{terms: columnTerms(alias)}
		where := fmt.Sprintf(" WHERE %s.k = %s", alias, pick(g, outerInts).sql)
		if g.p(30) {
			where += " AND " + g.expr(ectx{sc: inner}, TBool, 1)
		}
		return fmt.Sprintf("(SELECT %s FROM %s AS %s%s)", g.expr(ectx{sc: inner}, t, 2), pick(g, []string{"t1", "t4"}), alias, where), true
	}
	item, r := g.fromItem(nil, 0)
	inner := &scope{rels: []rel{r}, terms: r.cols, outer: c.sc}
	where := g.correlation(c.sc, inner)
	asc := &scope{agg: inner}
	a, ok := g.aggregate(ectx{sc: asc}, t, 2)
	if !ok {
		return "", false
	}
	// Sometimes an expression around the aggregate (over no rows COUNT is
	// 0 in it). It always holds the aggregate: without one the subquery
	// could return several rows (an error).
	switch g.n(5) {
	case 0:
		a = fmt.Sprintf("COALESCE(%s, %s)", a, g.literal(t))
	case 1:
		a = fmt.Sprintf("CASE WHEN %s THEN %s ELSE %s END", g.expr(ectx{sc: asc}, TBool, 1), a, g.literal(t))
	case 2:
		if t == TInt || t == TDec || t == TFloat {
			a = fmt.Sprintf("(%s + %s)", a, g.expr(ectx{sc: asc}, t, 1))
		}
	}
	having := ""
	if g.p(10) {
		having = " HAVING " + g.expr(ectx{sc: asc}, TBool, 1)
	}
	return fmt.Sprintf("(SELECT %s FROM %s%s%s)", a, item, where, having), true
}

// correlation returns a WHERE clause for a subquery over inner: an
// equality with an outer column, sometimes another predicate mixing both
// scopes, sometimes nothing.
func (g *Gen) correlation(outer, inner *scope) string {
	var conds []string
	if outer != nil && len(outer.rels) > 0 && g.p(60) {
		ic := pick(g, inner.terms)
		if oc := outer.ofType(ic.t); len(oc) > 0 {
			conds = append(conds, fmt.Sprintf("%s = %s", ic.sql, pick(g, oc).sql))
		}
	}
	if g.p(50) {
		mixed := &scope{terms: inner.terms}
		if outer != nil && len(outer.rels) > 0 && g.p(30) {
			mixed.terms = append(slices.Clone(inner.terms), outer.terms...)
		}
		conds = append(conds, g.expr(ectx{sc: mixed}, TBool, 2))
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// subqueryPredicate returns [NOT] EXISTS or [NOT] IN over a subquery.
func (g *Gen) subqueryPredicate(c ectx) (string, bool) {
	item, r := g.fromItem(nil, 0)
	inner := &scope{rels: []rel{r}, terms: r.cols, outer: c.sc}
	where := g.correlation(c.sc, inner)
	not := pick(g, []string{"", "NOT "})
	if g.p(50) {
		return fmt.Sprintf("(%sEXISTS (SELECT 1 FROM %s%s))", not, item, where), true
	}
	t := g.cmpType()
	in := g.expr(ectx{sc: inner, noDiv: true}, t, 1)
	return fmt.Sprintf("(%s %sIN (SELECT %s FROM %s%s))", g.expr(ectx{sc: c.sc}, t, 2), not, in, item, where), true
}

// orderBy returns an ORDER BY over all n output columns, a total order,
// so that a LIMIT (always added when limit) is exact.
func (g *Gen) orderBy(n int, limit bool) string {
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprint(i+1)+pick(g, []string{"", " DESC", " NULLS FIRST", " DESC NULLS LAST", " ASC NULLS LAST"}))
	}
	s := " ORDER BY " + strings.Join(keys, ", ")
	if limit {
		s += fmt.Sprintf(" LIMIT %d", g.n(20))
		if g.p(30) {
			s += fmt.Sprintf(" OFFSET %d", g.n(10))
		}
	}
	return s
}

// Query returns one random query.
func (g *Gen) Query() string {
	g.alias = 0
	g.ctes = nil
	with := ""
	if g.p(10) {
		var defs []string
		for i := range 1 + g.n(2) {
			q := g.selectCore(nil, nil, 1, false)
			name := fmt.Sprintf("w%d", i)
			defs = append(defs, fmt.Sprintf("%s AS (%s)", name, q.sql))
			g.ctes = append(g.ctes, cte{name: name, types: q.types})
		}
		with = "WITH " + strings.Join(defs, ", ") + " "
	}
	q := g.selectCore(nil, nil, 2, true)
	if g.p(15) {
		op := pick(g, []string{"UNION", "UNION ALL", "INTERSECT", "EXCEPT", "INTERSECT ALL", "EXCEPT ALL"})
		r := g.selectCore(nil, q.types, 1, false)
		q.sql = fmt.Sprintf("%s %s %s", q.sql, op, r.sql)
	}
	if g.p(30) {
		q.sql += g.orderBy(len(q.types), g.p(70))
	}
	return with + q.sql
}
