package tablestore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flightd/flightd/tablestore/merge"
)

// The merge engine's table options: parsed and checked against the schema
// here, where the option keys are; tablestore/merge merges by them.

// parseMergeField parses one fields.* option into m.
func parseMergeField(m *merge.Options, key, val string) error {
	rest := strings.TrimPrefix(key, optFieldsPrefix)
	set := func(mp *map[string]string, col, v string) {
		if *mp == nil {
			*mp = map[string]string{}
		}
		(*mp)[col] = v
	}
	if col, ok := strings.CutSuffix(rest, ".aggregate-function"); ok {
		if !merge.IsFunction(val) {
			return optErr(key, val, "want one of sum, product, count, max, min, last_value, last_non_null_value, first_value, first_non_null_value, listagg, bool_and, bool_or")
		}
		set(&m.AggFunc, col, val)
		return nil
	}
	if col, ok := strings.CutSuffix(rest, ".ignore-retract"); ok {
		switch val {
		case "true", "false":
		default:
			return optErr(key, val, "want true or false")
		}
		if m.IgnoreRetract == nil {
			m.IgnoreRetract = map[string]bool{}
		}
		m.IgnoreRetract[col] = val == "true"
		return nil
	}
	if col, ok := strings.CutSuffix(rest, ".list-agg-delimiter"); ok {
		set(&m.Delimiter, col, val)
		return nil
	}
	if cols, ok := strings.CutSuffix(rest, ".sequence-group"); ok {
		g := merge.SequenceGroup{Seq: splitCols(cols)}
		g.Fields = slices.Clone(g.Seq)
		for _, f := range splitCols(val) {
			if !slices.Contains(g.Fields, f) {
				g.Fields = append(g.Fields, f)
			}
		}
		if len(g.Seq) == 0 || len(g.Fields) == len(g.Seq) {
			return optErr(key, val, "want 'fields.<seq>[,<seq>].sequence-group' = '<col>[,<col>...]'")
		}
		m.Groups = append(m.Groups, g)
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
			if v, ok := s.Options[k]; ok && !(k == optMergeEngine && v == merge.Deduplicate) && !(k == optChangelogProducer && v == producerNone) {
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
		if v, ok := s.Options[key]; ok && m.Engine != engine {
			return optErr(key, v, "applies to merge-engine "+engine+" only")
		}
		return nil
	}
	if err := only(optPartialRemove, merge.PartialUpdate); err != nil {
		return err
	}
	if err := only(optAggRemove, merge.Aggregation); err != nil {
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
	if len(m.Groups) > 0 && m.Engine != merge.PartialUpdate {
		return optErr(optMergeEngine, m.Engine, "sequence groups need merge-engine partial-update")
	}
	inGroup := map[string]string{}
	for _, g := range m.Groups {
		key := optFieldsPrefix + strings.Join(g.Seq, ",") + ".sequence-group"
		for _, c := range g.Fields {
			i, err := column(key, c)
			if err != nil {
				return err
			}
			if prev, dup := inGroup[c]; dup {
				return optErr(key, s.Options[key], fmt.Sprintf("column %q is already in sequence group %s", c, prev))
			}
			inGroup[c] = strings.Join(g.Seq, ",")
			if slices.Contains(g.Seq, c) && !merge.SequenceType(s.types[i]) {
				return optErr(key, s.Options[key], fmt.Sprintf("sequence column %q has type %s; want a number, date or timestamp", c, s.types[i]))
			}
		}
	}
	hasAgg := len(m.AggFunc) > 0 || m.DefaultAgg != ""
	if hasAgg && m.Engine != merge.Aggregation {
		return optErr(optMergeEngine, m.Engine, "aggregate functions need merge-engine aggregation (per-field aggregation in partial-update is not supported yet)")
	}
	if m.DefaultAgg != "" {
		if !merge.IsFunction(m.DefaultAgg) {
			return optErr(optDefaultAgg, m.DefaultAgg, "unknown aggregate function")
		}
	}
	for col, on := range m.IgnoreRetract {
		key := optFieldsPrefix + col + ".ignore-retract"
		if _, err := column(key, col); err != nil {
			return err
		}
		if m.Engine != merge.Aggregation {
			return optErr(key, s.Options[key], "applies to merge-engine aggregation only")
		}
		if fn := m.Function(col); on && (fn == "first_value" || fn == "last_value") {
			// A merge of skipped rows only would store NULL, which merged
			// again reads as a value.
			return optErr(key, s.Options[key], fmt.Sprintf("column %q has aggregate-function %s, whose merged rows cannot tell an ignored retraction from a NULL value; use 'ignore-delete'", col, fn))
		}
	}
	if m.Engine == merge.Aggregation {
		for i, f := range s.Fields {
			if slices.Contains(s.PrimaryKeys, f.Name) {
				if fn, ok := m.AggFunc[f.Name]; ok {
					return optErr(optFieldsPrefix+f.Name+".aggregate-function", fn, "a primary key column cannot be aggregated")
				}
				continue
			}
			fn := m.Function(f.Name)
			key := optFieldsPrefix + f.Name + ".aggregate-function"
			if _, ok := m.AggFunc[f.Name]; !ok {
				key = optDefaultAgg
			}
			if err := merge.CheckFunction(fn, s.types[i]); err != nil {
				return optErr(key, fn, fmt.Sprintf("column %q: %v", f.Name, err))
			}
		}
		for col := range m.AggFunc {
			if s.fieldIndex(col) < 0 {
				key := optFieldsPrefix + col + ".aggregate-function"
				return optErr(key, s.Options[key], fmt.Sprintf("no column %q", col))
			}
		}
	}
	for col := range m.Delimiter {
		key := optFieldsPrefix + col + ".list-agg-delimiter"
		if _, err := column(key, col); err != nil {
			return err
		}
		if m.Engine != merge.Aggregation || m.Function(col) != "listagg" {
			return optErr(key, s.Options[key], "applies to listagg columns only")
		}
	}
	if (m.Engine == merge.PartialUpdate || m.Engine == merge.Aggregation) && len(o.sequenceField) > 0 {
		// Files hold partial merges in write order; ordering versions by
		// sequence.field across them would merge out of order.
		return optErr(optSequenceField, s.Options[optSequenceField], "merge-engine "+m.Engine+" does not support sequence.field yet (partial-update: use sequence groups)")
	}
	if m.Engine == merge.FirstRow {
		if len(o.sequenceField) > 0 {
			return optErr(optSequenceField, s.Options[optSequenceField], "merge-engine first-row keeps the first row written and takes no sequence.field")
		}
		if o.producer != producerNone && o.producer != producerLookup {
			return optErr(optChangelogProducer, o.producer, "merge-engine first-row supports changelog-producer none or lookup")
		}
	}
	return nil
}

// retractBlocker returns a column whose function cannot take -U/-D rows
// (and its function), or "" when every column can.
func retractBlocker(m *merge.Options, sch *tableSchema) (string, string) {
	for _, f := range sch.Fields {
		if slices.Contains(sch.PrimaryKeys, f.Name) || m.IgnoreRetract[f.Name] {
			continue
		}
		if fn := m.Function(f.Name); !merge.CanRetract(fn, sch.types[sch.fieldIndex(f.Name)]) {
			return f.Name, fn
		}
	}
	return "", ""
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
		if m.Engine != merge.Deduplicate && m.Engine != merge.PartialUpdate {
			return fmt.Errorf("%w: UPDATE on table %s: merge-engine %s would merge the new rows into the old ones instead of replacing them (only deduplicate and partial-update take UPDATE)",
				ErrInvalid, t.st.id, m.Engine)
		}
	case m.IgnoreDelete:
		return fmt.Errorf("%w: DELETE on table %s, which has 'ignore-delete' = 'true' and would drop the deletes", ErrInvalid, t.st.id)
	case m.Engine == merge.PartialUpdate || m.Engine == merge.Aggregation:
		if !m.RemoveOnDelete {
			return fmt.Errorf("%w: DELETE on table %s: merge-engine %s would not remove the rows; set '%s.remove-record-on-delete' = 'true'",
				ErrInvalid, t.st.id, m.Engine, m.Engine)
		}
	case m.Engine == merge.FirstRow:
		return fmt.Errorf("%w: DELETE on table %s: merge-engine first-row keeps the first row and takes no deletes", ErrInvalid, t.st.id)
	}
	return nil
}

// checkInputKinds refuses retracting input the merge engine cannot take,
// naming the table, column and function.
func checkInputKinds(id Ident, sch *tableSchema, kinds []RowKind) error {
	m := &sch.opts.merge
	if m.IgnoreDelete || !sch.hasPK() {
		return nil
	}
	var col, fn string
	if m.Engine == merge.Aggregation {
		col, fn = retractBlocker(m, sch)
	}
	for i, k := range kinds {
		if !k.IsRetract() {
			continue
		}
		switch m.Engine {
		case merge.FirstRow:
			return fmt.Errorf("%w: row %d is %s but table %s has merge-engine first-row, which keeps the first row and takes no deletes; set 'ignore-delete' = 'true' to drop them", ErrInvalid, i, k, id)
		case merge.PartialUpdate:
			if len(m.Groups) == 0 && !m.RemoveOnDelete {
				return fmt.Errorf("%w: row %d is %s but table %s has merge-engine partial-update without 'ignore-delete', 'partial-update.remove-record-on-delete' or sequence groups to say what a delete means", ErrInvalid, i, k, id)
			}
		case merge.Aggregation:
			if k == Delete && m.RemoveOnDelete {
				continue
			}
			if col != "" {
				return fmt.Errorf("%w: row %d is %s but column %q of table %s has aggregate-function %s, which cannot retract; set 'fields.%s.ignore-retract' = 'true' or 'ignore-delete' = 'true'", ErrInvalid, i, k, col, id, fn, col)
			}
		}
	}
	return nil
}

// mergeNeeds adds to need (schema indexes) the columns the merge of the
// columns in need depends on: the seq columns of their sequence groups.
func mergeNeeds(sch *tableSchema, need []int) []int {
	for _, g := range sch.opts.merge.Groups {
		used := false
		for _, f := range g.Fields {
			used = used || slices.Contains(need, sch.fieldIndex(f))
		}
		if !used {
			continue
		}
		for _, c := range g.Seq {
			if i := sch.fieldIndex(c); !slices.Contains(need, i) {
				need = append(need, i)
			}
		}
	}
	return need
}

// mergeColumnsOf describes the schema columns cols to the merge engine.
func mergeColumnsOf(sch *tableSchema, cols []int) []merge.Column {
	mc := make([]merge.Column, len(cols))
	for p, c := range cols {
		name := sch.Fields[c].Name
		mc[p] = merge.Column{Name: name, Type: sch.types[c], Key: sch.isPrimaryKey(name)}
	}
	return mc
}
