package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"

	"github.com/flightd/flightd/engine"
)

// Version is reported as the server version in GetSqlInfo.
const Version = "0.1.0"

// bits packs enum values into the int32 bitmasks SqlInfo uses.
func bits[E ~int32](vals ...E) int32 {
	var m int32
	for _, v := range vals {
		m |= 1 << v
	}
	return m
}

// registerSQLInfo registers what the JDBC driver and BI tools read from
// GetSqlInfo (DatabaseMetaData answers come from here).
func registerSQLInfo(s *Server) error {
	convertible := []int32{
		int32(flightsql.SqlConvertBigInt), int32(flightsql.SqlConvertBit), int32(flightsql.SqlConvertChar),
		int32(flightsql.SqlConvertDate), int32(flightsql.SqlConvertDecimal), int32(flightsql.SqlConvertFloat),
		int32(flightsql.SqlConvertInteger), int32(flightsql.SqlConvertReal), int32(flightsql.SqlConvertSmallInt),
		int32(flightsql.SqlConvertTimestamp), int32(flightsql.SqlConvertTinyInt), int32(flightsql.SqlConvertVarchar),
	}
	convert := map[int32][]int32{}
	for _, from := range convertible {
		convert[from] = convertible
	}
	info := map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:                        "flightd",
		flightsql.SqlInfoFlightSqlServerVersion:                     Version,
		flightsql.SqlInfoFlightSqlServerArrowVersion:                arrow.PkgVersion,
		flightsql.SqlInfoFlightSqlServerReadOnly:                    false,
		flightsql.SqlInfoFlightSqlServerSql:                         true,
		flightsql.SqlInfoFlightSqlServerSubstrait:                   true,
		flightsql.SqlInfoFlightSqlServerSubstraitMinVersion:         engine.SubstraitMinVersion,
		flightsql.SqlInfoFlightSqlServerSubstraitMaxVersion:         engine.SubstraitMaxVersion,
		flightsql.SqlInfoFlightSqlServerTransaction:                 int32(flightsql.SqlTransactionTransaction),
		flightsql.SqlInfoFlightSqlServerCancel:                      true,
		flightsql.SqlInfoFlightSqlServerBulkIngestion:               true,
		flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported: true,
		flightsql.SqlInfoFlightSqlServerStatementTimeout:            int32(0),
		flightsql.SqlInfoFlightSqlServerTransactionTimeout:          int32(0),
		flightsql.SqlInfoDDLCatalog:                                 false,
		flightsql.SqlInfoDDLSchema:                                  true,
		flightsql.SqlInfoDDLTable:                                   true,
		flightsql.SqlInfoIdentifierCase:                             int64(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoIdentifierQuoteChar:                        `"`,
		flightsql.SqlInfoQuotedIdentifierCase:                       int64(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoAllTablesAreASelectable:                    true,
		flightsql.SqlInfoNullOrdering:                               int64(flightsql.SqlNullOrderingSortHigh),
		flightsql.SqlInfoKeywords:                                   sqlKeywords,
		flightsql.SqlInfoNumericFunctions:                           []string{"ABS", "CEIL", "FLOOR", "ROUND", "SQRT", "POWER", "LN", "EXP", "MOD"},
		flightsql.SqlInfoStringFunctions:                            []string{"SUBSTRING", "UPPER", "LOWER", "TRIM", "LTRIM", "RTRIM", "CONCAT", "CHAR_LENGTH", "REPLACE", "POSITION", "REGEXP_LIKE"},
		flightsql.SqlInfoSystemFunctions:                            []string{},
		flightsql.SqlInfoDateTimeFunctions:                          []string{"EXTRACT", "DATE_ADD", "DATE_DIFF", "DATE_TRUNC", "DATE_FORMAT", "CURRENT_DATE", "CURRENT_TIMESTAMP"},
		flightsql.SqlInfoSearchStringEscape:                         `\`,
		flightsql.SqlInfoExtraNameChars:                             "",
		flightsql.SqlInfoSupportsColumnAliasing:                     true,
		flightsql.SqlInfoNullPlusNullIsNull:                         true,
		flightsql.SqlInfoSupportsConvert:                            convert,
		flightsql.SqlInfoSupportsTableCorrelationNames:              true,
		flightsql.SqlInfoSupportsDifferentTableCorrelationNames:     false,
		flightsql.SqlInfoSupportsExpressionsInOrderBy:               true,
		flightsql.SqlInfoSupportsOrderByUnrelated:                   true,
		flightsql.SqlInfoSupportedGroupBy:                           bits(pb.SqlSupportedGroupBy_SQL_GROUP_BY_UNRELATED),
		flightsql.SqlInfoSupportsLikeEscapeClause:                   true,
		flightsql.SqlInfoSupportsNonNullableColumns:                 true,
		flightsql.SqlInfoSupportedGrammar:                           bits(pb.SupportedSqlGrammar_SQL_MINIMUM_GRAMMAR, pb.SupportedSqlGrammar_SQL_CORE_GRAMMAR),
		flightsql.SqlInfoANSI92SupportedLevel:                       bits(pb.SupportedAnsi92SqlGrammarLevel_ANSI92_ENTRY_SQL),
		flightsql.SqlInfoSupportsIntegrityEnhancementFacility:       false,
		flightsql.SqlInfoOuterJoinsSupportLevel:                     int32(pb.SqlOuterJoinsSupportLevel_SQL_FULL_OUTER_JOINS),
		flightsql.SqlInfoSchemaTerm:                                 "database",
		flightsql.SqlInfoProcedureTerm:                              "procedure",
		flightsql.SqlInfoCatalogTerm:                                "catalog",
		flightsql.SqlInfoCatalogAtStart:                             true,
		flightsql.SqlInfoSchemasSupportedActions:                    int32(0),
		flightsql.SqlInfoCatalogsSupportedActions:                   int32(0),
		flightsql.SqlInfoSupportedPositionedCommands:                int32(0),
		flightsql.SqlInfoSelectForUpdateSupported:                   false,
		flightsql.SqlInfoStoredProceduresSupported:                  false,
		flightsql.SqlInfoSupportedSubqueries:                        bits(pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_COMPARISONS, pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_EXISTS, pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_INS),
		flightsql.SqlInfoCorrelatedSubqueriesSupported:              true,
		flightsql.SqlInfoSupportedUnions:                            bits(pb.SqlSupportedUnions_SQL_UNION, pb.SqlSupportedUnions_SQL_UNION_ALL),
		flightsql.SqlInfoMaxBinaryLiteralLen:                        int64(0),
		flightsql.SqlInfoMaxCharLiteralLen:                          int64(0),
		flightsql.SqlInfoMaxColumnNameLen:                           int64(1024),
		flightsql.SqlInfoMaxColumnsInGroupBy:                        int64(0),
		flightsql.SqlInfoMaxColumnsInIndex:                          int64(0),
		flightsql.SqlInfoMaxColumnsInOrderBy:                        int64(0),
		flightsql.SqlInfoMaxColumnsInSelect:                         int64(0),
		flightsql.SqlInfoMaxColumnsInTable:                          int64(0),
		flightsql.SqlInfoMaxConnections:                             int64(0),
		flightsql.SqlInfoMaxCursorNameLen:                           int64(0),
		flightsql.SqlInfoMaxIndexLen:                                int64(0),
		flightsql.SqlInfoDBSchemaNameLen:                            int64(1024),
		flightsql.SqlInfoMaxProcedureNameLen:                        int64(0),
		flightsql.SqlInfoMaxCatalogNameLen:                          int64(1024),
		flightsql.SqlInfoMaxRowSize:                                 int64(0),
		flightsql.SqlInfoMaxRowSizeIncludesBlobs:                    true,
		flightsql.SqlInfoMaxStatementLen:                            int64(0),
		flightsql.SqlInfoMaxStatements:                              int64(0),
		flightsql.SqlInfoMaxTableNameLen:                            int64(1024),
		flightsql.SqlInfoMaxTablesInSelect:                          int64(0),
		flightsql.SqlInfoMaxUsernameLen:                             int64(1024),
		flightsql.SqlInfoDefaultTransactionIsolation:                int64(pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_REPEATABLE_READ),
		flightsql.SqlInfoTransactionsSupported:                      true,
		flightsql.SqlInfoSupportedTransactionsIsolationlevels:       bits(pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_REPEATABLE_READ),
		flightsql.SqlInfoDataDefinitionCausesTransactionCommit:      false,
		flightsql.SqlInfoDataDefinitionsInTransactionsIgnored:       false,
		flightsql.SqlInfoSupportedResultSetTypes:                    bits(pb.SqlSupportedResultSetType_SQL_RESULT_SET_TYPE_FORWARD_ONLY),
		flightsql.SqlInfoBatchUpdatesSupported:                      true,
		flightsql.SqlInfoSavePointsSupported:                        false,
		flightsql.SqlInfoNamedParametersSupported:                   false,
		flightsql.SqlInfoLocatorsUpdateCopy:                         false,
		flightsql.SqlInfoStoredFunctionsUsingCallSyntaxSupported:    false,
	}
	for id, v := range info {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return err
		}
	}
	return nil
}

var sqlKeywords = []string{
	"ALTER", "AND", "AS", "ASC", "BETWEEN", "BY", "CASE", "CAST", "CREATE", "CROSS", "CUBE", "DATABASE",
	"DELETE", "DESC", "DESCRIBE", "DISTINCT", "DROP", "ELSE", "END", "EXCEPT", "EXISTS", "EXPLAIN",
	"FETCH", "FIRST", "FOR", "FRESHNESS", "FROM", "FULL", "GROUP", "GROUPING", "HAVING", "IN", "INNER",
	"INSERT", "INTERSECT", "INTERVAL", "INTO", "IS", "JOIN", "LAST", "LEFT", "LIKE", "LIMIT", "MATERIALIZED",
	"NOT", "NULL", "NULLS", "OFFSET", "ON", "OR", "ORDER", "OUTER", "OVER", "OVERWRITE", "PARTITION",
	"PARTITIONED", "PRIMARY", "KEY", "RIGHT", "ROLLUP", "SELECT", "SET", "SHOW", "TABLE", "THEN", "UNION",
	"UPDATE", "USING", "VALUES", "WHEN", "WHERE", "WINDOW", "WITH",
}

// xdbcType describes one SQL type for GetXdbcTypeInfo.
type xdbcType struct {
	name      string
	dataType  int32 // JDBC/ODBC type code
	size      int32 // 0: not applicable
	prefix    string
	suffix    string
	params    []string
	searchOp  int32 // 3: searchable with any operator
	fixedPrec bool
}

// Type codes from java.sql.Types / ODBC.
var xdbcTypes = []xdbcType{
	{name: "BOOLEAN", dataType: 16, size: 1, searchOp: 2},
	{name: "TINYINT", dataType: -6, size: 3, searchOp: 3},
	{name: "SMALLINT", dataType: 5, size: 5, searchOp: 3},
	{name: "INTEGER", dataType: 4, size: 10, searchOp: 3},
	{name: "BIGINT", dataType: -5, size: 19, searchOp: 3},
	{name: "REAL", dataType: 7, size: 7, searchOp: 3},
	{name: "DOUBLE", dataType: 8, size: 15, searchOp: 3},
	{name: "DECIMAL", dataType: 3, size: 38, params: []string{"precision", "scale"}, searchOp: 3, fixedPrec: true},
	{name: "VARCHAR", dataType: 12, size: 0, prefix: "'", suffix: "'", params: []string{"length"}, searchOp: 3},
	{name: "VARBINARY", dataType: -3, size: 0, prefix: "X'", suffix: "'", params: []string{"length"}, searchOp: 2},
	{name: "DATE", dataType: 91, size: 10, prefix: "DATE '", suffix: "'", searchOp: 3},
	{name: "TIME", dataType: 92, size: 18, prefix: "TIME '", suffix: "'", params: []string{"precision"}, searchOp: 3},
	{name: "TIMESTAMP", dataType: 93, size: 29, prefix: "TIMESTAMP '", suffix: "'", params: []string{"precision"}, searchOp: 3},
}

func (s *Server) GetFlightInfoXdbcTypeInfo(_ context.Context, _ flightsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.XdbcTypeInfo), nil
}

func (s *Server) DoGetXdbcTypeInfo(_ context.Context, cmd flightsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	bldr := array.NewRecordBuilder(s.mem, schema_ref.XdbcTypeInfo)
	defer bldr.Release()
	str := func(i int, v string) {
		b := bldr.Field(i).(*array.StringBuilder)
		if v == "" {
			b.AppendNull()
		} else {
			b.Append(v)
		}
	}
	i32 := func(i int, v int32) { bldr.Field(i).(*array.Int32Builder).Append(v) }
	null := func(i int) { bldr.Field(i).AppendNull() }
	boolean := func(i int, v bool) { bldr.Field(i).(*array.BooleanBuilder).Append(v) }
	for _, t := range xdbcTypes {
		if dt := cmd.GetDataType(); dt != nil && *dt != t.dataType {
			continue
		}
		str(0, t.name)
		i32(1, t.dataType)
		if t.size > 0 {
			i32(2, t.size)
		} else {
			null(2)
		}
		str(3, t.prefix)
		str(4, t.suffix)
		if t.params == nil {
			null(5)
		} else {
			lb := bldr.Field(5).(*array.ListBuilder)
			lb.Append(true)
			for _, p := range t.params {
				lb.ValueBuilder().(*array.StringBuilder).Append(p)
			}
		}
		i32(6, 1) // nullable
		boolean(7, t.dataType == 12)
		i32(8, t.searchOp)
		boolean(9, false)
		boolean(10, t.fixedPrec)
		boolean(11, false)
		str(12, t.name)
		if t.fixedPrec {
			i32(13, 0)
			i32(14, 38)
		} else {
			null(13)
			null(14)
		}
		i32(15, t.dataType)
		null(16)
		if t.size > 0 && t.prefix == "" && t.dataType != 16 {
			i32(17, 10)
		} else {
			null(17)
		}
		null(18)
	}
	return sendBatch(bldr.NewRecordBatch())
}
