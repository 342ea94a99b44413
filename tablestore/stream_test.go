package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// changeModel applies a change stream to a table image: by primary key for
// key tables, as a multiset of rows for append tables.
type changeModel struct {
	keyed bool
	nkeys int
	rows  map[string]string // key -> row (keyed)
	bag   map[string]int    // row -> copies (append)
	// strict: retractions must carry the exact row they retract.
	strict bool
}

func newChangeModel(keyed bool, nkeys int, strict bool, base []string) *changeModel {
	m := &changeModel{keyed: keyed, nkeys: nkeys, rows: map[string]string{}, bag: map[string]int{}, strict: strict}
	for _, r := range base {
		m.apply("+I", r)
	}
	return m
}

func (m *changeModel) key(row string) string {
	return strings.Join(strings.Split(row, "|")[:m.nkeys], "|")
}

func (m *changeModel) apply(kind, row string) error {
	if !m.keyed {
		switch kind {
		case "+I", "+U":
			m.bag[row]++
		default:
			if m.bag[row] == 0 {
				return fmt.Errorf("%s %s: no such row", kind, row)
			}
			if m.bag[row]--; m.bag[row] == 0 {
				delete(m.bag, row)
			}
		}
		return nil
	}
	k := m.key(row)
	switch kind {
	case "+I", "+U":
		m.rows[k] = row
	case "-U", "-D":
		if old, ok := m.rows[k]; m.strict && (!ok || old != row) {
			return fmt.Errorf("%s %s retracts %q", kind, row, old)
		}
		delete(m.rows, k)
	default:
		return fmt.Errorf("row kind %q", kind)
	}
	return nil
}

func (m *changeModel) image() []string {
	var out []string
	if m.keyed {
		out = slices.Collect(maps.Values(m.rows))
	} else {
		for r, n := range m.bag {
			for range n {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}

// applyBatch applies a change batch (RowKindColumn first).
func (m *changeModel) applyBatch(b arrow.RecordBatch) error {
	for i := 0; i < int(b.NumRows()); i++ {
		var cells []string
		for _, c := range b.Columns()[1:] {
			cells = append(cells, cellString(c, i))
		}
		if err := m.apply(b.Column(0).ValueStr(i), strings.Join(cells, "|")); err != nil {
			return err
		}
	}
	return nil
}

var streamSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// TestChangeStreamRandom: writers commit random upserts, deletes and
// overwrites while compaction and aggressive expiry run; readers from every
// start mode apply their streams to the image they started from and must
// end equal to the table's last snapshot.
func TestChangeStreamRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	cases := []struct {
		name  string
		pk    []string
		opts  map[string]string
		exact bool // retractions carry the retracted row
	}{
		{"dedup-none", []string{"k"}, map[string]string{"bucket": "2"}, false},
		{"dedup-none-compacting", []string{"k"}, map[string]string{"bucket": "2", "num-sorted-run.compaction-trigger": "2"}, false},
		{"append", nil, map[string]string{}, true},
		{"dedup-input", []string{"k"}, map[string]string{"bucket": "2", "changelog-producer": "input"}, false},
		{"dedup-lookup", []string{"k"}, map[string]string{"bucket": "2", "changelog-producer": "lookup"}, true},
		{"dedup-full-compaction", []string{"k"}, map[string]string{"bucket": "2", "changelog-producer": "full-compaction", "full-compaction.delta-commits": "3"}, true},
		{"partial-update-lookup", []string{"k"}, map[string]string{"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true", "changelog-producer": "lookup"}, true},
		{"aggregation-lookup", []string{"k"}, map[string]string{"merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "fields.v.aggregate-function": "max", "fields.v.ignore-retract": "true", "changelog-producer": "lookup"}, true},
		{"first-row-lookup", []string{"k"}, map[string]string{"merge-engine": "first-row", "ignore-delete": "true", "changelog-producer": "lookup"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // mostly waiting on fsync
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			runChangeStream(t, rng, c.pk, c.opts, c.exact)
		})
	}
}

func runChangeStream(t *testing.T, rng *rand.Rand, pk []string, opts map[string]string, exact bool) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	opts = maps.Clone(opts)
	opts["snapshot.num-retained.min"] = "1"
	opts["snapshot.time-retained"] = "1ms"
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: streamSchema, PrimaryKey: pk, Options: opts}, false)
	must(t, err)
	keyed := len(pk) > 0

	type reader struct {
		name  string
		r     *ChangeReader
		model *changeModel
		err   error
	}
	var (
		readers []*reader
		expMu   sync.Mutex // reader start and base image vs expiry
		final   atomic.Int64
		wg      sync.WaitGroup
	)
	run := func(rd *reader) {
		defer wg.Done()
		defer rd.r.Close()
		for {
			ch, err := rd.r.Next(ctx)
			if err != nil {
				rd.err = err
				return
			}
			if ch.Batch == nil {
				if f := final.Load(); f > 0 && ch.Snapshot >= f {
					return
				}
				continue
			}
			if err := rd.model.applyBatch(ch.Batch); err != nil {
				rd.err = fmt.Errorf("snapshot %d: %w", ch.Snapshot, err)
				return
			}
		}
	}
	start := func(name string, spec StreamSpec, baseFrom func(r *ChangeReader) int64) {
		expMu.Lock()
		defer expMu.Unlock()
		spec.Heartbeat = 20 * time.Millisecond
		spec.Poll = 50 * time.Millisecond
		r, err := tbl.NewChangeReader(ctx, spec)
		must(t, err)
		var base []string
		if id := baseFrom(r); id > 0 {
			base = scanAll(t, tbl, ScanSpec{SnapshotID: id})
		}
		rd := &reader{name: name, r: r, model: newChangeModel(keyed, 1, exact, base)}
		readers = append(readers, rd)
		wg.Add(1)
		go run(rd)
	}
	noBase := func(*ChangeReader) int64 { return 0 }
	before := func(r *ChangeReader) int64 { return r.Base() }
	start("latest-full/empty", StreamSpec{Start: StreamLatestFull}, noBase)

	var writers sync.WaitGroup
	var commits atomic.Int64
	for w := range 3 {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
		writers.Add(1)
		go func() {
			defer writers.Done()
			for range 12 {
				var rows [][]any
				kind := Insert
				wo := WriteOptions{}
				switch x := wrng.IntN(10); {
				case x == 0 && w == 0:
					wo.Overwrite = true
				case x < 3 && keyed:
					kind = Delete
				}
				for range 1 + wrng.IntN(8) {
					var v any = fmt.Sprintf("v%d", wrng.IntN(100))
					if wrng.IntN(5) == 0 {
						v = nil
					}
					rows = append(rows, []any{wrng.IntN(40), v, wrng.IntN(1000)})
				}
				if !keyed && kind == Insert {
					// Appended rows are a multiset: keep them distinct enough
					// to catch a lost or doubled row.
					for i := range rows {
						rows[i][2] = w*100000 + int(commits.Add(1))*10 + i
					}
				}
				w := tbl.NewWrite(wo)
				b := makeBatch(t, mem, streamSchema, rows)
				err := w.Write(ctx, b, kind)
				b.Release()
				if err == nil {
					_, err = w.Commit(ctx)
				}
				if errors.Is(err, ErrConflict) {
					w.Abort()
					continue
				}
				if err != nil {
					w.Abort()
					t.Error(err)
					return
				}
			}
		}()
	}
	writers.Add(1)
	go func() { // expiry and readers joining midway
		defer writers.Done()
		for i := 0; i < 6; i++ {
			time.Sleep(5 * time.Millisecond)
			expMu.Lock()
			_, err := tbl.ExpireSnapshots(ctx)
			expMu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			latest, _ := tbl.LatestSnapshotID(ctx)
			switch i {
			case 1:
				start("latest", StreamSpec{Start: StreamLatest}, before)
			case 2:
				start("latest-full", StreamSpec{Start: StreamLatestFull}, noBase)
			case 3:
				if latest > 0 {
					start("from-snapshot-full", StreamSpec{Start: StreamFromSnapshotFull, SnapshotID: latest}, noBase)
					// The next snapshot, which may not exist yet.
					start("from-snapshot", StreamSpec{Start: StreamFromSnapshot, SnapshotID: latest + 1}, before)
				}
			case 4:
				start("from-timestamp", StreamSpec{Start: StreamFromTimestamp, Timestamp: time.Now()}, before)
			}
		}
	}()
	writers.Wait()
	must(t, tbl.Compact(ctx, true))
	last, err := tbl.LatestSnapshotID(ctx)
	must(t, err)
	final.Store(last)
	want := scanAll(t, tbl, ScanSpec{SnapshotID: last})
	wg.Wait()
	for _, rd := range readers {
		if rd.err != nil {
			t.Fatalf("%s: %v", rd.name, rd.err)
		}
		if got := rd.model.image(); !slices.Equal(got, want) {
			t.Fatalf("%s: applied stream ends at\n%q\nsnapshot %d is\n%q", rd.name, got, last, want)
		}
	}
	t.Logf("%d readers agree on %d rows at snapshot %d", len(readers), len(want), last)
}

// TestChangeStreamWakesAndEnds: a waiting reader returns a commit's rows
// without waiting for its poll interval, reports progress while idle, and
// ends after EndSnapshot.
func TestChangeStreamWakesAndEnds(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamLatest, Poll: time.Hour, Heartbeat: 10 * time.Millisecond, EndSnapshot: 3, Columns: []string{"v", "k"}})
	must(t, err)
	defer r.Close()
	if got := r.Schema().String(); !strings.Contains(got, RowKindColumn) {
		t.Fatalf("schema %s", got)
	}
	ch, err := r.Next(ctx)
	must(t, err)
	if ch.Batch != nil || ch.Snapshot != 1 {
		t.Fatalf("want a caught-up marker at 1, got %+v", ch)
	}
	ch, err = r.Next(ctx) // heartbeat
	must(t, err)
	if ch.Batch != nil || ch.Snapshot != 1 {
		t.Fatalf("want a heartbeat at 1, got %+v", ch)
	}
	written := make(chan struct{})
	// The writer releases its batches after the commits the reader sees:
	// wait for it before the allocator check.
	defer func() { <-written }()
	go func() {
		defer close(written)
		time.Sleep(20 * time.Millisecond)
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "b"}, {2, "c"}})
		writeRows(t, tbl, mem, WriteOptions{}, Delete, [][]any{{2, nil}})
	}()
	var got []string
	for {
		begin := time.Now()
		ch, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		if d := time.Since(begin); d > 30*time.Second {
			t.Fatalf("waited %v", d)
		}
		if ch.Batch == nil {
			continue
		}
		for i := 0; i < int(ch.Batch.NumRows()); i++ {
			got = append(got, fmt.Sprintf("%d:%s %s %s", ch.Snapshot, ch.Batch.Column(0).ValueStr(i), cellString(ch.Batch.Column(1), i), ch.Batch.Column(2).ValueStr(i)))
		}
	}
	want := []string{"2:+I b 1", "2:+I c 2", "3:-D NULL 2"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestChangeStreamConsumer: a consumer's position protects the snapshots
// it still needs from expiry and resumes the stream; an abandoned consumer
// expires.
func TestChangeStreamConsumer(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	// Background compaction and expiry read the clock too.
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	s.opts.Now = clock.Now
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}, Options: map[string]string{
		"snapshot.num-retained.min": "1", "snapshot.time-retained": "1ms", "consumer.expiration-time": "1h"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamLatest, ConsumerID: "c1"})
	must(t, err)
	must(t, r.Close())
	for i := range 3 {
		writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{i + 2, "x"}})
	}
	clock.advance(time.Minute)
	_, err = tbl.ExpireSnapshots(ctx)
	must(t, err)
	r, err = tbl.NewChangeReader(ctx, StreamSpec{Start: StreamLatest, ConsumerID: "c1", EndSnapshot: 4})
	must(t, err)
	n := changeRows(t, r)
	if n != 3 {
		t.Fatalf("resumed consumer read %d rows, want 3", n)
	}
	must(t, tbl.SetConsumer(ctx, "c1", r.NextSnapshot()))
	must(t, r.Close())
	if pos, ok, err := tbl.Consumer(ctx, "c1"); err != nil || !ok || pos != 5 {
		t.Fatalf("consumer position %d %v %v", pos, ok, err)
	}
	// Abandoned for longer than consumer.expiration-time: expiry forgets it.
	clock.advance(2 * time.Hour)
	_, err = tbl.ExpireSnapshots(ctx)
	must(t, err)
	if _, ok, err := tbl.Consumer(ctx, "c1"); err != nil || ok {
		t.Fatalf("expired consumer still there: %v %v", ok, err)
	}
	// A start that has expired is an error, not a silent gap.
	if _, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamFromSnapshot, SnapshotID: 1}); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("want ErrSnapshotNotFound for an expired start, got %v", err)
	}
}

// TestChangeReaderImageMarkers: a full start frames the snapshot's rows
// with ImageStart and ImageEnd, also when it has none, and labels the rows
// ImageRows; the changes after it carry no mark.
func TestChangeReaderImageMarkers(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "m"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	must(t, err)
	marks := func(r *ChangeReader, n int) []string {
		var out []string
		for len(out) < n {
			c, err := r.Next(ctx)
			must(t, err)
			rows := int64(-1)
			if c.Batch != nil {
				rows = c.Batch.NumRows()
			}
			out = append(out, fmt.Sprintf("%d/%d/%d", c.Snapshot, c.Image, rows))
		}
		return out
	}
	r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamLatestFull})
	must(t, err)
	// The empty table: start and end of snapshot 0, then caught up.
	if got, want := marks(r, 3), []string{"0/1/-1", "0/3/-1", "0/0/-1"}; !slices.Equal(got, want) {
		t.Fatalf("empty table: %v, want %v", got, want)
	}
	must(t, r.Close())
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}, {2, "b"}})
	r, err = tbl.NewChangeReader(ctx, StreamSpec{Start: StreamLatestFull})
	must(t, err)
	if got, want := marks(r, 4), []string{"1/1/-1", "1/2/2", "1/3/-1", "1/0/-1"}; !slices.Equal(got, want) {
		t.Fatalf("one snapshot: %v, want %v", got, want)
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{3, "c"}})
	if got, want := marks(r, 1), []string{"2/0/1"}; !slices.Equal(got, want) {
		t.Fatalf("change after the image: %v, want %v", got, want)
	}
	must(t, r.Close())
}

// TestChangeStreamTableReplaced drops a streamed table on another node and
// creates it again under its name, with more snapshots than the stream
// read, between two of the stream's looks: the stream must fail ("not
// found": its table is gone) rather than go on with the new table's
// snapshots as if they were its own.
func TestChangeStreamTableReplaced(t *testing.T) {
	for _, c := range []struct {
		name string
		spec StreamSpec
		want []string
	}{
		{"changes", StreamSpec{Start: StreamFromSnapshot, SnapshotID: 1}, []string{"1:1 a", "2:2 b"}},
		{"image", StreamSpec{Start: StreamLatestFull}, []string{"2:1 a", "2:2 b"}}, // the next snapshot's parent is the image's
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, mem, dir := newTestStore(t)
			id := Ident{"db", "t"}
			def := TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}
			tbl, err := s.CreateTable(ctx, id, def, false)
			must(t, err)
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
			writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{2, "b"}})
			c.spec.Poll = 10 * time.Millisecond
			r, err := tbl.NewChangeReader(ctx, c.spec)
			must(t, err)
			defer r.Close()
			read := func() (got []string, err error) {
				for {
					ch, err := r.Next(ctx)
					if err != nil {
						return got, err
					}
					if ch.Batch == nil {
						if ch.Image == NoImage {
							return got, nil // caught up
						}
						continue
					}
					for i := range int(ch.Batch.NumRows()) {
						got = append(got, fmt.Sprintf("%d:%s %s", ch.Snapshot, ch.Batch.Column(1).ValueStr(i), cellString(ch.Batch.Column(2), i)))
					}
				}
			}
			got, err := read()
			must(t, err)
			eqRows(t, got, c.want...)

			other := openStore(t, NewLocalFS(), dir, mem)
			defer other.Close()
			must(t, other.DropTable(ctx, id, false))
			again, err := other.CreateTable(ctx, id, def, false)
			must(t, err)
			for k := range 4 {
				writeRows(t, again, mem, WriteOptions{}, Insert, [][]any{{10 + k, "new"}})
			}
			got, err = read()
			if !errors.Is(err, ErrTableNotFound) {
				t.Fatalf("after the table was replaced the stream read %q, %v; want ErrTableNotFound", got, err)
			}
			if len(got) != 0 {
				t.Fatalf("the stream read the new table's rows %q", got)
			}
		})
	}
}

// TestChangeStreamColumnDropped: a stream reaching a snapshot written
// after ALTER TABLE dropped a column it reads, or changed that column's
// type, fails with a conflict naming it; it went on reading NULLs for it
// (a job's sink got rows with NULL there, and the job, restarted, failed
// to bind). A column added or dropped that the stream does not read
// changes nothing, and snapshots before the handle's schema still read.
func TestChangeStreamColumnDropped(t *testing.T) {
	ctx := context.Background()
	s, mem, _ := newTestStore(t)
	id := Ident{"db", "t"}
	tbl, err := s.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	must(t, s.AlterTable(ctx, id, AddColumn{Name: "x", Type: arrow.PrimitiveTypes.Int64}, AddColumn{Name: "y", Type: arrow.PrimitiveTypes.Int64}))
	tbl, err = s.Table(ctx, id)
	must(t, err)
	for _, c := range []struct {
		name   string
		cols   []string
		change SchemaChange
		fails  string
	}{
		{"unread dropped", []string{"k", "v", "x"}, DropColumn{Name: "y"}, ""},
		{"added", []string{"k", "v", "x"}, AddColumn{Name: "z", Type: arrow.PrimitiveTypes.Int64}, ""},
		{"read dropped", []string{"k", "v", "x"}, DropColumn{Name: "x"}, "dropped column x"},
	} {
		r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamFromSnapshot, SnapshotID: 1, Columns: c.cols, Poll: 10 * time.Millisecond})
		must(t, err)
		must(t, s.AlterTable(ctx, id, c.change))
		after, err := s.Table(ctx, id)
		must(t, err)
		row := []any{2, "b"}
		for len(row) < after.Schema().NumFields() {
			row = append(row, nil)
		}
		writeRows(t, after, mem, WriteOptions{}, Insert, [][]any{row})
		var rows int64
		for {
			ch, err := r.Next(ctx)
			if c.fails != "" && err != nil {
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), c.fails) {
					t.Errorf("%s: %v, want a conflict naming %q", c.name, err, c.fails)
				}
				break
			}
			must(t, err)
			if ch.Batch != nil {
				rows += ch.Batch.NumRows()
			}
			if ch.Batch == nil && ch.Image == NoImage {
				if c.fails != "" {
					t.Errorf("%s: the stream read on (%d rows), want it to fail", c.name, rows)
				}
				break // caught up
			}
		}
		r.Close()
	}
}

// tableOnTwoNodes creates a key table of one row (snapshot 1) through one
// store and returns it with its handle through a second store over the
// same directory (another node).
func tableOnTwoNodes(t *testing.T) (tbl, far *Table, mem *memory.CheckedAllocator) {
	ctx := context.Background()
	s, mem, dir := newTestStore(t)
	other, err := Open(ctx, NewLocalFS(), dir, Options{Mem: mem})
	must(t, err)
	t.Cleanup(func() { other.Close() })
	id := Ident{"db", "t"}
	tbl, err = s.CreateTable(ctx, id, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	must(t, err)
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{1, "a"}})
	far, err = other.Table(ctx, id)
	must(t, err)
	return tbl, far, mem
}

// TestChangeStreamExpiredByOtherNode: a change stream's leases keep its
// snapshots from this process's expiry only. Another node over the same
// warehouse that expires them under the stream ends it with
// ErrSnapshotExpired, naming the earliest snapshot left; it said the table
// was corrupt ("snapshot 2 is missing while 4 exists") until 2026-12-05.
func TestChangeStreamExpiredByOtherNode(t *testing.T) {
	ctx := context.Background()
	tbl, far, mem := tableOnTwoNodes(t)
	r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamFromSnapshot, SnapshotID: 1, Poll: 10 * time.Millisecond})
	must(t, err)
	defer r.Close()
	for {
		ch, err := r.Next(ctx)
		must(t, err)
		if ch.Batch != nil {
			ch.Batch.Release()
			continue
		}
		if ch.Snapshot == 1 {
			break // caught up at snapshot 1
		}
	}
	for i := range 3 {
		writeRows(t, far, mem, WriteOptions{}, Insert, [][]any{{i + 2, "b"}})
	}
	n, err := far.ExpireSnapshotsWith(ctx, ExpireOptions{RetainMax: 1, RetainMin: 1})
	must(t, err)
	if n != 3 {
		t.Fatalf("the other node expired %d snapshots, want 3", n)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		ch, err := r.Next(ctx)
		if err != nil {
			if !errors.Is(err, ErrSnapshotExpired) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "earliest is") {
				t.Fatalf("stream after the other node's expiry: %v, want ErrSnapshotExpired", err)
			}
			return
		}
		if ch.Batch != nil {
			ch.Batch.Release()
		}
	}
}

// TestChangeStreamConsumerKeptOnOtherNode: a consumer's position is a file
// of the table, so another node's expiry keeps the snapshots from it on:
// the stream of a consumer on this node reads every commit the other node
// made, though that node expired down to one snapshot.
func TestChangeStreamConsumerKeptOnOtherNode(t *testing.T) {
	ctx := context.Background()
	tbl, far, mem := tableOnTwoNodes(t)
	r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamFromSnapshot, SnapshotID: 2, ConsumerID: "c1", EndSnapshot: 4, Poll: 10 * time.Millisecond})
	must(t, err)
	defer r.Close()
	for i := range 3 {
		writeRows(t, far, mem, WriteOptions{}, Insert, [][]any{{i + 2, "b"}})
	}
	n, err := far.ExpireSnapshotsWith(ctx, ExpireOptions{RetainMax: 1, RetainMin: 1})
	must(t, err)
	if n != 1 {
		t.Fatalf("the other node expired %d snapshots, want 1 (the consumer needs 2 on)", n)
	}
	if rows := changeRows(t, r); rows != 3 {
		t.Fatalf("the consumer's stream read %d rows, want the other node's 3", rows)
	}
}

// changeRows reads r to its end, counting the rows of its changes.
func changeRows(t *testing.T, r *ChangeReader) int {
	t.Helper()
	n := 0
	for {
		ch, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return n
		}
		must(t, err)
		if ch.Batch != nil {
			n += int(ch.Batch.NumRows())
			ch.Batch.Release()
		}
	}
}
