package stream

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// feed is an input whose chunks a test sends as it goes (Next blocks
// until one comes); it releases the batches it handed out at Close.
type feed struct {
	schema *arrow.Schema
	ch     chan Chunk
	sent   []arrow.RecordBatch
}

func newFeed(schema *arrow.Schema) *feed { return &feed{schema: schema, ch: make(chan Chunk, 256)} }

func (f *feed) Schema() *arrow.Schema      { return f.schema }
func (f *feed) Open(context.Context) error { return nil }
func (f *feed) Next(ctx context.Context) (Chunk, error) {
	select {
	case c := <-f.ch:
		return c, nil
	case <-ctx.Done():
		return Chunk{}, ctx.Err()
	}
}

func (f *feed) Close() error {
	for _, b := range f.sent {
		b.Release()
	}
	f.sent = nil
	return nil
}

// send sends a batch of rows (kind, k, x); x goes to a timestamp column
// as microseconds.
func (f *feed) send(mem memory.Allocator, pos Pos, rows [][3]any) {
	b := array.NewRecordBuilder(mem, f.schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r[0].(string))
		b.Field(1).(*array.Int64Builder).Append(r[1].(int64))
		switch x := b.Field(2).(type) {
		case *array.TimestampBuilder:
			x.Append(arrow.Timestamp(r[2].(int64)))
		default:
			x.(*array.Int64Builder).Append(r[2].(int64))
		}
	}
	batch := b.NewRecordBatch()
	f.sent = append(f.sent, batch)
	f.ch <- Chunk{Batch: batch, Pos: pos}
}

// changes makes random changes of an input whose live rows are live: +I
// of new rows, -D of live ones.
func changes(rng *rand.Rand, live *[][2]int64, keys int64) [][3]any {
	var rows [][3]any
	for range 1 + rng.Intn(8) {
		if len(*live) > 0 && rng.Intn(3) == 0 {
			i := rng.Intn(len(*live))
			r := (*live)[i]
			*live = slices.Delete(*live, i, i+1)
			rows = append(rows, [3]any{"-D", r[0], r[1]})
			continue
		}
		r := [2]int64{rng.Int63n(keys), rng.Int63n(20)}
		*live = append(*live, r)
		rows = append(rows, [3]any{"+I", r[0], r[1]})
	}
	return rows
}

// insertEvents makes random inserts of an event-time input at step n: event
// times (microseconds) from 10n - 25 on, a sixth of them late for the
// watermark of step n-1 (10(n-1) - 10).
func insertEvents(rng *rand.Rand, n, keys int64) [][3]any {
	var rows [][3]any
	for range 1 + rng.Intn(8) {
		rows = append(rows, [3]any{"+I", rng.Int63n(keys), 10*n - 25 + rng.Int63n(30)})
	}
	return rows
}

// canonicalState is what a whole save of op holds, as sets: its records, and
// each keyed state's entries by key (the order of keys is not defined).
type canonicalState struct {
	plain []string
	keyed []map[string]string
}

func canonical(t *testing.T, op Checkpointer, canon func(key string, val []byte) string) canonicalState {
	t.Helper()
	w := &StateWriter{}
	if err := op.SaveState(w); err != nil {
		t.Fatal(err)
	}
	segs, err := sectionSegments(bytes.Join(w.pieces(), nil))
	if err != nil {
		t.Fatal(err)
	}
	var s canonicalState
	for i, seg := range segs {
		if i%2 == 0 {
			s.plain = append(s.plain, string(seg))
			continue
		}
		m := map[string]string{}
		if err := eachEntry(seg, false, func(k string, v []byte, _ bool) error {
			m[k] = string(v)
			if canon != nil {
				m[k] = canon(k, v)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		s.keyed = append(s.keyed, m)
	}
	return s
}

type deltaCase struct {
	name   string
	inputs int
	build  func(ec *exec.Context, in []Operator, b *Budget) (Operator, error)
	// canon, when set, gives an entry's value in a form that does not
	// depend on map order (an aggregate's min and max keep their values
	// in a map, encoded in its order): decoded by scratch.
	canon func(scratch Operator, key string, val []byte) string
	// events: the inputs only insert, x is an event time (tsSchema), and
	// markers carry a watermark 10 µs behind the step's latest times.
	events bool
	// noSpill: the operator's state does not move to disk, so it runs
	// without a budget (past one it fails: TestOverPastBudgetFails).
	noSpill bool
}

// canonGroup is an aggregate group's state with min and max's values
// sorted.
func canonGroup(scratch Operator, key string, val []byte) string {
	a := scratch.(*Aggregate)
	g, err := a.decodeGroup(key, val)
	if err != nil {
		return "corrupt: " + err.Error()
	}
	return fmt.Sprint(g.vals, g.rows, g.emitted) + canonAccs(g.accs)
}

// canonOver is an OVER aggregation's partition with min and max's values
// sorted.
func canonOver(scratch Operator, key string, val []byte) string {
	p, err := scratch.(*OverAggregate).decodePart(key, val)
	if err != nil {
		return "corrupt: " + err.Error()
	}
	return fmt.Sprint(p.start, p.frame, p.waiting, p.bytes) + canonAccs(p.accs)
}

// canonAccs prints accumulators, min and max's values sorted.
func canonAccs(accs []accumulator) string {
	var s string
	for _, acc := range accs {
		if m, ok := acc.(*minMax); ok {
			var vals []string
			for _, e := range m.vals {
				vals = append(vals, fmt.Sprint(e.v, e.n))
			}
			slices.Sort(vals)
			s += fmt.Sprint(vals)
			continue
		}
		s += string(acc.encode(nil))
	}
	return s
}

var kxSchema = withKind([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
})

var tsSchema = withKind([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
})

func deltaCases() []deltaCase {
	join := func(kind exec.JoinType) deltaCase {
		return deltaCase{name: "join-" + kind.String(), inputs: 2, build: func(ec *exec.Context, in []Operator, b *Budget) (Operator, error) {
			return NewJoin(ec, in[0], in[1], JoinSpec{Kind: kind, LeftKeys: []exec.Expr{col(1, "k")}, RightKeys: []exec.Expr{col(1, "k")}}, b)
		}}
	}
	return []deltaCase{
		join(exec.InnerJoin), join(exec.LeftJoin), join(exec.FullJoin), join(exec.SemiJoin),
		{name: "aggregate", inputs: 1, build: func(ec *exec.Context, in []Operator, b *Budget) (Operator, error) {
			return NewAggregate(ec, in[0], []exec.Expr{col(1, "k")}, []string{"k"}, []AggSpec{
				{Func: "count_star", Type: arrow.PrimitiveTypes.Int64, Name: "c"},
				{Func: "sum", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "s"},
				{Func: "max", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "m"},
			}, b)
		}, canon: canonGroup},
		{name: "global-aggregate", inputs: 1, build: func(ec *exec.Context, in []Operator, b *Budget) (Operator, error) {
			return NewAggregate(ec, in[0], nil, nil, []AggSpec{{Func: "max", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "m"}}, b)
		}, canon: canonGroup},
		{name: "normalize", inputs: 1, build: func(ec *exec.Context, in []Operator, b *Budget) (Operator, error) {
			return NewNormalize(ec, in[0], []int{1}, b)
		}},
		{name: "rank", inputs: 1, build: func(ec *exec.Context, in []Operator, b *Budget) (Operator, error) {
			return NewRank(ec, in[0], RankSpec{Partition: []exec.Expr{col(1, "k")}, Order: []exec.SortKey{{Expr: col(2, "x"), Descending: true}}, Lo: 1, Hi: 3, Number: true}, b)
		}},
		{name: "dense-rank", inputs: 1, build: func(ec *exec.Context, in []Operator, b *Budget) (Operator, error) {
			return NewRank(ec, in[0], RankSpec{Func: DenseRank, Partition: []exec.Expr{col(1, "k")}, Order: []exec.SortKey{{Expr: col(2, "x"), Descending: true}}, Lo: 1, Hi: 2, Number: true}, b)
		}},
		{name: "dedup", inputs: 1, events: true, build: func(ec *exec.Context, in []Operator, b *Budget) (Operator, error) {
			ts := exec.NewColumn(2, arrow.FixedWidthTypes.Timestamp_us, "x")
			return NewRank(ec, in[0], RankSpec{Partition: []exec.Expr{col(1, "k")}, Order: []exec.SortKey{{Expr: ts, Descending: true}}, Lo: 1, Hi: 1, InsertOnly: "t"}, b)
		}},
		{name: "over", inputs: 1, events: true, build: func(ec *exec.Context, in []Operator, b *Budget) (Operator, error) {
			ts := exec.NewColumn(2, arrow.FixedWidthTypes.Timestamp_us, "x")
			return NewOverAggregate(ec, in[0], OverSpec{Partition: []exec.Expr{col(1, "k")}, Rowtime: ts, Aggs: []AggSpec{
				{Func: "count_star", Type: arrow.PrimitiveTypes.Int64, Name: "c"},
				{Func: "max", Arg: ts, Type: arrow.FixedWidthTypes.Timestamp_us, Name: "m"},
				{Func: "min", Arg: ts, Type: arrow.FixedWidthTypes.Timestamp_us, Name: "n"},
			}, Frames: []OverFrame{{Rows: true, Preceding: 2}, {Preceding: 15}, {Unbounded: true}}}, b)
		}, canon: canonOver, noSpill: true},
	}
}

// TestDeltaCheckpoints: for each operator that saves deltas, over random
// changes (some runs spilling past a small budget), a checkpoint at every
// step, some of them not written (the next is then a base): after any
// written one, the operator restored from its chain (a base and the
// deltas after it, read back as a job reads them, with the files before
// the chain's base deleted) saves the same state whole as the operator
// itself: the same records and the same entries, byte for byte (an
// aggregate's min and max values in sorted order: they are encoded in a
// map's). A
// flipped byte in any file of the chain, a file of another chain in its
// place, or other positions make Load fail.
func TestDeltaCheckpoints(t *testing.T) {
	rng := seeded(t)
	for _, dc := range deltaCases() {
		t.Run(dc.name, func(t *testing.T) {
			runs := 6
			if raceEnabled {
				runs = 2 // under -race one run in memory and one spilling; the plain pass runs 6
			}
			for run := range runs {
				limit := int64(0)
				if run%2 == 1 && !dc.noSpill {
					limit = 1 << 10
				}
				runDeltaCase(t, rng, dc, limit)
			}
		})
	}
}

func runDeltaCase(t *testing.T, rng *rand.Rand, dc deltaCase, limit int64) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	newOp := func() (Operator, []*feed) {
		ec := exec.NewContext(mem)
		ec.TempDir = t.TempDir()
		feeds := make([]*feed, dc.inputs)
		ins := make([]Operator, dc.inputs)
		for i := range feeds {
			feeds[i] = newFeed(kxSchema)
			if dc.events {
				feeds[i] = newFeed(tsSchema)
			}
			ins[i] = feeds[i]
		}
		op, err := dc.build(ec, ins, NewBudget(limit))
		if err != nil {
			t.Fatal(err)
		}
		return op, feeds
	}
	var canon func(string, []byte) string
	if dc.canon != nil {
		scratch, _ := newOp()
		defer scratch.Close()
		canon = func(k string, v []byte) string { return dc.canon(scratch, k, v) }
	}
	op, feeds := newOp()
	cp := NewCheckpoints(0)
	top, err := cp.Add(op)
	if err != nil {
		t.Fatal(err)
	}
	if err := top.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer top.Close()
	live := make([][][2]int64, dc.inputs)
	keys := int64(3 + rng.Intn(40))
	files := map[int64][]byte{}
	var snap, restores, corruptions int64
	var lastPos Pos
	for n := int64(1); n <= 40; n++ {
		cp.Request(n)
		for i, f := range feeds {
			pos := make(Pos, dc.inputs)
			pos[i] = n
			for range rng.Intn(4) {
				if dc.events {
					f.send(mem, pos, insertEvents(rng, n, keys))
					continue
				}
				f.send(mem, pos, changes(rng, &live[i], keys))
			}
			m := Chunk{Pos: pos, Barrier: n}
			if dc.events {
				m.Watermark = time.UnixMicro(10*n - 10)
			}
			f.ch <- m
		}
		var marker Chunk
		for marker.Barrier != n {
			if marker, err = top.Next(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if rng.Intn(6) == 0 {
			cp.Discard(n) // not written: the next one is a base
			continue
		}
		pieces, err := cp.Encode(n, marker.Pos)
		if err != nil {
			t.Fatal(err)
		}
		snap += 1 + rng.Int63n(3)
		files[snap] = bytes.Join(pieces, nil)
		cp.Written(n, snap, 0)
		lastPos = marker.Pos
		for s := range files {
			if s < cp.ChainStart() {
				delete(files, s) // as the job does
			}
		}
		if rng.Intn(3) != 0 {
			continue
		}
		read := func(s int64) ([]byte, error) {
			if b, ok := files[s]; ok {
				return b, nil
			}
			return nil, fmt.Errorf("no checkpoint %d", s)
		}
		restored, _ := newOp()
		c2 := NewCheckpoints(0)
		if err := c2.Load(snap, lastPos, read); err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
		if _, err := c2.Add(restored); err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
		want, got := canonical(t, op.(Checkpointer), canon), canonical(t, restored.(Checkpointer), canon)
		if !slices.Equal(got.plain, want.plain) || !slices.EqualFunc(got.keyed, want.keyed, func(a, b map[string]string) bool { return maps.Equal(a, b) }) {
			t.Fatalf("step %d: restored from checkpoint %d (chain from %d): %d keys, want %d", n, snap, cp.ChainStart(), len(got.keyed[0]), len(want.keyed[0]))
		}
		if err := restored.Close(); err != nil {
			t.Fatal(err)
		}
		restores++
		// Damaged chains are refused before anything is restored.
		chain := slices.Sorted(maps.Keys(files))
		victim := chain[rng.Intn(len(chain))]
		good := files[victim]
		bad := bytes.Clone(good)
		bad[rng.Intn(len(bad))] ^= byte(1 + rng.Intn(255))
		files[victim] = bad
		if err := NewCheckpoints(0).Load(snap, lastPos, read); err == nil {
			t.Fatalf("step %d: a chain with a flipped byte in checkpoint %d loaded", n, victim)
		}
		files[victim] = good
		if victim != snap {
			// A file of the same name from another chain: a base of its
			// own, at other positions.
			other := NewCheckpoints(0)
			other.mu.Lock()
			other.kinds, other.deltaOps = cp.kinds, cp.deltaOps
			other.mu.Unlock()
			other.put(1, 0, savedState{pieces: [][]byte{files[victim]}}, time.Now())
			if foreign, err := other.Encode(1, lastPos); err == nil {
				files[victim] = bytes.Join(foreign, nil)
				if err := NewCheckpoints(0).Load(snap, lastPos, read); err == nil {
					t.Fatalf("step %d: a chain with checkpoint %d of another chain loaded", n, victim)
				}
				files[victim] = good
				corruptions++
			}
		}
		if err := NewCheckpoints(0).Load(snap, Pos{lastPos[0] + 1}, read); err == nil {
			t.Fatal("a checkpoint loaded for other positions")
		}
	}
	st := cp.Stats()
	if st.Bases < 2 || st.Count-st.Bases < 5 || restores == 0 {
		t.Fatalf("%d checkpoints, %d bases, %d restores: the chains were not exercised", st.Count, st.Bases, restores)
	}
	t.Logf("%s (budget %d): %d checkpoints, %d bases, %d restores, %d foreign files refused", dc.name, limit, st.Count, st.Bases, restores, corruptions)
}
