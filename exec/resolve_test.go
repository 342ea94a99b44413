package exec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
)

func TestResolve(t *testing.T) {
	i32, i64, str := arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	dec := &arrow.Decimal128Type{Precision: 7, Scale: 2}
	for _, c := range []struct {
		name  string
		types []arrow.DataType
		want  string
	}{
		{"add", []arrow.DataType{i32, i64}, "int64"},
		{"ADD", []arrow.DataType{dec, i32}, "decimal(13, 2)"},
		{"equal", []arrow.DataType{dec, arrow.PrimitiveTypes.Float32}, "bool"},
		{"substr", []arrow.DataType{str, i32}, "utf8"},
		{"add", []arrow.DataType{str, i32}, "error: add(utf8, int32): arithmetic needs numbers"},
		{"frobnicate", []arrow.DataType{i32}, "error: unknown function frobnicate"},
		{"upper", nil, "error: upper(): takes 1 arguments, got 0"},
	} {
		got, err := exec.ResolveFunction(c.name, c.types)
		s := ""
		if err != nil {
			if !errors.Is(err, exec.ErrInvalid) {
				t.Errorf("%s: error %v is not ErrInvalid", c.name, err)
			}
			s = "error: " + strings.TrimPrefix(err.Error(), exec.ErrInvalid.Error()+": ")
		} else {
			s = got.String()
		}
		if s != c.want {
			t.Errorf("%s%v: got %q want %q", c.name, c.types, s, c.want)
		}
	}
	for _, c := range []struct {
		name  string
		types []arrow.DataType
		want  string
	}{
		{"sum", []arrow.DataType{dec}, "decimal(17, 2)"},
		{"avg", []arrow.DataType{dec}, "decimal(11, 6)"},
		{"avg", []arrow.DataType{i32}, "int32"}, // Flink's: the mean truncated
		{"avg", []arrow.DataType{arrow.PrimitiveTypes.Float32}, "float64"},
		{"count_star", nil, "int64"},
		{"max", []arrow.DataType{str}, "utf8"},
	} {
		got, err := exec.ResolveAggregate(c.name, c.types)
		if err != nil || got.String() != c.want {
			t.Errorf("%s: got %v %v want %s", c.name, got, err, c.want)
		}
	}
	if got, err := exec.ResolveWindow("ntile", []arrow.DataType{i64}); err != nil || got.ID() != arrow.INT64 {
		t.Errorf("ntile: %v %v", got, err)
	}
}

func TestCommonTypeDecimals(t *testing.T) {
	d := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	for _, c := range []struct{ a, b, want arrow.DataType }{
		{d(10, 2), d(5, 4), d(12, 4)},
		{d(38, 19), d(38, 9), d(38, 9)},
		{d(7, 2), arrow.PrimitiveTypes.Int64, d(21, 2)},
		{d(38, 0), d(10, 5), d(38, 0)},
	} {
		got, ok := exec.CommonType(c.a, c.b)
		if !ok || !arrow.TypeEqual(got, c.want) {
			t.Errorf("CommonType(%s, %s) = %v, want %s", c.a, c.b, got, c.want)
		}
	}
}
