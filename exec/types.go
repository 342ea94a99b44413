package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/vectorized"
)

// MaxDecimalPrecision is the largest precision of decimal128.
const MaxDecimalPrecision = 38

// intDigits is the number of decimal digits an integer type needs.
func intDigits(id arrow.Type) int32 {
	switch id {
	case arrow.INT8, arrow.UINT8:
		return 3
	case arrow.INT16, arrow.UINT16:
		return 5
	case arrow.INT32, arrow.UINT32:
		return 10
	case arrow.UINT64:
		return 20
	}
	return 19
}

// signedOf maps unsigned integer types to the signed type that holds them.
func signedOf(dt arrow.DataType) arrow.DataType {
	switch dt.ID() {
	case arrow.UINT8:
		return arrow.PrimitiveTypes.Int16
	case arrow.UINT16:
		return arrow.PrimitiveTypes.Int32
	case arrow.UINT32, arrow.UINT64:
		return arrow.PrimitiveTypes.Int64
	}
	return dt
}

func intRank(id arrow.Type) int {
	return map[arrow.Type]int{arrow.INT8: 1, arrow.INT16: 2, arrow.INT32: 3, arrow.INT64: 4}[id]
}

// asDecimal returns the decimal type exactly holding an integer or decimal type.
func asDecimal(dt arrow.DataType) (*arrow.Decimal128Type, bool) {
	if d, ok := dt.(*arrow.Decimal128Type); ok {
		return d, true
	}
	if vectorized.IsInteger(dt) {
		return &arrow.Decimal128Type{Precision: intDigits(dt.ID()), Scale: 0}, true
	}
	return nil, false
}

func isNumeric(dt arrow.DataType) bool {
	return vectorized.IsInteger(dt) || vectorized.IsFloat(dt) || dt.ID() == arrow.DECIMAL128
}

// CommonType returns the type both a and b convert to without loss for
// comparison, CASE, COALESCE and set operations, or false if there is none.
// Integers widen, integer with decimal becomes a decimal holding both (when
// 38 digits cannot hold both, fraction digits give way to integer digits), any
// float makes float64, date with timestamp becomes the timestamp, and
// timestamps of different units take the finer unit.
func CommonType(a, b arrow.DataType) (arrow.DataType, bool) {
	switch {
	case arrow.TypeEqual(a, b):
		return a, true
	case a.ID() == arrow.NULL:
		return b, true
	case b.ID() == arrow.NULL:
		return a, true
	}
	a, b = signedOf(a), signedOf(b)
	if arrow.TypeEqual(a, b) {
		return a, true
	}
	if vectorized.IsNested(a) && vectorized.IsNested(b) {
		return commonNested(a, b)
	}
	switch {
	case vectorized.IsInteger(a) && vectorized.IsInteger(b):
		if intRank(a.ID()) >= intRank(b.ID()) {
			return a, true
		}
		return b, true
	case isNumeric(a) && isNumeric(b):
		if vectorized.IsFloat(a) || vectorized.IsFloat(b) {
			return arrow.PrimitiveTypes.Float64, true
		}
		da, _ := asDecimal(a)
		db, _ := asDecimal(b)
		// Keep every integer digit; past 38 digits give up fraction digits
		// (else casting the wider side would overflow).
		intd := max(da.Precision-da.Scale, db.Precision-db.Scale)
		s := min(max(da.Scale, db.Scale), MaxDecimalPrecision-intd)
		return &arrow.Decimal128Type{Precision: min(intd+s, MaxDecimalPrecision), Scale: s}, true
	case vectorized.IsString(a) && vectorized.IsString(b):
		return arrow.BinaryTypes.LargeString, true
	case a.ID() == arrow.DATE32 && b.ID() == arrow.TIMESTAMP:
		return b, true
	case a.ID() == arrow.TIMESTAMP && b.ID() == arrow.DATE32:
		return a, true
	case a.ID() == arrow.TIME64 && b.ID() == arrow.TIME64:
		return &arrow.Time64Type{Unit: max(a.(*arrow.Time64Type).Unit, b.(*arrow.Time64Type).Unit)}, true
	case a.ID() == arrow.TIMESTAMP && b.ID() == arrow.TIMESTAMP:
		ta, tb := a.(*arrow.TimestampType), b.(*arrow.TimestampType)
		if ta.TimeZone != tb.TimeZone && ta.TimeZone != "" && tb.TimeZone != "" {
			return &arrow.TimestampType{Unit: max(ta.Unit, tb.Unit), TimeZone: "UTC"}, true
		}
		tz := ta.TimeZone
		if tz == "" {
			tz = tb.TimeZone
		}
		return &arrow.TimestampType{Unit: max(ta.Unit, tb.Unit), TimeZone: tz}, true
	}
	return nil, false
}

// commonTypeOf folds CommonType over several types.
func commonTypeOf(types []arrow.DataType) (arrow.DataType, bool) {
	if len(types) == 0 {
		return nil, false
	}
	t := types[0]
	for _, u := range types[1:] {
		var ok bool
		if t, ok = CommonType(t, u); !ok {
			return nil, false
		}
	}
	return t, true
}

// castTo wraps e in a cast to dt when its type differs.
func castTo(e Expr, dt arrow.DataType) (Expr, error) {
	return NewCast(e, dt)
}

// decimalResult derives the result type of a decimal arithmetic operator
// (SQL Server / Spark rules), reducing the scale to keep at least 6
// fractional digits when the precision would exceed 38.
func decimalResult(op string, a, b *arrow.Decimal128Type) *arrow.Decimal128Type {
	p1, s1, p2, s2 := a.Precision, a.Scale, b.Precision, b.Scale
	var p, s int32
	switch op {
	case "add", "subtract":
		s = max(s1, s2)
		p = max(p1-s1, p2-s2) + s + 1
	case "multiply":
		p, s = p1+p2+1, s1+s2
	case "divide":
		s = max(6, s1+p2+1)
		p = p1 - s1 + s2 + s
	default: // modulo
		s = max(s1, s2)
		p = min(p1-s1, p2-s2) + s
	}
	if p > MaxDecimalPrecision {
		intd := p - s
		s = max(MaxDecimalPrecision-intd, min(s, 6))
		p = MaxDecimalPrecision
	}
	return &arrow.Decimal128Type{Precision: p, Scale: s}
}

// widensExactly reports whether every value of from converts to to exactly
// and in order, so that comparing in to and comparing in from agree.
func widensExactly(from, to arrow.DataType) bool {
	fd, fdec := from.(*arrow.Decimal128Type)
	td, tdec := to.(*arrow.Decimal128Type)
	switch {
	case vectorized.IsInteger(from) && vectorized.IsInteger(to):
		fw, tw := intWidth(from), intWidth(to)
		fs, ts := isSigned(from.ID()), isSigned(to.ID())
		return fs == ts && fw <= tw || !fs && ts && fw < tw
	case vectorized.IsInteger(from) && tdec:
		return td.Scale >= 0 && intDigits(from.ID()) <= td.Precision-td.Scale
	case fdec && tdec:
		return fd.Scale <= td.Scale && fd.Precision-fd.Scale <= td.Precision-td.Scale
	case vectorized.IsInteger(from) && to.ID() == arrow.FLOAT64:
		return intWidth(from) <= 32 // float64 holds 53-bit integers exactly
	}
	return from.ID() == arrow.FLOAT32 && to.ID() == arrow.FLOAT64
}

func intWidth(dt arrow.DataType) int { return dt.(arrow.FixedWidthDataType).BitWidth() }

func isSigned(id arrow.Type) bool {
	return id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32 || id == arrow.INT64
}

// holdsExactly reports whether constant v, seen in the common type wide, is
// a value of narrow: it converts to narrow and back to wide unchanged.
// NULL converts to every type.
func holdsExactly(v scalar.Scalar, narrow, wide arrow.DataType) bool {
	w, err := castScalar(v, wide)
	if err != nil {
		return false
	}
	n, err := castScalar(w, narrow)
	if err != nil {
		return false
	}
	back, err := castScalar(n, wide)
	return err == nil && scalar.Equals(back, w)
}

// compareIn returns the type to compare x with constants in when the common
// type of all of them is t: x's own type when t only widens it and every
// constant is exactly a value of x's type, so x is not cast on every batch
// (a decimal(7,2) column against the integer 18 compares with 18.00);
// otherwise t, which keeps the result of comparing in t.
func compareIn(x Expr, consts []*LiteralExpr, t arrow.DataType) arrow.DataType {
	xt := x.DataType()
	if arrow.TypeEqual(xt, t) || !widensExactly(xt, t) {
		return t
	}
	for _, c := range consts {
		if !holdsExactly(c.Value, xt, t) {
			return t
		}
	}
	return xt
}

// commonNested is the common type of two ROW (same number of fields,
// named as a's), ARRAY or MAP types, part by part.
func commonNested(a, b arrow.DataType) (arrow.DataType, bool) {
	switch a := a.(type) {
	case *arrow.StructType:
		b, ok := b.(*arrow.StructType)
		if !ok || a.NumFields() != b.NumFields() {
			return nil, false
		}
		fields := make([]arrow.Field, a.NumFields())
		for i, f := range a.Fields() {
			t, ok := CommonType(f.Type, b.Field(i).Type)
			if !ok {
				return nil, false
			}
			fields[i] = arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable || b.Field(i).Nullable}
		}
		return arrow.StructOf(fields...), true
	case *arrow.MapType:
		b, ok := b.(*arrow.MapType)
		if !ok {
			return nil, false
		}
		k, ok := CommonType(a.KeyType(), b.KeyType())
		if !ok {
			return nil, false
		}
		v, ok := CommonType(a.ItemType(), b.ItemType())
		if !ok {
			return nil, false
		}
		return arrow.MapOf(k, v), true
	case *arrow.ListType:
		b, ok := b.(*arrow.ListType)
		if !ok {
			return nil, false
		}
		e, ok := CommonType(a.Elem(), b.Elem())
		if !ok {
			return nil, false
		}
		return arrow.ListOf(e), true
	}
	return nil, false
}
