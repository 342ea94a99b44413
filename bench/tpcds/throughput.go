package tpcds

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// StreamOrder is the query order of throughput stream s: a shuffle seeded
// by (seed, s), not the specification's permutation table, so every stream
// runs every query once in its own order and a run can be repeated.
func StreamOrder(queries []Query, seed uint64, s int) []Query {
	out := append([]Query(nil), queries...)
	rng := rand.New(rand.NewPCG(seed, uint64(s)))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// StreamQuery is one query of one throughput stream.
type StreamQuery struct {
	Stream  int     `json:"stream"`
	Query   string  `json:"query"`
	Ms      float64 `json:"ms"`
	Rows    int     `json:"rows"`
	Message string  `json:"error,omitempty"`
}

// ThroughputResult is one engine's throughput test: every stream running
// its order of the queries on its own connection, all streams at once.
type ThroughputResult struct {
	Engine         string        `json:"engine"`
	Streams        int           `json:"streams"`
	Seconds        float64       `json:"seconds"`
	Queries        int           `json:"queries"`
	Failed         int           `json:"failed"`
	QueriesPerHour float64       `json:"queries_per_hour"`
	Log            []StreamQuery `json:"log"`
}

// Throughput runs len(conns) streams at once, stream s on conns[s] in
// StreamOrder(queries, seed, s), and measures the time until the last
// stream ends. A failed query is logged and counted; its stream goes on.
func Throughput(ctx context.Context, engine string, conns []Engine, queries []Query, seed uint64, timeout time.Duration) ThroughputResult {
	res := ThroughputResult{Engine: engine, Streams: len(conns)}
	logs := make([][]StreamQuery, len(conns))
	var wg sync.WaitGroup
	start := time.Now()
	for s, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, q := range StreamOrder(queries, seed, s) {
				qctx, cancel := context.WithTimeout(ctx, timeout)
				t0 := time.Now()
				r, err := conn.Query(qctx, q.SQL)
				cancel()
				sq := StreamQuery{Stream: s, Query: q.Name, Ms: float64(time.Since(t0).Microseconds()) / 1e3}
				if err != nil {
					sq.Message = err.Error()
				} else {
					sq.Rows = len(r.Rows)
				}
				logs[s] = append(logs[s], sq)
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	for _, l := range logs {
		for _, sq := range l {
			res.Queries++
			if sq.Message != "" {
				res.Failed++
			}
		}
		res.Log = append(res.Log, l...)
	}
	res.QueriesPerHour = float64(res.Queries-res.Failed) * 3600 / res.Seconds
	return res
}

// String summarizes the result in one line.
func (r ThroughputResult) String() string {
	return fmt.Sprintf("%-8s %d streams: %d queries (%d failed) in %.1fs, %.0f queries/hour",
		r.Engine, r.Streams, r.Queries, r.Failed, r.Seconds, r.QueriesPerHour)
}
