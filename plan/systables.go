package plan

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// sysTablesCols are the columns of sys.tables, Paimon's global system
// table of tables, plus disk_size_in_bytes: every file under the table's
// directory (older snapshots' files, changelogs, metadata, crash leftovers),
// where file_size_in_bytes counts the data files of the latest snapshot.
var sysTablesCols = []struct {
	name string
	typ  arrow.DataType
}{
	{"database_name", arrow.BinaryTypes.String},
	{"table_name", arrow.BinaryTypes.String},
	{"table_type", arrow.BinaryTypes.String},
	{"partitioned", arrow.FixedWidthTypes.Boolean},
	{"primary_key", arrow.BinaryTypes.String},
	{"record_count", arrow.PrimitiveTypes.Int64},
	{"file_size_in_bytes", arrow.PrimitiveTypes.Int64},
	{"file_count", arrow.PrimitiveTypes.Int64},
	{"disk_size_in_bytes", arrow.PrimitiveTypes.Int64},
}

// bindSystemTable binds sys.tables, read when the statement is bound
// (record_count counts stored rows: for key tables an upper bound, as in
// Paimon). A real table sys.tables wins.
func (b *binder) bindSystemTable(f *sql.TableName) (Node, *scope, bool) {
	p := f.Name.Parts
	if len(p) != 2 || !strings.EqualFold(p[0], "sys") || !strings.EqualFold(p[1], "tables") {
		return nil, nil, false
	}
	if _, _, err := b.cat.Table(b.ctx, tablestore.Ident{Database: p[0], Table: p[1]}); err == nil {
		return nil, nil, false
	}
	if f.SystemTime != nil || len(f.Hints) > 0 {
		b.fail(f.Pos, "sys.tables takes no hints or FOR SYSTEM_TIME AS OF")
	}
	dbs, err := b.cat.Databases(b.ctx)
	if err != nil {
		b.failWrap(f.Pos, err, "sys.tables: %v", err)
	}
	var rows [][]Expr
	for _, db := range dbs {
		names, err := b.cat.Tables(b.ctx, db)
		if err != nil {
			b.failWrap(f.Pos, err, "sys.tables: %v", err)
		}
		for _, n := range names {
			t, _, err := b.cat.Table(b.ctx, tablestore.Ident{Database: db, Table: n})
			if err != nil {
				continue // dropped meanwhile
			}
			st, err := t.Stats(b.ctx, 0)
			if err != nil {
				b.failWrap(f.Pos, err, "sys.tables: %s: %v", t.Ident(), err)
			}
			disk, err := t.DiskUsage(b.ctx)
			if err != nil {
				b.failWrap(f.Pos, err, "sys.tables: %s: %v", t.Ident(), err)
			}
			rows = append(rows, []Expr{
				&Const{Value: stringScalar(db)},
				&Const{Value: stringScalar(n)},
				&Const{Value: stringScalar("table")},
				&Const{Value: scalar.NewBooleanScalar(len(t.PartitionKeys()) > 0)},
				&Const{Value: stringScalar(strings.Join(t.PrimaryKey(), ","))},
				&Const{Value: scalar.NewInt64Scalar(st.Rows)},
				&Const{Value: scalar.NewInt64Scalar(st.Bytes)},
				&Const{Value: scalar.NewInt64Scalar(st.Files)},
				&Const{Value: scalar.NewInt64Scalar(disk)},
			})
		}
	}
	cols := make([]Column, len(sysTablesCols))
	for i, c := range sysTablesCols {
		cols[i] = b.newCol(c.name, c.typ, false)
	}
	n := &ValuesNode{Values: rows, Cols: cols}
	qual := p[1]
	if f.Alias != "" {
		qual = f.Alias
	}
	return n, b.aliasScope(n, qual, f.ColAliases, f.Pos), true
}
