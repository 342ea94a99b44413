// Command streambench measures flightd's change streams over loopback:
// commit-to-client latency under a steady write load with 1 and more
// consumers, and the delivery rate of a backlog of changes.
//
//	go run ./cmd/streambench -producer none -out results/stream.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/bench/changes"
	"github.com/flightd/flightd/bench/doget"
)

func main() {
	var cfg changes.Config
	flag.StringVar(&cfg.Producer, "producer", "none", "changelog-producer of the table: none, input, lookup or full-compaction")
	flag.IntVar(&cfg.Keys, "keys", 100_000, "distinct keys the upserts pick from")
	flag.IntVar(&cfg.RowsPerCommit, "rows", 100, "rows per commit under steady load")
	flag.DurationVar(&cfg.Interval, "interval", 50*time.Millisecond, "time between commits under steady load")
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of each steady-load phase")
	consumers := flag.String("consumers", "1,8,64", "consumer counts to measure, comma-separated")
	flag.IntVar(&cfg.Backlog, "backlog", 50, "commits in the backlog (0: no backlog phase)")
	flag.IntVar(&cfg.BacklogCommit, "backlog-rows", 20_000, "rows per backlog commit")
	flag.Int64Var(&cfg.CacheBytes, "cache", 1<<30, "flightd's decoded-column cache in bytes (0: none)")
	flag.BoolVar(&cfg.Aggregate, "aggregate", false, "consumers stream a GROUP BY aggregation of the table (changes.AggregateQuery) instead of its changes")
	out := flag.String("out", "", "write the results as JSON to this file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	mutexProfile := flag.String("mutexprofile", "", "write a mutex contention profile of the run to this file")
	blockProfile := flag.String("blockprofile", "", "write a blocking profile of the run to this file")
	flag.Parse()
	if *mutexProfile != "" {
		runtime.SetMutexProfileFraction(1)
		defer writeProfile("mutex", *mutexProfile)
	}
	if *blockProfile != "" {
		// Blocking events of 100 µs or more: channel waits, selects, locks.
		runtime.SetBlockProfileRate(int(100 * time.Microsecond))
		defer writeProfile("block", *blockProfile)
	}
	stopProfile, err := doget.ProfileCPU(*cpuProfile)
	if err != nil {
		log.Fatal(err)
	}
	defer stopProfile()
	for _, c := range strings.Split(*consumers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			log.Fatalf("-consumers: %q is not a positive count", c)
		}
		cfg.Consumers = append(cfg.Consumers, n)
	}
	dir, err := os.MkdirTemp("", "streambench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	res, err := changes.Run(context.Background(), dir, cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("changelog-producer %s, %d rows per commit every %v\n", cfg.Producer, cfg.RowsPerCommit, cfg.Interval)
	if cfg.Aggregate {
		fmt.Printf("consumers stream: %s\n", changes.AggregateQuery)
	}
	fmt.Println("latency: commit = from the commit's acknowledgement to the consumer; write = from the write call (includes the commit)")
	fmt.Printf("%-10s %8s %9s %11s %11s %11s %11s %11s %11s %11s\n", "consumers", "commits", "rows", "commit p50", "commit p99", "commit max", "write p50", "write p99", "ack p50", "cpu/commit")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }
	for _, l := range res.Latency {
		fmt.Printf("%-10d %8d %9d %11s %11s %11s %11s %11s %11s %11s\n", l.Consumers, l.Commits, l.Rows,
			ms(l.CommitP50), ms(l.CommitP99), ms(l.CommitMax), ms(l.WriteP50), ms(l.WriteP99), ms(l.AckP50), ms(l.CPUPerCommit))
	}
	if cfg.Backlog > 0 {
		fmt.Printf("backlog: %d commits of %d rows ingested at %.0f rows/s\n", cfg.Backlog, cfg.BacklogCommit, res.IngestRPS)
		fmt.Printf("%-10s %12s %10s %14s\n", "consumers", "rows each", "seconds", "rows/s total")
		for _, t := range res.Throughput {
			fmt.Printf("%-10d %12d %10.2f %14.0f\n", t.Consumers, t.RowsPerReader, t.Seconds, t.RowsPerSec)
		}
	}
	if *out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// writeProfile writes the named runtime profile to path.
func writeProfile(name, path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		log.Fatal(err)
	}
}
