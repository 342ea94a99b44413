package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/meta"
)

var xSchema = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

// stage writes rows into a StageTable write without committing it.
func stage(t *testing.T, s *Store, id Ident, replace bool, rows [][]any) *Write {
	t.Helper()
	w, err := s.StageTable(context.Background(), id, TableDef{Schema: xSchema}, replace)
	if err != nil {
		t.Fatal(err)
	}
	b := makeBatch(t, s.opts.Mem, xSchema, rows)
	defer b.Release()
	if err := w.Write(context.Background(), b, Insert); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestStageTableInterrupted: a replace or create that never commits (the
// process died) leaves the catalog as it was, after a restart too, and does
// not block later creates, replaces or ALTERs.
func TestStageTableInterrupted(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	s := openStore(t, NewLocalFS(), dir, mem)
	must(t, s.CreateDatabase(ctx, "db", false))
	id := Ident{"db", "t"}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}})

	// Flushed to files but never committed: the write is abandoned, as by
	// kill -9 (its buffered batches are released, its files stay).
	w := stage(t, s, id, true, [][]any{{7}})
	must(t, w.flush(ctx))
	w.reset()
	w = stage(t, s, Ident{"db", "n"}, false, [][]any{{8}})
	must(t, w.flush(ctx))
	w.reset()
	must(t, s.Close())

	s = openStore(t, NewLocalFS(), dir, mem)
	defer s.Close()
	tables, err := s.Tables(ctx, "db")
	must(t, err)
	if len(tables) != 1 || tables[0] != "t" {
		t.Fatalf("tables after interrupted stages: %v", tables)
	}
	tbl, err = s.Table(ctx, id)
	must(t, err)
	if got := tbl.Schema().Field(0).Name; got != "k" {
		t.Fatalf("table t has column %q after an interrupted replace", got)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a", "2|b")
	if _, err := s.Table(ctx, Ident{"db", "n"}); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("interrupted create left a table: %v", err)
	}
	// Later writes, ALTERs, creates and replaces work.
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "c"}})
	must(t, s.AlterTable(ctx, id, SetOption{Key: "snapshot.num-retained.min", Value: "5"}))
	if _, err := s.CreateTable(ctx, Ident{"db", "n"}, TableDef{Schema: kvSchema}, false); err != nil {
		t.Fatalf("create after an interrupted create: %v", err)
	}
	if _, err := s.CreateTable(ctx, Ident{"db", "n"}, TableDef{Schema: kvSchema}, false); !errors.Is(err, ErrTableExists) {
		t.Fatalf("second create: %v", err)
	}
	w = stage(t, s, id, true, [][]any{{9}})
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	nt, err := s.Table(ctx, id)
	must(t, err)
	eqRows(t, scanAll(t, nt, ScanSpec{}), "9")
}

// TestReplaceHandles: a handle opened before a replace keeps reading the
// old table whole, a write begun on it cannot commit into the new one, and
// a create commit fails when the table appeared meanwhile.
func TestReplaceHandles(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	id := Ident{"db", "t"}
	old, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false)
	must(t, err)
	writeRows(t, old, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	late := old.NewWrite(WriteOptions{})
	b := makeBatch(t, mem, kvSchema, [][]any{{2, "b"}})
	must(t, late.Write(ctx, b, Insert))
	b.Release()

	w := stage(t, s, id, true, [][]any{{5}, {6}})
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	eqRows(t, scanAll(t, old, ScanSpec{}), "1|a")
	nt, err := s.Table(ctx, id)
	must(t, err)
	eqRows(t, scanAll(t, nt, ScanSpec{}), "5", "6")
	if _, err := late.Commit(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("write begun before the replace committed: %v", err)
	}
	eqRows(t, scanAll(t, nt, ScanSpec{}), "5", "6")

	c1 := stage(t, s, Ident{"db", "c"}, false, [][]any{{1}})
	c2 := stage(t, s, Ident{"db", "c"}, false, [][]any{{2}})
	if _, err := c2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Commit(ctx); !errors.Is(err, ErrTableExists) {
		t.Fatalf("second create: %v, want ErrTableExists", err)
	}
	ct, err := s.Table(ctx, Ident{"db", "c"})
	must(t, err)
	eqRows(t, scanAll(t, ct, ScanSpec{}), "2")
}

// TestDropTableRacingWrites drops tables, or their database (CASCADE),
// while writers commit to them: the drop always succeeds (a database's
// failed with "directory not empty" when a writer created a file in it
// meanwhile), writers fail with a not-found error, and (locally: an object
// store cannot rename the directory away, see Store.dropInPlace) no file
// or directory is left behind.
func TestDropTableRacingWrites(t *testing.T) {
	forEachWarehouse(t, func(t *testing.T, wh warehouse) {
		for _, database := range []bool{false, true} {
			t.Run(map[bool]string{false: "table", true: "database"}[database], func(t *testing.T) {
				testDropRacingWrites(t, wh, database)
			})
		}
	})
}

func testDropRacingWrites(t *testing.T, wh warehouse, database bool) {
	ctx := context.Background()
	mem := newMem(t)
	dir := joinPath(wh.root, map[bool]string{false: "table", true: "database"}[database])
	s := openStore(t, wh.fs, dir, mem)
	t.Cleanup(func() { s.Close() })
	rounds := 15
	if wh.remote {
		rounds = 3
	}
	for round := range rounds {
		if round == 0 || database {
			must(t, s.CreateDatabase(ctx, "db", false))
		}
		id := Ident{"db", "d"}
		tbl, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false)
		must(t, err)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; ; i++ {
					w := tbl.NewWrite(WriteOptions{})
					b, err := buildBatch(mem, kvSchema, [][]any{{g*1000 + i, "v"}})
					if err != nil {
						t.Error(err)
						return
					}
					err = w.Write(ctx, b, Insert)
					b.Release()
					if err == nil {
						_, err = w.Commit(ctx)
					} else {
						w.Abort()
					}
					if err != nil {
						if !errors.Is(err, ErrTableNotFound) && !errors.Is(err, ErrSnapshotNotFound) {
							t.Errorf("round %d: writer: %v", round, err)
						}
						return
					}
				}
			}()
		}
		close(start)
		drop := func() error { return s.DropTable(ctx, id, false) }
		if database {
			drop = func() error { return s.DropDatabase(ctx, "db", false, true) }
		}
		if err := drop(); err != nil {
			t.Fatalf("round %d: drop: %v", round, err)
		}
		wg.Wait()
		if _, err := s.Table(ctx, id); !errors.Is(err, ErrTableNotFound) {
			t.Fatalf("round %d: dropped table: %v, want ErrTableNotFound", round, err)
		}
		if wh.remote {
			must(t, wh.fs.RemoveAll(joinPath(dir, "db.db")))
			if !database {
				must(t, s.CreateDatabase(ctx, "db", false))
			}
			continue
		}
		left, err := wh.fs.List(joinPath(dir, "db.db"))
		if database {
			left, err = wh.fs.List(dir)
			left = slices.DeleteFunc(left, func(n string) bool { return !strings.HasPrefix(n, "db.db") && !strings.HasPrefix(n, trashPrefix) })
		}
		if err != nil || len(left) != 0 {
			t.Fatalf("round %d: left behind: %v %v", round, left, err)
		}
	}
}

// TestNonFiniteDatums: manifests hold every DOUBLE value, infinities and
// NaN included (JSON numbers cannot).
func TestNonFiniteDatums(t *testing.T) {
	in := []meta.Datum{meta.FloatDatum(math.Inf(1)), meta.FloatDatum(math.Inf(-1)), meta.FloatDatum(math.NaN()), meta.FloatDatum(-0.5), meta.IntDatum(3)}
	data, err := meta.Encode(in)
	must(t, err)
	var out []meta.Datum
	must(t, meta.Decode("test", data, &out))
	if got, want := meta.PartitionKey(out), meta.PartitionKey(in); got != want {
		t.Fatalf("round trip: got %s, want %s", got, want)
	}
}

// TestScanAfterTwoReplaces: a table handle bound before two replaces (the
// second back to a schema like the first) reads its own table, not the one
// in between, whose columns have the same field ids and other types.
func TestScanAfterTwoReplaces(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	id := Ident{"db", "t"}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}})
	for _, rows := range [][][]any{{{7}}, {{8}, {9}}} {
		w := stage(t, s, id, true, rows)
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "1|a", "2|b")
	now, err := s.Table(ctx, id)
	must(t, err)
	eqRows(t, scanAll(t, now, ScanSpec{}), "8", "9")
}

// TestAbandonedStagedSchemaIDTaken: a replace staged as schema 1 is
// abandoned (its file removed), and an ALTER TABLE, of this process or
// another, publishes its version under the freed id 1. This process read
// the staged version while it was listed (a lookup of the table), and
// read the ALTER's version as that replace, not in effect: the table
// lacked the added column while its new files had it ("statistics of
// unknown column"), found by engine TestRandomDDLAndWrites on two nodes.
func TestAbandonedStagedSchemaIDTaken(t *testing.T) {
	for _, otherProcess := range []bool{false, true} {
		t.Run(fmt.Sprintf("otherProcess=%v", otherProcess), func(t *testing.T) {
			ctx := context.Background()
			mem := newMem(t)
			dir := t.TempDir()
			s := openStore(t, NewLocalFS(), dir, mem)
			defer s.Close()
			alterer := s
			if otherProcess {
				alterer = openStore(t, NewLocalFS(), dir, mem)
				defer alterer.Close()
			}
			must(t, s.CreateDatabase(ctx, "db", false))
			id := Ident{"db", "t"}
			if _, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false); err != nil {
				t.Fatal(err)
			}
			w := stage(t, s, id, true, [][]any{{1}})
			if _, err := s.FreshTable(ctx, id); err != nil { // reads the staged version
				t.Fatal(err)
			}
			w.Abort()
			must(t, alterer.AlterTable(ctx, id, AddColumn{Name: "extra", Type: arrow.BinaryTypes.String}))
			tbl, err := s.FreshTable(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := tbl.Schema().NumFields(); got != 3 {
				t.Fatalf("the table after the ALTER has %d columns, want 3: %v", got, tbl.Schema())
			}
		})
	}
}

// TestManifestOfDroppedTable: a manifest decoded after the table's
// directory was moved away by a drop, naming a schema version this store
// has not read (a staged replace's is never kept), says the table is gone:
// it said "corrupt file" (data loss), which a scan racing a drop or a
// CREATE OR REPLACE on another node reported (engine TestRandomDDLAndWrites).
func TestManifestOfDroppedTable(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	s := openStore(t, NewLocalFS(), t.TempDir(), mem)
	defer s.Close()
	must(t, s.CreateDatabase(ctx, "db", false))
	id := Ident{"db", "t"}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false)
	if err != nil {
		t.Fatal(err)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	st := tbl.st
	names, err := st.fs().List(joinPath(st.dir, "manifest"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(names, func(n string) bool {
		return strings.HasPrefix(n, "manifest-") && !strings.HasPrefix(n, "manifest-list-")
	})
	if i < 0 {
		t.Fatalf("no manifest among %v", names)
	}
	name := joinPath(st.dir, "manifest", names[i])
	data, err := readFileAll(st.fs(), name)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.DropTable(ctx, id, false))
	st.mu.Lock()
	clear(st.schemas) // as on a store that had not read the version
	st.mu.Unlock()
	_, err = st.decodeManifest(name, data)
	if !errors.Is(err, ErrTableNotFound) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("decoding a manifest of a dropped table: %v; want table not found, not corrupt", err)
	}
}

// TestStageTableAbortedLeavesNothing: an aborted create (CREATE TABLE ...
// AS whose query failed) removes the table's directory, with the data
// files it had flushed, unless another create of the name has published
// its schema meanwhile: that one still commits. Before, the directory
// stayed with its schema, snapshot, manifest and bucket directories.
func TestStageTableAbortedLeavesNothing(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	s := openStore(t, NewLocalFS(), dir, mem)
	defer s.Close()
	must(t, s.CreateDatabase(ctx, "db", false))
	id := Ident{"db", "n"}
	tableDir := filepath.Join(dir, "db.db", "n")

	a := stage(t, s, id, false, [][]any{{1}})
	must(t, a.flush(ctx))
	b := stage(t, s, id, false, [][]any{{2}})
	must(t, b.flush(ctx))
	a.Abort()
	if _, err := b.Commit(ctx); err != nil {
		t.Fatalf("commit of a create staged beside an aborted one: %v", err)
	}
	tbl, err := s.Table(ctx, id)
	must(t, err)
	eqRows(t, scanAll(t, tbl, ScanSpec{}), "2")

	must(t, s.DropTable(ctx, id, false))
	c := stage(t, s, id, false, [][]any{{3}})
	must(t, c.flush(ctx))
	c.Abort()
	if _, err := os.Stat(tableDir); !errors.Is(err, fs.ErrNotExist) {
		ents, _ := os.ReadDir(tableDir)
		t.Fatalf("aborted create left %s: %v (%d entries)", tableDir, err, len(ents))
	}
	if _, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema}, false); err != nil {
		t.Fatalf("create after an aborted create: %v", err)
	}
}
