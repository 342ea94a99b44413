package tablestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore/meta"
)

func TestColumnStats(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: sc, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := tbl.ColumnStats(ctx, 0)
	if err != nil || empty.Rows != 0 || empty.Columns[1].Range != NoRange || empty.Columns[1].NDV != 0 {
		t.Fatalf("empty table: %+v %v", empty, err)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, 10, 1.5, "m"}, {2, 12, nil, "b"}, {3, nil, nil, nil}})
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{4, 11, -2.0, "x"}, {5, 11, nil, nil}})
	st, err := tbl.ColumnStats(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.SnapshotID != 2 || st.Rows != 5 {
		t.Fatalf("snapshot %d rows %d", st.SnapshotID, st.Rows)
	}
	want := []ColumnStats{
		{NullCount: 0, Range: NumericRange, MinNum: 1, MaxNum: 5, NDV: 5},   // primary key: rows
		{NullCount: 1, Range: NumericRange, MinNum: 10, MaxNum: 12, NDV: 3}, // bounded by max-min+1
		{NullCount: 3, Range: NumericRange, MinNum: -2, MaxNum: 1.5},        // floats: no NDV
		// Strings: distinct values counted per file, the largest count
		// taken ({m, b} and {x}: 2, a lower bound of the 3).
		{NullCount: 2, Range: StringRange, MinStr: "b", MaxStr: "x", NDV: 2},
	}
	for i, w := range want {
		if st.Columns[i] != w {
			t.Errorf("column %s: got %+v, want %+v", sc.Field(i).Name, st.Columns[i], w)
		}
	}
	// Kept for the snapshot, through another handle too, and made anew
	// for the next snapshot.
	other, err := s.Table(ctx, Ident{"db", "t"})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := other.ColumnStats(ctx, 0); err != nil || again != st {
		t.Fatalf("the same snapshot's statistics made again (%v)", err)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{6, 20, nil, "z"}})
	if next, err := other.ColumnStats(ctx, 0); err != nil || next.SnapshotID != 3 || next.Rows != 6 || next.Columns[1].MaxNum != 20 {
		t.Fatalf("after a commit: %+v %v", next, err)
	}
	if prev, err := other.ColumnStats(ctx, 2); err != nil || prev.Rows != 5 {
		t.Fatalf("snapshot 2 after a commit: %+v %v", prev, err)
	}
	// One distinct value: NDV 1, whatever the type.
	one, err := s.CreateTable(ctx, Ident{"db", "one"}, TableDef{Schema: sc}, false)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, one, mem, WriteOptions{}, Insert, [][]any{{1, 7, 2.5, "TN"}, {2, 7, 2.5, "TN"}, {3, nil, nil, nil}})
	ost, err := one.ColumnStats(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 4; i++ {
		if ost.Columns[i].NDV != 1 {
			t.Errorf("single-valued column %s: NDV %v", sc.Field(i).Name, ost.Columns[i].NDV)
		}
	}
	// Past maxTrackedNDV distinct strings in a file the count is unknown.
	many, err := s.CreateTable(ctx, Ident{"db", "many"}, TableDef{Schema: sc}, false)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for i := range maxTrackedNDV + 1 {
		rows = append(rows, []any{i, i % 7, nil, fmt.Sprint("v", i%(maxTrackedNDV+1))})
	}
	writeRows(t, many, mem, WriteOptions{}, Insert, rows[:maxTrackedNDV])
	mst, err := many.ColumnStats(ctx, 0)
	if err != nil || mst.Columns[3].NDV != maxTrackedNDV {
		t.Fatalf("%d distinct strings: NDV %v, %v", maxTrackedNDV, mst.Columns[3].NDV, err)
	}
	writeRows(t, many, mem, WriteOptions{}, Insert, rows)
	if mst, err = many.ColumnStats(ctx, 0); err != nil || mst.Columns[3].NDV != 0 {
		t.Fatalf("a file with %d distinct strings: NDV %v, %v; want unknown", maxTrackedNDV+1, mst.Columns[3].NDV, err)
	}
	// Files of one value each (partitions, time ranges): the distinct file
	// bounds count, not the largest count of one file.
	parts, err := s.CreateTable(ctx, Ident{"db", "parts"}, TableDef{Schema: sc}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"a", "b", "c", "b"} {
		writeRows(t, parts, mem, WriteOptions{}, Insert, [][]any{{i, i, nil, v}, {i + 10, i, nil, v}})
	}
	if pst, err := parts.ColumnStats(ctx, 0); err != nil || pst.Columns[3].NDV != 3 {
		t.Fatalf("files of one value each of a, b, c, b: NDV %v, %v; want 3", pst.Columns[3].NDV, err)
	}
	// An older snapshot has its own statistics.
	st1, err := tbl.ColumnStats(ctx, 1)
	if err != nil || st1.Rows != 3 || st1.Columns[1].MaxNum != 12 || st1.Columns[3].MaxStr != "m" {
		t.Fatalf("snapshot 1: %+v %v", st1, err)
	}
	if _, err := tbl.ColumnStats(ctx, 9); err == nil {
		t.Fatal("missing snapshot: want an error")
	}
}

// randomBytesColumn builds a string or binary column of n values of up to
// 40 bytes from a small alphabet (so prefixes tie), a tenth of them NULL,
// then slices off a random head and tail.
func randomBytesColumn(rng *rand.Rand, mem memory.Allocator, binary bool, n int) arrow.Array {
	val := func() []byte {
		v := make([]byte, rng.IntN(40))
		for i := range v {
			v[i] = "ab\xffé"[rng.IntN(4)]
		}
		return v
	}
	var b array.Builder
	if binary {
		b = array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	} else {
		b = array.NewStringBuilder(mem)
	}
	defer b.Release()
	for range n {
		switch {
		case rng.IntN(10) == 0:
			b.AppendNull()
		case binary:
			b.(*array.BinaryBuilder).Append(val())
		default:
			b.(*array.StringBuilder).Append(string(val()))
		}
	}
	a := b.NewArray()
	defer a.Release()
	lo := rng.IntN(n/4 + 1)
	hi := n - rng.IntN(n/4+1)
	return array.NewSlice(a, int64(lo), int64(max(lo, hi)))
}

// TestColumnStatsBytes: the bounds of string and binary columns (typed
// loops over offsets) are those of comparing every pair of rows, for
// random sliced columns with NULLs, all-NULL and empty ones included.
func TestColumnStatsBytes(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 5))
	mem := newMem(t)
	for iter := range 400 {
		a := randomBytesColumn(rng, mem, iter%2 == 1, rng.IntN(200))
		got := columnStats(7, a)
		lo, hi := compareBounds(a)
		var want meta.ColStats
		if lo < 0 {
			want = meta.ColStats{ID: 7, NullCount: int64(a.NullN())}
		} else {
			// The generic path's rendering of the same rows.
			want = boundsStats(7, a, lo, hi)
		}
		render := func(cs meta.ColStats) string {
			return fmt.Sprintf("id %d nulls %d min %s max %s", cs.ID, cs.NullCount, datumStr(cs.Min), datumStr(cs.Max))
		}
		if render(got) != render(want) {
			t.Fatalf("iter %d (%s, %d rows): got %s, want %s", iter, a.DataType(), a.Len(), render(got), render(want))
		}
		a.Release()
	}
}

// BenchmarkColumnStatsString: the bounds of a commit's string column
// (9,200 values of 80-120 bytes, as Nexmark's bid extra).
func BenchmarkColumnStatsString(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for range 9200 {
		v := make([]byte, 80+rng.IntN(41))
		for i := range v {
			v[i] = byte('a' + rng.IntN(26))
		}
		sb.Append(string(v))
	}
	a := sb.NewArray()
	defer a.Release()
	sb.Release()
	b.ResetTimer()
	for b.Loop() {
		columnStats(1, a)
	}
}

// TestFooterBounds: the bounds of string and binary columns taken from
// the Parquet footer's chunk statistics (footerBounds) are those of
// comparing every value, for random sliced columns with NULLs (all-NULL
// and long values included) written as one or several row groups, into an
// append table (large and small commits, whose files keep statistics or
// not) and into a key table's level 0 (statistics for the key only). A
// value longer than Parquet keeps statistics of leaves the bounds unknown.
func TestFooterBounds(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 9))
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	render := func(cs meta.ColStats) string {
		return fmt.Sprintf("nulls %d min %s max %s", cs.NullCount, datumStr(cs.Min), datumStr(cs.Max))
	}
	for iter := range 60 {
		n := 1 + rng.IntN(3000)
		s1 := randomBytesColumn(rng, mem, false, n+n/2)
		b1 := randomBytesColumn(rng, mem, true, n+n/2)
		n = min(s1.Len(), b1.Len())
		if n == 0 {
			s1.Release()
			b1.Release()
			continue
		}
		sl := func(a arrow.Array) arrow.Array {
			defer a.Release()
			return array.NewSlice(a, 0, int64(n))
		}
		s1, b1 = sl(s1), sl(b1)
		if iter%7 == 3 {
			// A value beyond Parquet's 4,096-byte statistics.
			sb := array.NewStringBuilder(mem)
			for i := range n {
				if i == n/2 {
					sb.Append(strings.Repeat("z", 5000))
				} else {
					sb.Append(s1.(*array.String).Value(i))
				}
			}
			s1.Release()
			s1 = sb.NewArray()
			sb.Release()
		}
		ib := array.NewInt64Builder(mem)
		for i := range n {
			ib.Append(int64(iter*10000 + i))
		}
		k := ib.NewArray()
		ib.Release()
		sch := arrow.NewSchema([]arrow.Field{
			{Name: "k", Type: arrow.PrimitiveTypes.Int64},
			{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		}, nil)
		rec := array.NewRecordBatch(sch, []arrow.Array{k, s1, b1}, int64(n))
		var pk []string
		if iter%3 == 2 {
			pk = []string{"k"}
		}
		opts := map[string]string{"file.row-group-rows": strconv.Itoa(1 + rng.IntN(n)), "write-only": "true"}
		tbl, err := s.CreateTable(ctx, Ident{"db", fmt.Sprintf("t%d", iter)}, TableDef{Schema: sch, PrimaryKey: pk, Options: opts}, false)
		if err != nil {
			t.Fatal(err)
		}
		w := tbl.NewWrite(WriteOptions{})
		if err := w.Write(ctx, rec, Insert); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		live := liveEntries(t, tbl)
		if len(live) != 1 {
			t.Fatalf("iter %d: %d files, want 1", iter, len(live))
		}
		for c, col := range []arrow.Array{s1, b1} {
			got := live[0].File.ValueStats[1+c]
			want := columnStats(got.ID, col)
			ok := render(got) == render(want)
			if lo, hi := compareBounds(col); !ok && c == 0 && lo >= 0 && max(len(cellString(col, lo)), len(cellString(col, hi))) > 4096 {
				// Parquet kept no bound of this file's.
				want.Min, want.Max = nil, nil
				ok = render(got) == render(want)
			}
			if !ok {
				t.Fatalf("iter %d (%d rows, %s, key %v): column %d: got %s, want %s", iter, n, opts, pk, c, render(got), render(want))
			}
		}
		rec.Release()
		k.Release()
		s1.Release()
		b1.Release()
	}
}

// TestStatsOutliveBatch: a file's manifest entry (its value bounds, keys
// and partition) holds no string of the batch it was written from: the
// batch's buffers overwritten after the commit (a client's message freed
// and reused) leave the entry as it was. They pointed into the batch once,
// which kept every commit's message alive for as long as its manifest
// entry.
func TestStatsOutliveBatch(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "p", Type: arrow.BinaryTypes.String},
		{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for i, def := range []TableDef{
		{Schema: sch, PrimaryKey: []string{"p", "k"}, PartitionKeys: []string{"p"}},
		{Schema: sch, PrimaryKey: []string{"p", "k"}},
		{Schema: sch, PartitionKeys: []string{"p"}},
		{Schema: sch},
		{Schema: sch}, // a commit too small for file statistics
	} {
		def.Options = map[string]string{"write-only": "true"}
		name := fmt.Sprintf("t%d", i)
		n := 2000
		if i == 4 {
			n = 20
		}
		tbl, err := s.CreateTable(ctx, Ident{"db", name}, def, false)
		if err != nil {
			t.Fatal(err)
		}
		var rows [][]any
		for j := range n {
			rows = append(rows, []any{"part", fmt.Sprintf("key-%05d", j), fmt.Sprintf("value-%05d", n-j)})
		}
		rec := makeBatch(t, mem, sch, rows)
		w := tbl.NewWrite(WriteOptions{})
		if err := w.Write(ctx, rec, Insert); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		render := func() string {
			var b strings.Builder
			for _, e := range liveEntries(t, tbl) {
				fmt.Fprintf(&b, "part %s keys %s %s;", datumsStr(e.Partition), datumsStr(e.File.MinKey), datumsStr(e.File.MaxKey))
				for _, cs := range e.File.ValueStats {
					fmt.Fprintf(&b, " %s..%s", datumStr(cs.Min), datumStr(cs.Max))
				}
			}
			return strings.Clone(b.String())
		}
		before := render()
		for _, c := range rec.Columns() {
			for _, b := range c.Data().Buffers() {
				if b != nil {
					clear(b.Bytes())
				}
			}
		}
		if after := render(); after != before {
			t.Fatalf("%s: the manifest entry changed with the batch's buffers:\n%s\nwas\n%s", name, after, before)
		}
		rec.Release()
	}
}

func datumsStr(ds []meta.Datum) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, datumStr(&d))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// A clipped lower bound keeps its 64 bytes, not the value it was cut
// from: the prefix of a copy of each long value kept the whole copy alive
// with the manifest entry.
func TestClippedBoundsKeepPrefixOnly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	long := strings.Repeat("x", 1<<20)
	bld := array.NewStringBuilder(mem)
	defer bld.Release()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := make([]meta.ColStats, 64) // 64 MB of values
	for i := range kept {
		bld.Append(long + "a")
		bld.Append(long + "b")
		a := bld.NewArray()
		kept[i] = boundsStats(1, a, 0, 1)
		a.Release()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 8<<20 {
		t.Fatalf("64 clipped bounds hold %d MB", held>>20)
	}
	if got := *kept[0].Min.S; got != long[:64] || kept[0].Max != nil {
		t.Fatalf("bounds %q..%v, want a 64-byte prefix and no upper bound", got, kept[0].Max)
	}
	runtime.KeepAlive(kept)
}
