package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// TestCaseMaskedColumn: CASE WHEN cond THEN column END (answered by masking
// the column's validity) gives what the general CASE gives, for fixed and
// variable width columns with NULLs, in sliced batches.
func TestCaseMaskedColumn(t *testing.T) {
	rng := rand.New(rand.NewPCG(exectest.Seed(t), 0))
	for _, typ := range []string{"int64", "decimal(7,2)", "string", "date"} {
		var rows []string
		for i := range 300 {
			c, v := "NULL", "NULL"
			if rng.IntN(5) > 0 {
				c = fmt.Sprint(rng.IntN(4))
			}
			if rng.IntN(4) > 0 {
				v = map[string]string{"int64": fmt.Sprint(i), "decimal(7,2)": fmt.Sprintf("%d.%02d", i, i%100),
					"string": fmt.Sprintf("s%d", i), "date": fmt.Sprintf("2000-01-%02d", 1+i%28)}[typ]
			}
			rows = append(rows, c+" | "+v)
		}
		tb := exectest.NewTable(t, "c:int32, v:"+typ, rows...)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ec := exec.NewContext(mem)
		v := exec.NewColumn(1, tb.Schema.Field(1).Type, "v")
		cond, err := exec.NewCall("equal", exec.NewColumn(0, tb.Schema.Field(0).Type, "c"), exec.NewLiteral(scalar.NewInt32Scalar(1)))
		if err != nil {
			t.Fatal(err)
		}
		masked, err := exec.NewCase([]exec.When{{Cond: cond, Then: v}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		never := exec.NewLiteral(scalar.NewBooleanScalar(false))
		general, err := exec.NewCase([]exec.When{{Cond: cond, Then: v}, {Cond: never, Then: v}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, span := range [][2]int{{0, 300}, {7, 250}, {123, 124}} {
			b, err := tb.Batch(mem, span[0], span[1], 3) // sliced: non-zero offsets
			if err != nil {
				t.Fatal(err)
			}
			got, err := masked.Eval(context.Background(), ec, b)
			if err != nil {
				t.Fatal(err)
			}
			want, err := general.Eval(context.Background(), ec, b)
			if err != nil {
				t.Fatal(err)
			}
			if !array.Equal(got, want) {
				t.Fatalf("%s rows %v:\n got %v\nwant %v", typ, span, got, want)
			}
			got.Release()
			want.Release()
			b.Release()
		}
		mem.AssertSize(t, 0)
	}
}
