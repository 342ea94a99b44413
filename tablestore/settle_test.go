package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestSettleMergesPending settles a write many times, as a transaction of
// many statements does, reading through WithWrite after each: scans equal
// the model, no bucket keeps more pending files than the compaction
// trigger, and the commit leaves no merged-away file behind.
func TestSettleMergesPending(t *testing.T) {
	sumSchema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	cases := []struct {
		name string
		def  TableDef
	}{
		{"deduplicate", TableDef{Schema: sumSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2"}}},
		{"aggregation", TableDef{Schema: sumSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "2",
			"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"}}},
		{"append", TableDef{Schema: sumSchema}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 0))
			ctx := context.Background()
			s, mem, _ := newTestStore(t)
			tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, c.def, false)
			if err != nil {
				t.Fatal(err)
			}
			keyed := len(c.def.PrimaryKey) > 0
			sum := c.def.Options["merge-engine"] == "aggregation"
			model := map[int]int{} // key -> n
			var appended []string
			apply := func(k, n int, del bool) {
				switch {
				case !keyed:
					appended = append(appended, fmt.Sprintf("%d|%d", k, n))
				case del:
					delete(model, k)
				case sum:
					model[k] += n
				default:
					model[k] = n
				}
			}
			want := func() []string {
				if !keyed {
					return slices.Clone(appended)
				}
				var rows []string
				for k, n := range model {
					rows = append(rows, fmt.Sprintf("%d|%d", k, n))
				}
				return rows
			}
			var base [][]any
			for k := range 30 {
				base = append(base, []any{k, k})
				apply(k, k, false)
			}
			writeRows(t, tbl, mem, WriteOptions{}, Insert, base)

			w := tbl.NewWrite(WriteOptions{})
			defer w.Abort()
			for round := range 40 {
				k, n := rng.IntN(40), rng.IntN(100)
				kind := Insert
				if keyed && !sum && rng.IntN(4) == 0 {
					kind = Delete
				}
				b := makeBatch(t, mem, sumSchema, [][]any{{k, n}})
				err := w.Write(ctx, b, kind)
				b.Release()
				if err != nil {
					t.Fatal(err)
				}
				apply(k, n, kind == Delete)
				if err := w.Settle(ctx); err != nil {
					t.Fatal(err)
				}
				perBucket := map[string]int{}
				for _, e := range w.pending {
					perBucket[bucketOf(e)]++
					if perBucket[bucketOf(e)] > w.sch.opts.compactionTrigger {
						t.Fatalf("round %d: bucket %s holds %d pending files", round, bucketOf(e), perBucket[bucketOf(e)])
					}
				}
				eqRows(t, scanAll(t, tbl.WithWrite(w), ScanSpec{}), want()...)
			}
			superseded := w.superseded
			if len(superseded) == 0 {
				t.Fatal("40 settles merged no pending files")
			}
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			eqRows(t, scanAll(t, tbl, ScanSpec{}), want()...)
			for _, e := range superseded {
				if _, err := tbl.st.fs().Stat(joinPath(tbl.st.dir, e.File.Path)); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("merged-away pending file %s: %v", e.File.Path, err)
				}
			}
		})
	}
}
