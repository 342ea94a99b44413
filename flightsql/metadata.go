package flightsql

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/quote"
)

// Table types flightd reports.
const (
	tableTypeTable = "TABLE"
	tableTypeView  = "VIEW"
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
	// Sent in pieces of about messageBytes, as query results are: GetTables
	// with schemas of wide tables was one message of 54 MB, which clients
	// refuse (16 MiB for ADBC), so they could not list columns at all.
	n, step := b.NumRows(), messageRows(b)
	if step >= n {
		ch := make(chan flight.StreamChunk, 1)
		ch <- flight.StreamChunk{Data: b}
		close(ch)
		return b.Schema(), ch, nil
	}
	defer b.Release()
	ch := make(chan flight.StreamChunk, (n+step-1)/step)
	for off := int64(0); off < n; off += step {
		ch <- flight.StreamChunk{Data: b.NewSlice(off, min(off+step, n))}
	}
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
	all, err := s.eng.Databases(ctx)
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
	wantTables, wantViews := wantsTableType(cmd.GetTableTypes(), tableTypeTable), wantsTableType(cmd.GetTableTypes(), tableTypeView)
	if !wantTables && !wantViews {
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
	type entry struct{ name, kind string }
	kinds := []struct {
		kind string
		want bool
		list func(context.Context, string) ([]string, error)
	}{
		{tableTypeTable, wantTables, s.eng.Tables},
		{tableTypeView, wantViews, s.eng.Views},
	}
	for _, db := range dbs {
		if s.allowed(ctx, db, engine.Read) != nil {
			continue // names only: a database's tables are for its readers
		}
		var entries []entry
		for _, k := range kinds {
			if !k.want {
				continue
			}
			names, err := k.list(ctx, db)
			if err != nil {
				return nil, nil, toStatus(err)
			}
			for _, n := range names {
				entries = append(entries, entry{n, k.kind})
			}
		}
		// Flight SQL orders by name, then type.
		slices.SortFunc(entries, func(a, b entry) int { return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.kind, b.kind)) })
		for _, e := range entries {
			if !match(e.name) {
				continue
			}
			var schema *arrow.Schema
			if cmd.GetIncludeSchema() {
				id := engine.Ident{Database: db, Table: e.name}
				var sch *arrow.Schema
				if e.kind == tableTypeView {
					if sch, err = s.eng.ViewSchema(ctx, id); err != nil {
						continue // dropped while listing, or no longer binds
					}
				} else {
					t, err := s.eng.Table(ctx, id)
					if err != nil {
						continue // dropped while listing
					}
					sch = t.Schema
				}
				schema = describedSchema(id, sch)
			}
			bldr.Field(0).(*array.StringBuilder).Append(CatalogName)
			bldr.Field(1).(*array.StringBuilder).Append(db)
			bldr.Field(2).(*array.StringBuilder).Append(e.name)
			bldr.Field(3).(*array.StringBuilder).Append(e.kind)
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

// wantsTableType reports whether a GetTables filter (empty: all) asks for
// the table type kind.
func wantsTableType(types []string, kind string) bool {
	return len(types) == 0 || slices.ContainsFunc(types, func(t string) bool { return strings.EqualFold(t, kind) })
}

// describedSchema is a table's or view's schema with the column metadata
// of columnMetadata and the table's names.
func describedSchema(id engine.Ident, sch *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, sch.NumFields())
	for i, f := range sch.Fields() {
		f.Metadata = columnMetadata(f, flightsql.NewColumnMetadataBuilder().
			CatalogName(CatalogName).SchemaName(id.Database).TableName(id.Table))
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil)
}

// resultSchema is a query result's schema with the column metadata of
// columnMetadata, which the JDBC driver reads for ResultSetMetaData
// (precision and scale of a DECIMAL(10,2) column, say).
func resultSchema(sch *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, sch.NumFields())
	for i, f := range sch.Fields() {
		f.Metadata = columnMetadata(f, flightsql.NewColumnMetadataBuilder())
		fields[i] = f
	}
	md := sch.Metadata()
	return arrow.NewSchema(fields, &md)
}

// columnMetadata is what clients read from a field's metadata: the Flight
// SQL keys (ARROW:FLIGHT:SQL:TYPE_NAME, PRECISION, SCALE, ...) that the
// JDBC driver reads, and the XDBC keys from which ADBC's get_objects fills
// column size, decimal digits and nullability. md may carry table names.
func columnMetadata(f arrow.Field, md *flightsql.ColumnMetadataBuilder) arrow.Metadata {
	md.TypeName(engine.SQLTypeName(f.Type)).IsAutoIncrement(false).IsCaseSensitive(false).
		IsReadOnly(false).IsSearchable(true)
	size, digits, numeric, ok := precisionScale(f.Type)
	if ok {
		md.Precision(size).Scale(digits)
	}
	m := md.Metadata()
	keys, vals := m.Keys(), m.Values()
	add := func(k, v string) { keys, vals = append(keys, k), append(vals, v) }
	if f.Nullable {
		add("XDBC_NULLABLE", "1")
		add("XDBC_IS_NULLABLE", "YES")
	} else {
		add("XDBC_NULLABLE", "0")
		add("XDBC_IS_NULLABLE", "NO")
	}
	if ok {
		add("XDBC_COLUMN_SIZE", strconv.Itoa(int(size)))
		add("XDBC_DECIMAL_DIGITS", strconv.Itoa(int(digits)))
	}
	if numeric {
		add("XDBC_NUM_PREC_RADIX", "10")
	}
	return arrow.NewMetadata(keys, vals)
}

// precisionScale is a type's JDBC precision and scale: digits for numbers,
// characters of the text form for dates and times (whose scale is the
// fractional second digits).
func precisionScale(t arrow.DataType) (prec, scale int32, numeric, ok bool) {
	frac := func(u arrow.TimeUnit) int32 { return [...]int32{0, 3, 6, 9}[u] }
	dot := func(p int32) int32 {
		if p > 0 {
			return p + 1
		}
		return 0
	}
	switch t := t.(type) {
	case arrow.DecimalType:
		return t.GetPrecision(), t.GetScale(), true, true
	case *arrow.Int8Type:
		return 3, 0, true, true
	case *arrow.Int16Type:
		return 5, 0, true, true
	case *arrow.Int32Type:
		return 10, 0, true, true
	case *arrow.Int64Type:
		return 19, 0, true, true
	case *arrow.Float32Type:
		return 7, 0, true, true
	case *arrow.Float64Type:
		return 15, 0, true, true
	case *arrow.Date32Type:
		return 10, 0, false, true // yyyy-mm-dd
	case *arrow.Time64Type:
		return 8 + dot(frac(t.Unit)), frac(t.Unit), false, true // hh:mm:ss.f
	case *arrow.TimestampType:
		return 19 + dot(frac(t.Unit)), frac(t.Unit), false, true // yyyy-mm-dd hh:mm:ss.f
	}
	return 0, 0, false, false
}

func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.TableTypes), nil
}

func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	bldr := array.NewRecordBuilder(s.mem, schema_ref.TableTypes)
	defer bldr.Release()
	bldr.Field(0).(*array.StringBuilder).AppendValues([]string{tableTypeTable, tableTypeView}, nil)
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
		if err := s.allowed(ctx, db, engine.Read); err != nil {
			return nil, nil, toStatus(err)
		}
		t, err := s.eng.Table(ctx, engine.Ident{Database: db, Table: ref.Table})
		if err != nil {
			// A view has no primary key: an empty answer, as JDBC tools
			// that list a view's keys expect, not NotFound.
			if views, verr := s.eng.Views(ctx, db); verr == nil && slices.Contains(views, ref.Table) {
				return sendBatch(bldr.NewRecordBatch())
			}
			return nil, nil, toStatus(err)
		}
		for i, col := range t.PrimaryKey {
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

// maxPatternBytes bounds a filter pattern: compiling a 100 MB one into a
// regular expression took 7 s and 2 GB before the regexp package refused
// it. A pattern escaping every byte of the longest name, with a % between
// each, is about 3 KB.
const maxPatternBytes = 8 << 10

// likeMatcher compiles a Flight SQL filter pattern (SQL LIKE: % and _,
// backslash escapes); nil (no pattern) matches everything. An empty
// pattern is a pattern: it matches only the empty name, as SQL LIKE does
// and as FlightSql.proto has only an absent pattern not narrow the search.
func likeMatcher(pattern *string) (func(string) bool, error) {
	if pattern == nil || *pattern == "%" {
		return func(string) bool { return true }, nil
	}
	if len(*pattern) > maxPatternBytes {
		return nil, fmt.Errorf("filter pattern %s is longer than %d bytes (names are at most 200 bytes, column names 1,024): %w", quote.Clipped(*pattern, maxQuotedID), maxPatternBytes, errBadRequest)
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
		return nil, fmt.Errorf("filter pattern %s: %v: %w", quote.Clipped(*pattern, maxQuotedID), err, errBadRequest)
	}
	return rx.MatchString, nil
}
