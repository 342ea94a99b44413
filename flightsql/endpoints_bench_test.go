package flightsql_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	arrowflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// BenchmarkSplitEndpoints reads a table of 16 files (4M rows of BIGINT,
// DOUBLE) through one endpoint and one client, then split into 4
// endpoints read by 4 clients at once (rows/s; compare them with
// benchstat: go test -bench SplitEndpoints -count 6 ./flightsql). With
// parallelism=1 a query runs on one core (engine.Config.Parallelism), as
// on a server shared by many queries; otherwise one endpoint's query
// already gathers its scan over every core.
func BenchmarkSplitEndpoints(b *testing.B) {
	for _, par := range []int{0, 1} {
		b.Run(fmt.Sprintf("parallelism=%d", par), func(b *testing.B) {
			benchSplitEndpoints(b, par)
		})
	}
}

func benchSplitEndpoints(b *testing.B, parallelism int) {
	ctx := context.Background()
	ts := startServerLimits(b, splitLimits, 0, flightsql.Options{}, func(c *engine.Config) { c.Parallelism = parallelism })
	cnxn := ts.connect(b, nil)
	if _, err := tryExec(cnxn, "CREATE TABLE big (id BIGINT, v DOUBLE) WITH ('write-only'='true')"); err != nil {
		b.Fatal(err)
	}
	const files, perFile = 16, 256 << 10
	for f := range files {
		ingestRange(b, cnxn, "big", int64(f*perFile), perFile)
	}
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			clients := make([]*arrowflightsql.Client, n)
			for i := range clients {
				clients[i] = ts.splitClient(b, ctx, n)
			}
			b.ResetTimer()
			for range b.N {
				info, err := clients[0].Execute(ctx, "SELECT * FROM big")
				if err != nil {
					b.Fatal(err)
				}
				if len(info.Endpoint) != n {
					b.Fatalf("%d endpoints, want %d", len(info.Endpoint), n)
				}
				rows, err := countEndpoints(ctx, clients, info)
				if err != nil {
					b.Fatal(err)
				}
				if rows != files*perFile {
					b.Fatalf("read %d rows, want %d", rows, files*perFile)
				}
			}
			b.ReportMetric(float64(files*perFile*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// countEndpoints reads the endpoints of info at once, endpoint i through
// clients[i], and counts their rows.
func countEndpoints(ctx context.Context, clients []*arrowflightsql.Client, info *flight.FlightInfo) (int64, error) {
	var (
		rows atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, len(info.Endpoint))
	)
	for i, ep := range info.Endpoint {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdr, err := clients[i].DoGet(ctx, ep.Ticket)
			if err != nil {
				errs[i] = err
				return
			}
			defer rdr.Release()
			for rdr.Next() {
				rows.Add(rdr.RecordBatch().NumRows())
			}
			errs[i] = rdr.Err()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return rows.Load(), nil
}

// ingestRange appends rows id = start .. start+n-1, v = id/2 to table in
// one commit (one file).
func ingestRange(b *testing.B, cnxn adbc.Connection, table string, start, n int64) {
	b.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(b, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	for i := start; i < start+n; i++ {
		bld.Field(0).(*array.Int64Builder).Append(i)
		bld.Field(1).(*array.Float64Builder).Append(float64(i) / 2)
	}
	rec := bld.NewRecordBatch()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	rec.Release()
	if err != nil {
		b.Fatal(err)
	}
	defer rdr.Release() // the statement retains its own reference
	stmt, err := cnxn.NewStatement()
	if err != nil {
		b.Fatal(err)
	}
	defer stmt.Close()
	for k, v := range map[string]string{adbc.OptionKeyIngestTargetTable: table, adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeAppend} {
		if err := stmt.SetOption(k, v); err != nil {
			b.Fatal(err)
		}
	}
	if err := stmt.BindStream(context.Background(), rdr); err != nil {
		b.Fatal(err)
	}
	if _, err := stmt.ExecuteUpdate(context.Background()); err != nil {
		b.Fatal(err)
	}
}
