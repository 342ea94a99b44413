package tablestore

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// newFileFS is the local FS (with its Exchange) counting the files
// created, by directory: Create of a name that did not exist.
type newFileFS struct {
	localFS
	mu  sync.Mutex
	new map[string]int
}

func (c *newFileFS) Create(name string) (File, error) {
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		c.mu.Lock()
		c.new[path.Base(path.Dir(name))]++
		c.mu.Unlock()
	}
	return c.localFS.Create(name)
}

func (c *newFileFS) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.new
	c.new = map[string]int{}
	return n
}

// plainFS hides the local FS's Exchange: hints are renamed into place.
type plainFS struct{ FS }

// TestHintSwapped: once a table has its hints, a commit creates no file
// for the LATEST hint (its spare is rewritten and swapped in), only the
// data file, the manifest, the two manifest lists and the snapshot; the
// hints always name the latest and earliest snapshots, also where the FS
// cannot swap names; a reader of LATEST during commits never finds an id
// not yet published.
func TestHintSwapped(t *testing.T) {
	ctx := context.Background()
	for _, swap := range []bool{true, false} {
		t.Run(map[bool]string{true: "exchange", false: "rename"}[swap], func(t *testing.T) {
			mem := newMem(t)
			dir := t.TempDir()
			counting := &newFileFS{new: map[string]int{}}
			// Without PinDir: a write's pin would create the snapshot's
			// file past the count.
			var fsys FS = struct {
				FS
				exchanger
			}{counting, counting}
			if !swap {
				fsys = plainFS{counting}
			}
			s := openStore(t, fsys, dir, mem)
			defer s.Close()
			if err := s.CreateDatabase(ctx, "db", false); err != nil {
				t.Fatal(err)
			}
			tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema,
				Options: map[string]string{"write-only": "true", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3"}}, false)
			if err != nil {
				t.Fatal(err)
			}
			snapDir := filepath.Join(dir, "db.db", "t", "snapshot")
			hint := func(name string) string {
				data, err := os.ReadFile(filepath.Join(snapDir, name))
				if err != nil {
					t.Fatal(err)
				}
				return string(data)
			}
			var started atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					data, err := os.ReadFile(filepath.Join(snapDir, "LATEST"))
					if err != nil || len(data) == 0 {
						continue // none yet, or between truncation and write
					}
					id, err := strconv.ParseInt(string(data), 10, 64)
					if err != nil || id > started.Load() {
						t.Errorf("LATEST read %q during commits, %d started", data, started.Load())
						return
					}
				}
			})
			for i := range 12 {
				started.Add(1)
				id := writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{i, "v"}})
				if _, err := tbl.ExpireSnapshots(ctx); err != nil {
					t.Fatal(err)
				}
				created := counting.take()
				if got := hint("LATEST"); got != strconv.FormatInt(id, 10) {
					t.Fatalf("commit %d: LATEST holds %q", id, got)
				}
				if id < 4 {
					continue
				}
				if got, want := hint("EARLIEST"), strconv.FormatInt(id-2, 10); got != want {
					t.Fatalf("commit %d: EARLIEST holds %q, want %s", id, got, want)
				}
				// The data file, the manifest and two lists, the
				// snapshot's temporary file. (Renamed hints add a file
				// each, EARLIEST's maybe by the background expiry after
				// the count.)
				want := map[string]int{"bucket-0": 1, "manifest": 3, "snapshot": 1}
				if swap && id > 5 && !maps.Equal(created, want) {
					t.Fatalf("commit %d created %v, want %v", id, created, want)
				}
			}
			close(stop)
			wg.Wait()
			names, err := os.ReadDir(snapDir)
			if err != nil {
				t.Fatal(err)
			}
			spares := 0
			for _, n := range names {
				if strings.HasPrefix(n.Name(), ".tmp-") {
					spares++
				}
			}
			if want := map[bool]int{true: 2, false: 0}[swap]; spares != want {
				t.Fatalf("%d temporary files left in the snapshot directory, want %d (the spares)", spares, want)
			}
			// Orphan removal keeps this process's spares and removes
			// another's (a process that ended).
			if err := os.WriteFile(filepath.Join(snapDir, ".tmp-LATEST-spare-gone"), []byte("3"), 0o644); err != nil {
				t.Fatal(err)
			}
			if removed, err := tbl.RemoveOrphanFiles(ctx, 0); err != nil || removed != 1 {
				t.Fatalf("orphan removal removed %d files (%v), want the other process's spare", removed, err)
			}
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{99, "v"}})
			if got, want := hint("LATEST"), "13"; got != want {
				t.Fatalf("LATEST holds %q after orphan removal and a commit, want %s", got, want)
			}
		})
	}
}
