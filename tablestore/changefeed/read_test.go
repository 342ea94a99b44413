package changefeed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// peakAllocator records the most bytes allocated at once.
type peakAllocator struct {
	memory.Allocator
	cur, peak atomic.Int64
}

func (a *peakAllocator) add(n int) {
	c := a.cur.Add(int64(n))
	for p := a.peak.Load(); c > p && !a.peak.CompareAndSwap(p, c); p = a.peak.Load() {
	}
}

func (a *peakAllocator) Allocate(n int) []byte { a.add(n); return a.Allocator.Allocate(n) }
func (a *peakAllocator) Free(b []byte)         { a.add(-len(b)); a.Allocator.Free(b) }
func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	a.add(n - len(b))
	return a.Allocator.Reallocate(n, b)
}

// unitReader returns the batches unit*1000+i, i < n, borrowed until its
// next call, and fails where told.
type unitReader struct {
	mem                 memory.Allocator
	unit, n, i          int
	failNext, failClose bool
	cur                 arrow.RecordBatch
	open                *atomic.Int64 // readers not closed yet
}

var errUnit = errors.New("unit failed")

func (r *unitReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.i == r.n {
		if r.failNext {
			return nil, fmt.Errorf("unit %d: %w", r.unit, errUnit)
		}
		return nil, io.EOF
	}
	r.cur = exactBatch(r.mem, int64(r.unit*1000+r.i))
	r.i++
	return r.cur, nil
}

func (r *unitReader) Close() error {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.open.Add(-1)
	if r.failClose {
		return fmt.Errorf("unit %d close: %w", r.unit, errUnit)
	}
	return nil
}

type unitPlan struct {
	batches                       int
	failOpen, failNext, failClose bool
}

func randomUnits(rng *rand.Rand, mem memory.Allocator, open *atomic.Int64, failures bool) ([]unitPlan, []Unit[int]) {
	plans := make([]unitPlan, rng.IntN(12))
	units := make([]Unit[int], len(plans))
	for u := range plans {
		p := unitPlan{batches: rng.IntN(7)}
		if failures && rng.IntN(8) == 0 {
			switch rng.IntN(3) {
			case 0:
				p.failOpen = true
			case 1:
				p.failNext = true
			default:
				p.failClose = true
			}
		}
		plans[u] = p
		units[u] = Unit[int]{Meta: u, Open: func(ctx context.Context) (Reader, error) {
			if p.failOpen {
				return nil, fmt.Errorf("unit %d open: %w", u, errUnit)
			}
			open.Add(1)
			return &unitReader{mem: mem, unit: u, n: p.batches, failNext: p.failNext, failClose: p.failClose, open: open}, nil
		}}
	}
	return plans, units
}

// exactBatch is batch(mem, id, 3) allocated at its final size at once, so
// that the peak of allocations counts batches.
func exactBatch(mem memory.Allocator, id int64) arrow.RecordBatch {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(3 * 8)
	copy(arrow.Int64Traits.CastFromBytes(buf.Bytes()), []int64{id * 1000, id*1000 + 1, id*1000 + 2})
	data := array.NewData(arrow.PrimitiveTypes.Int64, 3, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	a := array.MakeFromData(data)
	data.Release()
	defer a.Release()
	return array.NewRecordBatch(schema, []arrow.Array{a}, 3)
}

// firstID names a batch of unitReader: batch(id) holds id*1000+j.
func firstID(b arrow.RecordBatch) int64 { return b.Column(0).(*array.Int64).Value(0) / 1000 }

// firstBatches is what reading plans in order gives up to the first
// failure: the ids of the batches, and whether a unit fails.
func firstBatches(plans []unitPlan) (ids []int64, fails bool) {
	for u, p := range plans {
		if p.failOpen {
			return ids, true
		}
		for i := range p.batches {
			ids = append(ids, int64(u*1000+i))
		}
		if p.failNext || p.failClose {
			return ids, true
		}
	}
	return ids, false
}

// TestPrefetchRandom: Prefetch returns the units' batches in unit order
// (each unit's in its order) up to the first failure, which it returns;
// closed at any point it releases everything and closes every reader it
// opened; and it holds at most prefetchBatches+1 batches per unit in flight
// (its buffer and the one it is handing over) plus the one returned.
// Random units, failures, close points and consumer pauses; seed printed.
func TestPrefetchRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 5))
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	one := exactBatch(checked, 0)
	perBatch := int64(checked.CurrentAlloc())
	one.Release()
	workers := int64(runtime.GOMAXPROCS(0))
	for iter := range 300 {
		mem := &peakAllocator{Allocator: checked}
		var open atomic.Int64
		plans, units := randomUnits(rng, mem, &open, true)
		want, fails := firstBatches(plans)
		stopAt := -1 // close after this many batches
		if rng.IntN(3) == 0 {
			stopAt = rng.IntN(len(want) + 1)
		}
		p := NewPrefetch(units)
		var got []int64
		var err error
		for stopAt < 0 || len(got) < stopAt {
			var b arrow.RecordBatch
			if b, err = p.Next(context.Background()); err != nil {
				break
			}
			got = append(got, firstID(b))
			if rng.IntN(4) == 0 {
				time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
			}
		}
		if cerr := p.Close(); cerr != nil {
			t.Fatalf("iter %d: close: %v", iter, cerr)
		}
		if stopAt < 0 {
			switch {
			case fails && !errors.Is(err, errUnit):
				t.Fatalf("iter %d: plans %+v: want the unit's error, got %v", iter, plans, err)
			case !fails && !errors.Is(err, io.EOF):
				t.Fatalf("iter %d: want io.EOF, got %v", iter, err)
			}
		} else if err != nil && !errors.Is(err, errUnit) {
			t.Fatalf("iter %d: closing after %d batches: %v", iter, stopAt, err)
		}
		if len(got) > len(want) {
			t.Fatalf("iter %d: %d batches, %d before the first failure", iter, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("iter %d: batch %d is %d, want %d", iter, i, got[i], want[i])
			}
		}
		if n := open.Load(); n != 0 {
			t.Fatalf("iter %d: %d readers left open", iter, n)
		}
		if cur := checked.CurrentAlloc(); cur != 0 {
			t.Fatalf("iter %d: %d bytes held after Close", iter, cur)
		}
		if limit := (workers*(prefetchBatches+1) + 1) * perBatch; mem.peak.Load() > limit {
			t.Fatalf("iter %d: %d bytes at once, more than %d (%d workers)", iter, mem.peak.Load(), limit, workers)
		}
	}
}

// TestLoadRandom: Load returns every unit's batches in order as parts with
// the units' metadata, or, when a unit fails, the error and no batch held.
func TestLoadRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 6))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := range 300 {
		var open atomic.Int64
		plans, units := randomUnits(rng, mem, &open, true)
		fails := false
		for _, p := range plans {
			fails = fails || p.failOpen || p.failNext || p.failClose
		}
		parts, err := Load(context.Background(), units)
		if n := open.Load(); n != 0 {
			t.Fatalf("iter %d: %d readers left open", iter, n)
		}
		if fails {
			if !errors.Is(err, errUnit) || parts != nil || mem.CurrentAlloc() != 0 {
				t.Fatalf("iter %d: plans %+v: err %v, %d parts, %d bytes held", iter, plans, err, len(parts), mem.CurrentAlloc())
			}
			continue
		}
		if err != nil || len(parts) != len(plans) {
			t.Fatalf("iter %d: err %v, %d parts of %d units", iter, err, len(parts), len(plans))
		}
		for u, p := range parts {
			if p.Meta != u || len(p.Batches) != plans[u].batches {
				t.Fatalf("iter %d: part %d: meta %d, %d batches, want %d", iter, u, p.Meta, len(p.Batches), plans[u].batches)
			}
			for i, b := range p.Batches {
				if got := firstID(b); got != int64(u*1000+i) {
					t.Fatalf("iter %d: part %d batch %d starts with %d", iter, u, i, got)
				}
				b.Release()
			}
		}
	}
}

// sliceReader returns slices of one nullable array, as the table store's
// readers return slices of decoded chunks; their null counts are unknown
// until first read.
type sliceReader struct {
	whole arrow.Array
	off   int
	cur   arrow.RecordBatch
}

func (r *sliceReader) Next(context.Context) (arrow.RecordBatch, error) {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.off == r.whole.Len() {
		return nil, io.EOF
	}
	s := array.NewSlice(r.whole, int64(r.off), int64(r.off+10))
	defer s.Release()
	r.off += 10
	r.cur = array.NewRecordBatch(schema, []arrow.Array{s}, 10)
	return r.cur, nil
}

func (r *sliceReader) Close() error {
	if r.cur != nil {
		r.cur.Release()
	}
	return nil
}

// TestLoadSettlesSharedBatches: streams on their own goroutines read a
// loaded snapshot's batches at once, and reading them writes nothing (a
// slice's null count was computed on first read, which the race detector
// reported as two change streams' race).
func TestLoadSettlesSharedBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewInt64Builder(mem)
	for i := range 100 {
		if i%3 == 0 {
			b.AppendNull()
		} else {
			b.Append(int64(i))
		}
	}
	whole := b.NewArray()
	b.Release()
	defer whole.Release()
	parts, err := Load(context.Background(), []Unit[int]{{Open: func(context.Context) (Reader, error) {
		return &sliceReader{whole: whole}, nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	nulls := make([]int, 4)
	for g := range nulls {
		wg.Go(func() {
			for _, b := range parts[0].Batches {
				nulls[g] += b.Column(0).NullN()
			}
		})
	}
	wg.Wait()
	for g, n := range nulls {
		if n != 34 {
			t.Errorf("reader %d counted %d nulls, want 34", g, n)
		}
	}
	releaseAll(parts[0].Batches)
}
