package tablestore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestWriteOpenAcrossDropAndCreate: a write opened on a table that this
// process then drops, and creates again under the name, fails at commit
// with ErrTableNotFound and leaves the new table as it is. It published
// into the new table before: its rows mixed in (an append table's files
// in a key table: "key-table file without system columns"), or, once
// flushed into the dropped directory, a snapshot naming files gone with
// it ("manifest ... is missing"), found by 8 Python clients creating,
// dropping and writing three tables.
func TestWriteOpenAcrossDropAndCreate(t *testing.T) {
	keyed := TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2"}}
	appended := TableDef{Schema: kvSchema}
	for _, c := range []struct {
		name      string
		old, new  TableDef
		settle    bool
		otherNode bool // another process drops and creates the table
	}{
		{"key-buffered", keyed, keyed, false, false},
		{"key-flushed", keyed, keyed, true, false},
		{"append-to-key-buffered", appended, keyed, false, false},
		{"append-to-key-flushed", appended, keyed, true, false},
		{"other-node-key-buffered", keyed, keyed, false, true},
		{"other-node-key-flushed", keyed, keyed, true, true},
		{"other-node-append-to-key-buffered", appended, keyed, false, true},
		{"other-node-append-to-key-flushed", appended, keyed, true, true},
		{"other-node-append-flushed", appended, appended, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, mem, dir := newTestStore(t)
			id := Ident{"db", "t"}
			old, err := s.CreateTable(ctx, id, c.old, false)
			if err != nil {
				t.Fatal(err)
			}
			w := openWrite(t, old, mem, [][]any{{1, "old"}, {2, "old"}})
			defer w.Abort()
			if c.settle {
				if err := w.Settle(ctx); err != nil {
					t.Fatal(err)
				}
			}
			ddl := s // the drop and create's node
			if c.otherNode {
				ddl = openStore(t, NewLocalFS(), dir, mem)
				defer ddl.Close()
			}
			if err := ddl.DropTable(ctx, id, false); err != nil {
				t.Fatal(err)
			}
			tbl, err := ddl.CreateTable(ctx, id, c.new, false)
			if err != nil {
				t.Fatal(err)
			}
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "new"}})
			if _, err := w.Commit(ctx); !errors.Is(err, ErrTableNotFound) {
				t.Fatalf("commit of a write opened before the drop: %v, want ErrTableNotFound", err)
			}
			tbl, err = s.Table(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			eqRows(t, scanAll(t, tbl, ScanSpec{}), "3|new")
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{4, "new"}})
			eqRows(t, scanAll(t, tbl, ScanSpec{}), "3|new", "4|new")
		})
	}
}

// snapshotHookFS calls before once, before the first publication of a
// snapshot file named name.
type snapshotHookFS struct {
	FS
	name   string
	before func()
	once   sync.Once
}

func (f *snapshotHookFS) RenameNoReplace(oldname, newname string) error {
	if strings.HasSuffix(newname, "/"+f.name) {
		f.once.Do(f.before)
	}
	return f.FS.RenameNoReplace(oldname, newname)
}

// TestCreateRacingCreateAs: a CREATE TABLE of a key table runs, in this
// process or another sharing the directory, while a CREATE TABLE ... AS of
// an append table under the same name publishes its rows. One of them
// creates the table; the other fails with ErrTableExists. The key table's
// schema landed between the other's check and its snapshot before (in
// another process until the schema lock), so the table read its files as a
// key table's.
func TestCreateRacingCreateAs(t *testing.T) {
	for _, otherProcess := range []bool{false, true} {
		t.Run(fmt.Sprintf("otherProcess=%v", otherProcess), func(t *testing.T) {
			raceWithStagedCommit(t, otherProcess, false, func(ctx context.Context, s *Store, id Ident) error {
				_, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
				return err
			}, func(t *testing.T, tbl *Table, rows []string, createErr, asErr error) {
				switch {
				case asErr == nil && errors.Is(createErr, ErrTableExists):
					eqRows(t, rows, "1")
				case createErr == nil && errors.Is(asErr, ErrTableExists):
					eqRows(t, rows)
				default:
					t.Fatalf("CREATE: %v, CREATE AS: %v, rows %q: want one to fail with ErrTableExists", createErr, asErr, rows)
				}
			})
		})
	}
}

// TestAlterRacingReplace: an ALTER TABLE ADD COLUMN runs, in this process
// or another, while a CREATE OR REPLACE TABLE ... AS publishes the new
// table. Both succeed, the ALTER on the new table: it waits for the
// replace, which held the schema lock from its check to its snapshot.
// Before, the ALTER's version of the replaced table (its columns and the
// one added) landed above the replace's snapshot and was read as the new
// table's schema.
func TestAlterRacingReplace(t *testing.T) {
	for _, otherProcess := range []bool{false, true} {
		t.Run(fmt.Sprintf("otherProcess=%v", otherProcess), func(t *testing.T) {
			raceWithStagedCommit(t, otherProcess, true, func(ctx context.Context, s *Store, id Ident) error {
				return s.AlterTable(ctx, id, AddColumn{Name: "extra", Type: arrow.BinaryTypes.String})
			}, func(t *testing.T, tbl *Table, rows []string, alterErr, replaceErr error) {
				if alterErr != nil || replaceErr != nil {
					t.Fatalf("ALTER: %v, CREATE OR REPLACE AS: %v: want both to succeed", alterErr, replaceErr)
				}
				var names []string
				for _, f := range tbl.Schema().Fields() {
					names = append(names, f.Name)
				}
				if !slices.Equal(names, []string{"x", "extra"}) {
					t.Fatalf("columns %q, want the new table's and the one added", names)
				}
				eqRows(t, rows, "1|NULL")
			})
		})
	}
}

// raceWithStagedCommit stages a table of xSchema with the row {1} (a
// replace of a kvSchema table when replace is set), and runs op on the
// table's name, in the staging store or in another store over the same
// directory, as the staged write publishes its snapshot. check gets the
// table after both, its rows, op's error and the commit's.
func raceWithStagedCommit(t *testing.T, otherProcess, replace bool, op func(context.Context, *Store, Ident) error,
	check func(t *testing.T, tbl *Table, rows []string, opErr, commitErr error)) {
	ctx := context.Background()
	mem := newMem(t)
	id := Ident{"db", "t"}
	dir := t.TempDir()
	s := openStore(t, NewLocalFS(), dir, mem)
	defer s.Close()
	racer := s
	if otherProcess {
		racer = openStore(t, NewLocalFS(), dir, mem)
		defer racer.Close()
	}
	must(t, s.CreateDatabase(ctx, "db", false))
	if replace {
		if _, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false); err != nil {
			t.Fatal(err)
		}
	}
	w := stage(t, s, id, replace, [][]any{{1}})
	var opErr error
	done := make(chan struct{})
	var once sync.Once
	s.beforePublish = func() {
		once.Do(func() {
			go func() {
				opErr = op(ctx, racer, id)
				close(done)
			}()
			select { // it waits for the commit now; it ran into it before
			case <-done:
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
	_, commitErr := w.Commit(ctx)
	<-done
	tbl, err := racer.Table(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readScanErr(mustScan(t, tbl, ScanSpec{}))
	if err != nil {
		t.Fatalf("the table after both: %v (op: %v, commit: %v)", err, opErr, commitErr)
	}
	check(t, tbl, rows, opErr, commitErr)
}

// renamedHookFS calls after once a rename of a directory named name is
// done.
type renamedHookFS struct {
	FS
	name  string
	after func()
}

func (f *renamedHookFS) Rename(from, to string) error {
	err := f.FS.Rename(from, to)
	if err == nil && path.Base(from) == f.name && f.after != nil {
		f.after()
	}
	return err
}

// TestScanAcrossDrop: a scan planned before this process drops its table
// and read once the drop moved the table's files away fails with
// ErrTableNotFound. Read between the rename and the mark of the drop, it
// failed with the data file's absence (an internal error; engine
// TestRandomDDLAndWrites saw it now and then).
func TestScanAcrossDrop(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	id := Ident{"db", "t"}
	var scan *Scan
	var readErr error
	hook := &renamedHookFS{FS: NewLocalFS(), name: "t", after: func() {
		_, readErr = readScanErr(scan)
	}}
	s := openStore(t, hook, t.TempDir(), mem)
	defer s.Close()
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}})
	if scan, err = tbl.NewScan(ctx, ScanSpec{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DropTable(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(readErr, ErrTableNotFound) {
		t.Fatalf("a scan read while its table is dropped: %v, want ErrTableNotFound", readErr)
	}
}

// TestCommitAcrossOtherNodesDrop: another process drops the table and
// creates it again while a write's commit is under way, after the commit
// checked that its table is still there, before it writes its snapshot.
// The snapshot is published through the directory the table's state
// pinned, into the dropped table, and the commit fails with
// ErrTableNotFound; published by path, it landed in the new table, naming
// manifests of files the new table does not have.
func TestCommitAcrossOtherNodesDrop(t *testing.T) {
	ctx := context.Background()
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			mem := newMem(t)
			dir := t.TempDir()
			def := TableDef{Schema: kvSchema}
			if keyed {
				def.PrimaryKey = []string{"k"}
			}
			id := Ident{"db", "t"}
			other := openStore(t, NewLocalFS(), dir, mem)
			defer other.Close()
			if err := other.CreateDatabase(ctx, "db", false); err != nil {
				t.Fatal(err)
			}
			first, err := other.CreateTable(ctx, id, def, false)
			if err != nil {
				t.Fatal(err)
			}
			// Two snapshots: the write's would be the new table's third.
			writeRows(t, first, mem, WriteOptions{}, Insert, [][]any{{7, "old"}})
			writeRows(t, first, mem, WriteOptions{}, Insert, [][]any{{8, "old"}})
			var once sync.Once
			before := func() {
				if err := other.DropTable(ctx, id, false); err != nil {
					t.Error(err)
				}
				tbl, err := other.CreateTable(ctx, id, def, false)
				if err != nil {
					t.Error(err)
					return
				}
				writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "new"}})
			}
			s := openStore(t, NewLocalFS(), dir, mem)
			defer s.Close()
			s.beforePublish = func() { once.Do(before) }
			old, err := s.Table(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			w := openWrite(t, old, mem, [][]any{{1, "old"}, {2, "old"}})
			defer w.Abort()
			if _, err := w.Commit(ctx); !errors.Is(err, ErrTableNotFound) {
				t.Fatalf("commit across another process's drop: %v, want ErrTableNotFound", err)
			}
			tbl, err := other.Table(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			eqRows(t, scanAll(t, tbl, ScanSpec{}), "3|new")
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{4, "new"}})
			eqRows(t, scanAll(t, tbl, ScanSpec{}), "3|new", "4|new")
		})
	}
}

// TestReadModifyWriteAcrossOtherNodesDrop: a read-modify-write computed
// its rows from snapshot 2 of a table that another process then dropped
// and created again (with one snapshot), before or after the write's first
// row, on a file system that cannot pin the table's directory (an object
// store). Its commit fails with ErrSerialization instead of landing rows
// of the old table in the new one.
func TestReadModifyWriteAcrossOtherNodesDrop(t *testing.T) {
	ctx := context.Background()
	for _, afterFirstRow := range []bool{false, true} {
		t.Run(fmt.Sprintf("after-first-row=%v", afterFirstRow), func(t *testing.T) {
			mem := newMem(t)
			dir := t.TempDir()
			s := openStore(t, struct{ FS }{NewLocalFS()}, dir, mem) // no PinDir
			defer s.Close()
			if err := s.CreateDatabase(ctx, "db", false); err != nil {
				t.Fatal(err)
			}
			id := Ident{"db", "t"}
			def := TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}
			old, err := s.CreateTable(ctx, id, def, false)
			if err != nil {
				t.Fatal(err)
			}
			writeRows(t, old, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
			writeRows(t, old, mem, WriteOptions{}, Insert, [][]any{{2, "b"}})
			w := old.NewWrite(WriteOptions{ReadModifyWrite: true, BaseSnapshot: 2})
			defer w.Abort()
			write := func() error {
				b := makeBatch(t, mem, kvSchema, [][]any{{1, "a2"}})
				defer b.Release()
				return w.Write(ctx, b, Insert)
			}
			if afterFirstRow {
				if err := write(); err != nil {
					t.Fatal(err)
				}
			}
			other := openStore(t, NewLocalFS(), dir, mem)
			defer other.Close()
			if err := other.DropTable(ctx, id, false); err != nil {
				t.Fatal(err)
			}
			tbl, err := other.CreateTable(ctx, id, def, false)
			if err != nil {
				t.Fatal(err)
			}
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "new"}})
			if !afterFirstRow {
				err = write()
			}
			if err == nil {
				_, err = w.Commit(ctx)
			}
			if !errors.Is(err, ErrSerialization) {
				t.Fatalf("commit of rows read before another process's drop: %v, want ErrSerialization", err)
			}
			eqRows(t, scanAll(t, tbl, ScanSpec{}), "3|new")
		})
	}
}

// openWrite starts a write on tbl holding rows, not committed.
func openWrite(t *testing.T, tbl *Table, mem memory.Allocator, rows [][]any) *Write {
	t.Helper()
	w := tbl.NewWrite(WriteOptions{})
	b := makeBatch(t, mem, kvSchema, rows)
	defer b.Release()
	if err := w.Write(context.Background(), b, Insert); err != nil {
		w.Abort()
		t.Fatal(err)
	}
	return w
}

// halfRemoveFS removes, in RemoveAll of a dropped directory, the table's
// schema files other than schema-0 first, then calls paused before the
// rest: a removal another process meets half done.
type halfRemoveFS struct {
	localFS
	paused func()
}

func (f *halfRemoveFS) RemoveAll(name string) error {
	if strings.Contains(name, trashPrefix) {
		schemas := joinPath(name, "schema")
		names, _ := f.List(schemas)
		for _, n := range names {
			if n != "schema-0" {
				_ = f.Remove(joinPath(schemas, n))
			}
		}
		f.paused()
	}
	return f.localFS.RemoveAll(name)
}

// TestReadHalfRemovedTable: a process whose state of a table pinned its
// directory compacts and scans the table while another process drops it
// and is half way through removing its files. The table had been replaced,
// a key table by an append table, and the listing of the half-removed
// schema directory showed the key table's first schema as the latest: the
// compaction read the append table's files as a key table's ("key-table
// file without system columns", 1 run in about 80 of engine
// TestRandomDDLAndWrites with two nodes). Now it finds the table gone or
// reads it as it was.
func TestReadHalfRemovedTable(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	fsys := &halfRemoveFS{}
	dropper := openStore(t, fsys, dir, mem)
	defer dropper.Close()
	if err := dropper.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	id := Ident{"db", "t"}
	keyed, err := dropper.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, keyed, mem, WriteOptions{}, Insert, [][]any{{1, "key"}})
	w, err := dropper.StageTable(ctx, id, TableDef{Schema: kvSchema}, true)
	if err != nil {
		t.Fatal(err)
	}
	b := makeBatch(t, mem, kvSchema, [][]any{{2, "append"}})
	err = w.Write(ctx, b, Insert)
	b.Release()
	if err == nil {
		_, err = w.Commit(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	reader := openStore(t, NewLocalFS(), dir, mem)
	defer reader.Close()
	tbl, err := reader.Table(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "append"}})
	gone := func(what string, err error) {
		if err != nil && !errors.Is(err, ErrTableNotFound) && !errors.Is(err, ErrSnapshotNotFound) {
			t.Errorf("%s of the half-removed table: %v, want it read as it was or not found", what, err)
		}
	}
	fsys.paused = func() {
		gone("compaction", tbl.Compact(ctx, true))
		if s, err := tbl.NewScan(ctx, ScanSpec{}); err != nil {
			gone("scan", err)
		} else if rows, err := readScanErr(s); err != nil {
			gone("scan", err)
		} else if want := []string{"2|append", "3|append"}; !slices.Equal(rows, want) {
			t.Errorf("scan of the half-removed table: %q, want %q", rows, want)
		}
	}
	if err := dropper.DropTable(ctx, id, false); err != nil {
		t.Fatal(err)
	}
}

// dbSyncHookFS calls onSync before a sync of a database's directory.
type dbSyncHookFS struct {
	localFS
	onSync func(dir string)
}

func (f *dbSyncHookFS) SyncDir(dir string) error {
	if f.onSync != nil && strings.HasSuffix(dir, ".db") {
		f.onSync(dir)
	}
	return f.localFS.SyncDir(dir)
}

// TestCreateIntoDirectoryBeingPrepared: a CREATE TABLE prepared the
// table's directory, which a DROP DATABASE then moved away (the table was
// not in effect yet); the database was created again, and another CREATE
// has made the table's directory anew and its schema and snapshot
// directories, not yet its manifest directory. The first CREATE publishes
// its schema there. The table must be whole: an INSERT failed writing its
// manifest before ("openat manifest/manifest-...: no such file or
// directory", an internal error; engine TestRandomDDLAndWrites).
func TestCreateIntoDirectoryBeingPrepared(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	root := t.TempDir()
	fsys := &dbSyncHookFS{}
	s := openStore(t, fsys, root, mem)
	defer s.Close()
	if err := s.CreateDatabase(ctx, "d", false); err != nil {
		t.Fatal(err)
	}
	id := Ident{"d", "x"}
	fsys.onSync = func(string) {
		fsys.onSync = nil
		if err := s.DropDatabase(ctx, "d", false, true); err != nil {
			t.Error(err)
		}
		if err := s.CreateDatabase(ctx, "d", false); err != nil {
			t.Error(err)
		}
		// The other CREATE, half way through making the directories.
		for _, sub := range []string{"schema", "snapshot"} {
			if err := os.MkdirAll(joinPath(root, "d.db", "x", sub), 0o755); err != nil {
				t.Error(err)
			}
		}
	}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := commitRows(tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}}); err != nil {
		t.Fatalf("insert into the table created: %v", err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a")
}

// TestRandomDDLRacingWrites: writers insert into tables that others, in
// this process, drop and create again (CREATE TABLE, CREATE TABLE ... AS,
// CREATE OR REPLACE TABLE ... AS), and whose database others drop and
// create again. Every operation succeeds or fails cleanly (not found,
// exists, conflict); an acknowledged insert's row is in the snapshot its
// commit returned, read through the table it was addressed to (unless
// that was dropped since); and no table holds a row written to another
// table of its name (a row carries the comment of the table written to).
func TestRandomDDLRacingWrites(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	var gen atomic.Int64
	def := func() TableDef {
		return TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2"},
			Comment: fmt.Sprintf("g%d", gen.Add(1))}
	}
	// checkRows reads snapshot id (0: the latest) of tbl; want, when
	// given, must be among its rows.
	checkRows := func(tbl *Table, id int64, want string) error {
		sc, err := tbl.NewScan(ctx, ScanSpec{SnapshotID: id})
		if err != nil {
			return err
		}
		rows, err := readScanErr(sc)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if !strings.Contains(r, "|"+tbl.Comment()+"/") {
				return fmt.Errorf("table %s (%s) holds row %q, written to another table of its name", tbl.Ident(), tbl.Comment(), r)
			}
		}
		if want != "" && !slices.Contains(rows, want) {
			return fmt.Errorf("acknowledged row %q is not in snapshot %d of %s (%s): %q", want, id, tbl.Ident(), tbl.Comment(), rows)
		}
		return nil
	}
	// write commits one row to w's table, then checks that it is there.
	write := func(w *Write, k int) error {
		row := []any{k, fmt.Sprintf("%s/%d", w.Table().Comment(), k)}
		b := makeBatch(t, mem, kvSchema, [][]any{row})
		err := w.Write(ctx, b, Insert)
		b.Release()
		if err != nil {
			w.Abort()
			return err
		}
		id, err := w.Commit(ctx)
		if err != nil {
			return err
		}
		return checkRows(w.Table(), id, fmt.Sprintf("%d|%s", row...))
	}
	deadline := time.Now().Add(2 * time.Second)
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := 0; time.Now().Before(deadline); i++ {
				id := Ident{"db", fmt.Sprintf("t%d", rng.IntN(2))}
				if rng.IntN(3) == 0 {
					id = Ident{"d", "x"}
				}
				k := g<<24 | i // unique: rows of one group commit never merge
				var err error
				var tbl *Table
				var w *Write
				switch op := rng.IntN(10); op {
				case 0:
					_, err = s.CreateTable(ctx, id, def(), true)
				case 1:
					err = s.DropTable(ctx, id, true)
				case 2:
					if w, err = s.StageTable(ctx, id, def(), rng.IntN(2) == 0); err == nil {
						err = write(w, k)
					}
				case 3:
					err = s.DropDatabase(ctx, id.Database, true, true)
				case 4:
					err = s.CreateDatabase(ctx, id.Database, true)
				default:
					if tbl, err = s.Table(ctx, id); err == nil {
						err = write(tbl.NewWrite(WriteOptions{}), k)
					}
				}
				for _, ok := range []error{ErrTableNotFound, ErrDatabaseNotFound, ErrSnapshotNotFound, ErrTableExists, ErrConflict} {
					if errors.Is(err, ok) {
						err = nil
					}
				}
				if err != nil {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%s: %v", id, err))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, b := range bad {
		t.Error(b)
	}
	for _, id := range []Ident{{"db", "t0"}, {"db", "t1"}, {"d", "x"}} {
		tbl, err := s.Table(ctx, id)
		if err == nil {
			err = checkRows(tbl, 0, "")
		}
		if err != nil && !errors.Is(err, ErrTableNotFound) && !errors.Is(err, ErrDatabaseNotFound) {
			t.Errorf("%s afterwards: %v", id, err)
		}
	}
}

// TestDroppedHereSaysSo: a handle opened before this process dropped its
// table fails to read with ErrTableNotFound saying that this process
// dropped it, once. It said "dropped by another process while the write
// was open" (for a read, after this process's drop), and a scan said
// "table not found" twice.
func TestDroppedHereSaysSo(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	id := Ident{"db", "t"}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	if err := s.DropTable(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	_, scanErr := tbl.NewScan(ctx, ScanSpec{})
	_, latestErr := tbl.LatestSnapshotID(ctx)
	for _, err := range []error{scanErr, latestErr} {
		if !errors.Is(err, ErrTableNotFound) || !errors.Is(err, errDroppedHere) || strings.Count(err.Error(), ErrTableNotFound.Error()) != 1 {
			t.Errorf("read of a table this process dropped: %q, want %q and %q, once", err, ErrTableNotFound, errDroppedHere)
		}
	}
}

// trashHookFS calls before and after (once each) around the rename of a
// table directory named name into the trash (DropTable).
type trashHookFS struct {
	localFS
	name          string
	before, after func()
}

func (f *trashHookFS) Rename(from, to string) error {
	hook := path.Base(from) == f.name && strings.Contains(to, trashPrefix)
	if before := f.before; hook && before != nil {
		f.before = nil
		before()
	}
	err := f.localFS.Rename(from, to)
	if after := f.after; hook && err == nil && after != nil {
		f.after = nil
		after()
	}
	return err
}

// TestDropAfterDropSparesStagedCreate: two DROP TABLEs find the table; the
// second waits for the first's lock, and meanwhile a CREATE TABLE ... AS
// stages the table anew under the name (not in effect until it commits).
// The second DROP then finds no table (ErrTableNotFound) and the CREATE
// ... AS commits. The second DROP moved the staged table's directory away
// before: it succeeded, as the first, and the CREATE ... AS failed with
// ErrTableNotFound.
func TestDropAfterDropSparesStagedCreate(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	fsys := &trashHookFS{name: "t"}
	s := openStore(t, fsys, t.TempDir(), mem)
	defer s.Close()
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	id := Ident{"db", "t"}
	def := TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}
	if _, err := s.CreateTable(ctx, id, def, false); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	var staged *Write
	fsys.before = func() {
		go func() { second <- s.DropTable(ctx, id, false) }()
		// Until the second DROP waits for the first's lock.
		buf := make([]byte, 1<<20)
		for deadline := time.Now().Add(10 * time.Second); ; {
			stacks := string(buf[:runtime.Stack(buf, true)])
			if strings.Contains(stacks, "(*Store).lockForDrop") && strings.Contains(stacks, "sync.(*Mutex).Lock") {
				break
			}
			if time.Now().After(deadline) {
				t.Error("the second DROP never waited for the first's lock")
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	fsys.after = func() {
		var err error
		if staged, err = s.StageTable(ctx, id, TableDef{Schema: kvSchema}, false); err != nil {
			t.Error(err)
		}
	}
	if err := s.DropTable(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, ErrTableNotFound) {
		t.Errorf("second DROP of a dropped table: %v, want ErrTableNotFound", err)
	}
	if staged == nil {
		t.FailNow()
	}
	b := makeBatch(t, mem, kvSchema, [][]any{{1, "staged"}})
	err := staged.Write(ctx, b, Insert)
	b.Release()
	if err == nil {
		_, err = staged.Commit(ctx)
	}
	if err != nil {
		staged.Abort()
		t.Fatalf("CREATE TABLE ... AS staged while the table was dropped: %v", err)
	}
	tbl, err := s.Table(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|staged")
}

// TestAbortSparesDirectoryCreatedAgain: a write that made a bucket
// directory in a table is aborted after the table was dropped and another
// CREATE made the table's directory again, still empty. The abort removes
// what it made in the dropped table's directory, never the new one at the
// path: it removed that by path (the other CREATE then failed with
// "dropped while it was created", or "database not found", and retried).
// With nobody creating the table again, the abort leaves nothing behind.
func TestAbortSparesDirectoryCreatedAgain(t *testing.T) {
	for _, c := range []struct {
		name                string
		otherNode, recreate bool
	}{
		{"recreated", false, true},
		{"recreated-by-other-node", true, true},
		{"dropped", false, false},
		{"dropped-by-other-node", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, mem, root := newTestStore(t)
			id := Ident{"db", "t"}
			def := TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}
			tbl, err := s.CreateTable(ctx, id, def, false)
			if err != nil {
				t.Fatal(err)
			}
			w := openWrite(t, tbl, mem, [][]any{{1, "old"}})
			if err := w.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			if len(w.dirs) == 0 {
				t.Fatal("the write made no directory")
			}
			ddl := s
			if c.otherNode {
				ddl = openStore(t, NewLocalFS(), root, mem)
				defer ddl.Close()
			}
			if err := ddl.DropTable(ctx, id, false); err != nil {
				t.Fatal(err)
			}
			dbDir := joinPath(root, "db.db")
			if !c.recreate {
				w.Abort()
				if names, err := os.ReadDir(dbDir); err != nil || len(names) != 0 {
					t.Fatalf("the aborted write left %v (%v)", names, err)
				}
				return
			}
			// The other CREATE, between making the table's directory and
			// the directories in it.
			if _, err := ddl.prepareTableDir(id); err != nil {
				t.Fatal(err)
			}
			dir := joinPath(dbDir, "t")
			before, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			w.Abort()
			after, err := os.Stat(dir)
			if err != nil || !os.SameFile(before, after) {
				t.Fatalf("the abort removed the directory another CREATE made: %v", err)
			}
			created, err := ddl.CreateTable(ctx, id, def, false)
			if err != nil {
				t.Fatal(err)
			}
			writeRows(t, created, mem, WriteOptions{}, Insert, [][]any{{2, "new"}})
			eqRows(t, scanAll(t, created, ScanSpec{}), "2|new")
			if names, err := os.ReadDir(dbDir); err != nil || len(names) != 1 {
				t.Fatalf("database directory holds %v (%v), want the table only", names, err)
			}
		})
	}
}

// TestAbortedStagedCreateSparesTableCreatedAgain: a CREATE TABLE ... AS
// (a staged create) is aborted after DROP DATABASE moved its directory
// away and another CREATE TABLE ... AS staged the table anew, under the
// same schema id. The abort removes its schema, bucket directory and files
// from its own directory only: the other create commits whole.
func TestAbortedStagedCreateSparesTableCreatedAgain(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	id := Ident{"db", "n"}
	w := stage(t, s, id, false, [][]any{{1}})
	if err := w.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.DropDatabase(ctx, "db", false, true); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	other := stage(t, s, id, false, [][]any{{2}})
	if err := other.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if other.staged.ID != w.staged.ID {
		t.Fatalf("staged schema ids %d and %d, want one id", w.staged.ID, other.staged.ID)
	}
	w.Abort()
	if _, err := other.Commit(ctx); err != nil {
		t.Fatalf("create staged again after the drop: %v", err)
	}
	tbl, err := s.Table(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "2")
}
