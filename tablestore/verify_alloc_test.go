package tablestore

import (
	"context"
	"runtime"
	"testing"
)

// TestVerifySmallFileAllocs checks that checksumming a small data file
// allocates about its size, not a 1 MiB read buffer: compaction verifies
// every input and a stream every file it reads, most of them a commit's
// few KB.
func TestVerifySmallFileAllocs(t *testing.T) {
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(context.Background(), Ident{"db", "t"}, TableDef{Schema: kvSchema}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}})
	files := liveEntries(t, tbl)
	if len(files) != 1 {
		t.Fatalf("%d files, want 1", len(files))
	}
	df, err := tbl.st.openDataFile(files[0])
	must(t, err)
	defer df.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 10
	for range n {
		df.verified = &verifiedFiles{}
		must(t, df.verify(context.Background()))
	}
	runtime.ReadMemStats(&after)
	size := files[0].File.FileSize
	if per := int64(after.TotalAlloc-before.TotalAlloc) / n; per > 4*size+4096 {
		t.Fatalf("verifying a %d-byte file allocated %d bytes", size, per)
	}
}
