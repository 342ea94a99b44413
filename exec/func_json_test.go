package exec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// TestJSONValueQuery: on random nested JSON documents and random paths
// (that exist or not), JSON_VALUE gives the scalar a path selects and
// JSON_QUERY the object or array, each NULL otherwise.
func TestJSONValueQuery(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := rng.IntN(7); {
		case depth > 2 || k == 0:
			return []any{rng.IntN(100), fmt.Sprintf("s%d", rng.IntN(9)), true, nil, 2.5}[rng.IntN(5)]
		case k < 4:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[fmt.Sprintf("k%d", rng.IntN(4))] = gen(depth + 1)
			}
			return m
		default:
			l := []any{}
			for range rng.IntN(4) {
				l = append(l, gen(depth+1))
			}
			return l
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	docs := array.NewStringBuilder(mem)
	paths := array.NewStringBuilder(mem)
	var wantValue, wantQuery []string
	for range 500 {
		doc := gen(0)
		text, _ := json.Marshal(doc)
		// Walk a random path, sometimes off the document.
		path, cur, found := "$", doc, true
		for range rng.IntN(4) {
			switch c := cur.(type) {
			case map[string]any:
				k := fmt.Sprintf("k%d", rng.IntN(5))
				path += "." + k
				cur, found = c[k]
			case []any:
				i := rng.IntN(len(c) + 1)
				path += fmt.Sprintf("[%d]", i)
				if i < len(c) {
					cur = c[i]
				} else {
					found = false
				}
			default:
				path += ".x"
				found = false
			}
			if !found {
				break
			}
		}
		v, q := "NULL", "NULL"
		if found {
			switch c := cur.(type) {
			case map[string]any, []any:
				b, _ := json.Marshal(c)
				q = string(b)
			case string:
				v = c
			case nil:
			default:
				v = fmt.Sprint(c)
			}
		}
		docs.Append(string(text))
		paths.Append(path)
		wantValue = append(wantValue, v)
		wantQuery = append(wantQuery, q)
	}
	da, pa := docs.NewArray(), paths.NewArray()
	docs.Release()
	paths.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: arrow.BinaryTypes.String}, {Name: "p", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBatch(schema, []arrow.Array{da, pa}, int64(da.Len()))
	da.Release()
	pa.Release()
	defer b.Release()
	for fn, want := range map[string][]string{"json_value": wantValue, "json_query": wantQuery} {
		e, err := exec.NewCall(fn, exec.NewColumn(0, arrow.BinaryTypes.String, "d"), exec.NewColumn(1, arrow.BinaryTypes.String, "p"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Eval(context.Background(), exec.NewContext(mem), b)
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, fn, err)
		}
		for i, w := range want {
			// Keys come out in document order, which json.Marshal sorted.
			if g := vectorized.FormatValue(got, i); g != w {
				t.Fatalf("seed %d: %s(%s, %s) = %s, want %s", seed, fn, vectorized.FormatValue(b.Column(0), i), vectorized.FormatValue(b.Column(1), i), g, w)
			}
		}
		got.Release()
	}
}
