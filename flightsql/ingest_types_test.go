package flightsql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	flightd "github.com/flightd/flightd/flightsql"
)

// dictOf is a dictionary column of values (JSON of type vt) picked by
// indices (JSON of int8, null for a null row).
func dictOf(t *testing.T, mem memory.Allocator, vt arrow.DataType, values, indices string) arrow.Array {
	t.Helper()
	v, _, err := array.FromJSON(mem, vt, strings.NewReader(values))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	i, _, err := array.FromJSON(mem, arrow.PrimitiveTypes.Int8, strings.NewReader(indices))
	if err != nil {
		t.Fatal(err)
	}
	defer i.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: vt}, i, v)
}

// TestIngestDictionaryOfNested: pyarrow dictionary-encodes any type, and
// a dictionary of lists, maps or structs is stored as its values, on
// create and on append, and binds as a parameter. The server panicked
// converting it (Internal, SQLSTATE XX000: "*array.Dictionary is not
// array.ListLike").
func TestIngestDictionaryOfNested(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	list := arrow.ListOf(arrow.PrimitiveTypes.Int64)
	st := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	mp := arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)
	cols := []arrow.Array{
		dictOf(t, mem, list, `[[1], [2, 3]]`, `[1, 0, null, 1]`),
		dictOf(t, mem, st, `[{"x": 1}, {"x": 2}]`, `[0, null, 1, 1]`),
		dictOf(t, mem, mp, `[[{"key": "a", "value": 1}], []]`, `[0, 1, 0, null]`),
	}
	k, _, _ := array.FromJSON(mem, arrow.PrimitiveTypes.Int64, strings.NewReader(`[1, 2, 3, 4]`))
	cols = append([]arrow.Array{k}, cols...)
	fields := []arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
	for i, n := range []string{"l", "s", "m"} {
		fields = append(fields, arrow.Field{Name: n, Type: cols[i+1].DataType(), Nullable: true})
	}
	b := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 4)
	for _, c := range cols {
		c.Release()
	}
	defer b.Release()

	ingest(t, cnxn, "dn", adbc.OptionValueIngestModeCreate, b)
	ingest(t, cnxn, "dn", adbc.OptionValueIngestModeAppend, b)
	wantRows(t, query(t, cnxn, `DESCRIBE dn`), "k,BIGINT,YES,", "l,ARRAY<BIGINT>,YES,", "s,ROW<x BIGINT>,YES,", "m,MAP<STRING, BIGINT>,YES,")
	wantRows(t, query(t, cnxn, `SELECT k, CAST(l AS STRING), s.x, m['a'] FROM dn ORDER BY k LIMIT 4 OFFSET 0`),
		"1,[2,3],1,1", "1,[2,3],1,1", "2,[1],NULL,NULL", "2,[1],NULL,NULL")
	wantRows(t, query(t, cnxn, `SELECT count(*), count(l), count(s), count(m) FROM dn`), "8,6,6,6")

	// As parameters, typed by the columns they compare with.
	prep := prepare(t, cnxn, `SELECT count(*) FROM dn WHERE l = ? AND s = ?`)
	defer prep.Close()
	l, s := dictOf(t, mem, list, `[[1], [2, 3]]`, `[1]`), dictOf(t, mem, st, `[{"x": 1}, {"x": 2}]`, `[0]`)
	p := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{fields[1], fields[2]}, nil), []arrow.Array{l, s}, 1)
	l.Release()
	s.Release()
	wantRows(t, queryBound(t, prep, p), "2")
}

// TestIngestUnstorableTypes: Arrow types the table store cannot hold are
// the client's error (InvalidArgument, SQLSTATE 22023, naming the column)
// and create nothing. A decimal of negative scale made arrow-go's Parquet
// writer panic (Internal, XX000), a struct of no fields was refused as a
// corrupt file (DataLoss, XX001), and a struct with two fields of one
// name, which SQL refuses in a ROW type, was stored.
func TestIngestUnstorableTypes(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	i64 := arrow.PrimitiveTypes.Int64
	for _, c := range []struct {
		name string
		typ  arrow.DataType
		json string
	}{
		{"negative scale", &arrow.Decimal128Type{Precision: 5, Scale: -2}, `["100", null]`},
		{"decimal32 negative scale", &arrow.Decimal32Type{Precision: 5, Scale: -2}, `["100", null]`},
		{"decimal256 negative scale", &arrow.Decimal256Type{Precision: 20, Scale: -1}, `["100", null]`},
		{"empty struct", arrow.StructOf(), `[{}, null]`},
		{"list of empty struct", arrow.ListOf(arrow.StructOf()), `[[{}], null]`},
	} {
		b := variantBatch(t, mem, []arrow.Field{{Name: "v", Type: c.typ, Nullable: true}}, c.json)
		_, err := tryIngest(cnxn, "bad", adbc.OptionValueIngestModeCreate, b)
		var ae adbc.Error
		if !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument || !strings.Contains(err.Error(), "SQLSTATE 22023") || !strings.Contains(err.Error(), `column "v"`) {
			t.Errorf("%s: %v, want InvalidArgument (22023) naming column v", c.name, err)
		}
		// As a parameter too.
		prep := prepare(t, cnxn, `SELECT ?`)
		if err := runBound(prep, b); !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument {
			t.Errorf("%s as a parameter: %v, want InvalidArgument", c.name, err)
		}
		prep.Close()
		b.Release()
	}
	// A struct with two fields x (which array.FromJSON cannot build).
	x, _, _ := array.FromJSON(mem, i64, strings.NewReader(`[1, 2]`))
	defer x.Release()
	dup, err := array.NewStructArrayWithFields([]arrow.Array{x, x}, []arrow.Field{{Name: "x", Type: i64, Nullable: true}, {Name: "x", Type: i64, Nullable: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer dup.Release()
	b := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: dup.DataType(), Nullable: true}}, nil), []arrow.Array{dup}, 2)
	defer b.Release()
	_, err = tryIngest(cnxn, "bad", adbc.OptionValueIngestModeCreate, b)
	if ae := (adbc.Error{}); !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument || !strings.Contains(err.Error(), `duplicate field "x"`) {
		t.Errorf("struct with two fields x: %v, want InvalidArgument naming the field", err)
	}
	if _, err := tryQuery(cnxn, "SELECT * FROM bad"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a refused ingest left table bad behind: %v", err)
	}
}

// TestIngestNullChildren: a list of nulls or a struct field of type null
// is valid Arrow (pyarrow sends [[None]] as list<null>); arrow-go's IPC
// reader gives the null child no buffers, and validating the batch
// refused it ("expected at least 1 buffers for null, got 0").
func TestIngestNullChildren(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	b := variantBatch(t, mem, []arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.Null), Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.Null, Nullable: true}, arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	}, `[1, 2, 3]`, `[[null], null, []]`, `[{"x": null, "y": 1}, null, {"x": null, "y": 3}]`)
	defer b.Release()
	ingest(t, cnxn, "nc", adbc.OptionValueIngestModeCreate, b)
	wantRows(t, query(t, cnxn, `DESCRIBE nc`), "k,BIGINT,YES,", "l,ARRAY<STRING>,YES,", "s,ROW<x STRING, y BIGINT>,YES,")
	wantRows(t, query(t, cnxn, `SELECT k, CARDINALITY(l), s.x, s.y FROM nc ORDER BY k`), "1,1,NULL,1", "2,NULL,NULL,NULL", "3,0,NULL,3")

	// As a parameter.
	prep := prepare(t, cnxn, `SELECT CARDINALITY(CAST(? AS ARRAY<STRING>))`)
	defer prep.Close()
	p := variantBatch(t, mem, []arrow.Field{b.Schema().Field(1)}, `[[null, null]]`)
	wantRows(t, queryBound(t, prep, p), "2")
}

// TestIngestDecimalVariants: decimal32, decimal64 and decimal256 columns
// (pyarrow makes all three) store as DECIMAL of their precision and scale,
// append into DECIMAL columns of others when the value fits, and bind as
// parameters. decimal32 and decimal64 were refused ("cast_decimal has no
// kernel matching input types"): arrow-go casts none of them.
func TestIngestDecimalVariants(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	fields := []arrow.Field{
		{Name: "d32", Type: &arrow.Decimal32Type{Precision: 5, Scale: 2}, Nullable: true},
		{Name: "d64", Type: &arrow.Decimal64Type{Precision: 12, Scale: 3}, Nullable: true},
		{Name: "d256", Type: &arrow.Decimal256Type{Precision: 20, Scale: 2}, Nullable: true},
	}
	b := variantBatch(t, mem, fields, `["123.45", null, "-0.01"]`, `["123456789.123", "-1", null]`, `["1.5", null, "-2"]`)
	defer b.Release()
	ingest(t, cnxn, "dv", adbc.OptionValueIngestModeCreate, b)
	wantRows(t, query(t, cnxn, `DESCRIBE dv`), "d32,DECIMAL(5, 2),YES,", "d64,DECIMAL(12, 3),YES,", "d256,DECIMAL(20, 2),YES,")
	wantRows(t, query(t, cnxn, `SELECT d32, d64, d256 FROM dv ORDER BY d32 NULLS LAST`),
		"-0.01,NULL,-2", "123.45,123456789.123,1.5", "NULL,-1,NULL")

	// Into DECIMAL columns of other precisions and scales.
	mustExec(t, cnxn, `CREATE TABLE dw (d32 DECIMAL(10, 4), d64 DECIMAL(20, 3), d256 DECIMAL(4, 1))`)
	ingest(t, cnxn, "dw", adbc.OptionValueIngestModeAppend, b)
	wantRows(t, query(t, cnxn, `SELECT d32, d64, d256 FROM dw ORDER BY d32 NULLS LAST`),
		"-0.01,NULL,-2", "123.45,123456789.123,1.5", "NULL,-1,NULL")
	// A value that does not fit is refused, naming the column.
	mustExec(t, cnxn, `CREATE TABLE dn (d32 DECIMAL(3, 2))`)
	one := array.NewRecordBatch(arrow.NewSchema(fields[:1], nil), b.Columns()[:1], b.NumRows())
	defer one.Release()
	if _, err := tryIngest(cnxn, "dn", adbc.OptionValueIngestModeAppend, one); err == nil || !strings.Contains(err.Error(), `"d32"`) {
		t.Fatalf("123.45 into DECIMAL(3, 2): %v, want a refusal naming the column", err)
	}

	// decimal256 beyond DECIMAL's precision 38 appends where its values fit.
	wide := []arrow.Field{{Name: "d", Type: &arrow.Decimal256Type{Precision: 50, Scale: 2}, Nullable: true}}
	w := variantBatch(t, mem, wide, `["12.34", null]`)
	defer w.Release()
	mustExec(t, cnxn, `CREATE TABLE dwide (d DECIMAL(10, 2))`)
	ingest(t, cnxn, "dwide", adbc.OptionValueIngestModeAppend, w)
	wantRows(t, query(t, cnxn, `SELECT d FROM dwide ORDER BY d NULLS LAST`), "12.34", "NULL")
	big := variantBatch(t, mem, wide, `["123456789012345678901234567890123456789012.5"]`)
	defer big.Release()
	if _, err := tryIngest(cnxn, "dwide", adbc.OptionValueIngestModeAppend, big); err == nil || !strings.Contains(err.Error(), `"d"`) {
		t.Fatalf("a 42-digit decimal256 into DECIMAL(10, 2): %v, want a refusal naming the column", err)
	}
	wantRows(t, query(t, cnxn, `SELECT count(*) FROM dwide`), "2")

	// As a parameter.
	prep := prepare(t, cnxn, `SELECT count(*) FROM dv WHERE d32 = ?`)
	defer prep.Close()
	wantRows(t, queryBound(t, prep, variantBatch(t, mem, fields[:1], `["123.45"]`)), "1")
}

// TestIngestNullIntoNotNull: bulk ingest of a NULL into a NOT NULL column
// is the client's error (InvalidArgument) with SQLSTATE 23502
// (not_null_violation) naming the column, and writes nothing.
func TestIngestNullIntoNotNull(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	mustExec(t, cnxn, `CREATE TABLE nn (k BIGINT NOT NULL, v BIGINT NOT NULL, PRIMARY KEY (k) NOT ENFORCED)`)
	i64 := arrow.PrimitiveTypes.Int64
	b := variantBatch(t, mem, []arrow.Field{{Name: "k", Type: i64, Nullable: true}, {Name: "v", Type: i64, Nullable: true}}, `[1, 2]`, `[10, null]`)
	defer b.Release()
	_, err := tryIngest(cnxn, "nn", adbc.OptionValueIngestModeAppend, b)
	var ae adbc.Error
	if !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument || !strings.Contains(err.Error(), "SQLSTATE 23502") || !strings.Contains(err.Error(), `column "v"`) {
		t.Errorf("NULL into NOT NULL v: %v, want InvalidArgument (23502) naming column v", err)
	}
	wantRows(t, query(t, cnxn, `SELECT count(*) FROM nn`), "0")
}

// TestIngestTimeOfDayRange: a TIME value is a time of day, from 0 up to
// 24 hours excluded; ingest and parameters refuse others naming the column
// and store nothing. They were stored: time64[ns] 86400000000005 (a
// timestamp sent as a time, or a duration) read back as pyarrow's "value
// out of range" and CAST it to STRING as 00:00:00.000000005.
func TestIngestTimeOfDayRange(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	ns := []arrow.Field{{Name: "t", Type: arrow.FixedWidthTypes.Time64ns, Nullable: true}}
	ok := variantBatch(t, mem, ns, `[0, 86399999999999, null]`)
	defer ok.Release()
	ingest(t, cnxn, "tod", adbc.OptionValueIngestModeCreate, ok)
	for _, c := range []struct {
		typ  arrow.DataType
		vals string
	}{
		{arrow.FixedWidthTypes.Time64ns, `[1, 86400000000005]`},
		{arrow.FixedWidthTypes.Time64us, `[-1]`},
		{arrow.FixedWidthTypes.Time32ms, `[86400000]`},
		{arrow.FixedWidthTypes.Time32s, `[null, 86400]`},
	} {
		b := variantBatch(t, mem, []arrow.Field{{Name: "t", Type: c.typ, Nullable: true}}, c.vals)
		for _, mode := range []string{adbc.OptionValueIngestModeAppend, adbc.OptionValueIngestModeCreate} {
			table := "tod"
			if mode == adbc.OptionValueIngestModeCreate {
				table = "tod2"
			}
			if _, err := tryIngest(cnxn, table, mode, b); err == nil || !strings.Contains(err.Error(), `"t"`) || !strings.Contains(err.Error(), "time of day") {
				t.Errorf("%s %s into %s: %v, want a refusal naming the column", c.typ, c.vals, table, err)
			}
		}
		b.Release()
	}
	wantRows(t, query(t, cnxn, `SELECT count(*) FROM tod`), "3")
	if _, err := tryQuery(cnxn, `SELECT count(*) FROM tod2`); err == nil {
		t.Errorf("refused creates made table tod2")
	}
	prep := prepare(t, cnxn, `SELECT count(*) FROM tod WHERE t < ?`)
	defer prep.Close()
	bad := variantBatch(t, mem, ns, `[86400000000000]`)
	defer bad.Release()
	err := prep.Bind(t.Context(), bad)
	if err == nil {
		var rdr array.RecordReader
		if rdr, _, err = prep.ExecuteQuery(t.Context()); err == nil {
			for rdr.Next() {
			}
			err = rdr.Err()
			rdr.Release()
		}
	}
	if err == nil || !strings.Contains(err.Error(), "time of day") {
		t.Errorf("a parameter of 24:00:00: %v, want a refusal", err)
	}
}
