package plan

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/vectorized"
)

// MaxMapNesting is how deep MAP types may nest (vectorized.MaxMapNesting),
// for the Substrait consumer, which may not import vectorized.
const MaxMapNesting = vectorized.MaxMapNesting

// ArrowType maps a SQL type to its Arrow type.
func ArrowType(t *sql.TypeName) (arrow.DataType, error) {
	p := t.Params
	param := func(i, def int) int {
		if i < len(p) {
			return p[i]
		}
		return def
	}
	maxParams := func(n int) error {
		if len(p) > n {
			return sql.Errorf(t.Pos, "type %s takes at most %d parameters, got %d", t.Name, n, len(p))
		}
		return nil
	}
	simple := map[string]arrow.DataType{
		"BOOLEAN": arrow.FixedWidthTypes.Boolean, "TINYINT": arrow.PrimitiveTypes.Int8,
		"SMALLINT": arrow.PrimitiveTypes.Int16, "INT": arrow.PrimitiveTypes.Int32,
		"BIGINT": arrow.PrimitiveTypes.Int64, "FLOAT": arrow.PrimitiveTypes.Float32,
		"DOUBLE": arrow.PrimitiveTypes.Float64, "DATE": arrow.FixedWidthTypes.Date32,
		"INTERVAL": arrow.FixedWidthTypes.MonthDayNanoInterval,
	}
	if dt, ok := simple[t.Name]; ok {
		if err := maxParams(0); err != nil {
			return nil, err
		}
		return dt, nil
	}
	switch t.Name {
	case "CHAR", "VARCHAR", "STRING":
		if err := maxParams(1); err != nil {
			return nil, err
		}
		return arrow.BinaryTypes.String, nil
	case "BINARY", "VARBINARY", "BYTES":
		if err := maxParams(1); err != nil {
			return nil, err
		}
		return arrow.BinaryTypes.Binary, nil
	case "DECIMAL":
		if err := maxParams(2); err != nil {
			return nil, err
		}
		prec, scale := param(0, 10), param(1, 0)
		if prec < 1 || prec > 38 {
			return nil, sql.Errorf(t.Pos, "DECIMAL precision must be between 1 and 38, got %d", prec)
		}
		if scale > prec {
			return nil, sql.Errorf(t.Pos, "DECIMAL scale %d exceeds precision %d", scale, prec)
		}
		return &arrow.Decimal128Type{Precision: int32(prec), Scale: int32(scale)}, nil
	case "TIME":
		if err := maxParams(1); err != nil {
			return nil, err
		}
		u, err := unitOf(t, param(0, 6))
		if err != nil {
			return nil, err
		}
		if u == arrow.Second || u == arrow.Millisecond {
			// Arrow's time64 holds micro- and nanoseconds only.
			u = arrow.Microsecond
		}
		return &arrow.Time64Type{Unit: u}, nil
	case "TIMESTAMP", "TIMESTAMP_LTZ":
		if err := maxParams(1); err != nil {
			return nil, err
		}
		u, err := unitOf(t, param(0, 6))
		if err != nil {
			return nil, err
		}
		tz := ""
		if t.Name == "TIMESTAMP_LTZ" {
			tz = "UTC"
		}
		return &arrow.TimestampType{Unit: u, TimeZone: tz}, nil
	case "ARRAY":
		elem, err := ArrowType(t.Elems[0])
		if err != nil {
			return nil, err
		}
		if t.Elems[0].NotNull {
			return arrow.ListOfNonNullable(elem), nil
		}
		return arrow.ListOf(elem), nil
	case "MAP":
		key, err := ArrowType(t.Elems[0])
		if err != nil {
			return nil, err
		}
		if vectorized.IsNested(key) {
			return nil, sql.Errorf(t.Elems[0].Pos, "MAP keys cannot be of type %s", SQLTypeName(key))
		}
		val, err := ArrowType(t.Elems[1])
		if err != nil {
			return nil, err
		}
		m := arrow.MapOf(key, val)
		m.SetItemNullable(!t.Elems[1].NotNull)
		if n := vectorized.MapNesting(m); n > vectorized.MaxMapNesting {
			return nil, sql.StateErrorf(sql.StateTooComplex, t.Pos, "MAP types nested %d deep, over the limit of %d", n, vectorized.MaxMapNesting)
		}
		return m, nil
	case "ROW":
		fields := make([]arrow.Field, len(t.Fields))
		seen := map[string]bool{}
		for i, c := range t.Fields {
			if seen[c.Name] {
				return nil, sql.Errorf(c.Pos, "duplicate field %q in ROW type", c.Name)
			}
			seen[c.Name] = true
			ft, err := ArrowType(c.Type)
			if err != nil {
				return nil, err
			}
			fields[i] = arrow.Field{Name: c.Name, Type: ft, Nullable: !c.NotNull}
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, sql.Errorf(t.Pos, "type %s is not supported yet", t.Name)
}

func unitOf(t *sql.TypeName, prec int) (arrow.TimeUnit, error) {
	switch {
	case prec == 0:
		return arrow.Second, nil
	case prec <= 3:
		return arrow.Millisecond, nil
	case prec <= 6:
		return arrow.Microsecond, nil
	case prec <= 9:
		return arrow.Nanosecond, nil
	}
	return 0, sql.Errorf(t.Pos, "%s precision must be between 0 and 9, got %d", t.Name, prec)
}

// SQLTypeName is the reverse mapping: the SQL spelling of an Arrow type, as
// reported in Flight SQL metadata and DESCRIBE.
func SQLTypeName(dt arrow.DataType) string { return sql.Format(typeNameOf(dt)) }

// typeNameOf is the SQL type of an Arrow type; types without a SQL
// spelling keep Arrow's name.
func typeNameOf(dt arrow.DataType) *sql.TypeName {
	name := func(n string, params ...int) *sql.TypeName { return &sql.TypeName{Name: n, Params: params} }
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return name("BOOLEAN")
	case *arrow.Int8Type:
		return name("TINYINT")
	case *arrow.Int16Type:
		return name("SMALLINT")
	case *arrow.Int32Type:
		return name("INT")
	case *arrow.Int64Type:
		return name("BIGINT")
	case *arrow.Float32Type:
		return name("FLOAT")
	case *arrow.Float64Type:
		return name("DOUBLE")
	case *arrow.Decimal128Type:
		return name("DECIMAL", int(dt.Precision), int(dt.Scale))
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return name("STRING")
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return name("BYTES")
	case *arrow.Date32Type, *arrow.Date64Type:
		return name("DATE")
	case *arrow.Time64Type:
		return name("TIME", precOf(dt.Unit))
	case *arrow.Time32Type:
		return name("TIME", precOf(dt.Unit))
	case *arrow.TimestampType:
		if dt.TimeZone != "" {
			return name("TIMESTAMP_LTZ", precOf(dt.Unit))
		}
		return name("TIMESTAMP", precOf(dt.Unit))
	case *arrow.MonthDayNanoIntervalType, *arrow.DayTimeIntervalType, *arrow.MonthIntervalType:
		return name("INTERVAL")
	case *arrow.NullType:
		return name("NULL")
	case *arrow.MapType: // before ListLikeType, which maps also implement
		v := typeNameOf(dt.ItemType())
		v.NotNull = !dt.ItemField().Nullable
		return &sql.TypeName{Name: "MAP", Elems: []*sql.TypeName{typeNameOf(dt.KeyType()), v}}
	case arrow.ListLikeType:
		e := typeNameOf(dt.Elem())
		e.NotNull = !dt.ElemField().Nullable
		return &sql.TypeName{Name: "ARRAY", Elems: []*sql.TypeName{e}}
	case *arrow.StructType:
		t := &sql.TypeName{Name: "ROW"}
		for _, f := range dt.Fields() {
			t.Fields = append(t.Fields, &sql.ColumnDef{Name: f.Name, Type: typeNameOf(f.Type), NotNull: !f.Nullable})
		}
		return t
	}
	return name(dt.String())
}

func precOf(u arrow.TimeUnit) int {
	return [...]int{0, 3, 6, 9}[u]
}
