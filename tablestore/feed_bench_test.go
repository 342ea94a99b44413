package tablestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
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
