package vectorized

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Random nested values as Go trees (nil NULL, int, []any for a list, a
// struct's fields or a map's entries, each entry a []any{key, value}).
func randomInts(rng *rand.Rand) any {
	if rng.IntN(6) == 0 {
		return nil
	}
	xs := []any{}
	for range rng.IntN(3) {
		if rng.IntN(6) == 0 {
			xs = append(xs, nil)
		} else {
			xs = append(xs, rng.IntN(3))
		}
	}
	return xs
}

func randomRow(rng *rand.Rand) any {
	if rng.IntN(6) == 0 {
		return nil
	}
	var a any
	if rng.IntN(5) > 0 {
		a = rng.IntN(3)
	}
	return []any{a, randomInts(rng)}
}

func randomMap(rng *rand.Rand) any {
	if rng.IntN(6) == 0 {
		return nil
	}
	m := []any{}
	for k := range rng.IntN(3) {
		m = append(m, []any{k, randomInts(rng)})
	}
	return m
}

// toJSON renders a tree as arrow's JSON reader takes it for the type:
// structs as objects of fields a, xs; map entries as key/value objects.
func toJSON(v any, kind string) any {
	if v == nil {
		return nil
	}
	switch kind {
	case "row":
		f := v.([]any)
		return map[string]any{"a": f[0], "xs": f[1]}
	case "map":
		out := []any{}
		for _, e := range v.([]any) {
			e := e.([]any)
			out = append(out, map[string]any{"key": e[0], "value": e[1]})
		}
		return out
	}
	return v
}

// modelEq is SQL's = on trees: NULL if a side is NULL, FALSE if a part
// differs, else NULL if a part compared NULL.
func modelEq(x, y any) tri {
	if x == nil || y == nil {
		return triNull
	}
	xs, ok := x.([]any)
	if !ok {
		if x == y {
			return triTrue
		}
		return triFalse
	}
	ys := y.([]any)
	if len(xs) != len(ys) {
		return triFalse
	}
	res := triTrue
	for i := range xs {
		switch modelEq(xs[i], ys[i]) {
		case triFalse:
			return triFalse
		case triNull:
			res = triNull
		}
	}
	return res
}

// TestNestedEqualAndKeys checks NestedEqual against the model, and that
// nested grouping keys are equal exactly when the values are equal with
// NULL parts equal, on random values of sliced arrays.
func TestNestedEqualAndKeys(t *testing.T) {
	rng := testSeed(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	types := map[string]arrow.DataType{
		"row": arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "xs", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}),
		"list": arrow.ListOf(arrow.PrimitiveTypes.Int32),
		"map":  arrow.MapOf(arrow.PrimitiveTypes.Int32, arrow.ListOf(arrow.PrimitiveTypes.Int32)),
	}
	gen := map[string]func(*rand.Rand) any{"row": randomRow, "list": randomInts, "map": randomMap}
	for kind, dt := range types {
		const n, off = 200, 3
		var left, right []any
		for range n + off {
			l := gen[kind](rng)
			r := l
			if rng.IntN(2) == 0 {
				r = gen[kind](rng)
			}
			left, right = append(left, l), append(right, r)
		}
		build := func(vals []any) arrow.Array {
			js := make([]any, len(vals))
			for i, v := range vals {
				js[i] = toJSON(v, kind)
			}
			text, err := json.Marshal(js)
			if err != nil {
				t.Fatal(err)
			}
			a, _, err := array.FromJSON(mem, dt, strings.NewReader(string(text)))
			if err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			defer a.Release()
			return array.NewSlice(a, off, int64(len(vals)))
		}
		a, b := build(left), build(right)
		left, right = left[off:], right[off:]
		eq, err := NestedEqual(mem, a, b, false)
		if err != nil {
			t.Fatal(err)
		}
		var ka, kb KeyEncoder
		if err := ka.Encode([]arrow.Array{a}, n); err != nil {
			t.Fatal(err)
		}
		if err := kb.Encode([]arrow.Array{b}, n); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			got := triFalse
			switch {
			case eq.IsNull(i):
				got = triNull
			case eq.(*array.Boolean).Value(i):
				got = triTrue
			}
			if want := modelEq(left[i], right[i]); got != want {
				t.Fatalf("%s row %d: %v = %v gave %d, want %d", kind, i, left[i], right[i], got, want)
			}
			if same := reflect.DeepEqual(left[i], right[i]); bytes.Equal(ka.Key(i), kb.Key(i)) != same {
				t.Fatalf("%s row %d: keys of %v and %v equal %v, values equal %v", kind, i, left[i], right[i], !same, same)
			}
		}
		eq.Release()
		a.Release()
		b.Release()
	}
}
