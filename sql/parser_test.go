package sql

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestParse runs the golden files in testdata/parse: `parse` prints the
// formatted statements (or the error with its caret); every successful parse
// is also checked to round-trip through Format.
func TestParse(t *testing.T) {
	datadriven.Walk(t, "testdata/parse", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "parse":
				stmts, err := Parse(d.Input)
				if err != nil {
					var se *Error
					if !asError(err, &se) {
						t.Fatalf("error without position: %v", err)
					}
					return se.Snippet(d.Input) + "\n"
				}
				var sb strings.Builder
				for _, s := range stmts {
					checkRoundTrip(t, s)
					sb.WriteString(Format(s))
					if n := NumParams(s); n > 0 {
						fmt.Fprintf(&sb, " -- %d params", n)
					}
					sb.WriteString("\n")
				}
				return sb.String()
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}

// checkRoundTrip asserts Parse(Format(s)) == s, positions aside.
func checkRoundTrip(t *testing.T, s Statement) {
	t.Helper()
	text := Format(s)
	back, err := ParseOne(text)
	if e, ok := err.(*Error); ok && e.SQLState == StateTooComplex {
		return // the parentheses Format adds count as nesting: near MaxDepth it may not parse again
	}
	if err != nil {
		t.Fatalf("formatted statement does not parse: %v\n%s", err, text)
	}
	a, b := stripPos(s), stripPos(back)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("round trip changed the AST:\n%s\n%s", text, Format(back))
	}
}

var posType = reflect.TypeOf(Pos{})

// stripPos returns a deep copy-free view: it zeroes every Pos in place on a
// fresh parse of the same text, which is all the round-trip check needs.
func stripPos(n Node) Node {
	zeroPos(reflect.ValueOf(n))
	return n
}

func zeroPos(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			zeroPos(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == posType {
			v.Set(reflect.Zero(posType))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			zeroPos(v.Field(i))
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			zeroPos(v.Index(i))
		}
	}
}

// TestTPCDSParses parses every TPC-DS query of the benchmark kit and
// reports how many parse; all of them must.
func TestTPCDSParses(t *testing.T) {
	files, _ := filepath.Glob("../../shared/bench/tpcds/queries/*.sql") // shared/ beside the repository
	if len(files) == 0 {
		t.Skip("TPC-DS queries not present")
	}
	ok := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmts, err := Parse(string(src))
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		for _, s := range stmts {
			checkRoundTrip(t, s)
		}
		ok++
	}
	t.Logf("TPC-DS: %d of %d queries parse", ok, len(files))
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT a, b FROM t WHERE a > 1 ORDER BY a LIMIT 10",
		"INSERT INTO t VALUES (1, 'x'), (2, NULL)",
		"CREATE TABLE t (a BIGINT NOT NULL, b VARCHAR, PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket'='2')",
		"SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND))",
		"WITH x AS (SELECT 1) SELECT ((SELECT 1) + 1), count(*) OVER (PARTITION BY a ORDER BY b ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM x",
		"SELECT a FROM t /*+ OPTIONS('k'='v') */ FOR SYSTEM_TIME AS OF TIMESTAMP '2020-01-01 00:00:00' GROUP BY ROLLUP(a)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := Parse(src)
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Line < 1 || e.Col < 1 {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		for _, s := range stmts {
			checkRoundTrip(t, s)
		}
	})
}

// TestNexmarkParses parses the Nexmark kit's Flink SQL (files with
// ${...} template placeholders outside strings are not SQL and are skipped).
func TestNexmarkParses(t *testing.T) {
	files, _ := filepath.Glob("../../shared/bench/nexmark/queries/*.sql") // shared/ beside the repository
	if len(files) == 0 {
		t.Skip("Nexmark queries not present")
	}
	ok, skipped := 0, 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), "FROM ${") {
			skipped++
			continue
		}
		stmts, err := Parse(string(src))
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		for _, s := range stmts {
			checkRoundTrip(t, s)
		}
		ok++
	}
	t.Logf("Nexmark: %d of %d files parse (%d templates skipped)", ok, len(files)-skipped, skipped)
}
