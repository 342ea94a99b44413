package stream

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/flightd/flightd/exec"
)

// spillStore keeps the state entries an operator evicted from memory past
// its Budget: sorted runs of (key, value) records in files under the
// execution's spill directory (exec.Context.TempDir), each with a sparse
// index in memory (the first key of every block of about stateBlockBytes),
// newest run last. A key is read back with one block read per run that
// may hold it; its records stay, shadowed by memory, until the entry is
// written again (a newer run) or deleted: the operator then forgets the
// key, and the next run records a tombstone. When there are more than
// maxStateRuns runs they are merged into one, without what is shadowed
// or deleted.
//
// Files are unlinked as soon as they are created: they go with the
// process, whatever ends it.
type spillStore struct {
	ec     *exec.Context
	budget *Budget
	runs   []*stateRun
	gone   map[string]bool // keys forgotten since the last run
	held   int64           // indexes and forgotten keys, accounted in budget
	buf    []byte
	// dead: the keys below it belong to state that ended (takeBelow read
	// them); reads skip them and compaction drops them.
	dead string
}

type stateRun struct {
	f      *os.File
	blocks []stateBlock
	size   int64
}

type stateBlock struct {
	first string
	off   int64
}

const (
	stateBlockBytes = 4 << 10
	maxStateRuns    = 8
)

func newSpillStore(ec *exec.Context, budget *Budget) *spillStore {
	return &spillStore{ec: ec, budget: budget, gone: map[string]bool{}}
}

// evictMap moves entries of an operator's state m to *store (made on first
// use) until budget's evictTarget is freed: spill gives entry k's spilled
// record and the bytes moving it frees, or ok false to keep it in memory.
// held is the operator's share of the budget.
func evictMap[V any](m map[string]V, ec *exec.Context, budget *Budget, store **spillStore, held *int64, spill func(k string, v V) (e stateEntry, freed int64, ok bool)) error {
	if *store == nil {
		*store = newSpillStore(ec, budget)
	}
	var out []stateEntry
	var freed int64
	target := budget.evictTarget()
	for k, v := range m {
		if freed >= target {
			break
		}
		e, n, ok := spill(k, v)
		if !ok {
			continue
		}
		out = append(out, e)
		freed += n
		delete(m, k)
	}
	*held -= freed
	budget.add(-freed)
	return (*store).write(out)
}

type stateEntry struct {
	key string
	val []byte // nil: a tombstone
}

// forget records that key's entry was deleted from memory: older records
// of it must not come back.
func (s *spillStore) forget(key string) {
	if !s.gone[key] {
		s.gone[key] = true
		s.account(goneBytes(key))
	}
}

// write stores entries (distinct keys) and the tombstones of the keys
// forgotten since (but for those entries) as a new run.
func (s *spillStore) write(entries []stateEntry) error {
	var grow int64
	for _, e := range entries {
		if s.gone[e.key] {
			delete(s.gone, e.key)
			grow -= goneBytes(e.key)
		}
	}
	for k := range s.gone {
		entries = append(entries, stateEntry{key: k})
		grow -= goneBytes(k)
	}
	clear(s.gone)
	if len(entries) == 0 {
		return nil
	}
	slices.SortFunc(entries, func(a, b stateEntry) int { return strings.Compare(a.key, b.key) })
	run, err := s.writeRun(func(put func(key string, val []byte) error) error {
		for _, e := range entries {
			if err := put(e.key, e.val); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, run)
	s.ec.NoteSpilledRows(int64(len(entries)))
	s.account(grow + run.indexBytes())
	if len(s.runs) > maxStateRuns {
		return s.compact()
	}
	return nil
}

func goneBytes(key string) int64 { return int64(len(key)) + 32 }

func (r *stateRun) indexBytes() int64 {
	n := int64(len(r.blocks)) * 40
	for _, b := range r.blocks {
		n += int64(len(b.first))
	}
	return n
}

func (s *spillStore) account(n int64) {
	s.held += n
	s.budget.add(n)
}

// writeRun writes the records fill puts, in key order, to a new run.
func (s *spillStore) writeRun(fill func(put func(key string, val []byte) error) error) (*stateRun, error) {
	f, err := os.CreateTemp(s.ec.TempDir, "flightd-state-*")
	if err != nil {
		return nil, fmt.Errorf("spill streaming state: %w", err)
	}
	_ = os.Remove(f.Name()) // the open file stays readable
	run := &stateRun{f: f}
	w := bufio.NewWriterSize(f, 64<<10)
	blockStart := int64(-stateBlockBytes)
	err = fill(func(key string, val []byte) error {
		if run.size-blockStart >= stateBlockBytes {
			blockStart = run.size
			run.blocks = append(run.blocks, stateBlock{first: key, off: run.size})
		}
		b := binary.AppendUvarint(s.buf[:0], uint64(len(key)))
		b = append(b, key...)
		if val == nil {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(val))+1)
			b = append(b, val...)
		}
		s.buf = b
		run.size += int64(len(b))
		_, err := w.Write(b)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("spill streaming state: %w", err)
	}
	return run, nil
}

// take returns the value stored for key, or false.
func (s *spillStore) take(key string) ([]byte, bool, error) {
	if s.gone[key] || key < s.dead {
		return nil, false, nil
	}
	for i := len(s.runs) - 1; i >= 0; i-- {
		val, ok, err := s.runs[i].get(key)
		if err != nil || ok {
			return val, val != nil, err // a tombstone ends the search
		}
	}
	return nil, false, nil
}

// saved returns the value stored for key (false: none, nor on a nil
// store), for a checkpoint: the store keeps it.
func (s *spillStore) saved(key string) ([]byte, bool, error) {
	if s == nil {
		return nil, false, nil
	}
	return s.take(key)
}

// get reads key's record from the one block that may hold it: its value,
// nil for a tombstone.
func (r *stateRun) get(key string) ([]byte, bool, error) {
	i, _ := slices.BinarySearchFunc(r.blocks, key, func(b stateBlock, k string) int {
		if b.first <= k {
			return -1
		}
		return 1
	})
	if i == 0 {
		return nil, false, nil // before the first key
	}
	end := r.size
	if i < len(r.blocks) {
		end = r.blocks[i].off
	}
	block := make([]byte, end-r.blocks[i-1].off)
	if _, err := r.f.ReadAt(block, r.blocks[i-1].off); err != nil {
		return nil, false, fmt.Errorf("read spilled streaming state: %w", err)
	}
	for len(block) > 0 {
		k, v, rest, err := nextRecord(block)
		if err != nil {
			return nil, false, err
		}
		if k == key {
			return v, true, nil // v is nil for a tombstone
		}
		if k > key {
			break
		}
		block = rest
	}
	return nil, false, nil
}

func nextRecord(b []byte) (key string, val, rest []byte, err error) {
	kn, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < kn {
		return "", nil, nil, errCorruptState
	}
	key, b = string(b[n:n+int(kn)]), b[n+int(kn):]
	vn, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < vn-min(vn, 1) {
		return "", nil, nil, errCorruptState
	}
	if vn == 0 {
		return key, nil, b[n:], nil
	}
	return key, b[n : n+int(vn-1)], b[n+int(vn-1):], nil
}

// runCursor reads a run's records in order.
type runCursor struct {
	r         *bufio.Reader
	left      int64
	key       string
	val       []byte
	exhausted bool
}

func (c *runCursor) next() error {
	if c.left == 0 {
		c.exhausted = true
		return nil
	}
	kn, err := binary.ReadUvarint(c.r)
	if err != nil {
		return fmt.Errorf("read spilled streaming state: %w", err)
	}
	k := make([]byte, kn)
	if _, err := io.ReadFull(c.r, k); err != nil {
		return fmt.Errorf("read spilled streaming state: %w", err)
	}
	vn, err := binary.ReadUvarint(c.r)
	if err != nil {
		return fmt.Errorf("read spilled streaming state: %w", err)
	}
	c.val = nil
	if vn > 0 {
		c.val = make([]byte, vn-1)
		if _, err := io.ReadFull(c.r, c.val); err != nil {
			return fmt.Errorf("read spilled streaming state: %w", err)
		}
	}
	c.key = string(k)
	c.left -= int64(uvarintLen(kn) + len(k) + uvarintLen(vn) + len(c.val))
	return nil
}

func uvarintLen(x uint64) int { return len(binary.AppendUvarint(nil, x)) }

// cursors opens a cursor on every run, at the block holding s.dead.
func (s *spillStore) cursors() ([]*runCursor, error) {
	cursors := make([]*runCursor, len(s.runs))
	for i, r := range s.runs {
		var off int64
		if b, _ := slices.BinarySearchFunc(r.blocks, s.dead, func(b stateBlock, k string) int {
			if b.first <= k {
				return -1
			}
			return 1
		}); b > 0 {
			off = r.blocks[b-1].off
		}
		cursors[i] = &runCursor{r: bufio.NewReaderSize(io.NewSectionReader(r.f, off, r.size-off), 64<<10), left: r.size - off}
		if err := cursors[i].next(); err != nil {
			return nil, err
		}
	}
	return cursors, nil
}

// merge calls fn with the newest record of each key at or past s.dead, in
// key order (val nil: a tombstone), until fn returns false.
func merge(cursors []*runCursor, dead string, fn func(key string, val []byte) (bool, error)) error {
	for {
		// The smallest key; of equal keys the newest run's record.
		best := -1
		for i, c := range cursors {
			if !c.exhausted && (best < 0 || c.key <= cursors[best].key) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		key, val := cursors[best].key, cursors[best].val
		if key >= dead {
			if more, err := fn(key, val); err != nil || !more {
				return err
			}
		}
		for _, c := range cursors {
			for !c.exhausted && c.key == key {
				if err := c.next(); err != nil {
					return err
				}
			}
		}
	}
}

// each calls fn with every entry stored (the newest record of each key,
// but for tombstones and forgotten keys), in key order; nothing on a nil
// store. The operator skips the keys it holds in memory, which shadow
// their records.
func (s *spillStore) each(fn func(key string, val []byte) error) error {
	if s == nil {
		return nil
	}
	cursors, err := s.cursors()
	if err != nil {
		return err
	}
	return merge(cursors, s.dead, func(key string, val []byte) (bool, error) {
		if val == nil || s.gone[key] {
			return true, nil
		}
		return true, fn(key, val)
	})
}

// takeClosed removes and returns the entries keyed (by windowStateKey) by a
// window end or expiry at or before wm; nothing while nothing spilled.
func (s *spillStore) takeClosed(wm time.Time) ([]stateEntry, error) {
	if s == nil {
		return nil, nil
	}
	return s.takeBelow(windowStateKey([2]int64{0, wm.UnixMicro() + 1}, ""))
}

// takeBelow returns the entries with keys below limit (in key order) and
// ends them: no key below limit may be written or read again. An
// operator whose keys start with a time (a window's end) reads back what
// the time closed.
func (s *spillStore) takeBelow(limit string) ([]stateEntry, error) {
	if limit <= s.dead {
		return nil, nil
	}
	cursors, err := s.cursors()
	if err != nil {
		return nil, err
	}
	var out []stateEntry
	err = merge(cursors, s.dead, func(key string, val []byte) (bool, error) {
		if key >= limit {
			return false, nil
		}
		if val != nil && !s.gone[key] {
			out = append(out, stateEntry{key: key, val: val})
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	s.dead = limit
	for k := range s.gone {
		if k < limit {
			delete(s.gone, k)
			s.account(-goneBytes(k))
		}
	}
	return out, nil
}

// compact merges every run into one: the newest record of each key,
// unless it is a tombstone (nothing older is left for it to hide) or
// below s.dead.
func (s *spillStore) compact() error {
	cursors, err := s.cursors()
	if err != nil {
		return err
	}
	run, err := s.writeRun(func(put func(key string, val []byte) error) error {
		return merge(cursors, s.dead, func(key string, val []byte) (bool, error) {
			if val != nil {
				return true, put(key, val)
			}
			return true, nil
		})
	})
	if err != nil {
		return err
	}
	grow := run.indexBytes()
	for _, r := range s.runs {
		grow -= r.indexBytes()
		r.f.Close()
	}
	s.runs = []*stateRun{run}
	s.account(grow)
	return nil
}

// close removes the runs and frees what the store accounted.
func (s *spillStore) close() {
	for _, r := range s.runs {
		r.f.Close()
	}
	s.runs = nil
	s.budget.add(-s.held)
	s.held = 0
}

// spilledKeys are the keys an operator moved to its spillStore, each with
// the time t its record is keyed by (windowStateKey {0, t}): the watermark
// that reaches t brings it back.
type spilledKeys map[string]int64

// entry is key k's record val, due at time t, for the spill store; it
// remembers k as spilled.
func (s spilledKeys) entry(k string, t int64, val []byte) stateEntry {
	s[k] = t
	return stateEntry{key: windowStateKey([2]int64{0, t}, k), val: val}
}

// take reads key k's record back from store and forgets it there (ok
// false: k is not spilled).
func (s spilledKeys) take(store *spillStore, k string) (val []byte, ok bool, err error) {
	t, spilled := s[k]
	if !spilled {
		return nil, false, nil
	}
	key := windowStateKey([2]int64{0, t}, k)
	if val, ok, err = store.take(key); err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, fmt.Errorf("%w: spilled key %q not found", errCorruptState, k)
	}
	store.forget(key)
	delete(s, k)
	return val, true, nil
}

// takeClosed takes the records of the keys due at or before wm back from
// store, calling fn with each key and record.
func (s spilledKeys) takeClosed(store *spillStore, wm time.Time, fn func(k string, val []byte) error) error {
	entries, err := store.takeClosed(wm)
	if err != nil {
		return err
	}
	for _, e := range entries {
		k := e.key[16:]
		delete(s, k)
		if err := fn(k, e.val); err != nil {
			return err
		}
	}
	return nil
}
