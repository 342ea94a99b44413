package tablestore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
// than half distinct); every row reads back either way.
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
		tbl, err := s.CreateTable(ctx, Ident{"db", name}, TableDef{Schema: sc}, false)
		if err != nil {
			t.Fatal(err)
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
		eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
		wantDict := map[string]bool{
			"s": !(seenS >= 64 && 2*len(sampleS) > seenS),
			"b": !(seenB >= 64 && 2*len(sampleB) > seenB),
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
