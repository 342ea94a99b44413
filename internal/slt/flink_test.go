package slt

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flightd/flightd/internal/flink"
)

// flinkFiles are the .slt files checked against Apache Flink: the ones
// whose statements are Flink SQL as flinkTranslator spells them. Not
// (yet) the others: cte.slt's table has a column named day, a reserved
// word in Flink; most others create tables with flightd's table options
// (primary keys as LSM trees, partitions, merge engines), streams, or use
// flightd's catalog and DDL.
var flinkFiles = []string{"conformance.slt", "functions.slt", "aggregates.slt", "setops.slt", "subqueries.slt", "joins.slt", "window.slt"}

// flinkDifferences are the records (file:line) where flightd's expected
// answer differs from Flink's on purpose or for a known reason, each with
// it; docs/STATUS.md lists them too.
var flinkDifferences = map[string]string{
	"conformance.slt:17":  "COALESCE is lazy in flightd (issue 20); Flink 2.3 evaluates col0 / col2 for every row and divides 1 by 0",
	"conformance.slt:127": "Flink refuses NULLIF of an untyped NULL; flightd types it as the other argument",
	"conformance.slt:246": "FIRST_VALUE/LAST_VALUE(x IGNORE NULLS) parses in flightd (it is what they do, as in Flink); Flink's parser refuses the clause",
	"conformance.slt:142": "a DOUBLE out of INT's range is an overflow error (22003) in flightd; Flink returns a value",
	"functions.slt:103":   "TO_TIMESTAMP_LTZ takes precision 0 or 3 only in flightd",
	"functions.slt:198":   "IFNULL is lazy like COALESCE in flightd; Flink evaluates both arguments",
	"functions.slt:229":   "a malformed constant JSON path is refused when flightd binds; Flink returns NULL",
	"functions.slt:298":   "UNHEX of an odd number of digits: flightd reads a leading 0, Flink otherwise",
	"functions.slt:308":   "HEX of BYTES is a flightd extension; Flink takes integers and strings",
	"functions.slt:337":   "ELT of numbers is a flightd extension; Flink takes strings and bytes",
	"functions.slt:447":   "PRINTF %f of a DECIMAL formats it in flightd; Flink hands the formatter its internal decimal and returns NULL",
	"functions.slt:498":   "OVERLAY from a position below 1 is an error in flightd; Flink returns a value",
	"functions.slt:506":   "CONVERT_TZ of an unknown zone is an error in flightd; Flink (Java's TimeZone) silently uses GMT",
	"functions.slt:374":   "an invalid regular expression is an error in flightd; Flink returns NULL",
	"functions.slt:395":   "JSON_ARRAY(NULL ON NULL) is an empty array in flightd, a syntax error in Flink",
	"functions.slt:540":   "OVERLAY from a position past the end appends in flightd (as Postgres); Flink returns the string unchanged",
	"functions.slt:551":   "PRINTF's width and precision are bounded (LPAD's bound) in flightd; Flink formats a billion digits",
	"functions.slt:554":   "PRINTF %f of a DECIMAL formats it in flightd; Flink hands the formatter its internal decimal and returns NULL",
	"functions.slt:560":   "OVERLAY from a position past the end appends in flightd (as Postgres); Flink returns the string unchanged",
	"functions.slt:574":   "TIMESTAMP literals with 1-2 or 4-5 fractional digits are TIMESTAMP(3) or (6) in flightd (Arrow's units), so CAST to STRING pads to 3 or 6 digits",
	"functions.slt:585":   "CEIL(ts TO WEEK) of a time after midnight on a Sunday is the next Sunday in flightd; Flink ignores the time of day",
	"functions.slt:603":   "an epoch past TIMESTAMP's range is an overflow error (22008) in flightd; Flink returns a wrapped value",
	"functions.slt:621":   "TRY_CAST of a number out of the type's range is NULL in flightd; Flink wraps it (300 AS TINYINT is 44)",
	"functions.slt:626":   "TRUNCATE keeps a DECIMAL's scale in flightd; Flink types TRUNCATE(x, n) with scale n",
	"functions.slt:686":   "UNIX_TIMESTAMP of a string that is no timestamp is an error in flightd; Flink returns BIGINT's minimum",
	"functions.slt:717":   "REGEXP_EXTRACT_ALL of a group the pattern lacks is an error in flightd; Flink returns NULL",
	"functions.slt:763":   "ARRAY_AGG(DISTINCT s IGNORE NULLS) leaves NULLs out in flightd, as documented; Flink 2.3 keeps one NULL (its DISTINCT planning drops the clause)",
	"functions.slt:818":   "COLLECT's MULTISET is a MAP of value to count in flightd, printed as its entries; Flink prints {1=1, 3=2}",
	"functions.slt:827":   "TYPEOF gives flightd's type without nullability (INT); Flink's names it (INT NOT NULL), and a string literal is CHAR(n) there",
	"functions.slt:839":   "Flink 2.3 fails with a ClassCastException reading MAP_FROM_ARRAYS's result (subscript, CARDINALITY); flightd: 3 and 2",
	"functions.slt:910":   "COLLECT's MULTISET is a MAP of value to count in flightd, printed as its entries; Flink prints {1=1, 3=2}",
	"functions.slt:546":   "PRINTF's width and precision are bounded (LPAD's bound) in flightd; Flink formats a billion digits",
	"functions.slt:917":   "CURRENT_WATERMARK of a TIMESTAMP column with no WATERMARK is NULL in flightd's batch queries; Flink refuses it (no rowtime attribute)",
	"aggregates.slt:112":  "a 38-digit integer literal is DECIMAL(38, 0) in flightd; Flink's validator refuses it (numeric literal out of range)",
	"aggregates.slt:118":  "the INSERT at aggregates.slt:112 failed on Flink, so its table has no file",
	"aggregates.slt:130":  "COUNT(DISTINCT a, b) of several arguments counts tuples in flightd (Calcite's definition); Flink 2.3's planner refuses it (only one field)",
	"aggregates.slt:135":  "COUNT(DISTINCT a, b) of several arguments counts tuples in flightd (Calcite's definition); Flink 2.3's planner refuses it (only one field)",
	"subqueries.slt:158":  "a LATERAL subquery with an aggregate is not implemented in flightd (refused with the reason); Flink answers it",
	"window.slt:68":       "Flink 2.3's batch planner fails on a RANGE frame with an INTERVAL offset over a TIMESTAMP key (CompileException in generated code)",
	"window.slt:76":       "Flink 2.3's batch planner fails on a RANGE frame with an INTERVAL offset over a TIMESTAMP key (CompileException in generated code)",
	"window.slt:84":       "Flink 2.3's batch planner fails on a RANGE frame with an INTERVAL offset over a TIMESTAMP key (CompileException in generated code)",
	"window.slt:113":      "a DOUBLE RANGE offset over an integer key reaches the whole units it covers in flightd; Flink's answer ignores the offset",
	"window.slt:124":      "a negative RANGE offset is refused in flightd; Flink accepts it",
	"window.slt:130":      "INTERVAL '999999999' DAY takes the literal's digits in flightd; Flink's default DAY(2) precision refuses it (DAY(9) would be needed)",
	"window.slt:140":      "INTERVAL '999999999' DAY takes the literal's digits in flightd; Flink's default DAY(2) precision refuses it (DAY(9) would be needed)",
	"window.slt:157":      "a RANGE offset over a DOUBLE key is not implemented in flightd (refused with the reason); Flink answers it",
}

// TestFlinkOracle runs the records of flinkFiles on Apache Flink 2.3
// (interop/flink, batch mode, built by Maven offline) and compares each
// answer with the file's, which flightd gives: a statement must succeed or
// fail in both, a query give the same rows. Every disagreement must be in
// flinkDifferences. It needs Java 17 and Maven with Flink in its local
// repository: set FLIGHTD_FLINK=1 to run it, FLIGHTD_FLINK_FILES to run
// some of the files.
func TestFlinkOracle(t *testing.T) {
	if os.Getenv("FLIGHTD_FLINK") == "" {
		t.Skip("set FLIGHTD_FLINK=1 to compare with Apache Flink (Java 17, Maven, Flink 2.3 in ~/.m2)")
	}
	files := flinkFiles
	if only := os.Getenv("FLIGHTD_FLINK_FILES"); only != "" {
		// CI runs a subset (comma-separated names of flinkFiles).
		files = strings.Split(only, ",")
	}
	oracle := startFlink(t)
	for _, name := range files {
		path := filepath.Join("../../testdata/slt", name)
		recs, err := ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tr := flinkTranslator{dir: t.TempDir(), columns: map[string][]string{}}
		agree, explained := 0, 0
		differed := map[string]bool{}
		for _, r := range recs {
			if r.Kind == "halt" {
				break
			}
			loc := fmt.Sprintf("%s:%d", name, r.Line)
			ans, err := oracle.Run(tr.sql(r.SQL))
			if err != nil {
				t.Fatal(err)
			}
			ferr := ans.Err
			why := ""
			switch {
			case r.Kind == "statement" && ferr != "":
				why = "Flink failed: " + ferr
			case r.Kind == "statement-error" || r.Kind == "query-error":
				if ferr == "" {
					why = "Flink succeeded"
				}
			case r.Kind == "query" && ferr != "":
				why = "Flink failed: " + ferr
			case r.Kind == "query":
				got := Render(flinkValues(ans.Rows, ans.Types), r.Sort)
				if strings.Join(got, "\n") != strings.Join(r.Expected, "\n") {
					why = fmt.Sprintf("Flink gave\n%s\nflightd\n%s", strings.Join(got, "\n"), strings.Join(r.Expected, "\n"))
				}
			}
			switch _, known := flinkDifferences[loc]; {
			case why == "":
				agree++
			case known:
				explained++
				differed[loc] = true
			default:
				t.Errorf("%s: differs from Flink: %s\n%s", loc, why, r.SQL)
			}
		}
		// A listed record that agrees, or is gone, is a stale entry: the
		// file's lines moved, or flightd changed.
		for loc := range flinkDifferences {
			if strings.HasPrefix(loc, name+":") && !differed[loc] {
				t.Errorf("%s is listed as differing from Flink, but no record there does", loc)
			}
		}
		t.Logf("%s: %d records agree with Flink, %d differ for a listed reason", name, agree, explained)
	}
}

// startFlink starts interop/flink's FlinkOracle, ended when t is.
func startFlink(t *testing.T) *flink.Oracle {
	t.Helper()
	oracle, err := flink.Start("../../interop/flink")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := oracle.Close(); err != nil {
			t.Errorf("FlinkOracle: %v", err)
		}
	})
	return oracle
}

var (
	createTable  = regexp.MustCompile(`(?is)^\s*CREATE\s+TABLE\s+(\w+)\s*\((.*)\)\s*$`)
	insertValues = regexp.MustCompile(`(?is)^\s*INSERT\s+INTO\s+(\w+)\s+VALUES\s*(.*?)\s*$`)
	columnType   = regexp.MustCompile(`(?i)^\w+\s+(.*?)(\s+NOT\s+NULL)?(\s+PRIMARY\s+KEY.*)?$`)
)

// flinkTranslator spells a file's statements for Flink: one line each; a
// CREATE TABLE, which has no connector in flightd, gets a CSV file table
// under dir; an INSERT's VALUES get their NULLs typed as the table's
// columns (Flink's validator refuses an untyped NULL in INSERT ... VALUES:
// "Illegal use of 'NULL'"), which is what flightd does with them.
type flinkTranslator struct {
	dir string
	// columns are the column types of the tables the file created.
	columns map[string][]string
}

func (tr *flinkTranslator) sql(sql string) string {
	sql = strings.Join(strings.Fields(sql), " ")
	if m := createTable.FindStringSubmatch(sql); m != nil {
		var types []string
		for _, col := range splitCommas(m[2]) {
			if c := columnType.FindStringSubmatch(col); c != nil {
				types = append(types, c[1])
			}
		}
		tr.columns[strings.ToLower(m[1])] = types
		return sql + fmt.Sprintf(" WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv', 'csv.null-literal' = '\\N')", filepath.Join(tr.dir, m[1]))
	}
	m := insertValues.FindStringSubmatch(sql)
	if m == nil {
		return sql
	}
	types := tr.columns[strings.ToLower(m[1])]
	var rows []string
	for _, row := range splitCommas(m[2]) {
		if !strings.HasPrefix(row, "(") || !strings.HasSuffix(row, ")") {
			return sql
		}
		vals := splitCommas(row[1 : len(row)-1])
		for i, v := range vals {
			if strings.EqualFold(v, "NULL") && i < len(types) {
				vals[i] = "CAST(NULL AS " + types[i] + ")"
			}
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	return "INSERT INTO " + m[1] + " VALUES " + strings.Join(rows, ", ")
}

// splitCommas splits s at its commas outside parentheses and quotes, each
// part trimmed.
func splitCommas(s string) []string {
	var parts []string
	depth, quoted, start := 0, false, 0
	for i := 0; i <= len(s); i++ {
		switch {
		case i == len(s) || (s[i] == ',' && depth == 0 && !quoted):
			parts = append(parts, strings.TrimSpace(s[start:i]))
			start = i + 1
		case s[i] == '\'':
			quoted = !quoted
		case quoted:
		case s[i] == '(':
			depth++
		case s[i] == ')':
			depth--
		}
	}
	return parts
}

var flinkTimestamp = regexp.MustCompile(`^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(:\d\d(\.\d+)?)?(Z?)$`)

// flinkValues writes Flink's values as the .slt files do for the columns'
// Flink types: NULL, (empty), floats (not decimals) with 3 decimals,
// timestamps with a space.
func flinkValues(rows [][]string, types []string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		for j, v := range r {
			switch {
			case v == flink.Null:
				v = "NULL"
			case v == "":
				v = "(empty)"
			case j < len(types) && (strings.HasPrefix(types[j], "DOUBLE") || strings.HasPrefix(types[j], "FLOAT")):
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					v = fmt.Sprintf("%.3f", f)
				}
			default:
				if m := flinkTimestamp.FindStringSubmatch(v); m != nil {
					sec := m[3]
					if sec == "" {
						sec = ":00"
					}
					v = m[1] + " " + m[2] + sec + m[5]
				}
			}
			out[i] = append(out[i], v)
		}
	}
	return out
}
