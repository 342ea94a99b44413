package flightsql_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	flightd "github.com/flightd/flightd/flightsql"
)

// TestSystemTableNamesRefused: a table, view or materialized table named
// as a system table of another (x$snapshots, x$options, x$ro, ...) cannot
// be created, by SQL or by ingest, and nothing is created; other names
// with a '$' still work. Such tables were created, and every query of them
// read the system table of x instead ("table default.x not found").
func TestSystemTableNamesRefused(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	for _, q := range []string{
		"CREATE TABLE `u$options` (a INT)",
		"CREATE TABLE `u$SNAPSHOTS` AS SELECT 1 AS a",
		"CREATE VIEW `v$files` AS SELECT 1 AS a",
		"CREATE MATERIALIZED TABLE `m$audit_log` FRESHNESS = INTERVAL '1' HOUR AS SELECT 1 AS a",
	} {
		if _, err := tryQuery(cnxn, q); err == nil || !strings.Contains(err.Error(), "read a system table") || !strings.Contains(err.Error(), "SQLSTATE 42000") {
			t.Errorf("%s: %v, want a refusal", q, err)
		}
	}
	b := variantBatch(t, mem, []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, `[1]`)
	defer b.Release()
	if _, err := tryIngest(cnxn, "w$snapshots", adbc.OptionValueIngestModeCreate, b); err == nil || !strings.Contains(err.Error(), "read a system table") {
		t.Errorf("ingest into w$snapshots: %v, want a refusal", err)
	}
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '%$%'"), "0")

	mustExec(t, cnxn, "CREATE TABLE `a$b` (a INT)")
	mustExec(t, cnxn, "INSERT INTO `a$b` VALUES (1)")
	ingest(t, cnxn, "c$d", adbc.OptionValueIngestModeCreate, b)
	wantRows(t, query(t, cnxn, "SELECT (SELECT count(*) FROM `a$b`) + (SELECT count(*) FROM `c$d`)"), "2")
}

// TestLongColumnNamesRefused: a column or ROW field name over 1,024 bytes
// is refused with SQLSTATE 42622 wherever it would be stored (CREATE
// TABLE, CREATE TABLE AS, views, ALTER TABLE, bulk ingest), and nothing
// is created or changed; 1,024 bytes is accepted. A 1 MB column name was
// stored whole, in the schema file and every Parquet footer.
func TestLongColumnNamesRefused(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	long, ok := strings.Repeat("c", 1_000_000), strings.Repeat("c", 1024)

	mustExec(t, cnxn, "CREATE TABLE keep (a INT)")
	for _, q := range []string{
		`CREATE TABLE t1 ("` + long + `" INT)`,
		`CREATE TABLE t2 (a ROW<"` + long + `" INT>)`,
		`CREATE TABLE t3 AS SELECT 1 AS "` + long + `"`,
		`CREATE TABLE t4 AS SELECT CAST(ROW(1) AS ROW<"` + long + `" INT>) AS r`,
		`CREATE VIEW v1 AS SELECT 1 AS "` + long + `"`,
		`CREATE VIEW v2 ("` + long + `") AS SELECT 1`,
		`ALTER TABLE keep ADD "` + long + `" INT`,
		`ALTER TABLE keep RENAME a TO "` + long + `"`,
		`ALTER TABLE keep ADD r ROW<"` + long + `" INT>`,
	} {
		_, err := tryQuery(cnxn, q)
		if err == nil || !strings.Contains(err.Error(), "SQLSTATE 42622") || !strings.Contains(err.Error(), "1000000 bytes") || len(err.Error()) > 10_000 {
			t.Errorf("%.60s: %.300v, want SQLSTATE 42622", q, err)
		}
	}
	for _, f := range []arrow.Field{
		{Name: long, Type: arrow.PrimitiveTypes.Int64},
		{Name: "r", Type: arrow.StructOf(arrow.Field{Name: long, Type: arrow.PrimitiveTypes.Int64})},
	} {
		b := variantBatch(t, mem, []arrow.Field{f}, `[]`)
		_, err := tryIngest(cnxn, "i1", adbc.OptionValueIngestModeCreate, b)
		b.Release()
		if err == nil || !strings.Contains(err.Error(), "SQLSTATE 42622") {
			t.Errorf("ingest of a column %s: %.300v, want SQLSTATE 42622", f.Type, err)
		}
	}
	wantRows(t, query(t, cnxn, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'default'"), "keep")
	wantRows(t, query(t, cnxn, "SELECT column_name FROM information_schema.columns WHERE table_name = 'keep'"), "a")

	mustExec(t, cnxn, `CREATE TABLE t5 ("`+ok+`" INT, r ROW<"`+ok+`" INT>)`)
	mustExec(t, cnxn, `ALTER TABLE keep RENAME a TO "`+ok+`"`)
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM information_schema.columns WHERE length(column_name) = 1024"), "2")
}

// TestWideTablesRefused: a table of more than 10,000 columns cannot be
// made by CREATE TABLE, CREATE TABLE AS, ALTER TABLE ADD or bulk ingest
// (SQLSTATE 54011), and nothing is created; 10,000 columns work. One row
// of 100,000 columns took 78 s to ingest.
func TestWideTablesRefused(t *testing.T) {
	ts := startServer(t, flightd.Options{})
	cnxn := ts.connect(t, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cols := func(n int, typ string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "c%d%s", i, typ)
		}
		return b.String()
	}
	mustExec(t, cnxn, "CREATE TABLE full10k ("+cols(10_000, " INT")+")")
	for _, q := range []string{
		"CREATE TABLE w1 (" + cols(10_001, " INT") + ")",
		"CREATE TABLE w2 AS SELECT * FROM full10k, (SELECT 1 AS x)",
		"ALTER TABLE full10k ADD x INT",
	} {
		if _, err := tryQuery(cnxn, q); err == nil || !strings.Contains(err.Error(), "SQLSTATE 54011") {
			t.Errorf("%.40s: %.300v, want SQLSTATE 54011", q, err)
		}
	}
	fields := make([]arrow.Field, 10_001)
	vals := make([]string, len(fields))
	for i := range fields {
		fields[i], vals[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int32}, "[1]"
	}
	b := variantBatch(t, mem, fields, vals...)
	defer b.Release()
	if _, err := tryIngest(cnxn, "w3", adbc.OptionValueIngestModeCreate, b); err == nil || !strings.Contains(err.Error(), "SQLSTATE 54011") {
		t.Errorf("ingest of 10,001 columns: %.300v, want SQLSTATE 54011", err)
	}
	wantRows(t, query(t, cnxn, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'default'"), "full10k")
	wantRows(t, query(t, cnxn, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'full10k'"), "10000")
}
