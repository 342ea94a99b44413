package plan

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/sql"
)

func parseType(t *testing.T, s string) (arrow.DataType, error) {
	t.Helper()
	st, err := sql.ParseOne("SELECT CAST(NULL AS " + s + ")")
	if err != nil {
		return nil, err
	}
	return ArrowType(st.(*sql.Query).Body.(*sql.Select).Items[0].Expr.(*sql.Cast).Type)
}

func TestTypeMapping(t *testing.T) {
	cases := map[string]arrow.DataType{
		"BOOLEAN":                           arrow.FixedWidthTypes.Boolean,
		"TINYINT":                           arrow.PrimitiveTypes.Int8,
		"SMALLINT":                          arrow.PrimitiveTypes.Int16,
		"INTEGER":                           arrow.PrimitiveTypes.Int32,
		"BIGINT":                            arrow.PrimitiveTypes.Int64,
		"REAL":                              arrow.PrimitiveTypes.Float32,
		"DOUBLE":                            arrow.PrimitiveTypes.Float64,
		"DECIMAL(7, 2)":                     &arrow.Decimal128Type{Precision: 7, Scale: 2},
		"DECIMAL":                           &arrow.Decimal128Type{Precision: 10, Scale: 0},
		"CHAR(3)":                           arrow.BinaryTypes.String,
		"VARCHAR(10)":                       arrow.BinaryTypes.String,
		"STRING":                            arrow.BinaryTypes.String,
		"VARBINARY":                         arrow.BinaryTypes.Binary,
		"BYTES":                             arrow.BinaryTypes.Binary,
		"DATE":                              arrow.FixedWidthTypes.Date32,
		"TIME(6)":                           &arrow.Time64Type{Unit: arrow.Microsecond},
		"TIMESTAMP":                         &arrow.TimestampType{Unit: arrow.Microsecond},
		"TIMESTAMP(0)":                      &arrow.TimestampType{Unit: arrow.Second},
		"TIMESTAMP(3)":                      &arrow.TimestampType{Unit: arrow.Millisecond},
		"TIMESTAMP(9)":                      &arrow.TimestampType{Unit: arrow.Nanosecond},
		"TIMESTAMP_LTZ(3)":                  &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"},
		"TIMESTAMP(6) WITH LOCAL TIME ZONE": &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		"INTERVAL":                          arrow.FixedWidthTypes.MonthDayNanoInterval,
	}
	for s, want := range cases {
		got, err := parseType(t, s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if !arrow.TypeEqual(got, want) {
			t.Errorf("%s: got %s, want %s", s, got, want)
		}
		// The reverse mapping reads back as the same Arrow type.
		back, err := parseType(t, SQLTypeName(got))
		if err != nil || !arrow.TypeEqual(back, got) {
			t.Errorf("%s: SQLTypeName %q reads back as %v (%v)", s, SQLTypeName(got), back, err)
		}
	}
	for _, bad := range []string{"DECIMAL(39, 2)", "DECIMAL(5, 6)", "TIMESTAMP(10)", "INT(3, 4)"} {
		if _, err := parseType(t, bad); err == nil {
			t.Errorf("%s: expected an error", bad)
		}
	}
}

// TestSizeAtMost: sizeAtMost agrees with counting every node, at and around
// the size of the tree.
func TestSizeAtMost(t *testing.T) {
	var e Expr = &ColRef{ID: 1, Typ: arrow.PrimitiveTypes.Int64}
	for range 20 {
		e = &Call{Fn: "+", Args: []Expr{e, &ColRef{ID: 2, Typ: arrow.PrimitiveTypes.Int64}}, Typ: arrow.PrimitiveTypes.Int64}
	}
	nodes := 0
	walkExpr(e, func(Expr) { nodes++ })
	for n := 0; n <= nodes+1; n++ {
		if got := sizeAtMost(e, n); got != (nodes <= n) {
			t.Errorf("sizeAtMost(%d nodes, %d) = %v", nodes, n, got)
		}
	}
}
