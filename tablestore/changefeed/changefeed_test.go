package changefeed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var schema = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)

// batch holds the values id*1000+i, i < n: what a reader sees tells which
// snapshot it came from.
func batch(mem memory.Allocator, id int64, n int) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range n {
		b.Append(id*1000 + int64(i))
	}
	a := b.NewArray()
	defer a.Release()
	return array.NewRecordBatch(schema, []arrow.Array{a}, int64(n))
}

func size(b arrow.RecordBatch) int64 { return b.NumRows() * 8 }

// rows is the snapshot's content as loaded.
func rows(s *Snapshot[int]) []int64 {
	var out []int64
	for _, p := range s.Parts {
		for _, b := range p.Batches {
			out = append(out, b.Column(0).(*array.Int64).Int64Values()...)
		}
	}
	return out
}

func want(id int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = id*1000 + int64(i)
	}
	return out
}

// TestFeedRandom: readers at random positions ask for snapshots in order
// while the newest grow; every answer is either the snapshot's content or
// nil (read it yourself), each snapshot is loaded at most once, a snapshot
// is shared only if no newer one was admitted before its first request,
// the kept bytes stay within the limit, and everything is released.
func TestFeedRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	for round := range 20 {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		limits := Limits{Bytes: int64(rng.IntN(2000)), Snapshots: 1 + rng.IntN(8)}
		f := New[int](limits, size)
		var loads sync.Map // id -> count
		var maxKept atomic.Int64
		load := func(id int64, fail bool) Loader[int] {
			return func(ctx context.Context) ([]Part[int], error) {
				n, _ := loads.LoadOrStore(id, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
				time.Sleep(time.Duration(id%3) * time.Millisecond)
				if fail {
					return nil, errors.New("unreadable")
				}
				// Two parts, as two buckets.
				return []Part[int]{
					{Meta: 0, Batches: []arrow.RecordBatch{batch(mem, id, int(id%5))}},
					{Meta: 1, Batches: []arrow.RecordBatch{batch(mem, id+1_000_000, 1), batch(mem, id+2_000_000, 2)}},
				}, nil
			}
		}
		const last = 60
		failing := map[int64]bool{int64(1 + rng.IntN(last)): true}
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for r := range 16 {
			start := int64(1 + rng.IntN(last/2))
			slow := time.Duration(rng.IntN(3)) * time.Millisecond
			cancelAt := int64(0)
			if r%4 == 0 {
				cancelAt = start + int64(rng.IntN(10))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				for id := start; id <= last; id++ {
					if id == cancelAt {
						cancel()
					}
					s, err := f.Get(ctx, id, fmt.Sprint(id), load(id, failing[id]))
					if err != nil {
						if id >= cancelAt && errors.Is(err, context.Canceled) {
							return
						}
						errs <- fmt.Errorf("snapshot %d: %w", id, err)
						return
					}
					if s == nil {
						continue // read it yourself
					}
					got := rows(s)
					exp := append(append(want(id, int(id%5)), want(id+1_000_000, 1)...), want(id+2_000_000, 2)...)
					if fmt.Sprint(got) != fmt.Sprint(exp) || failing[id] {
						errs <- fmt.Errorf("snapshot %d: got %v, want %v", id, got, exp)
					}
					f.mu.Lock()
					maxKept.Store(max(maxKept.Load(), int64(len(f.kept))))
					if len(f.kept) > 1 && (f.bytes > limits.Bytes || len(f.kept) > limits.Snapshots) {
						errs <- fmt.Errorf("feed keeps %d snapshots, %d bytes over %+v", len(f.kept), f.bytes, limits)
					}
					f.mu.Unlock()
					time.Sleep(slow)
					s.Release()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		loads.Range(func(id, n any) bool {
			if c := n.(*atomic.Int32).Load(); c != 1 {
				t.Fatalf("round %d: snapshot %d loaded %d times", round, id, c)
			}
			return true
		})
		st := f.Stats()
		if st.Shared == 0 {
			t.Fatalf("round %d: nothing shared: %+v", round, st)
		}
		f.Close()
		if s, err := f.Get(context.Background(), last+1, "x", load(last+1, false)); s != nil || err != nil {
			t.Fatalf("round %d: a closed feed answered %v, %v", round, s, err)
		}
		mem.AssertSize(t, 0)
	}
}

// TestFeedKeyAndFailure: a snapshot id with another key, or whose load
// failed, is the caller's to read; an older id than the newest admitted is
// never loaded.
func TestFeedKeyAndFailure(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	f := New[int](Limits{Bytes: 1 << 20, Snapshots: 10}, size)
	defer f.Close()
	ok := func(ctx context.Context) ([]Part[int], error) {
		return []Part[int]{{Batches: []arrow.RecordBatch{batch(mem, 5, 3)}}}, nil
	}
	s, err := f.Get(ctx, 5, "a", ok)
	if err != nil || s == nil {
		t.Fatalf("first get: %v, %v", s, err)
	}
	s.Release()
	if s, err := f.Get(ctx, 5, "b", ok); s != nil || err != nil {
		t.Fatalf("other key: %v, %v", s, err)
	}
	if s, err := f.Get(ctx, 4, "a", ok); s != nil || err != nil {
		t.Fatalf("older id: %v, %v", s, err)
	}
	bad := func(ctx context.Context) ([]Part[int], error) { return nil, errors.New("unreadable") }
	if s, err := f.Get(ctx, 6, "a", bad); s != nil || err != nil {
		t.Fatalf("failed load: %v, %v", s, err)
	}
	if s, err := f.Get(ctx, 6, "a", ok); s != nil || err != nil {
		t.Fatalf("failed load asked again: %v, %v", s, err)
	}
	if st := f.Stats(); st.Loads != 2 || st.Shared != 1 || st.Missed != 4 {
		t.Fatalf("stats %+v", st)
	}
}
