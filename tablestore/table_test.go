package tablestore

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func TestPrimaryKeyMergeAcrossCommits(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	id := Ident{"db", "t"}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2", "write-only": "true"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if f := tbl.Schema().Field(0); f.Nullable {
		t.Fatalf("key column should be non-null: %v", f)
	}
	s1 := writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}, {3, "c"}})
	s2 := writeRows(t, tbl, mem, WriteOptions{}, UpdateAfter, [][]any{{2, "B"}, {4, "d"}})
	s3 := writeRows(t, tbl, mem, WriteOptions{}, Delete, [][]any{{1, "a"}})
	if s1 != 1 || s2 != 2 || s3 != 3 {
		t.Fatalf("snapshot ids %d %d %d", s1, s2, s3)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "2|B", "3|c", "4|d")
	eqRows(t, scanAll(t, tbl, ScanSpec{SnapshotID: 1}), "1|a", "2|b", "3|c")
	eqRows(t, scanAll(t, tbl, ScanSpec{SnapshotID: 2, Columns: []string{"v"}}), "B", "a", "c", "d")
	if _, err := tbl.NewScan(ctx, ScanSpec{SnapshotID: 9}); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("want ErrSnapshotNotFound, got %v", err)
	}
	// Reopen: everything comes back from disk.
	tbl2, err := s.Table(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// The filter fixes the bucket key: only k = 3's bucket is read, and
	// in it the rows of the files whose key range holds 3 (a filter only
	// skips; it is applied above the scan).
	eqRows(t, scanAll(t, tbl2, ScanSpec{Filter: Compare{Column: "k", Op: EQ, Value: scalar.NewInt64Scalar(3)}}), "3|c")
	st, err := tbl.Stats(ctx, 0)
	if err != nil || st.Files < 3 || st.Rows != 6 {
		t.Fatalf("stats %+v %v", st, err)
	}
}

func TestWriteValidation(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	w := tbl.NewWrite(WriteOptions{})
	defer w.Abort()
	bad := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int32},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := makeBatch(t, mem, bad, [][]any{{1, "x"}})
	defer b.Release()
	if err := w.Write(ctx, b, Insert); err == nil || !strings.Contains(err.Error(), `column "k"`) {
		t.Fatalf("want error naming column k, got %v", err)
	}
	nulls := makeBatch(t, mem, arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil), [][]any{{nil, "x"}})
	defer nulls.Release()
	if err := w.Write(ctx, nulls, Insert); err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Fatalf("want NOT NULL error, got %v", err)
	}
	good := makeBatch(t, mem, kvSchema, [][]any{{1, "x"}})
	defer good.Release()
	if err := w.WriteKinds(ctx, good, []RowKind{Insert, Insert}); err == nil {
		t.Fatal("want error for kinds length")
	}
	if err := w.Write(ctx, good, RowKind(9)); err == nil {
		t.Fatal("want error for bad row kind")
	}
	id, err := w.Commit(ctx)
	if err != nil || id != 0 {
		t.Fatalf("empty commit: %d %v", id, err)
	}
}

func TestFloatStatsWithNaN(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	tbl, err := s.CreateTable(ctx, Ident{"db", "f"}, TableDef{Schema: sc}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, 1.0}, {2, math.NaN()}, {3, nil}})
	// NaN sorts above all numbers in SQL engines: "x > 5" may match it, so
	// the file must not be skipped.
	got := scanAll(t, tbl, ScanSpec{Filter: Compare{Column: "x", Op: GT, Value: scalar.NewFloat64Scalar(5)}})
	if !slices.Contains(got, "2|NaN") {
		t.Fatalf("NaN row skipped: %q", got)
	}
}

func TestDisjointFilesStreamInKeyOrder(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "d"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{4, "d"}, {5, "e"}, {6, "f"}})
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}, {3, "c"}})
	writeRows(t, tbl, mem, WriteOptions{}, Delete, [][]any{{7, "x"}})
	sc, err := tbl.NewScan(ctx, ScanSpec{})
	must(t, err)
	if _, ok := sc.Splits()[0].(*pkSplit); !ok {
		t.Fatal("want a key-table split")
	}
	if _, ok := disjointKeyRanges(sc.Splits()[0].(*pkSplit).files); !ok {
		t.Fatal("files should be disjoint")
	}
	eqRows(t, readScan(t, sc), "1|a", "2|b", "3|c", "4|d", "5|e", "6|f")
	// An overlapping file forces the merge.
	writeRows(t, tbl, mem, WriteOptions{}, UpdateAfter, [][]any{{2, "B"}, {5, "E"}})
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a", "2|B", "3|c", "4|d", "5|E", "6|f")
}

// TestEmptyProjection: COUNT(*) reads no columns but needs the live row
// count, on every read path.
func TestEmptyProjection(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	for _, pk := range [][]string{nil, {"k"}} {
		name := "append"
		if pk != nil {
			name = "pk"
		}
		tbl, err := s.CreateTable(ctx, Ident{"db", name}, TableDef{Schema: kvSchema, PrimaryKey: pk, Options: map[string]string{"write-only": "true"}}, false)
		must(t, err)
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}, {3, "c"}})
		count := func() int64 {
			sc, err := tbl.NewScan(ctx, ScanSpec{Columns: []string{}})
			must(t, err)
			defer sc.Close()
			var n int64
			for _, sp := range sc.Splits() {
				r, err := sp.Open(ctx)
				must(t, err)
				for {
					b, err := r.Next(ctx)
					if err != nil {
						break
					}
					if b.NumCols() != 0 {
						t.Fatalf("%d columns", b.NumCols())
					}
					n += b.NumRows()
				}
				r.Close()
			}
			return n
		}
		if got := count(); got != 3 {
			t.Fatalf("%s: count %d, want 3", name, got)
		}
		if pk != nil {
			writeRows(t, tbl, mem, WriteOptions{}, Delete, [][]any{{2, "b"}})
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "x"}, {9, "z"}}) // overlapping: merge path
			if got := count(); got != 3 {
				t.Fatalf("%s after delete: count %d, want 3", name, got)
			}
		}
	}
}

// TestUnsyncedHint: the LATEST hint is written without a sync, so a crash
// may leave it empty, garbled, old, or naming a snapshot that never became
// durable. In every such state a reopened store finds the newest snapshot
// and the next commit takes the id after it.
func TestUnsyncedHint(t *testing.T) {
	ctx := context.Background()
	for name, hint := range map[string]*string{
		"empty": new(""), "garbage": new("x9"), "old": new("1"),
		"ahead": new("99"), "missing": nil,
	} {
		t.Run(name, func(t *testing.T) {
			mem := newMem(t)
			dir := t.TempDir()
			s := openStore(t, NewLocalFS(), dir, mem)
			if err := s.CreateDatabase(ctx, "db", false); err != nil {
				t.Fatal(err)
			}
			tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema}, false)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for i := range 3 {
				writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{i, "v"}})
				want = append(want, rowString([]any{i, "v"}))
			}
			latest, err := tbl.LatestSnapshotID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			path := filepath.Join(dir, "db.db", "t", "snapshot", "LATEST")
			if hint == nil {
				err = os.Remove(path)
			} else {
				err = os.WriteFile(path, []byte(*hint), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			s = openStore(t, NewLocalFS(), dir, mem)
			defer s.Close()
			tbl, err = s.Table(ctx, Ident{"db", "t"})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := tbl.LatestSnapshotID(ctx); err != nil || got != latest {
				t.Fatalf("latest snapshot %d (%v), want %d", got, err, latest)
			}
			next := writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "v"}})
			if next != latest+1 {
				t.Fatalf("next commit took snapshot %d, want %d", next, latest+1)
			}
			eqRows(t, scanAll(t, tbl, ScanSpec{}), append(want, rowString([]any{3, "v"}))...)
		})
	}
}
