package flightsql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	flightd "github.com/flightd/flightd/flightsql"
)

// TestIngestNested: struct, list (every variant) and map columns ingested
// through the ADBC Go driver are stored as ROW, ARRAY and MAP of the stored
// types, answer field access and subscripts, and come back as Arrow
// struct/list/map with the SQL type names in the column metadata.
func TestIngestNested(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()

	person := arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.StringView, Nullable: true},
		arrow.Field{Name: "dateTime", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	)
	fields := []arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "person", Type: person, Nullable: true},
		{Name: "tags", Type: arrow.LargeListOf(arrow.BinaryTypes.LargeString), Nullable: true},
		{Name: "views", Type: arrow.ListViewOf(arrow.PrimitiveTypes.Uint8), Nullable: true},
		{Name: "pair", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int16), Nullable: true},
		{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.LargeString, arrow.PrimitiveTypes.Int64), Nullable: true},
	}
	b := variantBatch(t, mem, fields,
		`[1, 2, 3]`,
		`[{"id": 7, "name": "ann", "dateTime": 1704164645123000000}, null, {"id": null, "name": "a name longer than twelve bytes", "dateTime": null}]`,
		`[["x", "y"], [], null]`,
		`[[1, 255], null, [7]]`,
		`[[1, 2], null, [3, null]]`,
		`[[{"key": "a", "value": 1}, {"key": "b", "value": 2}], [], null]`)
	defer b.Release()
	if n := ingest(t, cnxn, "nested", "adbc.ingest.mode.create", b); n != 3 {
		t.Fatalf("ingested %d rows, want 3", n)
	}
	wantRows(t, query(t, cnxn, `DESCRIBE nested`),
		"k,INT,YES,", "person,ROW<id BIGINT, name STRING, `dateTime` TIMESTAMP(9)>,YES,", "tags,ARRAY<STRING>,YES,",
		"views,ARRAY<SMALLINT>,YES,", "pair,ARRAY<SMALLINT>,YES,", "attrs,MAP<STRING, BIGINT>,YES,")
	wantRows(t, query(t, cnxn, "SELECT k, person.id, person.name, person.`dateTime`, tags[2], views[2], pair[2], attrs['b'], CARDINALITY(views) FROM nested ORDER BY k"),
		"1,7,ann,2024-01-02T03:04:05.123,y,255,2,2,2",
		"2,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL",
		"3,NULL,a name longer than twelve bytes,NULL,NULL,NULL,NULL,NULL,1")

	// Results are Arrow struct, list and map, typed by SQL name.
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(`SELECT person, tags, attrs FROM nested WHERE k = 1`); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readRows(rdr)
	schema := rdr.Schema()
	rdr.Release()
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, rows, `{"dateTime":"2024-01-02T03:04:05.123","id":7,"name":"ann"},["x","y"],[{"key":"a","value":1},{"key":"b","value":2}]`)
	wantTypes := []struct {
		id   arrow.Type
		name string
	}{{arrow.STRUCT, "ROW<id BIGINT, name STRING, `dateTime` TIMESTAMP(9)>"}, {arrow.LIST, "ARRAY<STRING>"}, {arrow.MAP, "MAP<STRING, BIGINT>"}}
	for i, f := range schema.Fields() {
		md := flightsql.ColumnMetadata{Data: &f.Metadata}
		name, _ := md.TypeName()
		if f.Type.ID() != wantTypes[i].id || name != wantTypes[i].name {
			t.Errorf("column %s: %s named %q, want %s named %q", f.Name, f.Type, name, wantTypes[i].id, wantTypes[i].name)
		}
	}

	// Append converts every variant to the table's types.
	ingest(t, cnxn, "nested", "adbc.ingest.mode.append", b)
	wantRows(t, query(t, cnxn, `SELECT count(*), sum(CARDINALITY(tags)) FROM nested`), "6,4")

	// Values that do not fit the table are refused, naming the column; the
	// table is unchanged.
	mustExec(t, cnxn, `CREATE TABLE strict (r ROW<a INT NOT NULL, b STRING>, xs ARRAY<INT>)`)
	for _, bad := range []struct {
		f    arrow.Field
		json string
		want string
	}{
		{arrow.Field{Name: "r", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
			`[{"a": null, "b": "x"}]`, "NULL in NOT NULL a"},
		{arrow.Field{Name: "r", Type: arrow.StructOf(arrow.Field{Name: "z", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
			`[{"z": 1, "b": "x"}]`, `"r"`},
		{arrow.Field{Name: "xs", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
			`[[1, 4294967296]]`, `"xs"`},
	} {
		in := variantBatch(t, mem, []arrow.Field{bad.f}, bad.json)
		_, err := tryIngest(cnxn, "strict", "adbc.ingest.mode.append", in)
		in.Release()
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("ingest of %s %s: %v, want an error containing %s", bad.f.Type, bad.json, err, bad.want)
		}
	}
	wantRows(t, query(t, cnxn, `SELECT count(*) FROM strict`), "0")

	// Misuse reports the position and a SQLSTATE.
	for q, want := range map[string]string{
		`SELECT person.age FROM nested`: `line 1:8: field "age" not found in person`,
		`SELECT k.a FROM nested`:        `line 1:8: cannot access field "a" of k: it is INT, not a ROW`,
		`SELECT k[1] FROM nested`:       `line 1:9: cannot subscript k: it is INT, not an ARRAY or MAP`,
	} {
		state := map[bool]string{true: "[SQLSTATE 42703]", false: "[SQLSTATE 42804]"}[strings.Contains(want, "not found")]
		if _, err := tryQuery(cnxn, q); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), state) {
			t.Errorf("%s: %v, want %q with %s", q, err, want, state)
		}
	}
}

// TestNestedParameters: an ARRAY parameter, bound in any list variant,
// compares like the stored type (its type comes from the column).
func TestNestedParameters(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	mustExec(t, cnxn, `CREATE TABLE np (k INT, xs ARRAY<BIGINT>)`)
	mustExec(t, cnxn, `INSERT INTO np VALUES (1, ARRAY[1, 2]), (2, ARRAY[3])`)

	sel := prepare(t, cnxn, `SELECT k, xs[2] FROM np WHERE xs = ?`)
	defer sel.Close()
	for _, lt := range []arrow.DataType{arrow.ListOf(arrow.PrimitiveTypes.Int64), arrow.LargeListOf(arrow.PrimitiveTypes.Int32), arrow.ListViewOf(arrow.PrimitiveTypes.Uint16)} {
		params := variantBatch(t, mem, []arrow.Field{{Name: "0", Type: lt, Nullable: true}}, `[[1, 2]]`)
		wantRows(t, queryBound(t, sel, params), "1,2")
	}

	// An index parameter is an integer, whatever the array holds.
	idx := prepare(t, cnxn, `SELECT k, xs[?] FROM np ORDER BY k`)
	defer idx.Close()
	params := variantBatch(t, mem, []arrow.Field{{Name: "0", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, `[2]`)
	wantRows(t, queryBound(t, idx, params), "1,2", "2,NULL")
}
