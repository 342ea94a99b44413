package engine

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// ErrCardinality marks a MERGE in which two source rows match one target
// row (SQLSTATE 21000): which of them wins would be arbitrary.
var ErrCardinality = fmt.Errorf("%w: cardinality violation", ErrInvalid)

// merge runs MERGE INTO: every row a WHEN clause takes is written with the
// clause's row kind, all in one commit (or into the transaction), as a
// read-modify-write of the target's snapshot. It fails, writing nothing,
// when two source rows match one target row.
func (st *Statement) merge(ctx context.Context, m *plan.Merge, params arrow.RecordBatch, opts tablestore.WriteOptions) (int64, error) {
	if m.Append {
		return st.mergeAppend(ctx, m, params, opts)
	}
	t := m.Table
	schema := t.Schema()
	var pk []int
	for _, k := range t.PrimaryKey() {
		pk = append(pk, schema.FieldIndices(k)[0])
	}
	var (
		enc   vectorized.KeyEncoder
		kinds []tablestore.RowKind
		seen  = map[string]bool{}
	)
	return st.writeRows(ctx, t, m.Rows, params, opts, func(w *tablestore.Write, b arrow.RecordBatch) error {
		rows := int(b.NumRows())
		clause := b.Column(0).(*array.Int32)
		cols := b.Columns()[1:]
		keys := make([]arrow.Array, len(pk))
		for i, c := range pk {
			keys[i] = cols[c]
		}
		if err := enc.Encode(keys, rows); err != nil {
			return err
		}
		kinds = kinds[:0]
		for i := range rows {
			c := clause.Value(i) - 1
			kinds = append(kinds, m.Kinds[c])
			if !m.Matched[c] {
				continue
			}
			key := string(enc.Key(i))
			if seen[key] {
				return fmt.Errorf("MERGE INTO %s: a target row (key %s) is matched by more than one source row: %w", t.Ident(), keyText(keys, i), ErrCardinality)
			}
			seen[key] = true
		}
		rec := array.NewRecordBatch(schema, cols, int64(rows))
		defer rec.Release()
		return w.WriteKinds(ctx, rec, kinds)
	})
}

// mergeAppend runs MERGE INTO an append table as UPDATE and DELETE run
// there: the rows that remain, updated and inserted replace the table
// atomically, a read-modify-write that fails on any change to the table
// after the snapshot it read. Of each target row (rows arrive grouped by
// it, the row a clause takes first) it writes the row of the clause taken
// (none for DELETE) or, when none is, the row as it was, once. The count is
// the rows the clauses took.
func (st *Statement) mergeAppend(ctx context.Context, m *plan.Merge, params arrow.RecordBatch, opts tablestore.WriteOptions) (int64, error) {
	t := m.Table
	schema := t.Schema()
	mem := st.s.e.cfg.Mem
	var (
		taken   int64
		last    int64
		hasLast bool
		mask    []bool
	)
	opts.Overwrite = true
	_, err := st.writeRows(ctx, t, m.Rows, params, opts, func(w *tablestore.Write, b arrow.RecordBatch) error {
		rows := int(b.NumRows())
		clause := b.Column(0).(*array.Int32)
		target := b.Column(1).(*array.Int64)
		mask = mask[:0]
		keep := 0
		for i := range rows {
			c := clause.Value(i) - 1
			if c >= 0 {
				taken++
			}
			write := true
			if target.IsValid(i) {
				r := target.Value(i)
				first := !hasLast || r != last
				last, hasLast = r, true
				switch {
				case !first && c >= 0:
					return fmt.Errorf("MERGE INTO %s: a target row %s is matched by more than one source row: %w", t.Ident(), keyText(b.Columns()[2:], i), ErrCardinality)
				case !first:
					write = false // the row is written once, as its first source row says
				case c >= 0:
					write = m.Kinds[c] != tablestore.Delete
				}
			}
			mask = append(mask, write)
			if write {
				keep++
			}
		}
		rec := array.NewRecordBatch(schema, b.Columns()[2:], int64(rows))
		defer rec.Release()
		out, err := vectorized.FilterBatch(ctx, mem, rec, mask, keep)
		if err != nil {
			return err
		}
		defer out.Release()
		if keep == 0 {
			return nil
		}
		return w.Write(ctx, out, tablestore.Insert)
	})
	if err != nil {
		return 0, err
	}
	return taken, nil
}

// keyText renders row i of key (or all) columns for an error message.
func keyText(keys []arrow.Array, i int) string {
	s := "("
	for j, k := range keys {
		if j > 0 {
			s += ", "
		}
		s += k.ValueStr(i)
	}
	return s + ")"
}
