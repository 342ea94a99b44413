package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore/changefeed"
)

// TestChangeFeedSubscribers: 21 change streams of one table, started at
// random positions and times, with random projections and key filters,
// some slow, one stalled until the others are done, some cancelled and
// resumed from their NextSnapshot, follow a writer of upserts, deletes and
// overwrites while compaction and expiry run. The feed's memory limit is
// random, from one that shares nothing to one that keeps everything.
// Each stream must
//   - keep the progress contract: batches of a snapshot contiguous and in
//     snapshot order, markers never going back nor behind a batch, a full
//     start framed by image markers;
//   - applied to the content it started from, equal the table's content at
//     the markers it is checked at and at the last snapshot (nothing lost,
//     nothing applied twice, also across a cancel and resume);
//   - return, for every snapshot, the same rows in the same order as every
//     other stream with its projection and filter, whether it read the
//     snapshot from the feed or from the files.
func TestChangeFeedSubscribers(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	cases := []struct {
		name  string
		pk    []string
		opts  map[string]string
		exact bool
	}{
		{"dedup-none", []string{"k"}, map[string]string{"bucket": "4", "num-sorted-run.compaction-trigger": "2"}, false},
		{"dedup-lookup", []string{"k"}, map[string]string{"bucket": "4", "changelog-producer": "lookup"}, true},
		{"append", nil, map[string]string{}, true},
	}
	for i, c := range cases {
		for j, budget := range []int64{1, 4 << 10, 64 << 20} {
			t.Run(fmt.Sprintf("%s/budget=%d", c.name, budget), func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(i*10+j)))
				runFeedSubscribers(t, rng, c.pk, c.opts, c.exact, budget)
			})
		}
	}
}

// feedSub is one stream of TestChangeFeedSubscribers and what it saw.
type feedSub struct {
	name    string
	spec    StreamSpec
	filter  bool // keep only k < feedKeyLimit (the spec's filter only prunes)
	slow    time.Duration
	stalled bool
	cancel  bool // cancel once at a random point, then resume
	rng     *rand.Rand
	done    chan struct{} // closed when the stream ends

	r       *ChangeReader
	model   *changeModel
	pending []string // rows of snapshot cur not yet applied
	cur     int64
	mark    int64            // last progress marker
	inImage bool             // between image start and end
	seen    map[int64]string // snapshot -> its rows, in order
	base    int64
}

const feedKeyLimit = 20

func runFeedSubscribers(t *testing.T, rng *rand.Rand, pk []string, opts map[string]string, exact bool, budget int64) {
	ctx := context.Background()
	mem := newMem(t)
	s, err := Open(ctx, NewLocalFS(), t.TempDir(), Options{Mem: mem, ChangeFeedMemory: budget})
	must(t, err)
	defer s.Close()
	must(t, s.CreateDatabase(ctx, "db", false))
	opts = maps.Clone(opts)
	opts["snapshot.num-retained.min"] = "1"
	opts["snapshot.time-retained"] = "1ms"
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: streamSchema, PrimaryKey: pk, Options: opts}, false)
	must(t, err)
	keyed := len(pk) > 0
	projections := [][]string{nil, {"k", "n"}, {"k", "v"}}
	// Append-table rows are a multiset: any projection keeps it exact.
	if !keyed {
		projections = append(projections, []string{"v"})
	}

	var (
		expMu   sync.Mutex // stream starts and base images vs expiry
		final   atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		subs    []*feedSub
		failed  = make(chan error, 1000)
		feed    *changefeed.Feed[unitMeta]
		checked atomic.Int64 // images compared at markers
	)
	fail := func(sub *feedSub, format string, args ...any) {
		failed <- fmt.Errorf("%s: %s", sub.name, fmt.Sprintf(format, args...))
	}
	// newReader opens sub's reader and its model from the content it
	// starts from (held by expMu against expiry).
	newReader := func(sub *feedSub, spec StreamSpec) error {
		r, err := tbl.NewChangeReader(ctx, spec)
		if err != nil {
			return err
		}
		sub.r = r
		if sub.model == nil {
			var base []string
			if !r.ReturnsBase() && r.Base() > 0 {
				base = sub.keep(scanAll(t, tbl, ScanSpec{SnapshotID: r.Base(), Columns: spec.Columns}))
			}
			sub.model = newChangeModel(keyed, 1, exact, base)
			sub.base = r.Base()
		}
		return nil
	}
	// complete applies the pending rows of snapshot cur.
	complete := func(sub *feedSub) error {
		if sub.cur == 0 {
			return nil
		}
		if _, dup := sub.seen[sub.cur]; dup {
			return fmt.Errorf("snapshot %d returned twice", sub.cur)
		}
		sub.seen[sub.cur] = strings.Join(sub.pending, "\n")
		for _, row := range sub.pending {
			kind, rest, _ := strings.Cut(row, " ")
			if err := sub.model.apply(kind, rest); err != nil {
				return fmt.Errorf("snapshot %d: %w", sub.cur, err)
			}
		}
		sub.pending, sub.cur = nil, 0
		return nil
	}
	run := func(sub *feedSub) {
		defer wg.Done()
		defer close(sub.done)
		defer func() { sub.r.Close() }()
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cancelAfter := -1
		if sub.cancel {
			cancelAfter = sub.rng.IntN(30)
		}
		for calls := 0; ; calls++ {
			if calls == cancelAfter {
				cancel()
			}
			if sub.slow > 0 {
				time.Sleep(sub.slow)
			}
			ch, err := sub.r.Next(rctx)
			if errors.Is(err, context.Canceled) && sub.cancel {
				// Resume from the reader's position: the snapshot it was in
				// the middle of is returned again from its start.
				next := sub.r.NextSnapshot()
				if sub.inImage {
					fail(sub, "cancelled in its full read")
					return
				}
				if sub.cur >= next {
					sub.pending, sub.cur = nil, 0
				} else if err := complete(sub); err != nil {
					fail(sub, "%v", err)
					return
				}
				expMu.Lock()
				old := sub.r
				err := newReader(sub, StreamSpec{Start: StreamFromSnapshot, SnapshotID: next, Columns: sub.spec.Columns, Filter: sub.spec.Filter, Heartbeat: sub.spec.Heartbeat, Poll: sub.spec.Poll})
				expMu.Unlock()
				old.Close() // after the new reader holds its lease
				if err != nil {
					fail(sub, "resume at %d: %v", next, err)
					return
				}
				sub.cancel, cancelAfter = false, -1
				rctx, cancel = context.WithCancel(ctx)
				defer cancel()
				continue
			}
			if err != nil {
				fail(sub, "%v", err)
				return
			}
			if ch.Batch != nil {
				if ch.Snapshot < sub.cur || ch.Snapshot <= sub.mark && ch.Image != ImageRows {
					fail(sub, "batch of snapshot %d after snapshot %d, marker %d", ch.Snapshot, sub.cur, sub.mark)
					return
				}
				if ch.Image == ImageRows {
					if !sub.inImage {
						fail(sub, "image rows outside image markers")
						return
					}
					for i := range int(ch.Batch.NumRows()) {
						if row := sub.row(ch.Batch, i); row != "" {
							if err := sub.model.apply("+I", strings.TrimPrefix(row, "+I ")); err != nil {
								fail(sub, "image: %v", err)
								return
							}
						}
					}
					continue
				}
				if ch.Snapshot != sub.cur {
					if err := complete(sub); err != nil {
						fail(sub, "%v", err)
						return
					}
					sub.cur = ch.Snapshot
				}
				for i := range int(ch.Batch.NumRows()) {
					if row := sub.row(ch.Batch, i); row != "" {
						sub.pending = append(sub.pending, row)
					}
				}
				continue
			}
			switch ch.Image {
			case ImageStart:
				sub.inImage = true
				sub.model = newChangeModel(keyed, 1, exact, nil)
				continue
			case ImageEnd:
				sub.inImage = false
				sub.mark = ch.Snapshot
				continue
			}
			if err := complete(sub); err != nil {
				fail(sub, "%v", err)
				return
			}
			if ch.Snapshot < sub.mark {
				fail(sub, "marker %d after marker %d", ch.Snapshot, sub.mark)
				return
			}
			sub.mark = ch.Snapshot
			if f := final.Load(); f > 0 && ch.Snapshot >= f {
				return
			}
			// The reader leases the marker's snapshot until its next call.
			if sub.rng.IntN(12) == 0 && ch.Snapshot > 0 {
				want := sub.keep(scanAll(t, tbl, ScanSpec{SnapshotID: ch.Snapshot, Columns: sub.spec.Columns}))
				if got := sub.model.image(); !slices.Equal(got, want) {
					fail(sub, "at marker %d the applied stream is\n%q\nthe snapshot is\n%q", ch.Snapshot, got, want)
					return
				}
				checked.Add(1)
			}
		}
	}
	stall := make(chan struct{})
	start := func(name string, rng *rand.Rand, stalled bool) {
		expMu.Lock()
		defer expMu.Unlock()
		latest, _ := tbl.LatestSnapshotID(ctx)
		earliest, _ := tbl.st.earliestSnapshotID()
		spec := StreamSpec{Heartbeat: 20 * time.Millisecond, Poll: 50 * time.Millisecond}
		switch x := rng.IntN(4); {
		case x == 0 || latest == 0:
			spec.Start = StreamLatest
		case x == 1:
			spec.Start = StreamLatestFull
		case x == 2:
			spec.Start = StreamFromSnapshot
			spec.SnapshotID = max(earliest, 1) + rng.Int64N(latest-max(earliest, 1)+2)
		default:
			spec.Start = StreamFromSnapshotFull
			spec.SnapshotID = max(earliest, 1) + rng.Int64N(latest-max(earliest, 1)+1)
		}
		spec.Columns = projections[rng.IntN(len(projections))]
		sub := &feedSub{name: name, seen: map[int64]string{}, stalled: stalled, done: make(chan struct{}), rng: rand.New(rand.NewPCG(rng.Uint64(), 3))}
		if slices.Contains(spec.Columns, "k") || spec.Columns == nil {
			if rng.IntN(3) == 0 {
				spec.Filter = Compare{Column: "k", Op: LT, Value: scalar.NewInt64Scalar(feedKeyLimit)}
				sub.filter = true
			}
		}
		if rng.IntN(3) == 0 {
			sub.slow = time.Duration(1+rng.IntN(3)) * time.Millisecond
		}
		// A cancel during a full read cannot resume: its rows are not
		// changes.
		sub.cancel = !stalled && rng.IntN(3) == 0 && spec.Start != StreamLatestFull && spec.Start != StreamFromSnapshotFull
		sub.spec = spec
		sub.name = fmt.Sprintf("%s(%s@%d cols=%v filter=%v slow=%v cancel=%v)", name, spec.Start, spec.SnapshotID, spec.Columns, sub.filter, sub.slow, sub.cancel)
		if err := newReader(sub, spec); err != nil {
			t.Errorf("%s: %v", sub.name, err)
			return
		}
		mu.Lock()
		subs = append(subs, sub)
		if feed == nil {
			feed = sub.r.feed.feed
		}
		mu.Unlock()
		wg.Add(1)
		go func() {
			if stalled {
				<-stall
			}
			run(sub)
		}()
	}
	// The first stream keeps the feed alive until the end, so its
	// counters cover the whole run.
	start("s0", rng, false)
	start("stalled", rng, true)

	var writers sync.WaitGroup
	srng := rand.New(rand.NewPCG(rng.Uint64(), 1))
	wrng := rand.New(rand.NewPCG(rng.Uint64(), 2))
	writers.Add(1)
	go func() { // streams joining while the writer runs
		defer writers.Done()
		for i := 1; i < 20; i++ {
			time.Sleep(time.Duration(srng.IntN(15)) * time.Millisecond)
			start("s"+strconv.Itoa(i), srng, false)
		}
	}()
	writers.Add(1)
	go func() {
		defer writers.Done()
		seq := 0
		for c := range 30 {
			var rows [][]any
			kind, wo := Insert, WriteOptions{}
			switch x := wrng.IntN(10); {
			case x == 0:
				wo.Overwrite = true
			case x < 3 && keyed:
				kind = Delete
			}
			for range 1 + wrng.IntN(12) {
				var v any = fmt.Sprintf("v%d", wrng.IntN(100))
				if wrng.IntN(5) == 0 {
					v = nil
				}
				seq++
				rows = append(rows, []any{wrng.IntN(40), v, seq})
			}
			w := tbl.NewWrite(wo)
			b := makeBatch(t, mem, streamSchema, rows)
			err := w.Write(ctx, b, kind)
			b.Release()
			if err == nil {
				_, err = w.Commit(ctx)
			}
			if err != nil {
				w.Abort()
				t.Error(err)
				return
			}
			if c%10 == 9 {
				if err := tbl.Compact(ctx, c%20 == 19); err != nil {
					t.Error(err)
					return
				}
			}
			expMu.Lock()
			_, err = tbl.ExpireSnapshots(ctx)
			expMu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	writers.Wait()
	last, err := tbl.LatestSnapshotID(ctx)
	must(t, err)
	final.Store(last)
	// The others reach the end while the stalled stream holds the oldest
	// snapshots: the feed never waits for a stream.
	mu.Lock()
	others := slices.DeleteFunc(slices.Clone(subs), func(sub *feedSub) bool { return sub.stalled })
	mu.Unlock()
	for _, sub := range others {
		select {
		case <-sub.done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s did not reach snapshot %d while a stream was stalled", sub.name, last)
		}
	}
	close(stall)
	wg.Wait()
	close(failed)
	for err := range failed {
		t.Fatal(err)
	}
	want := scanAll(t, tbl, ScanSpec{SnapshotID: last})
	canon := map[string]map[int64]string{} // projection and filter -> snapshot -> rows
	for _, sub := range subs {
		got := sub.model.image()
		exp := sub.keep(scanAll(t, tbl, ScanSpec{SnapshotID: last, Columns: sub.spec.Columns}))
		if !slices.Equal(got, exp) {
			t.Fatalf("%s: applied stream ends at\n%q\nsnapshot %d is\n%q", sub.name, got, last, exp)
		}
		key := fmt.Sprint(sub.cols(), sub.filter)
		if canon[key] == nil {
			canon[key] = map[int64]string{}
		}
		for id, rows := range sub.seen {
			if prev, ok := canon[key][id]; ok && prev != rows {
				t.Fatalf("%s: snapshot %d is\n%s\nanother stream got\n%s", sub.name, id, rows, prev)
			}
			canon[key][id] = rows
		}
	}
	// Every stream returned every snapshot with rows after its base.
	for _, sub := range subs {
		for id, rows := range canon[fmt.Sprint(sub.cols(), sub.filter)] {
			if _, ok := sub.seen[id]; rows != "" && id > sub.base && !ok {
				t.Fatalf("%s: snapshot %d is missing (base %d); another stream got\n%s", sub.name, id, sub.base, rows)
			}
		}
	}
	st := feed.Stats()
	t.Logf("%d streams agree on %d rows at snapshot %d; %d images checked at markers; feed %+v", len(subs), len(want), last, checked.Load(), st)
	if budget >= 64<<20 && st.Shared == 0 {
		t.Fatalf("a feed that keeps everything shared nothing: %+v", st)
	}
	if budget >= 64<<20 && st.Loads > last {
		t.Fatalf("%d snapshots loaded %d times", last, st.Loads)
	}
	if budget == 1 && st.Missed == 0 {
		t.Fatalf("a feed that keeps nothing missed nothing: %+v", st)
	}
}

// cols are the stream's columns.
func (sub *feedSub) cols() []string {
	if sub.spec.Columns == nil {
		return []string{"k", "v", "n"}
	}
	return sub.spec.Columns
}

// keeps reports whether the stream's filter keeps a row of its columns.
func (sub *feedSub) keeps(cells []string) bool {
	if !sub.filter {
		return true
	}
	k, err := strconv.Atoi(cells[slices.Index(sub.cols(), "k")])
	return err == nil && k < feedKeyLimit
}

// keep sorts rows ("c1|c2|...") and drops those the filter does not keep.
func (sub *feedSub) keep(rows []string) []string {
	rows = slices.DeleteFunc(rows, func(r string) bool { return !sub.keeps(strings.Split(r, "|")) })
	slices.Sort(rows)
	return rows
}

// row renders row i of a change batch as "kind c1|c2|...", or "" when the
// stream's filter drops it.
func (sub *feedSub) row(b arrow.RecordBatch, i int) string {
	cells := make([]string, 0, b.NumCols()-1)
	for _, c := range b.Columns()[1:] {
		cells = append(cells, cellString(c, i))
	}
	if !sub.keeps(cells) {
		return ""
	}
	return b.Column(0).ValueStr(i) + " " + strings.Join(cells, "|")
}

// TestPrefetchOrderCloseAndError: a full read through the prefetch reader
// (8 buckets read ahead in parallel) returns the rows in the order of a
// sequential scan of the same snapshot, with a small batch size so units
// hold several batches; closing it in the middle releases what was read
// ahead; a missing data file fails the read instead of skipping the bucket.
func TestPrefetchOrderCloseAndError(t *testing.T) {
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	s, err := Open(ctx, NewLocalFS(), dir, Options{Mem: mem, BatchSize: 3})
	must(t, err)
	defer s.Close()
	must(t, s.CreateDatabase(ctx, "db", false))
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: streamSchema, PrimaryKey: []string{"k"},
		Options: map[string]string{"bucket": "8", "write-only": "true"}}, false)
	must(t, err)
	var rows [][]any
	for k := range 200 {
		rows = append(rows, []any{k, fmt.Sprintf("v%d", k), k * 7})
	}
	last := writeRows(t, tbl, mem, WriteOptions{}, Insert, rows)
	fullRead := func() ([]string, error) {
		r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamFromSnapshotFull, SnapshotID: last, EndSnapshot: last})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		var got []string
		for {
			ch, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			if err != nil {
				return got, err
			}
			if ch.Batch != nil {
				for i := range int(ch.Batch.NumRows()) {
					var cells []string
					for _, c := range ch.Batch.Columns()[1:] {
						cells = append(cells, cellString(c, i))
					}
					got = append(got, strings.Join(cells, "|"))
				}
			}
		}
	}
	got, err := fullRead()
	must(t, err)
	scan, err := tbl.NewScan(ctx, ScanSpec{SnapshotID: last})
	must(t, err)
	defer scan.Close()
	var want []string
	for _, sp := range scan.Splits() {
		rd, err := sp.Open(ctx)
		must(t, err)
		for {
			b, err := rd.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			must(t, err)
			for i := range int(b.NumRows()) {
				var cells []string
				for _, c := range b.Columns() {
					cells = append(cells, cellString(c, i))
				}
				want = append(want, strings.Join(cells, "|"))
			}
		}
		must(t, rd.Close())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("prefetched full read\n%q\nsequential scan\n%q", got, want)
	}

	// Closed after its first batch, with the other buckets read ahead.
	r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamFromSnapshotFull, SnapshotID: last})
	must(t, err)
	for {
		ch, err := r.Next(ctx)
		must(t, err)
		if ch.Batch != nil {
			break
		}
	}
	must(t, r.Close())

	files, err := filepath.Glob(filepath.Join(dir, "db.db", "t", "bucket-*", "*.parquet"))
	must(t, err)
	slices.Sort(files)
	if len(files) < 2 {
		t.Fatalf("%d data files, want one per bucket", len(files))
	}
	must(t, os.Remove(files[len(files)-1]))
	if got, err := fullRead(); err == nil {
		t.Fatalf("a full read without %s returned %d rows and no error", files[len(files)-1], len(got))
	}
}

// TestChangeFeedWakesEveryReader: readers that share their looks for a
// snapshot (findSnapshot) must each still find every commit. With commits
// of this process the readers never poll (Poll is an hour), so one that
// took a look of an earlier epoch for the answer "missing" would sleep
// through the commit it missed; with commits of another store on the same
// directory (another process) they poll every 20 ms, and one that kept
// taking a shared "missing" would never see them, nor would one whose
// heartbeat (shorter than the poll, as a checkpointing job's) kept it
// from looking again. Either way the test would not end. Random reader
// counts, heartbeats, commit gaps and slow readers; seed printed.
func TestChangeFeedWakesEveryReader(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for i, remote := range []bool{false, true} {
		t.Run(fmt.Sprintf("other-process=%v", remote), func(t *testing.T) {
			wakeEveryReader(t, rand.New(rand.NewPCG(uint64(seed), uint64(i))), remote)
		})
	}
}

func wakeEveryReader(t *testing.T, rng *rand.Rand, remote bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, mem, dir := newTestStore(t)
	tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: kvSchema, PrimaryKey: []string{"k"}}, false)
	must(t, err)
	writer, poll := tbl, time.Hour
	if remote {
		s2 := openStore(t, NewLocalFS(), dir, mem)
		defer s2.Close()
		writer, err = s2.Table(ctx, Ident{"db", "t"})
		must(t, err)
		poll = 20 * time.Millisecond
	}
	writeRows(t, tbl, mem, WriteOptions{}, Insert, [][]any{{0, "start"}})
	commits := 20 + rng.IntN(30)
	readers := 8 + rng.IntN(40)
	got := make([][]int64, readers) // per reader, the keys received
	errs := make(chan error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		heartbeat := time.Duration(0)
		if rng.IntN(2) == 0 {
			heartbeat = time.Duration(1+rng.IntN(10)) * time.Millisecond
		}
		r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamLatest, Poll: poll, Heartbeat: heartbeat})
		must(t, err)
		slow := time.Duration(0)
		if rng.IntN(4) == 0 {
			slow = time.Duration(rng.IntN(3)) * time.Millisecond
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			for len(got[i]) < commits {
				ch, err := r.Next(ctx)
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", i, err)
					return
				}
				if ch.Batch == nil {
					continue // a progress marker
				}
				keys := ch.Batch.Column(1).(*array.Int64)
				for j := range keys.Len() {
					got[i] = append(got[i], keys.Value(j))
				}
				time.Sleep(slow)
			}
			errs <- nil
		}()
	}
	for c := range commits {
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		writeRows(t, writer, mem, WriteOptions{}, Insert, [][]any{{c + 1, "x"}})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(2 * time.Minute):
		cancel()
		<-finished
		t.Fatal("a reader slept through a commit")
	}
	close(errs)
	for err := range errs {
		must(t, err)
	}
	for i, keys := range got {
		for j, k := range keys {
			if k != int64(j+1) {
				t.Fatalf("reader %d: row %d has key %d, want %d (got %v)", i, j, k, j+1, keys)
			}
		}
	}
}
