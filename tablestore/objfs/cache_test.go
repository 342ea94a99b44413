package objfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flightd/flightd/internal/s3test"
	"github.com/flightd/flightd/tablestore/objfs"
)

// TestCacheDirKeepsOtherFiles: -object-cache-dir may name a directory
// that holds the user's files; opening a cache there removes only the
// blocks (and unfinished blocks) an earlier run left.
func TestCacheDirKeepsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	keep := []string{"notes.txt", "sub/data.parquet", "0123456789abcdef0123456789abcdef-0.bak", ".objcache-x"}
	stale := []string{"0123456789abcdef0123456789abcdef-0", "fedcba9876543210fedcba9876543210-17", ".objcache-123456"}
	for _, n := range append(keep, stale...) {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := objfs.NewCache(dir, objfs.BlockSize); err != nil {
		t.Fatal(err)
	}
	for _, n := range keep {
		if got, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(got) != n {
			t.Errorf("%s: %q %v, want it kept", n, got, err)
		}
	}
	for _, n := range stale {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want an earlier run's block removed", n, err)
		}
	}
	// A directory that does not exist yet is created.
	if _, err := objfs.NewCache(filepath.Join(dir, "new", "cache"), objfs.BlockSize); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCacheSmallRead reads 8 bytes (a Parquet footer's length) of a
// cached block: the cost of a warm query's metadata reads.
func BenchmarkCacheSmallRead(b *testing.B) {
	srv := s3test.Start(b)
	fsys := srv.FS(b, 4*objfs.BlockSize)
	data := make([]byte, 2*objfs.BlockSize)
	writeFile(b, fsys, "/f", data)
	f, err := fsys.Open("/f")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 8)
	if _, err := f.ReadAt(buf, int64(len(data)-8)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.ReadAt(buf, int64(len(data)-8)); err != nil {
			b.Fatal(err)
		}
	}
}
