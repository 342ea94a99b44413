package lookup

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore"
)

// BenchmarkLookup measures keys/s of Index.Lookup in process, by batch
// size, for hits and misses, with the cache off and on, and with the check
// of storage for other nodes' commits per lookup (the default) or at most
// once an hour (stale=1h).
func BenchmarkLookup(b *testing.B) {
	ctx := context.Background()
	const rows = 100_000
	mem := memory.NewGoAllocator()
	s, err := tablestore.Open(ctx, tablestore.NewLocalFS(), b.TempDir(), tablestore.Options{Mem: mem, CacheBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		b.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	tbl, err := s.CreateTable(ctx, tablestore.Ident{Database: "db", Table: "t"}, tablestore.TableDef{Schema: schema, PrimaryKey: []string{"id"}, Options: map[string]string{"bucket": "4"}}, false)
	if err != nil {
		b.Fatal(err)
	}
	rb := array.NewRecordBuilder(mem, schema)
	for i := range rows {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i))
	}
	rec := rb.NewRecordBatch()
	w := tbl.NewWrite(tablestore.WriteOptions{})
	if err := w.Write(ctx, rec, tablestore.Insert); err != nil {
		b.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct{ cache, stale string }{{"NONE", "0s"}, {"PARTIAL", "0s"}, {"PARTIAL", "1h"}} {
		opts, err := ParseOptions(map[string]string{OptCache: mode.cache, OptMaxStaleness: mode.stale})
		if err != nil {
			b.Fatal(err)
		}
		x, err := Open(ctx, tbl, mem, opts, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, batch := range []int{1, 1000} {
			for _, mix := range []string{"hit", "miss"} {
				b.Run(fmt.Sprintf("cache=%s/stale=%s/batch=%d/%s", mode.cache, mode.stale, batch, mix), func(b *testing.B) {
					r := rand.New(rand.NewPCG(1, 2))
					kb := array.NewInt64Builder(mem)
					for range batch {
						k := int64(r.IntN(rows))
						if mix == "miss" {
							k += rows
						}
						kb.Append(k)
					}
					keys := kb.NewArray()
					defer keys.Release()
					b.ResetTimer()
					for range b.N {
						out, _, err := x.Lookup(ctx, Request{Keys: []arrow.Array{keys}})
						if err != nil {
							b.Fatal(err)
						}
						out.Release()
					}
					b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "keys/s")
				})
			}
		}
		x.Close()
	}
}

// BenchmarkCommitToVisible measures the first lookup after a commit: the
// index moves to the new snapshot (plans its scan, deletes the written
// key from the cache) and reads the key.
func BenchmarkCommitToVisible(b *testing.B) {
	ctx := context.Background()
	mem := memory.NewGoAllocator()
	s, err := tablestore.Open(ctx, tablestore.NewLocalFS(), b.TempDir(), tablestore.Options{Mem: mem, CacheBytes: 1 << 28})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		b.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	tbl, err := s.CreateTable(ctx, tablestore.Ident{Database: "db", Table: "t"}, tablestore.TableDef{Schema: schema, PrimaryKey: []string{"id"}, Options: map[string]string{"bucket": "4"}}, false)
	if err != nil {
		b.Fatal(err)
	}
	x, err := Open(ctx, tbl, mem, DefaultOptions(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	for i := range b.N {
		b.StopTimer()
		rb := array.NewRecordBuilder(mem, schema)
		rb.Field(0).(*array.Int64Builder).Append(int64(i % 1000))
		rb.Field(1).(*array.Int64Builder).Append(int64(i))
		rec := rb.NewRecordBatch()
		rb.Release()
		w := tbl.NewWrite(tablestore.WriteOptions{})
		if err := w.Write(ctx, rec, tablestore.Insert); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		keys := rec.Column(0)
		b.StartTimer()
		out, _, err := x.Lookup(ctx, Request{Keys: []arrow.Array{keys}})
		if err != nil {
			b.Fatal(err)
		}
		if got := out.Column(1).(*array.Int64).Value(0); got != int64(i) {
			b.Fatalf("lookup after commit %d read %d", i, got)
		}
		out.Release()
		rec.Release()
	}
}

// BenchmarkLookupFromDisk measures keys/s of lookups that no cache
// answers, in a store without a cache of decoded columns: every key is
// read from the table's Parquet files (a table larger than memory), with
// the default row groups (64Ki rows) and small ones.
func BenchmarkLookupFromDisk(b *testing.B) {
	ctx := context.Background()
	const rows = 100_000
	mem := memory.NewGoAllocator()
	s, err := tablestore.Open(ctx, tablestore.NewLocalFS(), b.TempDir(), tablestore.Options{Mem: mem})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		b.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	for i := range rows {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i))
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	for _, groupRows := range []int{64 << 10, 1024} {
		tbl, err := s.CreateTable(ctx, tablestore.Ident{Database: "db", Table: fmt.Sprint("t", groupRows)}, tablestore.TableDef{Schema: schema, PrimaryKey: []string{"id"},
			Options: map[string]string{"bucket": "4", "file.row-group-rows": fmt.Sprint(groupRows)}}, false)
		if err != nil {
			b.Fatal(err)
		}
		w := tbl.NewWrite(tablestore.WriteOptions{})
		if err := w.Write(ctx, rec, tablestore.Insert); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		opts, err := ParseOptions(map[string]string{OptCache: "NONE"})
		if err != nil {
			b.Fatal(err)
		}
		x, err := Open(ctx, tbl, mem, opts, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, batch := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("group=%d/batch=%d", groupRows, batch), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, uint64(batch)))
				kb := array.NewInt64Builder(mem)
				defer kb.Release()
				for range b.N {
					b.StopTimer()
					for range batch {
						kb.Append(int64(r.IntN(rows)))
					}
					keys := kb.NewArray()
					b.StartTimer()
					out, _, err := x.Lookup(ctx, Request{Keys: []arrow.Array{keys}})
					if err != nil {
						b.Fatal(err)
					}
					out.Release()
					keys.Release()
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "keys/s")
			})
		}
		x.Close()
	}
}
