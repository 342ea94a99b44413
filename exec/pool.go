package exec

import (
	"fmt"
	"sync"
)

// MemoryPool bounds the bytes that the stateful operators of all the
// statements of an engine hold together, as DataFusion's FairSpillPool
// does: each operator reserves what it holds, and one that can spill may
// hold at most its fair share, the capacity left by reservations that
// cannot spill divided by the number of reservations that can. Context's
// MemoryLimit still bounds each operator on its own.
//
// The pool counts only what operators reserve: batches flowing between
// operators, scans' buffers and the table cache are outside it.
type MemoryPool struct {
	capacity int64

	mu        sync.Mutex
	reserved  int64 // all reservations' bytes
	unspill   int64 // the bytes of reservations that cannot spill
	spillers  int   // reservations that can spill and hold or held bytes
	peak      int64
	consumers int // reservations registered, for the tests' leak checks
}

// NewMemoryPool returns a pool of capacity bytes (> 0).
func NewMemoryPool(capacity int64) *MemoryPool {
	return &MemoryPool{capacity: max(capacity, 1)}
}

// Capacity is the pool's size in bytes.
func (p *MemoryPool) Capacity() int64 { return p.capacity }

// Reserved is the bytes reserved now.
func (p *MemoryPool) Reserved() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reserved
}

// Peak is the most bytes ever reserved at once.
func (p *MemoryPool) Peak() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// Consumers is the number of registered reservations (0 once every
// statement has ended).
func (p *MemoryPool) Consumers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.consumers
}

// String names the pool in errors.
func (p *MemoryPool) String() string {
	return fmt.Sprintf("the query memory pool (%d bytes)", p.capacity)
}

// fairShare is what one spilling reservation may hold. Called with mu held.
func (p *MemoryPool) fairShare() int64 {
	return (p.capacity - p.unspill) / int64(max(p.spillers, 1))
}

// Reservation is one operator's claim on a pool. Its methods are safe for
// concurrent use; a nil Reservation (no pool) grants everything.
type Reservation struct {
	pool    *MemoryPool
	spills  bool
	size    int64
	active  bool // registered: counted among the pool's consumers
	stopped bool // its statement ended: grants nothing more
}

// Pool is the pool r reserves in (nil for a nil Reservation).
func (r *Reservation) Pool() *MemoryPool {
	if r == nil {
		return nil
	}
	return r.pool
}

// Size is the bytes reserved.
func (r *Reservation) Size() int64 {
	if r == nil {
		return 0
	}
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	return r.size
}

// TryResize sets the reservation to n bytes if the pool allows it and
// reports whether it did. Shrinking always succeeds. Growing a reservation
// that spills succeeds while n is within its fair share and the pool has
// the bytes; one that cannot spill gets any bytes the pool has left.
func (r *Reservation) TryResize(n int64) bool {
	if r == nil {
		return true
	}
	p := r.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	n = max(n, 0)
	if r.stopped {
		return n == 0
	}
	if !r.active {
		r.active = true
		p.consumers++
		if r.spills {
			p.spillers++
		}
	}
	d := n - r.size
	if d > 0 {
		if p.reserved+d > p.capacity || r.spills && n > p.fairShare() {
			return false
		}
	}
	r.size = n
	p.reserved += d
	if !r.spills {
		p.unspill += d
	}
	p.peak = max(p.peak, p.reserved)
	return true
}

// Free returns the reservation's bytes and unregisters it; a later
// TryResize registers it again.
func (r *Reservation) Free() {
	if r == nil {
		return
	}
	p := r.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	r.free()
}

// free is Free with p.mu held.
func (r *Reservation) free() {
	p := r.pool
	p.reserved -= r.size
	if !r.spills {
		p.unspill -= r.size
	}
	r.size = 0
	if r.active {
		r.active = false
		p.consumers--
		if r.spills {
			p.spillers--
		}
	}
}

// NewReservation returns a reservation in the execution's pool, released
// at the latest by ReleaseMemory (nil without a pool). spills says whether
// its operator can spill when refused (fair share) or fails (any bytes
// left).
func (ec *Context) NewReservation(spills bool) *Reservation {
	if ec.Pool == nil {
		return nil
	}
	r := &Reservation{pool: ec.Pool, spills: spills}
	ec.resMu.Lock()
	defer ec.resMu.Unlock()
	r.stopped = ec.released
	ec.reservations = append(ec.reservations, r)
	return r
}

// ReleaseMemory frees every reservation of the execution and refuses them
// more: the statement ended (done, failed, cancelled or abandoned), and an
// operator that missed its Close or a goroutine still winding down must not
// keep pool bytes. Safe to call more than once.
func (ec *Context) ReleaseMemory() {
	ec.resMu.Lock()
	rs := ec.reservations
	ec.reservations, ec.released = nil, true
	ec.resMu.Unlock()
	for _, r := range rs {
		r.pool.mu.Lock()
		r.free()
		r.stopped = true
		r.pool.mu.Unlock()
	}
}

// memAccount is an operator's reservation, made on first use (the zero
// value is ready).
type memAccount struct {
	r    *Reservation
	made bool
}

func (m *memAccount) reservation(ec *Context) *Reservation {
	if !m.made {
		m.r, m.made = ec.NewReservation(true), true
	}
	return m.r
}

// free releases what the operator reserved (at Close).
func (m *memAccount) free() { m.r.Free() }

// resize shrinks the reservation to n bytes (after a spill, or once a
// table replaced the batches it was built from).
func (m *memAccount) resize(n int64) { m.r.TryResize(n) }

// poolError is ErrMemoryLimit for a reservation refused what an operator
// that cannot spill needs.
func (r *Reservation) poolError(what string, n int64) error {
	return fmt.Errorf("%w: %s needs %d bytes of %s, which holds %d bytes for running statements", ErrMemoryLimit, what, n, r.pool, r.pool.Reserved())
}

// Reserved is the bytes the execution's operators hold in the pool.
func (ec *Context) Reserved() int64 {
	ec.resMu.Lock()
	defer ec.resMu.Unlock()
	var n int64
	for _, r := range ec.reservations {
		n += r.Size()
	}
	return n
}
