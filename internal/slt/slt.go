// Package slt runs sqllogictest files against a Harness: in-process over a
// real table store (InProc, here) or through Flight SQL (the flightsql
// package's harness), so the same files check both paths.
//
// Format (one record per blank-line-separated block):
//
//	statement ok | statement error [regexp]
//	<sql>
//
//	query <types> [nosort|rowsort]
//	<sql>
//	----
//	<row: values separated by single spaces>
//
// Types are one letter per column: I integer, R float or decimal, T text
// (and dates, times, binary), B boolean. Values: NULL, (empty) for the empty
// string, floats with 3 decimals. skipif/onlyif <engine> guard a record
// (this engine is "flightd"); halt stops the file.
package slt

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Engine is the name matched by skipif / onlyif.
const Engine = "flightd"

// Harness executes SQL for the runner.
type Harness interface {
	// Exec runs a statement that returns no rows.
	Exec(sql string) error
	// Query runs a query; colTypes has one letter per column.
	Query(sql string) (colTypes string, rows [][]string, err error)
}

var rewrite = flag.Bool("slt-rewrite", false, "rewrite the expected results of .slt files")

// Record is one parsed test record.
type Record struct {
	Line     int // 1-based line of the record's first line
	Kind     string
	SQL      string
	ErrRe    string // statement error / query error pattern
	Types    string
	Sort     string
	Expected []string
	header   string
}

// ParseFile reads an .slt file.
func ParseFile(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(string(data))
}

// Parse parses .slt text.
func Parse(text string) ([]Record, error) {
	var recs []Record
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	lineNo := 0
	var block []string
	start := 0
	flush := func() error {
		defer func() { block = nil }()
		// Drop comments and conditions that do not concern this engine.
		var lines []string
		skip := false
		for _, l := range block {
			switch {
			case strings.HasPrefix(l, "#"):
				continue
			case strings.HasPrefix(l, "skipif "):
				skip = skip || strings.TrimSpace(strings.TrimPrefix(l, "skipif ")) == Engine
				continue
			case strings.HasPrefix(l, "onlyif "):
				skip = skip || strings.TrimSpace(strings.TrimPrefix(l, "onlyif ")) != Engine
				continue
			}
			lines = append(lines, l)
		}
		if len(lines) == 0 || skip {
			return nil
		}
		r := Record{Line: start, header: lines[0]}
		f := strings.Fields(lines[0])
		switch f[0] {
		case "halt":
			r.Kind = "halt"
			recs = append(recs, r)
			return nil
		case "hash-threshold":
			return nil
		case "statement":
			if len(f) < 2 || f[1] != "ok" && f[1] != "error" {
				return fmt.Errorf("line %d: expected 'statement ok' or 'statement error'", start)
			}
			r.Kind = "statement"
			if f[1] == "error" {
				r.Kind = "statement-error"
				r.ErrRe = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(lines[0], "statement")), "error"))
			}
			r.SQL = strings.Join(lines[1:], "\n")
		case "query":
			if len(f) < 2 {
				return fmt.Errorf("line %d: query needs column types", start)
			}
			r.Kind = "query"
			if f[1] == "error" {
				r.Kind = "query-error"
				r.ErrRe = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(lines[0], "query")), "error"))
				r.SQL = strings.Join(lines[1:], "\n")
				break
			}
			r.Types = f[1]
			if len(f) > 2 {
				r.Sort = f[2]
			}
			sep := len(lines)
			for i, l := range lines {
				if l == "----" {
					sep = i
					break
				}
			}
			r.SQL = strings.Join(lines[1:sep], "\n")
			if sep < len(lines) {
				r.Expected = append([]string{}, lines[sep+1:]...)
			}
		default:
			return fmt.Errorf("line %d: unknown record %q", start, f[0])
		}
		if strings.TrimSpace(r.SQL) == "" {
			return fmt.Errorf("line %d: record without SQL", start)
		}
		recs = append(recs, r)
		return nil
	}
	for sc.Scan() {
		lineNo++
		l := strings.TrimRight(sc.Text(), " \t\r")
		if l == "" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		if len(block) == 0 {
			start = lineNo
		}
		block = append(block, l)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return recs, sc.Err()
}

// RunDir runs every .slt file of dir as a parallel subtest, each on a fresh
// harness from newHarness (the Flight SQL suite reuses the files this way).
func RunDir(t *testing.T, dir string, newHarness func(t *testing.T) Harness) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.slt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .slt files in %s: %v", dir, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			RunFile(t, newHarness(t), f)
		})
	}
}

// RunFile runs one .slt file; failures are reported with file:line.
func RunFile(t *testing.T, h Harness, path string) {
	t.Helper()
	recs, err := ParseFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	changed := false
	for i := range recs {
		r := &recs[i]
		if r.Kind == "halt" {
			break
		}
		loc := fmt.Sprintf("%s:%d", path, r.Line)
		switch r.Kind {
		case "statement":
			if err := h.Exec(r.SQL); err != nil {
				t.Errorf("%s: statement failed: %v\n%s", loc, err, r.SQL)
			}
		case "statement-error", "query-error":
			var err error
			if r.Kind == "query-error" {
				_, _, err = h.Query(r.SQL)
			} else {
				err = h.Exec(r.SQL)
			}
			if err == nil {
				t.Errorf("%s: expected an error, statement succeeded\n%s", loc, r.SQL)
			} else if r.ErrRe != "" {
				if ok, _ := regexp.MatchString(r.ErrRe, err.Error()); !ok {
					t.Errorf("%s: error %q does not match %q", loc, err, r.ErrRe)
				}
			}
		case "query":
			types, rows, err := h.Query(r.SQL)
			if err != nil {
				t.Errorf("%s: query failed: %v\n%s", loc, err, r.SQL)
				continue
			}
			got := Render(rows, r.Sort)
			if *rewrite {
				r.Expected, r.Types = got, types
				changed = true
				continue
			}
			if types != r.Types {
				t.Errorf("%s: column types %s, expected %s\n%s", loc, types, r.Types, r.SQL)
			}
			if strings.Join(got, "\n") != strings.Join(r.Expected, "\n") {
				t.Errorf("%s: wrong result\n%s\n--- got:\n%s\n--- expected:\n%s", loc, r.SQL, strings.Join(got, "\n"), strings.Join(r.Expected, "\n"))
			}
		}
	}
	if changed {
		if err := writeFile(path, recs); err != nil {
			t.Fatal(err)
		}
	}
}

// Render turns rows into result lines, sorted for rowsort.
func Render(rows [][]string, sortMode string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, " ")
	}
	switch sortMode {
	case "rowsort":
		sort.Strings(out)
	case "valuesort":
		var vals []string
		for _, r := range rows {
			vals = append(vals, r...)
		}
		sort.Strings(vals)
		out = vals
	}
	return out
}

// writeFile rewrites a file with new query results (comments and skipped
// records of the original are not preserved, so review the diff).
func writeFile(path string, recs []Record) error {
	var sb strings.Builder
	for i, r := range recs {
		if i > 0 {
			sb.WriteString("\n")
		}
		switch r.Kind {
		case "halt":
			sb.WriteString("halt\n")
		case "query":
			fmt.Fprintf(&sb, "query %s", r.Types)
			if r.Sort != "" {
				sb.WriteString(" " + r.Sort)
			}
			sb.WriteString("\n" + r.SQL + "\n----\n")
			for _, e := range r.Expected {
				sb.WriteString(e + "\n")
			}
		default:
			sb.WriteString(r.header + "\n" + r.SQL + "\n")
		}
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}
