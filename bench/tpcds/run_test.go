package tpcds

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestBatchRows(t *testing.T) {
	var wide []arrow.Field
	for range 16 {
		wide = append(wide, arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 7, Scale: 2}})
	}
	for range 18 {
		wide = append(wide, arrow.Field{Name: "i", Type: arrow.PrimitiveTypes.Int32})
	}
	n := batchRows(arrow.NewSchema(wide, nil), 1<<16)
	// catalog_sales' shape: 16 decimals and 18 integers per row.
	if bytes := n * (16*16 + 18*4); n < 1000 || bytes > 16<<20/2 {
		t.Errorf("batchRows = %d (%d bytes of column data)", n, bytes)
	}
	narrow := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32}}, nil)
	if n := batchRows(narrow, 5000); n != 5000 {
		t.Errorf("narrow batchRows = %d, want the limit 5000", n)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	ok := EngineResult{Status: StatusOK, Rows: 1}
	s := Summarize([]QueryResult{
		{Query: "01", DuckDB: first(10), Flightd: first(30), Ratio: 2},
		{Query: "02", DuckDB: first(10), Flightd: first(30), Ratio: 8},
		{Query: "03", DuckDB: EngineResult{Status: StatusOK}, Flightd: EngineResult{Status: StatusWrong}},
		{Query: "04", DuckDB: ok, Flightd: EngineResult{Status: StatusError}},
		{Query: "05", DuckDB: EngineResult{Status: StatusError}, Flightd: EngineResult{Status: StatusNotRun}},
	})
	want := Summary{Queries: 5, DuckDBOK: 4, DuckDBNonEmpty: 3, FlightdOK: 2, FlightdWrong: 1, FlightdError: 1,
		FlightdNotRun: 1, GeoMeanRatio: 4, GeoMeanFirstRatio: 3}
	if math.Abs(s.GeoMeanFirstRatio-3) < 1e-9 {
		s.GeoMeanFirstRatio = 3
	}
	if s != want {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
}

// first is a passing result whose first run took ms.
func first(ms float64) EngineResult { return EngineResult{Status: StatusOK, Rows: 1, FirstMs: ms} }
