package plan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
		{"last_error", isStr}, {"failures", isInt64}, {"query", isStr},
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
		timeOrNull(st.NextRun), orNull(st.Job), orNull(st.LastError), int64(st.Failures), md.Query}
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

// tableSysCols are the columns of a table's system tables, t$<name>, as
// Paimon names them.
var tableSysCols = map[string][]isCol{
	"snapshots": {
		{"snapshot_id", isInt64}, {"schema_id", isInt64}, {"commit_user", isStr}, {"commit_identifier", isInt64},
		{"commit_kind", isStr}, {"commit_time", isTime}, {"base_manifest_list", isStr}, {"delta_manifest_list", isStr},
		{"changelog_manifest_list", isStr}, {"total_record_count", isInt64}, {"delta_record_count", isInt64},
	},
	"options":   {{"key", isStr}, {"value", isStr}},
	"tags":      {{"tag_name", isStr}, {"snapshot_id", isInt64}, {"schema_id", isInt64}, {"commit_time", isTime}, {"record_count", isInt64}},
	"consumers": {{"consumer_id", isStr}, {"next_snapshot_id", isInt64}},
	"files": {
		{"partition", isStr}, {"bucket", isInt}, {"file_path", isStr}, {"file_format", isStr}, {"schema_id", isInt64},
		{"level", isInt}, {"record_count", isInt64}, {"file_size_in_bytes", isInt64}, {"min_key", isStr}, {"max_key", isStr},
		{"min_sequence_number", isInt64}, {"max_sequence_number", isInt64}, {"creation_time", isTime},
	},
	"schemas": {
		{"schema_id", isInt64}, {"fields", isStr}, {"partition_keys", isStr}, {"primary_keys", isStr}, {"options", isStr},
		{"comment", isStr}, {"update_time", isTime},
	},
	"manifests": {
		{"file_name", isStr}, {"file_size", isInt64}, {"num_added_files", isInt64}, {"num_deleted_files", isInt64},
		{"schema_id", isInt64}, {"min_partition_stats", isStr}, {"max_partition_stats", isStr},
	},
	"partitions": {{"partition", isStr}, {"record_count", isInt64}, {"file_size_in_bytes", isInt64}, {"file_count", isInt64}, {"last_update_time", isTime}},
	"buckets": {
		{"partition", isStr}, {"bucket", isInt}, {"record_count", isInt64}, {"file_size_in_bytes", isInt64},
		{"file_count", isInt64}, {"last_update_time", isTime},
	},
}

// ScanRead is what a ScanNode reads of its snapshot.
type ScanRead int8

const (
	// ReadRows reads the table's rows.
	ReadRows ScanRead = iota
	// ReadOptimized reads t$ro: the files that need no merge.
	ReadOptimized
	// ReadAuditLog reads t$audit_log: the rows with their row kind
	// (tablestore.AuditLogKindColumn, the scan's first column), retracting
	// rows kept.
	ReadAuditLog
)

func (r ScanRead) String() string {
	return [...]string{ReadRows: "rows", ReadOptimized: "ro", ReadAuditLog: "audit_log"}[r]
}

// columns are the table columns the scan of n reads.
func (r ScanRead) columns(n *ScanNode) []string {
	if r == ReadAuditLog {
		return n.Names[1:]
	}
	return n.Names
}

func (r ScanRead) splits(s *tablestore.Scan) []tablestore.Split {
	switch r {
	case ReadOptimized:
		return s.ReadOptimizedSplits()
	case ReadAuditLog:
		return s.AuditLogSplits()
	}
	return s.Splits()
}

// bindDataSystemTable binds t$ro and t$audit_log, which read t's snapshot
// (the latest, or one a scan.snapshot-id or scan.tag-name hint names) as
// Paimon's ReadOptimizedTable and AuditLogTable do.
func (b *binder) bindDataSystemTable(f *sql.TableName, base, kind string) (Node, *scope) {
	parts := f.Name.Parts
	t, snap := b.table(&sql.Name{Pos: f.Name.Pos, Parts: append(slices.Clone(parts[:len(parts)-1]), base)})
	if f.SystemTime != nil {
		b.fail(f.SystemTime.Position(), "%s$%s takes no FOR SYSTEM_TIME AS OF: use OPTIONS('scan.snapshot-id'=...)", base, kind)
	}
	t, snap, tag, stream := b.tableHints(f, t, snap)
	if stream != nil {
		b.notImplemented(f.Pos, fmt.Sprintf("streaming reads of %s$%s (a scan.mode hint on %s streams its changes with their row kinds)", base, kind, base))
	}
	qual := base + "$" + kind
	if f.Alias != "" {
		qual = f.Alias
	}
	n := b.scanNode(f.Name.Pos, t, snap, qual)
	n.Tag = tag
	n.Read = ReadOptimized
	if kind == "audit_log" {
		if slices.Contains(n.Names, tablestore.AuditLogKindColumn) {
			b.notImplemented(f.Pos, fmt.Sprintf("%s$audit_log of a table with a column named %s", base, tablestore.AuditLogKindColumn))
		}
		n.Read = ReadAuditLog
		n.Cols = append([]Column{b.newCol(tablestore.AuditLogKindColumn, arrow.BinaryTypes.String, false)}, n.Cols...)
		n.Names = append([]string{tablestore.AuditLogKindColumn}, n.Names...)
	}
	return n, b.aliasScope(n, qual, f.ColAliases, f.Pos)
}

// ShadowedName reports whether a new table, view or materialized table
// named name could not be read: t$snapshots and the other system tables
// of t shadow it (Paimon refuses '$' in table names).
func ShadowedName(name string) bool {
	_, _, ok := systemTableName(name)
	return ok
}

// systemTableName splits name, base$kind, when kind (case-folded) is one
// of the system tables of base: the data views ro and audit_log, or a
// table of tableSysCols.
func systemTableName(name string) (base, kind string, ok bool) {
	base, kind, ok = strings.Cut(name, "$")
	kind = strings.ToLower(kind)
	_, sys := tableSysCols[kind]
	return base, kind, ok && (sys || kind == "ro" || kind == "audit_log")
}

// checkNewName fails a statement creating a table, view or materialized
// table that could not be read.
func (b *binder) checkNewName(n *sql.Name, id tablestore.Ident) {
	if ShadowedName(id.Table) {
		b.fail(n.Pos, "%s cannot be created: queries of that name read a system table of %s", id, strings.SplitN(id.Table, "$", 2)[0])
	}
}

// bindTableSystemTable binds t$snapshots, t$schemas, t$options, t$tags,
// t$consumers, t$manifests, t$files, t$partitions and t$buckets: what the
// table store keeps about table t, read when the statement is bound, for
// readers of t. The manifest and file tables describe the latest snapshot,
// or the one a scan.snapshot-id hint names. They shadow a table named
// t$snapshots (and so on).
func (b *binder) bindTableSystemTable(f *sql.TableName) (Node, *scope, bool) {
	parts := f.Name.Parts
	base, kind, ok := systemTableName(parts[len(parts)-1])
	if !ok {
		return nil, nil, false // no '$', or a table whose name holds one
	}
	if kind == "ro" || kind == "audit_log" {
		n, sc := b.bindDataSystemTable(f, base, kind)
		return n, sc, true
	}
	cols := tableSysCols[kind]
	t, _ := b.table(&sql.Name{Pos: f.Name.Pos, Parts: append(slices.Clone(parts[:len(parts)-1]), base)})
	snap := int64(0)
	for _, h := range f.Hints {
		for _, o := range h.Options {
			if h.Name != "OPTIONS" || o.Key != "scan.snapshot-id" || !slices.Contains(snapshotSysTables, kind) {
				b.fail(o.Pos, "%s$%s takes no hint but OPTIONS('scan.snapshot-id'=...) on manifests, files, partitions and buckets", base, kind)
			}
			snap = b.positiveInt(o)
		}
	}
	if f.SystemTime != nil {
		b.fail(f.SystemTime.Position(), "%s$%s takes no FOR SYSTEM_TIME AS OF", base, kind)
	}
	rows, err := tableSysRows(b.ctx, t, kind, snap)
	if err != nil {
		b.failWrap(f.Pos, err, "%s$%s: %v", t.Ident(), kind, err)
	}
	n := b.constRows(cols, rows)
	qual := base + "$" + kind
	if f.Alias != "" {
		qual = f.Alias
	}
	return n, b.aliasScope(n, qual, f.ColAliases, f.Pos), true
}

// snapshotSysTables are the system tables that describe one snapshot.
var snapshotSysTables = []string{"manifests", "files", "partitions", "buckets"}

// tableSysRows lists the rows of t$kind (files of snapshot snap, 0 the
// latest).
func tableSysRows(ctx context.Context, t *tablestore.Table, kind string, snap int64) ([][]any, error) {
	var rows [][]any
	switch kind {
	case "snapshots":
		snaps, err := t.Snapshots(ctx)
		for _, s := range snaps {
			rows = append(rows, []any{s.ID, s.SchemaID, s.CommitUser, s.CommitIdentifier, s.CommitKind, time.UnixMilli(s.TimeMillis),
				s.BaseManifestList, s.DeltaManifestList, orNull(s.ChangelogManifestList), s.TotalRecordCount, s.DeltaRecordCount})
		}
		return rows, err
	case "schemas":
		schs, err := t.SchemaVersions(ctx)
		for _, s := range schs {
			rows = append(rows, []any{s.ID, s.Fields, s.PartitionKeys, s.PrimaryKeys, s.Options, orNull(s.Comment), time.UnixMilli(s.TimeMillis)})
		}
		return rows, err
	case "manifests":
		ms, err := t.Manifests(ctx, snap)
		for _, m := range ms {
			rows = append(rows, []any{m.FileName, m.FileSize, m.NumAddedFiles, m.NumDeletedFiles, m.SchemaID,
				orNull(m.MinPartition), orNull(m.MaxPartition)})
		}
		return rows, err
	case "options":
		opts := t.Options()
		for _, k := range slices.Sorted(maps.Keys(opts)) {
			rows = append(rows, []any{k, opts[k]})
		}
		return rows, nil
	case "tags":
		tags, err := t.TagList(ctx)
		for _, tg := range tags {
			rows = append(rows, []any{tg.Name, tg.Snapshot.ID, tg.Snapshot.SchemaID, time.UnixMilli(tg.Snapshot.TimeMillis), tg.Snapshot.TotalRecordCount})
		}
		return rows, err
	case "consumers":
		cs, err := t.Consumers(ctx)
		for _, id := range slices.Sorted(maps.Keys(cs)) {
			rows = append(rows, []any{id, cs[id]})
		}
		return rows, err
	}
	files, err := t.Files(ctx, snap)
	if err != nil {
		return nil, err
	}
	if kind == "files" {
		for _, f := range files {
			rows = append(rows, []any{f.Partition, int32(f.Bucket), f.Path, "parquet", f.SchemaID, int32(f.Level), f.RecordCount, f.Size,
				orNull(f.MinKey), orNull(f.MaxKey), f.MinSeq, f.MaxSeq, time.UnixMilli(f.CreationMillis)})
		}
		return rows, nil
	}
	// partitions and buckets: the files summed per group.
	type group struct {
		part         string
		bucket       int
		rows, bytes  int64
		files        int64
		lastModified int64
	}
	var order []string
	groups := map[string]*group{}
	for _, f := range files {
		key := f.Partition
		if kind == "buckets" {
			key += "\x00" + strconv.Itoa(f.Bucket)
		}
		g := groups[key]
		if g == nil {
			g = &group{part: f.Partition, bucket: f.Bucket}
			groups[key] = g
			order = append(order, key)
		}
		g.rows, g.bytes, g.files = g.rows+f.RecordCount, g.bytes+f.Size, g.files+1
		g.lastModified = max(g.lastModified, f.CreationMillis)
	}
	slices.Sort(order)
	for _, key := range order {
		g := groups[key]
		r := []any{g.part}
		if kind == "buckets" {
			r = append(r, int32(g.bucket))
		}
		rows = append(rows, append(r, g.rows, g.bytes, g.files, time.UnixMilli(g.lastModified)))
	}
	return rows, nil
}
