package plan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/tablestore"
)

// Refresh modes of materialized tables.
const (
	ModeFull       = "FULL"
	ModeContinuous = "CONTINUOUS"
)

// DefaultFreshnessThreshold is Options.FreshnessThreshold's default, as
// Flink's materialized-table.refresh-mode.freshness-threshold.
const DefaultFreshnessThreshold = 30 * time.Minute

// FreshnessThresholdOption is the database option (CREATE DATABASE ...
// WITH, ALTER DATABASE ... SET) that overrides
// Options.FreshnessThreshold for the materialized tables of a database.
const FreshnessThresholdOption = "materialized-table.refresh-mode.freshness-threshold"

// DatabaseOptionsCatalog is implemented by catalogs that keep database
// options.
type DatabaseOptionsCatalog interface {
	DatabaseOptions(ctx context.Context, db string) (map[string]string, error)
}

// wantMode is the mode a freshness asks for in database db when
// REFRESH_MODE is not given: CONTINUOUS below the threshold (the
// database's option, else the server's).
func (b *binder) wantMode(db string, fresh time.Duration) string {
	threshold := b.opts.FreshnessThreshold
	if threshold <= 0 {
		threshold = DefaultFreshnessThreshold
	}
	if dc, ok := b.cat.(DatabaseOptionsCatalog); ok {
		opts, err := dc.DatabaseOptions(b.ctx, db)
		if err != nil {
			b.failWrap(sql.Pos{}, err, "database %s: %v", db, err)
		}
		if v, ok := opts[FreshnessThresholdOption]; ok {
			// Checked when set (databaseOptions).
			threshold, _ = parseFlinkDuration(v)
		}
	}
	if fresh < threshold {
		return ModeContinuous
	}
	return ModeFull
}

// databaseOptions checks the options of CREATE DATABASE ... WITH and
// ALTER DATABASE ... SET: only FreshnessThresholdOption, a positive
// duration, is known.
func (b *binder) databaseOptions(props []*sql.Property) map[string]string {
	if len(props) == 0 {
		return nil
	}
	opts := map[string]string{}
	for _, p := range props {
		if p.Key != FreshnessThresholdOption {
			b.fail(p.Pos, "database option %q is not supported (supported: %s)", p.Key, FreshnessThresholdOption)
		}
		if _, err := parseFlinkDuration(p.Value); err != nil {
			b.fail(p.Pos, "%s: %v", p.Key, err)
		}
		opts[p.Key] = p.Value
	}
	return opts
}

// parseFlinkDuration parses a duration as Flink's options write them: a
// positive number and a unit (ms, s, sec, second(s), min, m, minute(s), h,
// hour(s), d, day(s)), spaces allowed between, such as '10 min' or '30s'.
func parseFlinkDuration(text string) (time.Duration, error) {
	t := strings.TrimSpace(text)
	i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return 0, fmt.Errorf("%q is not a duration such as '10 min' or '30 s'", text)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	unit := map[string]time.Duration{
		"ms": time.Millisecond, "s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
		"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hour": time.Hour, "hours": time.Hour, "d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	}[strings.ToLower(strings.TrimSpace(t[i:]))]
	if err != nil || n <= 0 || unit == 0 || n > int64(365*24*time.Hour/unit) {
		return 0, fmt.Errorf("%q is not a positive duration (at most a year) such as '10 min' or '30 s'", text)
	}
	return time.Duration(n) * unit, nil
}

// Default freshness per requested mode (Flink's).
var defaultFreshness = map[string]time.Duration{ModeContinuous: 3 * time.Minute, ModeFull: time.Hour}

// dateFormatterKey is partition.fields.<col>.date-formatter.
const dateFormatterPrefix, dateFormatterSuffix = "partition.fields.", ".date-formatter"

// CreateMaterialized creates a materialized table; the engine runs its
// first refresh in the commit that creates it.
type CreateMaterialized struct {
	Ident       tablestore.Ident
	Def         tablestore.TableDef // Def.Materialized is set
	OrAlter     bool
	IfNotExists bool
}

// AlterMaterialized changes a materialized table: Action is SUSPEND,
// RESUME, REFRESH, SET FRESHNESS or AS (sql.AlterMaterializedTable).
type AlterMaterialized struct {
	Table  *tablestore.Table
	Action string
	// Changes are SUSPEND's, RESUME [WITH]'s and SET FRESHNESS's, applied
	// to the table's definition as it is when they run.
	Changes []tablestore.SchemaChange
	// Partition is REFRESH PARTITION's spec (column -> value as in paths)
	// and PartitionFilter the same as a SQL condition on the query's rows.
	Partition       map[string]string
	PartitionFilter string
	// NewTable is AS's new table (schema, keys, query); it keeps the
	// status and freshness the table has when it runs.
	NewTable *tablestore.TableDef
}

// DropMaterialized drops a materialized table.
type DropMaterialized struct {
	Ident    tablestore.Ident
	IfExists bool
}

func (*CreateMaterialized) boundStmt() {}
func (*AlterMaterialized) boundStmt()  {}
func (*DropMaterialized) boundStmt()   {}

// MaterializedStatus is what DESCRIBE EXTENDED shows of a materialized
// table's refreshes; MaterializedCatalog provides it.
type MaterializedStatus struct {
	LastRefresh     time.Time // zero: none recorded
	LastDuration    time.Duration
	SourceSnapshots string // db.table=snapshot, ...
	DataLag         time.Duration
	NextRun         time.Time // zero: not scheduled
	LastError       string
	LastErrorAt     time.Time // zero: no error recorded
	Failures        int       // failed refreshes (or job runs) in a row
	Job             string    // the continuous job keeping the table ("": none)
}

// MaterializedCatalog is implemented by catalogs that schedule
// materialized tables.
type MaterializedCatalog interface {
	MaterializedStatus(ctx context.Context, t *tablestore.Table) (MaterializedStatus, error)
}

func (b *binder) bindCreateMaterialized(s *sql.CreateMaterializedTable) Statement {
	id := b.ident(s.Name)
	b.checkNewName(s.Name, id)
	def := b.materializedTable(id, s.As, s.Columns, s.Watermark, s.PrimaryKey, s.PrimaryKeyPos, s.PartitionedBy, s.With, s.Pos)
	def.Comment = s.Comment
	mode := s.RefreshMode
	fresh := time.Duration(0)
	if s.Freshness != nil {
		fresh = b.freshness(s.Freshness)
	}
	if mode == "" {
		mode = ModeContinuous // Flink's default without a freshness
		if s.Freshness != nil {
			mode = b.wantMode(id.Database, fresh)
		}
	}
	if s.Freshness == nil {
		fresh = defaultFreshness[mode]
	}
	def.Materialized.FreshnessMillis = fresh.Milliseconds()
	def.Materialized.DeclaredMode = s.RefreshMode
	def.Materialized.Mode, def.Materialized.FullReason = b.runMode(id, s.As, def, mode, s.RefreshMode != "", s.Pos)
	return &CreateMaterialized{Ident: id, Def: def, OrAlter: s.OrAlter, IfNotExists: s.IfNotExists}
}

// runMode is the mode a materialized table that asks for mode runs in:
// CONTINUOUS when its query can run as a continuous job (a job applies
// the query's changelog to the table by key), else FULL with the reason;
// a declared REFRESH_MODE = CONTINUOUS that cannot run fails instead.
func (b *binder) runMode(id tablestore.Ident, q *sql.Query, def tablestore.TableDef, mode string, declared bool, pos sql.Pos) (string, string) {
	if mode != ModeContinuous {
		return ModeFull, ""
	}
	why := b.continuousProblem(id, q, def)
	if why == "" {
		return ModeContinuous, ""
	}
	if declared {
		b.fail(pos, "REFRESH_MODE = CONTINUOUS: %s", why)
	}
	return ModeFull, why
}

// continuousProblem says why the query of materialized table id, defined
// by def, cannot run as a continuous job ("" when it can): it binds the
// query again with every table streamed, as the job will.
func (b *binder) continuousProblem(id tablestore.Ident, q *sql.Query, def tablestore.TableDef) (why string) {
	sub := &binder{ctx: b.ctx, cat: b.cat, opts: b.opts, params: map[int]*paramSlot{}, query: true}
	sub.opts.StreamAll = true
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(bindFail)
			if !ok {
				panic(r)
			}
			why = f.err.Error()
		}
	}()
	src := sub.finishQuery(sub.bindViewBody(id, q))
	return jobSinkProblem(id, def.PrimaryKey, def.Options, src)
}

// CheckContinuous checks that q, a materialized table's query bound with
// Options.StreamAll, can keep t by key ("" when it can).
func CheckContinuous(t *tablestore.Table, q *Query) string {
	if !q.Streaming() {
		return fmt.Sprintf("materialized table %s: its query reads no table", t.Ident())
	}
	return jobSinkProblem(t.Ident(), t.PrimaryKey(), t.Options(), q)
}

// materializedTable binds a materialized table's query in the table's
// database and derives its table definition: the query's columns (with
// what cols declares of them, declareColumns), the declared primary key or
// else the GROUP BY keys (when every one is an output column, and they
// include the partition columns and more), partitioning as declared, the
// WITH options and the watermark wm.
func (b *binder) materializedTable(id tablestore.Ident, q *sql.Query, cols []*sql.ColumnDef, wm *sql.Watermark, pk []string, pkPos sql.Pos, partitionedBy []string, with []*sql.Property, pos sql.Pos) tablestore.TableDef {
	n := b.bindViewBody(id, q)
	if b.maxParam > 0 {
		b.fail(q.Pos, "a materialized table's query cannot have parameters")
	}
	if reads(n, id) {
		// Each refresh (each commit of a continuous job) would change its
		// own input: a continuous job would never stop committing.
		b.fail(q.Pos, "the query of materialized table %s reads the table itself", id)
	}
	if via := b.readsThrough(n, id, map[tablestore.Ident]bool{id: true}); via != nil {
		// The same through other materialized tables or running
		// continuous jobs: their commits would feed each other forever.
		b.fail(q.Pos, "the query of materialized table %s reads the table itself through %s", id, chainText(via))
	}
	var fields []arrow.Field
	names := map[string]int{}
	for i, c := range n.Columns() {
		if _, dup := names[c.Name]; dup {
			b.fail(q.Pos, "the query of materialized table %s produces column %q twice; name its columns apart with AS", id, c.Name)
		}
		if c.Name == "" || strings.HasPrefix(c.Name, "_") {
			b.fail(q.Pos, "the query of materialized table %s produces column %d without a usable name (%q); name it with AS", id, i+1, c.Name)
		}
		names[c.Name] = i
		fields = append(fields, arrow.Field{Name: c.Name, Type: c.Type, Nullable: true})
	}
	for _, k := range pk {
		if _, ok := names[k]; !ok {
			b.fail(pkPos, "primary key column %q is not a column of the query", k)
		}
	}
	for _, k := range partitionedBy {
		if _, ok := names[k]; !ok {
			b.fail(pos, "partition column %q is not a column of the query", k)
		}
	}
	if pk == nil {
		pk = groupKeys(q)
		if pk == nil {
			pk = outputKey(b.optimize(n)) // join keys are found by the optimizer
		}
		// A key table's partition columns are part of its key, and it has
		// others besides.
		extra := 0
		for _, k := range pk {
			if !slices.Contains(partitionedBy, k) {
				extra++
			}
		}
		for _, k := range partitionedBy {
			if !slices.Contains(pk, k) {
				extra = 0
			}
		}
		if extra == 0 {
			pk = nil
		}
	}
	for _, k := range pk {
		fields[names[k]].Nullable = false
	}
	b.declareColumns(id, cols, fields, names)
	md := &tablestore.MaterializedDef{Query: sql.Format(q)}
	opts := map[string]string{}
	for _, p := range with {
		col, ok := strings.CutPrefix(p.Key, dateFormatterPrefix)
		if col, ok2 := strings.CutSuffix(col, dateFormatterSuffix); ok && ok2 {
			if !slices.Contains(partitionedBy, col) {
				b.fail(p.Pos, "%s: %q is not a partition column", p.Key, col)
			}
			if _, err := DateLayout(p.Value); err != nil {
				b.fail(p.Pos, "%s: %v", p.Key, err)
			}
			if md.DateFormatters == nil {
				md.DateFormatters = map[string]string{}
			}
			md.DateFormatters[col] = p.Value
			continue
		}
		opts[p.Key] = p.Value
	}
	// The watermark is kept as CREATE TABLE keeps it (which also refuses
	// its reserved options in WITH).
	b.createComputed(&sql.CreateTable{Watermark: wm, With: with}, fields, opts)
	return tablestore.TableDef{
		Schema:        arrow.NewSchema(fields, nil),
		PrimaryKey:    pk,
		PartitionKeys: partitionedBy,
		Options:       opts,
		Materialized:  md,
	}
}

// declareColumns applies a materialized table's column list to fields,
// the query's columns (names maps a name to its index). As in Flink, the
// list may name all of the query's columns or some of them; each must be
// one of the query's, with its type, in the query's order (the table's
// columns are the query's, so nothing is reordered or cast: a different
// type is cast in the query). NOT NULL is for primary key columns only
// (the others take what the query produces, NULLs included); a COMMENT is
// accepted and, as for CREATE TABLE, not kept.
func (b *binder) declareColumns(id tablestore.Ident, cols []*sql.ColumnDef, fields []arrow.Field, names map[string]int) {
	last, lastName := -1, ""
	for _, c := range cols {
		if c.Computed != nil {
			b.fail(c.Pos, "materialized table %s: computed column %q: the columns of a materialized table are its query's; compute it in the query", id, c.Name)
		}
		i, ok := names[c.Name]
		if !ok {
			b.fail(c.Pos, "materialized table %s: column %q is not a column of its query (the query produces %s)", id, c.Name, strings.Join(slices.Sorted(maps.Keys(names)), ", "))
		}
		if i == last {
			b.fail(c.Pos, "materialized table %s: column %q declared twice", id, c.Name)
		}
		if i < last {
			b.fail(c.Pos, "materialized table %s: column %q is declared after %q, but the query produces it before; declare columns in the query's order", id, c.Name, lastName)
		}
		last, lastName = i, c.Name
		typ, err := ArrowType(c.Type)
		if err != nil {
			panic(bindFail{err})
		}
		if !arrow.TypeEqual(typ, fields[i].Type) {
			b.fail(c.Type.Pos, "materialized table %s: column %q is declared %s, but the query produces %s; cast it in the query (CAST(... AS %s) AS %s)",
				id, c.Name, SQLTypeName(typ), SQLTypeName(fields[i].Type), SQLTypeName(typ), sql.QuoteIdent(c.Name))
		}
		if c.NotNull && fields[i].Nullable {
			b.fail(c.Pos, "materialized table %s: column %q: only primary key columns can be NOT NULL (a refresh writes what the query produces)", id, c.Name)
		}
	}
}

// outputKey returns the names of the shortest unique key of n's rows
// (the primary keys of the tables a join keeps, say) whose every column is
// an output column of n; nil when there is none.
func outputKey(n Node) []string {
	names := map[ColumnID]string{}
	for _, c := range n.Columns() {
		if _, dup := names[c.ID]; !dup {
			names[c.ID] = c.Name
		}
	}
	var best []string
next:
	for _, k := range uniqueKeys(n) {
		var key []string
		for _, id := range k {
			name, ok := names[id]
			if !ok || slices.Contains(key, name) {
				continue next
			}
			key = append(key, name)
		}
		if len(key) > 0 && (best == nil || len(key) < len(best)) {
			best = key
		}
	}
	return best
}

// groupKeys returns the output names of a query's GROUP BY keys, or nil
// unless it is one SELECT whose every key is a plain output column.
func groupKeys(q *sql.Query) []string {
	sel, ok := q.Body.(*sql.Select)
	if !ok || len(sel.GroupBy) == 0 {
		return nil
	}
	texts := make([]string, len(sel.Items)) // each item's expression as text
	for i, it := range sel.Items {
		texts[i] = sql.Format(it.Expr)
	}
	var keys []string
	for _, g := range sel.GroupBy {
		gk := sql.Format(g)
		name := ""
		for i, it := range sel.Items {
			if it.Alias != "" && (gk == texts[i] || gk == sql.Format(&sql.Ident{Parts: []string{it.Alias}})) {
				name = it.Alias
				break
			}
			if id, ok := it.Expr.(*sql.Ident); ok && it.Alias == "" && gk == texts[i] {
				name = id.Parts[len(id.Parts)-1]
				break
			}
		}
		if name == "" {
			return nil
		}
		keys = append(keys, name)
	}
	return keys
}

// freshness validates a FRESHNESS interval. A table may switch to FULL
// mode with its freshness, so the rule is Flink's for FULL mode for every
// table: whole units, SECOND/MINUTE a divisor of 60, HOUR of 24, DAY 1, so
// that runs fall on the same times every period.
func (b *binder) freshness(iv *sql.IntervalLiteral) time.Duration {
	n, err := strconv.Atoi(iv.Value)
	if err != nil || iv.Negative || n <= 0 || iv.ToUnit != "" {
		b.fail(iv.Pos, "FRESHNESS must be a positive whole number of one unit, as INTERVAL '30' SECOND; got %s", sql.Format(iv))
	}
	per := map[string]struct {
		d      time.Duration
		period int
	}{"SECOND": {time.Second, 60}, "MINUTE": {time.Minute, 60}, "HOUR": {time.Hour, 24}, "DAY": {24 * time.Hour, 1}}
	u, ok := per[iv.Unit]
	if !ok {
		b.fail(iv.Pos, "FRESHNESS unit must be SECOND, MINUTE, HOUR or DAY, got %s", iv.Unit)
	}
	if n > u.period || u.period%n != 0 {
		b.fail(iv.Pos, "FRESHNESS %s cannot be scheduled: in %ss it must divide %d", sql.Format(iv), strings.ToLower(iv.Unit), u.period)
	}
	return time.Duration(n) * u.d
}

// freshnessLiteral renders a stored freshness back as INTERVAL SQL.
func freshnessLiteral(ms int64) *sql.IntervalLiteral {
	d := time.Duration(ms) * time.Millisecond
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"DAY", 24 * time.Hour}, {"HOUR", time.Hour}, {"MINUTE", time.Minute}} {
		if d%u.d == 0 {
			return &sql.IntervalLiteral{Value: strconv.FormatInt(int64(d/u.d), 10), Unit: u.name}
		}
	}
	return &sql.IntervalLiteral{Value: strconv.FormatInt(int64(d/time.Second), 10), Unit: "SECOND"}
}

// materialized resolves name to a materialized table, failing at its
// position when it is not one.
func (b *binder) materialized(name *sql.Name) (*tablestore.Table, *tablestore.MaterializedDef) {
	t, _ := b.table(name)
	md := t.Materialized()
	if md == nil {
		b.fail(name.Pos, "%s is a table, not a materialized table", t.Ident())
	}
	return t, md
}

func (b *binder) bindAlterMaterialized(s *sql.AlterMaterializedTable) Statement {
	t, md := b.materialized(s.Name)
	a := &AlterMaterialized{Table: t, Action: s.Action}
	switch s.Action {
	case "SUSPEND":
		if md.Suspended {
			b.fail(s.Pos, "materialized table %s is already suspended", t.Ident())
		}
		a.Changes = []tablestore.SchemaChange{tablestore.SuspendMaterialized{Suspended: true}}
	case "RESUME":
		a.Changes = []tablestore.SchemaChange{tablestore.SuspendMaterialized{Suspended: false}}
		for _, p := range s.With {
			a.Changes = append(a.Changes, tablestore.SetOption{Key: p.Key, Value: p.Value})
		}
	case "REFRESH":
		if len(s.Partition) > 0 {
			a.Partition, a.PartitionFilter = b.partitionSpec(t, s.Partition)
		}
	case "SET FRESHNESS":
		fresh := b.freshness(s.Freshness)
		change := tablestore.SetFreshness{Millis: fresh.Milliseconds()}
		if md.DeclaredMode == "" {
			want := b.wantMode(t.Ident().Database, fresh)
			def := tablestore.TableDef{PrimaryKey: t.PrimaryKey(), Options: t.Options()}
			change.Mode, change.FullReason = b.runMode(t.Ident(), b.viewQuery(s.Pos, t.Ident(), md.Query), def, want, false, s.Pos)
		}
		a.Changes = []tablestore.SchemaChange{change}
	case "AS":
		var with []*sql.Property
		opts := userOptions(t.Options()) // the new query's columns replace the declared ones
		for _, k := range slices.Sorted(maps.Keys(opts)) {
			with = append(with, &sql.Property{Key: k, Value: opts[k]})
		}
		for col, f := range md.DateFormatters {
			with = append(with, &sql.Property{Key: dateFormatterPrefix + col + dateFormatterSuffix, Value: f})
		}
		def := b.materializedTable(t.Ident(), s.As, nil, nil, nil, s.Pos, t.PartitionKeys(), with, s.Pos)
		def.Comment = t.Comment()
		want := md.DeclaredMode
		if want == "" {
			want = b.wantMode(t.Ident().Database, time.Duration(md.FreshnessMillis)*time.Millisecond)
		}
		def.Materialized.Mode, def.Materialized.FullReason = b.runMode(t.Ident(), s.As, def, want, md.DeclaredMode != "", s.Pos)
		a.NewTable = &def
	}
	return a
}

// partitionSpec checks PARTITION (col = literal, ...) against t's
// partition columns: the values as partition paths hold them, and the
// filter on the query's rows as SQL.
func (b *binder) partitionSpec(t *tablestore.Table, pvs []*sql.PartitionValue) (map[string]string, string) {
	spec := map[string]string{}
	var conds []string
	schema := t.Schema()
	for _, pv := range pvs {
		if !slices.Contains(t.PartitionKeys(), pv.Column) {
			b.fail(pv.Pos, "%q is not a partition column of %s (partitioned by %s)", pv.Column, t.Ident(), strings.Join(t.PartitionKeys(), ", "))
		}
		if _, dup := spec[pv.Column]; dup {
			b.fail(pv.Pos, "partition column %q given twice", pv.Column)
		}
		v := b.constExpr(pv.Value, schema.Field(schema.FieldIndices(pv.Column)[0]).Type)
		spec[pv.Column] = v.Value.String()
		conds = append(conds, sql.Format(&sql.Ident{Parts: []string{pv.Column}})+" = "+sql.Format(pv.Value))
	}
	return spec, strings.Join(conds, " AND ")
}

// DateLayout converts a Java date pattern of
// partition.fields.<col>.date-formatter (yyyy, MM, dd, HH, mm, ss and
// separators) to a Go time layout.
func DateLayout(java string) (string, error) {
	var out strings.Builder
	for rest := java; rest != ""; {
		ok := false
		for _, r := range [][2]string{{"yyyy", "2006"}, {"MM", "01"}, {"dd", "02"}, {"HH", "15"}, {"mm", "04"}, {"ss", "05"}} {
			if tail, found := strings.CutPrefix(rest, r[0]); found {
				out.WriteString(r[1])
				rest, ok = tail, true
				break
			}
		}
		if ok {
			continue
		}
		c := rest[0]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			return "", fmt.Errorf("date pattern %q: only yyyy, MM, dd, HH, mm, ss and separators are supported", java)
		}
		out.WriteByte(c)
		rest = rest[1:]
	}
	return out.String(), nil
}

// refuseMaterializedWrite: refreshes are the only writer of a
// materialized table, so what a user writes would be overwritten anyway.
func (b *binder) refuseMaterializedWrite(pos sql.Pos, t *tablestore.Table, what string) {
	if t.Materialized() != nil {
		b.fail(pos, "%s: %s is a materialized table; only its refreshes write to it (ALTER MATERIALIZED TABLE %s REFRESH, or AS SELECT to change its query)", what, t.Ident(), t.Ident())
	}
}

// showMaterializedTables lists the materialized tables of a database.
func (b *binder) showMaterializedTables(s *sql.Show) Statement {
	db := b.cat.CurrentDatabase()
	if s.From != nil {
		if len(s.From.Parts) != 1 {
			b.fail(s.From.Pos, "expected a database name")
		}
		db = s.From.Parts[0]
	}
	names, err := b.cat.Tables(b.ctx, db)
	if err != nil {
		b.failWrap(s.Pos, err, "SHOW MATERIALIZED TABLES: %v", err)
	}
	var rows [][]string
	for _, n := range names {
		t, _, err := b.cat.Table(b.ctx, tablestore.Ident{Database: db, Table: n})
		if err != nil || t.Materialized() == nil || (s.Like != "" && !likeMatch(s.Like, n)) {
			continue // dropped meanwhile, or a plain table
		}
		rows = append(rows, []string{n})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return b.stringValues([]string{"table_name"}, rows)
}

// showCreateMaterialized renders a materialized table's DDL.
func (b *binder) showCreateMaterialized(name *sql.Name) Statement {
	t, md := b.materialized(name)
	id := t.Ident()
	q := b.viewQuery(name.Pos, id, md.Query)
	c := &sql.CreateMaterializedTable{
		Name: &sql.Name{Parts: []string{id.Database, id.Table}}, PrimaryKey: t.PrimaryKey(), Comment: t.Comment(),
		PartitionedBy: t.PartitionKeys(), Freshness: freshnessLiteral(md.FreshnessMillis), RefreshMode: md.DeclaredMode, As: q,
	}
	if len(c.PrimaryKey) == 0 {
		c.PrimaryKey = nil
	}
	if len(c.PartitionedBy) == 0 {
		c.PartitionedBy = nil
	}
	declaredColumns(t, c)
	opts := userOptions(t.Options())
	for col, f := range md.DateFormatters {
		opts[dateFormatterPrefix+col+dateFormatterSuffix] = f
	}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		c.With = append(c.With, &sql.Property{Key: k, Value: opts[k]})
	}
	return b.stringValues([]string{"create_materialized_table"}, [][]string{{sql.Format(c)}})
}

// declaredColumns renders, in c, the column list of materialized table t
// when it declares more than its key: every column and the watermark.
func declaredColumns(t *tablestore.Table, c *sql.CreateMaterializedTable) {
	_, wm := tableComputed(t.Options())
	if wm == nil {
		return
	}
	for _, f := range t.Schema().Fields() {
		c.Columns = append(c.Columns, &sql.ColumnDef{Name: f.Name, Type: typeNameOf(f.Type), NotNull: !f.Nullable})
	}
	e, _ := parseStoredExpr(wm.expr) // formatted from a parsed expression: it parses
	c.Watermark = &sql.Watermark{Column: wm.rowtime, Expr: e}
}

// describeMaterialized adds, after a materialized table's columns, rows
// that describe its refreshes (DESCRIBE EXTENDED, as Spark's: name in the
// first column, value in the second).
func (b *binder) describeMaterialized(t *tablestore.Table, rows [][]string) [][]string {
	md := t.Materialized()
	if md == nil {
		return rows
	}
	mode := md.Mode
	if md.FullReason != "" {
		mode += " (its freshness asks for CONTINUOUS, but " + md.FullReason + ")"
	}
	status := "ACTIVATED"
	if md.Suspended {
		status = "SUSPENDED"
	}
	add := func(k, v string) { rows = append(rows, []string{k, v, "", ""}) }
	add("# materialized table", "")
	add("query", md.Query)
	add("refresh_mode", mode)
	add("freshness", sql.Format(freshnessLiteral(md.FreshnessMillis)))
	add("status", status)
	mc, ok := b.cat.(MaterializedCatalog)
	if !ok {
		return rows
	}
	st, err := mc.MaterializedStatus(b.ctx, t)
	if err != nil {
		b.fail(sql.Pos{}, "materialized table %s: %v", t.Ident(), err)
	}
	at := func(ts time.Time) string {
		if ts.IsZero() {
			return ""
		}
		return ts.UTC().Format(time.RFC3339Nano)
	}
	add("last_refresh", at(st.LastRefresh))
	add("last_refresh_duration", durString(st.LastDuration, !st.LastRefresh.IsZero()))
	add("source_snapshots", st.SourceSnapshots)
	add("data_lag", durString(st.DataLag, !st.LastRefresh.IsZero()))
	add("next_run", at(st.NextRun))
	add("job", st.Job)
	add("last_error", st.LastError)
	add("last_error_at", at(st.LastErrorAt))
	add("failures", strconv.Itoa(st.Failures))
	return rows
}

func durString(d time.Duration, known bool) string {
	if !known {
		return ""
	}
	return fmt.Sprint(d.Round(time.Millisecond))
}

// bindDescribeExtended is DESCRIBE with, for a materialized table, its
// definition and refresh status.
func (b *binder) bindDescribeExtended(name *sql.Name) Statement {
	if q, ok := b.describeView(name); ok {
		return q
	}
	t, _ := b.table(name)
	return b.stringValues([]string{"name", "type", "null", "key"}, b.describeMaterialized(t, describeRows(t)))
}

// link is a table of a chain of tables each fed from the next: by its
// materialized query, or by job, the running continuous job writing it.
type link struct {
	id  tablestore.Ident
	job string
}

// chainText prints a chain: "materialized table a -> b" when materialized
// queries make all of it, else each table with what feeds it.
func chainText(links []link) string {
	if !slices.ContainsFunc(links, func(l link) bool { return l.job != "" }) {
		ids := make([]tablestore.Ident, len(links))
		for i, l := range links {
			ids[i] = l.id
		}
		return "materialized table " + IdentChain(ids)
	}
	s := make([]string, len(links))
	for i, l := range links {
		s[i] = "materialized table " + l.id.String()
		if l.job != "" {
			s[i] = fmt.Sprintf("%s (written by continuous job %s)", l.id, l.job)
		}
	}
	return strings.Join(s, " -> ")
}

// readsThrough returns the chain of tables through which plan n reads
// table id (nil: none): a table n scans that is fed from id, by its
// materialized query or by the running continuous job writing it
// (JobFeedCatalog), directly or through tables fed so in turn. seen holds
// the tables already followed. A query that no longer binds reads nothing
// here: its refreshes fail on their own.
func (b *binder) readsThrough(n Node, id tablestore.Ident, seen map[tablestore.Ident]bool) []link {
	return b.fedThrough(ScannedTables(n), id, seen)
}

func (b *binder) fedThrough(tables []*tablestore.Table, id tablestore.Ident, seen map[tablestore.Ident]bool) []link {
	type feed struct {
		job  string
		from []*tablestore.Table
	}
	for _, t := range tables {
		if seen[t.Ident()] {
			continue
		}
		seen[t.Ident()] = true
		var feeds []feed
		if md := t.Materialized(); md != nil {
			if src := b.bindMaterializedQuery(t.Ident(), md.Query); src != nil {
				feeds = append(feeds, feed{"", ScannedTables(src)})
			}
		}
		if job, from := b.jobFeed(t.Ident()); job != "" {
			feeds = append(feeds, feed{job, from})
		}
		for _, f := range feeds {
			if slices.ContainsFunc(f.from, func(s *tablestore.Table) bool { return s.Ident() == id }) {
				return []link{{t.Ident(), f.job}}
			}
		}
		for _, f := range feeds {
			if via := b.fedThrough(f.from, id, seen); via != nil {
				return append([]link{{t.Ident(), f.job}}, via...)
			}
		}
	}
	return nil
}

// jobFeed is the running continuous job writing table id and the tables
// it streams, from a catalog that runs jobs.
func (b *binder) jobFeed(id tablestore.Ident) (string, []*tablestore.Table) {
	jc, ok := b.cat.(JobFeedCatalog)
	if !ok {
		return "", nil
	}
	job, from, err := jc.JobFeed(b.ctx, id)
	if err != nil {
		b.failWrap(sql.Pos{}, err, "continuous jobs writing %s: %v", id, err)
	}
	return job, from
}

// bindMaterializedQuery binds the stored query of materialized table id,
// nil when it no longer binds.
func (b *binder) bindMaterializedQuery(id tablestore.Ident, text string) (n Node) {
	sub := &binder{ctx: b.ctx, cat: b.cat, opts: b.opts, params: map[int]*paramSlot{}, query: true}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bindFail); !ok {
				panic(r)
			}
			n = nil
		}
	}()
	return sub.bindViewBody(id, sub.viewQuery(sql.Pos{Line: 1, Col: 1}, id, text))
}

// ScannedTables are the tables plan n scans (views and CTEs included),
// each once, in plan order. Each shared CTE is walked once: CTEs reading
// CTEs twice make 2^n paths to one.
func ScannedTables(n Node) []*tablestore.Table {
	var out []*tablestore.Table
	seen := map[tablestore.Ident]bool{}
	ctes := map[*SharedCTE]bool{}
	var walk func(Node)
	walk = func(n Node) {
		switch x := n.(type) {
		case *ScanNode:
			if !seen[x.Table.Ident()] {
				seen[x.Table.Ident()] = true
				out = append(out, x.Table)
			}
		case *CTEScanNode:
			if !ctes[x.Shared] {
				ctes[x.Shared] = true
				walk(x.Shared.Root)
			}
		}
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	walk(n)
	return out
}

// IdentChain prints tables as a chain: a -> b -> c.
func IdentChain(ids []tablestore.Ident) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, " -> ")
}

// reads reports whether plan n scans table id (views and CTEs included).
func reads(n Node, id tablestore.Ident) bool {
	return slices.ContainsFunc(ScannedTables(n), func(t *tablestore.Table) bool { return t.Ident() == id })
}
