package exec_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/exec/exectest"
)

func poolContext(p *exec.MemoryPool) *exec.Context {
	ec := exec.NewContext(memory.NewGoAllocator())
	ec.Pool = p
	return ec
}

// A spilling reservation gets at most its fair share, the capacity left by
// reservations that cannot spill over the number that can.
func TestMemoryPoolFairShare(t *testing.T) {
	p := exec.NewMemoryPool(1000)
	ec := poolContext(p)
	a, b := ec.NewReservation(true), ec.NewReservation(true)
	check := func(r *exec.Reservation, n int64, want bool) {
		t.Helper()
		if got := r.TryResize(n); got != want {
			t.Fatalf("TryResize(%d) = %v, want %v (reserved %d)", n, got, want, p.Reserved())
		}
	}
	check(a, 1000, true) // alone: all of it
	check(a, 1001, false)
	check(b, 0, true) // b registers: shares are 500
	check(b, 1, false)
	check(a, 900, true) // shrinking always succeeds
	check(a, 950, false)
	check(b, 100, true)
	check(b, 500, false) // the pool is out: 900 + 500 > 1000
	check(a, 300, true)
	check(b, 500, true)
	check(b, 501, false) // over the share
	u := ec.NewReservation(false)
	check(u, 300, false) // 800 reserved
	check(u, 200, true)  // shares are (1000-200)/2 = 400
	check(a, 301, false) // a is under its share but b is not: the pool is full
	b.Free()             // a is alone: 800
	check(a, 800, true)
	check(a, 801, false)
	if got := p.Reserved(); got != 1000 {
		t.Fatalf("reserved %d, want 1000", got)
	}
	if p.Consumers() != 2 {
		t.Fatalf("%d consumers, want 2", p.Consumers())
	}
	ec.ReleaseMemory()
	if p.Reserved() != 0 || p.Consumers() != 0 || p.Peak() != 1000 {
		t.Fatalf("after release: reserved %d, %d consumers, peak %d", p.Reserved(), p.Consumers(), p.Peak())
	}
	// A statement that ended grants nothing more, so a goroutine winding
	// down cannot take bytes nobody frees.
	check(a, 1, false)
	if r := ec.NewReservation(true); r.TryResize(1) {
		t.Fatal("a reservation made after ReleaseMemory got bytes")
	}
	if p.Reserved() != 0 {
		t.Fatalf("reserved %d after the statement ended", p.Reserved())
	}
	// Without a pool everything is granted.
	if r := exec.NewContext(memory.NewGoAllocator()).NewReservation(true); r != nil || !r.TryResize(1<<60) {
		t.Fatal("no pool: want a nil reservation that grants all")
	}
}

// poolModel is the pool's rule written out plainly.
type poolModel struct {
	capacity int64
	sizes    map[int]int64
	active   map[int]bool
	spills   map[int]bool
}

func (m *poolModel) resize(id int, n int64) bool {
	m.active[id] = true
	var total, unspill int64
	spillers := int64(0)
	for r, s := range m.sizes {
		total += s
		if !m.spills[r] {
			unspill += s
		}
	}
	for r := range m.active {
		if m.spills[r] {
			spillers++
		}
	}
	if d := n - m.sizes[id]; d > 0 {
		if total+d > m.capacity || m.spills[id] && n > (m.capacity-unspill)/max(spillers, 1) {
			return false
		}
	}
	m.sizes[id] = n
	return true
}

// Random resizes and frees agree with the model, one at a time.
func TestMemoryPoolModel(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	p := exec.NewMemoryPool(int64(1 + rng.IntN(5000)))
	ec := poolContext(p)
	m := &poolModel{capacity: p.Capacity(), sizes: map[int]int64{}, active: map[int]bool{}, spills: map[int]bool{}}
	var rs []*exec.Reservation
	steps := 20000
	if raceEnabled {
		steps = 5000 // one goroutine against a model: under -race a shorter walk; the plain pass takes 20,000 steps
	}
	for i := 0; i < steps; i++ {
		switch op := rng.IntN(10); {
		case op == 0 || len(rs) == 0:
			spills := rng.IntN(4) > 0
			rs = append(rs, ec.NewReservation(spills))
			m.spills[len(rs)-1] = spills
		case op == 1:
			id := rng.IntN(len(rs))
			rs[id].Free()
			delete(m.active, id)
			m.sizes[id] = 0
		default:
			id := rng.IntN(len(rs))
			n := rng.Int64N(p.Capacity() + 10)
			if got, want := rs[id].TryResize(n), m.resize(id, n); got != want {
				t.Fatalf("step %d: reservation %d (spills %v) TryResize(%d) = %v, model %v", i, id, m.spills[id], n, got, want)
			}
		}
		var total int64
		for id, r := range rs {
			if r.Size() != m.sizes[id] {
				t.Fatalf("step %d: reservation %d holds %d, model %d", i, id, r.Size(), m.sizes[id])
			}
			total += r.Size()
		}
		if total != p.Reserved() || total > p.Capacity() || p.Consumers() != len(m.active) {
			t.Fatalf("step %d: reserved %d (sum %d, capacity %d), %d consumers (model %d)", i, p.Reserved(), total, p.Capacity(), p.Consumers(), len(m.active))
		}
	}
	ec.ReleaseMemory()
	if p.Reserved() != 0 || p.Consumers() != 0 {
		t.Fatalf("after release: reserved %d, %d consumers", p.Reserved(), p.Consumers())
	}
}

// Concurrent reservations never pass the capacity together, and each
// goroutine's spilling reservation stays within the share of the
// goroutines registered (run with -race).
func TestMemoryPoolConcurrent(t *testing.T) {
	seed := exectest.Seed(t)
	const capacity, workers = 1 << 20, 8
	p := exec.NewMemoryPool(capacity)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			ec := poolContext(p)
			defer ec.ReleaseMemory()
			r := ec.NewReservation(rng.IntN(2) == 0)
			for i := 0; i < 5000; i++ {
				n := r.Size() + rng.Int64N(capacity/4) - capacity/8
				r.TryResize(n)
				if rng.IntN(50) == 0 {
					r.Free()
				}
				if got := p.Reserved(); got > capacity {
					t.Errorf("reserved %d, over the capacity", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p.Reserved() != 0 || p.Consumers() != 0 || p.Peak() > capacity || p.Peak() == 0 {
		t.Fatalf("reserved %d, %d consumers, peak %d", p.Reserved(), p.Consumers(), p.Peak())
	}
}

// Many goroutines run the spilling operators over one small pool (no
// per-operator budget): their answers equal the unbounded run's, the
// pool's peak stays within its capacity, operators return their
// reservations at Close and the pool is empty at the end.
func TestMemoryPoolOperators(t *testing.T) {
	seed := exectest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	in := bigTable(t, rng, 3000, 800)
	other := bigTable(t, rng, 1500, 800)
	cases := spillCases(t, in.Schema)
	inputs := spillInputs(in, other)
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	want := map[string][]string{}
	for _, n := range names {
		rows, _, err := runWith(t, inputs(n), 0, 256, cases[n])
		if err != nil {
			t.Fatal(err)
		}
		want[n] = rows
	}
	const capacity, workers = 512 << 10, 8
	runs := 4
	if raceEnabled {
		runs = 2 // under -race each of the 8 goroutines runs 2 statements (they still share the pool); the plain pass runs 4
	}
	p := exec.NewMemoryPool(capacity)
	var mu sync.Mutex
	var spilled int64
	var refused []string
	// Each case alone first: with the pool to itself an operator keeps its
	// state in memory, reserved, until its Close must return it.
	for _, name := range names {
		got, _, err := runInPool(t, p, inputs(name), 256, cases[name])
		if err != nil || !spillVerify(name)(got, want[name]) {
			t.Fatalf("%s alone in the pool: %v, %d rows, want %d", name, err, len(got), len(want[name]))
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)+10))
			for i := 0; i < runs && !t.Failed(); i++ {
				name := names[rng.IntN(len(names))]
				got, n, err := runInPool(t, p, inputs(name), 64+rng.IntN(512), cases[name])
				mu.Lock()
				spilled += n
				mu.Unlock()
				switch {
				case errors.Is(err, exec.ErrMemoryLimit) && poolMayRefuse(name):
					mu.Lock()
					refused = append(refused, name+": "+err.Error())
					mu.Unlock()
				case err != nil:
					t.Errorf("%s: %v", name, err)
				case !spillVerify(name)(got, want[name]):
					t.Errorf("%s: %d rows, want %d", name, len(got), len(want[name]))
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("seed %d: pool peak %d of %d bytes, %d rows spilled, %d refused %v", seed, p.Peak(), p.Capacity(), spilled, len(refused), refused)
	if p.Peak() > capacity || p.Peak() == 0 {
		t.Fatalf("pool peak %d, capacity %d", p.Peak(), capacity)
	}
	if spilled == 0 {
		t.Fatal("nothing spilled: the pool bounded nothing")
	}
	if p.Reserved() != 0 || p.Consumers() != 0 {
		t.Fatalf("the pool holds %d bytes for %d reservations after every statement ended", p.Reserved(), p.Consumers())
	}
}

// poolMayRefuse reports whether case name may fail with ErrMemoryLimit
// in a full pool: a window that cannot cut a chunk (a peer group, a frame's
// lookahead, a whole partition) when refused its rows fails instead of
// growing.
func poolMayRefuse(name string) bool { return strings.HasPrefix(name, "window-") }

// runInPool runs ctor like runWith, its operators reserving in p. Their
// Close must return what they reserved, before the statement's
// ReleaseMemory would.
func runInPool(t *testing.T, p *exec.MemoryPool, inputs []exectest.Table, batch int, ctor exectest.Ctor) ([]string, int64, error) {
	ec, mem, checked := spillContext(0, t.TempDir())
	defer checked.AssertSize(t, 0)
	ec.Pool, ec.BatchSize = p, batch
	defer ec.ReleaseMemory()
	ops := make([]exec.Operator, len(inputs))
	for i, in := range inputs {
		var bs []arrow.RecordBatch
		for lo := 0; lo < len(in.Rows); lo += 100 {
			b, err := in.Batch(mem, lo, min(lo+100, len(in.Rows)), 1)
			if err != nil {
				t.Error(err)
				return nil, 0, err
			}
			bs = append(bs, b)
		}
		ops[i] = exectest.Source(ec, in.Schema, bs)
	}
	op, err := ctor(ec, ops)
	if err != nil {
		return nil, 0, err
	}
	bs, err := exec.Collect(context.Background(), op)
	rows := exectest.Rows(bs)
	for _, b := range bs {
		b.Release()
	}
	if n := ec.Reserved(); n != 0 {
		t.Errorf("operators closed, still reserving %d bytes", n)
	}
	return rows, ec.SpilledRows(), err
}
