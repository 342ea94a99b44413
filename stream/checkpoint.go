package stream

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
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
//
// Incremental checkpoints (as Flink's changelog state backend): an
// operator's state is records and keyed states (StateWriter.Entry), and
// an operator that tracks which keys it changed (a deltaSaver: Join,
// Aggregate, Rank, Normalize) saves, in a delta, its records whole and
// of its keyed states only the keys changed since its previous save:
// their entries, or a tombstone for a key gone. A checkpoint is a base, every operator's
// state whole, or a delta on top of the previous checkpoint: the
// operators that cannot track changes save whole in it too. The files of
// a base and its deltas are a chain: each names the chain (a random id of
// its base) and the sink snapshots of the files before it, base first,
// and Load reads them all, refuses any that is torn, of another chain or
// out of order before restoring anything, and restores each operator from
// its last whole section and the deltas after it (StateReader merges
// them: a key's last entry wins, a tombstone removes it). The checkpoint
// after a barrier that was not written, and the first of a run, is a
// base; so is the next one once the deltas since the base add up to more
// bytes than the base: a restore reads at most about twice the state's
// size, and at most maxChain files. The job deletes the files before the
// base of its last checkpoint only (ChainStart).

// Checkpointer is an operator whose state a checkpoint holds. SaveState
// runs on the goroutine calling Next, right after Next returned a barrier
// marker; RestoreState runs before Open, on a new operator, with what
// SaveState wrote.
type Checkpointer interface {
	SaveState(w *StateWriter) error
	RestoreState(r *StateReader) error
}

// deltaSaver is a Checkpointer that can save a delta (StateWriter.keyed):
// trackChanges makes it record the keys it changes from then on.
type deltaSaver interface {
	Checkpointer
	trackChanges()
}

// changedKeys are the keys of a keyed state changed since the operator's
// last save, recorded once a Checkpoints tracks them (on).
type changedKeys struct {
	on   bool
	keys map[string]struct{}
}

func (c *changedKeys) track() { c.on, c.keys = true, map[string]struct{}{} }

// add records that key k changed (was added, updated or removed).
func (c *changedKeys) add(k string) {
	if c.on {
		c.keys[k] = struct{}{}
	}
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

// maxChain bounds the files of a chain (its base and deltas): a restore
// reads that many at most.
const maxChain = 64

// Checkpoints coordinates the checkpoints of one run of a streaming plan
// (see above). Add every operator of the plan to it as it is built, in an
// order that only depends on the plan.
type Checkpoints struct {
	requested atomic.Int64 // the newest barrier asked for
	rows      atomic.Int64 // rows the sources read
	interval  time.Duration

	mu          sync.Mutex
	kinds       []string // of the operators added that hold state
	deltaOps    []bool   // of those: the ones that save deltas
	unsupported []string
	saved       map[int64][]savedState // barrier -> each operator's state
	// delta says which barriers are saved as deltas (Request decides).
	delta map[int64]bool
	// spent is how long the operators took to save their state, per
	// barrier; took how long the last checkpoint Encode returned took to
	// save and encode (see Took).
	spent   map[int64]time.Duration
	took    time.Duration
	chain   chain
	pending pendingFile
	stats   CheckpointStats
	// restore holds what Load read: a reader per operator to restore,
	// nil: none; restoredBase is the sink snapshot of its chain's base.
	restore      []*StateReader
	restoreKind  []string
	restored     int
	restoredBase int64
}

// savedState is one operator's state at a barrier, in pieces; delta: of
// the keys changed since its previous save only.
type savedState struct {
	pieces [][]byte
	delta  bool
}

// chain is this run's written checkpoints since (and with) the last base:
// the next delta goes on top of them.
type chain struct {
	id    [16]byte
	snaps []int64 // the sink snapshots they are named by, base first
	last  int64   // the barrier of the last one
	base  int64   // bytes of the base
	added int64   // bytes of the deltas
}

// pendingFile is the last checkpoint Encode returned, until Written.
type pendingFile struct {
	barrier int64
	id      [16]byte
	base    bool
	size    int64
}

// CheckpointStats sums a run's checkpoints as written: how many (Bases
// of them whole), their bytes, and the time the operators took to save
// their state (on the pipeline's goroutines), Encode took, and the
// writes took.
type CheckpointStats struct {
	Count, Bases              int64
	Bytes, LastBytes          int64
	Saving, Encoding, Writing time.Duration
}

// NewCheckpoints returns a coordinator for one run of a plan whose
// checkpoints are taken every interval: its sources report progress ten
// times as often (at most every 10 ms), so that a barrier waits little on
// an idle one (a barrier goes out with a source's next marker).
func NewCheckpoints(interval time.Duration) *Checkpoints {
	return &Checkpoints{saved: map[int64][]savedState{}, spent: map[int64]time.Duration{}, delta: map[int64]bool{},
		interval: interval, chain: chain{last: -1}}
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
	ds, delta := op.(deltaSaver)
	c.mu.Lock()
	idx := len(c.kinds)
	kind := fmt.Sprintf("%T", op)
	c.kinds = append(c.kinds, kind)
	c.deltaOps = append(c.deltaOps, delta)
	c.mu.Unlock()
	if c.restore != nil {
		if idx >= len(c.restore) || c.restoreKind[idx] != kind {
			return nil, fmt.Errorf("%w: operator %d is %s, the checkpoint's is not", errCorruptCheckpoint, idx, kind)
		}
		if err := cp.RestoreState(c.restore[idx]); err != nil {
			return nil, fmt.Errorf("restore %s: %w", kind, err)
		}
		c.restored++
	}
	if delta {
		ds.trackChanges() // after the restore: its keys are not changes
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

// Request asks for barrier n (increasing, after the previous one was
// written or discarded): the sources flag their next markers with it. It
// is a delta when the previous barrier's checkpoint was written, the
// chain has room (see above), and an operator saves deltas.
func (c *Checkpoints) Request(n int64) {
	c.mu.Lock()
	ch := c.chain
	c.delta[n] = len(ch.snaps) > 0 && ch.last == n-1 && ch.added <= ch.base && len(ch.snaps) < maxChain &&
		slices.Contains(c.deltaOps, true) // else a delta would be as large as a base
	c.mu.Unlock()
	c.requested.Store(n)
}

// SourceRows is how many rows the sources have read (their changes, and
// the content a normalization starts from).
func (c *Checkpoints) SourceRows() int64 { return c.rows.Load() }

// save records operator idx's state at barrier n.
func (c *Checkpoints) save(n int64, idx int, op Checkpointer) error {
	start := time.Now()
	c.mu.Lock()
	w := &StateWriter{delta: c.delta[n] && c.deltaOps[idx]}
	c.mu.Unlock()
	if err := op.SaveState(w); err != nil {
		return fmt.Errorf("checkpoint %d: %w", n, err)
	}
	if w.err != nil {
		return fmt.Errorf("checkpoint %d: %w", n, w.err)
	}
	c.put(n, idx, savedState{pieces: w.pieces(), delta: w.delta}, start)
	return nil
}

// put records state, operator idx's at barrier n, whose saving started
// at start.
func (c *Checkpoints) put(n int64, idx int, state savedState, start time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spent[n] += time.Since(start)
	s := c.saved[n]
	if s == nil {
		s = make([]savedState, len(c.kinds))
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
	for k := range c.delta {
		if k <= n {
			delete(c.delta, k)
		}
	}
}

// Took is how long the operators took to save the state of the last
// checkpoint Encode returned, plus Encode's own time: what a checkpoint
// costs the job besides writing it, which grows with what it saves (the
// state of a base, the changes of a delta).
func (c *Checkpoints) Took() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.took
}

// Stats sums the checkpoints written (Written) so far.
func (c *Checkpoints) Stats() CheckpointStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// ChainStart is the sink snapshot of the base of the last checkpoint
// written, or before any of this run's, of the one Load read (0: none):
// the job's checkpoints before it are no longer needed.
func (c *Checkpoints) ChainStart() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.chain.snaps) > 0 {
		return c.chain.snaps[0]
	}
	return c.restoredBase
}

var checkpointMagic = []byte("flightd-checkpoint-2\n")

var errCorruptCheckpoint = fmt.Errorf("%w: corrupt checkpoint", exec.ErrInvalid)

// Encode returns checkpoint n (whose barrier marker the root handed out
// at pos) and forgets it and every older one: the file Load reads, its
// integrity checked by a CRC-32C, in pieces to be written in order. The
// operators' states are in the pieces they were saved in, not copied
// (they may be hundreds of MB). Written tells the coordinator the file
// was written, for the next delta to build on it.
func (c *Checkpoints) Encode(n int64, pos Pos) ([][]byte, error) {
	start := time.Now()
	c.mu.Lock()
	s, spent, delta := c.saved[n], c.spent[n], c.delta[n]
	c.mu.Unlock()
	c.Discard(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.unsupported) > 0 || s == nil {
		return nil, fmt.Errorf("%w: checkpoint %d was not saved", exec.ErrInvalid, n)
	}
	p := pendingFile{barrier: n, id: c.chain.id, base: !delta}
	var parents []int64
	if delta {
		parents = c.chain.snaps
	} else if _, err := rand.Read(p.id[:]); err != nil {
		return nil, err
	}
	head := append([]byte{}, checkpointMagic...)
	head = binary.AppendUvarint(head, uint64(len(pos)))
	for _, v := range pos {
		head = binary.AppendVarint(head, v)
	}
	head = append(head, p.id[:]...)
	head = binary.AppendUvarint(head, uint64(len(parents)))
	for _, v := range parents {
		head = binary.AppendVarint(head, v)
	}
	head = binary.AppendUvarint(head, uint64(len(s)))
	out := [][]byte{head}
	crc := crc32.Checksum(head, crcTable)
	p.size = int64(len(head)) + 4
	for i, sec := range s {
		if sec.pieces == nil {
			return nil, fmt.Errorf("%w: %s saved nothing at checkpoint %d", exec.ErrInvalid, c.kinds[i], n)
		}
		// The kind, whether a delta, then the section as appendBytes
		// frames it.
		size := 0
		for _, piece := range sec.pieces {
			size += len(piece)
		}
		frame := appendBytes(nil, c.kinds[i])
		if sec.delta {
			frame = append(frame, 1)
		} else {
			frame = append(frame, 0)
		}
		frame = binary.AppendUvarint(frame, uint64(size))
		out = append(out, frame)
		crc = crc32.Update(crc, crcTable, frame)
		for _, piece := range sec.pieces {
			out = append(out, piece)
			crc = crc32.Update(crc, crcTable, piece)
		}
		p.size += int64(len(frame) + size)
	}
	c.pending = p
	c.took = spent + time.Since(start)
	c.stats.Saving += spent
	c.stats.Encoding += time.Since(start)
	return append(out, binary.BigEndian.AppendUint32(nil, crc)), nil
}

// Written records that checkpoint n, the last Encode returned, was
// written as the checkpoint of sink snapshot snap, which took took.
func (c *Checkpoints) Written(n, snap int64, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending
	if p.barrier != n {
		return
	}
	if p.base {
		c.chain = chain{id: p.id, snaps: []int64{snap}, base: p.size}
		c.stats.Bases++
	} else {
		c.chain.snaps = append(slices.Clip(c.chain.snaps), snap)
		c.chain.added += p.size
	}
	c.chain.last = n
	c.stats.Count++
	c.stats.Bytes += p.size
	c.stats.LastBytes = p.size
	c.stats.Writing += took
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// checkpointFile is a checkpoint file as Load reads it.
type checkpointFile struct {
	pos     []int64
	id      [16]byte
	parents []int64
	kinds   []string
	secs    [][]byte
	deltas  []bool
}

// parseCheckpoint reads a file Encode wrote; an error when it is not
// whole.
func parseCheckpoint(data []byte) (checkpointFile, error) {
	var f checkpointFile
	if len(data) < len(checkpointMagic)+4 || !bytes.HasPrefix(data, checkpointMagic) {
		return f, fmt.Errorf("%w: not a checkpoint of this version", errCorruptCheckpoint)
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(data[len(body):]) {
		return f, fmt.Errorf("%w: checksum mismatch", errCorruptCheckpoint)
	}
	r := &StateReader{b: body[len(checkpointMagic):]}
	varints := func() ([]int64, error) {
		n, err := r.uvarint()
		if err != nil || n > uint64(len(r.b)) {
			return nil, errCorruptCheckpoint
		}
		out := make([]int64, n)
		for i := range out {
			if out[i], err = r.Varint(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var err error
	if f.pos, err = varints(); err != nil {
		return f, err
	}
	if len(r.b) < len(f.id) {
		return f, errCorruptCheckpoint
	}
	copy(f.id[:], r.b)
	r.b = r.b[len(f.id):]
	if f.parents, err = varints(); err != nil {
		return f, err
	}
	n, err := r.uvarint()
	if err != nil {
		return f, err
	}
	for range n {
		kind, err := r.Bytes()
		if err != nil {
			return f, err
		}
		if len(r.b) == 0 || r.b[0] > 1 {
			return f, errCorruptCheckpoint
		}
		delta := r.b[0] == 1
		r.b = r.b[1:]
		sec, err := r.Bytes()
		if err != nil {
			return f, err
		}
		f.kinds = append(f.kinds, string(kind))
		f.deltas = append(f.deltas, delta)
		f.secs = append(f.secs, sec)
	}
	if len(r.b) != 0 {
		return f, fmt.Errorf("%w: %d bytes past the end", errCorruptCheckpoint, len(r.b))
	}
	return f, nil
}

// Load reads checkpoint snap, which read gives (the job's checkpoint of
// a sink snapshot), taken at pos, with the files of its chain before it,
// to restore the operators Add will be given; an error when any is not
// whole, not of pos, or not of the chain, before anything is restored.
func (c *Checkpoints) Load(snap int64, pos Pos, read func(snap int64) ([]byte, error)) error {
	data, err := read(snap)
	if err != nil {
		return err
	}
	last, err := parseCheckpoint(data)
	if err != nil {
		return err
	}
	if !slices.Equal(last.pos, pos) {
		return fmt.Errorf("%w: taken at %v, not %v", errCorruptCheckpoint, last.pos, pos)
	}
	files := make([]checkpointFile, 0, len(last.parents)+1)
	for i, p := range last.parents {
		data, err := read(p)
		if err != nil {
			return fmt.Errorf("checkpoint %d of the chain of %d: %w", p, snap, err)
		}
		f, err := parseCheckpoint(data)
		if err != nil {
			return fmt.Errorf("checkpoint %d of the chain of %d: %w", p, snap, err)
		}
		if f.id != last.id || !slices.Equal(f.parents, last.parents[:i]) || !slices.Equal(f.kinds, last.kinds) {
			return fmt.Errorf("%w: checkpoint %d is not the file %d of the chain of %d", errCorruptCheckpoint, p, i, snap)
		}
		files = append(files, f)
	}
	files = append(files, last)
	restore := make([]*StateReader, len(last.kinds))
	for op := range last.kinds {
		// The operator's last whole section, then the deltas after it.
		from := len(files) - 1
		for from >= 0 && files[from].deltas[op] {
			from--
		}
		if from < 0 {
			return fmt.Errorf("%w: no whole state of %s in the chain of %d", errCorruptCheckpoint, last.kinds[op], snap)
		}
		var secs [][]byte
		for _, f := range files[from:] {
			secs = append(secs, f.secs[op])
		}
		if restore[op], err = newSectionReader(secs); err != nil {
			return err
		}
	}
	c.restore, c.restoreKind, c.restoredBase = restore, last.kinds, snap
	if len(last.parents) > 0 {
		c.restoredBase = last.parents[0]
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
//
// A section (what one operator saved) is segments, alternately plain
// records and one keyed state's entries (from its first Entry to
// EndEntries), their lengths listed at its end, so that a delta's keyed
// states can be merged into the ones of the sections before it without
// the operator's help.
type StateWriter struct {
	full [][]byte
	b    []byte // the piece being filled
	buf  []byte // see scratch
	// delta: write the keys changed since the last save only (keyed).
	delta bool
	// toc lists the lengths of the segments written so far; the one
	// being written started at segStart, and is entries when inEntries.
	toc       []uint64
	flushed   int // bytes in full
	segStart  int
	inEntries bool
	err       error
}

const stateChunk = 1 << 20

// room makes room for n more bytes in the piece being filled.
func (w *StateWriter) room(n int) {
	if cap(w.b)-len(w.b) >= n {
		return
	}
	if len(w.b) > 0 {
		w.full = append(w.full, w.b)
		w.flushed += len(w.b)
	}
	w.b = make([]byte, 0, max(stateChunk, n))
}

// endSegment ends the segment being written.
func (w *StateWriter) endSegment() {
	at := w.flushed + len(w.b)
	w.toc = append(w.toc, uint64(at-w.segStart))
	w.segStart = at
}

// pieces returns what was written, in order, then the segments' lengths:
// their count, each as a uvarint, and the bytes of that list (4 bytes).
func (w *StateWriter) pieces() [][]byte {
	w.endSegment()
	toc := binary.AppendUvarint(nil, uint64(len(w.toc)))
	for _, n := range w.toc {
		toc = binary.AppendUvarint(toc, n)
	}
	toc = binary.BigEndian.AppendUint32(toc, uint32(len(toc)))
	return append(w.full, w.b, toc)
}

// plain checks that a record is not written among a keyed state's
// entries, which only Entry and EndEntries write.
func (w *StateWriter) plain() {
	if w.inEntries && w.err == nil {
		w.err = fmt.Errorf("%w: a record written among a keyed state's entries", exec.ErrInvalid)
	}
}

// Bytes appends a record.
func (w *StateWriter) Bytes(v []byte) {
	w.plain()
	w.bytes(v)
}

func (w *StateWriter) bytes(v []byte) {
	w.room(len(v) + binary.MaxVarintLen64)
	w.b = appendBytes(w.b, v)
}

// Varint appends a number.
func (w *StateWriter) Varint(v int64) {
	w.plain()
	w.varint(v)
}

func (w *StateWriter) varint(v int64) {
	w.room(binary.MaxVarintLen64)
	w.b = binary.AppendVarint(w.b, v)
}

// Marks of a keyed state's entries: the entries end, an entry follows,
// or (in a delta) a removed key follows.
const (
	entriesEnd = iota
	entryMark
	tombstoneMark
)

// entries starts a keyed state's entries, unless they have started.
func (w *StateWriter) entries(mark int64, key string) {
	if !w.inEntries {
		w.endSegment()
		w.inEntries = true
	}
	w.varint(mark)
	if mark != entriesEnd {
		w.room(len(key) + binary.MaxVarintLen64)
		w.b = appendBytes(w.b, key)
	}
}

// Entry appends one key and value of a keyed state (groups, rows by key);
// EndEntries ends them.
func (w *StateWriter) Entry(key string, val []byte) {
	w.entries(entryMark, key)
	w.bytes(val)
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
func (w *StateWriter) EndEntries() {
	w.entries(entriesEnd, "")
	w.endSegment()
	w.inEntries = false
}

// keyed writes one keyed state and ends it: every entry (all), or in a
// delta the keys changed since the last save (changed), each with its
// value as get encodes it into scratch, or a tombstone where get has none
// (the key is gone). Either way the changes are forgotten: the next delta
// is of the changes after this save.
func (w *StateWriter) keyed(changed *changedKeys, all func() error, get func(key string, scratch []byte) ([]byte, bool, error)) error {
	var err error
	if w.delta {
		for k := range changed.keys {
			var v []byte
			var ok bool
			if v, ok, err = get(k, w.scratch()); err != nil {
				break
			}
			if ok {
				w.entryScratch(k, v)
			} else {
				w.entries(tombstoneMark, k)
			}
		}
	} else {
		err = all()
	}
	changed.keys = map[string]struct{}{} // not cleared: a map keeps its largest size
	w.EndEntries()
	return err
}

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

// StateReader reads what a StateWriter wrote, in order: the records of b,
// then each keyed state (Entries) and the records after it.
type StateReader struct {
	b []byte
	// keyed are the keyed states after b, each as the whole entries and
	// then the deltas' changes; plain the records after each.
	keyed [][][]byte
	plain [][]byte
}

// sectionSegments splits a section at the lengths its end lists.
func sectionSegments(sec []byte) ([][]byte, error) {
	if len(sec) < 4 {
		return nil, errCorruptCheckpoint
	}
	n := int(binary.BigEndian.Uint32(sec[len(sec)-4:]))
	if n > len(sec)-4 {
		return nil, errCorruptCheckpoint
	}
	data, toc := sec[:len(sec)-4-n], &StateReader{b: sec[len(sec)-4-n : len(sec)-4]}
	count, err := toc.uvarint()
	if err != nil || count%2 == 0 || count > uint64(len(toc.b)) {
		return nil, errCorruptCheckpoint
	}
	segs := make([][]byte, count)
	for i := range segs {
		size, err := toc.uvarint()
		if err != nil || size > uint64(len(data)) {
			return nil, errCorruptCheckpoint
		}
		segs[i], data = data[:size:size], data[size:]
	}
	if len(data) != 0 || len(toc.b) != 0 {
		return nil, errCorruptCheckpoint
	}
	return segs, nil
}

// newSectionReader reads an operator's state from its sections: the
// whole one, then deltas, whose records replace the ones before and
// whose keyed states' changes apply to them in order.
func newSectionReader(secs [][]byte) (*StateReader, error) {
	all := make([][][]byte, len(secs))
	for i, sec := range secs {
		var err error
		if all[i], err = sectionSegments(sec); err != nil {
			return nil, err
		}
		if len(all[i]) != len(all[0]) {
			return nil, fmt.Errorf("%w: %d segments in a delta of %d", errCorruptCheckpoint, len(all[i]), len(all[0]))
		}
	}
	last := all[len(all)-1]
	r := &StateReader{b: last[0]}
	for j := 1; j < len(last); j += 2 {
		var keyed [][]byte
		for _, segs := range all {
			keyed = append(keyed, segs[j])
		}
		r.keyed = append(r.keyed, keyed)
		r.plain = append(r.plain, last[j+1])
	}
	return r, nil
}

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

// Entries reads a keyed state's entries, calling fn with each: the whole
// state's but for the keys the deltas changed, then the changed keys'
// last entries (in no order), but for the removed ones.
func (r *StateReader) Entries(fn func(key string, val []byte) error) error {
	if len(r.b) != 0 || len(r.keyed) == 0 {
		return fmt.Errorf("%w: no keyed state where one was saved", errCorruptCheckpoint)
	}
	segs := r.keyed[0]
	r.keyed, r.b, r.plain = r.keyed[1:], r.plain[0], r.plain[1:]
	type change struct {
		val  []byte
		gone bool
	}
	var changed map[string]change
	if len(segs) > 1 {
		changed = map[string]change{}
		for _, d := range segs[1:] {
			err := eachEntry(d, true, func(k string, v []byte, gone bool) error {
				changed[k] = change{v, gone}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	err := eachEntry(segs[0], false, func(k string, v []byte, _ bool) error {
		if _, ok := changed[k]; ok {
			return nil
		}
		return fn(k, v)
	})
	if err != nil {
		return err
	}
	for k, ch := range changed {
		if !ch.gone {
			if err := fn(k, ch.val); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachEntry reads the entries of a keyed state's segment, and (delta)
// its tombstones.
func eachEntry(seg []byte, delta bool, fn func(key string, val []byte, gone bool) error) error {
	r := &StateReader{b: seg}
	for {
		mark, err := r.Varint()
		if err != nil {
			return err
		}
		if mark == entriesEnd {
			return r.end()
		}
		if mark != entryMark && (mark != tombstoneMark || !delta) {
			return fmt.Errorf("%w: entry mark %d", errCorruptCheckpoint, mark)
		}
		k, err := r.Bytes()
		if err != nil {
			return err
		}
		var v []byte
		if mark == entryMark {
			if v, err = r.Bytes(); err != nil {
				return err
			}
		}
		if err := fn(string(k), v, mark == tombstoneMark); err != nil {
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

// end reports a corrupt section when anything is left after what an
// operator read.
func (r *StateReader) end() error {
	if len(r.b) != 0 || len(r.keyed) != 0 {
		return fmt.Errorf("%w: %d bytes and %d keyed states left", errCorruptCheckpoint, len(r.b), len(r.keyed))
	}
	return nil
}
