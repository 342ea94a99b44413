package tablestore

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// TestPageIndexKeepsMatchingRows scans a table whose files span many pages
// with random filters and requires every row the filter matches (evaluated
// here on all rows) among the rows the scan returns: the page index may
// leave out only pages that cannot match. Across the filters, some pages
// must have been skipped, or the test would not test skipping.
func TestPageIndexKeepsMatchingRows(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	s, mem, _ := newTestStore(t)
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: sc}, false)
	if err != nil {
		t.Fatal(err)
	}
	const n = 60000
	type row struct {
		k int64
		s *string
		x *int64
	}
	rows := make([]row, n)
	var data [][]any
	for i := range rows {
		r := row{k: int64(i)}
		cells := []any{i, nil, nil}
		if rng.IntN(10) > 0 {
			v := fmt.Sprintf("s%04d", i/100) // clustered like k
			r.s, cells[1] = &v, v
		}
		if rng.IntN(4) > 0 {
			v := rng.Int64N(1000)
			r.x, cells[2] = &v, int(v)
		}
		rows[i] = r
		data = append(data, cells)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, data)
	// A filter and its meaning on a row (nil: NULL).
	type filter struct {
		p    Predicate
		eval func(r row) *bool
	}
	b := func(v bool) *bool { return &v }
	var gen func(depth int) filter
	gen = func(depth int) filter {
		switch k := rng.IntN(6); {
		case k < 2 || depth > 2:
			op := CmpOp(rng.IntN(6))
			v := rng.Int64N(n + 100)
			return filter{Compare{Column: "k", Op: op, Value: scalar.NewInt64Scalar(v)}, func(r row) *bool { return b(cmpOp(op, r.k, v)) }}
		case k == 2:
			var vals []scalar.Scalar
			var strs []string
			for range 1 + rng.IntN(3) {
				v := fmt.Sprintf("s%04d", rng.IntN(n/100+5))
				vals, strs = append(vals, scalar.NewStringScalar(v)), append(strs, v)
			}
			return filter{In{Column: "s", Values: vals}, func(r row) *bool {
				if r.s == nil {
					return nil
				}
				return b(slices.Contains(strs, *r.s))
			}}
		case k == 3:
			col := []string{"s", "x"}[rng.IntN(2)]
			return filter{IsNull{Column: col}, func(r row) *bool {
				if col == "s" {
					return b(r.s == nil)
				}
				return b(r.x == nil)
			}}
		case k == 4:
			l, r := gen(depth+1), gen(depth+1)
			and := rng.IntN(2) == 0
			p := Predicate(Or{l.p, r.p})
			if and {
				p = And{l.p, r.p}
			}
			return filter{p, func(x row) *bool { return logic(and, l.eval(x), r.eval(x)) }}
		default:
			in := gen(depth + 1)
			return filter{Not{in.p}, func(r row) *bool {
				v := in.eval(r)
				if v == nil {
					return nil
				}
				return b(!*v)
			}}
		}
	}
	var skipped int64
	for q := range 60 {
		f := gen(0)
		sc, err := tbl.NewScan(ctx, ScanSpec{Filter: f.p})
		if err != nil {
			t.Fatal(err)
		}
		got := readScan(t, sc)
		skipped += sc.Stats().PageRowsSkipped
		for _, r := range rows {
			if v := f.eval(r); v == nil || !*v {
				continue
			}
			want := strings.Join([]string{fmt.Sprint(r.k), str(r.s), str(r.x)}, "|")
			if _, ok := slices.BinarySearch(got, want); !ok {
				t.Fatalf("seed %d filter %d (%s): matching row %s missing from the scan", seed, q, f.p, want)
			}
		}
	}
	if skipped == 0 {
		t.Fatalf("seed %d: no filter skipped a page", seed)
	}
}

func cmpOp(op CmpOp, a, b int64) bool {
	switch op {
	case EQ:
		return a == b
	case NE:
		return a != b
	case LT:
		return a < b
	case LE:
		return a <= b
	case GT:
		return a > b
	}
	return a >= b
}

// logic is SQL's three-valued AND (and) or OR.
func logic(and bool, l, r *bool) *bool {
	t, f := true, false
	if and {
		if (l != nil && !*l) || (r != nil && !*r) {
			return &f
		}
		if l == nil || r == nil {
			return nil
		}
		return &t
	}
	if (l != nil && *l) || (r != nil && *r) {
		return &t
	}
	if l == nil || r == nil {
		return nil
	}
	return &f
}

func str[T any](v *T) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(*v)
}

// TestSecondsFilterKeepsRows filters a TIMESTAMP(0) column, whose Parquet
// statistics are in milliseconds: row-group and page statistics must not
// prune by them (they did: every row was lost).
func TestSecondsFilterKeepsRows(t *testing.T) {
	s, mem, _ := newTestStore(t)
	ctx := context.Background()
	typ := &arrow.TimestampType{Unit: arrow.Second}
	sc := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: typ}}, nil)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: sc}, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(mem, sc)
	for i := range 100000 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1000 + i))
	}
	commitRecord(t, tbl, b.NewRecordBatch())
	b.Release()
	for _, op := range []CmpOp{EQ, LE, GE} {
		got := scanAll(t, tbl, ScanSpec{Filter: Compare{Column: "ts", Op: op, Value: scalar.NewTimestampScalar(51000, typ)}})
		if len(got) == 0 {
			t.Fatalf("ts %s 51000: no row returned", op)
		}
	}
}

// TestPagesReadCachedByRows: a scan whose filter skips pages caches the
// chunks it decodes in part under their rows, and the file's page index
// and row group statistics once decoded, so the same scan again decodes
// nothing (no byte added to the cache, a hit per chunk, the statistics
// kept), reads no byte of the file, and returns the same rows; a scan of other pages, and one of all rows, are not served
// those chunks.
func TestPagesReadCachedByRows(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	fsys := &readCountingFS{FS: NewLocalFS()}
	s, err := Open(ctx, fsys, t.TempDir(), Options{Mem: mem, CacheBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: sc}, false)
	if err != nil {
		t.Fatal(err)
	}
	const n = 60000
	var data [][]any
	for i := range n {
		data = append(data, []any{i, fmt.Sprintf("s%05d", i)})
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, data)
	scan := func(p Predicate) ([]string, ScanStats) {
		t.Helper()
		sp, err := tbl.NewScan(ctx, ScanSpec{Filter: p})
		if err != nil {
			t.Fatal(err)
		}
		got := readScan(t, sp)
		s.columns.Wait()
		return got, sp.Stats()
	}
	// want are the rows of k in [lo, hi) the scan must hold.
	check := func(got []string, lo, hi int) {
		t.Helper()
		for i := lo; i < hi; i++ {
			if _, ok := slices.BinarySearch(got, fmt.Sprintf("%d|s%05d", i, i)); !ok {
				t.Fatalf("row %d missing from the scan of [%d, %d)", i, lo, hi)
			}
		}
	}
	low := Compare{Column: "k", Op: LT, Value: scalar.NewInt64Scalar(100)}
	first, st := scan(low)
	if st.PageRowsSkipped == 0 {
		t.Fatal("the filter skipped no page: the test tests nothing")
	}
	check(first, 0, 100)
	cached, hits := s.columns.Stats().Bytes, s.columns.Stats().Hits
	if cached == 0 {
		t.Fatal("nothing decoded in part was cached")
	}
	// The footer statistics the row groups were judged by, decoded once.
	decoded := func() map[any]any {
		m := map[any]any{}
		s.footers.mu.Lock()
		defer s.footers.mu.Unlock()
		for path, e := range s.footers.m {
			e.layout.stats.Range(func(k, v any) bool {
				m[path+fmt.Sprint(k)] = v
				return true
			})
		}
		return m
	}
	stats := decoded()
	if len(stats) == 0 {
		t.Fatal("no row group statistics kept")
	}
	read := fsys.read.Load()
	again, _ := scan(low)
	if got := decoded(); !maps.Equal(got, stats) {
		t.Fatalf("row group statistics decoded again: %v, first %v", got, stats)
	}
	if n := fsys.read.Load() - read; n != 0 {
		t.Fatalf("the same scan again read %d bytes of the data file", n)
	}
	if !slices.Equal(again, first) {
		t.Fatalf("the same scan again gave %d rows, first %d", len(again), len(first))
	}
	if got := s.columns.Stats(); got.Bytes != cached || got.Hits == hits {
		t.Fatalf("the same scan again: %d bytes cached (was %d), %d hits (was %d): it decoded again", got.Bytes, cached, got.Hits, hits)
	}
	high := Compare{Column: "k", Op: GE, Value: scalar.NewInt64Scalar(n - 100)}
	got, _ := scan(high)
	check(got, n-100, n)
	if slices.Contains(got, first[0]) {
		t.Fatalf("the scan of the last rows holds %s of the first pages", first[0])
	}
	if all, _ := scan(nil); len(all) != n {
		t.Fatalf("the scan of all rows gave %d rows, want %d", len(all), n)
	}
}
