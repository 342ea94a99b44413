package lookup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the random lookup tests (0: from the clock)")

func testSeed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", s, s)
	return s
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k1", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k2", Type: arrow.BinaryTypes.String},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func newStore(t *testing.T) (*tablestore.Store, *memory.CheckedAllocator) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	s, err := tablestore.Open(context.Background(), tablestore.NewLocalFS(), t.TempDir(), tablestore.Options{Mem: mem, CacheBytes: 1 << 20, BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CreateDatabase(context.Background(), "db", false); err != nil {
		t.Fatal(err)
	}
	return s, mem
}

func createTable(t *testing.T, s *tablestore.Store, name string, opts map[string]string) *tablestore.Table {
	o := map[string]string{"bucket": "2", "num-sorted-run.compaction-trigger": "3", "file.row-group-rows": "4", "snapshot.num-retained.min": "3", "snapshot.num-retained.max": "4"}
	for k, v := range opts {
		o[k] = v
	}
	tbl, err := s.CreateTable(context.Background(), tablestore.Ident{Database: "db", Table: name}, tablestore.TableDef{Schema: testSchema, PrimaryKey: []string{"k1", "k2"}, Options: o}, false)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// keyBatch builds key columns from (k1, k2) pairs; nil parts are NULL.
func keyBatch(mem memory.Allocator, keys [][2]any) []arrow.Array {
	b1 := array.NewInt64Builder(mem)
	b2 := array.NewStringBuilder(mem)
	defer b1.Release()
	defer b2.Release()
	for _, k := range keys {
		if k[0] == nil {
			b1.AppendNull()
		} else {
			b1.Append(k[0].(int64))
		}
		if k[1] == nil {
			b2.AppendNull()
		} else {
			b2.Append(k[1].(string))
		}
	}
	return []arrow.Array{b1.NewArray(), b2.NewArray()}
}

func release(as []arrow.Array) {
	for _, a := range as {
		a.Release()
	}
}

// snapshotRows reads a snapshot by a full scan: the batch query the
// lookups must agree with. Keys and rows are rendered as strings.
func snapshotRows(ctx context.Context, tbl *tablestore.Table, id int64) (map[string]string, error) {
	out := map[string]string{}
	if id == 0 {
		return out, nil // before the first commit
	}
	scan, err := tbl.NewScan(ctx, tablestore.ScanSpec{SnapshotID: id})
	if err != nil {
		return nil, err
	}
	defer scan.Close()
	for _, sp := range scan.Splits() {
		r, err := sp.Open(ctx)
		if err != nil {
			return nil, err
		}
		for {
			b, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return nil, err
			}
			for i := range int(b.NumRows()) {
				out[render(b.Columns()[:2], i)] = render(b.Columns(), i)
			}
		}
		r.Close()
	}
	return out, nil
}

func render(cols []arrow.Array, i int) string {
	s := ""
	for _, c := range cols {
		s += c.ValueStr(i) + "|"
	}
	return s
}

type engineCase struct {
	name string
	opts map[string]string
	// deletes: the engine takes deletes; agg: v sums.
	deletes bool
}

var engines = []engineCase{
	{"deduplicate", nil, true},
	{"partial-update", map[string]string{"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, true},
	{"aggregation", map[string]string{"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "fields.s.aggregate-function": "max", "aggregation.remove-record-on-delete": "true"}, true},
	{"first-row", map[string]string{"merge-engine": "first-row"}, false},
}

var cacheCases = []struct {
	name string
	opts map[string]string
}{
	{"none", map[string]string{OptCache: "NONE"}},
	{"partial", nil},
	{"tiny", map[string]string{OptMaxRows: "3"}},
	{"no-missing", map[string]string{OptCacheMissingKey: "false"}},
	{"full", map[string]string{OptCache: "FULL"}},
	// This process's commits show at once whatever the staleness allowed.
	{"stale", map[string]string{OptMaxStaleness: "1h"}},
}

// TestLookupMatchesScan: under concurrent upserts, deletes, overwrites,
// compaction and expiry, every lookup (hits, misses, duplicates, NULL keys)
// equals a full scan of the snapshot it read, and a lookup after a commit
// returned sees that commit.
func TestLookupMatchesScan(t *testing.T) {
	seed := testSeed(t)
	for ei, ec := range engines {
		for ci, cc := range cacheCases {
			if ei > 0 && cc.name != "none" && cc.name != "tiny" {
				continue // every cache mode on one engine, the merge on each
			}
			t.Run(ec.name+"/"+cc.name, func(t *testing.T) {
				runRandom(t, seed+uint64(ei*100+ci), ec, cc.opts)
			})
		}
	}
}

func runRandom(t *testing.T, seed uint64, ec engineCase, cacheOpts map[string]string) {
	ctx := context.Background()
	s, mem := newStore(t)
	tbl := createTable(t, s, "t", ec.opts)
	opts, err := ParseOptions(cacheOpts)
	if err != nil {
		t.Fatal(err)
	}
	x, err := Open(ctx, tbl, mem, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()

	const nKeys = 40
	steps := 25
	if raceEnabled {
		steps = 12 // under -race the writer takes fewer steps (the two readers still race it); the plain pass takes 25
	}
	keyOf := func(r *rand.Rand) [2]any { return [2]any{int64(r.IntN(nKeys)), []string{"a", "b"}[r.IntN(2)]} }
	var (
		wg       sync.WaitGroup
		stop     atomic.Bool
		failed   atomic.Bool
		checked  atomic.Int64
		expired  atomic.Int64
		firstErr error
		errMu    sync.Mutex
	)
	fail := func(format string, args ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		if firstErr == nil {
			firstErr = fmt.Errorf(format, args...)
		}
		failed.Store(true)
		stop.Store(true)
	}
	// Writer: upserts, deletes, overwrites, compaction, expiry.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer stop.Store(true)
		r := rand.New(rand.NewPCG(seed, 1))
		for step := 0; step < steps && !stop.Load(); step++ {
			switch op := r.IntN(20); {
			case op == 0:
				if err := tbl.Compact(ctx, r.IntN(2) == 0); err != nil {
					fail("compact: %v", err)
				}
				continue
			case op == 1:
				if _, err := tbl.ExpireSnapshots(ctx); err != nil {
					fail("expire: %v", err)
				}
				continue
			}
			w := tbl.NewWrite(tablestore.WriteOptions{Overwrite: r.IntN(25) == 0})
			b := array.NewRecordBuilder(mem, testSchema)
			var kinds []tablestore.RowKind
			var written [][2]any
			for range 1 + r.IntN(8) {
				k := keyOf(r)
				written = append(written, k)
				b.Field(0).(*array.Int64Builder).Append(k[0].(int64))
				b.Field(1).(*array.StringBuilder).Append(k[1].(string))
				if r.IntN(5) == 0 {
					b.Field(2).AppendNull()
				} else {
					b.Field(2).(*array.Int64Builder).Append(int64(r.IntN(100)))
				}
				b.Field(3).(*array.StringBuilder).Append(fmt.Sprint("s", r.IntN(10)))
				kind := tablestore.Insert
				if ec.deletes && r.IntN(4) == 0 {
					kind = tablestore.Delete
				}
				kinds = append(kinds, kind)
			}
			rec := b.NewRecordBatch()
			b.Release()
			err := w.WriteKinds(ctx, rec, kinds)
			rec.Release()
			if err != nil {
				w.Abort()
				fail("write: %v", err)
				return
			}
			id, err := w.Commit(ctx)
			if err != nil {
				fail("commit: %v", err)
				return
			}
			// Read your writes: a lookup now reads id or later.
			keys := keyBatch(mem, written)
			out, snap, err := x.Lookup(ctx, Request{Keys: keys})
			release(keys)
			if err != nil {
				fail("lookup after commit: %v", err)
				return
			}
			out.Release()
			if snap < id {
				fail("lookup after commit %d read snapshot %d", id, snap)
			}
		}
	}()
	// Readers: random batches checked against a scan of the same snapshot.
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(10+g)))
			for !stop.Load() || r.IntN(3) != 0 {
				var ks [][2]any
				for range 1 + r.IntN(12) {
					switch r.IntN(10) {
					case 0:
						ks = append(ks, [2]any{nil, "a"})
					case 1:
						ks = append(ks, [2]any{int64(nKeys + r.IntN(5)), "a"}) // never written
					case 2:
						if len(ks) > 0 {
							ks = append(ks, ks[r.IntN(len(ks))]) // duplicate
							continue
						}
						fallthrough
					default:
						ks = append(ks, keyOf(r))
					}
				}
				req := Request{Keys: keyBatch(mem, ks)}
				if r.IntN(3) == 0 {
					req.Columns = []int{3, 0}
				}
				out, snap, err := x.Lookup(ctx, req)
				if err != nil {
					release(req.Keys)
					fail("lookup: %v", err)
					return
				}
				want, err := snapshotRows(ctx, tbl, snap)
				if err != nil {
					out.Release()
					release(req.Keys)
					if errors.Is(err, tablestore.ErrSnapshotNotFound) {
						expired.Add(1)
						continue
					}
					fail("scan of snapshot %d: %v", snap, err)
					return
				}
				if msg := compare(out, req, want); msg != "" {
					fail("snapshot %d, keys %v: %s", snap, ks, msg)
				}
				out.Release()
				release(req.Keys)
				checked.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		t.Fatal(firstErr)
	}
	if checked.Load() < 20 {
		t.Fatalf("only %d lookups checked (%d snapshots expired before their check)", checked.Load(), expired.Load())
	}
	t.Logf("%d lookups checked, %d skipped (snapshot expired), cache %+v", checked.Load(), expired.Load(), x.CacheStats())
}

// compare checks a lookup result against the snapshot's rows.
func compare(out arrow.RecordBatch, req Request, want map[string]string) string {
	found := out.Column(int(out.NumCols()) - 1).(*array.Boolean)
	if int(out.NumRows()) != req.Keys[0].Len() {
		return fmt.Sprintf("%d rows for %d keys", out.NumRows(), req.Keys[0].Len())
	}
	for i := range req.Keys[0].Len() {
		w, ok := "", false
		if !nullKey(req.Keys, i) {
			w, ok = want[render(req.Keys, i)]
		}
		if found.Value(i) != ok {
			return fmt.Sprintf("key %d (%s): found %v, the scan %v", i, render(req.Keys, i), found.Value(i), ok)
		}
		if !ok {
			for c := range int(out.NumCols()) - 1 {
				if !out.Column(c).IsNull(i) {
					return fmt.Sprintf("key %d: missing but column %d is %s", i, c, out.Column(c).ValueStr(i))
				}
			}
			continue
		}
		got := render(out.Columns()[:out.NumCols()-1], i)
		if req.Columns != nil {
			parts := splitRow(w)
			exp := ""
			for _, c := range req.Columns {
				exp += parts[c] + "|"
			}
			w = exp
		}
		if got != w {
			return fmt.Sprintf("key %d: got %s, the scan %s", i, got, w)
		}
	}
	return ""
}

func splitRow(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '|' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// TestLookupBadInput: wrong key column count or types, a table without a
// primary key and bad options are refused with the problem named, and the
// index keeps working.
func TestLookupBadInput(t *testing.T) {
	ctx := context.Background()
	s, mem := newStore(t)
	tbl := createTable(t, s, "t", nil)
	x, err := Open(ctx, tbl, mem, DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	keys := keyBatch(mem, [][2]any{{int64(1), "a"}})
	defer release(keys)
	i32 := array.NewInt32Builder(mem)
	i32.Append(1)
	wrong := i32.NewArray()
	i32.Release()
	defer wrong.Release()
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Keys: keys[:1]}, "1 key columns given, the primary key ([k1 k2]) has 2"},
		{Request{Keys: []arrow.Array{wrong, keys[1]}}, "key column 1 (k1) is int32, the table stores int64"},
		{Request{Keys: keys, Columns: []int{7}}, "no column 7"},
	} {
		_, _, err := x.Lookup(ctx, c.req)
		if !errors.Is(err, tablestore.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want ErrInvalid with %q", err, c.want)
		}
	}
	out, _, err := x.Lookup(ctx, Request{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	out.Release()

	noPK, err := s.CreateTable(ctx, tablestore.Ident{Database: "db", Table: "log"}, tablestore.TableDef{Schema: testSchema}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, noPK, mem, DefaultOptions(), nil); !errors.Is(err, tablestore.ErrInvalid) || !strings.Contains(err.Error(), "has no primary key") {
		t.Errorf("table without key: %v", err)
	}
	for _, o := range []map[string]string{
		{OptCache: "SOME"}, {OptMaxRows: "-1"}, {OptExpireAfter: "soon"}, {OptCacheMissingKey: "maybe"}, {"lookup.bogus": "1"},
		{OptMaxStaleness: "-1s"}, {OptMaxStaleness: "fresh"},
	} {
		if _, err := ParseOptions(o); !errors.Is(err, tablestore.ErrInvalid) {
			t.Errorf("options %v: %v", o, err)
		}
	}
}

// TestTableOptions: lookup.* table options are checked when the table is
// created (a bad value creates nothing) and apply to the index.
func TestTableOptions(t *testing.T) {
	ctx := context.Background()
	s, mem := newStore(t)
	def := tablestore.TableDef{Schema: testSchema, PrimaryKey: []string{"k1", "k2"}, Options: map[string]string{OptCache: "MAYBE"}}
	if _, err := s.CreateTable(ctx, tablestore.Ident{Database: "db", Table: "bad"}, def, false); !errors.Is(err, tablestore.ErrInvalid) || !strings.Contains(err.Error(), "NONE, PARTIAL or FULL") {
		t.Fatalf("bad lookup.cache: %v", err)
	}
	if _, err := s.Table(ctx, tablestore.Ident{Database: "db", Table: "bad"}); !errors.Is(err, tablestore.ErrTableNotFound) {
		t.Fatalf("the refused table exists: %v", err)
	}
	tbl := createTable(t, s, "t", map[string]string{OptCache: "NONE"})
	opts, err := ParseOptions(tbl.Options())
	if err != nil || opts.Cache != CacheNone {
		t.Fatalf("options %+v, %v", opts, err)
	}
	x, err := Open(ctx, tbl, mem, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	keys := keyBatch(mem, [][2]any{{int64(1), "a"}})
	defer release(keys)
	out, _, err := x.Lookup(ctx, Request{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	out.Release()
	if st := x.CacheStats(); st.Hits+st.Misses != 0 {
		t.Fatalf("lookup.cache NONE used a cache: %+v", st)
	}
}

func nullKey(keys []arrow.Array, i int) bool {
	for _, k := range keys {
		if k.IsNull(i) {
			return true
		}
	}
	return false
}
