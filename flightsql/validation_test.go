package flightsql_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-adbc/go/adbc/validation"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/suite"

	fsql "github.com/flightd/flightd/flightsql"
)

// flightdQuirks runs ADBC's validation suite (DatabaseTests,
// ConnectionTests, StatementTests) against a flightd per test.
//
// Capabilities reported as unsupported, and why:
//   - SupportsCurrentCatalogSchema: reported true; catalog/schema come from session options.
//   - SupportsExecuteSchema: false. The Go driver's ExecuteSchema sends GetSchema, which flightd
//     answers, but the suite also expects it for updates.
//   - SupportsPartitionedData: true, with one partition (endpoint) per query for now.
//   - SupportsStatistics: false. ADBC statistics are not served yet.
type flightdQuirks struct {
	t   *testing.T
	ts  *testServer
	mem *memory.CheckedAllocator
}

func (q *flightdQuirks) SetupDriver(t *testing.T) adbc.Driver {
	q.ts = startServer(t, fsql.Options{})
	q.mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	return adbcflightsql.NewDriver(q.mem)
}

func (q *flightdQuirks) TearDownDriver(t *testing.T, _ adbc.Driver) {
	q.mem.AssertSize(t, 0)
}

func (q *flightdQuirks) DatabaseOptions() map[string]string {
	return map[string]string{adbc.OptionKeyURI: q.ts.URI, adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled}
}

func (q *flightdQuirks) BindParameter(int) string                    { return "?" }
func (q *flightdQuirks) SupportsBulkIngest(string) bool              { return true }
func (q *flightdQuirks) SupportsConcurrentStatements() bool          { return true }
func (q *flightdQuirks) SupportsCurrentCatalogSchema() bool          { return true }
func (q *flightdQuirks) SupportsGetSetOptions() bool                 { return true }
func (q *flightdQuirks) SupportsExecuteSchema() bool                 { return false }
func (q *flightdQuirks) SupportsPartitionedData() bool               { return true }
func (q *flightdQuirks) SupportsStatistics() bool                    { return false }
func (q *flightdQuirks) SupportsTransactions() bool                  { return true }
func (q *flightdQuirks) SupportsGetParameterSchema() bool            { return true }
func (q *flightdQuirks) SupportsDynamicParameterBinding() bool       { return true }
func (q *flightdQuirks) SupportsErrorIngestIncompatibleSchema() bool { return true }
func (q *flightdQuirks) Catalog() string                             { return fsql.CatalogName }
func (q *flightdQuirks) DBSchema() string                            { return "default" }
func (q *flightdQuirks) Alloc() memory.Allocator                     { return q.mem }

func (q *flightdQuirks) GetMetadata(code adbc.InfoCode) any {
	switch code {
	case adbc.InfoDriverName:
		return "ADBC Flight SQL Driver - Go"
	case adbc.InfoDriverVersion, adbc.InfoDriverArrowVersion:
		return "(unknown or development build)"
	case adbc.InfoDriverADBCVersion:
		return adbc.AdbcVersion1_1_0
	case adbc.InfoVendorName:
		return "flightd"
	case adbc.InfoVendorVersion:
		return fsql.Version
	case adbc.InfoVendorArrowVersion:
		return arrow.PkgVersion
	}
	return nil
}

// SampleTableSchemaMetadata is the column metadata flightd attaches to
// table schemas of nullable columns (what JDBC getColumns reads, and the
// XDBC keys of get_objects).
func (q *flightdQuirks) SampleTableSchemaMetadata(table string, dt arrow.DataType) arrow.Metadata {
	b := flightsql.NewColumnMetadataBuilder().CatalogName(fsql.CatalogName).SchemaName("default").TableName(table)
	switch dt.ID() {
	case arrow.INT64:
		b.TypeName("BIGINT")
	case arrow.STRING:
		b.TypeName("STRING")
	}
	b.IsAutoIncrement(false).IsCaseSensitive(false).IsReadOnly(false).IsSearchable(true)
	xdbc := map[string]string{"XDBC_NULLABLE": "1", "XDBC_IS_NULLABLE": "YES"}
	if dt.ID() == arrow.INT64 {
		b.Precision(19).Scale(0)
		xdbc["XDBC_COLUMN_SIZE"], xdbc["XDBC_DECIMAL_DIGITS"], xdbc["XDBC_NUM_PREC_RADIX"] = "19", "0", "10"
	}
	md := b.Metadata()
	keys, vals := md.Keys(), md.Values()
	for _, k := range []string{"XDBC_NULLABLE", "XDBC_IS_NULLABLE", "XDBC_COLUMN_SIZE", "XDBC_DECIMAL_DIGITS", "XDBC_NUM_PREC_RADIX"} {
		if v, ok := xdbc[k]; ok {
			keys, vals = append(keys, k), append(vals, v)
		}
	}
	return arrow.NewMetadata(keys, vals)
}

func sqlType(dt arrow.DataType) string {
	switch dt.ID() {
	case arrow.INT8:
		return "TINYINT"
	case arrow.INT16:
		return "SMALLINT"
	case arrow.INT32:
		return "INT"
	case arrow.INT64:
		return "BIGINT"
	case arrow.FLOAT32:
		return "REAL"
	case arrow.FLOAT64:
		return "DOUBLE"
	case arrow.STRING:
		return "VARCHAR"
	}
	return "VARCHAR"
}

func (q *flightdQuirks) CreateSampleTable(table string, r arrow.RecordBatch) error {
	cnxn, err := q.open()
	if err != nil {
		return err
	}
	defer cnxn.Close()
	var cols []string
	for _, f := range r.Schema().Fields() {
		cols = append(cols, f.Name+" "+sqlType(f.Type))
	}
	if _, err := tryExec(cnxn, fmt.Sprintf("CREATE TABLE %s (%s)", table, strings.Join(cols, ", "))); err != nil {
		return err
	}
	_, err = tryIngest(cnxn, table, adbc.OptionValueIngestModeAppend, r)
	return err
}

func (q *flightdQuirks) open() (adbc.Connection, error) {
	db, err := adbcflightsql.NewDriver(q.mem).NewDatabase(q.DatabaseOptions())
	if err != nil {
		return nil, err
	}
	cnxn, err := db.Open(context.Background())
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return closingConn{cnxn, db}, nil
}

// closingConn closes its database with the connection.
type closingConn struct {
	adbc.Connection
	db adbc.Database
}

func (c closingConn) Close() error { return errors.Join(c.Connection.Close(), c.db.Close()) }

func (q *flightdQuirks) DropTable(cnxn adbc.Connection, table string) error {
	_, err := tryExec(cnxn, "DROP TABLE IF EXISTS "+table)
	return err
}

func TestADBCValidation(t *testing.T) {
	q := &flightdQuirks{t: t}
	suite.Run(t, &validation.DatabaseTests{Quirks: q})
	suite.Run(t, &validation.ConnectionTests{Quirks: q})
	suite.Run(t, &statementTests{StatementTests: validation.StatementTests{Quirks: q}})
}

// statementTests is ADBC's statement suite with the tests flightd skips,
// each with its reason.
type statementTests struct {
	validation.StatementTests
}

// The ingest tests Bind single batches; the ADBC Go driver v1.12.0 wraps a
// bound batch in a record reader it never releases (a client-side leak the
// checked allocator reports) and refuses a query on a statement that was
// used for ingest ("must set IngestTargetTable"). flightd's ingest is
// covered by TestWalkingSkeleton, TestErrors and the Python adbc_ingest
// tests, which bind streams.
const skipBindIngest = "ADBC Go driver v1.12.0: Bind leaks the bound batch and a statement cannot switch from ingest to query"

func (s *statementTests) TestSqlIngestAppend()       { s.T().Skip(skipBindIngest) }
func (s *statementTests) TestSqlIngestCreateAppend() { s.T().Skip(skipBindIngest) }
func (s *statementTests) TestSqlIngestInts()         { s.T().Skip(skipBindIngest) }
func (s *statementTests) TestSqlIngestReplace()      { s.T().Skip(skipBindIngest) }

// TestSqlIngestErrors expects the reference SQLite server's answers:
// StatusInternal when creating an existing table (flightd answers
// AlreadyExists) and SQLSTATE 42S02 (flightd sends no SQLSTATE yet).
func (s *statementTests) TestSqlIngestErrors() {
	s.T().Skip("expects SQLite's StatusInternal for an existing table (flightd: AlreadyExists) and SQLSTATE codes (not sent yet); " + skipBindIngest)
}
