package flightsql

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
)

// Table types flightd reports.
const (
	tableTypeTable = "TABLE"
)

// metadataInfo is the FlightInfo of a metadata command: the command is its
// own ticket (arrow-go routes DoGet by the command inside).
func (s *Server) metadataInfo(desc *flight.FlightDescriptor, schema *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// sendBatch streams one batch (taking ownership of it).
func sendBatch(b arrow.RecordBatch) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: b}
	close(ch)
	return b.Schema(), ch, nil
}

func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.Catalogs), nil
}

func (s *Server) DoGetCatalogs(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	bldr := array.NewRecordBuilder(s.mem, schema_ref.Catalogs)
	defer bldr.Release()
	bldr.Field(0).(*array.StringBuilder).Append(CatalogName)
	return sendBatch(bldr.NewRecordBatch())
}

func (s *Server) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.DBSchemas), nil
}

func (s *Server) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	dbs, err := s.databases(ctx, cmd.GetCatalog(), cmd.GetDBSchemaFilterPattern())
	if err != nil {
		return nil, nil, toStatus(err)
	}
	bldr := array.NewRecordBuilder(s.mem, schema_ref.DBSchemas)
	defer bldr.Release()
	for _, db := range dbs {
		bldr.Field(0).(*array.StringBuilder).Append(CatalogName)
		bldr.Field(1).(*array.StringBuilder).Append(db)
	}
	return sendBatch(bldr.NewRecordBatch())
}

// databases lists the databases matching a catalog and a LIKE pattern.
func (s *Server) databases(ctx context.Context, catalog, pattern *string) ([]string, error) {
	if catalog != nil && *catalog != "" && *catalog != CatalogName {
		return nil, nil
	}
	all, err := s.eng.Store().Databases(ctx)
	if err != nil {
		return nil, err
	}
	match, err := likeMatcher(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, db := range all {
		if match(db) {
			out = append(out, db)
		}
	}
	return out, nil
}

func (s *Server) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return s.metadataInfo(desc, schema_ref.TablesWithIncludedSchema), nil
	}
	return s.metadataInfo(desc, schema_ref.Tables), nil
}

func (s *Server) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if !wantsTableType(cmd.GetTableTypes()) {
		return s.emptyResult(tablesSchema(cmd))
	}
	dbs, err := s.databases(ctx, cmd.GetCatalog(), cmd.GetDBSchemaFilterPattern())
	if err != nil {
		return nil, nil, toStatus(err)
	}
	match, err := likeMatcher(cmd.GetTableNameFilterPattern())
	if err != nil {
		return nil, nil, toStatus(err)
	}
	bldr := array.NewRecordBuilder(s.mem, tablesSchema(cmd))
	defer bldr.Release()
	for _, db := range dbs {
		names, err := s.eng.Store().Tables(ctx, db)
		if err != nil {
			return nil, nil, toStatus(err)
		}
		for _, name := range names {
			if !match(name) {
				continue
			}
			var schema *arrow.Schema
			if cmd.GetIncludeSchema() {
				t, err := s.eng.Store().Table(ctx, tablestore.Ident{Database: db, Table: name})
				if err != nil {
					continue // dropped while listing
				}
				schema = describedSchema(t)
			}
			bldr.Field(0).(*array.StringBuilder).Append(CatalogName)
			bldr.Field(1).(*array.StringBuilder).Append(db)
			bldr.Field(2).(*array.StringBuilder).Append(name)
			bldr.Field(3).(*array.StringBuilder).Append(tableTypeTable)
			if schema != nil {
				bldr.Field(4).(*array.BinaryBuilder).Append(flight.SerializeSchema(schema, s.mem))
			}
		}
	}
	return sendBatch(bldr.NewRecordBatch())
}

func tablesSchema(cmd flightsql.GetTables) *arrow.Schema {
	if cmd.GetIncludeSchema() {
		return schema_ref.TablesWithIncludedSchema
	}
	return schema_ref.Tables
}

func wantsTableType(types []string) bool {
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		if strings.EqualFold(t, tableTypeTable) {
			return true
		}
	}
	return false
}

// describedSchema is a table's schema with the Flight SQL column metadata
// JDBC's getColumns reads (type name, precision, scale, table names).
func describedSchema(t *tablestore.Table) *arrow.Schema {
	id := t.Ident()
	fields := make([]arrow.Field, t.Schema().NumFields())
	for i, f := range t.Schema().Fields() {
		md := flightsql.NewColumnMetadataBuilder().
			CatalogName(CatalogName).SchemaName(id.Database).TableName(id.Table).
			TypeName(plan.SQLTypeName(f.Type)).IsAutoIncrement(false).IsCaseSensitive(false).
			IsReadOnly(false).IsSearchable(true)
		if p, sc, ok := precisionScale(f.Type); ok {
			md.Precision(p).Scale(sc)
		}
		f.Metadata = md.Metadata()
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil)
}

func precisionScale(t arrow.DataType) (int32, int32, bool) {
	switch t := t.(type) {
	case arrow.DecimalType:
		return t.GetPrecision(), t.GetScale(), true
	case *arrow.Int8Type:
		return 3, 0, true
	case *arrow.Int16Type:
		return 5, 0, true
	case *arrow.Int32Type:
		return 10, 0, true
	case *arrow.Int64Type:
		return 19, 0, true
	case *arrow.Float32Type:
		return 7, 0, true
	case *arrow.Float64Type:
		return 15, 0, true
	}
	return 0, 0, false
}

func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.TableTypes), nil
}

func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	bldr := array.NewRecordBuilder(s.mem, schema_ref.TableTypes)
	defer bldr.Release()
	bldr.Field(0).(*array.StringBuilder).Append(tableTypeTable)
	return sendBatch(bldr.NewRecordBatch())
}

func (s *Server) GetFlightInfoPrimaryKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.PrimaryKeys), nil
}

func (s *Server) DoGetPrimaryKeys(ctx context.Context, ref flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	bldr := array.NewRecordBuilder(s.mem, schema_ref.PrimaryKeys)
	defer bldr.Release()
	if ref.Catalog == nil || *ref.Catalog == "" || *ref.Catalog == CatalogName {
		sess, err := s.session(ctx)
		if err != nil {
			return nil, nil, toStatus(err)
		}
		db := sess.Database() // the client's current database by default
		if ref.DBSchema != nil && *ref.DBSchema != "" {
			db = *ref.DBSchema
		}
		t, err := s.eng.Store().Table(ctx, tablestore.Ident{Database: db, Table: ref.Table})
		if err != nil {
			return nil, nil, toStatus(err)
		}
		for i, col := range t.PrimaryKey() {
			bldr.Field(0).(*array.StringBuilder).Append(CatalogName)
			bldr.Field(1).(*array.StringBuilder).Append(db)
			bldr.Field(2).(*array.StringBuilder).Append(ref.Table)
			bldr.Field(3).(*array.StringBuilder).Append(col)
			bldr.Field(4).(*array.Int32Builder).Append(int32(i + 1))
			bldr.Field(5).(*array.StringBuilder).AppendNull()
		}
	}
	return sendBatch(bldr.NewRecordBatch())
}

// flightd has no foreign keys: the key commands answer with valid empty
// results, which is what JDBC metadata tools expect.

func (s *Server) GetFlightInfoExportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.ExportedKeys), nil
}

func (s *Server) DoGetExportedKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyResult(schema_ref.ExportedKeys)
}

func (s *Server) GetFlightInfoImportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.ImportedKeys), nil
}

func (s *Server) DoGetImportedKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyResult(schema_ref.ImportedKeys)
}

func (s *Server) GetFlightInfoCrossReference(_ context.Context, _ flightsql.CrossTableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.CrossReference), nil
}

func (s *Server) DoGetCrossReference(context.Context, flightsql.CrossTableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyResult(schema_ref.CrossReference)
}

func (s *Server) emptyResult(schema *arrow.Schema) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ch := make(chan flight.StreamChunk)
	close(ch)
	return schema, ch, nil
}

// likeMatcher compiles a Flight SQL filter pattern (SQL LIKE: % and _,
// backslash escapes); nil matches everything.
func likeMatcher(pattern *string) (func(string) bool, error) {
	if pattern == nil || *pattern == "" || *pattern == "%" {
		return func(string) bool { return true }, nil
	}
	var re strings.Builder
	re.WriteString("(?s)^")
	escaped := false
	for _, r := range *pattern {
		switch {
		case escaped:
			re.WriteString(regexp.QuoteMeta(string(r)))
			escaped = false
		case r == '\\':
			escaped = true
		case r == '%':
			re.WriteString(".*")
		case r == '_':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, fmt.Errorf("filter pattern %q: %v: %w", *pattern, err, errBadRequest)
	}
	return rx.MatchString, nil
}
