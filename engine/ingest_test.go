package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/tablestore"
)

func openEngine(t *testing.T, dir string) (*engine.Engine, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(context.Background(), engine.Config{Mem: mem, Root: dir, SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return e, mem
}

func closeEngine(t testing.TB, e *engine.Engine, mem *memory.CheckedAllocator) {
	t.Helper()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
}

// batches is an ingest stream of n batches; failAt > 0 makes the stream
// fail (as a truncated DoPut does) after that many batches.
type batches struct {
	schema *arrow.Schema
	make   func(i int) arrow.RecordBatch
	n      int
	failAt int
	i      int
	cur    arrow.RecordBatch
}

func (b *batches) Schema() *arrow.Schema          { return b.schema }
func (b *batches) RecordBatch() arrow.RecordBatch { return b.cur }
func (b *batches) Next() bool {
	b.release()
	if b.i >= b.n || b.failAt > 0 && b.i >= b.failAt {
		return false
	}
	b.cur = b.make(b.i)
	b.i++
	return true
}
func (b *batches) Err() error {
	if b.failAt > 0 && b.i >= b.failAt {
		return io.ErrUnexpectedEOF
	}
	return nil
}
func (b *batches) release() {
	if b.cur != nil {
		b.cur.Release()
		b.cur = nil
	}
}

var (
	intSchema = arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	strSchema = arrow.NewSchema([]arrow.Field{
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "c", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
)

// intStream: n batches of 10 rows of column a; strStream: n batches of 5
// rows of (b, c).
func intStream(mem memory.Allocator, n int) *batches {
	return &batches{schema: intSchema, n: n, make: func(i int) arrow.RecordBatch {
		bld := array.NewRecordBuilder(mem, intSchema)
		defer bld.Release()
		for r := range 10 {
			bld.Field(0).(*array.Int64Builder).Append(int64(10*i + r))
		}
		return bld.NewRecordBatch()
	}}
}

func strStream(mem memory.Allocator, n int) *batches {
	return &batches{schema: strSchema, n: n, make: func(i int) arrow.RecordBatch {
		bld := array.NewRecordBuilder(mem, strSchema)
		defer bld.Release()
		for r := range 5 {
			bld.Field(0).(*array.StringBuilder).Append(fmt.Sprint("s", i, r))
			bld.Field(1).(*array.Int64Builder).Append(int64(r))
		}
		return bld.NewRecordBatch()
	}}
}

// query runs a query and returns its result schema's first column name
// and its row count.
func query(ctx context.Context, sess *engine.Session, text string) (string, int64, error) {
	st, err := sess.Prepare(ctx, text, nil)
	if err != nil {
		return "", 0, err
	}
	op, err := st.Query(ctx, nil)
	if err != nil {
		return "", 0, err
	}
	defer op.Close()
	if err := op.Open(ctx); err != nil {
		return "", 0, err
	}
	var n int64
	for {
		b, err := op.Next(ctx)
		if errors.Is(err, io.EOF) {
			return st.Schema().Field(0).Name, n, nil
		}
		if err != nil {
			return "", 0, err
		}
		n += b.NumRows()
	}
}

func ingest(ctx context.Context, sess *engine.Session, table string, mode engine.IngestMode, rdr *batches) (int64, error) {
	defer rdr.release()
	return sess.Ingest(ctx, engine.IngestRequest{Table: tablestore.Ident{Table: table}, Mode: mode}, rdr)
}

// TestIngestReplaceAtomic replaces a table again and again with one of two
// schemas while readers query it: every read must see one whole table (40
// rows of a, or 15 rows of b, c), never an error, an empty or a missing
// table.
func TestIngestReplaceAtomic(t *testing.T) {
	ctx := context.Background()
	e, mem := openEngine(t, t.TempDir())
	defer closeEngine(t, e, mem)
	sess := e.NewSession()
	if _, err := ingest(ctx, sess, "r", engine.IngestCreate, intStream(mem, 4)); err != nil {
		t.Fatal(err)
	}
	var (
		done          atomic.Bool
		reads, failed atomic.Int64
		wg            sync.WaitGroup
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess := e.NewSession()
			for !done.Load() {
				col, n, err := query(ctx, sess, "SELECT * FROM r")
				reads.Add(1)
				if err != nil || !(col == "a" && n == 40 || col == "b" && n == 15) {
					failed.Add(1)
					t.Errorf("read saw column %q with %d rows, err %v", col, n, err)
				}
			}
		}()
	}
	for i := range 30 {
		rdr := intStream(mem, 4)
		if i%2 == 0 {
			rdr = strStream(mem, 3)
		}
		if _, err := ingest(ctx, sess, "r", engine.IngestReplace, rdr); err != nil {
			t.Error(err)
		}
	}
	done.Store(true)
	wg.Wait()
	t.Logf("%d reads during 30 replaces, %d wrong", reads.Load(), failed.Load())
}

// TestIngestFailureKeepsTable: a replace (with a new schema) or a create
// whose input stream breaks off leaves the catalog as it was; a create can
// be retried.
func TestIngestFailureKeepsTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, mem := openEngine(t, dir)
	defer closeEngine(t, e, mem)
	sess := e.NewSession()
	if _, err := ingest(ctx, sess, "k", engine.IngestCreate, intStream(mem, 4)); err != nil {
		t.Fatal(err)
	}
	broken := strStream(mem, 5)
	broken.failAt = 2
	if _, err := ingest(ctx, sess, "k", engine.IngestReplace, broken); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("broken replace: %v", err)
	}
	if col, n, err := query(ctx, sess, "SELECT * FROM k"); err != nil || col != "a" || n != 40 {
		t.Fatalf("after a failed replace: column %q, %d rows, %v; want a, 40", col, n, err)
	}
	broken = intStream(mem, 5)
	broken.failAt = 3
	if _, err := ingest(ctx, sess, "fresh", engine.IngestCreate, broken); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("broken create: %v", err)
	}
	if _, _, err := query(ctx, sess, "SELECT * FROM fresh"); err == nil {
		t.Fatal("a failed create left a table")
	}
	if n, err := ingest(ctx, sess, "fresh", engine.IngestCreate, intStream(mem, 2)); err != nil || n != 20 {
		t.Fatalf("retried create: %d rows, %v", n, err)
	}
	if _, err := ingest(ctx, sess, "fresh", engine.IngestCreate, intStream(mem, 2)); !errors.Is(err, tablestore.ErrTableExists) {
		t.Fatalf("second create: %v, want ErrTableExists", err)
	}
}
