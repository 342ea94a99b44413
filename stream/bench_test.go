package stream

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// cycle is an input that repeats batches (each followed by a marker, one
// snapshot per batch) until it has returned rows rows.
type cycle struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	rows    int
	i       int
	snap    int64
	marker  bool
	idx, n  int
	wait    <-chan struct{} // closed before the first chunk (nil: none)
	done    chan struct{}   // closed at the end (nil: none)
}

func (c *cycle) Schema() *arrow.Schema      { return c.schema }
func (c *cycle) Open(context.Context) error { return nil }
func (c *cycle) Next(ctx context.Context) (Chunk, error) {
	if c.wait != nil {
		select {
		case <-c.wait:
		case <-ctx.Done():
			return Chunk{}, ctx.Err()
		}
		c.wait = nil
	}
	pos := make(Pos, c.n)
	pos[c.idx] = c.snap
	if c.marker {
		c.marker = false
		return Chunk{Pos: pos}, nil
	}
	if c.rows <= 0 {
		if c.done != nil {
			close(c.done)
			c.done = nil
		}
		return Chunk{}, io.EOF
	}
	b := c.batches[c.i%len(c.batches)]
	c.i++
	c.snap++
	pos[c.idx] = c.snap
	c.rows -= int(b.NumRows())
	c.marker = true
	return Chunk{Batch: b, Pos: pos}, nil
}

func (c *cycle) Close() error {
	for _, b := range c.batches {
		b.Release()
	}
	c.batches = nil
	return nil
}

// insertDelete builds two batches of n rows (k, x) with k in [0, keys):
// the +I of the rows, then their -D, so state stays bounded.
func insertDelete(mem memory.Allocator, rng *rand.Rand, n, keys int) (*arrow.Schema, []arrow.RecordBatch) {
	schema := withKind([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Int64}})
	ks, xs := make([]int64, n), make([]int64, n)
	for i := range n {
		ks[i], xs[i] = int64(rng.Intn(keys)), int64(rng.Intn(1000))
	}
	var out []arrow.RecordBatch
	for _, kind := range []string{kindInsert, kindDelete} {
		b := array.NewRecordBuilder(mem, schema)
		for i := range n {
			b.Field(0).(*array.StringBuilder).Append(kind)
			b.Field(1).(*array.Int64Builder).Append(ks[i])
			b.Field(2).(*array.Int64Builder).Append(xs[i])
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return schema, out
}

func drainAll(b *testing.B, op Operator) {
	ctx := context.Background()
	if err := op.Open(ctx); err != nil {
		b.Fatal(err)
	}
	for {
		_, err := op.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := op.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAggregate: input changes per second through GROUP BY k with
// count, sum and max over 1000 groups; one snapshot per 1024 changes.
func BenchmarkAggregate(b *testing.B) {
	mem := memory.NewGoAllocator()
	ec := exec.NewContext(mem)
	schema, batches := insertDelete(mem, rand.New(rand.NewSource(1)), 1024, 1000)
	in := &cycle{schema: schema, batches: batches, rows: b.N, n: 1}
	agg, err := NewAggregate(ec, in, []exec.Expr{col(1, "k")}, []string{"k"}, []AggSpec{
		{Func: "count_star", Type: arrow.PrimitiveTypes.Int64, Name: "c"},
		{Func: "sum", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "s"},
		{Func: "max", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "m"},
	}, NewBudget(0))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	drainAll(b, agg)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "changes/s")
}

// BenchmarkJoin: input changes per second (both sides together) through
// an inner join on k over 1000 keys, about one match per change; in
// memory, and under a 16 KB budget (about a tenth of the state), which
// spills keys at every snapshot and reads them back as changes reach them.
func BenchmarkJoin(b *testing.B) {
	for _, limit := range []int64{0, 16 << 10} {
		b.Run(fmt.Sprintf("budget=%d", limit), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			ec := exec.NewContext(mem)
			ec.TempDir = b.TempDir()
			rng := rand.New(rand.NewSource(1))
			ls, lb := insertDelete(mem, rng, 1024, 1000)
			rs, rb := insertDelete(mem, rng, 1024, 1000)
			left := &cycle{schema: ls, batches: lb, rows: b.N / 2, n: 2}
			right := &cycle{schema: rs, batches: rb, rows: b.N / 2, idx: 1, n: 2}
			j, err := NewJoin(ec, left, right, JoinSpec{Kind: exec.InnerJoin, LeftKeys: []exec.Expr{col(1, "k")}, RightKeys: []exec.Expr{col(1, "k")}}, NewBudget(limit))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu := cpuTime(b)
			drainAll(b, j)
			b.ReportMetric(float64(b.N)/(cpuTime(b)-cpu).Seconds(), "changes/cpu-s")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "changes/s")
			b.ReportMetric(float64(ec.SpilledRows())/float64(b.N), "spilled/change")
		})
	}
}

// BenchmarkNormalize: upserts per second normalized over 1000 keys.
func BenchmarkNormalize(b *testing.B) {
	mem := memory.NewGoAllocator()
	ec := exec.NewContext(mem)
	schema, batches := insertDelete(mem, rand.New(rand.NewSource(1)), 1024, 1000)
	in := &cycle{schema: schema, batches: batches, rows: b.N, n: 1}
	n, err := NewNormalize(ec, in, []int{1}, NewBudget(0))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	drainAll(b, n)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "changes/s")
}

// BenchmarkTopN: input changes per second through a top-10 per partition
// (PARTITION BY k ORDER BY x DESC) over 1000 partitions holding 100 rows
// each; one snapshot per 1024 changes, which insert rows and then delete
// them. With the row number a change renumbers the rows below it (up to
// 20 output rows per change); without, at most one row enters and one
// leaves.
func BenchmarkTopN(b *testing.B) {
	for _, number := range []bool{true, false} {
		b.Run(fmt.Sprintf("rn=%v", number), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			ec := exec.NewContext(mem)
			rng := rand.New(rand.NewSource(1))
			schema, base := insertDelete(mem, rng, 100_000, 1000)
			_, batches := insertDelete(mem, rng, 1024, 1000)
			in := &cycle{schema: schema, batches: batches, rows: b.N, n: 1}
			r := prefilledTop10(b, ec, in, number, base)
			b.ResetTimer()
			drainAll(b, r)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "changes/s")
		})
	}
}

// prefilledTop10 is a top-10 per partition (PARTITION BY k ORDER BY x
// DESC) over in, holding the rows of base[0] (base is released).
func prefilledTop10(b *testing.B, ec *exec.Context, in Operator, number bool, base []arrow.RecordBatch) *Rank {
	r, err := NewRank(ec, in, RankSpec{
		Partition: []exec.Expr{col(1, "k")},
		Order:     []exec.SortKey{{Expr: col(2, "x"), Descending: true}},
		Lo:        1, Hi: 10, Number: number,
	}, NewBudget(0))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := r.add(ctx, base[0]); err != nil {
		b.Fatal(err)
	}
	if err := r.flush(ctx, nil); err != nil {
		b.Fatal(err)
	}
	r.q.release() // the prefill's output, which no marker labels
	for _, x := range base {
		x.Release()
	}
	return r
}

// BenchmarkCheckpoint: one checkpoint (save and Encode) of a top-10 per
// partition holding 100,000 rows in 1000 partitions, the state a job
// saves every interval whole; the bytes are the checkpoint's.
func BenchmarkCheckpoint(b *testing.B) {
	mem := memory.NewGoAllocator()
	ec := exec.NewContext(mem)
	schema, base := insertDelete(mem, rand.New(rand.NewSource(1)), 100_000, 1000)
	r := prefilledTop10(b, ec, &cycle{schema: schema, n: 1}, false, base)
	cp := NewCheckpoints(time.Second)
	if _, err := cp.Add(r); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		n := int64(i + 1)
		if err := cp.save(n, 0, r); err != nil {
			b.Fatal(err)
		}
		data, err := cp.Encode(n, Pos{0})
		if err != nil {
			b.Fatal(err)
		}
		size := 0
		for _, p := range data {
			size += len(p)
		}
		b.SetBytes(int64(size))
	}
}

// BenchmarkCheckpointDelta: the checkpoints of BenchmarkCheckpoint's
// top-10 (100,000 rows in 1000 partitions) when 16 rows come or go
// between two: deltas of the partitions changed, a base whenever the
// chain is full (Request's rules), as a job takes them. B/checkpoint is
// the bytes per checkpoint, bases included.
func BenchmarkCheckpointDelta(b *testing.B) {
	mem := memory.NewGoAllocator()
	ec := exec.NewContext(mem)
	rng := rand.New(rand.NewSource(1))
	schema, base := insertDelete(mem, rng, 100_000, 1000)
	r := prefilledTop10(b, ec, &cycle{schema: schema, n: 1}, false, base)
	_, changes := insertDelete(mem, rng, 16, 1000)
	cp := NewCheckpoints(time.Second)
	if _, err := cp.Add(r); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var size int
	b.ResetTimer()
	for i := range b.N {
		if err := r.add(ctx, changes[i%2]); err != nil {
			b.Fatal(err)
		}
		if err := r.flush(ctx, nil); err != nil {
			b.Fatal(err)
		}
		r.q.release()
		n := int64(i + 1)
		cp.Request(n)
		if err := cp.save(n, 0, r); err != nil {
			b.Fatal(err)
		}
		data, err := cp.Encode(n, Pos{0})
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range data {
			size += len(p)
		}
		cp.Written(n, n, 0)
	}
	b.ReportMetric(float64(size)/float64(b.N), "B/checkpoint")
}

// bidSchema is an insert-only changelog of Nexmark's bids.
func bidSchema() *arrow.Schema {
	return withKind([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
		{Name: "bidder", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64},
		{Name: "channel", Type: arrow.BinaryTypes.String},
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "dateTime", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "extra", Type: arrow.BinaryTypes.String},
	})
}

// q18Bids builds n insert-only bids shaped as Nexmark's (auction, bidder,
// price, channel, url, dateTime, extra), in batches of batch: ten per
// millisecond in time order, half to the latest hot auction and three in
// four by the latest hot bidder, the others to one of the 150 latest, so
// that about one bid in 3.5 is the first of its (bidder, auction).
func q18Bids(mem memory.Allocator, n, batch int) (*arrow.Schema, []arrow.RecordBatch) {
	schema := bidSchema()
	rng := rand.New(rand.NewSource(1))
	hot := []string{"Google", "Facebook", "Baidu", "Apple"}
	var out []arrow.RecordBatch
	for start := 0; start < n; start += batch {
		b := array.NewRecordBuilder(mem, schema)
		for j := start; j < min(n, start+batch); j++ {
			auctions, persons := int64(1000+j*3/46), int64(1000+j/46)
			auction, bidder := auctions/100*100, persons/100*100+1
			if rng.Intn(2) == 0 {
				auction = auctions - rng.Int63n(min(auctions, 150))
			}
			if rng.Intn(4) == 0 {
				bidder = persons - rng.Int63n(min(persons, 150))
			}
			channel := hot[rng.Intn(len(hot))]
			if rng.Intn(2) == 0 {
				channel = fmt.Sprintf("channel-%d", rng.Intn(10_000))
			}
			b.Field(0).(*array.StringBuilder).Append(kindInsert)
			b.Field(1).(*array.Int64Builder).Append(auction)
			b.Field(2).(*array.Int64Builder).Append(bidder)
			b.Field(3).(*array.Int64Builder).Append(int64(100 + rng.Intn(10_000_000)))
			b.Field(4).(*array.StringBuilder).Append(channel)
			b.Field(5).(*array.StringBuilder).Append("https://www.nexmark.com/" + channel + "/item.htm?query=1")
			b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(1_436_918_400_000 + int64(j/10)))
			b.Field(7).(*array.StringBuilder).Append(strings.Repeat("x", rng.Intn(40)))
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return schema, out
}

// BenchmarkRankQ18: Nexmark q18's deduplication, ROW_NUMBER() OVER
// (PARTITION BY bidder, auction ORDER BY dateTime DESC) <= 1 over
// insert-only bids (q18Bids), 200,000 per op in snapshots of 10,000: nearly
// every bid replaces its partition's top. cpu-ns/bid is per input row.
func BenchmarkRankQ18(b *testing.B) {
	const n = 200_000
	mem := memory.NewGoAllocator()
	schema, batches := q18Bids(mem, n, 10_000)
	defer func() {
		for _, x := range batches {
			x.Release()
		}
	}()
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	spec := RankSpec{
		Partition: []exec.Expr{col(2, "bidder"), col(1, "auction")},
		Order:     []exec.SortKey{{Expr: exec.NewColumn(6, ts, "dateTime"), Descending: true}},
		Lo:        1, Hi: 1, InsertOnly: "bid",
	}
	b.ResetTimer()
	cpu := cpuTime(b)
	for range b.N {
		for _, x := range batches {
			x.Retain() // cycle releases them at Close
		}
		r, err := NewRank(exec.NewContext(mem), &cycle{schema: schema, batches: batches, rows: n, n: 1}, spec, NewBudget(0))
		if err != nil {
			b.Fatal(err)
		}
		drainAll(b, r)
	}
	// The machine is shared: CPU time (GC's included) is the cost.
	b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N*n), "cpu-ns/bid")
}

// BenchmarkJoinQ20: Nexmark q20's join, bids (q18Bids, 200,000 per op in
// snapshots of 10,000) with the auctions of one category in five, both
// insert-only: every bid is held, about one in five is emitted joined.
// cpu-ns/bid is per bid.
func BenchmarkJoinQ20(b *testing.B) {
	const n = 200_000
	mem := memory.NewGoAllocator()
	bidSchema, bids := q18Bids(mem, n, 10_000)
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	auctionSchema := withKind([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "itemName", Type: arrow.BinaryTypes.String},
		{Name: "dateTime", Type: ts},
		{Name: "category", Type: arrow.PrimitiveTypes.Int64},
	})
	ab := array.NewRecordBuilder(mem, auctionSchema)
	for id := int64(1000); id < 1000+n*3/46; id += 5 {
		ab.Field(0).(*array.StringBuilder).Append(kindInsert)
		ab.Field(1).(*array.Int64Builder).Append(id)
		ab.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("item-%d", id))
		ab.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1_436_918_400_000 + id))
		ab.Field(4).(*array.Int64Builder).Append(10)
	}
	auctions := ab.NewRecordBatch()
	ab.Release()
	defer auctions.Release()
	defer func() {
		for _, x := range bids {
			x.Release()
		}
	}()
	spec := JoinSpec{Kind: exec.InnerJoin, LeftKeys: []exec.Expr{col(1, "auction")}, RightKeys: []exec.Expr{col(1, "id")}, InsertOnly: [2]bool{true, true}}
	b.ResetTimer()
	cpu := cpuTime(b)
	for range b.N {
		for _, x := range bids {
			x.Retain() // cycle releases them at Close
		}
		auctions.Retain()
		left := &cycle{schema: bidSchema, batches: bids, rows: n, n: 2}
		right := &cycle{schema: auctionSchema, batches: []arrow.RecordBatch{auctions}, rows: int(auctions.NumRows()), idx: 1, n: 2}
		// The auctions come first, as they do in Nexmark.
		right.done = make(chan struct{})
		left.wait = right.done
		j, err := NewJoin(exec.NewContext(mem), left, right, spec, NewBudget(0))
		if err != nil {
			b.Fatal(err)
		}
		drainAll(b, j)
	}
	b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N*n), "cpu-ns/bid")
}

// BenchmarkRankTop1Many: q18's deduplication (as BenchmarkRankQ18) over
// 3,000,000 bids of 1,500,000 (bidder, auction) pairs at random, about
// 1,300,000 of them seen, in snapshots of 10,000: a state as large as
// q18's at 5M events. heap-MB is the heap the state holds at the end
// (after a GC, besides the input's), gc-cpu-s the CPU time the garbage
// collector took, cpu-ns/bid the CPU time of the run (not of the
// GCs measuring the heap) per input row.
func BenchmarkRankTop1Many(b *testing.B) {
	const n, pairs = 3_000_000, 1_500_000
	mem := memory.NewGoAllocator()
	schema := bidSchema()
	rng := rand.New(rand.NewSource(1))
	var batches []arrow.RecordBatch
	for start := 0; start < n; start += 10_000 {
		bb := array.NewRecordBuilder(mem, schema)
		for j := start; j < start+10_000; j++ {
			pair := rng.Int63n(pairs)
			channel := fmt.Sprintf("channel-%d", rng.Intn(10_000))
			bb.Field(0).(*array.StringBuilder).Append(kindInsert)
			bb.Field(1).(*array.Int64Builder).Append(1000 + pair%10_000)
			bb.Field(2).(*array.Int64Builder).Append(1000 + pair/10_000)
			bb.Field(3).(*array.Int64Builder).Append(int64(100 + rng.Intn(10_000_000)))
			bb.Field(4).(*array.StringBuilder).Append(channel)
			bb.Field(5).(*array.StringBuilder).Append("https://www.nexmark.com/" + channel + "/item.htm?query=1")
			bb.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(1_436_918_400_000 + int64(j/10)))
			bb.Field(7).(*array.StringBuilder).Append(strings.Repeat("x", rng.Intn(40)))
		}
		batches = append(batches, bb.NewRecordBatch())
		bb.Release()
	}
	defer func() {
		for _, x := range batches {
			x.Release()
		}
	}()
	spec := RankSpec{
		Partition: []exec.Expr{col(2, "bidder"), col(1, "auction")},
		Order:     []exec.SortKey{{Expr: exec.NewColumn(6, schema.Field(6).Type, "dateTime"), Descending: true}},
		Lo:        1, Hi: 1, InsertOnly: "bid",
	}
	gcCPU := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	var heap, gc float64
	var cpu time.Duration
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapInuse
		metrics.Read(gcCPU)
		gcBefore := gcCPU[0].Value.Float64()
		cpuBefore := cpuTime(b)
		b.StartTimer()
		for _, x := range batches {
			x.Retain() // cycle releases them at Close
		}
		r, err := NewRank(exec.NewContext(mem), &cycle{schema: schema, batches: batches, rows: n, n: 1}, spec, NewBudget(0))
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Open(ctx); err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(ctx); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cpu += cpuTime(b) - cpuBefore
		metrics.Read(gcCPU)
		gc += gcCPU[0].Value.Float64() - gcBefore
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap += float64(ms.HeapInuse-before) / (1 << 20)
		b.StartTimer()
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/bid")
	b.ReportMetric(heap/float64(b.N), "heap-MB")
	b.ReportMetric(gc/float64(b.N), "gc-cpu-s")
}
