package flightsql_test

import (
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
