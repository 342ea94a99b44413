// Command qlat measures the latency of small queries repeated many times:
// the fixed cost of a query end to end from a client. For each query it
// prints the median and 90th percentile of the wall times, flightd's process
// CPU per query (with -flightd-pid; the mean over the runs, so /proc's 10 ms
// ticks average out), this process's CPU per query (the client's), and with
// -phases the two Flight SQL calls apart: GetFlightInfo, then DoGet to its
// first batch and to its end (arrow-go's Flight SQL client instead of
// ADBC's driver). With -duckdb FILE the same query runs on DuckDB over that
// file in this process, as the TPC-DS runner runs it.
//
//	go run ./cmd/qlat -flightd grpc://127.0.0.1:31337 -flightd-pid PID -duckdb duck.db -n 200 03 52 'SELECT 1'
//
// An argument of two digits names a TPC-DS query file (-queries DIR); any
// other argument is SQL.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/bench/tpcds"
)

var queryName = regexp.MustCompile(`^[0-9]{2}$`)

func main() {
	var (
		uri        = flag.String("flightd", "grpc://127.0.0.1:31337", "flightd's Flight SQL URI (empty: DuckDB only)")
		pid        = flag.Int("flightd-pid", 0, "flightd's process id, to measure its CPU per query")
		duckFile   = flag.String("duckdb", "", "DuckDB database file to run the same queries on (empty: flightd only)")
		n          = flag.Int("n", 100, "timed runs of each query (after -warm warm-up runs)")
		warm       = flag.Int("warm", 3, "warm-up runs of each query")
		phases     = flag.Bool("phases", false, "time GetFlightInfo and DoGet apart, through arrow-go's Flight SQL client")
		queriesDir = flag.String("queries", filepath.Join("..", "..", "shared", "bench", "tpcds", "queries"), "directory of the TPC-DS query files NN.sql")
	)
	flag.Parse()
	ctx := context.Background()
	mem := memory.NewGoAllocator()

	var fd *tpcds.Flightd
	var fsql *flightsql.Client
	if *uri != "" {
		var err error
		if fd, err = tpcds.OpenFlightd(ctx, mem, *uri); err != nil {
			log.Fatal(err)
		}
		defer fd.Close()
		if *phases {
			addr := regexp.MustCompile(`^grpc(\+tcp)?://`).ReplaceAllString(*uri, "")
			if fsql, err = flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
				log.Fatal(err)
			}
			defer fsql.Close()
		}
	}
	var duck *tpcds.DuckDB
	if *duckFile != "" {
		var err error
		if duck, err = tpcds.OpenDuckDB(ctx, *duckFile, 0); err != nil {
			log.Fatal(err)
		}
		defer duck.Close()
	}
	for _, arg := range flag.Args() {
		name, query := arg, arg
		if queryName.MatchString(arg) {
			b, err := os.ReadFile(filepath.Join(*queriesDir, arg+".sql"))
			if err != nil {
				log.Fatal(err)
			}
			name, query = "q"+arg, string(b)
		} else if len(name) > 24 {
			name = name[:24]
		}
		if fd != nil {
			s := measure(*n, *warm, *pid, func() error {
				_, err := fd.Query(ctx, query)
				return err
			})
			s.print(name, "flightd")
		}
		if fsql != nil {
			var info, first time.Duration
			s := measure(*n, *warm, *pid, func() error {
				i, f, err := runPhases(ctx, fsql, query)
				info, first = info+i, first+f
				return err
			})
			s.print(name, "phases")
			runs := time.Duration(*n + *warm)
			fmt.Printf("%-24s %-8s GetFlightInfo %.2f ms, DoGet to first batch %.2f ms (means)\n", name, "", ms(info/runs), ms(first/runs))
		}
		if duck != nil {
			s := measure(*n, *warm, 0, func() error {
				_, err := duck.Query(ctx, query)
				return err
			})
			s.print(name, "duckdb")
		}
	}
}

// runPhases runs query as GetFlightInfo and DoGet of its one endpoint,
// reading every batch, and says how long GetFlightInfo and the first batch
// took.
func runPhases(ctx context.Context, c *flightsql.Client, query string) (info, first time.Duration, err error) {
	start := time.Now()
	fi, err := c.Execute(ctx, query)
	if err != nil {
		return 0, 0, err
	}
	info = time.Since(start)
	for _, ep := range fi.Endpoint {
		rdr, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			return 0, 0, err
		}
		for rdr.Next() {
			if first == 0 {
				first = time.Since(start) - info
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return 0, 0, err
		}
	}
	return info, first, nil
}

type stats struct {
	wall              []float64 // ms
	serverCPU, ownCPU float64   // ms per run
}

func measure(n, warm, pid int, run func() error) stats {
	for range warm {
		if err := run(); err != nil {
			log.Fatal(err)
		}
	}
	var s stats
	srv0, own0 := cpu(pid), cpu(os.Getpid())
	for range n {
		t := time.Now()
		if err := run(); err != nil {
			log.Fatal(err)
		}
		s.wall = append(s.wall, ms(time.Since(t)))
	}
	if pid != 0 {
		s.serverCPU = (cpu(pid) - srv0) * 1000 / float64(n)
	}
	s.ownCPU = (cpu(os.Getpid()) - own0) * 1000 / float64(n)
	return s
}

func (s stats) print(name, engine string) {
	w := slices.Clone(s.wall)
	slices.Sort(w)
	fmt.Printf("%-24s %-8s p50 %7.2f ms  p90 %7.2f ms  min %7.2f ms  server CPU %6.2f ms  client CPU %6.2f ms  (n=%d, load %s)\n",
		name, engine, w[len(w)/2], w[len(w)*9/10], w[0], s.serverCPU, s.ownCPU, len(w), loadavg())
}

func cpu(pid int) float64 {
	if pid == 0 {
		return 0
	}
	c, err := tpcds.CPUSeconds(pid)
	if err != nil {
		log.Fatal(err)
	}
	return c
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if len(b) < 4 {
		return "?"
	}
	return string(b[:4])
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
