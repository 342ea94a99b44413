package lookup

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/s3test"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/tablestore/objfs"
)

// openNode opens a store over the warehouse root of fsys, as one flightd
// node would; its allocator is checked at the end of the test.
func openNode(t *testing.T, fsys tablestore.FS, root string) (*tablestore.Store, *memory.CheckedAllocator) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	s, err := tablestore.Open(context.Background(), fsys, root, tablestore.Options{Mem: mem, CacheBytes: 1 << 20, BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, mem
}

// TestLookupSeesOtherNode: two stores over one warehouse directory (two
// nodes): one commits random upserts, deletes and compactions, the other
// looks keys up through its index. A lookup that starts after a commit was
// acknowledged on the writing node reads that commit or a later one, and
// equals the table: right after each commit, the writer's model of the
// table; concurrently, a scan of the snapshot the lookup read. Published
// channels follow one process's commits only, so without asking storage
// the reading node's index would stay at its first snapshot.
func TestLookupSeesOtherNode(t *testing.T) {
	seed := testSeed(t)
	for ci, cc := range cacheCases {
		if cc.name == "partial" || cc.name == "no-missing" || cc.name == "stale" {
			continue // the default cache runs below and on S3; staleness below
		}
		t.Run(cc.name, func(t *testing.T) {
			dir := t.TempDir()
			runTwoNodes(t, seed+uint64(ci), tablestore.NewLocalFS(), tablestore.NewLocalFS(), dir, cc.opts, 10)
		})
	}
	// A staleness bound (with the default cache): lookups see every commit
	// acknowledged at least that long before they started.
	t.Run("max-staleness", func(t *testing.T) {
		runTwoNodes(t, seed+99, tablestore.NewLocalFS(), tablestore.NewLocalFS(), t.TempDir(), map[string]string{OptMaxStaleness: "20ms"}, 8)
	})
}

// TestLookupSeesOtherNodeS3 is TestLookupSeesOtherNode on a bucket of the
// local S3 server, each node with a client of its own, at a small size.
func TestLookupSeesOtherNodeS3(t *testing.T) {
	seed := testSeed(t)
	srv := s3test.Start(t)
	for ci, cc := range cacheCases[:2] { // none, partial
		t.Run(cc.name, func(t *testing.T) {
			bucket := srv.Bucket(t)
			other, err := objfs.NewClient(s3test.Config(srv.Endpoint))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			runTwoNodes(t, seed+uint64(ci), objfs.New(ctx, srv.Client, bucket, nil), objfs.New(ctx, other, bucket, nil), "/wh", cc.opts, 5)
		})
	}
}

// ack is a commit acknowledged to the writer, and when.
type ack struct {
	id int64
	at time.Time
}

func runTwoNodes(t *testing.T, seed uint64, writerFS, readerFS tablestore.FS, root string, cacheOpts map[string]string, commits int) {
	ctx := context.Background()
	ws, wmem := openNode(t, writerFS, root)
	rs, rmem := openNode(t, readerFS, root)
	if err := ws.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	// Snapshots are kept: expiry on one node does not see the other's
	// readers (a limit of several nodes, not of lookups).
	wt := createTable(t, ws, "t", map[string]string{"snapshot.num-retained.min": "1000", "snapshot.num-retained.max": "1000"})
	rt, err := rs.Table(ctx, tablestore.Ident{Database: "db", Table: "t"})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := ParseOptions(cacheOpts)
	if err != nil {
		t.Fatal(err)
	}
	x, err := Open(ctx, rt, rmem, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()

	const nKeys = 30
	keyOf := func(r *rand.Rand) [2]any { return [2]any{int64(r.IntN(nKeys)), []string{"a", "b"}[r.IntN(2)]} }
	var (
		mu     sync.Mutex
		acks   []ack // ascending
		stop   atomic.Bool
		errMu  sync.Mutex
		first  error
		checks atomic.Int64
	)
	fail := func(format string, args ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		if first == nil {
			first = fmt.Errorf(format, args...)
		}
		stop.Store(true)
	}
	// needed is the newest commit a lookup starting at start must see.
	needed := func(start time.Time) int64 {
		mu.Lock()
		defer mu.Unlock()
		var id int64
		for _, a := range acks {
			if !a.at.Add(opts.MaxStaleness).After(start) {
				id = a.id
			}
		}
		return id
	}
	var wg sync.WaitGroup
	// Readers on the other node (sharing checks of storage): random
	// batches, each checked against a scan of the snapshot it read, which
	// is at least the newest commit acknowledged (MaxStaleness) before it
	// started.
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(2+g)))
			for !stop.Load() {
				var ks [][2]any
				for range 1 + r.IntN(6) {
					if r.IntN(8) == 0 {
						ks = append(ks, [2]any{nil, "a"})
					} else {
						ks = append(ks, keyOf(r))
					}
				}
				keys := keyBatch(rmem, ks)
				start := time.Now()
				need := needed(start)
				out, snap, err := x.Lookup(ctx, Request{Keys: keys})
				if err != nil {
					release(keys)
					fail("lookup: %v", err)
					return
				}
				if snap < need {
					fail("a lookup started after commit %d was acknowledged on the other node read snapshot %d", need, snap)
				} else if want, err := snapshotRows(ctx, rt, snap); err != nil {
					fail("scan of snapshot %d: %v", snap, err)
				} else if msg := compare(out, Request{Keys: keys}, want); msg != "" {
					fail("snapshot %d, keys %v: %s", snap, ks, msg)
				}
				out.Release()
				release(keys)
				checks.Add(1)
			}
		}()
	}

	// The writer, on its node, and after each acknowledged commit a lookup
	// on the other node of the keys it wrote and some others, checked
	// against the model.
	model := map[[2]any]string{}
	r := rand.New(rand.NewPCG(seed, 1))
	for step := 0; step < commits && !stop.Load(); step++ {
		if r.IntN(8) == 0 {
			if err := wt.Compact(ctx, r.IntN(2) == 0); err != nil {
				fail("compact: %v", err)
			}
		}
		w := wt.NewWrite(tablestore.WriteOptions{})
		b := array.NewRecordBuilder(wmem, testSchema)
		var kinds []tablestore.RowKind
		probe := [][2]any{{int64(nKeys + 1), "a"}}
		next := map[[2]any]string{}
		for range 1 + r.IntN(5) {
			k := keyOf(r)
			probe = append(probe, k)
			b.Field(0).(*array.Int64Builder).Append(k[0].(int64))
			b.Field(1).(*array.StringBuilder).Append(k[1].(string))
			v := array.NullValueStr
			if r.IntN(5) == 0 {
				b.Field(2).AppendNull()
			} else {
				n := r.IntN(100)
				b.Field(2).(*array.Int64Builder).Append(int64(n))
				v = fmt.Sprint(n)
			}
			s := fmt.Sprint("s", r.IntN(10))
			b.Field(3).(*array.StringBuilder).Append(s)
			if r.IntN(4) == 0 {
				kinds = append(kinds, tablestore.Delete)
				next[k] = ""
			} else {
				kinds = append(kinds, tablestore.Insert)
				next[k] = fmt.Sprintf("%d|%s|%s|%s|", k[0], k[1], v, s)
			}
		}
		for range 3 {
			probe = append(probe, keyOf(r))
		}
		rec := b.NewRecordBatch()
		b.Release()
		err := w.WriteKinds(ctx, rec, kinds)
		rec.Release()
		if err != nil {
			w.Abort()
			fail("write: %v", err)
			break
		}
		id, err := w.Commit(ctx)
		if err != nil {
			fail("commit: %v", err)
			break
		}
		mu.Lock()
		acks = append(acks, ack{id: id, at: time.Now()})
		mu.Unlock()
		for k, row := range next {
			if row == "" {
				delete(model, k)
			} else {
				model[k] = row
			}
		}
		time.Sleep(opts.MaxStaleness) // the bound the lookup may lag by
		keys := keyBatch(rmem, probe)
		out, snap, err := x.Lookup(ctx, Request{Keys: keys})
		if err != nil {
			release(keys)
			fail("lookup after commit %d: %v", id, err)
			break
		}
		want := map[string]string{}
		for k, row := range model {
			want[fmt.Sprintf("%d|%s|", k[0], k[1])] = row
		}
		if snap < id {
			fail("the lookup after commit %d on the other node read snapshot %d", id, snap)
		} else if msg := compare(out, Request{Keys: keys}, want); msg != "" {
			fail("after commit %d (read %d), keys %v: %s", id, snap, probe, msg)
		}
		out.Release()
		release(keys)
	}
	stop.Store(true)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	if checks.Load() == 0 {
		t.Fatal("the concurrent reader checked no lookup")
	}
	t.Logf("%d commits, %d concurrent lookups checked, cache %+v", len(acks), checks.Load(), x.CacheStats())
}

// TestLookupAfterOtherNodeExpired: an index left at a snapshot that the
// other node's commits expired (with its files) moves to the latest at its
// next lookup and reads the latest rows, not the cached ones.
func TestLookupAfterOtherNodeExpired(t *testing.T) {
	ctx := context.Background()
	ws, wmem, rs, rmem := twoNodes(t)
	wt := createTable(t, ws, "t", map[string]string{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
	put := func(v int64) int64 { return putRow(t, wt, wmem, 1, v) }
	first := put(0)
	rt, err := rs.Table(ctx, tablestore.Ident{Database: "db", Table: "t"})
	if err != nil {
		t.Fatal(err)
	}
	x, err := Open(ctx, rt, rmem, DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	keys := keyBatch(rmem, [][2]any{{int64(1), "a"}})
	defer release(keys)
	read := func() (int64, int64) {
		out, snap, err := x.Lookup(ctx, Request{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		defer out.Release()
		return out.Column(2).(*array.Int64).Value(0), snap
	}
	if v, snap := read(); v != 0 || snap < first {
		t.Fatalf("v %d at snapshot %d, want 0 at %d", v, snap, first)
	}
	var last int64
	for v := int64(1); v <= 6; v++ {
		last = put(v)
		if _, err := wt.ExpireSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wt.SnapshotTime(ctx, first); !errors.Is(err, tablestore.ErrSnapshotNotFound) {
		t.Fatalf("snapshot %d is not expired: %v", first, err)
	}
	if v, snap := read(); v != 6 || snap < last { // background compaction may commit after
		t.Fatalf("after the other node's commits and expiry: v %d at snapshot %d, want 6 at %d or later", v, snap, last)
	}
}

// TestLookupTableReplacedOnOtherNode: another node drops the indexed table
// and creates it again under its name, with the same key at another value
// and fewer commits than the index had seen, or more (so the snapshot ids
// go on). The index must not answer from the old table's cache, nor take
// the new table's snapshots for the changes since its own. (A new table
// with exactly as many snapshots looks like the old one until its next
// commit: docs/STATUS.md.)
func TestLookupTableReplacedOnOtherNode(t *testing.T) {
	for _, commits := range []int{1, 3, 6} {
		t.Run(fmt.Sprintf("%d commits", commits), func(t *testing.T) {
			ctx := context.Background()
			ws, wmem, rs, rmem := twoNodes(t)
			old := createTable(t, ws, "t", nil)
			putRow(t, old, wmem, 1, 10)
			putRow(t, old, wmem, 1, 11)
			rt, err := rs.Table(ctx, tablestore.Ident{Database: "db", Table: "t"})
			if err != nil {
				t.Fatal(err)
			}
			x, err := Open(ctx, rt, rmem, Options{Cache: CachePartial, MaxBytes: 1 << 20}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			get := func() string {
				t.Helper()
				keys := keyBatch(rmem, [][2]any{{int64(1), "a"}})
				defer release(keys)
				out, _, err := x.Lookup(ctx, Request{Keys: keys})
				if err != nil {
					t.Fatal(err)
				}
				defer out.Release()
				return render(out.Columns(), 0)
			}
			if got, want := get(), "1|a|11|s|true|"; got != want {
				t.Fatalf("before: %s, want %s", got, want)
			}
			get() // now cached
			if err := ws.DropTable(ctx, tablestore.Ident{Database: "db", Table: "t"}, false); err != nil {
				t.Fatal(err)
			}
			// The key only in the new table's first snapshot, which the
			// index's own snapshot id covers: only knowing the table was
			// replaced, not the keys written since, can drop it.
			again := createTable(t, ws, "t", nil)
			putRow(t, again, wmem, 1, 100)
			for i := 1; i < commits; i++ {
				putRow(t, again, wmem, int64(1+i), 0)
			}
			if got, want := get(), "1|a|100|s|true|"; got != want {
				t.Fatalf("after the table was replaced: %s, want %s", got, want)
			}
		})
	}
}

// twoNodes opens two stores over one warehouse directory with database
// "db": a writing node and a reading one.
func twoNodes(t *testing.T) (ws *tablestore.Store, wmem *memory.CheckedAllocator, rs *tablestore.Store, rmem *memory.CheckedAllocator) {
	dir := t.TempDir()
	ws, wmem = openNode(t, tablestore.NewLocalFS(), dir)
	rs, rmem = openNode(t, tablestore.NewLocalFS(), dir)
	if err := ws.CreateDatabase(context.Background(), "db", false); err != nil {
		t.Fatal(err)
	}
	return ws, wmem, rs, rmem
}

// putRow commits the row (k1, "a", v, "s") to tbl and returns its snapshot.
func putRow(t *testing.T, tbl *tablestore.Table, mem memory.Allocator, k1, v int64) int64 {
	t.Helper()
	ctx := context.Background()
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(k1)
	b.Field(1).(*array.StringBuilder).Append("a")
	b.Field(2).(*array.Int64Builder).Append(v)
	b.Field(3).(*array.StringBuilder).Append("s")
	rec := b.NewRecordBatch()
	defer rec.Release()
	w := tbl.NewWrite(tablestore.WriteOptions{})
	if err := w.Write(ctx, rec, tablestore.Insert); err != nil {
		w.Abort()
		t.Fatal(err)
	}
	id, err := w.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
