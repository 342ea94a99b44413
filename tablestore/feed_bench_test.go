package tablestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkChangeFanout: 1, 8 and 64 change readers of one table (4
// buckets) follow a writer committing 400 upserts every 20 ms; it reports
// the time from each commit returning to each reader having every batch of
// that snapshot (p50, p99, max): the table store's part of commit-to-client
// latency, without Flight.
//
//	go test -run - -bench ChangeFanout -benchtime 100x ./tablestore
func BenchmarkChangeFanout(b *testing.B) {
	for _, readers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			ctx := context.Background()
			s, mem, _ := newTestStore(b)
			tbl, err := s.CreateTable(ctx, Ident{"db", "t"}, TableDef{Schema: benchSchema, PrimaryKey: []string{"k"},
				Options: map[string]string{"bucket": "4"}}, false)
			if err != nil {
				b.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var (
				mu    sync.Mutex
				acked = map[int64]time.Time{} // snapshot -> its commit returned
				done  = make([][]snapshotTime, readers)
				wg    sync.WaitGroup
				last  = make(chan int64, 1)
			)
			for i := range readers {
				r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamLatest, Heartbeat: 20 * time.Millisecond})
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer r.Close()
					end := int64(-1)
					for {
						ch, err := r.Next(rctx)
						if err != nil {
							return
						}
						// Every batch of the snapshots before a batch, and up to
						// a marker, is in.
						through := ch.Snapshot
						if ch.Batch != nil {
							through--
						}
						done[i] = append(done[i], snapshotTime{through, time.Now()})
						if end < 0 {
							select {
							case end = <-last:
								last <- end
							default:
							}
						}
						if end >= 0 && through >= end {
							return
						}
					}
				}()
			}
			rng := rand.New(rand.NewPCG(1, 2))
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			b.ResetTimer()
			var id int64
			for range b.N {
				<-tick.C
				w := tbl.NewWrite(WriteOptions{})
				batch := benchBatch(mem, rng, 400, 100_000, -1)
				err := w.Write(ctx, batch, Insert)
				batch.Release()
				if err == nil {
					id, err = w.Commit(ctx)
				}
				if err != nil {
					b.Fatal(err)
				}
				mu.Lock()
				acked[id] = time.Now()
				mu.Unlock()
			}
			last <- id
			wg.Wait()
			b.StopTimer()
			var lat []time.Duration
			for _, ds := range done {
				// A marker covers every snapshot up to it not covered before.
				prev := int64(0)
				for _, d := range ds {
					for sn := prev + 1; sn <= d.snapshot; sn++ {
						if t, ok := acked[sn]; ok {
							lat = append(lat, d.at.Sub(t))
						}
					}
					prev = max(prev, d.snapshot)
				}
			}
			if len(lat) == 0 {
				b.Fatal("no snapshot delivered")
			}
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
		})
	}
}

type snapshotTime struct {
	snapshot int64
	at       time.Time
}

// BenchmarkIngestFollowed is BenchmarkIngestAppend's s2=distinct with a
// change reader following the table (a streaming query's source, as in
// Nexmark q0): one op is a commit of one 8192-row batch and the reader
// having every row of it; rows/cpu-s divides by the process CPU time,
// compaction included.
//
//	go test -run - -bench IngestFollowed -benchtime 200x ./tablestore
func BenchmarkIngestFollowed(b *testing.B) {
	ctx := context.Background()
	mem := memory.NewGoAllocator()
	tbl := cachedBenchTable(b, mem, "t", TableDef{Schema: benchSchema})
	const rows = 8192
	rng := rand.New(rand.NewPCG(1, 2))
	batches := make([]arrow.RecordBatch, 32)
	for i := range batches {
		batch := benchBatch(mem, rng, rows, 1<<62, -1)
		s2 := array.NewStringBuilder(mem)
		for j := range rows {
			s2.Append(fmt.Sprintf("distinct-%d-%d", i, j))
		}
		col := s2.NewArray()
		s2.Release()
		cols := slices.Clone(batch.Columns())
		cols[9] = col
		batches[i] = array.NewRecordBatch(benchSchema, cols, rows)
		col.Release()
		batch.Release()
	}
	defer func() {
		for _, r := range batches {
			r.Release()
		}
	}()
	r, err := tbl.NewChangeReader(ctx, StreamSpec{Start: StreamLatest, Heartbeat: 20 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	read := int64(0)
	follow := func(want int64) {
		for read < want {
			ch, err := r.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if ch.Batch != nil {
				read += ch.Batch.NumRows()
			}
		}
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := tbl.NewWrite(WriteOptions{})
		if err := w.Write(ctx, batches[i%len(batches)], Insert); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		follow(int64(i+1) * rows)
	}
	if err := tbl.Compact(ctx, false); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*rows)/(cpuTime()-cpu0).Seconds(), "rows/cpu-s")
}

// cachedBenchTable creates table db.name of def in a new store on a
// temporary directory with a 256 MiB column cache, closed when b ends.
func cachedBenchTable(b *testing.B, mem memory.Allocator, name string, def TableDef) *Table {
	ctx := context.Background()
	s, err := Open(ctx, NewLocalFS(), b.TempDir(), Options{Mem: mem, CacheBytes: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	_ = s.CreateDatabase(ctx, "db", false)
	tbl, err := s.CreateTable(ctx, Ident{"db", name}, def, false)
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}
