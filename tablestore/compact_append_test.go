package tablestore

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestAppendCompactionBounded commits 300 small files to an append table
// (far below the target file size: the nexmark sources' case at 1M events)
// and counts what compaction wrote: at most 2.6 bytes of data files per byte
// live and at most 55 files left. Merging each 50 small files with the
// output of the last merge rewrote the table every 49 commits: 4.8x here,
// growing with the commits. Counted, not timed.
func TestAppendCompactionBounded(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	fsys := &countingFS{FS: NewLocalFS()}
	s, err := Open(ctx, fsys, t.TempDir(), Options{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	// One codec for every level, so that the bytes written count what
	// compaction rewrites (by default the smallest commits are lz4, larger
	// than the zstd their rewrite is).
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: benchSchema, Options: map[string]string{"file.compression": "zstd"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	// Rows of random values, so that a merged file compresses as its
	// inputs did and the live bytes are the bytes appended.
	rng := rand.New(rand.NewPCG(1, 2))
	w := tbl.NewWrite(WriteOptions{})
	for range 300 {
		b := benchBatch(mem, rng, 500, 1<<62, -1)
		err := w.Write(ctx, b, Insert)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tbl.Compact(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	st, err := tbl.Stats(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 300*500 {
		t.Fatalf("%d rows, want %d", st.Rows, 300*500)
	}
	written := fsys.dataBytes.Load()
	if amp := float64(written) / float64(st.Bytes); amp > 2.6 || st.Files > 55 {
		t.Fatalf("wrote %d bytes of data files for %d live (%.2fx, want at most 2.6), %d files left", written, st.Bytes, amp, st.Files)
	}
	t.Logf("wrote %.2fx the live bytes, %d files", float64(written)/float64(st.Bytes), st.Files)
}
