package tablestore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore/merge"
)

// nestedSchema has a key and one column of each nested type, nested in
// each other, with a field name that needs quoting in the type string.
var nestedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "r", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b`, c>", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "xs", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	), Nullable: true},
	{Name: "arr", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)), Nullable: true},
	// A flat column after the nested ones: its Parquet leaf column index
	// differs from its column index.
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// appendNestedRow appends a random row with key id to b (nestedSchema).
func appendNestedRow(rng *rand.Rand, b *array.RecordBuilder, id int64) {
	b.Field(0).(*array.Int64Builder).Append(id)
	rb := b.Field(1).(*array.StructBuilder)
	if rng.IntN(5) == 0 {
		rb.AppendNull()
	} else {
		rb.Append(true)
		if rng.IntN(4) == 0 {
			rb.FieldBuilder(0).AppendNull()
		} else {
			rb.FieldBuilder(0).(*array.Int32Builder).Append(rng.Int32N(100) - 50)
		}
		rb.FieldBuilder(1).(*array.StringBuilder).Append(strings.Repeat("s", rng.IntN(4)))
		xs := rb.FieldBuilder(2).(*array.ListBuilder)
		if rng.IntN(4) == 0 {
			xs.AppendNull()
		} else {
			xs.Append(true)
			for range rng.IntN(4) {
				xs.ValueBuilder().(*array.Int64Builder).Append(rng.Int64N(1000))
			}
		}
	}
	ab := b.Field(2).(*array.ListBuilder)
	if rng.IntN(5) == 0 {
		ab.AppendNull()
	} else {
		ab.Append(true)
		for range rng.IntN(4) {
			if rng.IntN(5) == 0 {
				ab.ValueBuilder().AppendNull()
			} else {
				ab.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprint(rng.IntN(50)))
			}
		}
	}
	b.Field(4).(*array.Int64Builder).Append(10 * id)
	mb := b.Field(3).(*array.MapBuilder)
	if rng.IntN(5) == 0 {
		mb.AppendNull()
		return
	}
	mb.Append(true)
	for k := range rng.IntN(3) {
		mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprint("k", k))
		vb := mb.ItemBuilder().(*array.ListBuilder)
		vb.Append(true)
		for range rng.IntN(3) {
			vb.ValueBuilder().(*array.Int32Builder).Append(rng.Int32())
		}
	}
}

// rowText renders row i of b as scans render it.
func rowText(b arrow.RecordBatch, i int) string {
	var cells []string
	for _, c := range b.Columns() {
		cells = append(cells, cellString(c, i))
	}
	return strings.Join(cells, "|")
}

// TestNestedMerge writes random nested values over overlapping keys of a
// primary-key table in several commits (so reads merge rows of several
// files), deletes some keys, and checks every read, after compaction and
// after reopening against a model of the last value per key.
func TestNestedMerge(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "n"}, TableDef{Schema: nestedSchema, PrimaryKey: []string{"id"},
		Options: map[string]string{"bucket": "2", "write-only": "true"}}, false)
	must(t, err)
	model := map[int64]string{}
	for range 6 {
		b := array.NewRecordBuilder(mem, tbl.Schema())
		var ids []int64
		for range 1 + rng.IntN(40) {
			id := rng.Int64N(30)
			ids = append(ids, id)
			appendNestedRow(rng, b, id)
		}
		rec := b.NewRecordBatch()
		b.Release()
		kind := Insert
		if rng.IntN(4) == 0 {
			kind = Delete
		}
		w := tbl.NewWrite(WriteOptions{})
		must(t, w.Write(ctx, rec, kind))
		_, err := w.Commit(ctx)
		must(t, err)
		for i, id := range ids {
			if kind == Delete {
				delete(model, id)
			} else {
				model[id] = rowText(rec, i)
			}
		}
		rec.Release()
	}
	var want []string
	for _, r := range model {
		want = append(want, r)
	}
	check := func(tbl *Table) {
		t.Helper()
		eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
		// Projections read the leaf columns of the columns they name.
		for _, cols := range [][]string{{"m"}, {"v", "arr"}, {"id", "r"}} {
			var proj []string
			for _, row := range want {
				cells := strings.Split(row, "|")
				var keep []string
				for _, c := range cols {
					keep = append(keep, cells[nestedSchema.FieldIndices(c)[0]])
				}
				proj = append(proj, strings.Join(keep, "|"))
			}
			eqRows(t, scanAll(t, tbl, ScanSpec{Columns: cols}), proj...)
		}
		// Row group statistics of v (after the nested columns) only skip
		// data: every matching row is read.
		got := scanAll(t, tbl, ScanSpec{Columns: []string{"v"}, Filter: Compare{Column: "v", Op: GE, Value: scalar.NewInt64Scalar(150)}})
		for id := range model {
			if 10*id >= 150 && !slices.Contains(got, fmt.Sprint(10*id)) {
				t.Fatalf("filtered scan lost v=%d: %q", 10*id, got)
			}
		}
	}
	check(tbl)
	must(t, tbl.Compact(ctx, true))
	check(tbl)

	// Reopened, with the column cache (which decodes each column of a
	// row group alone) on.
	s2, err := Open(ctx, NewLocalFS(), s.root, Options{Mem: mem, CacheBytes: 1 << 20})
	must(t, err)
	defer s2.Close()
	tbl2, err := s2.Table(ctx, Ident{"db", "n"})
	must(t, err)
	if !tbl2.Schema().Equal(tbl.Schema()) {
		t.Fatalf("schema after reopen:\n%s\nwant\n%s", tbl2.Schema(), tbl.Schema())
	}
	check(tbl2)
	check(tbl2) // from the cache
}

func TestNestedTypeStrings(t *testing.T) {
	for i, f := range nestedSchema.Fields() {
		s, err := typeString(f.Type)
		must(t, err)
		want := []string{"BIGINT", "ROW<`a` INT, `b``, c>` STRING NOT NULL, `xs` ARRAY<BIGINT>>", "ARRAY<STRING>", "MAP<STRING, ARRAY<INT NOT NULL>>", "BIGINT"}[i]
		if s != want {
			t.Fatalf("type string of %s: %q, want %q", f.Type, s, want)
		}
		dt, err := parseType(s)
		must(t, err)
		if !arrow.TypeEqual(dt, f.Type) {
			t.Fatalf("parseType(%q) = %s, want %s", s, dt, f.Type)
		}
	}
	for _, bad := range []string{"ARRAY<INT", "ARRAY<INT, INT>", "MAP<INT>", "ROW<a INT>", "ROW<`a INT>", "ARRAY<FOO>", "ROW<`a` INT>>"} {
		if _, err := parseType(bad); err == nil {
			t.Errorf("parseType(%q): no error", bad)
		}
	}
}

func TestNestedColumnsCannotBeKeys(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	for _, col := range []string{"r", "arr", "m"} {
		_, err := s.CreateTable(ctx, Ident{"db", "k" + col}, TableDef{Schema: nestedSchema, PrimaryKey: []string{"id", col}}, false)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("primary key column %q has type", col)) || !strings.Contains(err.Error(), "cannot be a key") {
			t.Fatalf("key on %s: %v", col, err)
		}
	}
	_, err := s.CreateTable(ctx, Ident{"db", "agg"}, TableDef{Schema: nestedSchema, PrimaryKey: []string{"id"},
		Options: map[string]string{"merge-engine": "aggregation", "fields.r.aggregate-function": "max"}}, false)
	if err == nil || !strings.Contains(err.Error(), "max needs an ordered column") {
		t.Fatalf("max of a ROW column: %v", err)
	}
}

// TestNestedNormalized checks that the normalized encoding the merge
// compares rows by is equal exactly when the rendered values are.
func TestNestedNormalized(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	mem := newMem(t)
	b := array.NewRecordBuilder(mem, nestedSchema)
	defer b.Release()
	for range 300 {
		appendNestedRow(rng, b, 0)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for c := 1; c < 4; c++ { // the nested columns
		col := rec.Column(c)
		for i := range 300 {
			for j := range 300 {
				same := cellString(col, i) == cellString(col, j)
				enc := bytes.Equal(merge.AppendNormalized(nil, col, i), merge.AppendNormalized(nil, col, j))
				if same != enc {
					t.Fatalf("column %d rows %d, %d: values %s and %s, encodings equal %v", c, i, j, cellString(col, i), cellString(col, j), enc)
				}
			}
		}
		if st := columnStats(0, col); st.Min != nil || st.Max != nil {
			t.Fatalf("column %d has bounds %v", c, st)
		}
	}
	var _ memory.Allocator = mem
}

// BenchmarkScanMergeNested reads a key table merged from 8 overlapping
// commits with four of benchSchema's columns either flat or inside one
// ROW column: the cost of merging nested values (gatherNested) and of
// decoding them from Parquet.
func BenchmarkScanMergeNested(b *testing.B) {
	for _, nested := range []bool{false, true} {
		b.Run(fmt.Sprintf("nested=%v", nested), func(b *testing.B) {
			ctx := context.Background()
			mem := memory.NewGoAllocator()
			s, err := Open(ctx, NewLocalFS(), b.TempDir(), Options{Mem: mem, BatchSize: 8192})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			_ = s.CreateDatabase(ctx, "db", false)
			wrap := func(rec arrow.RecordBatch) arrow.RecordBatch {
				if !nested {
					rec.Retain()
					return rec
				}
				inner := []int{3, 4, 8, 9}
				var cols, kept []arrow.Array
				var names []string
				var fields []arrow.Field
				for i, f := range rec.Schema().Fields() {
					if slices.Contains(inner, i) {
						cols, names = append(cols, rec.Column(i)), append(names, f.Name)
						continue
					}
					kept, fields = append(kept, rec.Column(i)), append(fields, f)
				}
				r, err := array.NewStructArray(cols, names)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Release()
				fields = append(fields, arrow.Field{Name: "r", Type: r.DataType(), Nullable: true})
				return array.NewRecordBatch(arrow.NewSchema(fields, nil), append(kept, r), rec.NumRows())
			}
			rng := rand.New(rand.NewPCG(3, 4))
			var tbl *Table
			for range 8 {
				raw := benchBatch(mem, rng, 1<<15, 1<<16, -1)
				rec := wrap(raw)
				raw.Release()
				if tbl == nil {
					if tbl, err = s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: rec.Schema(), PrimaryKey: []string{"k"},
						Options: map[string]string{"write-only": "true"}}, false); err != nil {
						b.Fatal(err)
					}
				}
				commitRecord(b, tbl, rec)
			}
			reportScans(b, tbl)
		})
	}
}
