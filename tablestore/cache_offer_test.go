package tablestore

import (
	"context"
	"slices"
	"testing"
)

// TestCommitOffersColumns checks that a commit's file of one batch leaves
// its columns in the column cache, so the first read of the commit (a
// stream's, a scan's) decodes nothing; that a file of several batches
// offers none (its row groups are not the batch); and that the columns of
// files never committed leave the cache with them.
func TestCommitOffersColumns(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStoreWith(t, Options{CacheBytes: 64 << 20})
	sc := intStringSchema
	stats := func() (hits, misses, bytes int64) {
		s.columns.Wait()
		st := s.columns.Stats()
		return st.Hits, st.Misses, st.Bytes
	}
	for _, def := range []TableDef{{Schema: sc}, {Schema: sc, PrimaryKey: []string{"a"}}} {
		name := "append"
		if len(def.PrimaryKey) > 0 {
			name = "pk"
		}
		t.Run(name, func(t *testing.T) {
			tbl, err := s.CreateTable(ctx, Ident{"db", name}, def, false)
			if err != nil {
				t.Fatal(err)
			}
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "x"}, {2, nil}, {3, "z"}})
			h0, m0, _ := stats()
			got := scanAll(t, tbl, ScanSpec{})
			h1, m1, _ := stats()
			if want := []string{"1|x", "2|NULL", "3|z"}; !slices.Equal(got, want) {
				t.Fatalf("scan: %v, want %v", got, want)
			}
			if m1 != m0 || h1 == h0 {
				t.Fatalf("scan after the commit: %d hits, %d misses; want hits only", h1-h0, m1-m0)
			}
		})
	}

	// A commit of a slice of a larger batch caches the slice's values at
	// their size, not the batch it shares buffers with.
	sliced, err := s.CreateTable(ctx, Ident{"db", "sliced"}, TableDef{Schema: sc}, false)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([][]any, 10000)
	for i := range rows {
		rows[i] = []any{i, "abcdefghijklmnopqrstuvwxyz"}
	}
	big, err := buildBatch(mem, sliced.Schema(), rows)
	if err != nil {
		t.Fatal(err)
	}
	part := big.NewSlice(0, 10)
	big.Release()
	_, _, before0 := stats()
	sw := sliced.NewWrite(WriteOptions{})
	if err := sw.Write(ctx, part, Insert); err != nil {
		t.Fatal(err)
	}
	part.Release()
	if _, err := sw.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, after0 := stats(); after0-before0 > 4096 {
		t.Fatalf("10 rows of a 10,000-row batch cached as %d bytes", after0-before0)
	}

	// A write aborted after its rows went to a file (Settle) takes their
	// columns out of the cache with the file.
	tbl, err := s.CreateTable(ctx, Ident{"db", "aborted"}, TableDef{Schema: sc}, false)
	if err != nil {
		t.Fatal(err)
	}
	_, _, before := stats()
	b, err := buildBatch(mem, tbl.Schema(), [][]any{{4, "w"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	w := tbl.NewWrite(WriteOptions{})
	if err := w.Write(ctx, b, Insert); err != nil {
		t.Fatal(err)
	}
	if err := w.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, during := stats(); during <= before {
		t.Fatalf("settled file offered nothing: %d bytes cached, %d before", during, before)
	}
	w.Abort()
	if _, _, after := stats(); after != before {
		t.Fatalf("%d bytes cached after the abort, want %d", after, before)
	}
}
