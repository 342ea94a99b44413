package exec_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// unnestSchema is the output of unnesting ARRAY[x, y] of (id, x, y).
func unnestSchema(ordinality bool) *arrow.Schema {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "e", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	if ordinality {
		fields = append(fields, arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

// TestUnnest checks the unnest operator under every harness configuration
// (batch sizes, sliced inputs, retained outputs) on random rows: each row
// comes out once per element, in order, with its position.
func TestUnnest(t *testing.T) {
	rng := rand.New(rand.NewPCG(exectest.Seed(t), 5))
	var rows, want []string
	for i := range 50 {
		x, y := fmt.Sprint(rng.IntN(9)), fmt.Sprint(rng.IntN(9))
		if rng.IntN(5) == 0 {
			y = "NULL"
		}
		rows = append(rows, fmt.Sprintf("%d | %s | %s", i, x, y))
		want = append(want, fmt.Sprintf("%d | %s | %s | %s | 1", i, x, y, x), fmt.Sprintf("%d | %s | %s | %s | 2", i, x, y, y))
	}
	in := exectest.NewTable(t, "id:int64, x:int64, y:int64", rows...)
	ctor := func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		arr, err := exec.NewCall("array", exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "x"), exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "y"))
		if err != nil {
			return nil, err
		}
		return exec.NewUnnest(ec, ops[0], arr, exec.UnnestSpec{Ordinality: true}, unnestSchema(true))
	}
	exectest.Run(t, []exectest.Table{in}, want, exectest.Ordered, ctor)
	exectest.RunNullInjection(t, []exectest.Table{in}, exectest.Ordered, ctor)
}

// TestUnnestKeepEmpty keeps a row whose array is NULL once, with a NULL
// element and position.
func TestUnnestKeepEmpty(t *testing.T) {
	in := exectest.NewTable(t, "id:int64, x:int64, y:int64", "1 | 10 | 11", "2 | 4 | NULL", "3 | NULL | 30")
	want := []string{"1 | 10 | 11 | 10 | 1", "1 | 10 | 11 | 11 | 2", "2 | 4 | NULL | NULL | NULL", "3 | NULL | 30 | NULL | 1", "3 | NULL | 30 | 30 | 2"}
	exectest.Run(t, []exectest.Table{in}, want, exectest.Ordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		y := exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "y")
		arr, err := exec.NewCall("array", exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "x"), y)
		if err != nil {
			return nil, err
		}
		isNull, err := exec.NewCall("is_null", y)
		if err != nil {
			return nil, err
		}
		nullOrArr, err := exec.NewCase([]exec.When{{Cond: isNull, Then: exec.NewLiteral(scalar.MakeNullScalar(arr.DataType()))}}, arr)
		if err != nil {
			return nil, err
		}
		return exec.NewUnnest(ec, ops[0], nullOrArr, exec.UnnestSpec{Ordinality: true, KeepEmpty: true}, unnestSchema(true))
	})
}

// TestUnnestMap unnests MAP[x, y] into key and value columns.
func TestUnnestMap(t *testing.T) {
	in := exectest.NewTable(t, "id:int64, x:int64, y:int64", "1 | 10 | 11", "2 | 5 | NULL")
	want := []string{"1 | 10 | 11 | 10 | 11", "2 | 5 | NULL | 5 | NULL"}
	exectest.Run(t, []exectest.Table{in}, want, exectest.Ordered, func(ec *exec.Context, ops []exec.Operator) (exec.Operator, error) {
		m, err := exec.NewCall("map", exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "x"), exec.NewColumn(2, arrow.PrimitiveTypes.Int64, "y"))
		if err != nil {
			return nil, err
		}
		schema := arrow.NewSchema(append(unnestSchema(false).Fields()[:3],
			arrow.Field{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), nil)
		return exec.NewUnnest(ec, ops[0], m, exec.UnnestSpec{Expand: exec.UnnestMapEntry}, schema)
	})
}
