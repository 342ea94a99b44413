package tablestore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestMetadataMaxAge checks the staleness rule of Options.MetadataMaxAge
// against a model: two stores on one warehouse commit at random moments
// (seed printed) while each reads through pinned handles, as statements
// do. A read that starts more than the max age after another store
// acknowledged a commit must see it; a store's own acknowledged commits
// are seen at once; and a read within the max age of the last one asks
// storage nothing.
func TestMetadataMaxAge(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const maxAge = 100 * time.Millisecond
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	fsys := &metaCountFS{FS: NewLocalFS()}
	var stores [2]*Store
	for i := range stores {
		s, err := Open(ctx, fsys, dir, Options{Mem: mem, MetadataMaxAge: maxAge})
		must(t, err)
		defer s.Close()
		stores[i] = s
	}
	must(t, stores[0].CreateDatabase(ctx, "db", false))
	id := Ident{"db", "t"}
	_, err := stores[0].CreateTable(ctx, id, TableDef{Schema: kvSchema, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)

	var (
		mu    sync.Mutex
		acked = map[int64]time.Time{} // key -> when its commit returned
	)
	// readKeys reads the table's keys as a statement does (a pinned handle).
	readKeys := func(s *Store) (map[int64]bool, error) {
		tbl, err := s.Table(ctx, id)
		if err != nil {
			return nil, err
		}
		sc, err := tbl.WithPin(&Pin{}).NewScan(ctx, ScanSpec{})
		if err != nil {
			return nil, err
		}
		rows, err := readScanErr(sc)
		if err != nil {
			return nil, err
		}
		keys := map[int64]bool{}
		for _, row := range rows {
			var k int64
			if _, err := fmt.Sscanf(row, "%d|", &k); err != nil {
				return nil, fmt.Errorf("row %q: %v", row, err)
			}
			keys[k] = true
		}
		return keys, nil
	}
	read := func(s *Store) map[int64]bool {
		t.Helper()
		keys, err := readKeys(s)
		must(t, err)
		return keys
	}
	var wg sync.WaitGroup
	for n, s := range stores {
		rng := rand.New(rand.NewPCG(seed, uint64(n)))
		wg.Go(func() {
			tbl, err := s.Table(ctx, id)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 30 {
				time.Sleep(time.Duration(rng.IntN(int(maxAge))))
				if rng.IntN(5) == 0 {
					k := int64(1000*n + i)
					if _, err := commitRows(tbl, mem, WriteOptions{}, Insert, [][]any{{int(k), "v"}}); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked[k] = time.Now()
					mu.Unlock()
					if got, err := readKeys(s); err != nil || !got[k] {
						t.Errorf("seed %d: store %d does not see its own commit of key %d (%v)", seed, n, k, err)
						return
					}
					continue
				}
				start := time.Now()
				mu.Lock()
				var due []int64
				for k, at := range acked {
					if start.Sub(at) > maxAge {
						due = append(due, k)
					}
				}
				mu.Unlock()
				got, err := readKeys(s)
				if err != nil {
					t.Error(err)
					return
				}
				for _, k := range due {
					if !got[k] {
						t.Errorf("seed %d: store %d: key %d, committed more than %v before the read, is missing", seed, n, k, maxAge)
						return
					}
				}
			}
		})
	}
	wg.Wait()

	// Within the max age a statement reads nothing but data: its first
	// read found the schema and the latest snapshot.
	slow, err := Open(ctx, fsys, dir, Options{Mem: mem, MetadataMaxAge: time.Hour})
	must(t, err)
	defer slow.Close()
	read(slow)
	before := fsys.reads.Load()
	read(slow)
	if n := fsys.reads.Load() - before; n != 0 {
		t.Errorf("a read within the max age of the last made %d metadata requests", n)
	}

	// A schema change is seen at once by the store that made it, and by
	// the others after the max age.
	columns := func(s *Store) int {
		tbl, err := s.Table(ctx, id)
		must(t, err)
		return tbl.Schema().NumFields()
	}
	columns(stores[1])
	must(t, slow.AlterTable(ctx, id, AddColumn{Name: "extra", Type: arrow.BinaryTypes.String}))
	if n := columns(slow); n != 3 {
		t.Errorf("the store that added a column sees %d columns, want 3", n)
	}
	time.Sleep(maxAge + time.Millisecond)
	if n := columns(stores[1]); n != 3 {
		t.Errorf("%v after another store added a column: %d columns, want 3", maxAge, n)
	}

	// A table dropped by another store and created again here starts
	// its snapshot ids over: this store's first commit to it is seen at
	// once, not the old table's newer snapshot it learnt.
	read(slow)
	must(t, stores[0].DropTable(ctx, id, false))
	tbl, err := slow.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{7, "v"}})
	if got := read(slow); len(got) != 1 || !got[7] {
		t.Errorf("the table created again here: %v, want its one row 7", got)
	}
}

// metaCountFS counts listings and opens of files other than data files.
type metaCountFS struct {
	FS
	reads atomic.Int64
}

func (c *metaCountFS) Open(name string) (ReadFile, error) {
	if !strings.HasPrefix(path.Base(name), "data-") {
		c.reads.Add(1)
	}
	return c.FS.Open(name)
}

func (c *metaCountFS) List(dir string) ([]string, error) {
	c.reads.Add(1)
	return c.FS.List(dir)
}

// TestMetadataMaxAgeReadModifyWrite: a read-modify-write computed from a
// snapshot this store kept within the max age, after another store
// committed the same key, fails with ErrSerialization rather than losing
// that commit; its retry finds the other store's snapshot.
func TestMetadataMaxAgeReadModifyWrite(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	fsys := NewLocalFS()
	stale, err := Open(ctx, fsys, dir, Options{Mem: mem, MetadataMaxAge: time.Hour})
	must(t, err)
	defer stale.Close()
	other := openStore(t, fsys, dir, mem)
	defer other.Close()
	must(t, stale.CreateDatabase(ctx, "db", false))
	id := Ident{"db", "t"}
	tbl, err := stale.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"write-only": "true"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "0"}})
	// base is the snapshot a statement pins, as UPDATE reads it.
	base := func() int64 {
		t.Helper()
		tbl, err := stale.Table(ctx, id)
		must(t, err)
		sn, err := tbl.WithPin(&Pin{}).LatestSnapshotID(ctx)
		must(t, err)
		return sn
	}
	kept := base()
	otherTbl, err := other.Table(ctx, id)
	must(t, err)
	newer := writeRows(t, otherTbl, mem, WriteOptions{}, UpdateAfter, [][]any{{1, "other"}})
	if got := base(); got != kept {
		t.Fatalf("within the max age the statement read snapshot %d, want the kept %d (the test needs a stale read)", got, kept)
	}
	_, err = commitRows(tbl, mem, WriteOptions{ReadModifyWrite: true, BaseSnapshot: kept}, UpdateAfter, [][]any{{1, "stale"}})
	if !errors.Is(err, ErrSerialization) {
		t.Fatalf("a read-modify-write of stale snapshot %d after commit %d of its key: %v, want ErrSerialization", kept, newer, err)
	}
	retry := base()
	if retry != newer {
		t.Fatalf("the retry read snapshot %d, want %d (the failed commit found it)", retry, newer)
	}
	writeRows(t, tbl, mem, WriteOptions{ReadModifyWrite: true, BaseSnapshot: retry}, UpdateAfter, [][]any{{1, "retried"}})
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|retried")
}

// TestMetadataMaxAgeOwnDrop: this store's DROP TABLE is seen at once,
// even when a statement that raced the drop read the table's schema in
// the moment between the drop's check and its removal of the table, on a
// file system that renames directories and on one that cannot (S3).
func TestMetadataMaxAgeOwnDrop(t *testing.T) {
	for _, canRename := range []bool{true, false} {
		t.Run(fmt.Sprintf("rename=%v", canRename), func(t *testing.T) {
			ctx := context.Background()
			mem := newMem(t)
			fsys := &renameHookFS{FS: NewLocalFS(), canRename: canRename}
			s, err := Open(ctx, fsys, t.TempDir(), Options{Mem: mem, MetadataMaxAge: time.Hour})
			must(t, err)
			defer s.Close()
			must(t, s.CreateDatabase(ctx, "db", false))
			id := Ident{"db", "t"}
			_, err = s.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false)
			must(t, err)
			fsys.beforeRename = func() {
				if _, err := s.Table(ctx, id); err != nil {
					t.Errorf("the statement racing the drop: %v", err)
				}
			}
			must(t, s.DropTable(ctx, id, false))
			if _, err := s.Table(ctx, id); !errors.Is(err, ErrTableNotFound) {
				t.Fatalf("a statement after this store's drop: %v, want ErrTableNotFound", err)
			}
		})
	}
}

// renameHookFS calls beforeRename before each rename, which fails with
// errors.ErrUnsupported unless canRename.
type renameHookFS struct {
	FS
	canRename    bool
	beforeRename func()
}

func (r *renameHookFS) Rename(from, to string) error {
	if r.beforeRename != nil && !strings.Contains(from, trashPrefix) { // not the dropped files' removal
		r.beforeRename()
	}
	if !r.canRename {
		return errors.ErrUnsupported
	}
	return r.FS.Rename(from, to)
}
