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

// TestKeySetsExprNarrows: the columns of a scan's key sets are known too,
// and the narrowed copy reads the remapped columns, shares the ranges and
// leaves the original as it was.
func TestKeySetsExprNarrows(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	ks := NewKeySets([]*KeySetExpr{{Index: 2, Name: "b", Range: &KeyRange{}}, {Index: 0, Name: "a", Range: &KeyRange{}}})
	cols, narrow, nes, ok := narrowExprs(schema, ks)
	if !ok || len(cols) != 2 || cols[0] != 0 || cols[1] != 2 || narrow.NumFields() != 2 {
		t.Fatalf("narrowExprs of key sets on columns 2 and 0: cols %v, ok %v", cols, ok)
	}
	nk, _ := nes[0].(*KeySetsExpr)
	if nk == nil || nk.Sets[0].Index != 1 || nk.Sets[1].Index != 0 || nk.Sets[0].Range != ks.Sets[0].Range || ks.Sets[0].Index != 2 {
		t.Fatalf("remapped key sets %#v (original first index %d), want indexes 1 and 0 sharing the ranges", nes[0], ks.Sets[0].Index)
	}
}
