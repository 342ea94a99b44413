package difftest

import (
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flightd/flightd/bench/tpcds"
)

// Flink bugs in answers are explained by reproducing them: a rewrite spells
// the query so that flightd computes what Flink computes at each place the
// bug's shape occurs, and the disagreement is Flink's bug when flightd
// answers the rewritten query (at some of those places) as Flink answered
// the query, and DuckDB, the standard's witness, gave flightd's answer to
// the query itself. A flightd bug elsewhere in the query, or at the same
// place but of another kind, leaves a difference the rewrite does not
// remove, and stays a finding.

// span is one place of a query to rewrite: sql[start:end] becomes with.
type span struct {
	start, end int
	with       string
}

// maxSpans bounds the places a rewrite tries subsets of (2^n queries).
const maxSpans = 3

// emulated returns a rule's match that explains c by the rewrite at some
// of the places spans finds (the bug may show at some of them only: a NOT
// IN in a WHERE conjunct is an anti-join, which Flink gets right).
func emulated(spans func(sql string) []span) func(c *flinkCase) bool {
	return func(c *flinkCase) bool {
		if c.diff == "" || !c.duckAgrees || c.flightd == nil {
			return false
		}
		places := spans(c.sql)
		if len(places) > maxSpans {
			places = places[:maxSpans]
		}
		for set := 1; set < 1<<len(places); set++ {
			sql, ok := rewrite(c.sql, places, set)
			if !ok {
				continue
			}
			if got, err := c.flightd(sql); err == nil && tpcds.Compare(c.sql, c.want, got) == "" {
				return true
			}
		}
		return false
	}
}

// rewrite applies the spans whose bit is set in set, false if two of them
// overlap.
func rewrite(sql string, spans []span, set int) (string, bool) {
	out, end := sql, len(sql)
	for i := len(spans) - 1; i >= 0; i-- {
		if set&(1<<i) == 0 {
			continue
		}
		s := spans[i]
		if s.end > end {
			return "", false
		}
		out, end = out[:s.start]+s.with+out[s.end:], s.start
	}
	return out, true
}

// subqueries returns the spans of sql's subqueries, "(SELECT ...)" with
// the parentheses, outermost first.
func subqueries(sql string) [][2]int {
	var out [][2]int
	for i := strings.Index(sql, "(SELECT "); i >= 0; {
		if end, err := tpcds.ClosingParen(sql, i); err == nil {
			out = append(out, [2]int{i, end + 1})
		}
		next := strings.Index(sql[i+1:], "(SELECT ")
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return out
}

var (
	aliasDecl = regexp.MustCompile(`\bAS (a\d+)\b`)
	aliasRef  = regexp.MustCompile(`\b(a\d+)\.`)
)

// declaredAliases are the table aliases sql declares ("AS aN").
func declaredAliases(sql string) map[string]bool {
	declared := map[string]bool{}
	for _, m := range aliasDecl.FindAllStringSubmatch(sql, -1) {
		declared[m[1]] = true
	}
	return declared
}

// correlated reports whether the subquery sub refers to a table alias it
// does not declare (the generator names every table a1, a2, ...).
func correlated(sub string) bool {
	declared := declaredAliases(sub)
	for _, m := range aliasRef.FindAllStringSubmatch(sub, -1) {
		if !declared[m[1]] {
			return true
		}
	}
	return false
}

// anyCorrelated reports whether one of sql's subqueries subs is correlated.
func anyCorrelated(sql string, subs [][2]int) bool {
	return slices.ContainsFunc(subs, func(s [2]int) bool { return correlated(sql[s[0]:s[1]]) })
}

// nullOperandIn finds the generator's "(e [NOT] IN (SELECT ...))" over a
// correlated subquery and spells it as Flink computes it: NULL when e is
// NULL, also where the subquery is empty (the standard: IN an empty table
// is FALSE, NOT IN TRUE, whatever e is).
func nullOperandIn(sql string) []span {
	var out []span
	for _, sub := range subqueries(sql) {
		if !strings.HasSuffix(sql[:sub[0]], " IN ") || sub[1] >= len(sql) || sql[sub[1]] != ')' || !correlated(sql[sub[0]:sub[1]]) {
			continue
		}
		open := enclosing(sql, sub[0], sub[1]+1)
		if open < 0 {
			continue
		}
		e := strings.TrimSuffix(strings.TrimSuffix(sql[open+1:sub[0]], " IN "), " NOT")
		pred := sql[open : sub[1]+1]
		out = append(out, span{open, sub[1] + 1, "(CASE WHEN (" + e + ") IS NULL THEN CAST(NULL AS BOOLEAN) ELSE " + pred + " END)"})
	}
	return out
}

// enclosing returns the position of the '(' before at whose ')' is at
// close-1, -1 if there is none.
func enclosing(sql string, at, close int) int {
	for p := at - 1; p >= 0; p-- {
		if sql[p] == '(' {
			if end, err := tpcds.ClosingParen(sql, p); err == nil && end == close-1 {
				return p
			}
		}
	}
	return -1
}

// trueExists finds every EXISTS of an uncorrelated subquery, in a query
// that holds a correlated subquery too, and spells it as Flink computes it
// there: TRUE, also of an empty subquery.
func trueExists(sql string) []span {
	subs := subqueries(sql)
	if !anyCorrelated(sql, subs) {
		return nil
	}
	var out []span
	for _, s := range subs {
		if strings.HasSuffix(sql[:s[0]], "EXISTS ") && !correlated(sql[s[0]:s[1]]) {
			out = append(out, span{s[0] - len("EXISTS "), s[1], "TRUE"})
		}
	}
	return out
}

// groupingSetsStart matches a GROUP BY with grouping sets.
var groupingSetsStart = regexp.MustCompile(` GROUP BY (ROLLUP|CUBE|GROUPING SETS) \(`)

// noEmptyGroupingSet finds every GROUP BY with the empty grouping set
// (ROLLUP, CUBE, GROUPING SETS with ()) and drops a group with no rows, as
// Flink does: only the empty grouping set over no input rows has none.
func noEmptyGroupingSet(sql string) []span {
	var out []span
	for _, m := range groupingSetsStart.FindAllStringSubmatchIndex(sql, -1) {
		end, err := tpcds.ClosingParen(sql, m[1]-1)
		if err != nil {
			continue
		}
		if sql[m[2]:m[3]] == "GROUPING SETS" && !strings.Contains(sql[m[1]:end], "()") {
			continue
		}
		out = append(out, addHaving(sql, end+1, "count(*) > 0"))
	}
	return out
}

// constantKeysGlobal finds every plain GROUP BY, in a query with a
// correlated subquery, and gives it a group over no input rows, as Flink
// does where Calcite's decorrelator drops group keys that fold to
// constants and leaves a global aggregate: its keys are NULL then, as a
// key folding to NULL is.
func constantKeysGlobal(sql string) []span {
	if !anyCorrelated(sql, subqueries(sql)) {
		return nil
	}
	var out []span
	for start := range clauseStarts(sql, " GROUP BY ") {
		if strings.HasPrefix(sql[start:], "ROLLUP (") || strings.HasPrefix(sql[start:], "CUBE (") || strings.HasPrefix(sql[start:], "GROUPING SETS (") {
			continue
		}
		end := clauseEnd(sql, start)
		keys := sql[start:end]
		sets := "GROUPING SETS ((" + keys + "), ())"
		s := addHaving(sql, end, "(GROUPING("+keys+") = 0 OR count(*) = 0)")
		s.start, s.with = start, sets+sql[end:s.start]+s.with
		out = append(out, s)
	}
	return out
}

// clauseStarts yields the position after each occurrence of keyword in
// sql, left to right.
func clauseStarts(sql, keyword string) iter.Seq[int] {
	return func(yield func(int) bool) {
		for at := 0; ; {
			i := strings.Index(sql[at:], keyword)
			if i < 0 {
				return
			}
			at += i + len(keyword)
			if !yield(at) {
				return
			}
		}
	}
}

// addHaving returns the span that ANDs cond to the HAVING of the GROUP BY
// clause ending at end, or adds a HAVING with it.
func addHaving(sql string, end int, cond string) span {
	if !strings.HasPrefix(sql[end:], " HAVING ") {
		return span{end, end, " HAVING " + cond}
	}
	from := end + len(" HAVING ")
	to := clauseEnd(sql, from)
	return span{from, to, cond + " AND (" + sql[from:to] + ")"}
}

// clauseEnds are the clauses that end a GROUP BY list or a HAVING
// condition at its query's level.
var clauseEnds = []string{" HAVING ", " UNION ", " INTERSECT ", " EXCEPT ", " ORDER BY ", " LIMIT "}

// clauseEnd returns where the clause starting at from ends: at the next
// clause of its level, the ')' closing its query, or the end.
func clauseEnd(sql string, from int) int {
	top, end := blankNested(sql[from:])
	for _, k := range clauseEnds {
		if i := strings.Index(string(top[:end]), k); i >= 0 {
			end = i
		}
	}
	return from + end
}

// orderedIntersectAll matches a query that ends in an ORDER BY of an
// INTERSECT ALL, and its LIMIT.
var orderedIntersectAll = regexp.MustCompile(` INTERSECT ALL .*( ORDER BY [^()]*?)(?: LIMIT (\d+)(?: OFFSET 0)?)?$`)

// intersectAllOrder explains c where Flink answers the query's INTERSECT
// ALL as flightd does once the final ORDER BY is gone (and its LIMIT,
// which cut none of flightd's rows): Flink answers it with rows that are
// not in every input when it sorts.
func intersectAllOrder(c *flinkCase) bool {
	m := orderedIntersectAll.FindStringSubmatchIndex(c.sql)
	if c.diff == "" || c.flink == nil || !c.duckAgrees || m == nil {
		return false
	}
	if m[4] >= 0 {
		if limit, _ := strconv.Atoi(c.sql[m[4]:m[5]]); len(c.got.Rows) >= limit {
			return false
		}
	}
	sql := c.sql[:m[2]]
	unordered, err := c.flink(sql)
	return err == nil && tpcds.Compare(sql, unordered, c.got) == ""
}

// outerRef matches a column of a table alias, aN.column.
var outerRef = regexp.MustCompile(`\b(a\d+)\.(\w+)\b`)

// nullOuterNoRows finds every correlated subquery with a WHERE and spells
// it as Flink computes it: without rows for an outer row whose correlated
// columns hold a NULL (Calcite's decorrelator joins the outer values in
// with =, which a NULL never satisfies), so that COUNT is 0 and MIN NULL
// there even where the condition holds for inner rows (`x.dt <
// COALESCE(o.dt, DATE '2020-04-16')`).
func nullOuterNoRows(sql string) []span {
	var out []span
	for _, s := range subqueries(sql) {
		sub := sql[s[0]:s[1]]
		if !correlated(sub) {
			continue
		}
		where := strings.Index(string(topLevel(sub[1:len(sub)-1])), " WHERE ")
		if where < 0 {
			continue
		}
		declared := declaredAliases(sub)
		var guards []string
		for _, m := range outerRef.FindAllString(sub, -1) {
			if alias, _, _ := strings.Cut(m, "."); !declared[alias] && !slices.Contains(guards, m+" IS NOT NULL") {
				guards = append(guards, m+" IS NOT NULL")
			}
		}
		at := s[0] + 1 + where + len(" WHERE ")
		out = append(out, span{at, at, "(" + strings.Join(guards, " AND ") + ") AND "})
	}
	return out
}

// distinctKeys finds every ROLLUP or CUBE that names a key twice and
// spells it as Flink (Calcite) computes it, with the key once: Calcite
// keeps grouping sets as sets of keys, so CUBE (x, x) is CUBE (x), where
// the standard expands it to GROUPING SETS ((x, x), (x), (x), ()).
func distinctKeys(sql string) []span {
	var out []span
	for _, m := range groupingSetsStart.FindAllStringSubmatchIndex(sql, -1) {
		end, err := tpcds.ClosingParen(sql, m[1]-1)
		if err != nil || sql[m[2]:m[3]] == "GROUPING SETS" {
			continue
		}
		keys := splitTop(sql[m[1]:end])
		var once []string
		for _, k := range keys {
			if !slices.Contains(once, k) {
				once = append(once, k)
			}
		}
		if len(once) < len(keys) {
			out = append(out, span{m[1], end, strings.Join(once, ", ")})
		}
	}
	return out
}

// windowAvg matches AVG over a window.
var windowAvg = regexp.MustCompile(`\bavg\(`)

// wrappedWindowAvg finds every AVG over a window and spells it as Flink
// computes it for an INT argument: the frame's sum wraps around in INT
// (Flink sums in the argument's type) before the division. For another
// argument type the spelling is wrong, and the difference stays.
func wrappedWindowAvg(sql string) []span {
	var out []span
	for _, m := range windowAvg.FindAllStringIndex(sql, -1) {
		end, err := tpcds.ClosingParen(sql, m[1]-1)
		if err != nil || !strings.HasPrefix(sql[end+1:], " OVER (") {
			continue
		}
		wopen := end + 1 + len(" OVER ")
		wend, err := tpcds.ClosingParen(sql, wopen)
		if err != nil {
			continue
		}
		arg, over := sql[m[1]:end], sql[end+1:wend+1]
		sum := "sum(CAST(" + arg + " AS BIGINT))" + over
		wrapped := "(MOD(MOD(" + sum + " + 2147483648, 4294967296) + 4294967296, 4294967296) - 2147483648)"
		out = append(out, span{m[0], wend + 1, "CAST(" + wrapped + " / NULLIF(count(" + arg + ")" + over + ", 0) AS INT)"})
	}
	return out
}

// literalCastChain matches a literal (or a literal cast to DOUBLE) cast to
// a DECIMAL and the result cast to another.
var literalCastChain = regexp.MustCompile(`CAST\(CAST\((-?\d+(?:\.\d+)?|CAST\(-?\d+(?:\.\d+)? AS DOUBLE\)) AS DECIMAL\(\d+,\d+\)\) AS (DECIMAL\(\d+,\d+\))\)`)

// literalOuterCast finds every literal cast to a DECIMAL and then to
// another, and spells it as Flink computes it: its constant folding drops
// the inner cast, so CAST(CAST(1.88 AS DECIMAL(12,1)) AS DECIMAL(12,2)) is
// 1.88, not 1.90 (of a column, Flink rounds as flightd does). It is one
// place: the whole query with every such chain folded.
func literalOuterCast(sql string) []span {
	// A chain of more casts folds to its last: rewrite until none is left.
	folded := sql
	for {
		next := literalCastChain.ReplaceAllString(folded, "CAST($1 AS $2)")
		if next == folded {
			break
		}
		folded = next
	}
	if folded == sql {
		return nil
	}
	return []span{{0, len(sql), folded}}
}

// joinAggregate matches the top level of a global aggregate over one inner
// join, "SELECT items FROM x AS aX JOIN y AS aY ON on [WHERE w] HAVING ...",
// with nested parts blanked (topLevel).
var joinAggregate = regexp.MustCompile(`^SELECT .*? FROM (.*) AS (a\d+) JOIN (.*) AS (a\d+) ON (.*?)(?: WHERE (.*?))? HAVING `)

// emptySide is a global aggregate over a join spelled as Flink computes
// it when one side has no rows: sql aggregates the other side alone, and
// count counts the rows of the empty side.
type emptySide struct{ sql, count string }

// emptyJoinSides finds a global aggregate with a HAVING over an inner join
// whose ON and WHERE conditions each read one side, and spells it, for
// either side being empty, as Flink computes it then: Flink pushes the
// aggregate below the join (Calcite's AggregateJoinTransposeRule), where
// the empty side's aggregate over no rows still makes a row, so the
// aggregates and the HAVING read the other side's rows as if the join had
// them (`count(*), max(a3.i1)` over such a join is 0, 5 on Flink 2.3).
func emptyJoinSides(sql string) []emptySide {
	top := string(topLevel(sql))
	m := joinAggregate.FindStringSubmatchIndex(top)
	if m == nil || strings.Contains(top, " GROUP BY ") || strings.Count(top, " JOIN ") != 1 {
		return nil
	}
	part := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return sql[m[2*i]:m[2*i+1]]
	}
	sides := [2][2]string{{part(1), part(2)}, {part(3), part(4)}}
	// Each condition goes with the one side it reads (none: either).
	var conds [2][]string
	for _, cond := range []string{part(5), part(6)} {
		if cond == "" {
			continue
		}
		reads := map[string]bool{}
		for _, r := range aliasRef.FindAllStringSubmatch(stringLiteral.ReplaceAllString(cond, "''"), -1) {
			reads[r[1]] = true
		}
		switch {
		case len(reads) > 1:
			return nil
		case reads[sides[0][1]]:
			conds[0] = append(conds[0], cond)
		case reads[sides[1][1]]:
			conds[1] = append(conds[1], cond)
		default:
			conds[0], conds[1] = append(conds[0], cond), append(conds[1], cond)
		}
	}
	from := func(side int) string {
		where := "TRUE"
		if len(conds[side]) > 0 {
			where = "(" + strings.Join(conds[side], ") AND (") + ")"
		}
		return sides[side][0] + " AS " + sides[side][1] + " WHERE " + where
	}
	head, rest := sql[:m[2]], sql[m[11]:] // "SELECT ... FROM ", " HAVING ..."
	if m[12] >= 0 {
		rest = sql[m[13]:]
	}
	var out []emptySide
	for empty := range 2 {
		out = append(out, emptySide{sql: head + from(1-empty) + rest, count: "SELECT count(*) AS c0 FROM " + from(empty)})
	}
	return out
}

// emptyJoinSide explains c where one side of its join aggregate has no
// rows on flightd and flightd answers the query spelled as Flink computes
// it then (emptyJoinSides) as Flink answered the query.
func emptyJoinSide(c *flinkCase) bool {
	if c.diff == "" || !c.duckAgrees || c.flightd == nil {
		return false
	}
	for _, e := range emptyJoinSides(c.sql) {
		n, err := c.flightd(e.count)
		if err != nil || len(n.Rows) != 1 || n.Rows[0][0].Kind != tpcds.KNum || n.Rows[0][0].Num.Sign() != 0 {
			continue
		}
		if got, err := c.flightd(e.sql); err == nil && tpcds.Compare(c.sql, c.want, got) == "" {
			return true
		}
	}
	return false
}

// caseSubqueryWhere finds every WHERE condition that holds a subquery
// inside a CASE or a NULLIF and spells it as Flink computes it in the
// plans where the bug shows: without the condition (TRUE). Simple shapes
// (`NULLIF(a.k, (SELECT max(...) ...)) > x` over a table) Flink gets
// right; the rewrite explains a difference only where dropping the
// condition gives Flink's answer.
func caseSubqueryWhere(sql string) []span {
	var out []span
	for start := range clauseStarts(sql, " WHERE ") {
		end := conditionEnd(sql, start)
		if cond := sql[start:end]; subqueryInCase(cond) {
			out = append(out, span{start, end, "TRUE"})
		}
	}
	return out
}

// conditionEnd returns where the WHERE condition starting at from ends.
func conditionEnd(sql string, from int) int {
	top, end := blankNested(sql[from:])
	for _, k := range append([]string{" GROUP BY "}, clauseEnds...) {
		if i := strings.Index(string(top[:end]), k); i >= 0 {
			end = i
		}
	}
	return from + end
}

// subqueryInCase reports whether cond has a subquery inside a CASE (more
// CASEs than ENDs before it) or a NULLIF call.
func subqueryInCase(cond string) bool {
	blank := stringLiteral.ReplaceAllStringFunc(cond, func(s string) string { return strings.Repeat(" ", len(s)) })
	for _, s := range subqueries(blank) {
		before := blank[:s[0]]
		if strings.Count(before, "CASE ") > strings.Count(before, " END") {
			return true
		}
		for p := s[0] - 1; p >= len("NULLIF"); p-- {
			if blank[p] != '(' || !strings.HasSuffix(blank[:p], "NULLIF") {
				continue
			}
			if end, err := tpcds.ClosingParen(blank, p); err == nil && end > s[0] {
				return true
			}
		}
	}
	return false
}

// literalIn matches a literal left operand of [NOT] IN a subquery.
var literalIn = regexp.MustCompile(`\(('(?:[^']|'')*'|-?\d+(?:\.\d+)?) (?:NOT )?IN \(SELECT `)

// literalInOperand explains c where Flink, asked the query with each
// literal operand of [NOT] IN a correlated subquery hidden behind an
// expression its planner cannot fold (`CASE WHEN RAND() < 2 THEN lit
// END`, always lit), answers as flightd did: the two queries are the same,
// and Flink's planner, given the literal, joins the subquery's matching
// rows in without collapsing them (40 outer rows answered as 55).
func literalInOperand(c *flinkCase) bool {
	if c.diff == "" || c.flink == nil || !c.duckAgrees || c.got == nil {
		return false
	}
	hidden := c.sql
	ms := literalIn.FindAllStringSubmatchIndex(c.sql, -1)
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		open := m[1] - len("(SELECT ")
		end, err := tpcds.ClosingParen(c.sql, open)
		if err != nil || !correlated(c.sql[open:end+1]) {
			continue
		}
		hidden = hidden[:m[2]] + "(CASE WHEN RAND() < 2 THEN " + c.sql[m[2]:m[3]] + " END)" + hidden[m[3]:]
	}
	if hidden == c.sql {
		return false
	}
	r, err := c.flink(hidden)
	return err == nil && tpcds.Compare(c.sql, r, c.got) == ""
}

// outerColumnWhere matches an outer WHERE whose first conjunct is a
// (boolean) column of a derived table, "WHERE aN.cM".
var outerColumnWhere = regexp.MustCompile(` WHERE (a\d+)\.c(\d+)\b`)

// filterBelowLimit finds every outer WHERE on a boolean column of a
// derived table that sorts and limits its rows (no GROUP BY), and spells
// it as Flink computes it where it pushes the filter below the LIMIT: the
// column's expression is a condition of the derived table's WHERE, so the
// LIMIT picks among the rows that pass (seen where the column holds a
// correlated IN; Flink keeps the filter above the LIMIT in simpler
// shapes).
func filterBelowLimit(sql string) []span {
	var out []span
	for _, w := range outerColumnWhere.FindAllStringSubmatch(sql, -1) {
		col, _ := strconv.Atoi(w[2])
		for _, m := range derivedAlias.FindAllStringSubmatchIndex(sql, -1) {
			if sql[m[2]:m[3]] != w[1] {
				continue
			}
			open := enclosing(sql, m[0], m[0]+1)
			if open < 0 {
				continue
			}
			body := sql[open+1 : m[0]]
			top := string(topLevel(body))
			where := strings.Index(top, " WHERE ")
			if !strings.Contains(top, " LIMIT ") || strings.Contains(top, " GROUP BY ") || where < 0 {
				continue
			}
			items := topSelectItems(body)
			if len(items) == 0 || col >= len(items[0]) {
				continue
			}
			expr := itemAlias.ReplaceAllString(items[0][col], "")
			at := open + 1 + where + len(" WHERE ")
			out = append(out, span{at, at, "(" + expr + ") AND "})
		}
	}
	return out
}
