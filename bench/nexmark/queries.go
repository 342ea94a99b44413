package nexmark

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Query is one of the nexmark queries: its file split into the statements
// that prepare it (views, functions, side tables), the sink's DDL and the
// SELECT of its INSERT INTO the sink.
type Query struct {
	Name   string   // q0 ... q23
	Setup  []string // statements to run before the query, in order
	Sink   string   // CREATE TABLE nexmark_qN ...
	Select string   // the INSERT's query
}

// SideInputRows is the number of rows of q13's side_input table, as
// nexmark's side_input_gen.sh writes them (key i, value "i").
const SideInputRows = 10_000

var (
	queryFile   = regexp.MustCompile(`^q(\d+)\.sql$`)
	insertInto  = regexp.MustCompile(`(?is)^INSERT\s+INTO\s+(\w+)\s+(.*)$`)
	createTable = regexp.MustCompile(`(?is)^CREATE\s+TABLE\s+(\w+)\s*\((.*)\)\s*(?:PARTITIONED\s+BY\s*\([^)]*\)\s*)?WITH\s*\(.*\)$`)
	createName  = regexp.MustCompile(`(?is)^CREATE\s+(TABLE|VIEW|FUNCTION)\s+(\w+)`)
)

// LoadQueries reads the qN.sql files of dir, in query number order; only,
// when not empty, keeps those named (q0, q7, ...).
func LoadQueries(dir string, only []string) ([]Query, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("nexmark queries: %w", err)
	}
	type numbered struct {
		n    int
		name string
	}
	var files []numbered
	for _, e := range entries {
		if m := queryFile.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			files = append(files, numbered{n, "q" + m[1]})
		}
	}
	slices.SortFunc(files, func(a, b numbered) int { return a.n - b.n })
	var qs []Query
	for _, f := range files {
		if len(only) > 0 && !slices.Contains(only, f.name) {
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, f.name+".sql"))
		if err != nil {
			return nil, fmt.Errorf("nexmark queries: %w", err)
		}
		q, err := ParseQuery(f.name, string(text))
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	for _, name := range only {
		if !slices.ContainsFunc(qs, func(q Query) bool { return q.Name == name }) {
			return nil, fmt.Errorf("nexmark queries: no %s.sql in %s", name, dir)
		}
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("nexmark queries: no qN.sql file in %s", dir)
	}
	return qs, nil
}

// ParseQuery splits a query file. Sink tables are left out of Setup (the
// SELECT runs instead of the INSERT), and so are other tables with
// connector options (q13's side_input: the runner creates and fills it,
// see SideInputDDL). Nexmark's Java UDF count_char is rewritten to SQL
// (see CountCharSQL) and its CREATE FUNCTION dropped.
func ParseQuery(name, text string) (Query, error) {
	q := Query{Name: name}
	sink := "nexmark_" + name
	for _, st := range splitStatements(text) {
		if m := insertInto.FindStringSubmatch(st); m != nil {
			if !strings.EqualFold(m[1], sink) {
				return q, fmt.Errorf("nexmark %s: INSERT INTO %s, want %s", name, m[1], sink)
			}
			q.Select = CountCharSQL(m[2])
			continue
		}
		if m := createTable.FindStringSubmatch(st); m != nil {
			if strings.EqualFold(m[1], sink) {
				q.Sink = st
			}
			continue
		}
		if countCharFunc.MatchString(st) {
			continue
		}
		q.Setup = append(q.Setup, st)
	}
	if q.Select == "" {
		return q, fmt.Errorf("nexmark %s: no INSERT INTO %s", name, sink)
	}
	return q, nil
}

// SideInputDDL creates q13's side_input. Its key is the primary key:
// FOR SYSTEM_TIME AS OF joins a table by its primary key (nexmark's
// filesystem table had none; its Flink setup read it through the legacy
// CSV source's lookup by the join key, which flightd and Flink 2 do not
// have).
const SideInputDDL = "CREATE TABLE side_input (key BIGINT NOT NULL, `value` VARCHAR, PRIMARY KEY (key) NOT ENFORCED)"

var (
	countCharFunc = regexp.MustCompile(`(?is)^CREATE\s+FUNCTION\s+count_char\s+AS\s+'com\.github\.nexmark\.flink\.udf\.CountChar'$`)
	// count_char(column, 'c') with a one-character literal.
	countCharCall = regexp.MustCompile("(?i)\\bcount_char\\s*\\(\\s*(`?\\w+`?)\\s*,\\s*'([^'])'\\s*\\)")
)

// CountCharSQL rewrites nexmark's UDF count_char(s, 'c') (the number of
// times c occurs in s, 0 for a NULL s) into built-in SQL: the characters
// REPLACE takes away. Calls of other forms are left to be refused.
func CountCharSQL(sel string) string {
	return countCharCall.ReplaceAllString(sel, "COALESCE(CHAR_LENGTH($1) - CHAR_LENGTH(REPLACE($1, '$2', '')), 0)")
}

// dropFor is the statement that undoes a CREATE of Setup, so that setup
// can run again; "" for other statements.
func dropFor(stmt string) string {
	m := createName.FindStringSubmatch(stmt)
	if m == nil {
		return ""
	}
	return "DROP " + strings.ToUpper(m[1]) + " IF EXISTS " + m[2]
}

// splitStatements splits SQL text at semicolons outside quotes and drops
// -- comments.
func splitStatements(text string) []string {
	var out []string
	var cur strings.Builder
	var quote byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '`' || c == '"':
			quote = c
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			cur.WriteByte('\n')
			continue
		case c == ';':
			if s := strings.TrimSpace(cur.String()); s != "" {
				out = append(out, s)
			}
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// StreamHint is the option that makes a table reference a change stream
// that starts with the table's content, as streaming aggregations and
// joins (and continuous jobs) need.
const StreamHint = "/*+ OPTIONS('scan.mode'='latest-full') */"

var (
	sourceRef = regexp.MustCompile(`(?i)\b(FROM|JOIN)(\s+)(person|auction|bid)\b`)
	// A window TVF's input: TUMBLE(TABLE bid, ...).
	tvfRef = regexp.MustCompile(`(?i)\b(TABLE)(\s+)(person|auction|bid)\b`)
	// The second table of a comma join: FROM auction A, bid B.
	commaRef = regexp.MustCompile(`(?i)(\bFROM\s+(?:person|auction|bid)\b(?:\s*/\*\+[^*]*\*/)?(?:\s+(?:AS\s+)?\w+)?\s*,\s*)(person|auction|bid)\b`)
)

// Views returns the views q's setup creates over person, auction and bid,
// with the tables each reads.
func (q Query) Views() map[string][]string {
	views := map[string][]string{}
	for _, st := range q.Setup {
		m := createName.FindStringSubmatch(st)
		if m == nil || !strings.EqualFold(m[1], "VIEW") {
			continue
		}
		for _, ref := range sourceRef.FindAllStringSubmatch(st, -1) {
			if t := strings.ToLower(ref[3]); !slices.Contains(views[m[2]], t) {
				views[m[2]] = append(views[m[2]], t)
			}
		}
	}
	return views
}

// Streaming adds StreamHint to every reference to person, auction and
// bid in sql (in window TVFs' TABLE arguments too, with tvf), and to
// views of them (q.Views: flightd streams a view's tables through a
// hint on its reference), and returns the tables it hinted.
func Streaming(sql string, tvf bool, views map[string][]string) (string, []string) {
	var tables []string
	add := func(t string) {
		t = strings.ToLower(t)
		if !slices.Contains(tables, t) {
			tables = append(tables, t)
		}
	}
	hint := func(re *regexp.Regexp) {
		sql = re.ReplaceAllStringFunc(sql, func(m string) string {
			sm := re.FindStringSubmatch(m)
			add(sm[3])
			return sm[1] + sm[2] + sm[3] + " " + StreamHint
		})
	}
	hint(sourceRef)
	if tvf {
		hint(tvfRef)
	}
	sql = commaRef.ReplaceAllStringFunc(sql, func(m string) string {
		sm := commaRef.FindStringSubmatch(m)
		add(sm[2])
		return sm[1] + sm[2] + " " + StreamHint
	})
	for v, reads := range views {
		kw := `FROM|JOIN`
		if tvf {
			kw += `|TABLE`
		}
		re := regexp.MustCompile(`(?i)\b(` + kw + `)(\s+)(` + regexp.QuoteMeta(v) + `)\b`)
		if re.MatchString(sql) {
			sql = re.ReplaceAllString(sql, "${1}${2}${3} "+StreamHint)
			for _, t := range reads {
				add(t)
			}
		}
	}
	slices.Sort(tables)
	return sql, tables
}
