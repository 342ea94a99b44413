package tablestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/merge"
)

var aggSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "p", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "c", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "mx", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "mn", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "lv", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "lnn", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "fv", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "fnn", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "la", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ba", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "bo", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

// aggOptions gives every column of aggSchema a function; with retracts,
// the ones that cannot retract ignore retractions (first_value, which
// cannot ignore them, is then last_value).
func aggOptions(retracts bool, extra map[string]string) map[string]string {
	o := map[string]string{"merge-engine": "aggregation", "write-only": "true"}
	fns := map[string]string{"s": "sum", "p": "product", "c": "count", "mx": "max", "mn": "min", "lv": "last_value",
		"lnn": "last_non_null_value", "fv": "first_value", "fnn": "first_non_null_value", "la": "listagg", "ba": "bool_and", "bo": "bool_or"}
	if retracts {
		fns["fv"] = "last_value"
	}
	for col, fn := range fns {
		o["fields."+col+".aggregate-function"] = fn
		if retracts && !merge.CanRetract(fn, aggSchema.Field(aggSchema.FieldIndices(col)[0]).Type) {
			o["fields."+col+".ignore-retract"] = "true"
		}
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// TestMergeAssociative: random versions of a few keys written in one
// commit (merged at flush), one commit per random chunk (merged at read)
// and then compacted (merged at compaction) read the same, for every
// aggregate function and the partial-update variants. Replay with -seed.
func TestMergeAssociative(t *testing.T) {
	seed := testSeed(t)
	pu := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "g", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	for _, c := range []struct {
		name  string
		sc    *arrow.Schema
		opts  map[string]string
		kinds []RowKind
	}{
		{"aggregation", aggSchema, aggOptions(false, nil), []RowKind{Insert, UpdateAfter}},
		{"aggregation-retract", aggSchema, aggOptions(true, nil), []RowKind{Insert, UpdateAfter, UpdateBefore, Delete}},
		{"aggregation-remove", aggSchema, aggOptions(true, map[string]string{"aggregation.remove-record-on-delete": "true"}), []RowKind{Insert, UpdateAfter, UpdateBefore, Delete}},
		{"partial-update-groups", pu, map[string]string{"merge-engine": "partial-update", "write-only": "true", "fields.g.sequence-group": "a,b"}, []RowKind{Insert, UpdateAfter, UpdateBefore, Delete}},
		{"partial-update-remove", pu, map[string]string{"merge-engine": "partial-update", "write-only": "true", "partial-update.remove-record-on-delete": "true"}, []RowKind{Insert, UpdateAfter, UpdateBefore, Delete}},
		{"first-row", pu, map[string]string{"merge-engine": "first-row", "write-only": "true"}, []RowKind{Insert}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			ctx := context.Background()
			s, mem, _ := newTestStore(t)
			mk := func(name string) *Table {
				tbl, err := s.CreateTable(ctx, Ident{"db", name}, TableDef{Schema: c.sc, PrimaryKey: []string{"k"}, Options: c.opts}, false)
				must(t, err)
				return tbl
			}
			one, chunked := mk("one"), mk("chunked")
			var rows [][]any
			var kinds []RowKind
			for range 60 {
				row := []any{rng.IntN(4)}
				for _, f := range c.sc.Fields()[1:] {
					row = append(row, randCell(rng, f.Type))
				}
				rows = append(rows, row)
				kinds = append(kinds, c.kinds[rng.IntN(len(c.kinds))])
			}
			// Remove-on-delete can legitimately empty every key; a last insert
			// keeps one alive so the comparison below is never vacuous.
			kinds[len(kinds)-1] = Insert
			write := func(tbl *Table, rows [][]any, kinds []RowKind) {
				b := makeBatch(t, mem, c.sc, rows)
				defer b.Release()
				w := tbl.NewWrite(WriteOptions{})
				must(t, w.WriteKinds(ctx, b, kinds))
				_, err := w.Commit(ctx)
				must(t, err)
			}
			write(one, rows, kinds)
			for i := 0; i < len(rows); {
				n := 1 + rng.IntN(8)
				n = min(n, len(rows)-i)
				write(chunked, rows[i:i+n], kinds[i:i+n])
				i += n
			}
			want := scanAll(t, one, ScanSpec{})
			if got := scanAll(t, chunked, ScanSpec{}); !slices.Equal(got, want) {
				t.Fatalf("seed %d: merged at read:\n got %q\nwant %q", seed, got, want)
			}
			must(t, chunked.Compact(ctx, false))
			if got := scanAll(t, chunked, ScanSpec{}); !slices.Equal(got, want) {
				t.Fatalf("seed %d: after a partial compaction:\n got %q\nwant %q", seed, got, want)
			}
			must(t, chunked.Compact(ctx, true))
			if got := scanAll(t, chunked, ScanSpec{}); !slices.Equal(got, want) {
				t.Fatalf("seed %d: after a full compaction:\n got %q\nwant %q", seed, got, want)
			}
			if len(want) == 0 {
				t.Fatalf("seed %d: no rows survived", seed)
			}
		})
	}
}

// randCell is a random value of type dt or nil; floats are powers of two
// so products are exact in any order.
func randCell(rng *rand.Rand, dt arrow.DataType) any {
	if rng.IntN(4) == 0 {
		return nil
	}
	switch dt.ID() {
	case arrow.INT64, arrow.INT32:
		return rng.IntN(20) - 5
	case arrow.FLOAT64:
		return []float64{0.5, 1, 2, 4}[rng.IntN(4)]
	case arrow.BOOL:
		return rng.IntN(2) == 0
	}
	return fmt.Sprintf("s%d", rng.IntN(6))
}

// TestMergeProjection: a projected read of a merge-engine table reads the
// projected columns, the key and the sequence columns of their groups only.
func TestMergeProjection(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "g", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: sc, PrimaryKey: []string{"k"},
		Options: map[string]string{"merge-engine": "partial-update", "write-only": "true", "fields.g.sequence-group": "a"}}, false)
	must(t, err)
	for i := range 2 {
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, fmt.Sprint(i), i, i, nil}})
	}
	for _, c := range []struct {
		cols []string
		need []string
		rows string
	}{
		{[]string{"x"}, []string{"x", "k"}, "1"},
		{[]string{"a"}, []string{"a", "g", "k"}, "1"},
		{[]string{"y", "g"}, []string{"y", "g", "k"}, "NULL|1"},
	} {
		sc, err := tbl.NewScan(ctx, ScanSpec{Columns: c.cols})
		must(t, err)
		r, err := sc.Splits()[0].Open(ctx)
		must(t, err)
		mr, ok := r.(*mergeReader)
		if !ok {
			t.Fatalf("%v: want a merge reader, got %T", c.cols, r)
		}
		var need []string
		for _, i := range mr.need {
			need = append(need, sc.sch.Fields[i].Name)
		}
		must(t, r.Close())
		if !slices.Equal(need, c.need) {
			t.Errorf("projection %v reads %v, want %v", c.cols, need, c.need)
		}
		if got := strings.Join(scanAll(t, tbl, ScanSpec{Columns: c.cols}), ","); got != c.rows {
			t.Errorf("projection %v: %q, want %q", c.cols, got, c.rows)
		}
		sc.Close()
	}
}
