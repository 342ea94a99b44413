// Package doget measures flightd's result streaming over loopback against
// the ceiling of this machine: a bare arrow-go Flight server streaming the
// same batches from memory, measured in the same run.
//
//	bare Flight server ──DoGet──▶ client     (ceiling: IPC + gRPC only)
//	flightd (SQL, plan, exec, tablestore) ──DoGet──▶ client
package doget

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/engine"
	fsql "github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/tablestore"
)

// Schema of the scanned table: a key, four numbers and a short string.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "a", Type: arrow.PrimitiveTypes.Int64},
	{Name: "b", Type: arrow.PrimitiveTypes.Int64},
	{Name: "c", Type: arrow.PrimitiveTypes.Float64},
	{Name: "d", Type: arrow.PrimitiveTypes.Float64},
	{Name: "s", Type: arrow.BinaryTypes.String},
}, nil)

// Batches generates rows deterministically in batches of batchSize.
func Batches(mem memory.Allocator, rows, batchSize int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(mem, Schema)
	defer b.Release()
	for start := 0; start < rows; start += batchSize {
		n := min(batchSize, rows-start)
		for i := range n {
			b.Field(0).(*array.Int64Builder).Append(int64(start + i))
			b.Field(1).(*array.Int64Builder).Append(rng.Int64N(1 << 40))
			b.Field(2).(*array.Int64Builder).Append(rng.Int64N(1000))
			b.Field(3).(*array.Float64Builder).Append(rng.Float64())
			b.Field(4).(*array.Float64Builder).Append(rng.NormFloat64())
			b.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("name-%06d", rng.IntN(1_000_000)))
		}
		out = append(out, b.NewRecordBatch())
	}
	return out
}

// Result is one measured configuration.
type Result struct {
	Name        string  `json:"name"`
	Rows        int64   `json:"rows"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	GBPerSecond float64 `json:"gb_per_s"`
	RowsPerSec  float64 `json:"rows_per_s"`
	// GBPerCPUSecond divides by the process's CPU time (server and client
	// share it): on a loaded machine wall time mostly measures the others.
	GBPerCPUSecond float64 `json:"gb_per_cpu_s"`
}

func result(name string, rows, bytes int64, d, cpu time.Duration) Result {
	return Result{Name: name, Rows: rows, Bytes: bytes, Seconds: d.Seconds(),
		GBPerSecond: float64(bytes) / d.Seconds() / 1e9, RowsPerSec: float64(rows) / d.Seconds(),
		GBPerCPUSecond: float64(bytes) / cpu.Seconds() / 1e9}
}

// CPUTime is the process's user and system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareServer streams the same in-memory batches for any ticket.
type bareServer struct {
	flight.BaseFlightServer
	batches []arrow.RecordBatch
}

func (s *bareServer) DoGet(_ *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	w := flight.NewRecordWriter(stream, ipc.WithSchema(Schema))
	defer w.Close()
	for _, b := range s.batches {
		if err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// StartFlightd serves a flightd engine over loopback in this process; stop
// shuts the server down and closes the engine.
func StartFlightd(ctx context.Context, cfg engine.Config) (eng *engine.Engine, addr string, stop func(), err error) {
	eng, err = engine.Open(ctx, cfg)
	if err != nil {
		return nil, "", nil, err
	}
	srv, err := fsql.NewServer(eng, fsql.Limits{})
	if err != nil {
		eng.Close()
		return nil, "", nil, err
	}
	fs, err := fsql.NewFlightServer(srv, fsql.Options{})
	if err != nil {
		srv.Close()
		eng.Close()
		return nil, "", nil, err
	}
	addr, shutdown, err := serve(fs)
	if err != nil {
		srv.Close()
		eng.Close()
		return nil, "", nil, err
	}
	return eng, addr, func() {
		srv.CancelStreams()
		shutdown()
		srv.Close()
		eng.Close()
	}, nil
}

func serve(fs flight.Server) (addr string, stop func(), err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	fs.InitListener(lis)
	go func() { _ = fs.Serve() }()
	return lis.Addr().String(), fs.Shutdown, nil
}

// drain reads a DoGet stream to the end, counting rows and buffer bytes.
func drain(r *flight.Reader) (rows, bytes int64, err error) {
	for r.Next() {
		b := r.RecordBatch()
		rows += b.NumRows()
		bytes += util.TotalRecordSize(b)
	}
	if err := r.Err(); err != nil && err != io.EOF {
		return rows, bytes, err
	}
	return rows, bytes, nil
}

// Bare measures the ceiling: a Flight server streaming batches from memory.
func Bare(ctx context.Context, batches []arrow.RecordBatch, runs int) (Result, error) {
	fs := flight.NewServerWithMiddleware(nil)
	fs.RegisterFlightService(&bareServer{batches: batches})
	addr, stop, err := serve(fs)
	if err != nil {
		return Result{}, err
	}
	defer stop()
	cl, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	return best(runs, "bare arrow-go Flight server (memory)", func() (int64, int64, error) {
		stream, err := cl.DoGet(ctx, &flight.Ticket{Ticket: []byte("all")})
		if err != nil {
			return 0, 0, err
		}
		r, err := flight.NewRecordReader(stream)
		if err != nil {
			return 0, 0, err
		}
		defer r.Release()
		return drain(r)
	})
}

// Flightd loads the batches into a flightd table under dir and measures a
// full-table DoGet through Flight SQL, and the latency of one-row queries.
//
// compression, unless empty, is the table's file.compression: the loaded
// files are rewritten with it before they are read.
func Flightd(ctx context.Context, dir string, batches []arrow.RecordBatch, batchSize int, cacheBytes int64, compression string, runs, pointQueries int) (scan Result, p50, p99 time.Duration, err error) {
	mem := memory.NewGoAllocator()
	eng, addr, stop, err := StartFlightd(ctx, engine.Config{Mem: mem, Root: dir, BatchSize: batchSize, CacheBytes: cacheBytes})
	if err != nil {
		return scan, 0, 0, err
	}
	defer stop()

	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	sess := eng.NewSession()
	rdr, err := array.NewRecordReader(Schema, batches)
	if err != nil {
		return scan, 0, 0, err
	}
	_, err = sess.Ingest(ctx, engine.IngestRequest{Table: identOf("scan_bench"), Mode: engine.IngestCreate}, rdr)
	rdr.Release()
	if err != nil {
		return scan, 0, 0, fmt.Errorf("load: %w", err)
	}

	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return scan, 0, 0, err
	}
	defer cl.Close()
	if compression != "" {
		for _, stmt := range []string{
			fmt.Sprintf("ALTER TABLE scan_bench SET ('file.compression' = '%s')", compression),
			"INSERT OVERWRITE scan_bench SELECT * FROM scan_bench",
		} {
			if _, err := cl.ExecuteUpdate(ctx, stmt); err != nil {
				return scan, 0, 0, fmt.Errorf("%s: %w", stmt, err)
			}
		}
	}
	run := func(query string) (int64, int64, error) {
		info, err := cl.Execute(ctx, query)
		if err != nil {
			return 0, 0, err
		}
		r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return 0, 0, err
		}
		defer r.Release()
		return drain(r)
	}
	scan, err = best(runs, "flightd DoGet SELECT * (Flight SQL)", func() (int64, int64, error) {
		return run("SELECT * FROM scan_bench")
	})
	if err != nil {
		return scan, 0, 0, err
	}
	lat := make([]time.Duration, 0, pointQueries)
	for i := range pointQueries {
		start := time.Now()
		if _, _, err := run(fmt.Sprintf("SELECT s FROM scan_bench WHERE id = %d", i*7919%int(rows))); err != nil {
			return scan, 0, 0, err
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return scan, lat[len(lat)/2], lat[len(lat)*99/100], nil
}

func identOf(table string) tablestore.Ident {
	return tablestore.Ident{Database: engine.DefaultDatabase, Table: table}
}

// best runs fn runs times after a warm-up and keeps the fastest run (the
// machine is shared; the minimum is the least disturbed measurement).
func best(runs int, name string, fn func() (int64, int64, error)) (Result, error) {
	if _, _, err := fn(); err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	var out Result
	for i := range runs {
		start, cpu0 := time.Now(), CPUTime()
		rows, bytes, err := fn()
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
		r := result(name, rows, bytes, time.Since(start), CPUTime()-cpu0)
		if i == 0 || r.Seconds < out.Seconds {
			out = r
		}
	}
	return out, nil
}
