package tablestore

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// TestDecimalStorage writes random decimals of every storage width (INT32
// up to precision 9, INT64 up to 18, fixed-length bytes beyond), extremes
// and NULLs included, into an append and a key table, and reads them back
// with and without the column cache: the values must be the ones written,
// and the files must store each column in its width.
func TestDecimalStorage(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 7))
	ctx := context.Background()
	s, mem, dir := newTestStore(t)
	precisions := []int32{1, 5, 9, 10, 17, 18, 19, 38}
	fields := []arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}
	for _, p := range precisions {
		scale := rng.Int32N(p + 1)
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("d%d", p), Type: &arrow.Decimal128Type{Precision: p, Scale: scale}, Nullable: true})
	}
	sc := arrow.NewSchema(fields, nil)
	randDec := func(p int32) decimal128.Num {
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil) // |v| < 10^p
		var v *big.Int
		switch rng.IntN(4) {
		case 0:
			v = new(big.Int).Sub(limit, big.NewInt(1)) // largest
		case 1:
			v = new(big.Int).Sub(big.NewInt(1), limit) // smallest
		default:
			v = new(big.Int).Lsh(new(big.Int).SetUint64(rng.Uint64()), 64)
			v.Or(v, new(big.Int).SetUint64(rng.Uint64())).Mod(v, limit)
		}
		if rng.IntN(2) == 0 {
			v.Neg(v)
		}
		return decimal128.FromBigInt(v)
	}
	var want []string
	batch := func(first, n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, sc)
		defer b.Release()
		for i := range n {
			b.Field(0).(*array.Int64Builder).Append(int64(first + i))
			for c, p := range precisions {
				if rng.IntN(10) == 0 {
					b.Field(c + 1).AppendNull()
					continue
				}
				b.Field(c + 1).(*array.Decimal128Builder).Append(randDec(p))
			}
		}
		rec := b.NewRecordBatch()
		for i := range n {
			var cells []string
			for _, col := range rec.Columns() {
				cells = append(cells, cellString(col, i))
			}
			want = append(want, strings.Join(cells, "|"))
		}
		return rec
	}
	for _, def := range []struct {
		name string
		pk   []string
	}{{"append", nil}, {"keyed", []string{"k"}}} {
		want = nil
		tbl, err := s.CreateTable(ctx, Ident{"db", def.name}, TableDef{Schema: sc, PrimaryKey: def.pk}, false)
		if err != nil {
			t.Fatal(err)
		}
		for c := range 3 {
			rec := batch(c*500, 500)
			w := tbl.NewWrite(WriteOptions{})
			if err := w.Write(ctx, rec, Insert); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(want)
		eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
		cached, err := Open(ctx, NewLocalFS(), dir, Options{Mem: mem, CacheBytes: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		ctbl, err := cached.Table(ctx, Ident{"db", def.name})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // decoding, then from the cache
			eqRows(t, scanAll(t, ctbl, ScanSpec{}), want...)
		}
		cached.Close()
	}
	checked := 0
	err := eachParquetFile(dir, func(path string, pf *file.Reader, _ int64) error {
		for _, p := range precisions {
			name := fmt.Sprintf("d%d", p)
			idx := pf.MetaData().Schema.ColumnIndexByName(name)
			if idx < 0 {
				return fmt.Errorf("%s: no column %s", path, name)
			}
			got := pf.MetaData().Schema.Column(idx).PhysicalType()
			wantType := parquet.Types.FixedLenByteArray
			switch {
			case p <= 9:
				wantType = parquet.Types.Int32
			case p <= 18:
				wantType = parquet.Types.Int64
			}
			if got != wantType {
				return fmt.Errorf("%s: DECIMAL(%d) stored as %s, want %s", path, p, got, wantType)
			}
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no data files found")
	}
}
