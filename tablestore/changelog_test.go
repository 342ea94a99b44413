package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore/meta"
)

var clSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// changelogEngines are merge engine settings the changelog tests cover,
// with whether they take deletes.
var changelogEngines = []struct {
	name    string
	opts    map[string]string
	deletes bool
}{
	{"deduplicate", map[string]string{}, true},
	{"partial-update", map[string]string{"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, true},
	{"aggregation", map[string]string{"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "last_value", "aggregation.remove-record-on-delete": "true"}, true},
	{"first-row", map[string]string{"merge-engine": "first-row"}, false},
}

type clRow struct {
	kind RowKind
	key  string
	row  string
}

// readChangelog returns the changelog rows snapshot id publishes, in the
// contract's order (entries of the changelog manifests, rows of each file).
func readChangelog(t testing.TB, tbl *Table, id int64) []clRow {
	t.Helper()
	ctx := context.Background()
	st := tbl.st
	sn, err := st.readSnapshot(id)
	must(t, err)
	ents, _, err := st.changelogFiles(sn)
	must(t, err)
	sch, err := st.schema(sn.SchemaID)
	must(t, err)
	all := make([]int, len(sch.Fields))
	for i := range all {
		all[i] = i
	}
	s := &Scan{st: st, sch: sch, proj: all, noCache: true}
	var out []clRow
	for _, e := range ents {
		if e.Kind != meta.KindAdd || !strings.HasPrefix(e.File.FileName, "changelog-") {
			t.Fatalf("snapshot %d: bad changelog entry %+v", id, e)
		}
		df, err := st.openDataFile(e)
		must(t, err)
		rgs := make([]int, df.numRowGroups())
		for i := range rgs {
			rgs[i] = i
		}
		r, err := newStreamReader(ctx, s, df, rgs, newReadTarget(sch, all, true))
		must(t, err)
		r.raw = true
		for {
			b, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			must(t, err)
			kinds := b.Column(1).(interface{ Value(int) int8 })
			for i := range int(b.NumRows()) {
				cells := make([]string, 0, len(all))
				for c := range all {
					cells = append(cells, cellString(b.Column(2+c), i))
				}
				var key []string
				for _, k := range sch.PrimaryKeys {
					key = append(key, cells[sch.fieldIndex(k)])
				}
				out = append(out, clRow{RowKind(kinds.Value(i)), strings.Join(key, "|"), strings.Join(cells, "|")})
			}
		}
		must(t, r.Close())
	}
	return out
}

// contentAt returns the merged rows of a snapshot by key (empty for 0).
func contentAt(t testing.TB, tbl *Table, id int64) map[string]string {
	t.Helper()
	out := map[string]string{}
	if id == 0 {
		return out
	}
	sch := tbl.schema
	for _, r := range scanAll(t, tbl, ScanSpec{SnapshotID: id}) {
		cells := strings.Split(r, "|")
		var key []string
		for _, k := range sch.PrimaryKeys {
			key = append(key, cells[sch.fieldIndex(k)])
		}
		out[strings.Join(key, "|")] = r
	}
	return out
}

// applyChangelog applies rows to state. strict: before-images must match
// the state (-U/-D), inserts must find the key absent; otherwise the rows
// are upserts and retractions delete (deduplicate's reading of a lone -U).
func applyChangelog(state map[string]string, rows []clRow, strict bool) error {
	for _, r := range rows {
		cur, ok := state[r.key]
		switch {
		case r.kind.IsRetract() && strict && (!ok || cur != r.row):
			return fmt.Errorf("%s %s: state holds %q", r.kind, r.row, cur)
		case r.kind.IsRetract():
			delete(state, r.key)
		case strict && ok:
			return fmt.Errorf("%s %s: key present as %q", r.kind, r.row, cur)
		default:
			state[r.key] = r.row
		}
	}
	return nil
}

// TestChangelogProducers: several writers (one of them through a second
// store, like another process) commit random upserts and deletes (with
// background compaction) to tables of every merge engine and
// changelog producer that claims a complete changelog; then, for every
// snapshot k with a changelog, the changelog applied to the content of the
// snapshot before it gives exactly its content (so applying the
// changelogs of k+1..n to the content at k gives the content at n). The
// full-compaction producer is checked between its COMPACT snapshots.
// Replay with FLIGHTD_SEED.
func TestChangelogProducers(t *testing.T) {
	seed := testSeed(t)
	for _, eng := range changelogEngines {
		for _, prod := range []string{"lookup", "full-compaction", "input"} {
			if prod == "input" && eng.name != "deduplicate" || prod == "full-compaction" && eng.name == "first-row" {
				continue
			}
			t.Run(eng.name+"/"+prod, func(t *testing.T) {
				t.Parallel() // commits mostly wait for fsync
				runChangelogTest(t, seed, eng.opts, eng.deletes, prod)
			})
		}
	}
}

func runChangelogTest(t *testing.T, seed uint64, engOpts map[string]string, deletes bool, producer string) {
	ctx := context.Background()
	s, mem, dir := newTestStore(t)
	opts := map[string]string{"bucket": "2", "changelog-producer": producer, "snapshot.num-retained.min": "1000",
		"num-sorted-run.compaction-trigger": "3", "full-compaction.delta-commits": "4", "file.row-group-rows": "8"}
	for k, v := range engOpts {
		opts[k] = v
	}
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: clSchema, PrimaryKey: []string{"k"}, Options: opts}, false)
	must(t, err)
	if ok, why := tbl.ChangelogComplete(); !ok {
		t.Fatalf("combination claims no complete changelog: %s", why)
	}
	// The third writer is another store on the same directory, like
	// another process: its commits race by put-if-absent, and a lost race
	// recomputes the changelog.
	s2 := openStore(t, NewLocalFS(), dir, mem)
	defer s2.Close()
	tbl2, err := s2.Table(ctx, Ident{"db", "t"})
	must(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for wr, tb := range []*Table{tbl, tbl, tbl2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(wr)))
			for range 5 {
				if err := commitRandom(ctx, tb, mem, rng, deletes); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	must(t, tbl.Compact(ctx, true))
	checkChangelogs(t, tbl, producer, 2)
}

// checkChangelogs checks that the changelog of every snapshot with one,
// applied to the content of the snapshot before it (the previous
// full-compaction changelog snapshot for that producer), gives its content;
// at least min changelogs must be checked.
func checkChangelogs(t *testing.T, tbl *Table, producer string, min int) {
	t.Helper()
	latest, err := tbl.LatestSnapshotID(context.Background())
	must(t, err)
	strict := producer != "input"
	prev := int64(0)
	checked := 0
	for id := int64(1); id <= latest; id++ {
		sn, err := tbl.st.readSnapshot(id)
		must(t, err)
		rows := readChangelog(t, tbl, id)
		switch {
		case producer == "full-compaction" && sn.ChangelogManifestList == "":
			continue
		case producer == "full-compaction" && sn.CommitKind != meta.CommitCompact:
			t.Fatalf("snapshot %d (%s) has a full-compaction changelog", id, sn.CommitKind)
		case producer != "full-compaction" && sn.CommitKind == meta.CommitCompact && len(rows) > 0:
			t.Fatalf("compaction snapshot %d has %d changelog rows", id, len(rows))
		}
		state := contentAt(t, tbl, prev)
		if err := applyChangelog(state, rows, strict); err != nil {
			t.Fatalf("changelog of snapshot %d on snapshot %d: %v", id, prev, err)
		}
		if want := contentAt(t, tbl, id); !mapsEqual(state, want) {
			t.Fatalf("changelog of snapshot %d applied to snapshot %d:\n got %v\nwant %v\nrows %v", id, prev, state, want, rows)
		}
		prev = id
		checked++
	}
	if checked < min {
		t.Fatalf("only %d changelogs checked", checked)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// commitRandom commits 1-6 random upserts and deletes, retrying on
// conflicts with concurrent writers.
func commitRandom(ctx context.Context, tbl *Table, mem memory.Allocator, rng *rand.Rand, deletes bool) error {
	var rows [][]any
	var kinds []RowKind
	for range 1 + rng.IntN(6) {
		k := rng.IntN(30)
		var a, b any
		if rng.IntN(4) > 0 {
			a = rng.IntN(100)
		}
		if rng.IntN(4) > 0 {
			b = fmt.Sprintf("s%d", rng.IntN(5))
		}
		kind := Insert
		if deletes && rng.IntN(5) == 0 {
			kind = Delete
		}
		rows = append(rows, []any{k, a, b})
		kinds = append(kinds, kind)
	}
	for attempt := 0; ; attempt++ {
		b, err := buildBatch(mem, clSchema, rows)
		if err != nil {
			return err
		}
		w := tbl.NewWrite(WriteOptions{})
		err = w.WriteKinds(ctx, b, kinds)
		b.Release()
		if err == nil {
			_, err = w.Commit(ctx)
		}
		if errors.Is(err, ErrConflict) && attempt < 50 {
			time.Sleep(time.Millisecond)
			continue
		}
		return err
	}
}

func TestChangelogComplete(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	for i, c := range []struct {
		opts map[string]string
		ok   bool
		msg  string
	}{
		{map[string]string{}, true, ""},
		{map[string]string{"merge-engine": "partial-update"}, false, "table db.t1 has merge-engine partial-update with changelog-producer none: its changes are partial rows; set changelog-producer to lookup or full-compaction"},
		{map[string]string{"merge-engine": "aggregation", "changelog-producer": "input"}, false, "changelog-producer input"},
		{map[string]string{"merge-engine": "first-row"}, false, "set changelog-producer to lookup"},
		{map[string]string{"merge-engine": "aggregation", "changelog-producer": "full-compaction"}, true, ""},
		{map[string]string{"merge-engine": "first-row", "changelog-producer": "lookup"}, true, ""},
	} {
		id := Ident{"db", fmt.Sprintf("t%d", i)}
		tbl, err := s.CreateTable(ctx, id, TableDef{Schema: clSchema, PrimaryKey: []string{"k"}, Options: c.opts}, false)
		must(t, err)
		ok, msg := tbl.ChangelogComplete()
		if ok != c.ok || !strings.Contains(msg, c.msg) {
			t.Errorf("%v: got %v %q, want %v %q", c.opts, ok, msg, c.ok, c.msg)
		}
	}
}

// TestChangelogOverwriteAndExpiry: the rows an INSERT OVERWRITE replaces
// show up as deletes in the lookup changelog; expiry removes changelog
// files with the snapshot that lists them, and RemoveOrphanFiles reclaims
// unlisted ones but keeps listed ones.
func TestChangelogOverwriteAndExpiry(t *testing.T) {
	ctx := context.Background()
	s, mem, dir := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: clSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"changelog-producer": "lookup", "write-only": "true", "snapshot.num-retained.min": "1"}}, false)
	must(t, err)
	write := func(opts WriteOptions, rows ...[]any) int64 {
		b := makeBatch(t, mem, clSchema, rows)
		defer b.Release()
		w := tbl.NewWrite(opts)
		must(t, w.Write(ctx, b, Insert))
		id, err := w.Commit(ctx)
		must(t, err)
		return id
	}
	write(WriteOptions{}, []any{1, 10, "a"}, []any{2, 20, "b"})
	id := write(WriteOptions{}, []any{2, 21, "b"}, []any{3, 30, "c"})
	got := readChangelog(t, tbl, id)
	want := []clRow{{UpdateBefore, "2", "2|20|b"}, {UpdateAfter, "2", "2|21|b"}, {Insert, "3", "3|30|c"}}
	if !slices.Equal(got, want) {
		t.Fatalf("append changelog: got %v, want %v", got, want)
	}
	// The same row again changes nothing.
	if id := write(WriteOptions{}, []any{3, 30, "c"}); len(readChangelog(t, tbl, id)) != 0 {
		t.Fatalf("no-op upsert produced changelog rows: %v", readChangelog(t, tbl, id))
	}
	id = write(WriteOptions{Overwrite: true}, []any{3, 31, "c"})
	got = readChangelog(t, tbl, id)
	want = []clRow{{Delete, "1", "1|10|a"}, {Delete, "2", "2|21|b"}, {UpdateBefore, "3", "3|30|c"}, {UpdateAfter, "3", "3|31|c"}}
	if !slices.Equal(got, want) {
		t.Fatalf("overwrite changelog: got %v, want %v", got, want)
	}
	tblDir := dir + "/db.db/t"
	if n := countFiles(t, tblDir, "changelog-"); n != 3 {
		t.Fatalf("want 3 changelog files, found %d", n)
	}
	must(t, s.AlterTable(ctx, Ident{"db", "t"}, SetOption{"snapshot.time-retained", "1ms"}))
	time.Sleep(5 * time.Millisecond)
	// Background maintenance after the commits may expire some of them
	// first: count what is left, not what this call expired.
	_, err = tbl.ExpireSnapshots(ctx)
	must(t, err)
	if earliest, err := tbl.st.earliestSnapshotID(); err != nil || earliest != id {
		t.Fatalf("earliest snapshot %d (%v) after expiry, want the last, %d", earliest, err, id)
	}
	if n := countFiles(t, tblDir, "changelog-"); n != 1 {
		t.Fatalf("after expiry want the latest snapshot's changelog file only, found %d", n)
	}
	removed, err := tbl.RemoveOrphanFiles(ctx, 0)
	must(t, err)
	if n := countFiles(t, tblDir, "changelog-"); n != 1 || removed != 0 {
		t.Fatalf("orphan removal touched listed changelog files: %d left, %d removed", n, removed)
	}
	if rows := readChangelog(t, tbl, id); len(rows) != 4 {
		t.Fatalf("changelog of the retained snapshot: %v", rows)
	}
}

// raceFS runs hook once, right before the first snapshot publication.
type raceFS struct {
	FS
	hook func()
}

func (f *raceFS) RenameNoReplace(oldname, newname string) error {
	if h := f.hook; h != nil && strings.Contains(newname, "/snapshot/snapshot-") {
		f.hook = nil
		h()
	}
	return f.FS.RenameNoReplace(oldname, newname)
}

// TestLookupChangelogLostRace: a commit that loses the snapshot race to
// another process recomputes its lookup changelog against the snapshot it
// then lands on, and leaves no changelog file of the lost attempt behind.
func TestLookupChangelogLostRace(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	rfs := &raceFS{FS: NewLocalFS()}
	a := openStore(t, rfs, dir, mem)
	defer a.Close()
	must(t, a.CreateDatabase(ctx, "db", false))
	id := Ident{"db", "t"}
	sc := arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.PrimitiveTypes.Int32}, {Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	ta, err := a.CreateTable(ctx, id, TableDef{Schema: sc, PrimaryKey: []string{"p", "k"}, PartitionKeys: []string{"p"},
		Options: map[string]string{"changelog-producer": "lookup", "write-only": "true"}}, false)
	must(t, err)
	writeRows(t, ta, mem, WriteOptions{}, Insert, [][]any{{1, 1, "a"}, {2, 1, "x"}})
	b := openStore(t, NewLocalFS(), dir, mem)
	defer b.Close()
	tb, err := b.Table(ctx, id)
	must(t, err)
	raced := false
	rfs.hook = func() {
		// Another process publishes the snapshot id ours was going to get.
		writeRows(t, tb, mem, WriteOptions{}, Insert, [][]any{{2, 1, "y"}, {2, 2, "z"}})
		raced = true
	}
	snap := writeRows(t, ta, mem, WriteOptions{}, Insert, [][]any{{1, 1, "b"}})
	if !raced || snap != 3 {
		t.Fatalf("race not staged: raced %v, snapshot %d", raced, snap)
	}
	got := readChangelog(t, ta, 3)
	want := []clRow{{UpdateBefore, "1|1", "1|1|a"}, {UpdateAfter, "1|1", "1|1|b"}}
	if !slices.Equal(got, want) {
		t.Fatalf("changelog of the retried commit: %v, want %v", got, want)
	}
	checkChangelogs(t, ta, producerLookup, 3)
	keep, _, err := ta.st.referenced(mustSnapshots(t, ta))
	must(t, err)
	if n, data := countFiles(t, dir, "changelog-"), countFiles(t, dir, "data-"); n+data != len(keep) {
		t.Fatalf("%d changelog and %d data files, %d referenced: the lost attempt left files", n, data, len(keep))
	}
}
