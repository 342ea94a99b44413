package tablestore

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Merge engines that build rows (partial-update, aggregation) instead of
// picking one version. Files hold partial merges that are merged again at
// compaction and read, so every engine here is associative: merging the
// versions of a key in one go or in any consecutive chunks (oldest first)
// gives the same row. A merged row's cells are references to input cells
// (no copy) or computed values appended to side arrays.

// Aggregate functions and whether they can retract (-U/-D input); product
// retracts on floating-point columns only (integer division would make
// partial merges disagree). Paimon lets last_non_null_value retract to
// NULL, but a NULL partial aggregate means "no value" when merged again,
// so the retracted value would come back from older files: refused here.
var aggFuncs = map[string]bool{
	"sum": true, "product": true, "count": true, "last_value": true, "last_non_null_value": false,
	"max": false, "min": false, "first_value": false, "first_non_null_value": false,
	"listagg": false, "bool_and": false, "bool_or": false,
}

// parseField parses one fields.* option.
func (m *mergeOptions) parseField(key, val string) error {
	rest := strings.TrimPrefix(key, optFieldsPrefix)
	set := func(mp *map[string]string, col, v string) {
		if *mp == nil {
			*mp = map[string]string{}
		}
		(*mp)[col] = v
	}
	if col, ok := strings.CutSuffix(rest, ".aggregate-function"); ok {
		if _, known := aggFuncs[val]; !known {
			return optErr(key, val, "want one of sum, product, count, max, min, last_value, last_non_null_value, first_value, first_non_null_value, listagg, bool_and, bool_or")
		}
		set(&m.aggFunc, col, val)
		return nil
	}
	if col, ok := strings.CutSuffix(rest, ".ignore-retract"); ok {
		switch val {
		case "true", "false":
		default:
			return optErr(key, val, "want true or false")
		}
		if m.ignoreRetract == nil {
			m.ignoreRetract = map[string]bool{}
		}
		m.ignoreRetract[col] = val == "true"
		return nil
	}
	if col, ok := strings.CutSuffix(rest, ".list-agg-delimiter"); ok {
		set(&m.delimiter, col, val)
		return nil
	}
	if cols, ok := strings.CutSuffix(rest, ".sequence-group"); ok {
		g := seqGroup{seq: splitCols(cols)}
		g.fields = slices.Clone(g.seq)
		for _, f := range splitCols(val) {
			if !slices.Contains(g.fields, f) {
				g.fields = append(g.fields, f)
			}
		}
		if len(g.seq) == 0 || len(g.fields) == len(g.seq) {
			return optErr(key, val, "want 'fields.<seq>[,<seq>].sequence-group' = '<col>[,<col>...]'")
		}
		m.groups = append(m.groups, g)
		return nil
	}
	return fmt.Errorf("%w: unknown table option %q", ErrInvalid, key)
}

// validateMerge checks the merge engine and changelog producer options
// against the schema.
func (o *tableOptions) validateMerge(s *tableSchema) error {
	m := &o.merge
	if !s.hasPK() {
		for _, k := range []string{optMergeEngine, optChangelogProducer, optIgnoreDelete, optPartialRemove, optAggRemove, optDefaultAgg} {
			if v, ok := s.Options[k]; ok && !(k == optMergeEngine && v == engineDeduplicate) && !(k == optChangelogProducer && v == producerNone) {
				return optErr(k, v, "needs a primary key")
			}
		}
		for k, v := range s.Options {
			if strings.HasPrefix(k, optFieldsPrefix) {
				return optErr(k, v, "needs a primary key")
			}
		}
		return nil
	}
	only := func(key, engine string) error {
		if v, ok := s.Options[key]; ok && m.engine != engine {
			return optErr(key, v, "applies to merge-engine "+engine+" only")
		}
		return nil
	}
	if err := only(optPartialRemove, enginePartialUpdate); err != nil {
		return err
	}
	if err := only(optAggRemove, engineAggregation); err != nil {
		return err
	}
	column := func(key, col string) (int, error) {
		i := s.fieldIndex(col)
		switch {
		case i < 0:
			return -1, optErr(key, s.Options[key], fmt.Sprintf("no column %q", col))
		case slices.Contains(s.PrimaryKeys, col):
			return -1, optErr(key, s.Options[key], fmt.Sprintf("column %q is part of the primary key", col))
		}
		return i, nil
	}
	if len(m.groups) > 0 && m.engine != enginePartialUpdate {
		return optErr(optMergeEngine, m.engine, "sequence groups need merge-engine partial-update")
	}
	inGroup := map[string]string{}
	for _, g := range m.groups {
		key := optFieldsPrefix + strings.Join(g.seq, ",") + ".sequence-group"
		for _, c := range g.fields {
			i, err := column(key, c)
			if err != nil {
				return err
			}
			if prev, dup := inGroup[c]; dup {
				return optErr(key, s.Options[key], fmt.Sprintf("column %q is already in sequence group %s", c, prev))
			}
			inGroup[c] = strings.Join(g.seq, ",")
			if slices.Contains(g.seq, c) && !seqGroupType(s.types[i]) {
				return optErr(key, s.Options[key], fmt.Sprintf("sequence column %q has type %s; want a number, date or timestamp", c, s.types[i]))
			}
		}
	}
	hasAgg := len(m.aggFunc) > 0 || m.defaultAgg != ""
	if hasAgg && m.engine != engineAggregation {
		return optErr(optMergeEngine, m.engine, "aggregate functions need merge-engine aggregation (per-field aggregation in partial-update is not supported yet)")
	}
	if m.defaultAgg != "" {
		if _, ok := aggFuncs[m.defaultAgg]; !ok {
			return optErr(optDefaultAgg, m.defaultAgg, "unknown aggregate function")
		}
	}
	for col, on := range m.ignoreRetract {
		key := optFieldsPrefix + col + ".ignore-retract"
		if _, err := column(key, col); err != nil {
			return err
		}
		if m.engine != engineAggregation {
			return optErr(key, s.Options[key], "applies to merge-engine aggregation only")
		}
		if fn := m.function(col); on && (fn == "first_value" || fn == "last_value") {
			// A merge of skipped rows only would store NULL, which merged
			// again reads as a value.
			return optErr(key, s.Options[key], fmt.Sprintf("column %q has aggregate-function %s, whose merged rows cannot tell an ignored retraction from a NULL value; use 'ignore-delete'", col, fn))
		}
	}
	if m.engine == engineAggregation {
		for i, f := range s.Fields {
			if slices.Contains(s.PrimaryKeys, f.Name) {
				if fn, ok := m.aggFunc[f.Name]; ok {
					return optErr(optFieldsPrefix+f.Name+".aggregate-function", fn, "a primary key column cannot be aggregated")
				}
				continue
			}
			fn := m.function(f.Name)
			key := optFieldsPrefix + f.Name + ".aggregate-function"
			if _, ok := m.aggFunc[f.Name]; !ok {
				key = optDefaultAgg
			}
			if err := aggTypeOK(fn, s.types[i]); err != nil {
				return optErr(key, fn, fmt.Sprintf("column %q: %v", f.Name, err))
			}
		}
		for col := range m.aggFunc {
			if s.fieldIndex(col) < 0 {
				key := optFieldsPrefix + col + ".aggregate-function"
				return optErr(key, s.Options[key], fmt.Sprintf("no column %q", col))
			}
		}
	}
	for col := range m.delimiter {
		key := optFieldsPrefix + col + ".list-agg-delimiter"
		if _, err := column(key, col); err != nil {
			return err
		}
		if m.engine != engineAggregation || m.function(col) != "listagg" {
			return optErr(key, s.Options[key], "applies to listagg columns only")
		}
	}
	if (m.engine == enginePartialUpdate || m.engine == engineAggregation) && len(o.sequenceField) > 0 {
		// Files hold partial merges in write order; ordering versions by
		// sequence.field across them would merge out of order.
		return optErr(optSequenceField, s.Options[optSequenceField], "merge-engine "+m.engine+" does not support sequence.field yet (partial-update: use sequence groups)")
	}
	if m.engine == engineFirstRow {
		if len(o.sequenceField) > 0 {
			return optErr(optSequenceField, s.Options[optSequenceField], "merge-engine first-row keeps the first row written and takes no sequence.field")
		}
		if o.producer != producerNone && o.producer != producerLookup {
			return optErr(optChangelogProducer, o.producer, "merge-engine first-row supports changelog-producer none or lookup")
		}
	}
	return nil
}

// function returns the aggregate function of a non-key column.
func (m *mergeOptions) function(col string) string {
	if fn, ok := m.aggFunc[col]; ok {
		return fn
	}
	if m.defaultAgg != "" {
		return m.defaultAgg
	}
	return "last_non_null_value" // Paimon's default
}

// retractBlocker returns a column whose function cannot take -U/-D rows
// (and its function), or "" when every column can.
func (m *mergeOptions) retractBlocker(sch *tableSchema) (string, string) {
	for _, f := range sch.Fields {
		if slices.Contains(sch.PrimaryKeys, f.Name) || m.ignoreRetract[f.Name] {
			continue
		}
		if fn := m.function(f.Name); !canRetract(fn, sch.types[sch.fieldIndex(f.Name)]) {
			return f.Name, fn
		}
	}
	return "", ""
}

func canRetract(fn string, dt arrow.DataType) bool {
	return aggFuncs[fn] && (fn != "product" || !isIntType(dt))
}

func seqGroupType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DECIMAL128, arrow.DATE32, arrow.TIMESTAMP:
		return true
	}
	return false
}

func isIntType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return true
	}
	return false
}

func aggTypeOK(fn string, dt arrow.DataType) error {
	numeric := isIntType(dt) || dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64
	switch fn {
	case "sum", "product":
		if !numeric {
			return fmt.Errorf("%s needs an integer or floating-point column, not %s", fn, dt)
		}
	case "count":
		if !isIntType(dt) {
			return fmt.Errorf("count needs an integer column, not %s", dt)
		}
	case "listagg":
		if dt.ID() != arrow.STRING {
			return fmt.Errorf("listagg needs a string column, not %s", dt)
		}
	case "bool_and", "bool_or":
		if dt.ID() != arrow.BOOL {
			return fmt.Errorf("%s needs a boolean column, not %s", fn, dt)
		}
	case "max", "min":
		if isNested(dt) {
			return fmt.Errorf("%s needs an ordered column, not %s", fn, dt)
		}
	}
	return nil
}

// CheckRowLevel reports whether UPDATE (update true) or DELETE statements
// mean on the table what they say, and refuses them where they would not,
// as Paimon does: an UPDATE writes the new rows as upserts, which only
// deduplicate and partial-update keep (aggregation would fold them into
// the old values, first-row would keep the old row); a DELETE writes -D
// rows, which remove the row only with deduplicate (without
// ignore-delete), partial-update with partial-update.remove-record-on-delete
// and aggregation with aggregation.remove-record-on-delete. Append tables
// take both (the table is rewritten).
func (t *Table) CheckRowLevel(update bool) error {
	sch := t.schema
	if !sch.hasPK() {
		return nil
	}
	m := &sch.opts.merge
	switch {
	case update:
		if m.engine != engineDeduplicate && m.engine != enginePartialUpdate {
			return fmt.Errorf("%w: UPDATE on table %s: merge-engine %s would merge the new rows into the old ones instead of replacing them (only deduplicate and partial-update take UPDATE)",
				ErrInvalid, t.st.id, m.engine)
		}
	case m.ignoreDelete:
		return fmt.Errorf("%w: DELETE on table %s, which has 'ignore-delete' = 'true' and would drop the deletes", ErrInvalid, t.st.id)
	case m.engine == enginePartialUpdate || m.engine == engineAggregation:
		if !m.removeOnDelete {
			return fmt.Errorf("%w: DELETE on table %s: merge-engine %s would not remove the rows; set '%s.remove-record-on-delete' = 'true'",
				ErrInvalid, t.st.id, m.engine, m.engine)
		}
	case m.engine == engineFirstRow:
		return fmt.Errorf("%w: DELETE on table %s: merge-engine first-row keeps the first row and takes no deletes", ErrInvalid, t.st.id)
	}
	return nil
}

// checkInputKinds refuses retracting input the merge engine cannot take,
// naming the table, column and function.
func checkInputKinds(id Ident, sch *tableSchema, kinds []RowKind) error {
	m := &sch.opts.merge
	if m.ignoreDelete || !sch.hasPK() {
		return nil
	}
	var col, fn string
	if m.engine == engineAggregation {
		col, fn = m.retractBlocker(sch)
	}
	for i, k := range kinds {
		if !k.IsRetract() {
			continue
		}
		switch m.engine {
		case engineFirstRow:
			return fmt.Errorf("%w: row %d is %s but table %s has merge-engine first-row, which keeps the first row and takes no deletes; set 'ignore-delete' = 'true' to drop them", ErrInvalid, i, k, id)
		case enginePartialUpdate:
			if len(m.groups) == 0 && !m.removeOnDelete {
				return fmt.Errorf("%w: row %d is %s but table %s has merge-engine partial-update without 'ignore-delete', 'partial-update.remove-record-on-delete' or sequence groups to say what a delete means", ErrInvalid, i, k, id)
			}
		case engineAggregation:
			if k == Delete && m.removeOnDelete {
				continue
			}
			if col != "" {
				return fmt.Errorf("%w: row %d is %s but column %q of table %s has aggregate-function %s, which cannot retract; set 'fields.%s.ignore-retract' = 'true' or 'ignore-delete' = 'true'", ErrInvalid, i, k, col, id, fn, col)
			}
		}
	}
	return nil
}

// mergeRows exposes the versions of keys to a rowMerger. Positions are the
// table columns available (schema indexes in cols).
type mergeRows struct {
	arrs func(p int) []arrow.Array // the arrays of position p, by source
	seq  func(rowRef) int64
	kind func(rowRef) RowKind
}

// sideSrc marks a cell computed by the merge (a row of the side array).
const sideSrc = int32(1<<31 - 1)

// mergeOut collects merged rows as cell references per position.
type mergeOut struct {
	types []arrow.DataType // per position
	seqs  []int64
	kinds []int8
	cells [][]rowRef
	side  []array.Builder
}

func newMergeOut(types []arrow.DataType) *mergeOut {
	return &mergeOut{types: types, cells: make([][]rowRef, len(types)), side: make([]array.Builder, len(types))}
}

func (o *mergeOut) rows() int { return len(o.seqs) }

// addRow emits input row r whole.
func (o *mergeOut) addRow(r rowRef, seq int64, kind int8) {
	o.seqs = append(o.seqs, seq)
	o.kinds = append(o.kinds, kind)
	for p := range o.cells {
		o.cells[p] = append(o.cells[p], r)
	}
}

// pop drops the last row (side cells it used stay unreferenced).
func (o *mergeOut) pop() {
	n := len(o.seqs) - 1
	o.seqs, o.kinds = o.seqs[:n], o.kinds[:n]
	for p := range o.cells {
		o.cells[p] = o.cells[p][:n]
	}
}

// sideBuilder returns position p's side builder after referencing its next
// value from the current row; the caller appends exactly one value.
func (o *mergeOut) sideBuilder(mem memory.Allocator, p int) array.Builder {
	if o.side[p] == nil {
		o.side[p] = array.NewBuilder(mem, o.types[p])
	}
	o.cells[p] = append(o.cells[p], rowRef{sideSrc, int32(o.side[p].Len())})
	return o.side[p]
}

// gatherColumn builds position p from srcs plus its side values, and
// resets p's cells.
func (o *mergeOut) gatherColumn(mem memory.Allocator, p int, srcs []arrow.Array) arrow.Array {
	refs := o.cells[p]
	if o.side[p] != nil {
		side := o.side[p].NewArray()
		defer side.Release()
		srcs = append(slices.Clip(srcs), side)
		for i := range refs {
			if refs[i].src == sideSrc {
				refs[i].src = int32(len(srcs) - 1)
			}
		}
	}
	out := gather(mem, o.types[p], srcs, refs)
	o.cells[p] = refs[:0]
	return out
}

// sysColumns returns the seq and kind arrays of the rows and resets them.
func (o *mergeOut) sysColumns(mem memory.Allocator) (arrow.Array, arrow.Array) {
	s, k := int64Array(mem, o.seqs), int8Array(mem, o.kinds)
	o.seqs, o.kinds = o.seqs[:0], o.kinds[:0]
	return s, k
}

func (o *mergeOut) release() {
	for _, b := range o.side {
		if b != nil {
			b.Release()
		}
	}
	clear(o.side)
}

// rowMerger builds the merged row of the versions of one key.
type rowMerger interface {
	// merge appends the merge of vers (oldest first) to out, or nothing
	// when the versions change nothing. raw: vers are write input (flush),
	// not merged rows.
	merge(in *mergeRows, vers []rowRef, raw bool, out *mergeOut) error
}

// none marks a cell that is NULL in the merged row.
var none = rowRef{-1, -1}

// newRowMerger returns the builder of the table's merge engine over the
// positions cols (schema indexes), or nil for engines that pick a row.
func newRowMerger(id Ident, sch *tableSchema, cols []int, mem memory.Allocator) rowMerger {
	m := &sch.opts.merge
	b := builderBase{id: id, mem: mem, sch: sch, cols: cols, cell: make([]rowRef, len(cols))}
	for p, c := range cols {
		if slices.Contains(sch.PrimaryKeys, sch.Fields[c].Name) {
			b.keys = append(b.keys, p)
		}
	}
	switch m.engine {
	case enginePartialUpdate:
		pm := &partialMerge{builderBase: b, group: make([]int, len(cols))}
		for p := range cols {
			pm.group[p] = -1
		}
		for gi, g := range m.groups {
			var pg posGroup
			for _, f := range g.fields {
				p := slices.Index(cols, sch.fieldIndex(f))
				if p < 0 {
					continue
				}
				pm.group[p] = gi
				if slices.Contains(g.seq, f) {
					pg.seq = append(pg.seq, p)
				} else {
					pg.fields = append(pg.fields, p)
				}
			}
			pg.all = append(slices.Clone(pg.seq), pg.fields...)
			pm.groups = append(pm.groups, pg)
		}
		return pm
	case engineAggregation:
		am := &aggMerge{builderBase: b, fn: make([]string, len(cols)), ignoreRetract: make([]bool, len(cols)), delim: make([]string, len(cols))}
		for p, c := range cols {
			name := sch.Fields[c].Name
			am.fn[p] = m.function(name)
			am.ignoreRetract[p] = m.ignoreRetract[name]
			am.delim[p] = ","
			if d, ok := m.delimiter[name]; ok {
				am.delim[p] = d
			}
		}
		return am
	}
	return nil
}

// mergeNeeds adds to need (schema indexes) the columns the merge of the
// columns in need depends on: the seq columns of their sequence groups.
func mergeNeeds(sch *tableSchema, need []int) []int {
	for _, g := range sch.opts.merge.groups {
		used := false
		for _, f := range g.fields {
			used = used || slices.Contains(need, sch.fieldIndex(f))
		}
		if !used {
			continue
		}
		for _, c := range g.seq {
			if i := sch.fieldIndex(c); !slices.Contains(need, i) {
				need = append(need, i)
			}
		}
	}
	return need
}

type builderBase struct {
	id   Ident
	mem  memory.Allocator
	sch  *tableSchema
	cols []int
	keys []int    // key positions
	cell []rowRef // scratch: the merged row
	a, b []byte   // scratch: normalized cells
}

// cmpCells compares two cells of position p (nulls first).
func (bb *builderBase) cmpCells(in *mergeRows, p int, x, y rowRef) int {
	arrs := in.arrs(p)
	bb.a = appendNormalized(bb.a[:0], arrs[x.src], int(x.row))
	bb.b = appendNormalized(bb.b[:0], arrs[y.src], int(y.row))
	return bytes.Compare(bb.a, bb.b)
}

// emit appends the merged row in bb.cell (key cells from last).
func (bb *builderBase) emit(in *mergeRows, last rowRef, kind RowKind, out *mergeOut) {
	for _, p := range bb.keys {
		bb.cell[p] = last
	}
	out.seqs = append(out.seqs, in.seq(last))
	out.kinds = append(out.kinds, int8(kind))
	for p, r := range bb.cell {
		if r == none {
			out.sideBuilder(bb.mem, p).AppendNull()
			continue
		}
		out.cells[p] = append(out.cells[p], r)
	}
}

// partialMerge is partial-update: non-null fields overwrite; the fields of
// a sequence group update together (NULLs included) from rows whose group
// sequence is at least the stored one.
type partialMerge struct {
	builderBase
	group  []int // per position: sequence group, -1 for none
	groups []posGroup
}

// posGroup is a sequence group by positions; all is seq then fields.
type posGroup struct{ seq, fields, all []int }

func (m *partialMerge) merge(in *mergeRows, vers []rowRef, raw bool, out *mergeOut) error {
	opts := &m.sch.opts.merge
	for p := range m.cell {
		m.cell[p] = none
	}
	deleted, reset, changed := false, false, false
	for _, v := range vers {
		k := in.kind(v)
		if k.IsRetract() {
			switch {
			case len(opts.groups) > 0:
				// Retract the group's fields, remembering its sequence.
				for _, g := range m.groups {
					if m.newer(in, g, v) {
						for _, p := range g.seq {
							m.cell[p] = v
						}
						for _, p := range g.fields {
							m.cell[p] = none
						}
					}
				}
				changed = true
			case opts.removeOnDelete && k == Delete:
				for p := range m.cell {
					m.cell[p] = none
				}
				deleted, reset, changed = true, true, true
			case opts.removeOnDelete:
				// -U: the +U that follows carries the change.
			default:
				return fmt.Errorf("%w: table %s has merge-engine partial-update and a %s row it cannot apply", ErrInvalid, m.id, k)
			}
			continue
		}
		if isReset(opts, k, raw) {
			for p := range m.cell {
				m.cell[p] = none
			}
			reset = true
		}
		deleted, changed = false, true
		for p, g := range m.group {
			if g < 0 && !in.arrs(p)[v.src].IsNull(int(v.row)) {
				m.cell[p] = v
			}
		}
		for _, g := range m.groups {
			if m.newer(in, g, v) {
				for _, p := range g.all {
					m.cell[p] = v
				}
			}
		}
	}
	if !changed {
		return nil
	}
	m.emit(in, vers[len(vers)-1], mergedKind(deleted, reset), out)
	return nil
}

// isReset reports whether a merged row of kind k replaces everything
// before it: with remove-record-on-delete, a merged row that follows a -D
// is written as +U, so merging it again drops the versions before the
// delete (write input +U rows are ordinary updates).
func isReset(opts *mergeOptions, k RowKind, raw bool) bool {
	return opts.removeOnDelete && !raw && k == UpdateAfter
}

// mergedKind is the kind of a merged row: -D when the key ends deleted,
// +U when it was deleted and written again (see isReset), else +I.
func mergedKind(deleted, reset bool) RowKind {
	switch {
	case deleted:
		return Delete
	case reset:
		return UpdateAfter
	}
	return Insert
}

// newer reports whether row v updates group g: its sequence is not NULL
// and at least the stored one.
func (m *partialMerge) newer(in *mergeRows, g posGroup, v rowRef) bool {
	if len(g.seq) == 0 {
		return false
	}
	for _, p := range g.seq {
		if in.arrs(p)[v.src].IsNull(int(v.row)) {
			return false
		}
	}
	if m.cell[g.seq[0]] == none {
		return true
	}
	for _, p := range g.seq {
		if c := m.cmpCells(in, p, v, m.cell[p]); c != 0 {
			return c > 0
		}
	}
	return true
}

// aggMerge is the aggregation engine: each non-key column folds its
// versions with its aggregate function.
type aggMerge struct {
	builderBase
	fn            []string
	ignoreRetract []bool
	delim         []string
	sb            strings.Builder
}

func (m *aggMerge) merge(in *mergeRows, vers []rowRef, raw bool, out *mergeOut) error {
	opts := &m.sch.opts.merge
	last := vers[len(vers)-1]
	kind := Insert
	if opts.removeOnDelete {
		// A -D removes everything before it (see isReset).
		for i := len(vers) - 1; i >= 0; i-- {
			k := in.kind(vers[i])
			if k == Delete && i == len(vers)-1 {
				for p := range m.cell {
					m.cell[p] = none
				}
				m.emit(in, last, Delete, out)
				return nil
			}
			if k == Delete || isReset(opts, k, raw) {
				kind = UpdateAfter
				if k == Delete {
					i++
				}
				vers = vers[i:]
				break
			}
		}
	}
	out.seqs = append(out.seqs, in.seq(last))
	out.kinds = append(out.kinds, int8(kind))
	for p := range m.cols {
		if slices.Contains(m.keys, p) {
			out.cells[p] = append(out.cells[p], last)
			continue
		}
		if err := m.fold(in, p, vers, raw, out); err != nil {
			out.pop()
			return err
		}
	}
	return nil
}

// fold aggregates position p over vers and appends the cell to out.
func (m *aggMerge) fold(in *mergeRows, p int, vers []rowRef, raw bool, out *mergeOut) error {
	arrs := in.arrs(p)
	fn := m.fn[p]
	at := func(r rowRef) (arrow.Array, int) { return arrs[r.src], int(r.row) }
	ref := func(r rowRef) {
		if r == none {
			out.sideBuilder(m.mem, p).AppendNull()
			return
		}
		out.cells[p] = append(out.cells[p], r)
	}
	retracts := func(r rowRef) (skip, retract bool, err error) {
		if !in.kind(r).IsRetract() {
			return false, false, nil
		}
		if m.ignoreRetract[p] {
			return true, false, nil
		}
		if !canRetract(fn, m.sch.types[m.cols[p]]) {
			return true, false, fmt.Errorf("%w: table %s: column %q has aggregate-function %s, which cannot retract a %s row", ErrInvalid, m.id, m.sch.Fields[m.cols[p]].Name, fn, in.kind(r))
		}
		return false, true, nil
	}
	switch fn {
	case "last_value", "last_non_null_value", "first_value", "first_non_null_value", "max", "min":
		cur := none
		for _, v := range vers {
			skip, retract, err := retracts(v)
			if err != nil {
				return err
			}
			if skip {
				continue
			}
			a, i := at(v)
			null := a.IsNull(i)
			switch fn {
			case "last_value":
				cur = v
				if retract {
					cur = none
				}
			case "last_non_null_value":
				if !null {
					cur = v
				}
			case "first_value":
				ref(v)
				return nil
			case "first_non_null_value":
				if !null {
					ref(v)
					return nil
				}
			case "max", "min":
				if null {
					continue
				}
				if cur == none {
					cur = v
				} else if c := m.cmpCells(in, p, v, cur); (fn == "max" && c > 0) || (fn == "min" && c < 0) {
					cur = v
				}
			}
		}
		ref(cur)
		return nil
	case "sum", "product", "count":
		isFloat := !isIntType(m.sch.types[m.cols[p]])
		var iacc int64
		var facc float64
		set := false
		for _, v := range vers {
			skip, retract, err := retracts(v)
			if err != nil {
				return err
			}
			if skip {
				continue
			}
			a, i := at(v)
			if fn == "count" && raw {
				// Write input counts its non-null values; merged rows
				// hold counts.
				if a.IsNull(i) {
					continue
				}
				d := int64(1)
				if retract {
					d = -1
				}
				iacc += d
				set = true
				continue
			}
			if a.IsNull(i) {
				continue
			}
			iv, fv := numAt(a, i)
			switch {
			case fn == "product" && retract:
				if !set {
					facc = 1
				}
				facc /= fv
			case fn == "product":
				if !set {
					iacc, facc = 1, 1
				}
				iacc, facc = iacc*iv, facc*fv
			case retract:
				iacc, facc = iacc-iv, facc-fv
			default:
				iacc, facc = iacc+iv, facc+fv
			}
			set = true
		}
		b := out.sideBuilder(m.mem, p)
		switch {
		case !set:
			b.AppendNull()
		case isFloat:
			appendFloatValue(b, facc)
		default:
			appendIntValue(b, iacc)
		}
		return nil
	case "listagg", "bool_and", "bool_or":
		m.sb.Reset()
		set, acc := false, fn == "bool_and"
		for _, v := range vers {
			if skip, _, err := retracts(v); err != nil || skip {
				if err != nil {
					return err
				}
				continue
			}
			a, i := at(v)
			if a.IsNull(i) {
				continue
			}
			switch fn {
			case "listagg":
				if set {
					m.sb.WriteString(m.delim[p])
				}
				m.sb.WriteString(a.(*array.String).Value(i))
			case "bool_and":
				acc = acc && a.(*array.Boolean).Value(i)
			default:
				acc = acc || a.(*array.Boolean).Value(i)
			}
			set = true
		}
		b := out.sideBuilder(m.mem, p)
		switch {
		case !set:
			b.AppendNull()
		case fn == "listagg":
			b.(*array.StringBuilder).Append(m.sb.String())
		default:
			b.(*array.BooleanBuilder).Append(acc)
		}
		return nil
	}
	return fmt.Errorf("%w: table %s: unknown aggregate function %q", ErrInvalid, m.id, fn)
}

// numAt reads a numeric cell as an integer and a float.
func numAt(a arrow.Array, i int) (int64, float64) {
	switch a := a.(type) {
	case *array.Int8:
		return int64(a.Value(i)), float64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i)), float64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i)), float64(a.Value(i))
	case *array.Int64:
		return a.Value(i), float64(a.Value(i))
	case *array.Float32:
		return int64(a.Value(i)), float64(a.Value(i))
	case *array.Float64:
		return int64(a.Value(i)), a.Value(i)
	}
	panic("tablestore: numAt: unsupported type " + a.DataType().String())
}

func appendIntValue(b array.Builder, v int64) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(v))
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int64Builder:
		b.Append(v)
	default:
		panic("tablestore: appendIntValue: unsupported builder")
	}
}

func appendFloatValue(b array.Builder, v float64) {
	switch b := b.(type) {
	case *array.Float32Builder:
		b.Append(float32(v))
	case *array.Float64Builder:
		b.Append(v)
	default:
		panic("tablestore: appendFloatValue: unsupported builder")
	}
}
