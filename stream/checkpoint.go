package stream

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightd/flightd/exec"
)

// Checkpoints: a continuous job saves the state of its operators with the
// source positions it belongs to, so that a restart resumes every source
// where the state stands instead of reading the sources again in full.
//
// A checkpoint is a barrier, as in Flink (Chandy-Lamport): Request asks
// for barrier n; every Source flags its next marker with it and saves its
// position; an operator passing a barrier marker on (from Next) saves its
// state, which then holds exactly the changes up to that marker, as a
// marker is an exact position; a two-input operator stops reading the
// side whose barrier came first until the other side's comes, so its
// state and its barrier marker hold the same position of both. When the
// root hands out the barrier marker every operator has saved, and Encode
// gives the checkpoint, for the sink commit of that marker's position.
//
// Operators save and restore themselves through Checkpointer; a plan with
// an operator that cannot (Supported) is never checkpointed.

// Checkpointer is an operator whose state a checkpoint holds. SaveState
// runs on the goroutine calling Next, right after Next returned a barrier
// marker; RestoreState runs before Open, on a new operator, with what
// SaveState wrote.
type Checkpointer interface {
	SaveState(w *StateWriter) error
	RestoreState(r *StateReader) error
}

// stateless operators keep nothing between chunks: a checkpoint needs
// nothing of them.
func stateless(op Operator) bool {
	switch op.(type) {
	case *Filter, *Project, *Temporal:
		return true
	}
	return false
}

// Checkpoints coordinates the checkpoints of one run of a streaming plan
// (see above). Add every operator of the plan to it as it is built, in an
// order that only depends on the plan.
type Checkpoints struct {
	requested atomic.Int64 // the newest barrier asked for
	rows      atomic.Int64 // rows the sources read
	interval  time.Duration

	mu          sync.Mutex
	kinds       []string // of the operators added that hold state
	unsupported []string
	saved       map[int64][][][]byte // barrier -> each operator's state, in pieces
	// spent is how long the operators took to save their state, per
	// barrier; took how long the last checkpoint Encode returned took to
	// save and encode (see Took).
	spent       map[int64]time.Duration
	took        time.Duration
	restore     [][]byte // sections to restore, nil: none
	restoreKind []string
	restored    int
}

// NewCheckpoints returns a coordinator for one run of a plan whose
// checkpoints are taken every interval: its sources report progress ten
// times as often (at most every 10 ms), so that a barrier waits little on
// an idle one (a barrier goes out with a source's next marker).
func NewCheckpoints(interval time.Duration) *Checkpoints {
	return &Checkpoints{saved: map[int64][][][]byte{}, spent: map[int64]time.Duration{}, interval: interval}
}

// Add registers op, which takes its place among the operators a checkpoint
// saves (restoring it first when the coordinator was loaded), and returns
// the operator to use in its stead.
func (c *Checkpoints) Add(op Operator) (Operator, error) {
	if stateless(op) {
		return op, nil
	}
	cp, ok := op.(Checkpointer)
	if !ok {
		c.mu.Lock()
		c.unsupported = append(c.unsupported, fmt.Sprintf("%T", op))
		c.mu.Unlock()
		return op, nil
	}
	c.mu.Lock()
	idx := len(c.kinds)
	kind := fmt.Sprintf("%T", op)
	c.kinds = append(c.kinds, kind)
	c.mu.Unlock()
	if c.restore != nil {
		if idx >= len(c.restore) || c.restoreKind[idx] != kind {
			return nil, fmt.Errorf("%w: operator %d is %s, the checkpoint's is not", errCorruptCheckpoint, idx, kind)
		}
		if err := cp.RestoreState(&StateReader{b: c.restore[idx]}); err != nil {
			return nil, fmt.Errorf("restore %s: %w", kind, err)
		}
		c.restored++
	}
	if s, ok := op.(*Source); ok {
		// A source flags its markers with barriers and saves itself as it
		// does (unwrapped: a Normalize reads its Source directly).
		s.cp, s.cpIdx = c, idx
		if hb := max(c.interval/10, 10*time.Millisecond); c.interval > 0 && (s.spec.Heartbeat <= 0 || s.spec.Heartbeat > hb) {
			s.spec.Heartbeat = hb
		}
		return s, nil
	}
	return &checkpointed{Operator: op, cp: c, idx: idx, state: cp}, nil
}

// Supported says why the plan cannot be checkpointed ("" when it can):
// the kinds of its operators that cannot save their state.
func (c *Checkpoints) Supported() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.unsupported) == 0 {
		return ""
	}
	return fmt.Sprintf("%v keep state a checkpoint cannot hold", c.unsupported)
}

// Restored checks that a loaded checkpoint restored every operator of the
// plan and nothing else (nil when none was loaded).
func (c *Checkpoints) Restored() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.restore != nil && (c.restored != len(c.restore) || len(c.kinds) != len(c.restore)) {
		return fmt.Errorf("%w: %d operators saved, %d restored of %d", errCorruptCheckpoint, len(c.restore), c.restored, len(c.kinds))
	}
	return nil
}

// Request asks for barrier n (increasing): the sources flag their next
// markers with it.
func (c *Checkpoints) Request(n int64) { c.requested.Store(n) }

// SourceRows is how many rows the sources have read (their changes, and
// the content a normalization starts from).
func (c *Checkpoints) SourceRows() int64 { return c.rows.Load() }

// save records operator idx's state at barrier n.
func (c *Checkpoints) save(n int64, idx int, op Checkpointer) error {
	start := time.Now()
	w := &StateWriter{}
	if err := op.SaveState(w); err != nil {
		return fmt.Errorf("checkpoint %d: %w", n, err)
	}
	c.put(n, idx, w.pieces(), start)
	return nil
}

// put records state, operator idx's at barrier n, whose saving started
// at start.
func (c *Checkpoints) put(n int64, idx int, state [][]byte, start time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spent[n] += time.Since(start)
	s := c.saved[n]
	if s == nil {
		s = make([][][]byte, len(c.kinds))
		c.saved[n] = s
	}
	s[idx] = state
}

// Discard forgets checkpoint n and every older one (not committed).
func (c *Checkpoints) Discard(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.saved {
		if k <= n {
			delete(c.saved, k)
		}
	}
	for k := range c.spent {
		if k <= n {
			delete(c.spent, k)
		}
	}
}

// Took is how long the operators took to save the state of the last
// checkpoint Encode returned, plus Encode's own time: what a checkpoint
// costs the job besides writing it, which grows with the state, not with
// the changes since the last one.
func (c *Checkpoints) Took() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.took
}

var checkpointMagic = []byte("flightd-checkpoint-1\n")

var errCorruptCheckpoint = fmt.Errorf("%w: corrupt checkpoint", exec.ErrInvalid)

// Encode returns checkpoint n (whose barrier marker the root handed out
// at pos) and forgets it and every older one: the file Load reads, its
// integrity checked by a CRC-32C, in pieces to be written in order. The
// operators' states are in the pieces they were saved in, not copied
// (they may be hundreds of MB).
func (c *Checkpoints) Encode(n int64, pos Pos) ([][]byte, error) {
	start := time.Now()
	c.mu.Lock()
	s, spent := c.saved[n], c.spent[n]
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.took = spent + time.Since(start)
		c.mu.Unlock()
	}()
	c.Discard(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.unsupported) > 0 || s == nil {
		return nil, fmt.Errorf("%w: checkpoint %d was not saved", exec.ErrInvalid, n)
	}
	head := append([]byte{}, checkpointMagic...)
	head = binary.AppendUvarint(head, uint64(len(pos)))
	for _, p := range pos {
		head = binary.AppendVarint(head, p)
	}
	head = binary.AppendUvarint(head, uint64(len(s)))
	out := [][]byte{head}
	crc := crc32.Checksum(head, crcTable)
	for i, sec := range s {
		if sec == nil {
			return nil, fmt.Errorf("%w: %s saved nothing at checkpoint %d", exec.ErrInvalid, c.kinds[i], n)
		}
		// The kind, then the section as appendBytes frames it.
		size := 0
		for _, p := range sec {
			size += len(p)
		}
		frame := binary.AppendUvarint(appendBytes(nil, c.kinds[i]), uint64(size))
		out = append(out, frame)
		crc = crc32.Update(crc, crcTable, frame)
		for _, p := range sec {
			out = append(out, p)
			crc = crc32.Update(crc, crcTable, p)
		}
	}
	return append(out, binary.BigEndian.AppendUint32(nil, crc)), nil
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Load reads checkpoint data (Encode's) taken at pos, to restore the
// operators Add will be given; an error when it is not whole or not of pos.
func (c *Checkpoints) Load(data []byte, pos Pos) error {
	if len(data) < len(checkpointMagic)+4 || !bytes.HasPrefix(data, checkpointMagic) {
		return errCorruptCheckpoint
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(data[len(body):]) {
		return fmt.Errorf("%w: checksum mismatch", errCorruptCheckpoint)
	}
	r := &StateReader{b: body[len(checkpointMagic):]}
	n, err := r.uvarint()
	if err != nil {
		return err
	}
	if n != uint64(len(pos)) {
		return fmt.Errorf("%w: %d positions, want %d", errCorruptCheckpoint, n, len(pos))
	}
	for _, p := range pos {
		v, err := r.Varint()
		if err != nil {
			return err
		}
		if v != p {
			return fmt.Errorf("%w: taken at %d, not %d", errCorruptCheckpoint, v, p)
		}
	}
	if n, err = r.uvarint(); err != nil {
		return err
	}
	c.restore, c.restoreKind = [][]byte{}, nil
	for range n {
		kind, err := r.Bytes()
		if err != nil {
			return err
		}
		sec, err := r.Bytes()
		if err != nil {
			return err
		}
		c.restoreKind = append(c.restoreKind, string(kind))
		c.restore = append(c.restore, sec)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d bytes past the end", errCorruptCheckpoint, len(r.b))
	}
	return nil
}

// checkpointed saves op's state when it hands out a barrier marker.
type checkpointed struct {
	Operator
	cp    *Checkpoints
	idx   int
	state Checkpointer
}

func (o *checkpointed) Next(ctx context.Context) (Chunk, error) {
	c, err := o.Operator.Next(ctx)
	if err == nil && c.Batch == nil && c.Barrier != 0 {
		err = o.cp.save(c.Barrier, o.idx, o.state)
	}
	return c, err
}

// StateWriter collects an operator's state as records of bytes, in
// pieces of about stateChunk bytes: a state of hundreds of MB is never
// copied into a larger buffer as it grows, nor held in one allocation.
type StateWriter struct {
	full [][]byte
	b    []byte // the piece being filled
	buf  []byte // see scratch
}

const stateChunk = 1 << 20

// room makes room for n more bytes in the piece being filled.
func (w *StateWriter) room(n int) {
	if cap(w.b)-len(w.b) >= n {
		return
	}
	if len(w.b) > 0 {
		w.full = append(w.full, w.b)
	}
	w.b = make([]byte, 0, max(stateChunk, n))
}

// pieces returns what was written, in order.
func (w *StateWriter) pieces() [][]byte { return append(w.full, w.b) }

// Bytes appends a record.
func (w *StateWriter) Bytes(v []byte) {
	w.room(len(v) + binary.MaxVarintLen64)
	w.b = appendBytes(w.b, v)
}

// Varint appends a number.
func (w *StateWriter) Varint(v int64) {
	w.room(binary.MaxVarintLen64)
	w.b = binary.AppendVarint(w.b, v)
}

// Entry appends one key and value of a keyed state (groups, rows by key);
// EndEntries ends them.
func (w *StateWriter) Entry(key string, val []byte) {
	w.Varint(1)
	w.room(len(key) + binary.MaxVarintLen64)
	w.b = appendBytes(w.b, key)
	w.Bytes(val)
}

// progress appends an event-time operator's progress: its last watermark
// (zero: none yet) and the late rows it dropped.
func (w *StateWriter) progress(wm time.Time, late int64) {
	w.time(wm)
	w.Varint(late)
}

// scratch returns the writer's buffer for encoding one entry's value,
// reused from entry to entry.
func (w *StateWriter) scratch() []byte { return w.buf[:0] }

// entryScratch appends an entry whose value was encoded into scratch's
// buffer, and keeps that buffer for the next one.
func (w *StateWriter) entryScratch(key string, val []byte) {
	w.Entry(key, val)
	w.buf = val
}

// EndEntries ends a keyed state's entries.
func (w *StateWriter) EndEntries() { w.Varint(0) }

// spilled appends the entries of store that memory does not hold
// (inMemory: a newer version of the key is in memory, already written).
func (w *StateWriter) spilled(store *spillStore, inMemory func(key string) bool) error {
	return store.each(func(k string, v []byte) error {
		if !inMemory(k) {
			w.Entry(k, v)
		}
		return nil
	})
}

func appendBytes[T []byte | string](b []byte, v T) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// StateReader reads what a StateWriter wrote, in order.
type StateReader struct{ b []byte }

// More reports whether records are left.
func (r *StateReader) More() bool { return len(r.b) > 0 }

// Bytes reads a record (valid as long as the checkpoint's data).
func (r *StateReader) Bytes() ([]byte, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if uint64(len(r.b)) < n {
		return nil, errCorruptCheckpoint
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v, nil
}

// Varint reads a number.
func (r *StateReader) Varint() (int64, error) {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		return 0, errCorruptCheckpoint
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *StateReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, errCorruptCheckpoint
	}
	r.b = r.b[n:]
	return v, nil
}

// progress reads what StateWriter.progress wrote.
func (r *StateReader) progress() (wm time.Time, late int64, err error) {
	if wm, err = r.time(); err != nil {
		return wm, 0, err
	}
	late, err = r.Varint()
	return wm, late, err
}

// Entries reads a keyed state's entries up to EndEntries' mark, calling fn
// with each.
func (r *StateReader) Entries(fn func(key string, val []byte) error) error {
	for {
		more, err := r.Varint()
		if err != nil || more == 0 {
			return err
		}
		k, err := r.Bytes()
		if err != nil {
			return err
		}
		v, err := r.Bytes()
		if err != nil {
			return err
		}
		if err := fn(string(k), v); err != nil {
			return err
		}
	}
}

// entriesWithin reads a keyed state's entries with add, which puts one
// into memory and returns the bytes it takes: they are accounted in held
// and budget, and past the budget the state spills (evict).
func (r *StateReader) entriesWithin(budget *Budget, held *int64, evict func() error, add func(key string, val []byte) (int64, error)) error {
	return r.Entries(func(k string, v []byte) error {
		grow, err := add(k, v)
		if err != nil {
			return err
		}
		*held += grow
		budget.add(grow)
		if budget.over() {
			return evict()
		}
		return nil
	})
}

// end reports a corrupt section when records are left after what an
// operator read.
func (r *StateReader) end() error {
	if r.More() {
		return fmt.Errorf("%w: %d bytes left", errCorruptCheckpoint, len(r.b))
	}
	return nil
}
