package tpcds

import (
	"math/big"
	"strings"
	"testing"
)

func num(s string) Value {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return Value{Kind: KNum, Num: r}
}

func dec(unscaled string, scale int32) Value {
	u, ok := new(big.Int).SetString(unscaled, 10)
	if !ok {
		panic(unscaled)
	}
	return decValueBig(u, scale)
}

func str(s string) Value          { return Value{Kind: KString, S: s} }
func flt(f float64) Value         { return Value{Kind: KFloat, F: f} }
func null() Value                 { return Value{Kind: KNull} }
func rows(r ...[]Value) [][]Value { return r }

func TestCompare(t *testing.T) {
	cols := []string{"name", "total", "avg"}
	// The reference's answer with a larger LIMIT, by case.
	extended := map[string][][]Value{
		"ordered: tie cut by limit": rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)},
			[]Value{str("b"), num("7"), flt(7)}, []Value{str("c"), num("8"), flt(8)}),
		"ordered: cut row not in the tie run": rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)},
			[]Value{str("b"), num("6"), flt(6)}, []Value{str("c"), num("7"), flt(7)}),
		"ordered: a cut tie row used twice": rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)},
			[]Value{str("b"), num("3"), flt(3)}, []Value{str("b"), num("4"), flt(4)}),
		// The second fetch put other tied rows first.
		"ordered: ties reordered by the larger limit": rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("9"), flt(9)},
			[]Value{str("b"), num("2"), flt(2)}, []Value{str("c"), num("1"), flt(1)}),
	}
	for _, tc := range []struct {
		name, query string
		want, got   [][]Value
		diff        string // "" means equal; otherwise a substring of the difference
	}{
		{"multiset", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), num("1.50"), flt(1)}, []Value{str("b"), num("2"), flt(2)}),
			rows([]Value{str("b"), num("2.000"), flt(2)}, []Value{str("a"), num("1.5"), flt(1)}), ""},
		{"decimal exact", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), num("1.50"), flt(1)}),
			rows([]Value{str("a"), num("1.51"), flt(1)}), "rows differ"},
		{"float tolerance", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), num("1"), flt(1.0 / 3)}),
			rows([]Value{str("a"), num("1"), flt(0.3333333333334)}), ""},
		{"float beyond tolerance", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), num("1"), flt(1.0 / 3)}),
			rows([]Value{str("a"), num("1"), flt(0.33334)}), "rows differ"},
		{"decimal against float", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), num("1"), num("0.25")}),
			rows([]Value{str("a"), num("1"), flt(0.25)}), ""},
		{"decimal rounded float", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), num("1"), flt(12.791054984486982)}),
			rows([]Value{str("a"), num("1"), dec("12791055", 6)}), ""},
		{"decimal rounded float, off by one digit", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), num("1"), flt(12.791054984486982)}),
			rows([]Value{str("a"), num("1"), dec("12791056", 6)}), "rows differ"},
		{"integer is not a rounded float", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), num("1"), flt(54.4)}),
			rows([]Value{str("a"), num("1"), num("54")}), "rows differ"},
		{"null is not zero", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), null(), flt(1)}),
			rows([]Value{str("a"), num("0"), flt(1)}), "rows differ"},
		{"row count", "SELECT name, total, avg FROM t",
			rows([]Value{str("a"), null(), flt(1)}), nil, "0 rows, want 1"},
		{"ordered: wrong order", "SELECT name, total, avg FROM t ORDER BY name",
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}),
			rows([]Value{str("b"), num("2"), flt(2)}, []Value{str("a"), num("1"), flt(1)}), "row 0"},
		{"ordered: ties in any order", "SELECT name, total, avg FROM t ORDER BY t.name DESC NULLS FIRST",
			rows([]Value{str("b"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}, []Value{str("a"), num("3"), flt(3)}),
			rows([]Value{str("b"), num("2"), flt(2)}, []Value{str("b"), num("1"), flt(1)}, []Value{str("a"), num("3"), flt(3)}), ""},
		{"ordered: ties with different rows", "SELECT name, total, avg FROM t ORDER BY 1",
			rows([]Value{str("b"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}, []Value{str("c"), num("3"), flt(3)}),
			rows([]Value{str("b"), num("2"), flt(2)}, []Value{str("b"), num("5"), flt(1)}, []Value{str("c"), num("3"), flt(3)}), "rows 0..1"},
		{"ordered: tie cut by limit", "SELECT name, total, avg FROM t ORDER BY name LIMIT 2",
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}),
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("7"), flt(7)}), ""},
		{"ordered: cut row not in the tie run", "SELECT name, total, avg FROM t ORDER BY name LIMIT 2",
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}),
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("7"), flt(7)}), "not among"},
		{"ordered: one-row cut run checks its other columns", "SELECT name, total, avg FROM t ORDER BY name LIMIT 2",
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}),
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("3"), flt(2)}), "not among"},
		{"ordered: a cut tie row used twice", "SELECT name, total, avg FROM t ORDER BY name LIMIT 3",
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}, []Value{str("b"), num("3"), flt(3)}),
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("4"), flt(4)}, []Value{str("b"), num("4"), flt(4)}), "not among"},
		{"ordered: ties reordered by the larger limit", "SELECT name, total, avg FROM t ORDER BY name LIMIT 2",
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}),
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("9"), flt(9)}), ""},
		{"ordered: nulls position", "SELECT name, total, avg FROM t ORDER BY total",
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), null(), flt(2)}),
			rows([]Value{str("b"), null(), flt(2)}, []Value{str("a"), num("1"), flt(1)}), "row 0"},
		{"order by expression: exact order", "SELECT name, total, avg FROM t ORDER BY substr(name, 1, 2), avg(x)",
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}),
			rows([]Value{str("b"), num("2"), flt(2)}, []Value{str("a"), num("1"), flt(1)}), "other order"},
		{"order by inside subquery only", "SELECT name, total, avg FROM (SELECT * FROM t ORDER BY name LIMIT 5) s",
			rows([]Value{str("a"), num("1"), flt(1)}, []Value{str("b"), num("2"), flt(2)}),
			rows([]Value{str("b"), num("2"), flt(2)}, []Value{str("a"), num("1"), flt(1)}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(tc.query, &Result{Columns: cols, Rows: tc.want, Extended: extended[tc.name]}, &Result{Columns: cols, Rows: tc.got})
			if tc.diff == "" && d != "" || tc.diff != "" && !strings.Contains(d, tc.diff) {
				t.Fatalf("Compare = %q, want %q", d, tc.diff)
			}
		})
	}
}

func TestCompareColumns(t *testing.T) {
	one := rows([]Value{str("a"), num("1")})
	for _, tc := range []struct {
		name                string
		wantCols, gotCols   []string
		wantTypes, gotTypes []string
		diff                string
	}{
		{"same", []string{"name", "total"}, []string{"NAME", "total"}, []string{TypeString, TypeNumber}, []string{TypeString, TypeNumber}, ""},
		{"renamed", []string{"name", "total"}, []string{"name", "sum"}, nil, nil, `column 2 is named "sum", want "total"`},
		{"expression names are the engine's", []string{"name", "sum(x)"}, []string{"name", "EXPR$1"}, nil, nil, ""},
		{"type class", []string{"name", "total"}, []string{"name", "total"}, []string{TypeString, TypeNumber}, []string{TypeString, TypeString}, "is a string, want a number"},
		{"date is not a timestamp", []string{"d"}, []string{"d"}, []string{TypeDate}, []string{TypeTimestamp}, "is a timestamp, want a date"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := one
			if len(tc.wantCols) == 1 {
				r = rows([]Value{str("a")})
			}
			d := Compare("SELECT * FROM t", &Result{Columns: tc.wantCols, Types: tc.wantTypes, Rows: r},
				&Result{Columns: tc.gotCols, Types: tc.gotTypes, Rows: r})
			if tc.diff == "" && d != "" || tc.diff != "" && !strings.Contains(d, tc.diff) {
				t.Fatalf("Compare = %q, want %q", d, tc.diff)
			}
		})
	}
}

// DuckDB types an expression folded to NULL (NULL || s) as INTEGER; an
// all-NULL number column is no evidence against a string, but one value
// is.
func TestCompareColumnsFoldedNull(t *testing.T) {
	want := &Result{Columns: []string{"c"}, Types: []string{TypeNumber}, Rows: rows([]Value{{Kind: KNull}})}
	got := &Result{Columns: []string{"c"}, Types: []string{TypeString}, Rows: rows([]Value{{Kind: KNull}})}
	if d := Compare("SELECT c FROM t", want, got); d != "" {
		t.Fatalf("all NULL: Compare = %q, want no difference", d)
	}
	want.Rows = append(want.Rows, []Value{num("1")})
	got.Rows = append(got.Rows, []Value{num("1")})
	if d := Compare("SELECT c FROM t", want, got); !strings.Contains(d, "is a string, want a number") {
		t.Fatalf("one value: Compare = %q, want a type class difference", d)
	}
}

func TestWithLimit(t *testing.T) {
	q := "select a from (select * from t limit 5) s order by a limit 100;"
	ob := parseOrderBy(q, []string{"a"})
	if got, want := ob.withLimit(q, 10100), "select a from (select * from t limit 5) s order by a limit 10100"; got != want {
		t.Fatalf("withLimit = %q, want %q", got, want)
	}
}

func TestParseOrderBy(t *testing.T) {
	cols := []string{"i_item_id", "30 days", "total"}
	for _, tc := range []struct {
		query   string
		present bool
		keys    []int
		limit   int64
	}{
		{"select 1", false, nil, 0},
		{"select a from t order by i_item_id nulls first, \"30 days\" desc limit 100;", true, []int{0, 1}, 100},
		{"select a from t -- order by x\n", false, nil, 0},
		{"select 'order by x' from t", false, nil, 0},
		{"with x as (select * from t order by a) select * from x order by 3, T.I_ITEM_ID", true, []int{2, 0}, 0},
		{"select a from t order by sum(total) desc limit 10", true, nil, 10},
	} {
		ob := parseOrderBy(tc.query, cols)
		if ob.present != tc.present || ob.limit != tc.limit || len(ob.keys) != len(tc.keys) {
			t.Errorf("%q: got %+v", tc.query, ob)
			continue
		}
		for i := range ob.keys {
			if ob.keys[i] != tc.keys[i] {
				t.Errorf("%q: keys %v, want %v", tc.query, ob.keys, tc.keys)
			}
		}
	}
}
