package gen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// ErrSchema reports a schema file that cannot be parsed or does not match
// the TPC-DS tables this generator knows.
var ErrSchema = errors.New("tpcds schema")

// Column is one column of a table definition.
type Column struct {
	Name    string
	SQLType string // as written in the schema file, lower case
	NotNull bool
	Type    arrow.DataType
}

// Table is one parsed "create table" statement.
type Table struct {
	Name    string
	Columns []Column
}

// Schema returns the Arrow schema of the table.
func (t *Table) Schema() *arrow.Schema {
	fields := make([]arrow.Field, len(t.Columns))
	for i, c := range t.Columns {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type, Nullable: !c.NotNull}
	}
	return arrow.NewSchema(fields, nil)
}

var (
	createRe = regexp.MustCompile(`(?is)^\s*create\s+table\s+([a-z_][a-z0-9_]*)\s*\((.*)\)\s*;?\s*$`)
	colRe    = regexp.MustCompile(`(?is)^([a-z_][a-z0-9_]*)\s+([a-z]+(?:\s*\(\s*\d+\s*(?:,\s*\d+\s*)?\))?)\s*(not\s+null)?\s*$`)
	typeRe   = regexp.MustCompile(`^([a-z]+)(?:\((\d+)(?:,(\d+))?\))?$`)
)

// LoadSchemaDir parses every *.sql file of dir. Each file must hold one
// "create table" statement.
func LoadSchemaDir(dir string) ([]*Table, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, fmt.Errorf("%w: listing %s: %v", ErrSchema, dir, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no *.sql files in %q", ErrSchema, dir)
	}
	sort.Strings(paths)
	tables := make([]*Table, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSchema, err)
		}
		t, err := ParseCreateTable(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// ParseCreateTable parses one "create table name (col type [not null], ...)"
// statement with the types integer, date, decimal(p,s), char(n), varchar(n).
func ParseCreateTable(stmt string) (*Table, error) {
	m := createRe.FindStringSubmatch(strings.TrimSpace(stmt))
	if m == nil {
		return nil, fmt.Errorf("%w: not a single create table statement", ErrSchema)
	}
	t := &Table{Name: strings.ToLower(m[1])}
	seen := map[string]bool{}
	for i, part := range splitTopLevel(m[2]) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		cm := colRe.FindStringSubmatch(part)
		if cm == nil {
			return nil, fmt.Errorf("%w: table %s, column %d: cannot parse %q", ErrSchema, t.Name, i+1, part)
		}
		name := strings.ToLower(cm[1])
		if seen[name] {
			return nil, fmt.Errorf("%w: table %s: duplicate column %s", ErrSchema, t.Name, name)
		}
		seen[name] = true
		sqlType := strings.ToLower(strings.Join(strings.Fields(cm[2]), ""))
		typ, err := arrowType(sqlType)
		if err != nil {
			return nil, fmt.Errorf("%w: table %s, column %s: %v", ErrSchema, t.Name, name, err)
		}
		t.Columns = append(t.Columns, Column{Name: name, SQLType: sqlType, NotNull: cm[3] != "", Type: typ})
	}
	if len(t.Columns) == 0 {
		return nil, fmt.Errorf("%w: table %s has no columns", ErrSchema, t.Name)
	}
	return t, nil
}

// splitTopLevel splits on commas outside parentheses.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func arrowType(sqlType string) (arrow.DataType, error) {
	m := typeRe.FindStringSubmatch(sqlType)
	if m == nil {
		return nil, fmt.Errorf("unsupported type %q", sqlType)
	}
	switch m[1] {
	case "integer", "int":
		return arrow.PrimitiveTypes.Int32, nil
	case "bigint":
		return arrow.PrimitiveTypes.Int64, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "char", "varchar":
		return arrow.BinaryTypes.String, nil
	case "decimal", "numeric":
		p, _ := strconv.Atoi(m[2])
		s, _ := strconv.Atoi(m[3])
		if p < 1 || p > 38 || s > p {
			return nil, fmt.Errorf("bad decimal precision/scale in %q", sqlType)
		}
		return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}, nil
	}
	return nil, fmt.Errorf("unsupported type %q", sqlType)
}
