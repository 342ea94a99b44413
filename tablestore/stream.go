package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/tablestore/changefeed"
	"github.com/flightd/flightd/tablestore/meta"
)

// RowKindColumn is the first column of every change batch: "+I", "-U",
// "+U" or "-D".
const RowKindColumn = "_row_kind"

// StreamStart says where a change stream begins (Paimon's scan.mode).
type StreamStart int

const (
	// StreamLatest: the changes of snapshots committed after the reader
	// starts.
	StreamLatest StreamStart = iota
	// StreamLatestFull: the latest snapshot as +I rows, then the changes
	// after it.
	StreamLatestFull
	// StreamFromSnapshot: the changes of snapshot SnapshotID and later.
	StreamFromSnapshot
	// StreamFromSnapshotFull: snapshot SnapshotID as +I rows, then the
	// changes after it.
	StreamFromSnapshotFull
	// StreamFromTimestamp: the changes of snapshots committed after
	// Timestamp.
	StreamFromTimestamp
)

// StreamSpec says what a ChangeReader reads.
type StreamSpec struct {
	Start      StreamStart
	SnapshotID int64
	// Tag, with StreamFromSnapshotFull, reads the full snapshot from the
	// tag SnapshotID names, which keeps it after expiry.
	Tag       string
	Timestamp time.Time
	// Columns is the projection (nil: all columns), after RowKindColumn.
	Columns []string
	// Filter skips data that cannot match; the caller filters rows.
	Filter Predicate
	// ConsumerID, when set, resumes from the consumer's recorded position
	// (overriding Start) and records the start position of a new consumer
	// (not for *Full starts: a resume in the middle of the full snapshot
	// would lose rows), so expiry keeps what it still needs. The position
	// moves only by SetConsumer.
	ConsumerID string
	// EndSnapshot ends the stream after that snapshot (0: never ends).
	EndSnapshot int64
	// Heartbeat is how often a waiting reader returns a progress marker
	// (0: only once, when it catches up).
	Heartbeat time.Duration
	// Poll is how often a waiting reader looks for snapshots committed by
	// other processes (default one second); commits of this process wake
	// it at once.
	Poll time.Duration
}

// Change is one result of ChangeReader.Next. With a Batch, it holds rows
// of snapshot Snapshot (borrowed until the next call to Next or Close);
// the batches of one snapshot are contiguous. Without one it is a
// progress marker: every change up to snapshot Snapshot has been returned.
type Change struct {
	Batch    arrow.RecordBatch
	Snapshot int64
	// Image marks the full read of snapshot Snapshot that *Full starts
	// begin with: the rows are the table's content, not changes, so a
	// consumer that restarts from a full read (a stream without a
	// committed position) must drop what it built before.
	Image Image
}

// Image says where a Change stands in the full read of a snapshot.
type Image int8

const (
	// NoImage: a change, or a progress marker.
	NoImage Image = iota
	// ImageStart, a marker without Batch: the full read of Snapshot
	// begins; the consumer's state is to be replaced by the rows that
	// follow, which may be none.
	ImageStart
	// ImageRows: Batch holds rows of Snapshot's content, as +I.
	ImageRows
	// ImageEnd, a marker without Batch: the content of Snapshot is
	// complete; changes of later snapshots follow.
	ImageEnd
)

// ChangeReader streams a table's changes snapshot by snapshot. Where the
// table has a changelog producer it reads the changelog files of each
// snapshot; with none it reads the files APPEND commits added (upserts as
// written, without before-images) and turns OVERWRITE commits into -D of
// the rows they replaced and +I of the new rows. COMPACT snapshots carry
// no changes unless the producer wrote a changelog for them.
//
// The readers of a table in this process share each snapshot's changes
// (tableFeed): one reads and decodes them, reading its buckets and files in
// parallel, and each reader projects and prunes the shared batches itself.
// A reader the feed no longer holds a snapshot for (it fell behind) reads
// that snapshot from the files itself, reading a few files or buckets ahead
// in parallel (changefeed.Prefetch); so do the full reads of *Full starts.
//
// The reader leases the snapshot it reads, so expiry cannot remove its
// files (no gap across compaction or expiry). Not safe for concurrent use.
type ChangeReader struct {
	changePlanner // the reader's projection and pruning
	t             *Table
	spec          StreamSpec
	next          int64 // first snapshot not yet read
	cur           int64 // snapshot being returned
	// curSum is the checksum of snapshot cur as read (0: not known), which
	// the next one names as its Parent.
	curSum uint32
	units  []changefeed.Unit[unitMeta]
	rd     BatchReader
	feed   *tableFeed
	// shared holds the changes of snapshot cur read by the feed; the next
	// batch to return is shared.Parts[part].Batches[batch].
	shared      *changefeed.Snapshot[unitMeta]
	part, batch int
	projected   arrow.RecordBatch // the last batch returned from shared
	// columnsChecked is the last schema version checkColumns accepted.
	columnsChecked int64
	full           *Scan // the initial snapshot of the *Full starts
	lease          func()
	leased         int64 // the snapshot the lease starts at
	base           int64 // the snapshot the changes apply to (0: the empty table)
	image          Image // ImageStart until returned, then ImageRows during the full read
	caught         bool  // a progress marker was returned since the last batch
	// missing is set when snapshot next was found missing: it is closed at
	// this process's next commit, so until then only a poll looks again;
	// looked is when storage was last asked.
	missing <-chan struct{}
	looked  time.Time
}

// NewChangeReader starts a change stream.
func (t *Table) NewChangeReader(ctx context.Context, spec StreamSpec) (*ChangeReader, error) {
	st := t.st
	if spec.Poll <= 0 {
		spec.Poll = time.Second
	}
	r := &ChangeReader{t: t, spec: spec}
	r.changePlanner = changePlanner{st: st, sch: t.schema, scan: &Scan{st: st, sch: t.schema, filter: spec.Filter}}
	if err := r.scan.project(spec.Columns); err != nil {
		return nil, err
	}
	r.out = changeSchema(r.scan.out)
	latest, err := st.latestSnapshotID()
	if err != nil {
		return nil, err
	}
	resumed := false
	if spec.ConsumerID != "" {
		pos, ok, err := t.Consumer(ctx, spec.ConsumerID)
		if err != nil {
			return nil, err
		}
		if ok {
			r.next, resumed = pos, true
		}
	}
	fullAt := int64(0)
	if !resumed {
		switch spec.Start {
		case StreamLatest:
			r.next = latest + 1
		case StreamLatestFull:
			fullAt, r.next = latest, latest+1
		case StreamFromSnapshot, StreamFromSnapshotFull:
			if spec.SnapshotID < 1 {
				return nil, fmt.Errorf("stream %s: %w: snapshot id must be positive, got %d", st.id, ErrInvalid, spec.SnapshotID)
			}
			// From-snapshot may name the next snapshot, not yet committed.
			limit := latest
			if spec.Start == StreamFromSnapshot {
				limit++
			}
			if spec.SnapshotID > limit {
				return nil, fmt.Errorf("stream %s: snapshot %d: %w (latest is %d)", st.id, spec.SnapshotID, ErrSnapshotNotFound, latest)
			}
			r.next = spec.SnapshotID
			if spec.Start == StreamFromSnapshotFull {
				fullAt, r.next = spec.SnapshotID, spec.SnapshotID+1
			}
		case StreamFromTimestamp:
			id, err := t.SnapshotAsOf(ctx, spec.Timestamp)
			switch {
			case errors.Is(err, ErrSnapshotNotFound):
				// Nothing was committed up to the timestamp: every retained
				// snapshot is after it, which is complete only if none expired.
				earliest, err := st.earliestSnapshotID()
				if err != nil {
					return nil, err
				}
				if earliest > 1 {
					return nil, fmt.Errorf("stream %s: changes since %s: %w: snapshots before %d have expired", st.id, spec.Timestamp.UTC().Format(time.RFC3339Nano), ErrSnapshotNotFound, earliest)
				}
				r.next = 1
			case err != nil:
				return nil, err
			default:
				r.next = id + 1
			}
		default:
			return nil, fmt.Errorf("stream %s: %w: unknown start %d", st.id, ErrInvalid, spec.Start)
		}
	}
	if t.schema.opts.producer == producerFullCompaction {
		// The changelogs of a full-compaction table are diffs between full
		// compactions: a stream starts from the content at the last one at
		// or before its start (empty before the first), and its changes
		// come from the next.
		from := r.next - 1
		if fullAt > 0 {
			from = fullAt
		}
		// Expiry keeps the last full compaction, so none at or before the
		// start means none before it ever published a changelog.
		c, _, err := st.fullChangelogAtOrBefore(from)
		if err != nil {
			return nil, err
		}
		r.base, r.next = c, c+1
		if c == 0 {
			if r.next, err = st.earliestSnapshotID(); err != nil {
				return nil, err
			}
			r.next = max(r.next, 1)
		}
		if fullAt > 0 {
			fullAt = c
		}
	} else {
		r.base = r.next - 1
		if fullAt > 0 {
			r.base = fullAt
		}
	}
	if spec.EndSnapshot > 0 && spec.EndSnapshot < r.next-1 {
		return nil, fmt.Errorf("stream %s: %w: end snapshot %d is before the start %d", st.id, ErrInvalid, spec.EndSnapshot, r.next)
	}
	// A stream that ends at its base reads no change: it needs no snapshot
	// after it (a tagged snapshot read after those expired).
	if spec.EndSnapshot == 0 || spec.EndSnapshot >= r.next {
		if err := r.holdFrom(r.next); err != nil {
			r.Close()
			return nil, err
		}
	}
	if !resumed && (spec.Start == StreamLatestFull || spec.Start == StreamFromSnapshotFull) {
		// Framed also when the image is the empty table (fullAt 0): a
		// consumer starting over must drop its state all the same.
		r.cur, r.image = fullAt, ImageStart
	}
	if fullAt > 0 {
		full := ScanSpec{SnapshotID: fullAt, Columns: spec.Columns, Filter: spec.Filter}
		if spec.Tag != "" && !resumed && fullAt == spec.SnapshotID {
			full.SnapshotID, full.Tag = 0, spec.Tag
		}
		s, err := t.NewScan(ctx, full)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.full, r.curSum = s, s.snapSum // the image's snapshot: the next one's parent
		for _, sp := range s.Splits() {
			r.units = append(r.units, changefeed.Unit[unitMeta]{Open: r.kindUnit(Insert, sp.Open)})
		}
	}
	// A new consumer's position protects its start from expiry; a full
	// start records none until the client commits one, since resuming in
	// the middle of the full snapshot would lose rows.
	if spec.ConsumerID != "" && !resumed && fullAt == 0 {
		if err := t.SetConsumer(ctx, spec.ConsumerID, r.next); err != nil {
			r.Close()
			return nil, err
		}
	}
	if r.feed, err = st.joinFeed(r.sch); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// changeSchema is the schema of change batches with columns cols.
func changeSchema(cols *arrow.Schema) *arrow.Schema {
	return arrow.NewSchema(append([]arrow.Field{{Name: RowKindColumn, Type: arrow.BinaryTypes.String}}, cols.Fields()...), nil)
}

// holdFrom leases the snapshot before id and later ones (an OVERWRITE
// snapshot's -D rows are read from the files it removed, which expiry
// deletes with the snapshot before it), then checks id has not expired.
func (r *ChangeReader) holdFrom(id int64) error {
	st := r.t.st
	if r.lease != nil && r.leased <= id {
		// Moving forward, the lease held until now keeps id-1 from
		// expiring until the new one is in place: no need for expiry's
		// lock (a running expiry holds it while it deletes files) nor to
		// list the snapshots.
		rel := st.lease(max(id-1, 1))
		r.lease()
		r.lease, r.leased = rel, id
		return nil
	}
	rel := st.hold(max(id-1, 1))
	if r.lease != nil {
		r.lease()
	}
	r.lease, r.leased = rel, id
	earliest, err := st.earliestSnapshotID()
	if err != nil {
		return err
	}
	if earliest > id {
		return fmt.Errorf("stream %s: snapshot %d: %w: it has expired (earliest is %d)", st.id, id, ErrSnapshotNotFound, earliest)
	}
	return nil
}

// Schema is RowKindColumn followed by the projection.
func (r *ChangeReader) Schema() *arrow.Schema { return r.out }

// Base is the snapshot whose content the stream's changes apply to (0: the
// empty table); a *Full start returns that content first. It is the start
// snapshot minus one, except on full-compaction tables, whose changes are
// diffs from the last full compaction at or before the start.
func (r *ChangeReader) Base() int64 { return r.base }

// ReturnsBase reports whether the stream returns the content of Base as +I
// rows before the changes (a *Full start).
func (r *ChangeReader) ReturnsBase() bool { return r.full != nil }

// NextSnapshot is the first snapshot whose changes have not all been
// returned: the position to commit for a consumer that applied everything
// returned so far.
func (r *ChangeReader) NextSnapshot() int64 {
	if r.rd != nil || len(r.units) > 0 || r.shared != nil {
		return r.cur
	}
	return r.next
}

// Next returns the next change batch or progress marker; it blocks while
// nothing new is committed, and returns io.EOF after EndSnapshot.
func (r *ChangeReader) Next(ctx context.Context) (Change, error) {
	var idle <-chan time.Time
	if r.image == ImageStart {
		r.image = ImageRows
		return Change{Snapshot: r.cur, Image: ImageStart}, nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return Change{}, err
		}
		if r.shared != nil {
			if b := r.nextShared(); b != nil {
				r.caught = false
				return Change{Batch: b, Snapshot: r.cur}, nil
			}
			continue
		}
		if r.rd != nil {
			b, err := r.rd.Next(ctx)
			if errors.Is(err, io.EOF) {
				err = r.rd.Close()
				r.rd = nil
				if err != nil {
					return Change{}, err
				}
				continue
			}
			if err != nil {
				return Change{}, err
			}
			// Borrowed from r.rd, like the Change: until the next Next or
			// Close.
			r.caught = false
			return Change{Batch: b, Snapshot: r.cur, Image: r.image}, nil
		}
		if len(r.units) > 0 {
			r.rd, r.units = changefeed.NewPrefetch(r.units), nil
			continue
		}
		if r.full != nil {
			r.full.Close()
			r.full = nil
		}
		if r.image == ImageRows {
			r.image = NoImage
			return Change{Snapshot: r.cur, Image: ImageEnd}, nil
		}
		if r.spec.EndSnapshot > 0 && r.next > r.spec.EndSnapshot {
			return Change{}, io.EOF
		}
		if r.leased != r.next {
			// The finished snapshot's files are no longer needed.
			if err := r.holdFrom(r.next); err != nil {
				return Change{}, err
			}
		}
		wake := r.missing
		r.missing = nil
		if wake != nil && time.Since(r.looked) >= r.spec.Poll {
			// Other processes' commits close no channel: a heartbeat
			// shorter than the poll must not keep the reader from
			// looking again.
			wake = nil
		}
		if wake == nil {
			wake = r.t.st.nextPublish()
			r.looked = time.Now()
			sn, err := r.findSnapshot(r.next, wake)
			if err == nil {
				if r.curSum != 0 && sn.Parent != 0 && sn.ID == r.cur+1 && sn.Parent != r.curSum {
					return Change{}, fmt.Errorf("stream %s: snapshot %d was not committed on the snapshot %d the stream read: the table was dropped and created again, or rolled back, under the stream: %w", r.st.id, sn.ID, r.cur, ErrTableNotFound)
				}
				if err := r.checkColumns(sn); err != nil {
					return Change{}, err
				}
				if err := r.read(ctx, sn); err != nil {
					return Change{}, err
				}
				// The lease on sn stays until its readers are done.
				r.cur, r.curSum, r.next, r.caught = sn.ID, sn.Checksum, sn.ID+1, false
				continue
			}
			if !errors.Is(err, ErrSnapshotNotFound) || errors.Is(err, ErrSnapshotExpired) {
				return Change{}, err
			}
			if !r.caught {
				r.caught, r.missing = true, wake
				return Change{Snapshot: r.next - 1}, nil
			}
		}
		if idle == nil && r.spec.Heartbeat > 0 {
			idle = time.After(r.spec.Heartbeat)
		}
		select {
		case <-ctx.Done():
			r.missing = wake
			return Change{}, ctx.Err()
		case <-wake:
		case <-time.After(r.spec.Poll - time.Since(r.looked)):
		case <-idle:
			r.missing = wake
			return Change{Snapshot: r.next - 1}, nil
		}
	}
}

// checkColumns fails the stream at a snapshot written after an ALTER
// TABLE that dropped a column the stream reads or changed its type: the
// stream went on with NULLs for it (its handle's columns), and a job
// restarted on the new schema then failed to bind. A column renamed, or
// one added, changes nothing the stream reads.
func (r *ChangeReader) checkColumns(sn *meta.Snapshot) error {
	if sn.SchemaID <= r.sch.ID || sn.SchemaID == r.columnsChecked {
		return nil // written before the handle's schema: added columns read NULL
	}
	now, err := r.st.schema(sn.SchemaID)
	if err != nil {
		return err
	}
	for _, i := range r.scan.proj {
		f := r.sch.Fields[i]
		j := slices.IndexFunc(now.Fields, func(g schemaField) bool { return g.ID == f.ID })
		switch {
		case j < 0:
			return fmt.Errorf("stream %s: snapshot %d was written after ALTER TABLE dropped column %s, which the stream reads (start the query or job again): %w", r.st.id, sn.ID, f.Name, ErrConflict)
		case now.Fields[j].Type != f.Type:
			return fmt.Errorf("stream %s: snapshot %d was written after ALTER TABLE changed column %s from %s to %s, which the stream reads (start the query or job again): %w", r.st.id, sn.ID, f.Name, f.Type, now.Fields[j].Type, ErrConflict)
		}
	}
	r.columnsChecked = sn.SchemaID
	return nil
}

// read prepares the changes of snapshot sn: shared by the feed, or units
// the reader reads itself.
func (r *ChangeReader) read(ctx context.Context, sn *meta.Snapshot) error {
	s, err := r.feed.get(ctx, sn)
	if err != nil {
		return err
	}
	if s != nil {
		r.shared, r.part, r.batch = s, 0, 0
		return nil
	}
	r.units, err = r.plan(sn)
	return err
}

// nextShared returns the next batch of the shared snapshot that the
// reader's pruning keeps, projected; nil (and the snapshot released) at
// its end. The batch is borrowed until the next call to Next or Close.
func (r *ChangeReader) nextShared() arrow.RecordBatch {
	r.releaseProjected()
	for r.part < len(r.shared.Parts) {
		p := r.shared.Parts[r.part]
		if r.batch >= len(p.Batches) || !r.keeps(p.Meta) {
			r.part, r.batch = r.part+1, 0
			continue
		}
		b := p.Batches[r.batch]
		r.batch++
		// The feed's batches have every column, in schema order.
		cols := make([]arrow.Array, 1+len(r.scan.proj))
		cols[0] = b.Column(0)
		for i, f := range r.scan.proj {
			cols[1+i] = b.Column(1 + f)
		}
		r.projected = array.NewRecordBatch(r.out, cols, b.NumRows())
		return r.projected
	}
	r.shared.Release()
	r.shared = nil
	return nil
}

func (r *ChangeReader) releaseProjected() {
	if r.projected != nil {
		r.projected.Release()
		r.projected = nil
	}
}

// keeps reports whether the reader's pruning keeps a part: unpruned, any of
// its files may match.
func (p *changePlanner) keeps(m unitMeta) bool {
	if p.scan.filter == nil || m.files == nil {
		return true
	}
	for _, e := range m.files {
		if p.mayMatch(e, m.allowed) {
			return true
		}
	}
	return false
}

// changePlanner lists the readers of a snapshot's changes for one
// projection and pruning predicate.
type changePlanner struct {
	st   *tableState
	sch  *tableSchema
	scan *Scan // projection and pruning context of file reads
	out  *arrow.Schema
}

// unitMeta says what a unit reads: its files (none for a full read's
// split), pruned by the statistics of the columns allowed.
type unitMeta struct {
	files   []*meta.ManifestEntry
	allowed func(string) bool
}

// plan lists the readers of snapshot sn's changes.
func (r *changePlanner) plan(sn *meta.Snapshot) ([]changefeed.Unit[unitMeta], error) {
	var units []changefeed.Unit[unitMeta]
	file := func(e *meta.ManifestEntry, kind RowKind) {
		units = append(units, changefeed.Unit[unitMeta]{Meta: unitMeta{[]*meta.ManifestEntry{e}, anyColumn}, Open: r.fileUnit(e, kind)})
	}
	// An input changelog holds only the rows written: an overwrite's
	// removals are read from the files it replaced, as without a producer.
	p := r.sch.opts.producer
	if p != producerNone && (p != producerInput || sn.CommitKind != meta.CommitOverwrite) {
		ents, _, err := r.st.changelogFiles(sn)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if e.Kind == meta.KindAdd && r.mayMatch(e, anyColumn) {
				file(e, kindOfRow)
			}
		}
		return units, nil
	}
	switch sn.CommitKind {
	case meta.CommitAppend, meta.CommitOverwrite:
	default:
		return nil, nil
	}
	ents, _, err := r.st.listEntries(sn.DeltaManifestList)
	if err != nil {
		return nil, err
	}
	if !r.sch.hasPK() || sn.CommitKind == meta.CommitAppend {
		// Append-table files hold rows, key-table level-0 files hold the
		// written changes: both are the changes as they are.
		for _, e := range ents {
			// Each row is a change of its own: every column may prune.
			if !r.mayMatch(e, anyColumn) {
				continue
			}
			switch {
			case e.Kind == meta.KindDelete:
				file(e, Delete)
			case r.sch.hasPK():
				file(e, kindOfRow)
			default:
				file(e, Insert)
			}
		}
		return units, nil
	}
	// A key-table overwrite replaced whole buckets: their merged rows before
	// go out as -D, the merged rows after as +I.
	for _, kind := range []RowKind{Delete, Insert} {
		want := meta.KindAdd
		if kind == Delete {
			want = meta.KindDelete
		}
		var order []string
		groups := map[string][]*meta.ManifestEntry{}
		for _, e := range ents {
			// Merged with the other files of its bucket: only key
			// statistics may prune it, as in a scan.
			if e.Kind != want || !r.mayMatch(e, r.sch.isPrimaryKey) {
				continue
			}
			k := fmt.Sprintf("%s/%d", meta.PartitionKey(e.Partition), e.Bucket)
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], e)
		}
		for _, k := range order {
			files := groups[k]
			units = append(units, changefeed.Unit[unitMeta]{Meta: unitMeta{files, r.sch.isPrimaryKey}, Open: r.kindUnit(kind, func(ctx context.Context) (BatchReader, error) {
				return newMergeReader(ctx, r.scan, files, r.sch.isPrimaryKey, false, false)
			})})
		}
	}
	return units, nil
}

// mayMatch prunes a file by partition and by the statistics of the
// columns allowed.
func (r *changePlanner) mayMatch(e *meta.ManifestEntry, allowed func(string) bool) bool {
	s := r.scan
	return mayMatch(s.filter, s.partitionStats(e.Partition)) && mayMatch(s.filter, s.fileStats(e, allowed))
}

// kindOfRow takes each row's kind from the file's system columns.
const kindOfRow RowKind = -1

// fileUnit reads the rows of one file, with their own kinds (kindOfRow)
// or all as kind.
func (r *changePlanner) fileUnit(e *meta.ManifestEntry, kind RowKind) func(ctx context.Context) (changefeed.Reader, error) {
	return func(ctx context.Context) (changefeed.Reader, error) {
		s := r.scan
		df, err := s.st.openDataFile(e)
		if err != nil {
			return nil, err
		}
		rgs := s.selectRowGroups(df, anyColumn)
		if err := verifyIfFull(ctx, df, rgs); err != nil {
			return nil, err
		}
		pk := r.sch.hasPK()
		sr, err := newStreamReader(ctx, s, df, rgs, newReadTarget(s.sch, s.proj, pk))
		if err != nil {
			return nil, err
		}
		sr.raw = true
		return &kindReader{r: sr, mem: r.mem(), out: r.out, sys: pk, kind: kind}, nil
	}
}

func (r *changePlanner) mem() memory.Allocator { return r.st.s.opts.Mem }

// kindUnit gives every row of open's batches one row kind.
func (r *changePlanner) kindUnit(kind RowKind, open func(ctx context.Context) (BatchReader, error)) func(ctx context.Context) (changefeed.Reader, error) {
	return func(ctx context.Context) (changefeed.Reader, error) {
		rd, err := open(ctx)
		if err != nil {
			return nil, err
		}
		return &kindReader{r: rd, mem: r.mem(), out: r.out, kind: kind}, nil
	}
}

// kindReader prepends RowKindColumn to r's batches, dropping the system
// columns when sys; the kinds come from the system columns (kindOfRow) or
// are all kind.
type kindReader struct {
	r    BatchReader
	mem  memory.Allocator
	out  *arrow.Schema
	sys  bool
	kind RowKind
	cur  arrow.RecordBatch
}

var rowKindNames = [...]string{Insert: "+I", UpdateBefore: "-U", UpdateAfter: "+U", Delete: "-D"}

func (k *kindReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if k.cur != nil {
		k.cur.Release()
		k.cur = nil
	}
	b, err := k.r.Next(ctx)
	if err != nil {
		return nil, err
	}
	n := int(b.NumRows())
	cols := b.Columns()
	sb := array.NewStringBuilder(k.mem)
	defer sb.Release()
	sb.Reserve(n)
	sb.ReserveData(2 * n)
	if k.kind == kindOfRow {
		for _, v := range cols[1].(*array.Int8).Int8Values() {
			if v < 0 || int(v) >= len(rowKindNames) {
				return nil, fmt.Errorf("%w: row kind %d in a change file", ErrCorrupt, v)
			}
			sb.Append(rowKindNames[v])
		}
	} else {
		for range n {
			sb.Append(rowKindNames[k.kind])
		}
	}
	if k.sys {
		cols = cols[2:]
	}
	kinds := sb.NewArray()
	defer kinds.Release()
	k.cur = array.NewRecordBatch(k.out, append([]arrow.Array{kinds}, cols...), int64(n))
	return k.cur, nil
}

func (k *kindReader) Close() error {
	if k.cur != nil {
		k.cur.Release()
		k.cur = nil
	}
	return k.r.Close()
}

// Close ends the stream and releases its lease.
func (r *ChangeReader) Close() error {
	var err error
	if r.rd != nil {
		err = r.rd.Close()
		r.rd = nil
	}
	r.units = nil
	r.releaseProjected()
	if r.shared != nil {
		r.shared.Release()
		r.shared = nil
	}
	if r.feed != nil {
		r.st.leaveFeed(r.sch, r.feed)
		r.feed = nil
	}
	if r.full != nil {
		r.full.Close()
		r.full = nil
	}
	if r.lease != nil {
		r.lease()
		r.lease = nil
	}
	return err
}

// nextPublish returns a channel closed at the next commit of this process.
func (st *tableState) nextPublish() <-chan struct{} {
	for {
		if p := st.published.Load(); p != nil {
			return *p
		}
		ch := make(chan struct{})
		if st.published.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

func (st *tableState) notifyPublished() {
	if p := st.published.Swap(nil); p != nil {
		close(*p)
	}
}

var streamStartNames = [...]string{
	StreamLatest: "latest", StreamLatestFull: "latest-full", StreamFromSnapshot: "from-snapshot",
	StreamFromSnapshotFull: "from-snapshot-full", StreamFromTimestamp: "from-timestamp",
}

func (s StreamStart) String() string {
	if s < 0 || int(s) >= len(streamStartNames) {
		return fmt.Sprintf("StreamStart(%d)", int(s))
	}
	return streamStartNames[s]
}
