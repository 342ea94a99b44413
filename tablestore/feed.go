package tablestore

import (
	"context"
	"errors"
	"io"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/changefeed"
)

// The change streams of a table in this process share one read of each
// new snapshot's changes (package changefeed): a feed per table schema
// handle, alive while a ChangeReader uses it.

// defaultChangeFeedMemory is Options.ChangeFeedMemory's default.
const defaultChangeFeedMemory = 64 << 20

// changeFeedSnapshots bounds the snapshots a feed keeps: a stream further
// behind reads from the files.
const changeFeedSnapshots = 256

// errNotShared fails the feed's load of a snapshot too large to keep in
// memory: each stream then reads it from the files itself (prefetchReader).
var errNotShared = errors.New("snapshot changes too large to share")

// tableFeed is the shared change feed of one schema handle of a table.
type tableFeed struct {
	feed    *changefeed.Feed[unitMeta]
	planner changePlanner // all columns, no pruning
	limit   int64         // file bytes of a snapshot the feed loads
	readers int           // (tableState.mu)

	mu        sync.Mutex
	snapshots map[int64]*snapshot // recently read, immutable once published
}

// joinFeed returns the feed of sch's handles, created for the first
// reader.
func (st *tableState) joinFeed(sch *tableSchema) (*tableFeed, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f := st.feeds[sch]
	if f == nil {
		scan := &Scan{st: st, sch: sch}
		if err := scan.project(nil); err != nil {
			return nil, err
		}
		limit := st.s.opts.ChangeFeedMemory
		if limit <= 0 {
			limit = defaultChangeFeedMemory
		}
		f = &tableFeed{
			feed:      changefeed.New[unitMeta](changefeed.Limits{Bytes: limit, Snapshots: changeFeedSnapshots}, recordBytes),
			planner:   changePlanner{st: st, sch: sch, scan: scan, out: changeSchema(scan.out)},
			limit:     limit,
			snapshots: map[int64]*snapshot{},
		}
		if st.feeds == nil {
			st.feeds = map[*tableSchema]*tableFeed{}
		}
		st.feeds[sch] = f
	}
	f.readers++
	return f, nil
}

// leaveFeed ends a reader's use of f; the last reader closes it.
func (st *tableState) leaveFeed(sch *tableSchema, f *tableFeed) {
	st.mu.Lock()
	f.readers--
	last := f.readers == 0
	if last {
		delete(st.feeds, sch)
	}
	st.mu.Unlock()
	if last {
		f.feed.Close()
	}
}

// readSnapshot reads snapshot id once for all the feed's readers.
func (r *ChangeReader) readSnapshot(id int64) (*snapshot, error) {
	f := r.feed
	f.mu.Lock()
	sn := f.snapshots[id]
	f.mu.Unlock()
	if sn != nil {
		return sn, nil
	}
	sn, err := r.st.readSnapshot(id)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshots[id] = sn
	if len(f.snapshots) > changeFeedSnapshots {
		delete(f.snapshots, slices.Min(slices.Collect(maps.Keys(f.snapshots))))
	}
	return sn, nil
}

// snapshotKey identifies a snapshot's changes: manifest list names are
// unique, snapshot ids are not across a re-created table.
func snapshotKey(sn *snapshot) string {
	return sn.DeltaManifestList + "/" + sn.ChangelogManifestList
}

// get returns the shared changes of sn, or nil when the reader must read
// them itself.
func (f *tableFeed) get(ctx context.Context, sn *snapshot) (*changefeed.Snapshot[unitMeta], error) {
	return f.feed.Get(ctx, sn.ID, snapshotKey(sn), func(ctx context.Context) ([]changefeed.Part[unitMeta], error) {
		st := f.planner.st
		// The requesting reader's lease may end before the load does.
		defer st.hold(max(sn.ID-1, 1))()
		units, err := f.planner.plan(sn)
		if err != nil {
			return nil, err
		}
		var size int64
		for _, u := range units {
			for _, e := range u.files {
				size += e.File.FileSize
			}
		}
		if size > f.limit {
			return nil, errNotShared
		}
		return readUnits(ctx, units)
	})
}

// readUnits reads every unit into memory, up to GOMAXPROCS at once (the
// buckets and files of a snapshot are independent); the parts keep the
// units' order.
func readUnits(ctx context.Context, units []changeUnit) ([]changefeed.Part[unitMeta], error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := make([]changefeed.Part[unitMeta], len(units))
	errs := make([]error, len(units))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(units)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(units); i = int(next.Add(1)) - 1 {
				parts[i] = changefeed.Part[unitMeta]{Meta: units[i].unitMeta}
				if parts[i].Batches, errs[i] = readUnit(ctx, units[i]); errs[i] != nil {
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, p := range parts {
			releaseAll(p.Batches)
		}
		return nil, err
	}
	return parts, nil
}

// readUnit returns the batches of one unit, retained.
func readUnit(ctx context.Context, u changeUnit) (out []arrow.RecordBatch, err error) {
	rd, err := u.open(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := rd.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			releaseAll(out)
			out = nil
		}
	}()
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		b.Retain()
		out = append(out, b)
	}
}

func releaseAll(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}

// ChangeFeedStats returns the counters of the change feed that this
// handle's streams in this process share (zero when no stream is open).
func (t *Table) ChangeFeedStats() changefeed.Stats {
	t.st.mu.Lock()
	defer t.st.mu.Unlock()
	if f := t.st.feeds[t.schema]; f != nil {
		return f.feed.Stats()
	}
	return changefeed.Stats{}
}

// prefetchBatches is how many batches a unit read ahead of the reader
// holds.
const prefetchBatches = 2

// prefetchReader returns the batches of units in order while reading the
// next ones on up to GOMAXPROCS goroutines, each holding at most
// prefetchBatches batches: the parallel read of a stream's own snapshots
// (a full read, one the feed does not hold or too large to share), in
// bounded memory.
type prefetchReader struct {
	ctx    context.Context // the workers', cancelled by Close
	cancel context.CancelFunc
	units  []changeUnit
	outs   []chan unitBatch // per started unit, closed at its end
	cur    int              // unit whose batches are returned
	last   arrow.RecordBatch
	wg     sync.WaitGroup
}

type unitBatch struct {
	b   arrow.RecordBatch
	err error
}

func newPrefetchReader(units []changeUnit) *prefetchReader {
	p := &prefetchReader{units: units}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for range min(runtime.GOMAXPROCS(0), len(units)) {
		p.start()
	}
	return p
}

// start reads the next unit not started.
func (p *prefetchReader) start() {
	u := p.units[len(p.outs)]
	ch := make(chan unitBatch, prefetchBatches)
	p.outs = append(p.outs, ch)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(ch)
		send := func(ub unitBatch) bool {
			select {
			case ch <- ub:
				return true
			case <-p.ctx.Done():
				return false
			}
		}
		rd, err := u.open(p.ctx)
		if err != nil {
			send(unitBatch{err: err})
			return
		}
		for {
			b, err := rd.Next(p.ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rd.Close()
				send(unitBatch{err: err})
				return
			}
			b.Retain()
			if !send(unitBatch{b: b}) {
				b.Release()
				break
			}
		}
		if err := rd.Close(); err != nil {
			send(unitBatch{err: err})
		}
	}()
}

func (p *prefetchReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if p.last != nil {
		p.last.Release()
		p.last = nil
	}
	for p.cur < len(p.units) {
		select {
		case ub, ok := <-p.outs[p.cur]:
			if !ok {
				p.cur++
				if len(p.outs) < len(p.units) {
					p.start()
				}
				continue
			}
			if ub.err != nil {
				return nil, ub.err
			}
			p.last = ub.b
			return ub.b, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, io.EOF
}

// Close stops the workers and releases what they read ahead.
func (p *prefetchReader) Close() error {
	p.cancel()
	for _, ch := range p.outs[min(p.cur, len(p.outs)):] {
		for ub := range ch {
			if ub.b != nil {
				ub.b.Release()
			}
		}
	}
	p.wg.Wait()
	if p.last != nil {
		p.last.Release()
		p.last = nil
	}
	return nil
}
