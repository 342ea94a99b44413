package tablestore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// decodeTestSchema has a column of each type decodeFlat handles, required
// and nullable (seconds are stored, and read, as milliseconds), and one it
// leaves to pqarrow (wide decimals).
var decodeTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
	{Name: "i32n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
	{Name: "dec7", Type: &arrow.Decimal128Type{Precision: 7, Scale: 2}, Nullable: true},
	{Name: "dec15", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Nullable: true},
	{Name: "dec30", Type: &arrow.Decimal128Type{Precision: 30, Scale: 4}, Nullable: true},
	{Name: "tsus", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "tss", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "sreq", Type: arrow.BinaryTypes.String},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

// randomDecodeBatch makes n rows; nullRate 0 and 1 give columns without
// and with only NULLs, and distinct bounds the strings' values (few:
// dictionary pages; many: the writer falls back to plain pages midway).
func randomDecodeBatch(mem memory.Allocator, rng *rand.Rand, n int, nullRate float64, distinct int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, decodeTestSchema)
	defer b.Release()
	for range n {
		for i, f := range decodeTestSchema.Fields() {
			fb := b.Field(i)
			if f.Nullable && rng.Float64() < nullRate {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.BooleanBuilder:
				fb.Append(rng.IntN(2) == 0)
			case *array.Int32Builder:
				fb.Append(rng.Int32() - 1<<30)
			case *array.Date32Builder:
				fb.Append(arrow.Date32(rng.IntN(40000)))
			case *array.Int64Builder:
				fb.Append(rng.Int64() - 1<<62)
			case *array.Float32Builder:
				fb.Append(rng.Float32())
			case *array.Float64Builder:
				fb.Append(rng.NormFloat64())
			case *array.Decimal128Builder:
				p := f.Type.(*arrow.Decimal128Type).Precision
				lim := int64(1)
				for range min(p, 18) {
					lim *= 10
				}
				v := decimal128.FromI64(rng.Int64N(2*lim-1) - lim + 1)
				if p > 18 {
					v = v.Mul(decimal128.FromI64(rng.Int64N(1e9)))
				}
				fb.Append(v)
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(rng.Int64N(1e15)))
			case *array.StringBuilder:
				fb.Append(fmt.Sprintf("v%0*d", rng.IntN(20), rng.IntN(distinct)))
			case *array.BinaryBuilder:
				v := make([]byte, rng.IntN(30))
				for k := range v {
					v[k] = byte(rng.IntN(256))
				}
				fb.Append(v)
			}
		}
	}
	return b.NewRecordBatch()
}

// TestDecodeChunkMatchesPqarrow decodes every column chunk of random files
// (nulls at several rates, dictionary and plain pages, several pages per
// chunk, snappy, zstd and none, with and without page index) with decodeChunk,
// all rows or random row ranges, and with pqarrow, and requires equal
// arrays: the fast path must read exactly the rows pqarrow reads there.
func TestDecodeChunkMatchesPqarrow(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	for round := range 12 {
		nullRate := []float64{0, 0.1, 0.5, 1}[round%4]
		distinct := []int{3, 500, 1 << 20}[rng.IntN(3)]
		codec := []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Zstd, compress.Codecs.Uncompressed}[rng.IntN(3)]
		rows := 1 + rng.IntN(20000)
		rec := randomDecodeBatch(mem, rng, rows, nullRate, distinct)
		props := parquet.NewWriterProperties(parquet.WithAllocator(mem), parquet.WithCompression(codec),
			parquet.WithMaxRowGroupLength(int64(1+rng.IntN(8000))), parquet.WithDataPageSize(int64(256+rng.IntN(8192))),
			parquet.WithDictionaryDefault(rng.IntN(2) == 0), parquet.WithDictionaryPageSizeLimit(int64(512+rng.IntN(4096))),
			parquet.WithStoreDecimalAsInteger(true), parquet.WithPageIndexEnabled(rng.IntN(2) == 0),
			parquet.WithDataPageVersion([]parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2}[rng.IntN(2)]))
		data := writeDecodeFile(t, mem, rec, props)
		df := testDataFile(t, mem, data)
		flat := 0
		for rg := range df.numRowGroups() {
			for col := range df.types {
				if df.flatDecodable(col) {
					flat++
				}
				ranges := randomRanges(rng, df.pr.MetaData().RowGroup(rg).NumRows())
				got, err := df.decodeChunk(ctx, mem, rg, col, ranges)
				if err != nil {
					t.Fatalf("seed %d round %d: column %d row group %d ranges %v: %v", seed, round, col, rg, ranges, err)
				}
				want := pqarrowRows(t, mem, df, rg, col, ranges)
				if !array.Equal(got, want) || got.NullN() != want.NullN() {
					t.Fatalf("seed %d round %d: column %s row group %d ranges %v differs:\n got %v\nwant %v", seed, round, decodeTestSchema.Field(col).Name, rg, ranges, got, want)
				}
				got.Release()
				want.Release()
			}
		}
		if want := df.numRowGroups() * 14; flat != want {
			t.Fatalf("%d chunks took the flat path, want %d (all but wide decimals)", flat, want)
		}
	}
}

// pqarrowRows reads the rows of ranges (all when nil) of column col of
// row group rg with pqarrow: what decodeChunk must return.
func pqarrowRows(t *testing.T, mem memory.Allocator, df *dataFile, rg, col int, ranges []rowRange) arrow.Array {
	t.Helper()
	fr, err := df.arrowFile()
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadRowGroups(context.Background(), df.leaves[col], []int{rg})
	if err != nil {
		t.Fatal(err)
	}
	want, err := array.Concatenate(tbl.Column(0).Data().Chunks(), mem)
	tbl.Release()
	if err != nil {
		t.Fatal(err)
	}
	if ranges == nil {
		return want
	}
	defer want.Release()
	cut, err := takeRanges(mem, want, ranges)
	if err != nil {
		t.Fatal(err)
	}
	return cut
}

// randomRanges returns nil (all rows) or ascending disjoint ranges of
// rows [0, n), some starting at 0, some ending at n.
func randomRanges(rng *rand.Rand, n int64) []rowRange {
	if rng.IntN(3) == 0 {
		return nil
	}
	var out []rowRange
	for at := int64(0); at < n; {
		end := min(n, at+1+rng.Int64N(max(n/3, 1)))
		if rng.IntN(2) == 0 {
			out = append(out, rowRange{at, end})
		}
		at = end + rng.Int64N(max(n/5, 1))
	}
	if len(out) == 0 {
		out = append(out, rowRange{0, n})
	}
	return out
}

// testDataFile opens Parquet bytes as a dataFile for its decoders.
func testDataFile(t testing.TB, mem memory.Allocator, data []byte) *dataFile {
	t.Helper()
	pr, err := file.NewParquetReader(bytes.NewReader(data), file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		t.Fatal(err)
	}
	layout, err := newFileLayout(pr.MetaData(), pqarrow.ArrowReadProperties{})
	if err != nil {
		t.Fatal(err)
	}
	return &dataFile{path: "test.parquet", pr: pr, mem: mem, types: layout.types, leaves: layout.leaves}
}

// writeDecodeFile writes rec as a Parquet file with props and releases it.
func writeDecodeFile(t *testing.T, mem memory.Allocator, rec arrow.RecordBatch, props *parquet.WriterProperties) []byte {
	t.Helper()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(decodeTestSchema, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem), pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeOtherEncodings decodes integer columns of another writer's
// encoding (DELTA_BINARY_PACKED), which arrow-go's column reader decodes
// (readFixed) where flightd's own plain and dictionary pages go by page,
// and compares with pqarrow.
func TestDecodeOtherEncodings(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	delta := []string{"i32", "i32n", "d", "i64", "dec7", "dec15", "tsus"}
	for round := range 4 {
		rec := randomDecodeBatch(mem, rng, 1+rng.IntN(5000), []float64{0, 0.1}[round%2], 100)
		props := []parquet.WriterProperty{parquet.WithAllocator(mem), parquet.WithStoreDecimalAsInteger(true),
			parquet.WithMaxRowGroupLength(int64(1 + rng.IntN(3000))), parquet.WithDataPageSize(int64(256 + rng.IntN(4096)))}
		for _, c := range delta {
			props = append(props, parquet.WithDictionaryFor(c, false), parquet.WithEncodingFor(c, parquet.Encodings.DeltaBinaryPacked))
		}
		data := writeDecodeFile(t, mem, rec, parquet.NewWriterProperties(props...))
		// arrow-go's delta decoder does not free a 64-byte block buffer
		// it takes from the reader's allocator: read with Go's, and check
		// what decodeChunk allocates with mem.
		df := testDataFile(t, memory.NewGoAllocator(), data)
		for rg := range df.numRowGroups() {
			for _, name := range delta {
				col := decodeTestSchema.FieldIndices(name)[0]
				md, err := df.pr.MetaData().RowGroup(rg).ColumnChunk(df.leaves[col][0])
				if err != nil {
					t.Fatal(err)
				}
				if pageDecodable(md) {
					t.Fatalf("column %s of encodings %v goes by page", name, md.Encodings())
				}
				ranges := randomRanges(rng, md.NumValues())
				got, err := df.decodeChunk(ctx, mem, rg, col, ranges)
				if err != nil {
					t.Fatalf("seed %d round %d: column %s row group %d ranges %v: %v", seed, round, name, rg, ranges, err)
				}
				want := pqarrowRows(t, mem, df, rg, col, ranges)
				if !array.Equal(got, want) || got.NullN() != want.NullN() {
					t.Fatalf("seed %d round %d: column %s row group %d ranges %v differs:\n got %v\nwant %v", seed, round, name, rg, ranges, got, want)
				}
				got.Release()
				want.Release()
			}
		}
	}
}

// TestDecodeCorrupt flips random bytes inside column chunks of
// uncompressed files (so the page decoder, not the codec, sees them), of
// zstd files (the default codec) and of lz4 files (the default for level-0
// files compaction rewrites) and decodes every row group: each decode
// must end with an array or an error, never a panic, and free all it
// allocated.
func TestDecodeCorrupt(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	cols := make([]int, len(decodeTestSchema.Fields()))
	for i := range cols {
		cols[i] = i
	}
	failed := 0
	for round := range 40 {
		rec := randomDecodeBatch(mem, rng, 1+rng.IntN(3000), []float64{0, 0.2}[round%2], []int{3, 500, 1 << 20}[rng.IntN(3)])
		codec := []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Zstd, compress.Codecs.Lz4Raw}[round/2%3]
		props := parquet.NewWriterProperties(parquet.WithAllocator(mem), parquet.WithCompression(codec),
			parquet.WithMaxRowGroupLength(int64(1+rng.IntN(2000))), parquet.WithDataPageSize(int64(256+rng.IntN(4096))),
			parquet.WithDictionaryDefault(rng.IntN(2) == 0), parquet.WithPageIndexEnabled(rng.IntN(2) == 0),
			parquet.WithDataPageVersion([]parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2}[rng.IntN(2)]))
		data := writeDecodeFile(t, mem, rec, props)
		df := testDataFile(t, mem, bytes.Clone(data))
		meta := df.pr.MetaData()
		for rg := range df.numRowGroups() {
			col := cols[rng.IntN(len(cols))]
			cc, err := meta.RowGroup(rg).ColumnChunk(df.leaves[col][0])
			if err != nil {
				t.Fatal(err)
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
				start = min(start, cc.DictionaryPageOffset())
			}
			for range 1 + rng.IntN(4) {
				at := start + rng.Int64N(cc.TotalCompressedSize())
				data[at] ^= byte(1 + rng.IntN(255))
			}
		}
		bad := testDataFile(t, mem, data)
		for rg := range bad.numRowGroups() {
			for _, col := range cols {
				got, err := bad.decodeChunk(ctx, mem, rg, col, randomRanges(rng, bad.pr.MetaData().RowGroup(rg).NumRows()))
				if err != nil {
					failed++
					continue
				}
				got.Release()
			}
		}
	}
	if failed == 0 {
		t.Fatalf("seed %d: no corrupted chunk failed to decode", seed)
	}
}

// TestDecodeStringsAtPageStarts reads string chunks of files without a
// page index from ranges that start exactly where pages start (arrow-go's
// seek without an offset index stops one page early there) and compares
// with pqarrow.
func TestDecodeStringsAtPageStarts(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	col := decodeTestSchema.FieldIndices("sreq")[0]
	for round := range 6 {
		rec := randomDecodeBatch(mem, rng, 500+rng.IntN(3000), 0.2, []int{3, 1 << 20}[round%2])
		props := parquet.NewWriterProperties(parquet.WithAllocator(mem), parquet.WithDataPageSize(int64(256+rng.IntN(1024))), parquet.WithBatchSize(32),
			parquet.WithDictionaryDefault(round%2 == 0), parquet.WithPageIndexEnabled(false))
		data := writeDecodeFile(t, mem, rec, props)
		df := testDataFile(t, mem, data)
		pr, err := df.pr.RowGroup(0).GetColumnPageReader(df.leaves[col][0])
		if err != nil {
			t.Fatal(err)
		}
		var starts []int64
		for pr.Next() {
			if dp, ok := pr.Page().(*file.DataPageV1); ok && dp.FirstRowIndex() > 0 {
				starts = append(starts, dp.FirstRowIndex())
			}
		}
		pr.Close()
		if len(starts) == 0 {
			t.Fatalf("seed %d round %d: one page only", seed, round)
		}
		n := df.pr.MetaData().RowGroup(0).NumRows()
		var ranges []rowRange
		for i, s := range starts {
			end := n
			if i+1 < len(starts) {
				end = starts[i+1]
			}
			if i%2 == 0 {
				ranges = append(ranges, rowRange{s, min(end, s+1+rng.Int64N(end-s))})
			}
		}
		got, err := df.decodeChunk(ctx, mem, 0, col, ranges)
		if err != nil {
			t.Fatalf("seed %d round %d ranges %v: %v", seed, round, ranges, err)
		}
		want := pqarrowRows(t, mem, df, 0, col, ranges)
		if !array.Equal(got, want) {
			t.Fatalf("seed %d round %d ranges %v differ", seed, round, ranges)
		}
		got.Release()
		want.Release()
	}
}

// BenchmarkDecodeChunk decodes every chunk of an in-memory file of
// TPC-DS-like fact columns (integer keys and DECIMAL(7,2) amounts, 4%
// NULLs) uncompressed, so that what is measured is the page decoding, not
// the codec: ns per value.
func BenchmarkDecodeChunk(b *testing.B) {
	mem := memory.NewGoAllocator()
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 7, Scale: 2}, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	rb := array.NewRecordBuilder(mem, sch)
	const rows = 1 << 18
	for i := range rows {
		for c := range 3 {
			if rng.IntN(25) == 0 {
				rb.Field(c).AppendNull()
				continue
			}
			switch f := rb.Field(c).(type) {
			case *array.Int32Builder:
				f.Append(rng.Int32N(100000))
			case *array.Decimal128Builder:
				f.Append(decimal128.FromI64(rng.Int64N(100000)))
			}
		}
		rb.Field(3).(*array.Int64Builder).Append(int64(i))
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sch, &buf, parquet.NewWriterProperties(parquet.WithAllocator(mem), parquet.WithCompression(compress.Codecs.Uncompressed),
		parquet.WithMaxRowGroupLength(1<<16), parquet.WithDataPageSize(64<<10), parquet.WithDictionaryDefault(false), parquet.WithStoreDecimalAsInteger(true)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem), pqarrow.WithStoreSchema()))
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		b.Fatal(err)
	}
	rec.Release()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		df := testDataFile(b, mem, buf.Bytes())
		for rg := range df.numRowGroups() {
			for col := range df.types {
				a, err := df.decodeChunk(ctx, mem, rg, col, nil)
				if err != nil {
					b.Fatal(err)
				}
				a.Release()
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*4), "ns/value")
}
