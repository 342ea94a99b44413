package exec_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

// TestKeyRange: a hash join publishes the range of its non-NULL build keys
// when it opens, before it opens its probe side; no key gives lo > hi.
func TestKeyRange(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema string
		build  []string
		lo, hi int64
	}{
		{"ints with NULL", "k:int32", []string{"12", "NULL", "5", "9"}, 5, 12},
		{"dates", "k:date", []string{"2000-01-03", "1999-12-31"}, 10956, 10959},
		{"no rows", "k:int64", nil, 1, 0},
		{"only NULL", "k:int64", []string{"NULL"}, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ec := exec.NewContext(mem)
			build := exectest.NewTable(t, c.schema, c.build...)
			probe := exectest.NewTable(t, c.schema)
			var sources []exec.Operator
			for _, tb := range []exectest.Table{probe, build} {
				var batches []arrow.RecordBatch
				if len(tb.Rows) > 0 {
					b, err := tb.Batch(mem, 0, len(tb.Rows), 1)
					if err != nil {
						t.Fatal(err)
					}
					batches = append(batches, b)
				}
				sources = append(sources, exectest.Source(ec, tb.Schema, batches))
			}
			probeOpened := false
			kr := &exec.KeyRange{}
			left := &openHook{Operator: sources[0], open: func() {
				probeOpened = true
				if _, _, ok := kr.Get(); !ok && len(c.build) > 0 {
					t.Error("probe side opened before the range was published")
				}
			}}
			key := func() []exec.Expr { return []exec.Expr{exec.NewColumn(0, build.Schema.Field(0).Type, "k")} }
			op, err := exec.NewHashJoin(ec, left, sources[1], exec.InnerJoin, key(), key(), nil)
			if err != nil {
				t.Fatal(err)
			}
			op = exec.WithKeyRanges(op, []*exec.KeyRange{kr})
			if _, err := exec.Drain(context.Background(), op); err != nil {
				t.Fatal(err)
			}
			lo, hi, ok := kr.Get()
			if !ok || !probeOpened {
				t.Fatalf("range published %v, probe opened %v", ok, probeOpened)
			}
			if lo > hi && c.lo > c.hi {
				return
			}
			if lo != c.lo || hi != c.hi {
				t.Fatalf("range [%d, %d], want [%d, %d]", lo, hi, c.lo, c.hi)
			}
		})
	}
}

// openHook calls open when the operator opens.
type openHook struct {
	exec.Operator
	open func()
}

func (o *openHook) Open(ctx context.Context) error {
	o.open()
	return o.Operator.Open(ctx)
}

// TestKeySetExpr: after a hash join publishes its build keys, the scan
// filter keeps exactly the probe rows whose key is a build key (not NULL,
// not a value between two build keys, not one outside their range); over
// a span too wide for the key set it keeps the rows inside the range;
// before publication it keeps every row, NULL keys too.
func TestKeySetExpr(t *testing.T) {
	for _, c := range []struct {
		name         string
		schema       string
		build, probe []string
		want         string // one char per probe row: 1 kept
	}{
		{"int32 set", "k:int32", []string{"12", "NULL", "5", "9"},
			[]string{"5", "6", "9", "NULL", "12", "13", "4", "-2147483648", "2147483647"}, "101010000"},
		{"int64 set", "k:int64", []string{"-3", "40"},
			[]string{"-3", "-2", "39", "40", "41", "NULL"}, "100100"},
		{"dates", "k:date", []string{"2000-01-03", "1999-12-31"},
			[]string{"1999-12-31", "2000-01-01", "2000-01-03", "2000-01-04"}, "1010"},
		{"span too wide: range only", "k:int64", []string{"0", "1099511627776"},
			[]string{"0", "1", "1099511627775", "1099511627776", "1099511627777", "-1", "NULL"}, "1111000"},
		{"no build key", "k:int32", nil, []string{"1", "NULL"}, "00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ec := exec.NewContext(mem)
			ctx := context.Background()
			build := exectest.NewTable(t, c.schema, c.build...)
			probe := exectest.NewTable(t, c.schema, c.probe...)
			pb, err := probe.Batch(mem, 0, len(probe.Rows), 1)
			if err != nil {
				t.Fatal(err)
			}
			defer pb.Release()
			kr := &exec.KeyRange{}
			e := &exec.KeySetExpr{Index: 0, Name: "k", Range: kr}
			mask := func() string {
				a, err := e.Eval(ctx, ec, pb)
				if err != nil {
					t.Fatal(err)
				}
				defer a.Release()
				if a.NullN() != 0 || a.Len() != len(c.probe) {
					t.Fatalf("mask of %d rows with %d NULLs", a.Len(), a.NullN())
				}
				var s []byte
				for i := range a.Len() {
					s = append(s, "01"[btoi(a.(*array.Boolean).Value(i))])
				}
				return string(s)
			}
			if got := mask(); got != strings.Repeat("1", len(c.probe)) {
				t.Fatalf("before publication: %s, want every row", got)
			}
			var batches []arrow.RecordBatch
			if len(build.Rows) > 0 {
				b, err := build.Batch(mem, 0, len(build.Rows), 1)
				if err != nil {
					t.Fatal(err)
				}
				batches = append(batches, b)
			}
			key := func() []exec.Expr { return []exec.Expr{exec.NewColumn(0, build.Schema.Field(0).Type, "k")} }
			op, err := exec.NewHashJoin(ec, exectest.Source(ec, probe.Schema, nil), exectest.Source(ec, build.Schema, batches), exec.InnerJoin, key(), key(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exec.Drain(ctx, exec.WithKeyRanges(op, []*exec.KeyRange{kr})); err != nil {
				t.Fatal(err)
			}
			if got := mask(); got != c.want {
				t.Fatalf("kept %s, want %s", got, c.want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// publishedKeys returns a KeyRange published by a hash join whose build
// side holds keys (of type typ; nil entries are NULL).
func publishedKeys(t testing.TB, mem memory.Allocator, typ arrow.DataType, keys []*int64) *exec.KeyRange {
	ec := exec.NewContext(mem)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: typ, Nullable: true}}, nil)
	build := intBatch(mem, schema, keys)
	key := func() []exec.Expr { return []exec.Expr{exec.NewColumn(0, typ, "k")} }
	op, err := exec.NewHashJoin(ec, exectest.Source(ec, schema, nil), exectest.Source(ec, schema, []arrow.RecordBatch{build}), exec.InnerJoin, key(), key(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kr := &exec.KeyRange{}
	if _, err := exec.Drain(context.Background(), exec.WithKeyRanges(op, []*exec.KeyRange{kr})); err != nil {
		t.Fatal(err)
	}
	return kr
}

// intBatch is a one-column batch of vals (nil: NULL) of schema's int32 or
// int64 column.
func intBatch(mem memory.Allocator, schema *arrow.Schema, vals []*int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, v := range vals {
		switch fb := b.Field(0).(type) {
		case *array.Int32Builder:
			if v == nil {
				fb.AppendNull()
			} else {
				fb.Append(int32(*v))
			}
		case *array.Int64Builder:
			if v == nil {
				fb.AppendNull()
			} else {
				fb.Append(*v)
			}
		}
	}
	return b.NewRecordBatch()
}

// TestKeySetExprRandom: over random keys (int32 and int64, with and
// without NULLs, spans inside and beyond the key set's bitmap, extreme
// values) and probe batches sliced at every offset within a byte and with
// lengths that are not multiples of 8, the mask keeps exactly the rows
// whose key is a non-NULL build key (or, over a wide span, a non-NULL
// key within the build keys' range).
func TestKeySetExprRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 18))
	for iter := range 300 {
		typ := arrow.DataType(arrow.PrimitiveTypes.Int32)
		if iter%2 == 1 {
			typ = arrow.PrimitiveTypes.Int64
		}
		wide := iter%5 == 4 && typ.ID() == arrow.INT64
		nullShare := []float64{0, 0.1, 0.9}[iter%3]
		// Keys near lo so that a small range holds the build keys, plus
		// far-away extremes on the probe side only.
		lo := rng.Int64N(1<<20) - 1<<19
		span := rng.Int64N(200) + 1
		var build []*int64
		isKey := map[int64]bool{}
		bmin, bmax := int64(math.MaxInt64), int64(math.MinInt64)
		for range rng.IntN(30) {
			if rng.Float64() < nullShare {
				build = append(build, nil)
				continue
			}
			k := lo + rng.Int64N(span)
			if wide && rng.IntN(4) == 0 {
				k = lo + 1<<40
			}
			build = append(build, &k)
			isKey[k] = true
			bmin, bmax = min(bmin, k), max(bmax, k)
		}
		var probe []*int64
		n := rng.IntN(100) + 1
		for range n {
			var k int64
			switch rng.IntN(10) {
			case 0:
				probe = append(probe, nil)
				continue
			case 1:
				k = []int64{math.MinInt32, math.MaxInt32, lo - 1, bmax + 1}[rng.IntN(4)]
				if typ.ID() == arrow.INT64 {
					k = []int64{math.MinInt64, math.MaxInt64, lo - 1, bmax + 1, lo + 1<<40}[rng.IntN(5)]
				}
			default:
				k = lo - 2 + rng.Int64N(span+4)
			}
			probe = append(probe, &k)
		}
		t.Run(fmt.Sprint(iter), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ec := exec.NewContext(mem)
			kr := publishedKeys(t, mem, typ, build)
			schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: typ, Nullable: true}}, nil)
			whole := intBatch(mem, schema, probe)
			defer whole.Release()
			off := rng.IntN(min(9, n))
			pb := whole.NewSlice(int64(off), int64(n))
			defer pb.Release()
			a, err := (&exec.KeySetExpr{Index: 0, Name: "k", Range: kr}).Eval(context.Background(), ec, pb)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Release()
			if a.NullN() != 0 || a.Len() != n-off {
				t.Fatalf("mask of %d rows with %d NULLs, want %d without", a.Len(), a.NullN(), n-off)
			}
			for i, v := range probe[off:] {
				want := v != nil && (isKey[*v] || bmax-bmin >= 1<<23 && *v >= bmin && *v <= bmax)
				if got := a.(*array.Boolean).Value(i); got != want {
					t.Fatalf("row %d (key %v): kept %v, want %v; build %d keys in [%d, %d]", off+i, fmtKey(v), got, want, len(isKey), bmin, bmax)
				}
			}
		})
	}
}

func fmtKey(v *int64) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(*v)
}

// BenchmarkKeySetExpr: the mask over 64Ki int32 probe keys spread over
// 86,400 values (time_dim's keys), 1% NULL, against 1,800 build keys (the
// half hour of TPC-DS q88's subqueries).
func BenchmarkKeySetExpr(b *testing.B) {
	mem := memory.NewGoAllocator()
	ec := exec.NewContext(mem)
	var build, probe []*int64
	for k := int64(30_600); k < 32_400; k++ {
		build = append(build, &k)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 16 {
		if rng.IntN(100) == 0 {
			probe = append(probe, nil)
			continue
		}
		k := rng.Int64N(86_400)
		probe = append(probe, &k)
	}
	kr := publishedKeys(b, mem, arrow.PrimitiveTypes.Int32, build)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	pb := intBatch(mem, schema, probe)
	defer pb.Release()
	e := &exec.KeySetExpr{Index: 0, Name: "k", Range: kr}
	b.SetBytes(int64(len(probe)) * 4)
	for b.Loop() {
		a, err := e.Eval(context.Background(), ec, pb)
		if err != nil {
			b.Fatal(err)
		}
		a.Release()
	}
}

// BenchmarkKeySetFilters filters 64K rows of five int32 key columns and a
// decimal by a key set on each key, as one filter of their AND chain
// ("chained", narrowing to the survivors) and of one KeySetsExpr
// ("keysets"). With sel=half each set keeps half the keys (1/32 of the
// rows pass all five); with sel=last2pct the fifth keeps 1/50 of them (a
// date key set last, as on q25's store_sales).
func BenchmarkKeySetFilters(b *testing.B) {
	mem := memory.NewGoAllocator()
	keys := func(step int64) *exec.KeyRange {
		var build []*int64
		for k := int64(0); k < 1000; k += step {
			build = append(build, &k)
		}
		return publishedKeys(b, mem, arrow.PrimitiveTypes.Int32, build)
	}
	half, few := keys(2), keys(50)
	fields := []arrow.Field{{Name: "d", Type: &arrow.Decimal128Type{Precision: 7, Scale: 2}}}
	for c := range 5 {
		fields = append(fields, arrow.Field{Name: fmt.Sprint("k", c), Type: arrow.PrimitiveTypes.Int32})
	}
	schema := arrow.NewSchema(fields, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	var in []arrow.RecordBatch
	for range 64 {
		for range 1024 {
			rb.Field(0).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(1e6)))
			for c := 1; c <= 5; c++ {
				rb.Field(c).(*array.Int32Builder).Append(int32(rng.IntN(1000)))
			}
		}
		in = append(in, rb.NewRecordBatch())
	}
	defer release(in)
	for _, sel := range []string{"half", "last2pct"} {
		for _, mode := range []string{"chained", "keysets"} {
			b.Run(fmt.Sprintf("sel=%s/%s", sel, mode), func(b *testing.B) {
				var sets []*exec.KeySetExpr
				for c := 1; c <= 5; c++ {
					kr := half
					if c == 5 && sel == "last2pct" {
						kr = few
					}
					sets = append(sets, &exec.KeySetExpr{Index: c, Name: fields[c].Name, Range: kr})
				}
				var rows int64
				cpu0 := cpuTime()
				for b.Loop() {
					ec := exec.NewContext(mem)
					var pred exec.Expr = exec.NewKeySets(sets)
					if mode == "chained" {
						pred = sets[0]
						for _, s := range sets[1:] {
							var err error
							if pred, err = exec.NewCall("and", pred, s); err != nil {
								b.Fatal(err)
							}
						}
					}
					n, err := exec.Drain(context.Background(), exec.NewFilter(ec, exectest.Source(ec, schema, retained(in)), pred))
					if err != nil {
						b.Fatal(err)
					}
					rows = n
				}
				b.ReportMetric(float64(rows), "rows/op")
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// TestKeySetsExprRandom: the AND of several key sets (int32 and int64
// columns, NULLs, batches sliced at an offset within a byte, lengths that
// are not multiples of 8) keeps exactly the rows every set alone keeps,
// batch after batch while its order of the sets adapts to what they
// dropped, with one set that drops nearly every row and one never
// published (which keeps every row).
func TestKeySetsExprRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 18))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ec := exec.NewContext(mem)
	types := []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64}
	var fields []arrow.Field
	var sets []*exec.KeySetExpr
	for c, typ := range types {
		fields = append(fields, arrow.Field{Name: fmt.Sprint("k", c), Type: typ, Nullable: true})
		kr := &exec.KeyRange{}
		if c < 3 {
			// Set c keeps about 1/(1+10c) of the keys 0..99 (set 0 all).
			var build []*int64
			for k := range int64(100) {
				if rng.IntN(1+10*c) == 0 {
					build = append(build, &k)
				}
			}
			kr = publishedKeys(t, mem, typ, build)
		}
		sets = append(sets, &exec.KeySetExpr{Index: c, Name: fields[c].Name, Range: kr})
	}
	schema := arrow.NewSchema(fields, nil)
	all := exec.NewKeySets(sets)
	for iter := range 60 {
		n := rng.IntN(3000) + 1
		cols := make([]arrow.Array, len(types))
		for c, typ := range types {
			var vals []*int64
			for range n {
				k := rng.Int64N(104) - 2
				if rng.IntN(20) == 0 {
					vals = append(vals, nil)
				} else {
					vals = append(vals, &k)
				}
			}
			one := intBatch(mem, arrow.NewSchema([]arrow.Field{{Name: "k", Type: typ, Nullable: true}}, nil), vals)
			cols[c] = one.Column(0)
			cols[c].Retain()
			one.Release()
		}
		whole := array.NewRecordBatch(schema, cols, int64(n))
		for _, c := range cols {
			c.Release()
		}
		off := rng.IntN(min(9, n))
		b := whole.NewSlice(int64(off), int64(n))
		whole.Release()
		got, err := all.Eval(context.Background(), ec, b)
		if err != nil {
			t.Fatal(err)
		}
		if got.NullN() != 0 || got.Len() != n-off {
			t.Fatalf("batch %d: mask of %d rows with %d NULLs, want %d without", iter, got.Len(), got.NullN(), n-off)
		}
		want := make([]bool, n-off)
		for i := range want {
			want[i] = true
		}
		for _, s := range sets {
			a, err := s.Eval(context.Background(), ec, b)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				want[i] = want[i] && a.(*array.Boolean).Value(i)
			}
			a.Release()
		}
		for i, w := range want {
			if g := got.(*array.Boolean).Value(i); g != w {
				t.Fatalf("batch %d (%d rows from %d), row %d: kept %v, want %v", iter, n-off, off, i, g, w)
			}
		}
		got.Release()
		b.Release()
	}
}
