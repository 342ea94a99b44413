package exec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

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

// TestJSONConstructors: JSON_OBJECT and JSON_ARRAY of random strings
// (quotes, backslashes, control and HTML characters), integers and NULLs
// are valid JSON that decodes to the values, NULL members written or left
// out as the ON NULL variant says.
func TestJSONConstructors(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 6))
	chars := []string{"a", "\"", "\\", "<", "&", "\t", "é", "\u0001", "}"}
	const n = 200
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sb := array.NewStringBuilder(mem)
	ib := array.NewInt64Builder(mem)
	var strs []*string
	var ints []*int64
	for range n {
		if rng.IntN(4) == 0 {
			sb.AppendNull()
			strs = append(strs, nil)
		} else {
			var s strings.Builder
			for range rng.IntN(6) {
				s.WriteString(chars[rng.IntN(len(chars))])
			}
			v := s.String()
			sb.Append(v)
			strs = append(strs, &v)
		}
		if rng.IntN(4) == 0 {
			ib.AppendNull()
			ints = append(ints, nil)
		} else {
			v := rng.Int64() >> rng.IntN(64)
			ib.Append(v)
			ints = append(ints, &v)
		}
	}
	sa, ia := sb.NewArray(), ib.NewArray()
	sb.Release()
	ib.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBatch(schema, []arrow.Array{sa, ia}, n)
	sa.Release()
	ia.Release()
	defer b.Release()
	s, i := exec.NewColumn(0, arrow.BinaryTypes.String, "s"), exec.NewColumn(1, arrow.PrimitiveTypes.Int64, "i")
	key := func(k string) exec.Expr { return exec.NewLiteral(scalar.NewStringScalar(k)) }
	for _, fn := range []string{"json_object", "json_object_absent_on_null", "json_array", "json_array_null_on_null"} {
		args := []exec.Expr{s, i}
		if strings.HasPrefix(fn, "json_object") {
			args = []exec.Expr{key("s"), s, key("i"), i}
		}
		e, err := exec.NewCall(fn, args...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Eval(context.Background(), exec.NewContext(mem), b)
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, fn, err)
		}
		keepNulls := fn == "json_object" || fn == "json_array_null_on_null"
		for r := 0; r < n; r++ {
			text := vectorized.FormatValue(got, r)
			var want []any
			if strs[r] != nil {
				want = append(want, *strs[r])
			} else if keepNulls {
				want = append(want, nil)
			}
			if ints[r] != nil {
				want = append(want, json.Number(fmt.Sprint(*ints[r])))
			} else if keepNulls {
				want = append(want, nil)
			}
			dec := json.NewDecoder(strings.NewReader(text))
			dec.UseNumber()
			var back any
			if err := dec.Decode(&back); err != nil {
				t.Fatalf("seed %d: %s row %d: %q is not JSON: %v", seed, fn, r, text, err)
			}
			var gotVals []any
			switch v := back.(type) {
			case []any:
				gotVals = v
			case map[string]any:
				// Members in order s, i; a missing one was absent.
				for _, k := range []string{"s", "i"} {
					if x, ok := v[k]; ok {
						gotVals = append(gotVals, x)
					}
				}
			}
			if fmt.Sprintf("%#v", gotVals) != fmt.Sprintf("%#v", want) && !(len(gotVals) == 0 && len(want) == 0) {
				t.Fatalf("seed %d: %s row %d: %q decodes to %#v, want %#v", seed, fn, r, text, gotVals, want)
			}
		}
		got.Release()
	}
}
