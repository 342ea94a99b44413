package tablestore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// TestDictionaryByDistinctness: a data file gets a dictionary for a string
// column whose first batch repeats values, and none for one whose first
// batch's values mostly differ (sampled: at least 64 non-null values, more
// than half distinct); an append table's commit file too small to be
// copied by compaction (fewer than minCopyRows rows: 64 here) nor
// concatenated (too few bytes), which compaction rewrites, gets no
// dictionary, no statistics and no page index at all, and a larger one gets
// all three; every row reads back either way.
func TestDictionaryByDistinctness(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 9))
	s, mem, dir := newTestStore(t)
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for iter := range 12 {
		n := 1 + rng.IntN(3000)
		if iter < 3 {
			n = 1 + rng.IntN(63) // below minCopyRows
		}
		// Mostly distinct values in one column, repeating ones in the other.
		distinctS, distinctB := n, 1+rng.IntN(max(1, n/4))
		if iter%2 == 1 {
			distinctS, distinctB = distinctB, distinctS
		}
		nullShare := rng.Float64()
		var rows [][]any
		var want []string
		// The sample's distinct share, as mostlyDistinct computes it.
		sampleS, sampleB := map[string]bool{}, map[string]bool{}
		var seenS, seenB int
		for i := range n {
			row := []any{i, nil, nil}
			if rng.Float64() >= nullShare {
				row[1] = fmt.Sprintf("s%d", rng.IntN(distinctS))
				if seenS < dictionarySample {
					sampleS[row[1].(string)] = true
					seenS++
				}
			}
			if rng.Float64() >= nullShare {
				row[2] = fmt.Sprintf("b%d", rng.IntN(distinctB))
				if seenB < dictionarySample {
					sampleB[row[2].(string)] = true
					seenB++
				}
			}
			rows = append(rows, row)
			want = append(want, rowString(row))
		}
		name := fmt.Sprintf("t%d", iter)
		tbl, err := s.CreateTable(ctx, Ident{"db", name}, TableDef{Schema: sc,
			Options: map[string]string{"file.row-group-rows": "1024"}}, false)
		if err != nil {
			t.Fatal(err)
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
		eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
		rewritten := n < 64
		wantDict := map[string]bool{
			"s": !rewritten && !(seenS >= 64 && 2*len(sampleS) > seenS),
			"b": !rewritten && !(seenB >= 64 && 2*len(sampleB) > seenB),
		}
		files := 0
		err = eachParquetFile(filepath.Join(dir, "db.db", name), func(_ string, pf *file.Reader, _ int64) error {
			files++
			for col, want := range wantDict {
				idx := pf.MetaData().Schema.ColumnIndexByName(col)
				cc, err := pf.MetaData().RowGroup(0).ColumnChunk(idx)
				if err != nil {
					return err
				}
				if got := cc.HasDictionaryPage(); got != want {
					return fmt.Errorf("iter %d: column %s (%d rows, %d distinct values drawn, %.0f%% NULL): dictionary %v, want %v",
						iter, col, n, map[string]int{"s": distinctS, "b": distinctB}[col], 100*nullShare, got, want)
				}
				stats, err := cc.StatsSet()
				if err != nil {
					return err
				}
				_, indexed := pf.MetaData().RowGroup(0).ColumnIndexLocation(idx)
				if stats == rewritten || indexed == rewritten {
					return fmt.Errorf("iter %d: column %s (%d rows): statistics %v, page index %v; want %v (rewritten by compaction: %v)",
						iter, col, n, stats, indexed, !rewritten, rewritten)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files != 1 {
			t.Fatalf("iter %d: %d data files, want 1", iter, files)
		}
	}
}

func rowString(row []any) string {
	var cells []string
	for _, v := range row {
		switch v := v.(type) {
		case nil:
			cells = append(cells, "NULL")
		default:
			cells = append(cells, fmt.Sprint(v))
		}
	}
	return strings.Join(cells, "|")
}

// TestMostlyDistinctTypes: the heuristic judges the same values alike in
// string, large string, binary and large binary columns (it reads each
// type's values in place).
func TestMostlyDistinctTypes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, distinct := range []int{1, 40, 500, 600, 5000} {
		vals := make([]string, 2000)
		for i := range vals {
			vals[i] = fmt.Sprintf("v%d", i%distinct)
		}
		want := distinct > dictionarySample/2
		for _, typ := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary} {
			b := array.NewBuilder(mem, typ)
			b.AppendNull()
			for _, v := range vals {
				b.(interface{ AppendString(string) }).AppendString(v)
			}
			col := b.NewArray()
			b.Release()
			if got := mostlyDistinct(col); got != want {
				t.Errorf("%s of %d distinct values: mostly distinct %v, want %v", typ, distinct, got, want)
			}
			col.Release()
		}
	}
}

// TestFileCompression: data files are zstd at level 1 by default (Paimon's
// defaults), file.compression picks another codec, and
// file.compression.zstd-level reaches the encoder (a higher level writes
// the same rows smaller); every row reads back each way.
func TestFileCompression(t *testing.T) {
	s, mem, dir := newTestStore(t)
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	var rows [][]any
	var want []string
	for i := range 20000 {
		// Mostly distinct strings (plain pages) from a small alphabet:
		// compressible, more so by a stronger level.
		row := []any{i, fmt.Sprintf("v%x-%d", rng.IntN(1<<20), rng.IntN(8))}
		rows = append(rows, row)
		want = append(want, rowString(row))
	}
	size := map[string]int64{}
	for _, c := range []struct {
		name  string
		opts  map[string]string
		codec compress.Compression
	}{
		{"dflt", nil, compress.Codecs.Zstd},
		{"snappy", map[string]string{"file.compression": "snappy"}, compress.Codecs.Snappy},
		{"zstd19", map[string]string{"file.compression.zstd-level": "19"}, compress.Codecs.Zstd},
	} {
		tbl, err := s.CreateTable(ctx, Ident{"db", c.name}, TableDef{Schema: sc, Options: c.opts}, false)
		if err != nil {
			t.Fatal(err)
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
		eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
		err = eachParquetFile(filepath.Join(dir, "db.db", c.name), func(_ string, pf *file.Reader, bytes int64) error {
			for col := range 2 {
				cc, err := pf.MetaData().RowGroup(0).ColumnChunk(col)
				if err != nil {
					return err
				}
				if cc.Compression() != c.codec {
					return fmt.Errorf("%s: column %d compressed with %s, want %s", c.name, col, cc.Compression(), c.codec)
				}
			}
			size[c.name] += bytes
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if size["zstd19"] >= size["dflt"] {
		t.Fatalf("zstd level 19 wrote %d bytes, level 1 %d: the level is not applied", size["zstd19"], size["dflt"])
	}
	for _, bad := range []string{"0", "23", "x"} {
		_, err := s.CreateTable(ctx, Ident{"db", "bad"}, TableDef{Schema: sc, Options: map[string]string{"file.compression.zstd-level": bad}}, false)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "zstd-level") {
			t.Fatalf("zstd-level %q: want ErrInvalid naming the option, got %v", bad, err)
		}
	}
}

// TestFileCompressionPerLevel: file.compression.per.level ('0:lz4,1:zstd',
// as Paimon spells it) picks the codec of each level's files, and the
// levels it leaves out use file.compression. An append table's commits
// write level 0 with the level-0 codec; its compaction writes level 1 with
// level 1's, rewriting rather than copying row groups of another codec
// (with one codec for both levels it copies them). A key table's commits
// and their changelog files (changelog-producer input) use level 0's codec
// and its full compaction (to level 5) file.compression. Every row reads
// back each way. Bad values fail the CREATE or ALTER that sets them, with
// ErrInvalid naming the option and the table's files left as they were.
// Without either codec option, level-0 files that compaction will rewrite
// are lz4.
func TestFileCompressionPerLevel(t *testing.T) {
	s, mem, dir := newTestStore(t)
	ctx := context.Background()
	// codecs maps each live data file's level to its chunks' codecs, and
	// counts the row groups of the level's files; changelog files count as
	// level -1.
	codecs := func(tbl *Table) (map[int]map[compress.Compression]bool, map[int]int) {
		t.Helper()
		level := map[string]int{}
		for _, e := range liveEntries(t, tbl) {
			level[filepath.Base(e.File.Path)] = e.File.Level
		}
		got, groups := map[int]map[compress.Compression]bool{}, map[int]int{}
		err := eachParquetFile(tbl.st.dir, func(path string, pf *file.Reader, _ int64) error {
			l, ok := level[filepath.Base(path)]
			switch {
			case strings.HasPrefix(filepath.Base(path), "changelog-"):
				l = -1
			case !ok:
				return nil // compacted away, not yet deleted
			}
			if got[l] == nil {
				got[l] = map[compress.Compression]bool{}
			}
			for rg := range pf.NumRowGroups() {
				groups[l]++
				for col := range pf.MetaData().Schema.NumColumns() {
					cc, err := pf.MetaData().RowGroup(rg).ColumnChunk(col)
					if err != nil {
						return err
					}
					got[l][cc.Compression()] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, groups
	}
	only := func(name string, got map[int]map[compress.Compression]bool, level int, want compress.Compression) {
		t.Helper()
		if len(got[level]) != 1 || !got[level][want] {
			t.Fatalf("%s: level %d files compressed with %v, want only %s", name, level, got[level], want)
		}
	}
	// Four commits of 1,100 rows with mostly distinct strings: row groups
	// large enough (file.row-group-rows 16384: minCopyRows 1024) for an
	// append table's compaction to copy them.
	var rows [][]any
	var want []string
	for i := range 4400 {
		row := []any{i, i % 7, fmt.Sprintf("s%09d", i*7919), fmt.Sprintf("c%d", i)}
		rows = append(rows, row)
		want = append(want, rowString(row))
	}
	write := func(tbl *Table) {
		for c := range 4 {
			writeRows(t, tbl, mem, WriteOptions{}, Insert, rows[c*1100:(c+1)*1100])
		}
	}
	appendTable := func(name, perLevel string) *Table {
		t.Helper()
		tbl, err := s.CreateTable(ctx, Ident{"db", name}, TableDef{Schema: copySchema, Options: map[string]string{
			"file.compression.per.level": perLevel, "file.row-group-rows": "16384", "write-only": "true"}}, false)
		if err != nil {
			t.Fatal(err)
		}
		write(tbl)
		got, _ := codecs(tbl)
		only(name, got, 0, compress.Codecs.Lz4Raw)
		if err := tbl.Compact(ctx, true); err != nil {
			t.Fatal(err)
		}
		eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
		return tbl
	}

	rewritten := appendTable("app", " 0 : LZ4 , 1:zstd")
	got, groups := codecs(rewritten)
	only("app", got, 1, compress.Codecs.Zstd)
	if groups[1] != 1 {
		t.Fatalf("app: %d row groups at level 1, want 1 (the lz4 row groups rewritten as zstd, not copied)", groups[1])
	}
	copied := appendTable("applz4", "0:lz4,1:lz4")
	got, groups = codecs(copied)
	only("applz4", got, 1, compress.Codecs.Lz4Raw)
	if groups[1] != 4 {
		t.Fatalf("applz4: %d row groups at level 1, want 4 (copied)", groups[1])
	}

	pk, err := s.CreateTable(ctx, Ident{"db", "pk"}, TableDef{Schema: copySchema, PrimaryKey: []string{"id"}, Options: map[string]string{
		"file.compression.per.level": "0:lz4", "file.compression": "snappy", "changelog-producer": "input", "write-only": "true"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	write(pk)
	got, _ = codecs(pk)
	only("pk", got, 0, compress.Codecs.Lz4Raw)
	only("pk", got, -1, compress.Codecs.Lz4Raw)
	if err := pk.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	got, _ = codecs(pk)
	only("pk", got, 5, compress.Codecs.Snappy)
	eqRows(t, scanAll(t, pk, ScanSpec{}), want...)

	// Without either option, level-0 files that compaction will rewrite
	// are lz4: a key table's, and an append table's of fewer rows than
	// minCopyRows (4,096 here) and too few bytes to be concatenated (16 KiB
	// a column: about 1,600 rows here); either option set, only it counts.
	for _, c := range []struct {
		name   string
		pk     []string
		opts   map[string]string
		rows   int
		level0 compress.Compression
	}{
		{"pkdflt", []string{"id"}, map[string]string{"changelog-producer": "input"}, 4400, compress.Codecs.Lz4Raw},
		{"pkzstd", []string{"id"}, map[string]string{"file.compression": "zstd"}, 1000, compress.Codecs.Zstd},
		{"pkempty", []string{"id"}, map[string]string{"file.compression.per.level": ""}, 1000, compress.Codecs.Zstd},
		{"appsmall", nil, nil, 1000, compress.Codecs.Lz4Raw},
		{"appconcat", nil, nil, 4000, compress.Codecs.Zstd},
		{"appbig", nil, nil, 4096, compress.Codecs.Zstd},
		{"appzstd", nil, map[string]string{"file.compression": "zstd"}, 1000, compress.Codecs.Zstd},
	} {
		tbl, err := s.CreateTable(ctx, Ident{"db", c.name}, TableDef{Schema: copySchema, PrimaryKey: c.pk, Options: c.opts}, false)
		if err != nil {
			t.Fatal(err)
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, rows[:c.rows])
		got, _ := codecs(tbl)
		only(c.name, got, 0, c.level0)
		if c.opts["changelog-producer"] != "" {
			only(c.name, got, -1, c.level0)
		}
		if err := tbl.Compact(ctx, true); err != nil {
			t.Fatal(err)
		}
		got, _ = codecs(tbl)
		delete(got, 0)
		delete(got, -1) // changelog files stay
		for l := range got {
			only(c.name, got, l, compress.Codecs.Zstd)
		}
		if c.pk != nil && got[5] == nil {
			t.Fatalf("%s: no level-5 file after a full compaction: %v", c.name, got)
		}
		var want []string
		for _, row := range rows[:c.rows] {
			want = append(want, rowString(row))
		}
		eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
	}

	snapshot := func() map[string]bool {
		names := map[string]bool{}
		err := filepath.WalkDir(filepath.Join(dir, "db.db"), func(path string, _ os.DirEntry, err error) error {
			names[path] = true
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	before := snapshot()
	for _, bad := range []string{"lz4", "0:lz4:zstd", "abc:lz4", "-1:lz4", "0:brotli", "0:lz4,0:zstd", "0:lz4,", ":zstd"} {
		_, err := s.CreateTable(ctx, Ident{"db", "bad"}, TableDef{Schema: copySchema, Options: map[string]string{"file.compression.per.level": bad}}, false)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "file.compression.per.level") {
			t.Fatalf("per.level %q: want ErrInvalid naming the option, got %v", bad, err)
		}
		err = s.AlterTable(ctx, Ident{"db", "app"}, SetOption{Key: "file.compression.per.level", Value: bad})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "file.compression.per.level") {
			t.Fatalf("ALTER per.level %q: want ErrInvalid naming the option, got %v", bad, err)
		}
	}
	if after := snapshot(); !maps.Equal(before, after) {
		t.Fatalf("refused options changed the files: %d paths before, %d after", len(before), len(after))
	}
	tbl, err := s.Table(ctx, Ident{"db", "app"})
	if err != nil {
		t.Fatal(err)
	}
	if o := tbl.Options()["file.compression.per.level"]; o != " 0 : LZ4 , 1:zstd" {
		t.Fatalf("app's option after refused ALTERs: %q", o)
	}
}

// TestNDVSet: the distinct-hash table counts as a map does, through
// collisions (hashes equal in their low bits, which pick the slot), the
// hash 0 (its empty-slot mark) and repeats, and a set goes back to the
// pool empty.
func TestNDVSet(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for round := range 20 {
		var a statAcc
		a.distinct = ndvSets.Get().(*ndvSet)
		want := map[uint64]bool{}
		for range r.IntN(3 * maxTrackedNDV) {
			var h uint64
			switch r.IntN(4) {
			case 0:
				h = uint64(r.IntN(4)) << 40 // slot 0: a chain of collisions
			case 1:
				h = uint64(r.IntN(maxTrackedNDV)) // repeats, and 0
			default:
				h = r.Uint64()
			}
			if len(want) > maxTrackedNDV {
				break
			}
			want[h] = true
			a.distinct.add(h)
			if a.distinct.n != len(want) {
				t.Fatalf("round %d: %d distinct counted, want %d", round, a.distinct.n, len(want))
			}
		}
		freed := a.distinct
		a.freeDistinct()
		if a.distinct != nil {
			t.Fatal("set kept after free")
		}
		if *freed != (ndvSet{}) {
			t.Fatalf("round %d: a set freed to the pool holds %d hashes", round, freed.n)
		}
	}
}

// BenchmarkAddDistinct counts the distinct values of a commit's string
// column (9,200 URLs): 1,000 distinct, all counted; or all distinct, given
// up after maxTrackedNDV+1.
func BenchmarkAddDistinct(b *testing.B) {
	for _, distinct := range []int{1000, 9200} {
		bld := array.NewStringBuilder(memory.DefaultAllocator)
		for i := range 9200 {
			bld.Append(fmt.Sprintf("https://www.nexmark.com/item.htm?query=1&channel_id=%d", i%distinct))
		}
		col := bld.NewArray()
		bld.Release()
		b.Run(fmt.Sprint("distinct=", distinct), func(b *testing.B) {
			for b.Loop() {
				var a statAcc
				a.addDistinct(col)
				a.stats(0)
				a.freeDistinct()
			}
		})
		col.Release()
	}
}
