// Command loadbench loads the same rows into a flightd append table twice
// through ADBC bulk ingest over loopback: once as one ingest (one commit),
// and once as a naive client does, one ingest (one commit) every -commit
// rows. It prints both times, commits per second, the files and bytes on
// disk right after each load, and the ratio of the two load times.
//
//	go run ./cmd/loadbench -rows 1000000 -commit 2048 -out results/load.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/doget"
)

// result is one load.
type result struct {
	Name          string  `json:"name"`
	Rows          int64   `json:"rows"`
	Commits       int     `json:"commits"`
	Seconds       float64 `json:"seconds"`
	RowsPerSec    float64 `json:"rows_per_s"`
	CommitsPerSec float64 `json:"commits_per_s"`
	CPUSeconds    float64 `json:"cpu_seconds"` // the process's: server and client
	Files         int     `json:"parquet_files"`
	Bytes         int64   `json:"parquet_bytes"`
}

func main() {
	rows := flag.Int("rows", 1_000_000, "rows loaded")
	commitRows := flag.Int("commit", 2048, "rows per commit of the small-commit load")
	out := flag.String("out", "", "write the results as JSON to this file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	stopProfile, err := doget.ProfileCPU(*cpuprofile)
	if err != nil {
		log.Fatal(err)
	}
	defer stopProfile()
	ctx := context.Background()
	mem := memory.NewGoAllocator()
	db, dir, stop, err := doget.ServeADBC(ctx, mem, "loadbench")
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	cnxn, err := db.Open(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer cnxn.Close()

	bulk, err := load(ctx, cnxn, dir, "bulk", doget.Batches(mem, *rows, 64*1024), 0)
	if err != nil {
		log.Fatal(err)
	}
	small, err := load(ctx, cnxn, dir, "small", doget.Batches(mem, *rows, *commitRows), *commitRows)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%-28s %9s %8s %9s %12s %10s %8s %7s %12s\n", "load", "rows", "commits", "seconds", "rows/s", "commits/s", "cpu-s", "files", "bytes")
	for _, r := range []result{bulk, small} {
		fmt.Printf("%-28s %9d %8d %9.2f %12.0f %10.1f %8.2f %7d %12d\n", r.Name, r.Rows, r.Commits, r.Seconds, r.RowsPerSec, r.CommitsPerSec, r.CPUSeconds, r.Files, r.Bytes)
	}
	ratio := small.Seconds / bulk.Seconds
	cpuRatio := small.CPUSeconds / bulk.CPUSeconds
	fmt.Printf("small commits / bulk: %.2fx the time (%.2fx the CPU)\n", ratio, cpuRatio)
	if *out != "" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			log.Fatal(err)
		}
		js, _ := json.MarshalIndent(map[string]any{"bulk": bulk, "small": small, "ratio": ratio, "cpu_ratio": cpuRatio}, "", "  ")
		if err := os.WriteFile(*out, js, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// load ingests batches into a new table, one commit per batch when
// perCommit > 0, else all in one ingest.
func load(ctx context.Context, cnxn adbc.Connection, dir, table string, batches []arrow.RecordBatch, perCommit int) (result, error) {
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	res := result{Name: table + " (one ingest)"}
	start, cpu0 := time.Now(), doget.CPUTime()
	if perCommit == 0 {
		if err := ingest(ctx, cnxn, table, adbc.OptionValueIngestModeCreate, batches); err != nil {
			return res, err
		}
		res.Commits = 1
	} else {
		res.Name = fmt.Sprintf("%s (an ingest per %d rows)", table, perCommit)
		for i, b := range batches {
			mode := adbc.OptionValueIngestModeAppend
			if i == 0 {
				mode = adbc.OptionValueIngestModeCreate
			}
			if err := ingest(ctx, cnxn, table, mode, []arrow.RecordBatch{b}); err != nil {
				return res, fmt.Errorf("commit %d: %w", i+1, err)
			}
		}
		res.Commits = len(batches)
	}
	d, cpu := time.Since(start), doget.CPUTime()-cpu0
	for _, b := range batches {
		res.Rows += b.NumRows()
	}
	res.Seconds, res.CPUSeconds = d.Seconds(), cpu.Seconds()
	res.RowsPerSec = float64(res.Rows) / d.Seconds()
	res.CommitsPerSec = float64(res.Commits) / d.Seconds()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !strings.Contains(p, string(filepath.Separator)+table+string(filepath.Separator)) || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		res.Files++
		res.Bytes += info.Size()
		return nil
	})
	return res, err
}

// ingest sends batches through one ADBC bulk ingest: one commit.
func ingest(ctx context.Context, cnxn adbc.Connection, table, mode string, batches []arrow.RecordBatch) error {
	rdr, err := array.NewRecordReader(doget.Schema, batches)
	if err != nil {
		return err
	}
	defer rdr.Release()
	return doget.IngestADBC(ctx, cnxn, table, mode, rdr)
}
