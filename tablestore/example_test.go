package tablestore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore"
)

// Example shows create -> write -> commit -> scan on a primary-key table.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "tablestore-example")
	defer os.RemoveAll(dir)
	mem := memory.NewGoAllocator()

	store, err := tablestore.Open(ctx, tablestore.NewLocalFS(), dir, tablestore.Options{Mem: mem})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if err := store.CreateDatabase(ctx, "db", false); err != nil {
		panic(err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	tbl, err := store.CreateTable(ctx, tablestore.Ident{Database: "db", Table: "users"}, tablestore.TableDef{
		Schema:     schema,
		PrimaryKey: []string{"id"},
		Options:    map[string]string{"bucket": "2"},
	}, false)
	if err != nil {
		panic(err)
	}

	// Write: upsert three rows, then delete one and update another.
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"ann", "bob", "cy"}, nil)
	rec := b.NewRecordBatch()
	w := tbl.NewWrite(tablestore.WriteOptions{})
	if err := w.Write(ctx, rec, tablestore.Insert); err != nil {
		panic(err)
	}
	rec.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"bob", "cyril"}, nil)
	rec = b.NewRecordBatch()
	b.Release()
	if err := w.WriteKinds(ctx, rec, []tablestore.RowKind{tablestore.Delete, tablestore.UpdateAfter}); err != nil {
		panic(err)
	}
	rec.Release()
	snap, err := w.Commit(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("snapshot", snap)

	// Scan: projection and a filter (used for skipping only; re-apply it).
	scan, err := tbl.NewScan(ctx, tablestore.ScanSpec{
		Columns: []string{"name", "id"},
		Filter:  tablestore.Compare{Column: "id", Op: tablestore.GE, Value: scalar.NewInt64Scalar(1)},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("ordered by", scan.OrderedBy())
	for _, split := range scan.Splits() {
		r, err := split.Open(ctx)
		if err != nil {
			panic(err)
		}
		for {
			batch, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				panic(err)
			}
			for i := 0; i < int(batch.NumRows()); i++ {
				fmt.Printf("bucket %d: id=%d name=%s\n", split.Bucket(),
					batch.Column(1).(*array.Int64).Value(i), batch.Column(0).(*array.String).Value(i))
			}
		}
		r.Close()
	}
	// Unordered output:
	// snapshot 1
	// ordered by [id]
	// bucket 0: id=1 name=ann
	// bucket 1: id=3 name=cyril
}
