package tablestore

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
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
