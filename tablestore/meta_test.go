package tablestore

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore/merge"
)

var metaSeed = flag.Uint64("seed", 0, "seed for randomized tests (0: time based)")

func testSeed(t *testing.T) uint64 {
	seed := *metaSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: go test -run '%s' -seed=%d", seed, t.Name(), seed)
		}
	})
	return seed
}

// metaRow is a row of the model table (p INT, k BIGINT, v STRING, s BIGINT).
type metaRow struct {
	p, k, s int64
	v       *string
}

func (r metaRow) String() string {
	v := "NULL"
	if r.v != nil {
		v = *r.v
	}
	return fmt.Sprintf("%d|%d|%s|%d", r.p, r.k, v, r.s)
}

func (r metaRow) get(col string) any {
	switch col {
	case "p":
		return r.p
	case "k":
		return r.k
	case "s":
		return r.s
	}
	if r.v == nil {
		return nil
	}
	return *r.v
}

type metaKey struct{ p, k int64 }

type metaVersion struct {
	row     metaRow
	s, seq  int64
	retract bool
	kind    RowKind
}

var metaSchema = arrow.NewSchema([]arrow.Field{
	{Name: "p", Type: arrow.PrimitiveTypes.Int32},
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "s", Type: arrow.PrimitiveTypes.Int64},
}, nil)

type metaConfig struct {
	name        string
	partitioned bool
	seqField    bool
	opts        map[string]string
}

// engine and producer return the config's merge engine and changelog
// producer.
func (c metaConfig) engine() string {
	if e, ok := c.opts["merge-engine"]; ok {
		return e
	}
	return merge.Deduplicate
}

func (c metaConfig) producer() string {
	if p, ok := c.opts["changelog-producer"]; ok {
		return p
	}
	return producerNone
}

var metaConfigs = []metaConfig{
	{name: "plain", opts: map[string]string{}},
	{name: "buckets", opts: map[string]string{"bucket": "3", "file.row-group-rows": "7"}},
	{name: "partitioned", partitioned: true, opts: map[string]string{"bucket": "2", "num-sorted-run.compaction-trigger": "2"}},
	{name: "seqfield", seqField: true, opts: map[string]string{"sequence.field": "s", "write-buffer-size": "2kb"}},
	{name: "expiring", opts: map[string]string{"snapshot.num-retained.min": "3", "snapshot.time-retained": "1ms", "num-sorted-run.compaction-trigger": "3"}},
	{name: "writeonly", partitioned: true, opts: map[string]string{"write-only": "true", "write-buffer-size": "1kb", "file.compression": "zstd"}},
	{name: "input", opts: map[string]string{"changelog-producer": "input", "write-buffer-size": "2kb"}},
	{name: "partialupdate", opts: map[string]string{"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true", "changelog-producer": "lookup", "bucket": "2", "write-buffer-size": "2kb"}},
	{name: "aggregation", partitioned: true, opts: map[string]string{"merge-engine": "aggregation", "fields.s.aggregate-function": "sum", "fields.v.aggregate-function": "last_value",
		"aggregation.remove-record-on-delete": "true", "changelog-producer": "full-compaction", "full-compaction.delta-commits": "3", "num-sorted-run.compaction-trigger": "3"}},
	{name: "firstrow", opts: map[string]string{"merge-engine": "first-row", "changelog-producer": "lookup", "bucket": "2", "file.row-group-rows": "5"}},
}

func TestMetamorphic(t *testing.T) {
	steps := 120
	if raceEnabled {
		steps = 60 // under -race a shorter walk (background compaction still runs beside it); the plain pass takes 120 steps
	}
	for _, cfg := range metaConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			seed := testSeed(t)
			runMeta(t, cfg, seed, steps)
		})
	}
}

func runMeta(t *testing.T, cfg metaConfig, seed uint64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	mem := newMem(t)
	dir := t.TempDir()
	batchSize := 1 + rng.IntN(64)
	// The column cache: off, tiny (constant eviction) or ample.
	cacheBytes := []int64{0, 16 << 10, 64 << 20}[rng.IntN(3)]
	t.Logf("batch size %d, cache %d bytes", batchSize, cacheBytes)
	open := func() *Store {
		s, err := Open(ctx, NewLocalFS(), dir, Options{Mem: mem, BatchSize: batchSize, CacheBytes: cacheBytes})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	defer func() { s.Close() }()
	if err := s.CreateDatabase(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	id := Ident{"db", "m"}
	pk := []string{"k"}
	var parts []string
	if cfg.partitioned {
		pk = []string{"p", "k"}
		parts = []string{"p"}
	}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: metaSchema, PrimaryKey: pk, PartitionKeys: parts, Options: cfg.opts}, false)
	if err != nil {
		t.Fatal(err)
	}
	model := map[metaKey]metaVersion{}
	type pendingVersion struct {
		key metaKey
		ver metaVersion
	}
	var pending []pendingVersion
	history := map[int64][]string{0: nil}
	var seq int64
	w := tbl.NewWrite(WriteOptions{})
	live := func(m map[metaKey]metaVersion) []string {
		var out []string
		for _, v := range m {
			if !v.retract {
				out = append(out, v.row.String())
			}
		}
		slices.Sort(out)
		return out
	}
	// apply is the model of the merge engine: one version at a time.
	apply := func(m map[metaKey]metaVersion, key metaKey, nv metaVersion) {
		old, ok := m[key]
		live := ok && !old.retract
		switch cfg.engine() {
		case merge.FirstRow:
			if live {
				return
			}
		case merge.PartialUpdate: // remove-record-on-delete
			switch {
			case nv.kind == UpdateBefore:
				return
			case live && !nv.retract:
				if nv.row.v == nil {
					nv.row.v = old.row.v
				}
			}
		case merge.Aggregation: // s sum, v last_value, remove-record-on-delete
			if nv.kind == Delete {
				break
			}
			if nv.retract {
				nv.row.v, nv.row.s, nv.retract = nil, -nv.row.s, false
			}
			if live {
				nv.row.s += old.row.s
			}
		default:
			if ok && cfg.seqField && (old.s > nv.s || (old.s == nv.s && old.seq > nv.seq)) {
				return
			}
		}
		m[key] = nv
	}
	for step := 0; step < steps; step++ {
		switch op := rng.IntN(100); {
		case op < 45: // put
			n := 1 + rng.IntN(20)
			rows := make([][]any, n)
			kinds := make([]RowKind, n)
			for i := range rows {
				r := metaRow{k: int64(rng.IntN(40)), s: int64(rng.IntN(1000))}
				if cfg.partitioned {
					r.p = int64(rng.IntN(3))
				}
				if rng.IntN(5) > 0 {
					v := fmt.Sprintf("v%d", rng.IntN(100))
					r.v = &v
				}
				kinds[i] = []RowKind{Insert, UpdateAfter, Delete, UpdateBefore}[rng.IntN(4)]
				if cfg.seqField || cfg.engine() == merge.FirstRow {
					// Deletes with a sequence field depend on compaction
					// timing; first-row takes none.
					kinds[i] = Insert
				}
				var v any
				if r.v != nil {
					v = *r.v
				}
				rows[i] = []any{int(r.p), int(r.k), v, int(r.s)}
				seq++
				pending = append(pending, pendingVersion{metaKey{r.p, r.k}, metaVersion{row: r, s: r.s, seq: seq, retract: kinds[i].IsRetract(), kind: kinds[i]}})
			}
			b := makeBatch(t, mem, metaSchema, rows)
			err := w.WriteKinds(ctx, b, kinds)
			b.Release()
			if err != nil {
				t.Fatalf("step %d: write: %v", step, err)
			}
		case op < 65: // commit
			snap, err := w.Commit(ctx)
			if err != nil {
				t.Fatalf("step %d: commit: %v", step, err)
			}
			for _, p := range pending {
				apply(model, p.key, p.ver)
			}
			pending = nil
			history[snap] = live(model)
		case op < 70: // abort
			w.Abort()
			pending = nil
		case op < 78: // compact
			if err := tbl.Compact(ctx, rng.IntN(2) == 0); err != nil {
				t.Fatalf("step %d: compact: %v", step, err)
			}
		case op < 83: // reopen (uncommitted rows are lost)
			w.Abort()
			pending = nil
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = open()
			if tbl, err = s.Table(ctx, id); err != nil {
				t.Fatalf("step %d: reopen: %v", step, err)
			}
			w = tbl.NewWrite(WriteOptions{})
		case op < 90: // time travel
			latest, err := tbl.LatestSnapshotID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if latest == 0 {
				continue
			}
			snap := 1 + rng.Int64N(latest)
			// Compaction snapshots keep the state of the commit before them.
			at := snap
			for _, ok := history[at]; !ok; _, ok = history[at] {
				at--
			}
			sc, err := tbl.NewScan(ctx, ScanSpec{SnapshotID: snap})
			if errors.Is(err, ErrSnapshotNotFound) {
				if earliest, _ := tbl.st.earliestSnapshotID(); snap < earliest {
					continue // expired
				}
			}
			if err != nil {
				t.Fatalf("step %d: snapshot %d: %v", step, snap, err)
			}
			got := readScan(t, sc)
			if !slices.Equal(got, history[at]) {
				t.Fatalf("step %d: snapshot %d:\n got  %q\n want %q", step, snap, got, history[at])
			}
		default: // filtered, projected scan of the latest snapshot
			pred := randPred(rng, 2)
			sc, err := tbl.NewScan(ctx, ScanSpec{Filter: pred})
			if err != nil {
				t.Fatalf("step %d: scan %s: %v", step, pred, err)
			}
			got := readScan(t, sc)
			var gotF, want []string
			for _, r := range got {
				if evalRow(pred, parseMetaRow(r)) {
					gotF = append(gotF, r)
				}
			}
			for _, v := range model {
				if !v.retract && evalRow(pred, v.row) {
					want = append(want, v.row.String())
				}
			}
			slices.Sort(want)
			if !slices.Equal(gotF, want) {
				t.Fatalf("step %d: filter %s:\n got  %q\n want %q", step, pred, gotF, want)
			}
			// Projection: same rows, fewer columns.
			proj := scanAll(t, tbl, ScanSpec{Columns: []string{"v", "k"}})
			var wantP []string
			for _, r := range live(model) {
				c := strings.Split(r, "|")
				wantP = append(wantP, c[2]+"|"+c[1])
			}
			slices.Sort(wantP)
			if !slices.Equal(proj, wantP) {
				t.Fatalf("step %d: projection:\n got  %q\n want %q", step, proj, wantP)
			}
		}
	}
	w.Abort()
	if err := tbl.CompactionError(); err != nil {
		t.Fatalf("background compaction: %v", err)
	}
	if p := cfg.producer(); p != producerNone {
		if p == producerFullCompaction {
			must(t, tbl.Compact(ctx, true))
		}
		checkChangelogs(t, tbl, p, 1)
	}
	if _, ok := cfg.opts["snapshot.time-retained"]; ok {
		// Quiesce background compaction, which adds snapshots.
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open()
		if tbl, err = s.Table(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.ExpireSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		ids, err := tbl.st.listSnapshots()
		if err != nil || len(ids) > 3 {
			t.Fatalf("expiry left snapshots %v (%v)", ids, err)
		}
	}

}

func parseMetaRow(s string) metaRow {
	c := strings.Split(s, "|")
	var r metaRow
	fmt.Sscan(c[0], &r.p)
	fmt.Sscan(c[1], &r.k)
	fmt.Sscan(c[3], &r.s)
	if c[2] != "NULL" {
		v := c[2]
		r.v = &v
	}
	return r
}

func randPred(rng *rand.Rand, depth int) Predicate {
	if depth > 0 && rng.IntN(3) == 0 {
		a, b := randPred(rng, depth-1), randPred(rng, depth-1)
		switch rng.IntN(3) {
		case 0:
			return And{a, b}
		case 1:
			return Or{a, b}
		}
		return Not{a}
	}
	switch rng.IntN(4) {
	case 0:
		return IsNull{Column: "v"}
	case 1:
		return In{Column: "k", Values: []scalar.Scalar{scalar.NewInt64Scalar(int64(rng.IntN(40))), scalar.NewInt64Scalar(int64(rng.IntN(40)))}}
	case 2:
		return Compare{Column: "v", Op: CmpOp(rng.IntN(6)), Value: scalar.NewStringScalar(fmt.Sprintf("v%d", rng.IntN(100)))}
	}
	col := []string{"p", "k", "s"}[rng.IntN(3)]
	return Compare{Column: col, Op: CmpOp(rng.IntN(6)), Value: scalar.NewInt64Scalar(int64(rng.IntN(40)))}
}

// evalRow evaluates p with SQL three-valued logic; true only when TRUE.
func evalRow(p Predicate, r metaRow) bool {
	v, null := eval3(p, r)
	return v && !null
}

func eval3(p Predicate, r metaRow) (val, null bool) {
	switch p := p.(type) {
	case IsNull:
		return r.get(p.Column) == nil, false
	case Compare:
		x := r.get(p.Column)
		if x == nil {
			return false, true
		}
		c := compareGo(x, p.Value)
		return [...]bool{c == 0, c != 0, c < 0, c <= 0, c > 0, c >= 0}[p.Op], false
	case In:
		x := r.get(p.Column)
		if x == nil {
			return false, true
		}
		for _, v := range p.Values {
			if compareGo(x, v) == 0 {
				return true, false
			}
		}
		return false, false
	case And:
		res, anyNull := true, false
		for _, c := range p {
			v, n := eval3(c, r)
			if !n && !v {
				return false, false
			}
			anyNull = anyNull || n
		}
		return res, anyNull
	case Or:
		anyNull := false
		for _, c := range p {
			v, n := eval3(c, r)
			if !n && v {
				return true, false
			}
			anyNull = anyNull || n
		}
		return false, anyNull
	case Not:
		v, n := eval3(p.Pred, r)
		return !v, n
	}
	panic("unknown predicate")
}

func compareGo(x any, s scalar.Scalar) int {
	switch x := x.(type) {
	case int64:
		y := s.(*scalar.Int64).Value
		return cmp.Compare(x, y)
	case string:
		return strings.Compare(x, string(s.(*scalar.String).Data()))
	}
	panic("type")
}

var _ memory.Allocator = (*memory.CheckedAllocator)(nil)
