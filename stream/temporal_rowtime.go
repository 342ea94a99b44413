package stream

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/vectorized"
)

// RowtimeTemporalSpec is an event-time temporal join of a probe stream
// with a versioned table (a primary-key table with a WATERMARK, read as a
// changelog): `s JOIN d FOR SYSTEM_TIME AS OF s.ts ON s.k = d.pk`.
type RowtimeTemporalSpec struct {
	// Outer pads a probe row that finds no version with NULLs (LEFT JOIN).
	Outer bool
	// ProbeKeys over the probe side's batches, TableKeys (d's primary
	// key) over the table's, pairwise equal.
	ProbeKeys, TableKeys []exec.Expr
	// ProbeTime and TableTime are the sides' event times (timestamps).
	ProbeTime, TableTime exec.Expr
	// TableFilter (nil: none), over the table's batches, keeps the rows
	// that are versions: a row it rejects is a version without a row, as
	// a join condition on the table's columns would reject it.
	TableFilter exec.Expr
}

// RowtimeTemporal is an event-time temporal join (Flink's
// TemporalRowTimeJoinOperator): each change of the table (by key) is a
// version valid from its event time, and a probe change at time t joins
// the version of its key with the largest time at or before t (of equal
// times, the one that came last). A +I or +U of the table is a version, a
// -D one that has no row (the key is deleted from the deleted row's time
// on, as the -D carries that row's time), a -U nothing (its +U follows).
//
// Probe changes wait until the watermark (the smaller of the inputs')
// reaches their time, then emit, in time order, their joined row (+I for
// changes that add, -D for those that retract; padded with NULLs under
// Outer when there is no version), which is final: every version at or
// before the watermark has arrived. A probe change at or before the
// watermark of the last marker, or with a NULL time, is late: dropped and
// counted in the markers' LateRows.
//
// Table changes are never late. Below the watermark a key keeps one
// version, its base: the newest by time when the watermark passes them,
// and then whatever change comes at or before the watermark (in arrival
// order: the table as it is now). The versions for times after the
// watermark are kept by time. So a version at or before the watermark is
// fixed once a probe row has used it, and the retraction of a probe row
// meets the version its insert met. A key with no probe row waiting, no
// version after the watermark and a deleted (or no) base is dropped. Table
// rows with a NULL time or key are no version.
//
// Output columns: row kind, probe columns, table columns.
//
// State past the budget spills at markers (after firing): a join key's
// probe rows and versions go to a spillStore keyed by the earliest probe
// time (none: after every time), so the keys a watermark fires are one
// range, read back first; a change of a spilled key reads it back.
type RowtimeTemporal struct {
	eventTimeJoin
	ec     *exec.Context
	spec   RowtimeTemporalSpec
	schema *arrow.Schema

	keys    map[string]*versioned
	active  map[string]bool // keys with probe rows or versions after the watermark
	store   *spillStore     // nil until something spills
	spilled spilledKeys     // keyed by their earliest probe time
	enc     [2]vectorized.KeyEncoder
	get     [2]rowGetter
	dec     [2][]orderedDecoder
	seq     int64 // arrival order of probe rows
	held    int64
	signs   []int8
}

// versioned is the state of one join key.
type versioned struct {
	base    *tableVersion   // at or before the watermark (nil: none)
	pending []*tableVersion // after the watermark, by time (equal times by arrival)
	probes  []*probeRow     // waiting for the watermark, by arrival
}

type tableVersion struct {
	t    int64 // microseconds
	vals []any // nil: no row (deleted)
}

type probeRow struct {
	t, seq int64
	sign   int8
	vals   []any
}

// nullProbeKey holds probe rows with a NULL key (outer joins pad them);
// other keys are "k" and their encoding, so it matches no version.
const nullProbeKey = "n"

// NewRowtimeTemporal joins probe with the versions of table by spec.
func NewRowtimeTemporal(ec *exec.Context, probe, table Operator, spec RowtimeTemporalSpec, budget *Budget) (*RowtimeTemporal, error) {
	if len(spec.ProbeKeys) != len(spec.TableKeys) || len(spec.ProbeKeys) == 0 {
		return nil, fmt.Errorf("%w: temporal join of %d probe and %d table keys", exec.ErrInvalid, len(spec.ProbeKeys), len(spec.TableKeys))
	}
	var err error
	if spec.ProbeKeys, spec.TableKeys, err = exec.CoerceJoinKeys(spec.ProbeKeys, spec.TableKeys); err != nil {
		return nil, err
	}
	j := &RowtimeTemporal{eventTimeJoin: eventTimeJoin{budget: budget}, ec: ec, spec: spec, keys: map[string]*versioned{}, active: map[string]bool{}, spilled: spilledKeys{}}
	j.two = twoInputs{in: [2]Operator{probe, table}, lock: -1}
	var fields []arrow.Field
	for s, op := range []Operator{probe, table} {
		if _, ok := []exec.Expr{spec.ProbeTime, spec.TableTime}[s].DataType().(*arrow.TimestampType); !ok {
			return nil, fmt.Errorf("%w: temporal join time is %s, not a timestamp", exec.ErrInvalid, []exec.Expr{spec.ProbeTime, spec.TableTime}[s].DataType())
		}
		fs := op.Schema().Fields()[1:]
		if j.get[s], err = rowGetterFor(fs); err != nil {
			return nil, err
		}
		for _, f := range fs {
			d, err := orderedDecoderFor(f.Type)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name, err)
			}
			j.dec[s] = append(j.dec[s], d)
			if s == 1 && spec.Outer {
				f.Nullable = true
			}
			fields = append(fields, f)
		}
	}
	j.schema = withKind(fields)
	if j.q, err = newOutQueue(ec, j.schema); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *RowtimeTemporal) Schema() *arrow.Schema { return j.schema }

func (j *RowtimeTemporal) Open(ctx context.Context) error { return j.two.open(ctx) }

func (j *RowtimeTemporal) Next(ctx context.Context) (Chunk, error) { return j.next(ctx, j) }

// addSide takes probe rows (side 0) or versions (side 1).
func (j *RowtimeTemporal) addSide(ctx context.Context, side int, b arrow.RecordBatch) error {
	if side == 0 {
		return j.addProbes(ctx, b)
	}
	return j.addVersions(ctx, b)
}

// sideRows reads a batch of side s: its row signs, join keys (encoded in
// j.enc[s]; null[i]: a NULL key) and event times (valid[i]: not NULL).
func (j *RowtimeTemporal) sideRows(ctx context.Context, s int, b arrow.RecordBatch) (null, valid []bool, times []int64, err error) {
	if j.signs, err = kindSigns(b, j.signs); err != nil {
		return nil, nil, nil, err
	}
	keyExprs, timeExpr := j.spec.ProbeKeys, j.spec.ProbeTime
	if s == 1 {
		keyExprs, timeExpr = j.spec.TableKeys, j.spec.TableTime
	}
	n := int(b.NumRows())
	ev := newBatchEval(ctx, j.ec, b)
	defer ev.release()
	keys, err := ev.encodeKeys(keyExprs, &j.enc[s])
	if err != nil {
		return nil, nil, nil, err
	}
	ts, err := ev.eval(timeExpr)
	if err != nil {
		return nil, nil, nil, err
	}
	null, valid, times = make([]bool, n), make([]bool, n), make([]int64, n)
	for i := range n {
		null[i] = slices.ContainsFunc(keys, func(k arrow.Array) bool { return k.IsNull(i) })
	}
	err = eachTime(ts, func(i int, t time.Time) { times[i], valid[i] = t.UnixMicro(), true })
	return null, valid, times, err
}

// addProbes holds a batch of probe changes until the watermark passes
// their times.
func (j *RowtimeTemporal) addProbes(ctx context.Context, b arrow.RecordBatch) error {
	null, valid, times, err := j.sideRows(ctx, 0, b)
	if err != nil {
		return err
	}
	cols := b.Columns()[1:]
	var grow int64
	for i, sign := range j.signs {
		if !valid[i] || !j.wm.IsZero() && times[i] <= j.wm.UnixMicro() {
			j.late++
			continue
		}
		if null[i] && !j.spec.Outer {
			continue // joins nothing
		}
		k := nullProbeKey
		if !null[i] {
			k = "k" + string(j.enc[0].Key(i))
		}
		v, err := j.entry(k, &grow)
		if err != nil {
			return err
		}
		j.seq++
		p := &probeRow{t: times[i], seq: j.seq, sign: sign, vals: j.get[0].row(cols, i)}
		v.probes = append(v.probes, p)
		j.active[k] = true
		grow += probeBytes(p)
	}
	j.account(grow)
	return nil
}

// addVersions applies a batch of the table's changes to the versions.
func (j *RowtimeTemporal) addVersions(ctx context.Context, b arrow.RecordBatch) error {
	null, valid, times, err := j.sideRows(ctx, 1, b)
	if err != nil {
		return err
	}
	var keep *array.Boolean
	if j.spec.TableFilter != nil {
		a, err := j.spec.TableFilter.Eval(ctx, j.ec, b)
		if err != nil {
			return err
		}
		defer a.Release()
		var ok bool
		if keep, ok = a.(*array.Boolean); !ok {
			return fmt.Errorf("%w: temporal join table filter is %s, not a boolean", exec.ErrInvalid, a.DataType())
		}
	}
	kinds := b.Column(0).(*array.String) // kindSigns checked it
	cols := b.Columns()[1:]
	var grow int64
	for i, sign := range j.signs {
		if kinds.Value(i) == kindUpdateBefore || null[i] || !valid[i] {
			continue
		}
		k := "k" + string(j.enc[1].Key(i))
		v, err := j.entry(k, &grow)
		if err != nil {
			return err
		}
		if !j.wm.IsZero() {
			v.settle(j.wm.UnixMicro(), &grow)
		}
		ver := &tableVersion{t: times[i]}
		if sign > 0 && (keep == nil || keep.IsValid(i) && keep.Value(i)) {
			ver.vals = j.get[1].row(cols, i)
		}
		grow += versionBytes(ver)
		if !j.wm.IsZero() && ver.t <= j.wm.UnixMicro() {
			grow -= versionBytes(v.base)
			v.base = ver
		} else {
			at := sort.Search(len(v.pending), func(x int) bool { return v.pending[x].t > ver.t })
			v.pending = slices.Insert(v.pending, at, ver)
			j.active[k] = true
		}
		j.dropIfEmpty(k, v, &grow)
	}
	j.account(grow)
	return nil
}

// entry returns the state of join key k, read back from disk or made,
// adding the bytes it takes to grow.
func (j *RowtimeTemporal) entry(k string, grow *int64) (*versioned, error) {
	if err := j.load(k, grow); err != nil {
		return nil, err
	}
	v := j.keys[k]
	if v == nil {
		v = &versioned{}
		j.keys[k] = v
		*grow += keyBytes(k)
	}
	return v, nil
}

// settle folds the versions at or before watermark wm into the base: the
// newest of them.
func (v *versioned) settle(wm int64, grow *int64) {
	n := sort.Search(len(v.pending), func(x int) bool { return v.pending[x].t > wm })
	if n == 0 {
		return
	}
	for _, old := range append(v.pending[:n:n], v.base) {
		*grow -= versionBytes(old)
	}
	v.base = v.pending[n-1]
	*grow += versionBytes(v.base)
	v.pending = slices.Delete(v.pending, 0, n)
}

// at is the version of v for a probe row at time t.
func (v *versioned) at(t int64) *tableVersion {
	if i := sort.Search(len(v.pending), func(x int) bool { return v.pending[x].t > t }); i > 0 {
		return v.pending[i-1]
	}
	return v.base
}

// dropIfEmpty forgets key k when nothing of it can join any more.
func (j *RowtimeTemporal) dropIfEmpty(k string, v *versioned, grow *int64) {
	if len(v.probes) > 0 || len(v.pending) > 0 {
		return
	}
	delete(j.active, k)
	if v.base == nil || v.base.vals == nil {
		*grow -= versionBytes(v.base) + keyBytes(k)
		delete(j.keys, k)
	}
}

// advance emits the probe rows at or before watermark wm, in time order per
// key, and settles the versions it passed.
func (j *RowtimeTemporal) advance(wm time.Time) error {
	if err := j.unspill(wm); err != nil {
		return err
	}
	limit := wm.UnixMicro()
	var grow int64
	width := len(j.get[1])
	for k := range j.active {
		v := j.keys[k]
		slices.SortFunc(v.probes, func(a, b *probeRow) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.seq, b.seq)) })
		n := sort.Search(len(v.probes), func(x int) bool { return v.probes[x].t > limit })
		for _, p := range v.probes[:n] {
			grow -= probeBytes(p)
			ver := v.at(p.t)
			if ver == nil || ver.vals == nil {
				if !j.spec.Outer {
					continue
				}
				ver = &tableVersion{vals: make([]any, width)}
			}
			kind := kindInsert
			if p.sign < 0 {
				kind = kindDelete
			}
			j.q.add(kind, append(slices.Clone(p.vals), ver.vals...))
		}
		v.probes = slices.Delete(v.probes, 0, n)
		v.settle(limit, &grow)
		j.dropIfEmpty(k, v, &grow)
	}
	j.q.seal()
	j.account(grow)
	return nil
}

func (j *RowtimeTemporal) account(n int64) {
	j.held += n
	j.budget.add(n)
}

func keyBytes(k string) int64 { return int64(len(k)) + 64 }

func probeBytes(p *probeRow) int64 { return rowBytes(p.vals) + 48 }

func versionBytes(v *tableVersion) int64 {
	if v == nil {
		return 0
	}
	return rowBytes(v.vals) + 32
}

// firstProbe is the earliest time of v's probe rows (math.MaxInt64: none):
// the time its state spills under, so the keys a watermark fires are one
// range.
func firstProbe(v *versioned) int64 {
	first := int64(math.MaxInt64)
	for _, p := range v.probes {
		first = min(first, p.t)
	}
	return first
}

// evict moves join keys to disk until half the budget is free. It runs
// after advance: every probe row held is after the watermark.
func (j *RowtimeTemporal) evict() error {
	return evictMap(j.keys, j.ec, j.budget, &j.store, &j.held, func(k string, v *versioned) (stateEntry, int64, bool) {
		delete(j.active, k) // every key evicted leaves memory
		return j.spilled.entry(k, firstProbe(v), encodeVersioned(v)), j.bytes(k, v) - spilledBytes(k), true
	})
}

// bytes is what key k's state v accounts.
func (j *RowtimeTemporal) bytes(k string, v *versioned) int64 {
	n := keyBytes(k) + versionBytes(v.base)
	for _, p := range v.pending {
		n += versionBytes(p)
	}
	for _, p := range v.probes {
		n += probeBytes(p)
	}
	return n
}

func appendVersion(b []byte, v *tableVersion) []byte {
	if v.vals == nil {
		return binary.AppendVarint(append(b, 0), v.t)
	}
	return appendRow(binary.AppendVarint(append(b, 1), v.t), v.vals)
}

func encodeVersioned(v *versioned) []byte {
	b := []byte{0}
	if v.base != nil {
		b = appendVersion([]byte{1}, v.base)
	}
	b = binary.AppendUvarint(b, uint64(len(v.pending)))
	for _, p := range v.pending {
		b = appendVersion(b, p)
	}
	b = binary.AppendUvarint(b, uint64(len(v.probes)))
	for _, p := range v.probes {
		b = binary.AppendVarint(binary.AppendVarint(b, p.t), p.seq)
		b = appendRow(append(b, byte(p.sign+1)), p.vals)
	}
	return b
}

func (j *RowtimeTemporal) decodeVersion(b []byte) (*tableVersion, []byte, error) {
	if len(b) == 0 {
		return nil, nil, errCorruptState
	}
	has := b[0] == 1
	t, m := binary.Varint(b[1:])
	if m <= 0 {
		return nil, nil, errCorruptState
	}
	v := &tableVersion{t: t}
	b = b[1+m:]
	if !has {
		return v, b, nil
	}
	var err error
	v.vals, b, err = decodeRow(b, j.dec[1])
	return v, b, err
}

// decode puts key k's state (encodeVersioned's b) back in memory,
// adding its bytes to grow.
func (j *RowtimeTemporal) decode(k string, b []byte, grow *int64) error {
	v := &versioned{}
	var err error
	if len(b) == 0 {
		return errCorruptState
	}
	if b[0] == 1 {
		if v.base, b, err = j.decodeVersion(b[1:]); err != nil {
			return err
		}
	} else {
		b = b[1:]
	}
	n, m := binary.Uvarint(b)
	if m <= 0 || n > uint64(len(b)) {
		return errCorruptState
	}
	b = b[m:]
	for range n {
		var p *tableVersion
		if p, b, err = j.decodeVersion(b); err != nil {
			return err
		}
		v.pending = append(v.pending, p)
	}
	if n, m = binary.Uvarint(b); m <= 0 || n > uint64(len(b)) {
		return errCorruptState
	}
	b = b[m:]
	for range n {
		p := &probeRow{}
		for _, x := range []*int64{&p.t, &p.seq} {
			if *x, m = binary.Varint(b); m <= 0 {
				return errCorruptState
			}
			b = b[m:]
		}
		if len(b) == 0 {
			return errCorruptState
		}
		p.sign = int8(b[0]) - 1
		if p.vals, b, err = decodeRow(b[1:], j.dec[0]); err != nil {
			return err
		}
		v.probes = append(v.probes, p)
	}
	if len(b) != 0 {
		return errCorruptState
	}
	j.keys[k] = v
	if len(v.probes) > 0 || len(v.pending) > 0 {
		j.active[k] = true
	}
	*grow += j.bytes(k, v)
	return nil
}

// load reads spilled join key k back, adding its bytes to grow.
func (j *RowtimeTemporal) load(k string, grow *int64) error {
	b, ok, err := j.spilled.take(j.store, k)
	if !ok || err != nil {
		return err
	}
	*grow -= spilledBytes(k)
	return j.decode(k, b, grow)
}

// unspill brings back the spilled keys with probe rows at or before wm.
func (j *RowtimeTemporal) unspill(wm time.Time) error {
	var grow int64
	err := j.spilled.takeClosed(j.store, wm, func(k string, b []byte) error {
		grow -= spilledBytes(k)
		return j.decode(k, b, &grow)
	})
	j.account(grow)
	return err
}

// SaveState saves the inputs' positions, the watermark, the late count and
// every key's versions and probe rows, in memory and spilled.
func (j *RowtimeTemporal) SaveState(w *StateWriter) error {
	j.two.saveProgress(w, j.wm, j.late)
	w.Varint(j.seq)
	for k, v := range j.keys {
		w.Entry(windowStateKey([2]int64{0, firstProbe(v)}, k), encodeVersioned(v))
	}
	err := w.spilled(j.store, func(key string) bool { _, ok := j.keys[key[16:]]; return ok })
	w.EndEntries()
	return err
}

// RestoreState loads the saved state into memory, spilling past the
// budget.
func (j *RowtimeTemporal) RestoreState(r *StateReader) (err error) {
	if j.wm, j.late, err = j.two.restoreProgress(r); err != nil {
		return err
	}
	if j.seq, err = r.Varint(); err != nil {
		return err
	}
	err = r.entriesWithin(j.budget, &j.held, j.evict, func(key string, val []byte) (grow int64, err error) {
		if len(key) < 16 {
			return 0, errCorruptCheckpoint
		}
		err = j.decode(key[16:], val, &grow)
		return grow, err
	})
	if err != nil {
		return err
	}
	return r.end()
}

// Close frees the state, spilled included.
func (j *RowtimeTemporal) Close() error {
	if j.store != nil {
		j.store.close()
	}
	j.q.release()
	j.account(-j.held)
	return j.two.close()
}
