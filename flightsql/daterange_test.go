package flightsql_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/engine"
	flightd "github.com/flightd/flightd/flightsql"
)

// TestIngestDateRange: dates and timestamps arriving as Arrow values are
// kept to years 0000 to 9999, as SQL arithmetic and casts keep them: bulk
// ingest, bound parameters, COPY FROM and read_parquet refuse others with
// SQLSTATE 22008 naming the column and row, and store nothing. An ingested
// date32 of year 200000 was stored as is.
func TestIngestDateRange(t *testing.T) {
	files := t.TempDir()
	ts := startServer(t, flightd.Options{}, func(c *engine.Config) { c.FilesDir = files })
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	fields := func(d, ts arrow.DataType) []arrow.Field {
		return []arrow.Field{{Name: "d", Type: d, Nullable: true}, {Name: "ts", Type: ts, Nullable: true}}
	}
	date, us := arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Timestamp_us
	// 0000-01-01 and 9999-12-31 (23:59:59.999999) are in range.
	ok := variantBatch(t, mem, fields(date, us), `[-719528, 2932896, null]`, `[-62167219200000000, 253402300799999999, null]`)
	defer ok.Release()
	ingest(t, cnxn, "dr", adbc.OptionValueIngestModeCreate, ok)

	want22008 := func(what string, err error, col string) {
		t.Helper()
		var ae adbc.Error
		if !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument || !strings.Contains(err.Error(), "SQLSTATE 22008") ||
			!strings.Contains(err.Error(), col) || !strings.Contains(err.Error(), "row 1") || !strings.Contains(err.Error(), "outside 0000-01-01 to 9999-12-31") {
			t.Errorf("%s: %v, want InvalidArgument (22008) naming %s and row 1", what, err, col)
		}
	}
	for _, c := range []struct {
		name    string
		d, tsT  arrow.DataType
		dv, tsv string
		col     string
	}{
		{"date32 of year 200000", date, us, `[0, 73000000]`, `[0, 0]`, `column "d"`},
		{"date32 before year 0", date, us, `[0, -719529]`, `[0, 0]`, `column "d"`},
		{"date64 of year 11476", arrow.FixedWidthTypes.Date64, us, `[0, 300000000000000]`, `[0, 0]`, `column "d"`},
		{"timestamp[s] of 10000-01-01", date, arrow.FixedWidthTypes.Timestamp_s, `[0, 0]`, `[253402300799, 253402300800]`, `column "ts"`},
		{"zoned timestamp[ms] of year 0000 minus 1 ms", date, &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Paris"}, `[0, 0]`, `[0, -62167219200001]`, `column "ts"`},
	} {
		b := variantBatch(t, mem, fields(c.d, c.tsT), c.dv, c.tsv)
		_, err := tryIngest(cnxn, "dr", adbc.OptionValueIngestModeAppend, b)
		want22008(c.name+" appended", err, c.col)
		_, err = tryIngest(cnxn, "dr2", adbc.OptionValueIngestModeCreate, b)
		want22008(c.name+" into a new table", err, c.col)
		b.Release()
	}
	// A dictionary of dates, from pyarrow's dictionary_encode.
	dict := dictOf(t, mem, date, `[0, 73000000]`, `[0, 1]`)
	tsCol, _, _ := array.FromJSON(mem, us, strings.NewReader(`[0, 0]`))
	db := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "d", Type: dict.DataType(), Nullable: true}, {Name: "ts", Type: us, Nullable: true}}, nil), []arrow.Array{dict, tsCol}, 2)
	dict.Release()
	tsCol.Release()
	_, err := tryIngest(cnxn, "dr", adbc.OptionValueIngestModeAppend, db)
	db.Release()
	if err == nil || !strings.Contains(err.Error(), "SQLSTATE 22008") || !strings.Contains(err.Error(), `column "d"`) {
		t.Errorf("a dictionary of dates of year 200000: %v, want 22008", err)
	}
	// A date inside a ROW and an ARRAY, the column's type the table's.
	for _, c := range []struct {
		typ  arrow.DataType
		json string
	}{
		{arrow.StructOf(arrow.Field{Name: "d", Type: date, Nullable: true}), `[{"d": 0}, {"d": 73000000}]`},
		{arrow.ListOf(date), `[[0], [0, 73000000]]`},
	} {
		col, _, err := array.FromJSON(mem, c.typ, strings.NewReader(c.json))
		if err != nil {
			t.Fatal(err)
		}
		nb := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "n", Type: c.typ, Nullable: true}}, nil), []arrow.Array{col}, 2)
		col.Release()
		_, err = tryIngest(cnxn, "drn", adbc.OptionValueIngestModeCreate, nb)
		nb.Release()
		if err == nil || !strings.Contains(err.Error(), "SQLSTATE 22008") || !strings.Contains(err.Error(), `column "n"`) {
			t.Errorf("a %s holding a date of year 200000: %v, want 22008 naming column n", c.typ, err)
		}
	}
	if _, err := tryQuery(cnxn, `SELECT count(*) FROM drn`); err == nil {
		t.Errorf("refused creates made table drn")
	}
	wantRows(t, query(t, cnxn, `SELECT count(*) FROM dr`), "3")
	if _, err := tryQuery(cnxn, `SELECT count(*) FROM dr2`); err == nil {
		t.Errorf("refused creates made table dr2")
	}

	// Parameters.
	prep := prepare(t, cnxn, `SELECT count(*) FROM dr WHERE d < ?`)
	defer prep.Close()
	bad := variantBatch(t, mem, []arrow.Field{{Name: "p", Type: date, Nullable: true}}, `[73000000]`)
	defer bad.Release()
	err = prep.Bind(t.Context(), bad)
	if err == nil {
		var rdr array.RecordReader
		if rdr, _, err = prep.ExecuteQuery(t.Context()); err == nil {
			for rdr.Next() {
			}
			err = rdr.Err()
			rdr.Release()
		}
	}
	if err == nil || !strings.Contains(err.Error(), "SQLSTATE 22008") || !strings.Contains(err.Error(), "$1") {
		t.Errorf("a date parameter of year 200000: %v, want 22008 naming $1", err)
	}

	// COPY FROM and read_parquet of a Parquet file another tool wrote.
	pb := variantBatch(t, mem, fields(date, us), `[0, 73000000]`, `[0, 0]`)
	defer pb.Release()
	fh, err := os.Create(filepath.Join(files, "far.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	pw, err := pqarrow.NewFileWriter(pb.Schema(), fh, nil, pqarrow.DefaultWriterProps())
	if err == nil {
		err = pw.Write(pb)
	}
	if err == nil {
		err = pw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"COPY dr FROM 'far.parquet'", "SELECT * FROM read_parquet('far.parquet')", "INSERT INTO dr SELECT * FROM read_parquet('far.parquet')"} {
		_, err := tryQuery(cnxn, q)
		want22008(q, err, `column "d"`)
	}
	wantRows(t, query(t, cnxn, `SELECT count(*) FROM dr`), "3")
}
