package merge

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestNoFlightdImports: the merge engines know Arrow arrays only, so the
// table store can import them.
func TestNoFlightdImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/flightd/flightd/") && dep != "github.com/flightd/flightd/tablestore/merge" {
			t.Errorf("merge must not import %s", dep)
		}
	}
}

// version is one row of a key: its kind and its cells (nil for NULL).
type version struct {
	kind  RowKind
	cells []any
}

func buildArray(mem memory.Allocator, dt arrow.DataType, vals []any) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
			b.AppendNull()
		case int64:
			b.(*array.Int64Builder).Append(v)
		case int32:
			b.(*array.Int32Builder).Append(v)
		case float64:
			b.(*array.Float64Builder).Append(v)
		case string:
			b.(*array.StringBuilder).Append(v)
		case bool:
			b.(*array.BooleanBuilder).Append(v)
		default:
			panic(fmt.Sprintf("buildArray: %T", v))
		}
	}
	return b.NewArray()
}

func cellAt(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	}
	panic("cellAt: " + a.DataType().String())
}

// mergeVersions merges the versions of one key with rm, as at flush (raw)
// or at compaction and read; nil when the merge emits nothing.
func mergeVersions(t *testing.T, mem memory.Allocator, rm rowMerger, cols []Column, vers []version, raw bool) *version {
	t.Helper()
	arrs := make([]arrow.Array, len(cols))
	types := make([]arrow.DataType, len(cols))
	for p, c := range cols {
		vals := make([]any, len(vers))
		for i, v := range vers {
			vals[i] = v.cells[p]
		}
		arrs[p] = buildArray(mem, c.Type, vals)
		types[p] = c.Type
		defer arrs[p].Release()
	}
	in := &Input{
		Arrays: func(p int) []arrow.Array { return arrs[p : p+1] },
		Seq:    func(r Ref) int64 { return int64(r.Row) },
		Kind:   func(r Ref) RowKind { return vers[r.Row].kind },
	}
	refs := make([]Ref, len(vers))
	for i := range refs {
		refs[i] = Ref{Src: 0, Row: int32(i)}
	}
	out := newOutput(types)
	defer out.release()
	if err := rm.merge(in, refs, raw, out); err != nil {
		t.Fatal(err)
	}
	if out.rows() == 0 {
		return nil
	}
	if out.rows() != 1 {
		t.Fatalf("%d rows merged, want 1", out.rows())
	}
	res := &version{kind: out.kind(0)}
	seqs, kinds := out.sysColumns(mem)
	seqs.Release()
	kinds.Release()
	for p := range cols {
		a := out.gatherColumn(mem, p, arrs[p:p+1])
		res.cells = append(res.cells, cellAt(a, 0))
		a.Release()
	}
	return res
}

// TestRowMergersAssociative: merging the versions of a key in one go, or
// chunk by chunk and then the chunks' rows, gives the same row, for every
// aggregate function and for partial-update with a sequence group.
func TestRowMergersAssociative(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	i64, i32, f64, str, boo := arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String, arrow.FixedWidthTypes.Boolean
	agg := []Column{{"k", i64, true}, {"s", i64, false}, {"p", f64, false}, {"c", i32, false}, {"mx", str, false}, {"mn", i32, false},
		{"lv", str, false}, {"lnn", str, false}, {"fv", str, false}, {"fnn", str, false}, {"la", str, false}, {"ba", boo, false}, {"bo", boo, false}}
	aggFns := map[string]string{"s": "sum", "p": "product", "c": "count", "mx": "max", "mn": "min", "lv": "last_value",
		"lnn": "last_non_null_value", "fv": "first_value", "fnn": "first_non_null_value", "la": "listagg", "ba": "bool_and", "bo": "bool_or"}
	retracting := map[string]string{"s": "sum", "p": "product", "c": "count", "lv": "last_value"}
	pu := []Column{{"k", i64, true}, {"a", str, false}, {"g", i32, false}, {"x", i64, false}}
	for _, c := range []struct {
		name  string
		cols  []Column
		opts  Options
		kinds []RowKind
	}{
		{"aggregation", agg, Options{Engine: Aggregation, AggFunc: aggFns}, []RowKind{Insert, UpdateAfter}},
		{"aggregation-retract", agg[:4], Options{Engine: Aggregation, AggFunc: retracting}, []RowKind{Insert, UpdateAfter, UpdateBefore, Delete}},
		{"aggregation-remove", agg, Options{Engine: Aggregation, AggFunc: aggFns, RemoveOnDelete: true,
			IgnoreRetract: map[string]bool{"mx": true, "mn": true, "lnn": true, "fv": true, "fnn": true, "la": true, "ba": true, "bo": true}}, []RowKind{Insert, Delete}},
		{"partial-update", pu, Options{Engine: PartialUpdate}, []RowKind{Insert, UpdateAfter}},
		{"partial-update-groups", pu, Options{Engine: PartialUpdate, Groups: []SequenceGroup{{Seq: []string{"g"}, Fields: []string{"g", "a"}}}}, []RowKind{Insert, UpdateAfter, UpdateBefore, Delete}},
		{"partial-update-remove", pu, Options{Engine: PartialUpdate, RemoveOnDelete: true}, []RowKind{Insert, UpdateAfter, UpdateBefore, Delete}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(50) {
				rng := rand.New(rand.NewPCG(seed, 7))
				rm := newRowMerger("db.t", &c.opts, c.cols, mem)
				var vers []version
				for range 1 + rng.IntN(12) {
					v := version{kind: c.kinds[rng.IntN(len(c.kinds))], cells: []any{int64(1)}}
					for _, col := range c.cols[1:] {
						v.cells = append(v.cells, randCell(rng, col.Type))
					}
					vers = append(vers, v)
				}
				want := mergeVersions(t, mem, rm, c.cols, vers, true)
				var parts []version
				for i := 0; i < len(vers); {
					n := min(1+rng.IntN(4), len(vers)-i)
					if p := mergeVersions(t, mem, rm, c.cols, vers[i:i+n], true); p != nil {
						parts = append(parts, *p)
					}
					i += n
				}
				var got *version
				if len(parts) > 0 {
					got = mergeVersions(t, mem, rm, c.cols, parts, false)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("seed %d: chunked %v, at once %v (versions %v)", seed, got, want, vers)
				}
			}
		})
	}
}

// randCell is a random value of type dt or nil; floats are powers of two
// so products are exact in any order.
func randCell(rng *rand.Rand, dt arrow.DataType) any {
	if rng.IntN(4) == 0 {
		return nil
	}
	switch dt.ID() {
	case arrow.INT64:
		return int64(rng.IntN(20) - 5)
	case arrow.INT32:
		return int32(rng.IntN(20) - 5)
	case arrow.FLOAT64:
		return []float64{0.5, 1, 2, 4}[rng.IntN(4)]
	case arrow.BOOL:
		return rng.IntN(2) == 0
	}
	return fmt.Sprintf("s%d", rng.IntN(6))
}

func TestRetractRefused(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cols := []Column{{"k", arrow.PrimitiveTypes.Int64, true}, {"m", arrow.PrimitiveTypes.Int64, false}}
	rm := newRowMerger("db.t", &Options{Engine: Aggregation, AggFunc: map[string]string{"m": "max"}}, cols, mem)
	arrs := []arrow.Array{buildArray(mem, cols[0].Type, []any{int64(1)}), buildArray(mem, cols[1].Type, []any{int64(2)})}
	defer arrs[0].Release()
	defer arrs[1].Release()
	in := &Input{
		Arrays: func(p int) []arrow.Array { return arrs[p : p+1] },
		Seq:    func(Ref) int64 { return 0 },
		Kind:   func(Ref) RowKind { return Delete },
	}
	out := newOutput([]arrow.DataType{cols[0].Type, cols[1].Type})
	defer out.release()
	err := rm.merge(in, []Ref{{0, 0}}, true, out)
	want := `invalid argument: table db.t: column "m" has aggregate-function max, which cannot retract a -D row`
	if !errors.Is(err, ErrInvalid) || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if out.rows() != 0 {
		t.Fatalf("a refused merge left %d rows", out.rows())
	}
}

// TestAppendNormalizedOrder: encodings compare like the values, nulls
// first, strings with zero bytes and prefixes included.
func TestAppendNormalizedOrder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	strs := []any{nil, "", "a", "a\x00", "a\x00b", "ab", "b", "\x00"}
	ints := []any{nil, int64(-1 << 63), int64(-1), int64(0), int64(1), int64(1<<63 - 1)}
	floats := []any{nil, -4.0, -0.5, 0.0, 0.5, 4.0}
	for _, vals := range [][]any{strs, ints, floats} {
		var dt arrow.DataType
		switch vals[1].(type) {
		case string:
			dt = arrow.BinaryTypes.String
		case int64:
			dt = arrow.PrimitiveTypes.Int64
		default:
			dt = arrow.PrimitiveTypes.Float64
		}
		a := buildArray(mem, dt, vals)
		for i := range vals {
			for j := range vals {
				got := bytes.Compare(AppendNormalized(nil, a, i), AppendNormalized(nil, a, j))
				if want := compareCells(vals[i], vals[j]); got != want {
					t.Errorf("%q vs %q: encodings compare %d, want %d", vals[i], vals[j], got, want)
				}
			}
		}
		a.Release()
	}
}

func compareCells(x, y any) int {
	switch {
	case x == nil && y == nil:
		return 0
	case x == nil:
		return -1
	case y == nil:
		return 1
	}
	switch x := x.(type) {
	case string:
		return cmp.Compare(x, y.(string))
	case int64:
		return cmp.Compare(x, y.(int64))
	}
	return cmp.Compare(x.(float64), y.(float64))
}

// batchRun is a Run over batches.
type batchRun struct {
	bs     []arrow.RecordBatch
	closed bool
}

func (r *batchRun) Next(context.Context) (arrow.RecordBatch, error) {
	if len(r.bs) == 0 {
		return nil, io.EOF
	}
	b := r.bs[0]
	r.bs = r.bs[1:]
	return b, nil
}

func (r *batchRun) Close() error { r.closed = true; return nil }

// TestReader: the k-way merge emits each key once, in key order, the
// engine's survivor, across runs and batches.
func TestReader(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cols := []Column{{"v", arrow.PrimitiveTypes.Int64, false}, {"k", arrow.PrimitiveTypes.Int64, true}}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "_SEQUENCE_NUMBER", Type: arrow.PrimitiveTypes.Int64},
		{Name: "_VALUE_KIND", Type: arrow.PrimitiveTypes.Int8},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	// rows: seq, kind, v, k
	batch := func(rows ...[4]int64) arrow.RecordBatch {
		var cs []arrow.Array
		for c := range 4 {
			var vals []any
			for _, r := range rows {
				vals = append(vals, r[c])
			}
			if c == 1 {
				b := array.NewInt8Builder(mem)
				for _, v := range vals {
					b.Append(int8(v.(int64)))
				}
				cs = append(cs, b.NewArray())
				b.Release()
				continue
			}
			cs = append(cs, buildArray(mem, arrow.PrimitiveTypes.Int64, vals))
		}
		b := array.NewRecordBatch(sch, cs, int64(len(rows)))
		for _, c := range cs {
			c.Release()
		}
		return b
	}
	for _, c := range []struct {
		engine string
		keep   bool
		want   string
	}{
		{Deduplicate, false, "k1=11 k2=22 k4=40 k5=51"},
		{Deduplicate, true, "k1=11 k2=22 k3=31-D k4=40 k5=51"},
		{FirstRow, false, "k1=10 k2=20 k3=30 k4=40 k5=50"},
		{Aggregation, false, "k1=21 k2=42 k3=30 k4=40 k5=101"},
	} {
		t.Run(fmt.Sprintf("%s,keep=%v", c.engine, c.keep), func(t *testing.T) {
			d := int64(Delete)
			old := &batchRun{bs: []arrow.RecordBatch{batch([4]int64{1, 0, 10, 1}, [4]int64{2, 0, 20, 2}), batch([4]int64{3, 0, 30, 3}, [4]int64{4, 0, 40, 4}, [4]int64{5, 0, 50, 5})}}
			young := &batchRun{bs: []arrow.RecordBatch{batch([4]int64{6, 0, 11, 1}, [4]int64{7, 0, 22, 2}, [4]int64{8, d, 31, 3}), batch([4]int64{9, 0, 51, 5})}}
			all := slices.Concat(old.bs, young.bs)
			o := &Options{Engine: c.engine, AggFunc: map[string]string{"v": "sum"}, IgnoreRetract: map[string]bool{"v": true}}
			r := NewReader([]Run{young, old}, Layout{Table: "db.t", Options: o, Columns: cols, Key: []int{1}, Emit: []int{0, 1, 2, 3},
				Schema: sch, KeepRetracts: c.keep, BatchSize: 2, Mem: mem})
			var got []string
			for {
				b, err := r.Next(context.Background())
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if b.NumRows() > 2 {
					t.Errorf("batch of %d rows, BatchSize 2", b.NumRows())
				}
				for i := range int(b.NumRows()) {
					s := fmt.Sprintf("k%d=%d", b.Column(3).(*array.Int64).Value(i), b.Column(2).(*array.Int64).Value(i))
					if k := RowKind(b.Column(1).(*array.Int8).Value(i)); k != Insert {
						s += k.String()
					}
					got = append(got, s)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			for _, b := range all {
				b.Release()
			}
			if !old.closed || !young.closed {
				t.Error("runs not closed")
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("got %s, want %s", g, c.want)
			}
		})
	}
}
