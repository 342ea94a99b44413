// Command flightbench measures flightd's DoGet throughput and one-row
// query latency over loopback, next to a bare arrow-go Flight server
// streaming the same batches from memory (the ceiling), in one run.
//
//	go run ./cmd/flightbench -rows 4000000 -out results/doget.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/doget"
)

func main() {
	rows := flag.Int("rows", 2_000_000, "rows in the scanned table")
	batch := flag.Int("batch", 64*1024, "rows per batch written")
	cacheBytes := flag.Int64("cache", 1<<30, "flightd's decoded-column cache in bytes (0: none)")
	execBatch := flag.Int("exec-batch", 0, "flightd executor batch size (0: its default)")
	compression := flag.String("compression", "", "the scanned table's file.compression, e.g. snappy (empty: flightd's default)")
	runs := flag.Int("runs", 5, "timed runs (after a warm-up); the fastest is kept")
	points := flag.Int("points", 200, "one-row queries for the latency percentiles")
	out := flag.String("out", "", "write the results as JSON to this file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memprofile := flag.String("memprofile", "", "write an allocation profile of the whole run to this file at the end")
	flag.Parse()
	stopProfile, err := doget.ProfileCPU(*cpuprofile)
	if err != nil {
		log.Fatal(err)
	}
	defer stopProfile()
	if *memprofile != "" {
		defer writeHeapProfile(*memprofile)
	}

	ctx := context.Background()
	batches := doget.Batches(memory.NewGoAllocator(), *rows, *batch)
	bare, err := doget.Bare(ctx, batches, *runs)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "flightbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	scan, p50, p99, err := doget.Flightd(ctx, dir, batches, *execBatch, *cacheBytes, *compression, *runs, *points)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%-40s %12s %10s %14s %10s\n", "configuration", "rows", "GB/s", "rows/s", "GB/cpu-s")
	for _, r := range []doget.Result{bare, scan} {
		fmt.Printf("%-40s %12d %10.3f %14.0f %10.3f\n", r.Name, r.Rows, r.GBPerSecond, r.RowsPerSec, r.GBPerCPUSecond)
	}
	ratio := scan.GBPerSecond / bare.GBPerSecond
	cpuRatio := scan.GBPerCPUSecond / bare.GBPerCPUSecond
	fmt.Printf("flightd / ceiling: %.2fx (per CPU second: %.2fx)\n", ratio, cpuRatio)
	fmt.Printf("one-row query latency: p50 %s, p99 %s (%d queries)\n", p50.Round(time.Microsecond), p99.Round(time.Microsecond), *points)
	if *out != "" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			log.Fatal(err)
		}
		js, _ := json.MarshalIndent(map[string]any{
			"bare": bare, "flightd": scan, "ratio": ratio, "cpu_ratio": cpuRatio,
			"point_p50_ms": p50.Seconds() * 1e3, "point_p99_ms": p99.Seconds() * 1e3,
		}, "", "  ")
		if err := os.WriteFile(*out, js, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// writeHeapProfile writes the allocations since the start (alloc_space and
// alloc_objects samples) for go tool pprof.
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		log.Fatal(err)
	}
}
