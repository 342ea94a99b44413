package tablestore

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// TestFooterCache: a data file's footer is parsed, and its column layout
// made, at its first scan and reused by the next (the same parsed footer
// and layout, the same rows), not served
// for a file of another size at the path, and the cache forgets everything
// rather than grow past its bytes.
func TestFooterCache(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	sc := intStringSchema
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: sc}, false)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "x"}, {2, "y"}})
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "z"}})
	footers := func() map[string]footerEntry {
		s.footers.mu.Lock()
		defer s.footers.mu.Unlock()
		m := map[string]footerEntry{}
		for k, v := range s.footers.m {
			m[k] = v
		}
		return m
	}
	first := fmt.Sprint(scanAll(t, tbl, ScanSpec{}))
	parsed := footers()
	if len(parsed) != 2 {
		t.Fatalf("%d footers cached after scanning 2 files", len(parsed))
	}
	if again := fmt.Sprint(scanAll(t, tbl, ScanSpec{})); again != first {
		t.Fatalf("second scan %s, first %s", again, first)
	}
	for path, e := range footers() {
		if parsed[path].md != e.md {
			t.Fatalf("%s: footer parsed again at the second scan", path)
		}
		if e.layout == nil || parsed[path].layout != e.layout {
			t.Fatalf("%s: column layout made again at the second scan", path)
		}
		if md, _ := s.footers.get(path, e.md.GetSourceFileSize()+1); md != nil {
			t.Fatalf("%s: footer served for a file of another size", path)
		}
	}
	var md *metadata.FileMetaData
	for _, v := range parsed {
		md = v.md
	}
	for i := 0; i <= maxFooterBytes/md.Size(); i++ {
		s.footers.add(fmt.Sprintf("f%d", i), md, nil)
		if s.footers.bytes > maxFooterBytes {
			t.Fatalf("%d bytes of footers after %d adds, bound %d", s.footers.bytes, i+1, maxFooterBytes)
		}
	}
	if n := len(footers()); n > maxFooterBytes/md.Size() {
		t.Fatalf("%d footers kept, at most %d fit", n, maxFooterBytes/md.Size())
	}
}
