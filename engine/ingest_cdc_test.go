package engine_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
)

// change is one row of an ingested changelog.
type change struct {
	kind string
	k    int64
	v    string
}

// changeStream is an ingest stream of changelog batches with a _row_kind
// column of type kindType (pandas sends large_utf8).
func changeStream(mem memory.Allocator, kindType arrow.DataType, log [][]change) *batches {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "_row_kind", Type: kindType, Nullable: true},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	return &batches{schema: schema, n: len(log), make: func(i int) arrow.RecordBatch {
		bld := array.NewRecordBuilder(mem, schema)
		defer bld.Release()
		for _, c := range log[i] {
			switch kb := bld.Field(0).(type) {
			case *array.StringBuilder:
				kb.Append(c.kind)
			case *array.LargeStringBuilder:
				kb.Append(c.kind)
			}
			bld.Field(1).(*array.StringBuilder).Append(c.v)
			bld.Field(2).(*array.Int64Builder).Append(c.k)
		}
		return bld.NewRecordBatch()
	}}
}

// TestIngestChangelog pushes random changelogs (CDC: inserts, updates as
// -U/+U pairs, deletes) through bulk ingest into a primary-key table, one
// commit per ingest, and compares the table with a model after each; a
// changelog with a bad row kind commits nothing.
func TestIngestChangelog(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	e, mem := openEngine(t, t.TempDir())
	defer closeEngine(t, e, mem)
	s := e.NewSession()
	mustExec(t, s, "CREATE TABLE cdc (k BIGINT NOT NULL, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	model := map[int64]string{}
	check := func(what string) {
		t.Helper()
		var want []string
		for k, v := range model {
			want = append(want, fmt.Sprintf("%d|%s", k, v))
		}
		slices.Sort(want) // as rowSet sorts
		if got := rowSet(t, s, "SELECT k, v FROM cdc"); !slices.Equal(got, want) {
			t.Fatalf("seed %d: %s:\n got %v\nwant %v", seed, what, got, want)
		}
	}
	for round := range 30 {
		var bs [][]change
		next := maps.Clone(model)
		for range 1 + rng.IntN(3) {
			var b []change
			for range 1 + rng.IntN(20) {
				k := int64(rng.IntN(50))
				old, ok := next[k]
				v := fmt.Sprint("v", rng.IntN(1000))
				switch {
				case !ok:
					b = append(b, change{"+I", k, v})
					next[k] = v
				case rng.IntN(3) == 0:
					b = append(b, change{"-D", k, old})
					delete(next, k)
				default:
					b = append(b, change{"-U", k, old}, change{"+U", k, v})
					next[k] = v
				}
			}
			bs = append(bs, b)
		}
		kindType := arrow.DataType(arrow.BinaryTypes.String)
		if round%2 == 1 {
			kindType = arrow.BinaryTypes.LargeString
		}
		bad := round%5 == 4
		if bad {
			// A bad row kind in the last batch: the ingest fails whole.
			last := bs[len(bs)-1]
			last[rng.IntN(len(last))].kind = []string{"X", "", "+X", "D"}[rng.IntN(4)]
		}
		_, err := ingest(ctx, s, "cdc", engine.IngestAppend, changeStream(mem, kindType, bs))
		switch {
		case bad && (err == nil || !strings.Contains(err.Error(), "a changelog row is +I, -U, +U or -D")):
			t.Fatalf("seed %d: round %d: a bad row kind: %v", seed, round, err)
		case !bad && err != nil:
			t.Fatalf("seed %d: round %d: %v", seed, round, err)
		case !bad:
			model = next
		}
		check(fmt.Sprintf("after round %d", round))
	}

	// A changelog needs an existing table with a primary key.
	mustExec(t, s, "CREATE TABLE plain (k BIGINT NOT NULL, v STRING)")
	one := [][]change{{{"+I", 1, "a"}}}
	for _, c := range []struct {
		table string
		mode  engine.IngestMode
		want  string
	}{
		{"plain", engine.IngestAppend, "has no primary key"},
		{"cdc", engine.IngestReplace, "applied by key to an existing table"},
		{"fresh", engine.IngestCreate, "applied by key to an existing table"},
		{"fresh", engine.IngestCreateAppend, "applied by key to an existing table"},
	} {
		if _, err := ingest(ctx, s, c.table, c.mode, changeStream(mem, arrow.BinaryTypes.String, one)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("changelog into %s (mode %v): %v, want %q", c.table, c.mode, err, c.want)
		}
	}
	check("after the refused ingests")
	if got := rowSet(t, s, "SELECT count(*) FROM plain"); !slices.Equal(got, []string{"0"}) {
		t.Fatalf("plain after a refused changelog: %v", got)
	}
}
