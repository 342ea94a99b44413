package nexmark

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/flightd/flightd/bench/tpcds"
)

// rowSet is a multiset of result rows, keyed by rowKey.
type rowSet map[string]*countedRow

type countedRow struct {
	row []tpcds.Value
	n   int
}

func (s rowSet) add(row []tpcds.Value, n int) {
	k := rowKey(row)
	c := s[k]
	if c == nil {
		c = &countedRow{row: slices.Clone(row)}
		s[k] = c
	}
	if c.n += n; c.n == 0 {
		delete(s, k)
	}
}

func (s rowSet) rows() int {
	n := 0
	for _, c := range s {
		n += c.n
	}
	return n
}

func (s rowSet) clone() rowSet {
	out := make(rowSet, len(s))
	for k, c := range s {
		out[k] = &countedRow{row: c.row, n: c.n}
	}
	return out
}

func rowKey(row []tpcds.Value) string {
	parts := make([]string, len(row))
	for i, v := range row {
		parts[i] = v.String()
	}
	return strings.Join(parts, " | ")
}

// expected is the batch answer a streamed result is compared with.
type expected struct {
	rows rowSet
	// ties, for a ROW_NUMBER() query whose partition keys are in the
	// result, accepts another choice among rows tied on the ORDER BY keys;
	// nil: rows must be equal exactly.
	ties *ties
}

// ties describes a ROW_NUMBER() OVER (PARTITION BY p ORDER BY o) ... WHERE
// rn <= N query: ROW_NUMBER numbers rows tied on o in no defined order, so
// two correct engines (or one engine, batch and streamed) may keep
// different rows of a tie.
type ties struct {
	group []int // result columns of p and of those of o in the result
	rn    int   // result column of the row number, -1 if not in the result
	// candidates is the answer with RANK() for ROW_NUMBER(), without the
	// rn column: every row some correct answer may keep.
	candidates rowSet
}

var rowNumberOver = regexp.MustCompile("(?is)\\bROW_NUMBER\\s*\\(\\s*\\)\\s*OVER\\s*\\(\\s*PARTITION\\s+BY\\s+(.+?)\\s+ORDER\\s+BY\\s+(.+?)\\)\\s*AS\\s+`?(\\w+)`?")

// rankQuery is sel with its ROW_NUMBER() replaced by RANK(), and the
// column names of the row number's PARTITION BY and ORDER BY keys and its
// alias; ok is false when sel has no single ROW_NUMBER() OVER (PARTITION
// BY ... ORDER BY ...).
func rankQuery(sel string) (rank string, partition, order []string, rn string, ok bool) {
	m := rowNumberOver.FindAllStringSubmatchIndex(sel, -1)
	if len(m) != 1 {
		return "", nil, nil, "", false
	}
	i := m[0]
	names := func(list string) []string {
		var out []string
		for _, c := range strings.Split(list, ",") {
			f := strings.Fields(c)
			if len(f) == 0 {
				continue
			}
			name := f[0][strings.LastIndexByte(f[0], '.')+1:]
			out = append(out, strings.ToLower(strings.Trim(name, "`")))
		}
		return out
	}
	call := sel[i[0]:i[1]]
	rank = sel[:i[0]] + "RANK()" + strings.TrimPrefix(call, call[:strings.IndexByte(call, ')')+1]) + sel[i[1]:]
	return rank, names(sel[i[2]:i[3]]), names(sel[i[4]:i[5]]), strings.ToLower(sel[i[6]:i[7]]), true
}

// newTies describes the ties of a ROW_NUMBER query whose result has the
// columns cols, its candidates to be added (addCandidate) from the RANK()
// answer; nil when its PARTITION BY columns are not all in the result
// (rows are then compared exactly).
func newTies(cols, partition, order []string, rn string) *ties {
	at := func(name string) int {
		return slices.IndexFunc(cols, func(c string) bool { return strings.EqualFold(c, name) })
	}
	t := &ties{rn: at(rn), candidates: rowSet{}}
	for _, p := range partition {
		i := at(p)
		if i < 0 {
			return nil
		}
		t.group = append(t.group, i)
	}
	for _, o := range order {
		if i := at(o); i >= 0 && !slices.Contains(t.group, i) {
			t.group = append(t.group, i)
		}
	}
	return t
}

// size is the number of distinct candidate rows (0 for nil).
func (t *ties) size() int {
	if t == nil {
		return 0
	}
	return len(t.candidates)
}

// addCandidate adds a row of the RANK() answer n times.
func (t *ties) addCandidate(row []tpcds.Value, n int) {
	t.candidates.add(t.withoutRN(row), n)
}

func (t *ties) withoutRN(row []tpcds.Value) []tpcds.Value {
	if t.rn < 0 {
		return row
	}
	return append(slices.Clone(row[:t.rn]), row[t.rn+1:]...)
}

// diff compares got with the expected answer: "" when equal, otherwise
// the number of differing rows and the first few. tied counts the rows
// that differ only in the choice among tied rows (accepted).
func (e *expected) diff(got rowSet) (d string, tied int) {
	lines, tied := e.diffLines(got)
	if len(lines) == 0 {
		return "", tied
	}
	return diffText(lines), 0
}

// diffText says how many rows differ and shows the first few of lines.
func diffText(lines []string) string {
	slices.Sort(lines)
	return fmt.Sprintf("%d rows differ, e.g. %s", len(lines), strings.Join(lines[:min(3, len(lines))], "; "))
}

// diffLines is diff's differences, one line each (none: equal).
func (e *expected) diffLines(got rowSet) (lines []string, tied int) {
	var out []string
	missing, extra := rowSet{}, rowSet{}
	for k, c := range got {
		if c.n < 0 {
			out = append(out, fmt.Sprintf("retracted %d more times than inserted: %s", -c.n, k))
			continue
		}
		w := 0
		if b := e.rows[k]; b != nil {
			w = b.n
		}
		if c.n > w {
			extra.add(c.row, c.n-w)
		} else if c.n < w {
			missing.add(c.row, w-c.n)
		}
	}
	for k, b := range e.rows {
		if got[k] == nil {
			missing.add(b.row, b.n)
		}
	}
	if len(out) == 0 && len(missing)+len(extra) > 0 && e.ties != nil {
		if why := e.ties.explain(got, missing, extra); why == "" {
			return nil, missing.rows() + extra.rows()
		} else {
			out = append(out, why)
		}
	}
	for k, c := range extra {
		out = append(out, fmt.Sprintf("streamed %d more than batch: %s", c.n, k))
	}
	for k, c := range missing {
		out = append(out, fmt.Sprintf("streamed %d fewer than batch: %s", c.n, k))
	}
	return out, 0
}

// explain accepts the differences missing and extra of the result got if
// they are a different choice among tied rows: per group (partition and
// order keys) as many rows missing as extra, with the same row numbers,
// and every row of got one the RANK() answer has. Otherwise it says why
// not.
func (t *ties) explain(got, missing, extra rowSet) string {
	type side struct {
		n   int
		rns []string
	}
	groups := map[string]*[2]side{}
	for i, s := range []rowSet{missing, extra} {
		for _, c := range s {
			key := make([]tpcds.Value, len(t.group))
			for j, g := range t.group {
				key[j] = c.row[g]
			}
			k := rowKey(key)
			if groups[k] == nil {
				groups[k] = &[2]side{}
			}
			g := &groups[k][i]
			g.n += c.n
			if t.rn >= 0 {
				for range c.n {
					g.rns = append(g.rns, c.row[t.rn].String())
				}
			}
		}
	}
	for k, g := range groups {
		slices.Sort(g[0].rns)
		slices.Sort(g[1].rns)
		if g[0].n != g[1].n || !slices.Equal(g[0].rns, g[1].rns) {
			return fmt.Sprintf("not a choice among tied rows: key %s has %d rows missing and %d extra", k, g[0].n, g[1].n)
		}
	}
	kept := rowSet{}
	for _, c := range got {
		kept.add(t.withoutRN(c.row), c.n)
	}
	for k, c := range kept {
		if w := t.candidates[k]; w == nil || w.n < c.n {
			return "not a choice among tied rows: streamed a row outside the top with ties: " + k
		}
	}
	return ""
}

// selfCheck perturbs a result that compared equal and checks that each
// perturbation is reported: a row taken away, a row added twice, and a
// row of a window still open (open: rows of the full answer that
// windows the watermark had not closed). So a comparison that cannot
// fail (an empty comparison, a broken filter) is caught.
func (e *expected) selfCheck(got, open rowSet) error {
	if len(got) == 0 {
		if len(e.rows) > 0 {
			return fmt.Errorf("self-check: nothing streamed, yet equal to %d batch rows", e.rows.rows())
		}
		return nil
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	first := got[keys[0]]
	fewer := got.clone()
	fewer.add(first.row, -1)
	more := got.clone()
	more.add(first.row, 1)
	perturbed := map[string]rowSet{"a row taken away": fewer, "a row added": more}
	if len(open) > 0 {
		ok := make([]string, 0, len(open))
		for k := range open {
			ok = append(ok, k)
		}
		slices.Sort(ok)
		early := got.clone()
		early.add(open[ok[0]].row, 1)
		perturbed["a row of an open window added"] = early
	}
	for what, p := range perturbed {
		if d, _ := e.diff(p); d == "" {
			return fmt.Errorf("self-check: the result with %s still compares equal", what)
		}
	}
	return nil
}
