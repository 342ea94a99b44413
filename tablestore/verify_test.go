package tablestore

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// readCountFS counts the bytes read from data files.
type readCountFS struct {
	FS
	read atomic.Int64
}

func (c *readCountFS) Open(name string) (ReadFile, error) {
	f, err := c.FS.Open(name)
	if err != nil || !strings.Contains(name, "data-") {
		return f, err
	}
	return &countedFile{ReadFile: f, n: &c.read}, nil
}

type countedFile struct {
	ReadFile
	n *atomic.Int64
}

func (f *countedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.ReadFile.ReadAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

// TestChecksumOnce: the first scan that reads every row group of a file
// reads it whole for its checksum; later scans in the same process do not.
func TestChecksumOnce(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	fsys := &readCountFS{FS: NewLocalFS()}
	s, err := Open(ctx, fsys, dir, Options{Mem: mem, CacheBytes: 1 << 20})
	must(t, err)
	defer s.Close()
	must(t, s.CreateDatabase(ctx, "db", false))
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema}, false)
	must(t, err)
	var rows [][]any
	for i := range 5000 {
		rows = append(rows, []any{i, strings.Repeat("x", i%50)})
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
	var size int64
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "data-") {
			info, err := d.Info()
			if err != nil {
				return err
			}
			size += info.Size()
		}
		return err
	}))
	scan := func() int64 {
		before := fsys.read.Load()
		if got := len(scanAll(t, tbl, ScanSpec{Columns: []string{"k"}})); got != len(rows) {
			t.Fatalf("scanned %d rows, want %d", got, len(rows))
		}
		return fsys.read.Load() - before
	}
	if first := scan(); first < size {
		t.Fatalf("first scan read %d bytes of a %d-byte file: no checksum pass", first, size)
	}
	if again := scan(); again >= size {
		t.Fatalf("second scan read %d bytes of a %d-byte file again", again, size)
	}
}
