package sql

import (
	"errors"
	"strings"
	"testing"
)

// chains builds statements whose syntax tree is n deep through each kind of
// left-associative chain and of nesting the parser counts.
func chains(n int) map[string]string {
	rep := func(unit string) string { return strings.Repeat(unit, n) }
	return map[string]string{
		"plus":    "SELECT 1" + rep("+1"),
		"times":   "SELECT 1" + rep("*1"),
		"concat":  "SELECT 'a'" + rep("||'a'"),
		"or":      "SELECT 1 FROM t WHERE k=0" + rep(" OR k=1"),
		"and":     "SELECT 1 FROM t WHERE k=0" + rep(" AND k=1"),
		"compare": "SELECT 1" + rep("=1"),
		"is":      "SELECT 1" + rep(" IS NULL"),
		"union":   "SELECT 1" + rep(" UNION ALL SELECT 1"),
		"join":    "SELECT 1 FROM t" + rep(" CROSS JOIN t"),
		"from":    "SELECT 1 FROM t" + rep(", t"),
		"parens":  "SELECT " + rep("(") + "1" + rep(")"),
		"not":     "SELECT " + rep("NOT ") + "TRUE",
		"minus":   "SELECT " + rep("- ") + "1",
		"type":    "SELECT CAST(NULL AS " + rep("ARRAY<") + "INT" + rep(">") + ")",
		"named":   "SELECT f(" + rep("a => ") + "1)",
	}
}

// TestDepthLimit: every kind of chain or nesting beyond MaxDepth is refused
// with SQLSTATE 54001 (a 300,000-term sum overflowed the stack further
// down, issue 10), and a quarter as deep parses and formats back to the
// same tree.
func TestDepthLimit(t *testing.T) {
	for name, src := range chains(5 * MaxDepth) {
		_, err := ParseOne(src)
		var e *Error
		if !errors.As(err, &e) || e.SQLState != StateTooComplex {
			t.Errorf("%s of %d: want SQLSTATE %s, got %v", name, 5*MaxDepth, StateTooComplex, err)
		}
	}
	// At the boundary: one link or level past MaxDepth is already refused,
	// so no kind of chain counts less than one level per link.
	for name, src := range chains(MaxDepth + 1) {
		_, err := ParseOne(src)
		var e *Error
		if !errors.As(err, &e) || e.SQLState != StateTooComplex {
			t.Errorf("%s of %d: want SQLSTATE %s, got %v", name, MaxDepth+1, StateTooComplex, err)
		}
	}
	for name, src := range chains(MaxDepth / 4) {
		s, err := ParseOne(src)
		if err != nil {
			t.Errorf("%s of %d: %v", name, MaxDepth/4, err)
			continue
		}
		checkRoundTrip(t, s)
	}
}

// TestTableLimit: MaxTables table references parse, one more is refused
// with 54001, however they are spread (a FROM list, joins, derived tables,
// set operations).
func TestTableLimit(t *testing.T) {
	forms := func(n int) map[string]string {
		list := make([]string, n)
		for i := range list {
			list[i] = "t"
		}
		selects := make([]string, n/2)
		for i := range selects {
			selects[i] = "SELECT 1 FROM t, t"
		}
		return map[string]string{
			"from":    "SELECT 1 FROM " + strings.Join(list, ", "),
			"join":    "SELECT 1 FROM " + strings.Join(list, " CROSS JOIN "),
			"derived": "SELECT 1 FROM " + strings.Repeat("(SELECT 1 FROM t) s, ", n/2-1) + "t, t", // two each
			"union":   strings.Join(selects, " UNION ALL "),
		}
	}
	for name, src := range forms(MaxTables) {
		if _, err := ParseOne(src); err != nil {
			t.Errorf("%s of %d tables: %v", name, MaxTables, err)
		}
	}
	for name, src := range forms(MaxTables + 2) {
		_, err := ParseOne(src)
		var e *Error
		if !errors.As(err, &e) || e.SQLState != StateTooComplex || !strings.Contains(e.Error(), "more than 256 tables") {
			t.Errorf("%s of %d tables: want SQLSTATE %s, got %v", name, MaxTables+2, StateTooComplex, err)
		}
	}
}

func TestCheckSize(t *testing.T) {
	src := "SELECT 1 FROM t WHERE k IN (" + strings.Repeat("1, ", 999) + "1)"
	for _, max := range []int{2010, 0} {
		// 8 tokens to "(", 1,000 numbers, 999 commas and ")".
		if n, err := CheckSize(src, len(src), max); err != nil || n != 2008 {
			t.Fatalf("within the limits (%d tokens): %d tokens, %v", max, n, err)
		}
	}
	for _, c := range []struct{ bytes, tokens int }{{len(src) - 1, 0}, {0, 2000}} {
		_, err := CheckSize(src, c.bytes, c.tokens)
		var e *Error
		if !errors.As(err, &e) || e.SQLState != StateTooLarge {
			t.Errorf("limits %+v: want SQLSTATE %s, got %v", c, StateTooLarge, err)
		}
	}
}

// TestUnexpectedCharacterQuoted: an unexpected character is named escaped
// unless printable; a NUL, ESC or bidi override went into the message raw.
func TestUnexpectedCharacterQuoted(t *testing.T) {
	for src, want := range map[string]string{
		"SELECT 1\x00":    `'\x00'`,
		"SELECT \x1b[31m": `'\x1b'`,
		"SELECT \u202e":   `'\u202e'`,
		"SELECT 1 \u00a7": `'§'`,
		"SELECT 1 \xff":   "(invalid UTF-8)",
	} {
		_, err := ParseOne(src)
		if err == nil || !strings.Contains(err.Error(), "unexpected character "+want) {
			t.Errorf("%q: %v, want unexpected character %s", src, err, want)
		}
	}
}

// TestParamLimit: MaxParams placeholders parse, one more is refused with
// 54000 (450,000 ? made a 23 MB parameter schema that clients refuse).
func TestParamLimit(t *testing.T) {
	ok := "SELECT 1 WHERE 3 IN (?" + strings.Repeat(", ?", MaxParams-1) + ")"
	if _, err := ParseOne(ok); err != nil {
		t.Fatalf("%d parameters: %v", MaxParams, err)
	}
	_, err := ParseOne("SELECT 1 WHERE 3 IN (?" + strings.Repeat(", ?", MaxParams) + ")")
	var e *Error
	if !errors.As(err, &e) || e.SQLState != StateTooLarge || !strings.Contains(e.Error(), "more than 65535 parameters") {
		t.Fatalf("%d parameters: want SQLSTATE %s, got %v", MaxParams+1, StateTooLarge, err)
	}
}
