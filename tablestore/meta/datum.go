package meta

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Datum is one value in manifests (partition values, key bounds, column
// statistics). Integers, booleans, dates and timestamps are I; floats F;
// strings S; binary B. Decimals have no datum (their statistics are not
// kept), so filters on them never skip data.
type Datum struct {
	Null bool    `json:"null,omitempty"`
	I    *int64  `json:"i,omitempty"`
	F    *jfloat `json:"f,omitempty"`
	S    *string `json:"s,omitempty"`
	B    *[]byte `json:"b,omitempty"`
}

// jfloat is a float64 that JSON can hold whatever its value: JSON numbers
// have no infinities or NaN, so those are the strings "+Inf", "-Inf" and
// "NaN".
type jfloat float64

func (f jfloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return json.Marshal(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return json.Marshal(v)
}

func (f *jfloat) UnmarshalJSON(b []byte) error {
	var v float64
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		var err error
		if v, err = strconv.ParseFloat(s, 64); err != nil {
			return err
		}
	} else if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jfloat(v)
	return nil
}

// IntDatum, FloatDatum, StrDatum and BinDatum make a datum of a value.
func IntDatum(v int64) Datum     { return Datum{I: &v} }
func FloatDatum(v float64) Datum { f := jfloat(v); return Datum{F: &f} }

// StrDatum keeps invalid UTF-8 as bytes: JSON would silently replace it and
// change the ordering.
func StrDatum(v string) Datum {
	if !utf8.ValidString(v) {
		return BinDatum([]byte(v))
	}
	return Datum{S: &v}
}

// BinDatum keeps a copy of v.
func BinDatum(v []byte) Datum { c := bytes.Clone(v); return Datum{B: &c} }

// KeptDatum is d with a string of its own: DatumAt's strings point into
// their array's buffer, which a datum kept in a manifest entry would keep
// alive with all it shares: a whole ingest message, per commit (a
// 1M-event Nexmark q0 run's heap after a collection was up to 425 MB
// with them, 235 MB without).
func KeptDatum(d Datum) Datum {
	if d.S != nil {
		s := strings.Clone(*d.S)
		d.S = &s
	}
	return d
}

// DatumAt returns the value at row i; ok is false for types without datums.
func DatumAt(a arrow.Array, i int) (Datum, bool) {
	if a.IsNull(i) {
		return Datum{Null: true}, true
	}
	switch a := a.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return IntDatum(1), true
		}
		return IntDatum(0), true
	case *array.Int8:
		return IntDatum(int64(a.Value(i))), true
	case *array.Int16:
		return IntDatum(int64(a.Value(i))), true
	case *array.Int32:
		return IntDatum(int64(a.Value(i))), true
	case *array.Int64:
		return IntDatum(a.Value(i)), true
	case *array.Date32:
		return IntDatum(int64(a.Value(i))), true
	case *array.Timestamp:
		return IntDatum(int64(a.Value(i))), true
	case *array.Time64:
		return IntDatum(int64(a.Value(i))), true
	case *array.Float32:
		return FloatDatum(float64(a.Value(i))), true
	case *array.Float64:
		return FloatDatum(a.Value(i)), true
	case *array.String:
		return StrDatum(a.Value(i)), true
	case *array.Binary:
		return BinDatum(a.Value(i)), true
	}
	return Datum{}, false
}

// CompareDatum orders two datums; ok is false when they are not comparable
// (different kinds, nulls, NaN), in which case callers must not skip data.
func CompareDatum(a, b Datum) (int, bool) {
	switch {
	case a.Null || b.Null:
		return 0, false
	case a.I != nil && b.I != nil:
		return cmp.Compare(*a.I, *b.I), true
	case a.F != nil && b.F != nil:
		x, y := float64(*a.F), float64(*b.F)
		if math.IsNaN(x) || math.IsNaN(y) {
			return 0, false
		}
		return cmp.Compare(x, y), true
	case a.I != nil && b.F != nil:
		y := float64(*b.F)
		if math.IsNaN(y) || math.Abs(float64(*a.I)) > 1<<53 {
			return 0, false
		}
		return cmp.Compare(float64(*a.I), y), true
	case a.F != nil && b.I != nil:
		c, ok := CompareDatum(b, a)
		return -c, ok
	}
	ab, aok := a.Bytes()
	bb, bok := b.Bytes()
	if aok && bok {
		return bytes.Compare(ab, bb), true
	}
	return 0, false
}

// Bytes is the value of a string or binary datum.
func (d Datum) Bytes() ([]byte, bool) {
	switch {
	case d.S != nil:
		return []byte(*d.S), true
	case d.B != nil:
		return *d.B, true
	}
	return nil, false
}

// ScalarDatum converts a predicate literal to a datum comparable with
// values of column type colType; ok is false when that is not possible.
func ScalarDatum(s scalar.Scalar, colType arrow.DataType) (Datum, bool) {
	if s == nil || !s.IsValid() {
		return Datum{}, false
	}
	switch s := s.(type) {
	case *scalar.Boolean:
		if s.Value {
			return IntDatum(1), true
		}
		return IntDatum(0), true
	case *scalar.Int8:
		return IntDatum(int64(s.Value)), true
	case *scalar.Int16:
		return IntDatum(int64(s.Value)), true
	case *scalar.Int32:
		return IntDatum(int64(s.Value)), true
	case *scalar.Int64:
		return IntDatum(s.Value), true
	case *scalar.Uint8:
		return IntDatum(int64(s.Value)), true
	case *scalar.Uint16:
		return IntDatum(int64(s.Value)), true
	case *scalar.Uint32:
		return IntDatum(int64(s.Value)), true
	case *scalar.Uint64:
		if s.Value > math.MaxInt64 {
			return Datum{}, false
		}
		return IntDatum(int64(s.Value)), true
	case *scalar.Float32:
		return FloatDatum(float64(s.Value)), true
	case *scalar.Float64:
		return FloatDatum(s.Value), true
	case *scalar.String:
		return StrDatum(string(s.Data())), true
	case *scalar.LargeString:
		return StrDatum(string(s.Data())), true
	case *scalar.Binary:
		return BinDatum(s.Data()), true
	case *scalar.LargeBinary:
		return BinDatum(s.Data()), true
	case *scalar.Date32:
		if colType.ID() != arrow.DATE32 {
			return Datum{}, false
		}
		return IntDatum(int64(s.Value)), true
	case *scalar.Timestamp:
		ct, ok := colType.(*arrow.TimestampType)
		if !ok {
			return Datum{}, false
		}
		st := s.DataType().(*arrow.TimestampType)
		v, ok := convertTimeUnit(int64(s.Value), st.Unit, ct.Unit)
		if !ok {
			return Datum{}, false
		}
		return IntDatum(v), true
	}
	return Datum{}, false
}

// convertTimeUnit converts v exactly, or reports false.
func convertTimeUnit(v int64, from, to arrow.TimeUnit) (int64, bool) {
	mul := [...]int64{1, 1e3, 1e6, 1e9}
	if from == to {
		return v, true
	}
	if to > from {
		f := mul[to] / mul[from]
		if v > math.MaxInt64/f || v < math.MinInt64/f {
			return 0, false
		}
		return v * f, true
	}
	f := mul[from] / mul[to]
	if v%f != 0 {
		return 0, false
	}
	return v / f, true
}

// PartitionPath renders partition values Hive style: "dt=2024-05-01/h=3".
func PartitionPath(names []string, types []arrow.DataType, vals []Datum, defaultName string) string {
	var sb strings.Builder
	for i, n := range names {
		if i > 0 {
			sb.WriteByte('/')
		}
		sb.WriteString(url.PathEscape(n))
		sb.WriteByte('=')
		v := vals[i]
		switch {
		case v.Null:
			sb.WriteString(defaultName)
		case v.I != nil && types[i].ID() == arrow.DATE32:
			sb.WriteString(arrow.Date32(*v.I).FormattedString())
		case v.I != nil && types[i].ID() == arrow.BOOL:
			sb.WriteString(strconv.FormatBool(*v.I != 0))
		case v.I != nil:
			sb.WriteString(strconv.FormatInt(*v.I, 10))
		case v.S != nil:
			s := url.PathEscape(*v.S)
			if s == "" || s == "." || s == ".." {
				s = "%" + fmt.Sprintf("%x", *v.S) + "%"
			}
			sb.WriteString(s)
		case v.B != nil:
			sb.WriteString(fmt.Sprintf("%x", *v.B))
		}
	}
	return sb.String()
}

// PartitionKey is a map key for a partition value tuple.
func PartitionKey(vals []Datum) string {
	var sb strings.Builder
	for _, v := range vals {
		switch {
		case v.Null:
			sb.WriteString("n;")
		case v.I != nil:
			fmt.Fprintf(&sb, "i%d;", *v.I)
		case v.F != nil:
			fmt.Fprintf(&sb, "f%v;", float64(*v.F))
		case v.S != nil:
			fmt.Fprintf(&sb, "s%q;", *v.S)
		case v.B != nil:
			fmt.Fprintf(&sb, "b%x;", *v.B)
		}
	}
	return sb.String()
}
