package tablestore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/flightd/flightd/internal/s3test"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/tablestore/objfs"
	"github.com/minio/minio-go/v7"
)

// The store's suites that take a warehouse run on a bucket of a local S3
// server too (forEachWarehouse); a child process finds it in its env.
func init() {
	tablestore.ObjectStoreWarehouse = func(t testing.TB) (tablestore.FS, string, []string) {
		srv := s3test.Start(t)
		fsys := srv.FS(t, 8<<20)
		return fsys, "/wh", []string{"TABLESTORE_S3_ENDPOINT=" + srv.Endpoint, "TABLESTORE_S3_BUCKET=" + fsys.Bucket()}
	}
	tablestore.ObjectStoreFromEnv = func() (tablestore.FS, bool, error) {
		endpoint := os.Getenv("TABLESTORE_S3_ENDPOINT")
		if endpoint == "" {
			return nil, false, nil
		}
		c, err := objfs.NewClient(s3test.Config(endpoint))
		if err != nil {
			return nil, true, err
		}
		return objfs.New(context.Background(), c, os.Getenv("TABLESTORE_S3_BUCKET"), nil), true, nil
	}
}

// BenchmarkScanObjectStore reads a table of 200k rows (a fresh Store each
// time, as a new node would) from a local directory, and from a bucket of
// the local S3 server with a cold and a warm disk cache.
func BenchmarkScanObjectStore(b *testing.B) {
	const rows, commits = 200_000, 4
	ctx := context.Background()
	mem := memory.NewGoAllocator()
	srv := s3test.Start(b)
	client := srv.Client
	bucket := srv.Bucket(b)
	local := b.TempDir()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	id := tablestore.Ident{Database: "db", Table: "t"}
	fill := func(fsys tablestore.FS, root string) {
		s, err := tablestore.Open(ctx, fsys, root, tablestore.Options{Mem: mem})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if err := s.CreateDatabase(ctx, "db", false); err != nil {
			b.Fatal(err)
		}
		tbl, err := s.CreateTable(ctx, id, tablestore.TableDef{Schema: schema}, false)
		if err != nil {
			b.Fatal(err)
		}
		for c := range commits {
			bld := array.NewRecordBuilder(mem, schema)
			for i := range rows / commits {
				bld.Field(0).(*array.Int64Builder).Append(int64(c*rows/commits + i))
				bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", i%1000))
			}
			rec := bld.NewRecordBatch()
			bld.Release()
			w := tbl.NewWrite(tablestore.WriteOptions{})
			if err := w.Write(ctx, rec, tablestore.Insert); err != nil {
				b.Fatal(err)
			}
			rec.Release()
			if _, err := w.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	open := func(b *testing.B, fsys tablestore.FS, root string) *tablestore.Store {
		s, err := tablestore.Open(ctx, fsys, root, tablestore.Options{Mem: mem})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	scan := func(b *testing.B, s *tablestore.Store) {
		tbl, err := s.Table(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		sc, err := tbl.NewScan(ctx, tablestore.ScanSpec{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, split := range sc.Splits() {
			r, err := split.Open(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for {
				batch, err := r.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n += int(batch.NumRows())
			}
			r.Close()
		}
		if n != rows {
			b.Fatalf("%d rows, want %d", n, rows)
		}
	}
	fill(tablestore.NewLocalFS(), local)
	fill(objfs.New(ctx, client, bucket, nil), "/wh")
	cacheDir := filepath.Join(b.TempDir(), "cache")
	// A node serving repeated queries: one Store.
	b.Run("local", func(b *testing.B) {
		s := open(b, tablestore.NewLocalFS(), local)
		defer s.Close()
		for b.Loop() {
			scan(b, s)
		}
	})
	// A new node: a new Store and an empty cache.
	b.Run("s3-cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			c, err := objfs.NewCache(cacheDir, 1<<30) // emptied
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			s := open(b, objfs.New(ctx, client, bucket, c), "/wh")
			scan(b, s)
			s.Close()
		}
	})
	b.Run("s3-warm", func(b *testing.B) {
		c, err := objfs.NewCache(cacheDir, 1<<30)
		if err != nil {
			b.Fatal(err)
		}
		s := open(b, objfs.New(ctx, client, bucket, c), "/wh")
		defer s.Close()
		scan(b, s)
		for b.Loop() {
			scan(b, s)
		}
		st := c.Stats()
		b.ReportMetric(float64(st.Hits)/float64(st.Hits+st.Misses), "hit-ratio")
	})
}

// TestWarmQueryRequests: a query on a table a Store has read before costs
// a constant number of requests to the object store, whatever the table's
// history (the schema listing, the LATEST hint and the probe for the
// snapshot after it), and reads no file that is written once (schemas,
// snapshots, manifests, data files) a second time; a commit by another
// Store on the same bucket is seen by the next query, at the price of the
// new snapshot and its new files only.
func TestWarmQueryRequests(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	// The writer's requests are not recorded: it has a client of its own.
	unrecorded, err := objfs.NewClient(s3test.Config(srv.Endpoint))
	if err != nil {
		t.Fatal(err)
	}
	open := func(client *minio.Client) *tablestore.Store {
		c, err := objfs.NewCache(filepath.Join(t.TempDir(), "cache"), 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		s, err := tablestore.Open(ctx, objfs.New(ctx, client, bucket, c), "/wh", tablestore.Options{Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writer, reader := open(unrecorded), open(srv.Client)
	if err := writer.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	id := tablestore.Ident{Database: "db", Table: "t"}
	wt, err := writer.CreateTable(ctx, id, tablestore.TableDef{Schema: schema, PrimaryKey: []string{"k"},
		Options: map[string]string{"bucket": "2", "write-only": "true"}}, false) // no compaction commits between queries
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	commit := func() {
		t.Helper()
		bld := array.NewRecordBuilder(mem, schema)
		defer bld.Release()
		for i := range 10 {
			bld.Field(0).(*array.Int64Builder).Append(int64(rows + i))
			bld.Field(1).(*array.StringBuilder).Append(fmt.Sprint(i))
		}
		rec := bld.NewRecordBatch()
		defer rec.Release()
		w := wt.NewWrite(tablestore.WriteOptions{})
		if err := w.Write(ctx, rec, tablestore.Insert); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		rows += 10
	}
	query := func() []string {
		t.Helper()
		srv.TakeRequests()
		tbl, err := reader.Table(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := tbl.NewScan(ctx, tablestore.ScanSpec{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, split := range sc.Splits() {
			r, err := split.Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for {
				batch, err := r.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				n += int(batch.NumRows())
			}
			r.Close()
		}
		if n != rows {
			t.Fatalf("reader sees %d rows, want %d", n, rows)
		}
		return srv.TakeRequests()
	}
	for range 5 {
		commit()
	}
	seen := map[string]bool{}
	record := func(reqs []string) {
		for _, r := range reqs {
			seen[r] = true
		}
	}
	record(query())
	for round := range 3 {
		warm := query()
		t.Logf("round %d: warm query: %d requests: %q", round, len(warm), warm)
		if len(warm) > maxWarmRequests {
			t.Errorf("round %d: a warm query made %d requests, want at most %d: %q", round, len(warm), maxWarmRequests, warm)
		}
		for _, r := range warm {
			if seen[r] && writeOnce(r) {
				t.Errorf("round %d: a warm query read %s again", round, r)
			}
		}
		record(warm)
		commit() // by the other Store: the next query must see it
		after := query()
		t.Logf("round %d: after the other store's commit: %d requests: %q", round, len(after), after)
		for _, r := range after {
			if seen[r] && writeOnce(r) {
				t.Errorf("round %d: the query after a commit read %s again", round, r)
			}
		}
		record(after)
	}
}

// maxWarmRequests bounds a warm query's requests: the schema listing, the
// LATEST hint, and the probe for the snapshot after it.
const maxWarmRequests = 3

// writeOnce reports whether a request reads a file written once: a
// schema, a snapshot, a manifest or a data file (not a listing, not the
// LATEST hint, not a probe for a snapshot that did not exist yet, which
// the caller cannot tell from the request and so does not count here).
func writeOnce(req string) bool {
	method, p, _ := strings.Cut(req, " ")
	if method == "LIST" {
		return false
	}
	base := path.Base(p)
	return strings.HasPrefix(base, "schema-") || strings.Contains(p, "/manifest/") || strings.HasPrefix(base, "data-")
}
