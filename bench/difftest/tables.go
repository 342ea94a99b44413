package difftest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Type is the generator's class of a SQL value. The integer widths share
// one class: they mix freely in expressions.
type Type uint8

// Value classes.
const (
	TInt Type = iota
	TDec
	TFloat
	TStr
	TDate
	TBool
	numTypes
)

func (t Type) String() string {
	return [...]string{"int", "decimal", "double", "string", "date", "bool"}[t]
}

// Column is a table column.
type Column struct {
	Name string
	SQL  string // declared type
	T    Type
}

// Columns is the column list every generated table shares, so that set
// operations and joins line up: integers of four widths, a decimal, a
// double, a string, a date and a boolean.
var Columns = []Column{
	{"k", "INT", TInt},
	{"i1", "TINYINT", TInt},
	{"i2", "SMALLINT", TInt},
	{"i4", "INT", TInt},
	{"i8", "BIGINT", TInt},
	{"d", "DECIMAL(9,2)", TDec},
	{"f", "DOUBLE", TFloat},
	{"s", "VARCHAR", TStr},
	{"dt", "DATE", TDate},
	{"b", "BOOLEAN", TBool},
}

// Table is a generated table: its rows as SQL literals.
type Table struct {
	Name string
	// Key tables have primary key k; flightd keeps them as LSM trees and
	// the loader overwrites some keys, so reads merge several runs.
	Key bool
	// With is flightd's table options and partitioning (DuckDB has none).
	With string
	Rows [][]string
	// Overwritten are rows with keys of Rows that flightd receives first and
	// then replaces by the rows in Rows (DuckDB only sees Rows).
	Overwritten [][]string
}

// Tables generates the data set of seed: t1 and t4 with primary key k,
// bucketed alike (joins on k may run as bucket-by-bucket merge joins,
// GROUP BY k as sort aggregation), t2 and t3 append tables (t3 is
// partitioned by i1, small and sometimes empty).
func Tables(seed uint64) []*Table {
	r := rand.New(rand.NewPCG(seed, 0x7461626c6573))
	keyTable := func(name string) *Table {
		t := &Table{Name: name, Key: true, With: " WITH ('bucket' = '2')"}
		for _, k := range r.Perm(80)[:30+r.IntN(30)] {
			t.Rows = append(t.Rows, genRow(r, fmt.Sprint(k)))
			if r.IntN(4) == 0 {
				t.Overwritten = append(t.Overwritten, genRow(r, fmt.Sprint(k)))
			}
		}
		return t
	}
	t1 := keyTable("t1")
	t2 := &Table{Name: "t2"}
	for range 20 + r.IntN(50) {
		t2.Rows = append(t2.Rows, genRow(r, nullable(r, fmt.Sprint(r.IntN(90)))))
	}
	t3 := &Table{Name: "t3", With: " PARTITIONED BY (i1)"}
	if r.IntN(8) != 0 {
		for range 1 + r.IntN(25) {
			t3.Rows = append(t3.Rows, genRow(r, nullable(r, fmt.Sprint(r.IntN(90)))))
		}
	}
	return []*Table{t1, t2, t3, keyTable("t4")}
}

// nullable returns NULL for about one value in eight.
func nullable(r *rand.Rand, lit string) string {
	if r.IntN(8) == 0 {
		return "NULL"
	}
	return lit
}

var strPool = []string{"", "a", "ab", "abc", "abd", "abcd", "b", "ba", "B", "Ab", "x_y", "x%y", "zeta", " pad ", "a'b", "mm", "é", "Äb"}

// extreme returns one of the edge values of an integer width about once
// in 100 rows, lit otherwise: arithmetic on them overflows.
func extreme(r *rand.Rand, lit string, bits uint) string {
	if r.IntN(100) != 0 {
		return lit
	}
	if r.IntN(2) == 0 {
		return fmt.Sprint(int64(1)<<(bits-1) - 1)
	}
	return fmt.Sprint(-int64(1) << (bits - 1))
}

func genRow(r *rand.Rand, k string) []string {
	day := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(800))
	return []string{
		k,
		nullable(r, fmt.Sprint(r.IntN(11)-5)),
		nullable(r, fmt.Sprint(r.IntN(201)-100)),
		nullable(r, extreme(r, fmt.Sprint(r.IntN(2001)-1000), 32)),
		nullable(r, fmt.Sprint((r.Int64N(2_000_001)-1_000_000)*int64(1+r.IntN(3)*500))),
		nullable(r, decimalLit(r.Int64N(200_001)-100_000, 2)),
		// Multiples of 1/4 add and multiply exactly, so sums do not
		// depend on the order of summation.
		nullable(r, fmt.Sprint(float64(r.IntN(801)-400)/4)),
		nullable(r, quote(strPool[r.IntN(len(strPool))])),
		nullable(r, "DATE '"+day.Format(time.DateOnly)+"'"),
		nullable(r, fmt.Sprint(r.IntN(2) == 0)),
	}
}

func decimalLit(unscaled int64, scale int) string {
	neg := unscaled < 0
	if neg {
		unscaled = -unscaled
	}
	s := fmt.Sprintf("%0*d", scale+1, unscaled)
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// DDL returns the CREATE TABLE statement of t; flightd spells the primary
// key constraint the Flink way.
func (t *Table) DDL(flightd bool) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "CREATE TABLE %s (", t.Name)
	for i, c := range Columns {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(c.Name + " " + c.SQL)
		if t.Key && c.Name == "k" {
			sb.WriteString(" NOT NULL")
		}
	}
	if t.Key {
		sb.WriteString(", PRIMARY KEY (k)")
		if flightd {
			sb.WriteString(" NOT ENFORCED")
		}
	}
	sb.WriteString(")")
	if flightd {
		sb.WriteString(t.With)
	}
	return sb.String()
}

func insertSQL(name string, rows [][]string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "INSERT INTO %s VALUES ", name)
	for i, row := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(" + strings.Join(row, ", ") + ")")
	}
	return sb.String()
}

// execer is either engine.
type execer interface {
	Exec(ctx context.Context, stmt string) error
}

// Load creates the tables in one engine. flightd gets the rows in several
// INSERTs (several data files; key tables also get the overwritten rows
// first, so scans merge runs); DuckDB gets the final rows at once.
func Load(ctx context.Context, e execer, tables []*Table, flightd bool) error {
	for _, t := range tables {
		if err := e.Exec(ctx, t.DDL(flightd)); err != nil {
			return fmt.Errorf("create %s: %w", t.Name, err)
		}
		var batches [][][]string
		switch {
		case !flightd:
			batches = [][][]string{t.Rows}
		default:
			if len(t.Overwritten) > 0 {
				batches = append(batches, t.Overwritten)
			}
			for i := 0; i < len(t.Rows); i += 25 {
				batches = append(batches, t.Rows[i:min(i+25, len(t.Rows))])
			}
		}
		for _, b := range batches {
			if len(b) == 0 {
				continue
			}
			if err := e.Exec(ctx, insertSQL(t.Name, b)); err != nil {
				return fmt.Errorf("load %s: %w", t.Name, err)
			}
		}
	}
	return nil
}
