package stream

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/exec"
)

// events is an input of insert-only events (k, x, ts): one snapshot per
// batch of n events, one event per millisecond of event time up to 500 ms
// out of order, each snapshot's marker carrying the watermark (largest
// event time minus one second).
type events struct {
	mem    memory.Allocator
	schema *arrow.Schema
	rng    *rand.Rand
	n      int
	rows   int
	keys   int
	next   int64 // the event time of the next event, ms
	snap   int64
	marker bool
	cur    arrow.RecordBatch
}

// eventTS is the type of the events' time column, ts (column 3).
var eventTS = &arrow.TimestampType{Unit: arrow.Millisecond}

// newEvents returns rows events over keys keys, n per snapshot, drawn
// from seed.
func newEvents(mem memory.Allocator, seed int64, n, rows, keys int) *events {
	schema := withKind([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "ts", Type: eventTS}})
	return &events{mem: mem, schema: schema, rng: rand.New(rand.NewSource(seed)), n: n, rows: rows, keys: keys, next: 1_700_000_000_000}
}

func (e *events) Schema() *arrow.Schema      { return e.schema }
func (e *events) Open(context.Context) error { return nil }
func (e *events) Next(context.Context) (Chunk, error) {
	e.release()
	if e.marker {
		e.marker = false
		return Chunk{Pos: Pos{e.snap}, Watermark: time.UnixMilli(e.next - 1000)}, nil
	}
	if e.rows <= 0 {
		return Chunk{}, io.EOF
	}
	b := array.NewRecordBuilder(e.mem, e.schema)
	defer b.Release()
	for range e.n {
		b.Field(0).(*array.StringBuilder).Append(kindInsert)
		b.Field(1).(*array.Int64Builder).Append(int64(e.rng.Intn(e.keys)))
		b.Field(2).(*array.Int64Builder).Append(int64(e.rng.Intn(1000)))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(e.next - int64(e.rng.Intn(500))))
		e.next++
	}
	e.cur = b.NewRecordBatch()
	e.snap++
	e.rows -= e.n
	e.marker = true
	return Chunk{Batch: e.cur, Pos: Pos{e.snap}}, nil
}

func (e *events) release() {
	if e.cur != nil {
		e.cur.Release()
		e.cur = nil
	}
}

func (e *events) Close() error { e.release(); return nil }

// benchEvents drains op, timed, and reports the events per second of CPU
// time and of wall time.
func benchEvents(b *testing.B, op Operator) {
	b.ResetTimer()
	cpu := cpuTime(b)
	drainAll(b, op)
	// The machine is shared: CPU time gives the rate per core.
	b.ReportMetric(float64(b.N)/(cpuTime(b)-cpu).Seconds(), "events/cpu-s")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// benchAggs are the benchmarks' aggregates over the events: count, sum
// and max of x.
var benchAggs = []AggSpec{
	{Func: "count_star", Type: arrow.PrimitiveTypes.Int64, Name: "c"},
	{Func: "sum", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "s"},
	{Func: "max", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "m"},
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWindowAggregate: events per second through a window
// aggregation by k (1000 keys) with count, sum and max, 1024 events per
// snapshot; HOP puts each event in 5 windows, CUMULATE in 1 to 5.
// proctime: TUMBLE over a processing-time clock that moves 1 ms per
// reading (a batch or a marker). spill: TUMBLE under a 64 KB budget,
// about a third of the state.
func BenchmarkWindowAggregate(b *testing.B) {
	tumble := Windows{Kind: Tumble, Size: 10 * time.Second, Step: 10 * time.Second}
	proc := tumble
	var now int64
	proc.ProcTime = func() time.Time { now += 1000; return time.UnixMicro(now) }
	for _, ws := range []struct {
		name   string
		w      Windows
		budget int64
	}{
		{"tumble10s", tumble, 0},
		{"hop2s10s", Windows{Kind: Hop, Size: 10 * time.Second, Step: 2 * time.Second}, 0},
		{"cumulate2s10s", Windows{Kind: Cumulate, Size: 10 * time.Second, Step: 2 * time.Second}, 0},
		{"proctime-tumble10s", proc, 0},
		{"spill-tumble10s", tumble, 64 << 10},
	} {
		b.Run(ws.name, func(b *testing.B) {
			mem := memory.NewGoAllocator()
			ec := exec.NewContext(mem)
			ec.TempDir = b.TempDir()
			in := newEvents(mem, 1, 1024, b.N, 1000)
			w, err := NewWindowAggregate(ec, in, ws.w, exec.NewColumn(3, eventTS, "ts"), []exec.Expr{col(1, "k")}, []string{"k"}, benchAggs, NewBudget(ws.budget))
			if err != nil {
				b.Fatal(err)
			}
			benchEvents(b, w)
		})
	}
}

// BenchmarkSessionAggregate: events per second through a SESSION
// aggregation by k (1000 keys, an event of a key every second on average)
// with count, sum and max, 1024 events per snapshot; sessions of a 500 ms
// gap (1-2 events) and of a 3 s gap (about 20 events).
func BenchmarkSessionAggregate(b *testing.B) {
	for _, gap := range []time.Duration{500 * time.Millisecond, 3 * time.Second} {
		b.Run(fmt.Sprintf("gap=%s", gap), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			ec := exec.NewContext(mem)
			in := newEvents(mem, 1, 1024, b.N, 1000)
			s, err := NewSessionAggregate(ec, in, gap, exec.NewColumn(3, eventTS, "ts"), []exec.Expr{col(1, "k")}, []exec.Expr{col(1, "k")}, []string{"k"}, benchAggs, NewBudget(0))
			if err != nil {
				b.Fatal(err)
			}
			benchEvents(b, s)
		})
	}
}

// BenchmarkWindowTopN: events per second through a TUMBLE 10 s
// aggregation by k (1000 keys: count and sum) ranked per window, the top
// 10 keys by count with their row number, 1024 events per snapshot.
func BenchmarkWindowTopN(b *testing.B) {
	mem := memory.NewGoAllocator()
	ec := exec.NewContext(mem)
	in := newEvents(mem, 1, 1024, b.N, 1000)
	budget := NewBudget(0)
	w, err := NewWindowAggregate(ec, in, Windows{Kind: Tumble, Size: 10 * time.Second, Step: 10 * time.Second}, exec.NewColumn(3, eventTS, "ts"), []exec.Expr{col(1, "k")}, []string{"k"}, []AggSpec{
		{Func: "count_star", Type: arrow.PrimitiveTypes.Int64, Name: "c"},
		{Func: "sum", Arg: col(2, "x"), Type: arrow.PrimitiveTypes.Int64, Name: "s"},
	}, budget)
	if err != nil {
		b.Fatal(err)
	}
	// Output columns: kind, window_start, window_end, k, c, s.
	r, err := NewWindowRank(ec, w, RankSpec{
		Partition: []exec.Expr{exec.NewColumn(1, eventTS, "window_start"), exec.NewColumn(2, eventTS, "window_end")},
		Order:     []exec.SortKey{{Expr: col(4, "c"), Descending: true}, {Expr: col(3, "k")}},
		Lo:        1, Hi: 10, Number: true,
	}, 1, budget)
	if err != nil {
		b.Fatal(err)
	}
	benchEvents(b, r)
}

// BenchmarkIntervalJoin: events per second (both inputs together) through
// an interval join on k over 1000 keys within one second either way,
// about one match per event, 1024 events per snapshot; inner and outer
// (which count partners and pad at expiry).
func BenchmarkIntervalJoin(b *testing.B) {
	for _, kind := range []exec.JoinType{exec.InnerJoin, exec.LeftJoin, exec.FullJoin} {
		b.Run(kind.String(), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			ec := exec.NewContext(mem)
			side := func(seed int64) *events { return newEvents(mem, seed, 1024, b.N/2, 1000) }
			j, err := NewIntervalJoin(ec, side(1), side(2), IntervalSpec{
				Kind:     kind,
				LeftKeys: []exec.Expr{col(1, "k")}, RightKeys: []exec.Expr{col(1, "k")},
				LeftTime: exec.NewColumn(3, eventTS, "ts"), RightTime: exec.NewColumn(3, eventTS, "ts"),
				Lower: -time.Second, Upper: time.Second,
			}, NewBudget(0))
			if err != nil {
				b.Fatal(err)
			}
			benchEvents(b, j)
		})
	}
}

// BenchmarkWindowJoin: events per second (both inputs together) through a
// TUMBLE 10 s window join on k over 1000 keys (about ten matches per event
// per window), 1024 events per snapshot; inner and full outer.
func BenchmarkWindowJoin(b *testing.B) {
	for _, kind := range []exec.JoinType{exec.InnerJoin, exec.FullJoin} {
		b.Run(kind.String(), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			ec := exec.NewContext(mem)
			side := func(seed int64) *events { return newEvents(mem, seed, 1024, b.N/2, 1000) }
			s := WindowJoinSide{Keys: []exec.Expr{col(1, "k")}, Time: exec.NewColumn(3, eventTS, "ts"), Start: 2}
			j, err := NewWindowJoin(ec, kind, side(1), side(2), Windows{Kind: Tumble, Size: 10 * time.Second, Step: 10 * time.Second}, [2]WindowJoinSide{s, s}, NewBudget(0))
			if err != nil {
				b.Fatal(err)
			}
			benchEvents(b, j)
		})
	}
}
