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

// keyText renders row i of key columns for an error message.
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
