package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/flightd/flightd/tablestore/meta"
)

// eachParquetFile opens every Parquet file under dir and calls fn with
// its path, reader and size in bytes; the first error stops the walk.
func eachParquetFile(dir string, fn func(path string, pf *file.Reader, size int64) error) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			return err
		}
		defer pf.Close()
		return fn(path, pf, info.Size())
	})
}

func newMem(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func openStore(t testing.TB, fsys FS, dir string, mem memory.Allocator) *Store {
	t.Helper()
	s, err := Open(context.Background(), fsys, dir, Options{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTestStore opens a store in a temp dir with database "db"; it closes
// the store at cleanup (before the leak check, which was registered first).
func newTestStore(t testing.TB) (*Store, *memory.CheckedAllocator, string) {
	return newTestStoreWith(t, Options{})
}

// newTestStoreWith is newTestStore with opts (Mem is the checked allocator).
func newTestStoreWith(t testing.TB, opts Options) (*Store, *memory.CheckedAllocator, string) {
	mem := newMem(t)
	dir := t.TempDir()
	opts.Mem = mem
	s, err := Open(context.Background(), NewLocalFS(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CreateDatabase(context.Background(), "db", false); err != nil {
		t.Fatal(err)
	}
	return s, mem, dir
}

// intStringSchema is a nullable BIGINT a and STRING s.
var intStringSchema = arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)

// makeBatch builds a batch from rows of Go values (nil = NULL).
func makeBatch(t testing.TB, mem memory.Allocator, sc *arrow.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()
	b, err := buildBatch(mem, sc, rows)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func buildBatch(mem memory.Allocator, sc *arrow.Schema, rows [][]any) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for _, row := range rows {
		for i, v := range row {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(int64(v.(int)))
			case *array.Int32Builder:
				fb.Append(int32(v.(int)))
			case *array.Int16Builder:
				fb.Append(int16(v.(int)))
			case *array.Int8Builder:
				fb.Append(int8(v.(int)))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(v.(int)))
			default:
				return nil, fmt.Errorf("buildBatch: unsupported builder %T", fb)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// cellString renders one value for comparisons.
func cellString(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	return a.ValueStr(i)
}

// readScan reads every split of a scan and returns rows rendered as
// "v1|v2|...", checking per-split order when the scan is ordered.
func readScan(t testing.TB, s *Scan) []string {
	t.Helper()
	rows, err := readScanErr(s)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func readScanErr(s *Scan) ([]string, error) {
	defer s.Close()
	ctx := context.Background()
	var rows []string
	for _, sp := range s.Splits() {
		r, err := sp.Open(ctx)
		if err != nil {
			return nil, err
		}
		// Output must be ordered by the ordered-by columns the scan
		// projects, also across batch boundaries.
		var prev []meta.Datum
		for {
			b, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return nil, err
			}
			if b.NumRows() == 0 {
				r.Close()
				return nil, fmt.Errorf("empty batch")
			}
			if !b.Schema().Equal(s.Schema()) {
				r.Close()
				return nil, fmt.Errorf("batch schema %v, scan schema %v", b.Schema(), s.Schema())
			}
			var ordCols []arrow.Array
			for _, c := range s.OrderedBy() {
				if idx := b.Schema().FieldIndices(c); len(idx) == 1 {
					ordCols = append(ordCols, b.Column(idx[0]))
				}
			}
			for i := 0; i < int(b.NumRows()); i++ {
				cur := make([]meta.Datum, len(ordCols))
				for k, c := range ordCols {
					cur[k], _ = meta.DatumAt(c, i)
				}
				if prev != nil {
					if c, ok := compareKeys(prev, cur); ok && c >= 0 {
						r.Close()
						return nil, fmt.Errorf("split output out of order: %v then %v", prev, cur)
					}
				}
				if len(cur) > 0 {
					prev = cur
				}
				var cells []string
				for _, c := range b.Columns() {
					cells = append(cells, cellString(c, i))
				}
				rows = append(rows, strings.Join(cells, "|"))
			}
		}
		if err := r.Close(); err != nil {
			return nil, err
		}
	}
	slices.Sort(rows)
	return rows, nil
}

func scanAll(t testing.TB, tbl *Table, spec ScanSpec) []string {
	t.Helper()
	s, err := tbl.NewScan(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return readScan(t, s)
}

func writeRows(t testing.TB, tbl *Table, mem memory.Allocator, opts WriteOptions, kind RowKind, rows [][]any) int64 {
	t.Helper()
	id, err := commitRows(tbl, mem, opts, kind, rows)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// commitRows writes rows in one commit, for goroutines other than the
// test's (writeRows fails the test).
func commitRows(tbl *Table, mem memory.Allocator, opts WriteOptions, kind RowKind, rows [][]any) (int64, error) {
	ctx := context.Background()
	b, err := buildBatch(mem, tbl.Schema(), rows)
	if err != nil {
		return 0, err
	}
	defer b.Release()
	w := tbl.NewWrite(opts)
	if err := w.Write(ctx, b, kind); err != nil {
		w.Abort()
		return 0, err
	}
	return w.Commit(ctx)
}

func eqRows(t testing.TB, got []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("rows:\n got  %q\n want %q", got, want)
	}
}
