// Command commitbench measures how many commits per second flightd
// publishes into one primary-key table with 1, 8 and 32 concurrent
// writers, each with its own ADBC Flight SQL connection over loopback:
// autocommit one-row INSERTs, and bulk ingests of a few rows. Blind writes
// must never fail for being concurrent; failures are counted.
//
//	go run ./cmd/commitbench -duration 10s -writers 1,8,32 -out results/commits.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/doget"
)

// result is one measured configuration.
type result struct {
	Kind          string  `json:"kind"` // insert or ingest
	Writers       int     `json:"writers"`
	Commits       int64   `json:"commits"`
	Failed        int64   `json:"failed"`
	CommitsPerSec float64 `json:"commits_per_sec"`
	P50Ms         float64 `json:"latency_p50_ms"`
	P99Ms         float64 `json:"latency_p99_ms"`
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

func main() {
	duration := flag.Duration("duration", 10*time.Second, "length of each measurement")
	writersFlag := flag.String("writers", "1,8,32", "writer counts, comma-separated")
	keys := flag.Int("keys", 1000, "distinct keys the writes pick from (few keys: more writes of one key at once)")
	ingestRows := flag.Int("ingest-rows", 100, "rows per ingest")
	out := flag.String("out", "", "write the results as JSON to this file")
	kinds := flag.String("kinds", "insert,ingest", "what the writers commit, comma-separated: insert, ingest")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	stopProfile, err := doget.ProfileCPU(*cpuprofile)
	if err != nil {
		log.Fatal(err)
	}
	defer stopProfile()
	var writers []int
	for _, w := range strings.Split(*writersFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			log.Fatalf("-writers: %q is not a positive count", w)
		}
		writers = append(writers, n)
	}
	ctx := context.Background()
	mem := memory.NewGoAllocator()
	db, _, stop, err := doget.ServeADBC(ctx, mem, "commitbench")
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	var results []result
	fmt.Printf("%-7s %8s %8s %7s %10s %9s %9s\n", "kind", "writers", "commits", "failed", "commits/s", "p50", "p99")
	for i, kind := range strings.Split(*kinds, ",") {
		for j, n := range writers {
			table := fmt.Sprintf("t%d_%d", i, j)
			if err := execSQL(ctx, db, fmt.Sprintf("CREATE TABLE %s (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4')", table)); err != nil {
				log.Fatal(err)
			}
			if kind != "insert" && kind != "ingest" {
				log.Fatalf("-kinds: unknown %q", kind)
			}
			r, err := measure(ctx, db, mem, table, kind, n, *keys, *ingestRows, *duration)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%-7s %8d %8d %7d %10.1f %7.1fms %7.1fms\n", r.Kind, r.Writers, r.Commits, r.Failed, r.CommitsPerSec, r.P50Ms, r.P99Ms)
			results = append(results, r)
		}
	}
	if *out != "" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			log.Fatal(err)
		}
		js, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(*out, js, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// measure runs n writers for d, each committing as fast as it can.
func measure(ctx context.Context, db adbc.Database, mem memory.Allocator, table, kind string, n, keys, ingestRows int, d time.Duration) (result, error) {
	res := result{Kind: kind, Writers: n}
	var commits, failed atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range n {
		cnxn, err := db.Open(ctx)
		if err != nil {
			return res, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cnxn.Close()
			var mine []time.Duration
			for i := 0; time.Now().Before(end); i++ {
				start := time.Now()
				var err error
				if kind == "insert" {
					k := (w*7919 + i*104729) % keys
					err = execUpdate(ctx, cnxn, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", table, k, i))
				} else {
					err = ingest(ctx, cnxn, mem, table, w, i, ingestRows, keys)
				}
				if err != nil {
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				mine = append(mine, time.Since(start))
				commits.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if firstErr != nil {
		log.Printf("%s with %d writers: %d failed, the first: %v", kind, n, failed.Load(), firstErr)
	}
	res.Commits, res.Failed = commits.Load(), failed.Load()
	res.CommitsPerSec = float64(res.Commits) / d.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50Ms = float64(lat[len(lat)/2]) / 1e6
		res.P99Ms = float64(lat[len(lat)*99/100]) / 1e6
	}
	return res, nil
}

func execSQL(ctx context.Context, db adbc.Database, q string) error {
	cnxn, err := db.Open(ctx)
	if err != nil {
		return err
	}
	defer cnxn.Close()
	return execUpdate(ctx, cnxn, q)
}

func execUpdate(ctx context.Context, cnxn adbc.Connection, q string) error {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}

// ingest appends rows upserts through ADBC bulk ingest, one commit.
func ingest(ctx context.Context, cnxn adbc.Connection, mem memory.Allocator, table string, w, i, rows, keys int) error {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for r := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64((w*7919 + i*104729 + r*31) % keys))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		return err
	}
	defer rdr.Release()
	return doget.IngestADBC(ctx, cnxn, table, adbc.OptionValueIngestModeAppend, rdr)
}
