package stream

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// Normalize turns upserts without before-images (a primary-key table with
// changelog-producer none or input) into an exact changelog, as Flink's
// ChangelogNormalize does: it keeps the last row of every key and, at each
// marker, emits per key changed since the previous marker +I (new key),
// -U old/+U new (changed row), -D old (deleted key) or nothing (the same
// row again). +I/+U rows are upserts; -U/-D delete the key whatever their
// other values. Reading a Source that does not return its table's content
// first, it starts from that content.
//
// State past the Budget spills: at a marker, rows go to disk (a
// spillStore) until half the budget is free, and come back when their key
// changes. The changes of one mini-batch (and a seed) must fit.
type Normalize struct {
	ec     *exec.Context
	in     Operator
	keys   []int // key columns of in's batches
	get    rowGetter
	dec    []orderedDecoder
	budget *Budget
	store  *spillStore // nil until something spills

	state   map[string][]any
	pending map[string]*normChange
	order   []string // keys of pending in first-touch order
	// pendingBytes is what pending holds (not in the budget: it goes at
	// the next marker).
	pendingBytes int64
	enc          vectorized.KeyEncoder
	signs        []int8
	q            *outQueue
	mb           miniBatch
	held         int64 // bytes accounted in budget
	seeded       bool

	changed changedKeys // the keys changed since the last save
}

type normChange struct {
	after []any // nil: deleted
}

// NewNormalize normalizes in by the key columns keys (positions in in's
// batches, never 0).
func NewNormalize(ec *exec.Context, in Operator, keys []int, budget *Budget) (*Normalize, error) {
	fields := in.Schema().Fields()[1:]
	get, err := rowGetterFor(fields)
	if err != nil {
		return nil, err
	}
	q, err := newOutQueue(ec, in.Schema())
	if err != nil {
		return nil, err
	}
	n := &Normalize{ec: ec, in: in, keys: keys, get: get, budget: budget, q: q,
		state: map[string][]any{}, pending: map[string]*normChange{}}
	for _, f := range fields {
		d, _ := orderedDecoderFor(f.Type) // as rowGetterFor
		n.dec = append(n.dec, d)
	}
	return n, nil
}

func (n *Normalize) Schema() *arrow.Schema { return n.in.Schema() }

// Open opens the input; a source that starts after its table's content
// (not a full start) seeds the state with that content, silently.
func (n *Normalize) Open(ctx context.Context) error {
	if err := n.in.Open(ctx); err != nil || n.seeded {
		return err
	}
	n.seeded = true
	src, ok := n.in.(*Source)
	if !ok {
		return nil
	}
	n.mb.marked(n)
	err := src.seed(ctx, n.ec.Mem, func(b arrow.RecordBatch) error {
		if err := n.add(ctx, b); err != nil {
			return err
		}
		return n.mb.checkGrowth(n)
	})
	if err != nil {
		return err
	}
	var grow int64
	for _, k := range n.order {
		if after := n.pending[k].after; after != nil {
			n.state[k] = after
			grow += rowBytes(after) + int64(len(k))
		}
	}
	clear(n.pending)
	n.pendingBytes = 0
	n.order = n.order[:0]
	n.held += grow
	n.budget.add(grow)
	if n.budget.over() {
		err = n.evict()
	}
	n.mb.marked(n)
	return err
}

// lookup returns key k's row, from memory or read back from disk.
func (n *Normalize) lookup(k string) ([]any, bool, int64, error) {
	if row, ok := n.state[k]; ok || n.store == nil {
		return row, ok, 0, nil
	}
	b, ok, err := n.store.take(k)
	if !ok || err != nil {
		return nil, false, 0, err
	}
	row, _, err := decodeRow(b, n.dec)
	if err != nil {
		return nil, false, 0, err
	}
	n.state[k] = row
	return row, true, rowBytes(row) + int64(len(k)), nil
}

// evict moves rows to disk until half the budget is free.
func (n *Normalize) evict() error {
	return evictMap(n.state, n.ec, n.budget, &n.store, &n.held, func(k string, row []any) (stateEntry, int64, bool) {
		return stateEntry{key: k, val: appendRow(nil, row)}, rowBytes(row) + int64(len(k)), true
	})
}

// SaveState saves the last row of every key, in memory and spilled (in a
// delta, of the keys changed).
func (n *Normalize) SaveState(w *StateWriter) error {
	return w.keyed(&n.changed, func() error {
		for k, row := range n.state {
			w.entryScratch(k, appendRow(w.scratch(), row))
		}
		return w.spilled(n.store, func(k string) bool { _, ok := n.state[k]; return ok })
	}, func(k string, b []byte) ([]byte, bool, error) {
		if row, ok := n.state[k]; ok {
			return appendRow(b, row), true, nil
		}
		return n.store.saved(k)
	})
}

func (n *Normalize) trackChanges() { n.changed.track() }

// RestoreState loads the saved rows into memory, spilling past the
// budget; the input then resumes after them, so nothing seeds the state.
func (n *Normalize) RestoreState(r *StateReader) error {
	n.seeded = true
	err := r.Entries(func(k string, v []byte) error {
		row, rest, err := decodeRow(v, n.dec)
		if err != nil {
			return err
		}
		if len(rest) != 0 {
			return errCorruptCheckpoint
		}
		n.state[k] = row
		grow := rowBytes(row) + int64(len(k))
		n.held += grow
		n.budget.add(grow)
		if n.budget.over() {
			return n.evict()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return r.end()
}

func (n *Normalize) Next(ctx context.Context) (Chunk, error) {
	return miniBatchNext(ctx, n.in, n, n.q, &n.mb)
}

func (n *Normalize) add(_ context.Context, b arrow.RecordBatch) error {
	signs, err := kindSigns(b, n.signs)
	if err != nil {
		return err
	}
	n.signs = signs
	keyCols := make([]arrow.Array, len(n.keys))
	for i, k := range n.keys {
		keyCols[i] = b.Column(k)
	}
	if err := n.enc.Encode(keyCols, int(b.NumRows())); err != nil {
		return err
	}
	cols := b.Columns()[1:]
	for i, s := range signs {
		k := string(n.enc.Key(i))
		p := n.pending[k]
		if p == nil {
			p = &normChange{}
			n.pending[k] = p
			n.order = append(n.order, k)
			n.pendingBytes += 2*int64(len(k)) + 64
		}
		n.pendingBytes -= rowBytes(p.after)
		if s > 0 {
			p.after = n.get.row(cols, i)
		} else {
			p.after = nil
		}
		n.pendingBytes += rowBytes(p.after)
	}
	return nil
}

func (n *Normalize) heldState() (string, int64, *Budget) {
	return "the normalization by key", n.held + n.pendingBytes, n.budget
}

// flush emits the net change of every key touched since the last marker.
func (n *Normalize) flush(context.Context, *Chunk) error {
	var grow int64
	for _, k := range n.order {
		n.changed.add(k)
		p := n.pending[k]
		before, had, loaded, err := n.lookup(k)
		if err != nil {
			return err
		}
		grow += loaded
		switch {
		case !had && p.after != nil:
			n.q.add(kindInsert, p.after)
			n.state[k] = p.after
			grow += rowBytes(p.after) + int64(len(k))
		case had && p.after == nil:
			n.q.add(kindDelete, before)
			delete(n.state, k)
			if n.store != nil {
				n.store.forget(k)
			}
			grow -= rowBytes(before) + int64(len(k))
		case had && !sameRow(before, p.after):
			n.q.add(kindUpdateBefore, before)
			n.q.add(kindUpdateAfter, p.after)
			n.state[k] = p.after
			grow += rowBytes(p.after) - rowBytes(before)
		}
	}
	clear(n.pending)
	n.pendingBytes = 0
	n.order = n.order[:0]
	n.q.seal()
	n.held += grow
	n.budget.add(grow)
	if n.budget.over() {
		return n.evict()
	}
	return nil
}

func (n *Normalize) Close() error {
	n.q.release()
	n.budget.add(-n.held)
	n.held = 0
	if n.store != nil {
		n.store.close()
	}
	return n.in.Close()
}
