package tablestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// TestScanSelectsBuckets: a filter that fixes the bucket key (= or IN, on
// its own or under AND, alone or with the rest of the key) reads only the
// buckets those values hash to, and returns every row a full scan has that
// matches; a filter that does not fix it reads every bucket. Random rows and
// filters, seed printed.
func TestScanSelectsBuckets(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	s, mem, _ := newTestStore(t)
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "b", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: schema, PrimaryKey: []string{"a", "b"},
		Options: map[string]string{"bucket": "4", "bucket-key": "a"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		var rows [][]any
		for range 40 {
			rows = append(rows, []any{r.IntN(30), fmt.Sprint(r.IntN(3)), r.IntN(100)})
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
	}
	all := scanAll(t, tbl, ScanSpec{})
	for range 100 {
		var vals []scalar.Scalar
		want := map[int64]bool{}
		for range 1 + r.IntN(3) {
			a := int64(r.IntN(35))
			vals = append(vals, scalar.NewInt64Scalar(a))
			want[a] = true
		}
		var filter Predicate = In{Column: "a", Values: vals}
		if len(vals) == 1 && r.IntN(2) == 0 {
			filter = Compare{Column: "a", Op: EQ, Value: vals[0]}
		}
		if r.IntN(3) == 0 {
			filter = And{filter, Compare{Column: "b", Op: EQ, Value: scalar.NewStringScalar("1")}}
		}
		sc := mustScan(t, tbl, ScanSpec{Filter: filter})
		buckets := map[int]bool{}
		for _, sp := range sc.Splits() {
			buckets[sp.Bucket()] = true
		}
		// The buckets the values' rows were written to.
		written := map[int]bool{}
		for a := range want {
			b := bucketsOf(sc.sch, 1, func(string) arrow.Array {
				arr, err := scalar.MakeArrayFromScalar(scalar.NewInt64Scalar(a), 1, mem)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(arr.Release)
				return arr
			})
			written[int(b[0])] = true
		}
		for b := range buckets {
			if !written[b] {
				t.Fatalf("filter %s read bucket %d; its values hash to %v", filter, b, written)
			}
		}
		got := readScan(t, sc)
		for _, row := range all {
			a, rest, _ := strings.Cut(row, "|")
			var av int64
			fmt.Sscan(a, &av)
			if !want[av] || strings.Contains(filter.String(), "b = ") && !strings.HasPrefix(rest, "1|") {
				continue
			}
			if !slices.Contains(got, row) {
				t.Fatalf("filter %s lost row %s (got %v)", filter, row, got)
			}
		}
	}
	sc := mustScan(t, tbl, ScanSpec{Filter: Compare{Column: "b", Op: EQ, Value: scalar.NewStringScalar("1")}})
	defer sc.Close()
	if got := len(sc.Splits()); got != 4 {
		t.Fatalf("a filter on b alone read %d buckets, want all 4", got)
	}
}

func mustScan(t *testing.T, tbl *Table, spec ScanSpec) *Scan {
	t.Helper()
	s, err := tbl.NewScan(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
