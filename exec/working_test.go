package exec_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
	"github.com/flightd/flightd/vectorized"
)

// int64s is an array of n rows over a Go buffer the test never writes, so
// that hundreds of MB of it cost no resident memory.
func int64s(n int) arrow.Array {
	buf := memory.NewBufferBytes(make([]byte, 8*n))
	return array.NewInt64Data(array.NewData(arrow.PrimitiveTypes.Int64, n, []*memory.Buffer{nil, buf}, nil, 0, 0))
}

var computed = exec.NewLiteral(scalar.NewInt64Scalar(0))

// A statement's expressions hold at most its budget, but never less than
// one function may compute for a batch; input columns are not counted.
func TestWorkingMemoryBudget(t *testing.T) {
	big := int64s(400 << 20 / 8)
	defer big.Release()
	ec := exec.NewContext(memory.NewGoAllocator())
	ec.MemoryLimit = 4 << 20 // below the floor of 512 MiB
	a, b := ec.Working(), ec.Working()
	if err := a.Hold(computed, big); err != nil {
		t.Fatalf("400 MB under a 4 MiB budget, floored at 512 MiB: %v", err)
	}
	if err := b.Hold(computed, big); !errors.Is(err, exec.ErrMemoryLimit) {
		t.Fatalf("800 MB at once: %v", err)
	}
	if err := b.Hold(exec.NewColumn(0, arrow.PrimitiveTypes.Int64, "c"), big); err != nil {
		t.Fatalf("an input column: %v", err)
	}
	a.Release()
	if err := b.Hold(computed, big); err != nil {
		t.Fatalf("400 MB once the first is released: %v", err)
	}
	b.Release()

	ec.MemoryLimit = 1 << 30
	for i := range 2 {
		if err := a.Hold(computed, big); err != nil {
			t.Fatalf("hold %d of 400 MB under 1 GiB: %v", i+1, err)
		}
	}
	if err := a.Hold(computed, big); !errors.Is(err, exec.ErrMemoryLimit) {
		t.Fatalf("1.2 GB under 1 GiB: %v", err)
	}
	a.Release()
}

// Goroutines of one execution hold and release arrays of random sizes in
// a pool: what they hold together, counted by a model, never passes the
// pool, some holds are refused, and the pool is empty at the end.
func TestWorkingMemoryPoolConcurrent(t *testing.T) {
	seed := exectest.Seed(t)
	const capacity = 64 << 20
	pool := exec.NewMemoryPool(capacity)
	ec := exec.NewContext(memory.NewGoAllocator())
	ec.Pool = pool
	whole := int64s(24 << 20 / 8)
	defer whole.Release()

	var model, most, refused, granted atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for range 300 {
				w := ec.Working()
				var mine int64
				for range 1 + rng.IntN(4) {
					n := 1 + rng.IntN(whole.Len()) // up to 24 MiB
					a := array.NewSlice(whole, 0, int64(n))
					err := w.Hold(computed, a)
					a.Release()
					if err != nil {
						if !errors.Is(err, exec.ErrMemoryLimit) {
							t.Errorf("seed %d: %v", seed, err)
						}
						refused.Add(1)
						break
					}
					granted.Add(1)
					mine += int64(8 * n)
					now := model.Add(int64(8 * n))
					for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
					}
				}
				model.Add(-mine)
				w.Release()
			}
		}()
	}
	wg.Wait()
	// An execution holds its first 4 MiB unreserved.
	if most.Load() > capacity+4<<20 || pool.Peak() > capacity {
		t.Fatalf("seed %d: held %d bytes at once (pool peak %d) in a pool of %d", seed, most.Load(), pool.Peak(), capacity)
	}
	if refused.Load() == 0 || granted.Load() == 0 {
		t.Fatalf("seed %d: %d holds granted, %d refused: the test did not reach the bound", seed, granted.Load(), refused.Load())
	}
	ec.ReleaseMemory()
	if pool.Reserved() != 0 || pool.Consumers() != 0 {
		t.Fatalf("seed %d: the pool holds %d bytes for %d reservations", seed, pool.Reserved(), pool.Consumers())
	}
}

// VALUES builds its rows at Open: a new batch starts past what one
// function may compute for a batch, so that a string column's 32-bit
// offsets hold (40 strings of 60 MB in one VALUES panicked), and what it
// built counts as held until Close.
func TestValuesBatchesBounded(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	value := exec.NewLiteral(scalar.NewStringScalar(strings.Repeat("x", 110<<20)))
	rows := make([][]exec.Expr, 5) // 550 MB
	for i := range rows {
		rows[i] = []exec.Expr{value}
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)

	ec := exec.NewContext(mem)
	out, err := exec.Collect(context.Background(), exec.NewValues(ec, schema, rows))
	if err != nil {
		t.Fatal(err)
	}
	defer release(out)
	var n int64
	for _, b := range out {
		if size := len(b.Column(0).(*array.String).ValueBytes()); size > vectorized.MaxComputedStrings+110<<20 {
			t.Fatalf("a batch of %d bytes of strings", size)
		}
		n += b.NumRows()
	}
	if len(out) < 2 || n != 5 {
		t.Fatalf("%d rows in %d batches, want 5 rows in at least 2", n, len(out))
	}

	ec = exec.NewContext(mem)
	ec.MemoryLimit = 1 << 20 // floored at 512 MiB
	if _, err := exec.Collect(context.Background(), exec.NewValues(ec, schema, rows)); !errors.Is(err, exec.ErrMemoryLimit) {
		t.Fatalf("550 MB of VALUES under a 512 MiB budget: %v", err)
	}
}
