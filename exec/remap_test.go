package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestKeySetExprNarrows: a key set's column is known (exprColumns), so a
// filter chain of key sets narrows to the columns its later operands read
// instead of copying every column of the rows still undecided.
func TestKeySetExprNarrows(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	k := &KeySetExpr{Index: 2, Name: "b", Range: &KeyRange{}}
	cols, narrow, nes, ok := narrowExprs(schema, k)
	if !ok || len(cols) != 1 || cols[0] != 2 || narrow.NumFields() != 1 {
		t.Fatalf("narrowExprs of a key set on column 2: cols %v, ok %v", cols, ok)
	}
	if nk, _ := nes[0].(*KeySetExpr); nk == nil || nk.Index != 0 || nk.Range != k.Range || k.Index != 2 {
		t.Fatalf("remapped key set %#v (original index %d), want index 0 sharing the range", nes[0], k.Index)
	}
}
