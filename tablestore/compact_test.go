package tablestore

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/tablestore/maintenance"
	"github.com/flightd/flightd/tablestore/meta"
)

func TestBackgroundCompaction(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "c"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"num-sorted-run.compaction-trigger": "3"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 20 {
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{i % 7, fmt.Sprint("v", i)}})
	}
	for k := range 7 {
		last := k + 14
		if last >= 20 {
			last -= 7
		}
		want = append(want, fmt.Sprintf("%d|v%d", k, last))
	}
	// Runs never exceed the stop trigger (3 + 3) after a commit returns.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := tbl.Stats(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Files <= 3 || time.Now().After(deadline) {
			if st.Files > 6 {
				t.Fatalf("compaction did not keep up: %d files", st.Files)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
	if err := tbl.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	st, _ := tbl.Stats(ctx, 0)
	if st.Files != 1 || st.Rows != 7 {
		t.Fatalf("after full compaction: %+v", st)
	}
	eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
	if err := tbl.CompactionError(); err != nil {
		t.Fatal(err)
	}
}

// TestWriterStall: a commit that leaves a bucket at the stop trigger
// (trigger + 3 sorted runs) waits for compaction before returning.
func TestWriterStall(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "s"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"num-sorted-run.compaction-trigger": "2"}}, false)
	must(t, err)
	for i := range 30 {
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{i, "v"}, {i + 1000, "w"}})
		sn, err := tbl.st.resolveSnapshot(0)
		must(t, err)
		live, err := tbl.st.liveFiles(sn)
		must(t, err)
		if runs := len(maintenance.SortedRuns(live)); runs >= 5 {
			t.Fatalf("commit %d returned with %d sorted runs (stop trigger 5)", i, runs)
		}
	}
	if got := scanAll(t, tbl, ScanSpec{}); len(got) != 60 {
		t.Fatalf("%d rows, want 60", len(got))
	}
}

func TestFastKeySortMatchesComparisonSort(t *testing.T) {
	mem := newMem(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 7))
	sch, err := newTableSchema(TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "3"}}, 0)
	must(t, err)
	b := array.NewInt64Builder(mem)
	const n = 5000
	for range n {
		switch rng.IntN(3) {
		case 0:
			b.Append(rng.Int64N(20) - 10)
		case 1:
			b.Append(rng.Int64())
		default:
			b.Append(-rng.Int64())
		}
	}
	keys := b.NewInt64Array()
	b.Release()
	defer keys.Release()
	buckets := make([]int32, n)
	for i := range buckets {
		buckets[i] = int32(rng.IntN(3))
	}
	got, ok := fastKeySort(sch, func(string) arrow.Array { return keys }, buckets, nil)
	if !ok {
		t.Fatal("fast path not taken")
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	v := keys.Int64Values()
	slices.SortStableFunc(want, func(a, b int) int {
		if buckets[a] != buckets[b] {
			return int(buckets[a] - buckets[b])
		}
		return cmp.Compare(v[a], v[b])
	})
	if !slices.Equal(got, want) {
		t.Fatal("radix order differs from the comparison sort")
	}
}

// TestFirstRowLevel0AtCommit: Paimon's readers skip level 0 of first-row
// tables and read the levels above without merging. After every commit of
// random writes (2 buckets, random compaction trigger) no bucket may keep
// a level-0 file or more than one run above it, and the table reads the
// first value written for each key.
func TestFirstRowLevel0AtCommit(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "fr"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"bucket": "2", "merge-engine": "first-row",
			"num-sorted-run.compaction-trigger": fmt.Sprint(2 + rng.IntN(4))}}, false)
	must(t, err)
	first := map[int]string{}
	for c := range 20 {
		var rows [][]any
		seen := map[int]bool{}
		for range 1 + rng.IntN(30) {
			k := rng.IntN(60)
			if seen[k] {
				continue
			}
			seen[k] = true
			v := fmt.Sprintf("c%d-%d", c, rng.IntN(1000))
			rows = append(rows, []any{k, v})
			if _, ok := first[k]; !ok {
				first[k] = v
			}
		}
		writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
		sn, err := tbl.st.resolveSnapshot(0)
		must(t, err)
		live, err := tbl.st.liveFiles(sn)
		must(t, err)
		buckets := map[int][]*meta.ManifestEntry{}
		for _, f := range live {
			buckets[f.Bucket] = append(buckets[f.Bucket], f)
		}
		for b, files := range buckets {
			runs := maintenance.SortedRuns(files)
			if len(runs) != 1 || runs[0].Level == 0 {
				t.Fatalf("commit %d: bucket %d has %d runs, the newest at level %d", c, b, len(runs), runs[0].Level)
			}
		}
		var want []string
		for k, v := range first {
			want = append(want, fmt.Sprintf("%d|%s", k, v))
		}
		eqRows(t, scanAll(t, tbl, ScanSpec{}), want...)
	}
	must(t, tbl.CompactionError())
}
