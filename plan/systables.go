package plan

import (
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

var (
	isInt64 = arrow.PrimitiveTypes.Int64
	isBool  = arrow.FixedWidthTypes.Boolean
	isTime  = arrow.FixedWidthTypes.Timestamp_us // UTC
)

// sysTableCols are the columns of the global system tables of database
// sys. tables is Paimon's table of tables, plus disk_size_in_bytes: every
// file under the table's directory (older snapshots' files, changelogs,
// metadata, crash leftovers), where file_size_in_bytes counts the data
// files of the latest snapshot. materialized_tables shows what DESCRIBE
// EXTENDED shows of each materialized table.
var sysTableCols = map[string][]isCol{
	"tables": {
		{"database_name", isStr}, {"table_name", isStr}, {"table_type", isStr}, {"partitioned", isBool},
		{"primary_key", isStr}, {"record_count", isInt64}, {"file_size_in_bytes", isInt64},
		{"file_count", isInt64}, {"disk_size_in_bytes", isInt64},
	},
	"materialized_tables": {
		{"database_name", isStr}, {"table_name", isStr}, {"refresh_mode", isStr}, {"full_reason", isStr},
		{"freshness", isStr}, {"status", isStr}, {"last_refresh", isTime}, {"last_refresh_duration_ms", isInt64},
		{"source_snapshots", isStr}, {"data_lag_ms", isInt64}, {"next_run", isTime}, {"job_id", isStr},
		{"last_error", isStr}, {"query", isStr},
	},
}

// bindSystemTable binds sys.tables and sys.materialized_tables, read when
// the statement is bound, over the databases the session may read
// (record_count counts stored rows: for key tables an upper bound, as in
// Paimon). A real table or view of that name that the session may read
// wins.
func (b *binder) bindSystemTable(f *sql.TableName) (Node, *scope, bool) {
	p := f.Name.Parts
	if len(p) != 2 || !strings.EqualFold(p[0], "sys") {
		return nil, nil, false
	}
	name := strings.ToLower(p[1])
	cols, ok := sysTableCols[name]
	if !ok {
		return nil, nil, false
	}
	id := tablestore.Ident{Database: p[0], Table: p[1]}
	if _, _, err := b.cat.Table(b.ctx, id); err == nil {
		return nil, nil, false
	}
	if vc := b.views(); vc != nil {
		if _, err := vc.View(b.ctx, id); err == nil {
			return nil, nil, false
		}
	}
	if f.SystemTime != nil || len(f.Hints) > 0 {
		b.fail(f.Pos, "sys.%s takes no hints or FOR SYSTEM_TIME AS OF", name)
	}
	dbs, err := b.cat.Databases(b.ctx)
	if err != nil {
		b.failWrap(f.Pos, err, "sys.%s: %v", name, err)
	}
	var rows [][]any
	for _, db := range dbs {
		names, err := b.cat.Tables(b.ctx, db)
		if err != nil {
			continue // not readable: left out, as in information_schema
		}
		for _, n := range names {
			t, _, err := b.cat.Table(b.ctx, tablestore.Ident{Database: db, Table: n})
			if err != nil {
				continue // dropped meanwhile
			}
			var r []any
			if name == "tables" {
				r = b.sysTablesRow(f.Pos, t)
			} else {
				r = b.sysMaterializedRow(f.Pos, t)
			}
			if r != nil {
				rows = append(rows, r)
			}
		}
	}
	n := b.constRows(cols, rows)
	qual := p[1]
	if f.Alias != "" {
		qual = f.Alias
	}
	return n, b.aliasScope(n, qual, f.ColAliases, f.Pos), true
}

func (b *binder) sysTablesRow(pos sql.Pos, t *tablestore.Table) []any {
	st, err := t.Stats(b.ctx, 0)
	if err != nil {
		b.failWrap(pos, err, "sys.tables: %s: %v", t.Ident(), err)
	}
	disk, err := t.DiskUsage(b.ctx)
	if err != nil {
		b.failWrap(pos, err, "sys.tables: %s: %v", t.Ident(), err)
	}
	id := t.Ident()
	return []any{id.Database, id.Table, "table", len(t.PartitionKeys()) > 0, strings.Join(t.PrimaryKey(), ","),
		st.Rows, st.Bytes, st.Files, disk}
}

// sysMaterializedRow is a materialized table's row of
// sys.materialized_tables; nil for a plain table.
func (b *binder) sysMaterializedRow(pos sql.Pos, t *tablestore.Table) []any {
	md := t.Materialized()
	if md == nil {
		return nil
	}
	status := "ACTIVATED"
	if md.Suspended {
		status = "SUSPENDED"
	}
	id := t.Ident()
	var st MaterializedStatus
	if mc, ok := b.cat.(MaterializedCatalog); ok {
		var err error
		if st, err = mc.MaterializedStatus(b.ctx, t); err != nil {
			b.failWrap(pos, err, "sys.materialized_tables: %s: %v", id, err)
		}
	}
	refreshed := !st.LastRefresh.IsZero()
	return []any{id.Database, id.Table, md.Mode, orNull(md.FullReason), sql.Format(freshnessLiteral(md.FreshnessMillis)), status,
		timeOrNull(st.LastRefresh), msOrNull(st.LastDuration, refreshed), orNull(st.SourceSnapshots), msOrNull(st.DataLag, refreshed),
		timeOrNull(st.NextRun), orNull(st.Job), orNull(st.LastError), md.Query}
}

// orNull, timeOrNull and msOrNull give constRows a value, or nil for NULL
// when there is none.
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func timeOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func msOrNull(d time.Duration, known bool) any {
	if !known {
		return nil
	}
	return d.Milliseconds()
}
