package tablestore

import (
	"context"
	"testing"
	"time"
)

// TestCachedColumnsForgotten: the cached columns of data files that are
// gone leave the cache with them: an expired file's at expiry, a dropped
// table's at DROP TABLE, and only theirs (another table's stay).
func TestCachedColumnsForgotten(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStoreWith(t, Options{CacheBytes: 64 << 20})
	sc := intStringSchema
	cached := func() int64 {
		s.columns.Wait()
		return s.columns.Stats().Bytes
	}
	// Commits offer their files' columns to the cache (dataWriter.offerKept).
	tables := map[string]*Table{}
	var u int64
	for _, name := range []string{"u", "t"} {
		tbl, err := s.CreateTable(ctx, Ident{"db", name}, TableDef{Schema: sc}, false)
		if err != nil {
			t.Fatal(err)
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "x"}, {2, "y"}})
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "z"}})
		tables[name] = tbl
		scanAll(t, tbl, ScanSpec{})
		if name == "u" {
			u = cached()
		}
	}
	if u == 0 || cached() <= u {
		t.Fatalf("commits and scans cached %d bytes for u, %d for both", u, cached())
	}
	// t's two files merged into one, then the snapshots that had them expired.
	if err := tables["t"].Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	if n, err := tables["t"].ExpireSnapshotsWith(ctx, ExpireOptions{RetainMax: 1, RetainMin: 1, OlderThan: time.Now().Add(time.Hour)}); err != nil || n == 0 {
		t.Fatalf("expired %d snapshots: %v", n, err)
	}
	if got := cached(); got != u {
		t.Fatalf("%d bytes cached after t's scanned files expired, want u's %d", got, u)
	}
	if got := scanAll(t, tables["t"], ScanSpec{}); len(got) != 3 {
		t.Fatalf("t after compaction: %v", got)
	}
	if cached() <= u {
		t.Fatal("the merged file's scan cached nothing")
	}
	if err := s.DropTable(ctx, Ident{"db", "t"}, false); err != nil {
		t.Fatal(err)
	}
	if got := cached(); got != u {
		t.Fatalf("%d bytes cached after DROP TABLE t, want u's %d", got, u)
	}
	if err := s.DropTable(ctx, Ident{"db", "u"}, false); err != nil {
		t.Fatal(err)
	}
	if got := cached(); got != 0 {
		t.Fatalf("%d bytes cached with every table dropped", got)
	}
}
