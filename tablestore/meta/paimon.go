package meta

import (
	"math/big"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/paimonfmt"
)

// A datum of a column of an Arrow type is a value of Paimon's BinaryRow
// (paimonfmt): partitions, key bounds and statistics in Paimon's manifests.

// PaimonType is dt's BinaryRow layout; ok is false for nested types.
func PaimonType(dt arrow.DataType) (paimonfmt.Type, bool) {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return paimonfmt.Type{Kind: paimonfmt.Boolean}, true
	case *arrow.Int8Type:
		return paimonfmt.Type{Kind: paimonfmt.TinyInt}, true
	case *arrow.Int16Type:
		return paimonfmt.Type{Kind: paimonfmt.SmallInt}, true
	case *arrow.Int32Type:
		return paimonfmt.Type{Kind: paimonfmt.Int}, true
	case *arrow.Int64Type:
		return paimonfmt.Type{Kind: paimonfmt.BigInt}, true
	case *arrow.Float32Type:
		return paimonfmt.Type{Kind: paimonfmt.Float}, true
	case *arrow.Float64Type:
		return paimonfmt.Type{Kind: paimonfmt.Double}, true
	case *arrow.Date32Type:
		return paimonfmt.Type{Kind: paimonfmt.Date}, true
	case *arrow.Time64Type:
		return paimonfmt.Type{Kind: paimonfmt.Time}, true
	case *arrow.TimestampType:
		return paimonfmt.Type{Kind: paimonfmt.Timestamp, Precision: [...]int{0, 3, 6, 9}[t.Unit]}, true
	case *arrow.Decimal128Type:
		return paimonfmt.Type{Kind: paimonfmt.Decimal, Precision: int(t.Precision)}, true
	case *arrow.StringType:
		return paimonfmt.Type{Kind: paimonfmt.String}, true
	case *arrow.BinaryType:
		return paimonfmt.Type{Kind: paimonfmt.Bytes}, true
	}
	return paimonfmt.Type{}, false
}

// timeUnitsPerMilli converts time and timestamp datums (in the column's
// unit) to Paimon's milliseconds.
func timeUnitsPerMilli(u arrow.TimeUnit) (mul, div int64) {
	switch u {
	case arrow.Second:
		return 1000, 1
	case arrow.Millisecond:
		return 1, 1
	case arrow.Microsecond:
		return 1, 1000
	}
	return 1, 1_000_000
}

// PaimonValue is d as BinaryRow holds a value of type dt; nil (NULL) where
// there is no such value (decimals have no datum), which the caller's
// round trip then finds inexact.
func PaimonValue(dt arrow.DataType, d Datum) any {
	switch {
	case d.Null:
		return nil
	case d.I != nil:
		v := *d.I
		switch t := dt.(type) {
		case *arrow.BooleanType:
			return v != 0
		case *arrow.Time64Type:
			_, div := timeUnitsPerMilli(t.Unit)
			return floorDiv(v, div)
		case *arrow.TimestampType:
			mul, div := timeUnitsPerMilli(t.Unit)
			if div == 1 {
				return paimonfmt.TimestampValue{Millis: v * mul}
			}
			ms := floorDiv(v, div)
			return paimonfmt.TimestampValue{Millis: ms, NanoOfMilli: int32((v - ms*div) * (1_000_000 / div))}
		}
		return v
	case d.F != nil:
		return float64(*d.F)
	case d.S != nil:
		return *d.S
	case d.B != nil:
		if dt.ID() == arrow.STRING {
			return string(*d.B)
		}
		return *d.B
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// datumOf is the datum of a BinaryRow value of type dt.
func datumOf(dt arrow.DataType, v any) Datum {
	switch v := v.(type) {
	case nil:
		return Datum{Null: true}
	case bool:
		if v {
			return IntDatum(1)
		}
		return IntDatum(0)
	case int64:
		if t, ok := dt.(*arrow.Time64Type); ok {
			_, div := timeUnitsPerMilli(t.Unit)
			return IntDatum(v * div)
		}
		return IntDatum(v)
	case float64:
		return FloatDatum(v)
	case string:
		return StrDatum(v)
	case []byte:
		return BinDatum(v)
	case paimonfmt.TimestampValue:
		mul, div := timeUnitsPerMilli(dt.(*arrow.TimestampType).Unit)
		if div == 1 {
			return IntDatum(v.Millis / mul)
		}
		return IntDatum(v.Millis*div + int64(v.NanoOfMilli)/(1_000_000/div))
	case *big.Int:
		return Datum{} // decimals have no datum
	}
	return Datum{}
}

// EncodeDatums serializes ds (of types) as a BinaryRow; exact tells
// whether decoding it gives ds back.
func EncodeDatums(types []arrow.DataType, ds []Datum) (row []byte, exact bool, err error) {
	row, exact, err = EncodeDatumsUnchecked(types, ds)
	if err != nil {
		return nil, false, err
	}
	if exact {
		back, err := DecodeDatums(types, row)
		exact = err == nil && reflect.DeepEqual(back, ds)
	}
	return row, exact, nil
}

// EncodeDatumsUnchecked is EncodeDatums without decoding the row again to check it,
// for callers that already know which values BinaryRow holds exactly;
// maybe is false when it certainly does not.
func EncodeDatumsUnchecked(types []arrow.DataType, ds []Datum) (row []byte, maybe bool, err error) {
	pts := make([]paimonfmt.Type, len(types))
	vals := make([]any, len(types))
	maybe = len(ds) == len(types)
	for i, dt := range types {
		pt, ok := PaimonType(dt)
		if !ok {
			pt, maybe = paimonfmt.Type{Kind: paimonfmt.BigInt}, false // stays NULL
		} else if i < len(ds) {
			vals[i] = PaimonValue(dt, ds[i])
		}
		pts[i] = pt
	}
	if row, err = paimonfmt.EncodeRow(pts, vals); err != nil {
		return nil, false, err
	}
	return row, maybe, nil
}

// DecodeDatums is the datums of a BinaryRow of the given types.
func DecodeDatums(types []arrow.DataType, row []byte) ([]Datum, error) {
	pts := make([]paimonfmt.Type, len(types))
	for i, dt := range types {
		pts[i], _ = PaimonType(dt)
	}
	vals, err := paimonfmt.DecodeRow(row, pts)
	if err != nil {
		return nil, err
	}
	out := make([]Datum, len(vals))
	for i, v := range vals {
		out[i] = datumOf(types[i], v)
	}
	return out, nil
}
