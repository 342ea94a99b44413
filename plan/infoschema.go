package plan

import (
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// CatalogName is the one catalog flightd serves.
const CatalogName = "flightd"

// InformationSchema is the database name of the SQL standard's catalog
// views, which BI tools and SQL editors query.
const InformationSchema = "information_schema"

// isCol is one column of an information_schema view.
type isCol struct {
	name string
	typ  arrow.DataType // utf8 or int32
}

var (
	isStr = arrow.BinaryTypes.String
	isInt = arrow.PrimitiveTypes.Int32
)

// bindInformationSchema binds information_schema.<view> as the rows the
// catalog lists when the statement is bound, restricted to what the
// session may read (a database it may not read is left out).
func (b *binder) bindInformationSchema(f *sql.TableName) (Node, *scope, bool) {
	if len(f.Name.Parts) != 2 || !strings.EqualFold(f.Name.Parts[0], InformationSchema) {
		return nil, nil, false
	}
	var cols []isCol
	var rows [][]any
	add := func(r ...any) { rows = append(rows, r) }
	dbs, err := b.cat.Databases(b.ctx)
	if err != nil {
		b.failWrap(f.Pos, err, "information_schema: %v", err)
	}
	// tables lists a database's tables, or nothing when it is not readable.
	tables := func(db string) []string {
		names, err := b.cat.Tables(b.ctx, db)
		if err != nil {
			return nil
		}
		return names
	}
	views := func(db string) []string {
		vc := b.views()
		if vc == nil {
			return nil
		}
		names, err := vc.Views(b.ctx, db)
		if err != nil {
			return nil // not readable
		}
		return names
	}
	table := func(db, name string) *tablestore.Table {
		t, _, err := b.cat.Table(b.ctx, tablestore.Ident{Database: db, Table: name})
		if err != nil {
			return nil // dropped while listing
		}
		return t
	}
	tableCols := []isCol{{"table_catalog", isStr}, {"table_schema", isStr}, {"table_name", isStr}}
	constraintCols := []isCol{{"constraint_catalog", isStr}, {"constraint_schema", isStr}, {"constraint_name", isStr}}
	switch view := strings.ToLower(f.Name.Parts[1]); view {
	case "schemata":
		cols = []isCol{{"catalog_name", isStr}, {"schema_name", isStr}}
		for _, db := range dbs {
			add(CatalogName, db)
		}
	case "tables":
		cols = append(tableCols, isCol{"table_type", isStr})
		for _, db := range dbs {
			for _, t := range tables(db) {
				add(CatalogName, db, t, "BASE TABLE")
			}
			for _, v := range views(db) {
				add(CatalogName, db, v, "VIEW")
			}
		}
	case "views":
		cols = append(tableCols, isCol{"view_definition", isStr})
		vc := b.views()
		for _, db := range dbs {
			for _, v := range views(db) {
				if def, err := vc.View(b.ctx, tablestore.Ident{Database: db, Table: v}); err == nil {
					add(CatalogName, db, v, def.Query)
				}
			}
		}
	case "columns":
		cols = append(tableCols, isCol{"column_name", isStr}, isCol{"ordinal_position", isInt},
			isCol{"column_default", isStr}, isCol{"is_nullable", isStr}, isCol{"data_type", isStr},
			isCol{"numeric_precision", isInt}, isCol{"numeric_scale", isInt}, isCol{"datetime_precision", isInt})
		for _, db := range dbs {
			for _, name := range tables(db) {
				t := table(db, name)
				if t == nil {
					continue
				}
				for i, c := range t.Schema().Fields() {
					null := "YES"
					if !c.Nullable {
						null = "NO"
					}
					var prec, scale, dtPrec any
					switch ty := c.Type.(type) {
					case *arrow.Decimal128Type:
						prec, scale = ty.Precision, ty.Scale
					case *arrow.Int8Type:
						prec, scale = int32(3), int32(0)
					case *arrow.Int16Type:
						prec, scale = int32(5), int32(0)
					case *arrow.Int32Type:
						prec, scale = int32(10), int32(0)
					case *arrow.Int64Type:
						prec, scale = int32(19), int32(0)
					case *arrow.TimestampType:
						dtPrec = int32(precOf(ty.Unit))
					case *arrow.Time64Type:
						dtPrec = int32(precOf(ty.Unit))
					}
					add(CatalogName, db, name, c.Name, int32(i+1), nil, null, SQLTypeName(c.Type), prec, scale, dtPrec)
				}
			}
		}
	case "table_constraints", "key_column_usage":
		cols = append(constraintCols, tableCols...)
		if view == "table_constraints" {
			cols = append(cols, isCol{"constraint_type", isStr})
		} else {
			cols = append(cols, isCol{"column_name", isStr}, isCol{"ordinal_position", isInt})
		}
		for _, db := range dbs {
			for _, name := range tables(db) {
				t := table(db, name)
				if t == nil || len(t.PrimaryKey()) == 0 {
					continue
				}
				pk := name + "_pk" // primary keys have no name of their own
				if view == "table_constraints" {
					add(CatalogName, db, pk, CatalogName, db, name, "PRIMARY KEY")
					continue
				}
				for i, c := range t.PrimaryKey() {
					add(CatalogName, db, pk, CatalogName, db, name, c, int32(i+1))
				}
			}
		}
	default:
		b.fail(f.Pos, "information_schema has no view %q (it has schemata, tables, columns, views, table_constraints and key_column_usage)", f.Name.Parts[1])
	}
	n := b.constRows(cols, rows)
	qual := f.Name.Parts[1]
	if f.Alias != "" {
		qual = f.Alias
	}
	return n, b.aliasScope(n, qual, f.ColAliases, f.Pos), true
}

// constRows is a VALUES node of string, int32, int64, bool and timestamp
// (time.Time) columns; nil is NULL.
func (b *binder) constRows(cols []isCol, rows [][]any) Node {
	out := make([]Column, len(cols))
	for i, c := range cols {
		out[i] = b.newCol(c.name, c.typ, true)
	}
	vals := make([][]Expr, len(rows))
	for i, r := range rows {
		vals[i] = make([]Expr, len(r))
		for j, v := range r {
			var s scalar.Scalar
			switch v := v.(type) {
			case string:
				s = stringScalar(v)
			case int32:
				s = scalar.NewInt32Scalar(v)
			case int64:
				s = scalar.NewInt64Scalar(v)
			case bool:
				s = scalar.NewBooleanScalar(v)
			case time.Time:
				s = scalar.NewTimestampScalar(arrow.Timestamp(v.UnixMicro()), cols[j].typ)
			default:
				s = scalar.MakeNullScalar(cols[j].typ)
			}
			vals[i][j] = &Const{Value: s}
		}
	}
	return &ValuesNode{Values: vals, Cols: out}
}
