package exec

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/internal/arrowshare"
	"github.com/flightd/flightd/vectorized"
)

// workingStep is the granularity of the pool reservation behind an
// execution's working memory, and what it holds before it reserves any: a
// few batches' values, which come and go without the pool's lock and, like
// batches between operators, need no room in a pool its spilling operators
// have filled (a DELETE's predicate failed beside a continuous job that
// held its share of a small pool).
const workingStep = 4 << 20

// workingMemory counts the values that expression evaluation holds while
// it computes more: a call's arguments, a projection's columns, a CASE's
// arms. One function's result for a batch is bounded alone
// (vectorized.MaxComputedStrings), but a SELECT of 400 such calls, or one
// call of 40 such arguments, held them all at once, and so could take the
// machine's memory in one statement. It is bounded by the statement's
// budget (Context.MemoryLimit, but never below what one function may
// compute) and, past workingStep, reserved in the pool; past either,
// evaluation fails with ErrMemoryLimit. The zero value is ready.
type workingMemory struct {
	mu      sync.Mutex
	held    int64
	granted int64 // bytes res holds: at least held - workingStep
	res     *Reservation
}

// Working is the arrays one evaluation holds, counted in its execution's
// working memory until Release. It is for one goroutine.
type Working struct {
	ec    *Context
	bytes int64
}

// Working starts counting an evaluation's arrays.
func (ec *Context) Working() Working { return Working{ec: ec} }

// Hold counts a, the value of e, which the evaluation keeps while it
// computes more; past the execution's working memory it counts nothing and
// fails with ErrMemoryLimit (the caller still owns a). An input column is
// not counted: its batch holds it anyway.
func (w *Working) Hold(e Expr, a arrow.Array) error {
	if _, col := e.(*ColumnExpr); col {
		return nil
	}
	n := arrowshare.Bytes(a.Data())
	if err := w.ec.working.hold(w.ec, n); err != nil {
		return err
	}
	w.bytes += n
	return nil
}

// Release gives back what Hold counted: the arrays are released or handed
// on. w may hold again afterwards.
func (w *Working) Release() {
	if w.bytes > 0 {
		w.ec.working.release(w.bytes)
		w.bytes = 0
	}
}

// workingLimit is the statement's bound on working memory (0: none).
func (ec *Context) workingLimit() int64 {
	if ec.MemoryLimit <= 0 {
		return 0
	}
	return max(ec.MemoryLimit, vectorized.MaxComputedStrings)
}

func (m *workingMemory) hold(ec *Context, n int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := m.held + n
	if limit := ec.workingLimit(); limit > 0 && held > limit {
		return fmt.Errorf("%w: the values expressions computed and hold at once would take %d bytes, over the statement's budget of %d bytes", ErrMemoryLimit, held, limit)
	}
	if need := held - workingStep; need > m.granted && ec.Pool != nil {
		if m.res == nil {
			m.res = ec.NewReservation(false)
		}
		// A step ahead if the pool has it, else just what is needed.
		if !m.res.TryResize((need+workingStep-1)/workingStep*workingStep) && !m.res.TryResize(need) {
			return fmt.Errorf("%w: the values expressions computed and hold at once would take %d bytes, more than %s has left", ErrMemoryLimit, held, ec.Pool)
		}
		m.granted = m.res.Size()
	}
	m.held = held
	return nil
}

func (m *workingMemory) release(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held -= n
	if m.held <= workingStep && m.granted > 0 {
		m.res.TryResize(0)
		m.granted = 0
	}
}
