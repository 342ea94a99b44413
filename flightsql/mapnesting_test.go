package flightsql_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// TestMapNestingBounded: arrow-go makes each MAP level's values twice, so
// an array of MAPs nested d deep costs 2^d: one row 18 deep took 13 s to
// ingest, and `SELECT cardinality(MAP[1, MAP[1, ...]])` 25 deep ran the
// server past 7 GB (memory limit 2 GB) for minutes after its client had
// gone. Past engine.MaxMapNesting levels a MAP constructor, a MAP type
// in SQL, an ingested batch and a Parquet file are refused at once, with
// the reason, and nothing is created; at the limit they work.
func TestMapNestingBounded(t *testing.T) {
	files := t.TempDir()
	ts := startServer(t, flightsql.Options{}, func(c *engine.Config) { c.FilesDir = files })
	cnxn := ts.connect(t, nil)
	const deep = engine.MaxMapNesting + 4
	mapSQL := func(d int) string { return strings.Repeat("MAP[1, ", d) + "1" + strings.Repeat("]", d) }
	typeSQL := func(d int) string { return strings.Repeat("MAP<INT, ", d) + "INT" + strings.Repeat(">", d) }

	if rows := query(t, cnxn, "SELECT cardinality("+mapSQL(engine.MaxMapNesting)+")"); rows[0][0] != "1" {
		t.Fatalf("a MAP %d deep: %v", engine.MaxMapNesting, rows)
	}
	mustExec(t, cnxn, "CREATE TABLE ok8 (m "+typeSQL(engine.MaxMapNesting)+")")
	for _, c := range []struct{ sql, msg string }{
		{"SELECT cardinality(" + mapSQL(deep) + ")", "nest MAP types 9 deep, over the limit of 8"},
		{"SELECT CAST(NULL AS " + typeSQL(deep) + ")", "MAP types nested 9 deep, over the limit of 8 [SQLSTATE 54001]"},
		{"CREATE TABLE m (m " + typeSQL(deep) + ")", "MAP types nested 9 deep, over the limit of 8 [SQLSTATE 54001]"},
	} {
		start := time.Now()
		_, err := tryQuery(cnxn, c.sql)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%.60s...: %v, want an error mentioning %q", c.sql, err, c.msg)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%.60s...: refused after %v", c.sql, d)
		}
	}

	// One row of MAPs deep levels deep, from JSON: [{"key": 1, "value": ...}].
	typ := arrow.DataType(arrow.PrimitiveTypes.Int64)
	val := "1"
	for range deep {
		typ = arrow.MapOf(arrow.PrimitiveTypes.Int64, typ)
		val = `[{"key": 1, "value": ` + val + `}]`
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	arr, _, err := array.FromJSON(mem, typ, strings.NewReader("["+val+"]"))
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "m", Type: typ, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{arr}, 1)
	arr.Release()
	defer rec.Release()
	if _, err := tryIngest(cnxn, "deep", "adbc.ingest.mode.create", rec); err == nil || !strings.Contains(err.Error(), "MAP types nested more than 8 deep") || !strings.Contains(err.Error(), "InvalidArgument") {
		t.Errorf("ingest of MAPs %d deep: %v, want InvalidArgument", deep, err)
	}
	if _, err := tryQuery(cnxn, "SELECT * FROM deep"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("the refused ingest created its table: %v", err)
	}

	fh, err := os.Create(filepath.Join(files, "deep.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	pw, err := pqarrow.NewFileWriter(schema, fh, nil, pqarrow.DefaultWriterProps())
	if err == nil {
		err = pw.Write(rec)
	}
	if err == nil {
		err = pw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT * FROM read_parquet('deep.parquet')", "COPY ok8 FROM 'deep.parquet'"} {
		if _, err := tryQuery(cnxn, q); err == nil || !strings.Contains(err.Error(), "column m nests MAP types 12 deep, over the limit of 8") {
			t.Errorf("%s: %v, want the limit", q, err)
		}
	}
	if rows := query(t, cnxn, "SELECT count(*) FROM ok8"); rows[0][0] != "0" {
		t.Errorf("ok8 has %v rows", rows)
	}
}
