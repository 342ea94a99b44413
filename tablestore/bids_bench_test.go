package tablestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bidSchema is Nexmark's bid table as the Nexmark runner loads it.
var bidSchema = arrow.NewSchema([]arrow.Field{
	{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bidder", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	{Name: "channel", Type: arrow.BinaryTypes.String},
	{Name: "url", Type: arrow.BinaryTypes.String},
	{Name: "dateTime", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	{Name: "extra", Type: arrow.BinaryTypes.String},
}, nil)

// bidBatch is n bids shaped like the Nexmark generator's: half of them on
// one of four hot channels, half on one of 10,000 others, a URL per
// channel, and a random extra of 80-120 letters.
func bidBatch(mem memory.Allocator, rng *rand.Rand, n int, first int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, bidSchema)
	defer b.Release()
	hot := []string{"Apple", "Google", "Facebook", "Baidu"}
	extra := make([]byte, 120)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(1000 + rng.Int64N(110))
		b.Field(1).(*array.Int64Builder).Append(1000 + rng.Int64N(1010))
		b.Field(2).(*array.Int64Builder).Append(rng.Int64N(100_000))
		var ch, url string
		if rng.IntN(2) == 0 {
			c := rng.IntN(len(hot))
			ch, url = hot[c], fmt.Sprintf("https://www.nexmark.com/%s/item.htm?query=1", strings.ToLower(hot[c]))
		} else {
			c := rng.IntN(10_000)
			ch = fmt.Sprintf("channel-%d", c)
			url = fmt.Sprintf("https://www.nexmark.com/%08x/%08x/item.htm?query=1&channel_id=%d", c*7919, c*104729, c)
		}
		b.Field(3).(*array.StringBuilder).Append(ch)
		b.Field(4).(*array.StringBuilder).Append(url)
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(1436918400000 + (first+int64(i))/10))
		for j := range extra {
			extra[j] = byte('a' + rng.IntN(26))
		}
		b.Field(6).(*array.StringBuilder).Append(string(extra[:80+rng.IntN(41)]))
	}
	return b.NewRecordBatch()
}

// BenchmarkIngestBids commits one batch of 46,000 bids per op (a Nexmark
// commit of 50,000 events) to a write-only append table with a column
// cache, as flightd's bulk ingest does: the write path alone (Parquet
// encoding, statistics, the cache's columns), no compaction.
// cpu-ns/row divides the process CPU time by the rows.
func BenchmarkIngestBids(b *testing.B) {
	ctx := context.Background()
	mem := memory.NewGoAllocator()
	tbl := cachedBenchTable(b, mem, "bid", TableDef{Schema: bidSchema, Options: map[string]string{"write-only": "true"}})
	const rows = 46_000
	rng := rand.New(rand.NewPCG(1, 2))
	batches := make([]arrow.RecordBatch, 4)
	for i := range batches {
		batches[i] = bidBatch(mem, rng, rows, int64(i*rows))
	}
	defer func() {
		for _, r := range batches {
			r.Release()
		}
	}()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch := batches[i%len(batches)]
		batch.Retain() // commitRecord releases it
		commitRecord(b, tbl, batch)
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*rows), "cpu-ns/row")
	st, err := tbl.Stats(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Bytes)/float64(b.N*rows), "disk-bytes/row")
}
