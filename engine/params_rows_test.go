package engine_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	fexec "github.com/flightd/flightd/exec"
)

// TestManyParamRowsBuildAsTheyRun: a query bound with many parameter rows
// runs once per row, and builds each row's operators when the row before
// is done. Built all at once, 100,000 rows of SELECT ? FROM t held 1.1 GB
// of operator trees before the first row ran (the bound limit is a million
// rows); 20,000 took 94 MB.
func TestManyParamRowsBuildAsTheyRun(t *testing.T) {
	e, mem := openEngine(t, t.TempDir())
	defer closeEngine(t, e, mem)
	ctx := context.Background()
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE t (k BIGINT)")
	mustExec(t, s, "INSERT INTO t VALUES (1), (2)")
	st, err := s.Prepare(ctx, "SELECT k * 100000 + ? FROM t", nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	bld := array.NewInt64Builder(mem)
	for i := range n {
		bld.Append(int64(i))
	}
	col := bld.NewArray()
	bld.Release()
	params := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, n)
	col.Release()
	defer params.Release()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	op, err := st.Query(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 20<<20 {
		t.Errorf("the query with %d parameter rows holds %d MB before it runs", n, grew>>20)
	}
	bs, err := fexec.Collect(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	// Rows in parameter order, each row's two table rows together.
	i := 0
	for _, b := range bs {
		if !b.Schema().Equal(op.Schema()) {
			t.Fatalf("a batch's schema %v, the operator's %v", b.Schema(), op.Schema())
		}
		c := b.Column(0).(*array.Int64)
		for r := range c.Len() {
			p, k := int64(i/2), int64(1+i%2)
			if got := c.Value(r); got != p+100000*k && got != p+100000*(3-k) {
				t.Fatalf("row %d: %d, want parameter %d", i, got, p)
			}
			i++
		}
		b.Release()
	}
	if i != 2*n {
		t.Fatalf("%d rows, want %d", i, 2*n)
	}
}
