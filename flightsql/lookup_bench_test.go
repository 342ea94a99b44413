package flightsql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/flightsql"
)

// BenchmarkLookupExchange measures keys/s of DoExchange lookups over
// loopback (one exchange, 8 batches in flight), cached (lookup.cache FULL)
// hits of a 100k-row table, by batch size; bench/cmd/lookupbench puts the
// same path next to Redis.
func BenchmarkLookupExchange(b *testing.B) {
	const rows = 100_000
	ts := startServer(b, flightsql.Options{})
	cnxn := ts.connect(b, nil)
	mustExec(b, cnxn, "CREATE TABLE lk (id BIGINT, name STRING, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4', 'lookup.cache' = 'FULL', 'lookup.partial-cache.max-bytes' = '268435456')")
	for start := 0; start < rows; start += 10_000 {
		var q strings.Builder
		q.WriteString("INSERT INTO lk VALUES ")
		for i := start; i < start+10_000; i++ {
			if i > start {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, "(%d, 'name-%d', %d)", i, i, 3*i)
		}
		mustExec(b, cnxn, q.String())
	}
	cl, mem := ts.rawClient(b)
	keySchema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, batch := range []int{1, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			r := rand.New(rand.NewPCG(1, uint64(batch)))
			kb := array.NewInt64Builder(mem)
			for range batch {
				kb.Append(int64(r.IntN(rows)))
			}
			col := kb.NewArray()
			kb.Release()
			keys := array.NewRecordBatch(keySchema, []arrow.Array{col}, int64(batch))
			col.Release()
			defer keys.Release()
			stream, err := cl.Client.DoExchange(ctx)
			if err != nil {
				b.Fatal(err)
			}
			w := flight.NewRecordWriter(stream, ipc.WithSchema(keySchema), ipc.WithAllocator(mem))
			w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"table": "lk"}`)})
			rdr, err := exchangeOne(w, stream, keys, mem)
			if err != nil { // the first batch opens the index (FULL: loads it)
				b.Fatal(err)
			}
			defer rdr.Release()
			b.ResetTimer()
			errc := make(chan error, 1)
			inflight := make(chan struct{}, 8)
			go func() {
				for range b.N {
					inflight <- struct{}{}
					if err := w.Write(keys); err != nil {
						errc <- err
						return
					}
				}
				w.Close()
				errc <- stream.CloseSend()
			}()
			for range b.N {
				if !rdr.Next() {
					b.Fatalf("answer missing: %v", rdr.Err())
				}
				out := rdr.RecordBatch()
				f := out.Column(int(out.NumCols()) - 1).(*array.Boolean)
				for i := range f.Len() {
					if !f.Value(i) {
						b.Fatalf("key %d not found", i)
					}
				}
				<-inflight
			}
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
			for rdr.Next() {
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}

// exchangeOne sends keys on a new exchange and reads the answer.
func exchangeOne(w *flight.Writer, stream flight.FlightService_DoExchangeClient, keys arrow.RecordBatch, mem memory.Allocator) (*flight.Reader, error) {
	if err := w.Write(keys); err != nil {
		return nil, err
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	if !rdr.Next() {
		rdr.Release()
		return nil, fmt.Errorf("no answer: %v", rdr.Err())
	}
	return rdr, nil
}
