package tablestore

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// TestAllTypes round-trips every supported type through writes, merges,
// compaction, schema files and statistics, with every type in the key.
func TestAllTypes(t *testing.T) {
	ctx := context.Background()
	ts := &arrow.TimestampType{Unit: arrow.Microsecond}
	tsz := &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}
	dec := &arrow.Decimal128Type{Precision: 20, Scale: 2}
	fields := []arrow.Field{
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "ts", Type: ts},
		{Name: "tsz", Type: tsz},
		{Name: "dec", Type: dec},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	sc := arrow.NewSchema(fields, nil)
	keys := []string{"b", "i8", "i16", "i32", "d", "ts", "tsz", "dec", "s", "bin"}
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "all"}, TableDef{Schema: sc, PrimaryKey: keys, PartitionKeys: []string{"d"},
		Options: map[string]string{"bucket": "3", "write-only": "true"}}, false)
	must(t, err)
	build := func(n int, v float64) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, sc)
		defer b.Release()
		for i := range n {
			b.Field(0).(*array.BooleanBuilder).Append(i%2 == 0)
			b.Field(1).(*array.Int8Builder).Append(int8(i - 3))
			b.Field(2).(*array.Int16Builder).Append(int16(-i))
			b.Field(3).(*array.Int32Builder).Append(int32(i * 1000))
			b.Field(4).(*array.Date32Builder).Append(arrow.Date32(19000 + i%2))
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1e6))
			b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i)))
			b.Field(7).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i*100 - 250)))
			b.Field(8).(*array.StringBuilder).Append(string(rune('a'+i)) + "\x00z")
			b.Field(9).(*array.BinaryBuilder).Append([]byte{byte(i), 0, 255})
			if i == 2 {
				b.Field(10).AppendNull()
				b.Field(11).AppendNull()
				b.Field(12).AppendNull()
				continue
			}
			b.Field(10).(*array.Float32Builder).Append(float32(v))
			b.Field(11).(*array.Float64Builder).Append(v)
			b.Field(12).(*array.Int64Builder).Append(int64(v))
		}
		return b.NewRecordBatch()
	}
	write := func(n int, v float64) {
		w := tbl.NewWrite(WriteOptions{})
		b := build(n, v)
		defer b.Release()
		must(t, w.Write(ctx, b, Insert))
		_, err := w.Commit(ctx)
		must(t, err)
	}
	write(6, 1)
	write(4, 2) // overlapping keys: the newer rows win in the merge
	check := func() {
		got := scanAll(t, tbl, ScanSpec{Columns: []string{"i8", "f64", "i64"}})
		eqRows(t, got, "-3|2|2", "-2|2|2", "-1|NULL|NULL", "0|2|2", "1|1|1", "2|1|1")
		// The filter only skips data: the matching rows must be there.
		got = scanAll(t, tbl, ScanSpec{Columns: []string{"dec", "s"}, Filter: Compare{Column: "i8", Op: GE, Value: scalar.NewInt8Scalar(1)}})
		if !slices.Contains(got, "1.5|e\x00z") || !slices.Contains(got, "2.5|f\x00z") {
			t.Fatalf("filtered rows %q", got)
		}
	}
	check()
	must(t, tbl.Compact(ctx, true))
	check()
	// Schema files round-trip every type.
	s2 := openStore(t, NewLocalFS(), s.root, mem)
	defer s2.Close()
	tbl2, err := s2.Table(ctx, Ident{"db", "all"})
	must(t, err)
	if !tbl2.Schema().Equal(tbl.Schema()) {
		t.Fatalf("schema after reopen:\n%s\nwant\n%s", tbl2.Schema(), tbl.Schema())
	}
	var _ memory.Allocator = mem
}
