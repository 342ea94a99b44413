package lookup

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore"
)

// TestLookupLargerThanCache: a table whose files are many times the row
// cache, in a store without a cache of decoded columns, answers random
// lookups (hits, misses, duplicates, NULL keys) as the writer's model
// says: what the cache does not hold is read from the files on disk.
func TestLookupLargerThanCache(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, err := tablestore.Open(ctx, tablestore.NewLocalFS(), t.TempDir(), tablestore.Options{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	// Uncompressed: the padded values compress to little under zstd, and
	// the files are to stay many times the cache whatever the codec.
	tbl := createTable(t, s, "t", map[string]string{"file.row-group-rows": "64", "num-sorted-run.compaction-trigger": "5", "file.compression": "none"})
	const cacheBytes = 8 << 10
	r := rand.New(rand.NewPCG(seed, 1))
	const nKeys, commits, perCommit = 8000, 6, 2000
	model := map[string]string{}
	pad := strings.Repeat("x", 100)
	for range commits {
		b := array.NewRecordBuilder(mem, testSchema)
		for range perCommit {
			k1, k2 := int64(r.IntN(nKeys)), []string{"a", "b"}[r.IntN(2)]
			v := int64(r.IntN(1000))
			sv := fmt.Sprint(pad, r.IntN(1000))
			b.Field(0).(*array.Int64Builder).Append(k1)
			b.Field(1).(*array.StringBuilder).Append(k2)
			b.Field(2).(*array.Int64Builder).Append(v)
			b.Field(3).(*array.StringBuilder).Append(sv)
			model[fmt.Sprintf("%d|%s|", k1, k2)] = fmt.Sprintf("%d|%s|%d|%s|", k1, k2, v, sv)
		}
		rec := b.NewRecordBatch()
		b.Release()
		w := tbl.NewWrite(tablestore.WriteOptions{})
		err := w.Write(ctx, rec, tablestore.Insert)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	size, err := tbl.DiskUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if size < 50*cacheBytes {
		t.Fatalf("the table's files are %d bytes, not many times the cache's %d", size, cacheBytes)
	}
	for _, mode := range []string{"PARTIAL", "NONE"} {
		opts, err := ParseOptions(map[string]string{OptCache: mode, OptMaxBytes: fmt.Sprint(cacheBytes)})
		if err != nil {
			t.Fatal(err)
		}
		x, err := Open(ctx, tbl, mem, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 150 {
			var ks [][2]any
			for range 1 + r.IntN(40) {
				switch r.IntN(10) {
				case 0:
					ks = append(ks, [2]any{nil, "b"})
				case 1:
					ks = append(ks, [2]any{int64(nKeys + r.IntN(100)), "a"})
				case 2:
					if len(ks) > 0 {
						ks = append(ks, ks[r.IntN(len(ks))])
						continue
					}
					fallthrough
				default:
					ks = append(ks, [2]any{int64(r.IntN(nKeys)), []string{"a", "b"}[r.IntN(2)]})
				}
			}
			keys := keyBatch(mem, ks)
			out, _, err := x.Lookup(ctx, Request{Keys: keys})
			if err != nil {
				release(keys)
				x.Close()
				t.Fatal(err)
			}
			msg := compare(out, Request{Keys: keys}, model)
			out.Release()
			release(keys)
			if msg != "" {
				x.Close()
				t.Fatalf("cache %s, keys %v: %s", mode, ks, msg)
			}
		}
		t.Logf("cache %s: files %d bytes, cache %+v", mode, size, x.CacheStats())
		x.Close()
	}
}
