package exec_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// TestArrayFunctionsRandom checks ARRAY_CONTAINS, ARRAY_POSITION,
// ARRAY_REMOVE, ARRAY_DISTINCT, ARRAY_REVERSE, ARRAY_APPEND, ARRAY_CONCAT,
// ARRAY_SLICE, ARRAY_SORT, ARRAY_UNION, ARRAY_MIN and ARRAY_MAX against
// models on random arrays of small integers with NULL
// elements, NULL and empty arrays, sliced at a random offset.
func TestArrayFunctionsRandom(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 4))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const n = 400
	type row struct {
		null   bool
		elems  []*int32 // nil: a NULL element
		needle *int32
	}
	num := func() *int32 {
		if rng.IntN(5) == 0 {
			return nil
		}
		v := int32(rng.IntN(5))
		return &v
	}
	rows := make([]row, n)
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	defer lb.Release()
	vb := lb.ValueBuilder().(*array.Int32Builder)
	nb := array.NewInt32Builder(mem)
	defer nb.Release()
	for i := range rows {
		r := &rows[i]
		r.null = rng.IntN(8) == 0
		r.needle = num()
		if r.needle == nil {
			nb.AppendNull()
		} else {
			nb.Append(*r.needle)
		}
		if r.null {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		for range rng.IntN(6) {
			e := num()
			r.elems = append(r.elems, e)
			if e == nil {
				vb.AppendNull()
			} else {
				vb.Append(*e)
			}
		}
	}
	full := lb.NewArray()
	defer full.Release()
	needles := nb.NewArray()
	defer needles.Release()
	off := rng.IntN(5)
	rows = rows[off:]
	list := array.NewSlice(full, int64(off), int64(n))
	defer list.Release()
	needle := array.NewSlice(needles, int64(off), int64(n))
	defer needle.Release()
	b := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "a", Type: list.DataType(), Nullable: true}, {Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil), []arrow.Array{list, needle}, int64(len(rows)))
	defer b.Release()

	str := func(e *int32) string {
		if e == nil {
			return "null"
		}
		return strconv.Itoa(int(*e))
	}
	same := func(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	listStr := func(es []*int32) string {
		s := make([]string, len(es))
		for i, e := range es {
			s[i] = str(e)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	extreme := func(es []*int32, dir int) string {
		var best *int32
		for _, e := range es {
			if e != nil && (best == nil || (int(*e)-int(*best))*dir > 0) {
				best = e
			}
		}
		if best == nil {
			return "NULL"
		}
		return str(best)
	}
	a, x := exec.NewColumn(0, list.DataType(), "a"), exec.NewColumn(1, arrow.PrimitiveTypes.Int32, "x")
	cases := []struct {
		fn    string
		args  []exec.Expr
		model func(r row) string
	}{
		{"array_position", []exec.Expr{a, x}, func(r row) string {
			return strconv.Itoa(slices.IndexFunc(r.elems, func(e *int32) bool { return same(e, r.needle) }) + 1)
		}},
		{"array_contains", []exec.Expr{a, x}, func(r row) string {
			return strconv.FormatBool(slices.ContainsFunc(r.elems, func(e *int32) bool { return same(e, r.needle) }))
		}},
		{"array_remove", []exec.Expr{a, x}, func(r row) string {
			return listStr(slices.DeleteFunc(slices.Clone(r.elems), func(e *int32) bool { return same(e, r.needle) }))
		}},
		{"array_distinct", []exec.Expr{a}, func(r row) string {
			var out []*int32
			for _, e := range r.elems {
				if !slices.ContainsFunc(out, func(o *int32) bool { return same(o, e) }) {
					out = append(out, e)
				}
			}
			return listStr(out)
		}},
		{"array_reverse", []exec.Expr{a}, func(r row) string {
			out := slices.Clone(r.elems)
			slices.Reverse(out)
			return listStr(out)
		}},
		{"array_append", []exec.Expr{a, x}, func(r row) string { return listStr(append(slices.Clone(r.elems), r.needle)) }},
		{"array_concat", []exec.Expr{a, a}, func(r row) string { return listStr(append(slices.Clone(r.elems), r.elems...)) }},
		{"array_slice", []exec.Expr{a, x}, func(r row) string {
			if r.needle == nil {
				return "NULL"
			}
			return listStr(r.elems[min(max(int(*r.needle)-1, 0), len(r.elems)):])
		}},
		{"array_sort", []exec.Expr{a}, func(r row) string {
			out := slices.Clone(r.elems)
			slices.SortStableFunc(out, func(x, y *int32) int {
				switch {
				case x == nil && y == nil:
					return 0
				case x == nil:
					return -1 // NULLs first, ascending
				case y == nil:
					return 1
				}
				return int(*x) - int(*y)
			})
			return listStr(out)
		}},
		{"array_union", []exec.Expr{a, a}, func(r row) string {
			var out []*int32
			for _, e := range r.elems {
				if !slices.ContainsFunc(out, func(o *int32) bool { return same(o, e) }) {
					out = append(out, e)
				}
			}
			return listStr(out)
		}},
		{"array_min", []exec.Expr{a}, func(r row) string { return extreme(r.elems, -1) }},
		{"array_max", []exec.Expr{a}, func(r row) string { return extreme(r.elems, 1) }},
	}
	for _, c := range cases {
		e, err := exec.NewCall(c.fn, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Eval(context.Background(), exec.NewContext(mem), b)
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, c.fn, err)
		}
		for i, r := range rows {
			want := "NULL"
			if !r.null {
				want = c.model(r)
			}
			if g := vectorized.FormatValue(got, i); g != want {
				t.Errorf("seed %d: %s(%s, %s) = %s, want %s", seed, c.fn, listStr(r.elems), str(r.needle), g, want)
			}
		}
		got.Release()
	}
}
