package flightsql_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"

	"github.com/flightd/flightd/engine"
	fsql "github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/internal/slt"
)

// flightHarness runs sqllogictest records through the ADBC Flight SQL
// driver against a flightd on loopback.
type flightHarness struct {
	cnxn adbc.Connection
}

// Exec sends statements the way ADBC's execute() does, as a query, and
// drains any rows: DDL and DML must run eagerly on that path, and a SELECT
// in a statement record must still run.
func (h *flightHarness) Exec(sql string) error {
	_, err := tryQuery(h.cnxn, sql)
	return err
}

func (h *flightHarness) Query(sql string) (string, [][]string, error) {
	stmt, err := h.cnxn.NewStatement()
	if err != nil {
		return "", nil, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(sql); err != nil {
		return "", nil, err
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return "", nil, err
	}
	defer rdr.Release()
	var rows [][]string
	for rdr.Next() {
		b := rdr.RecordBatch()
		for r := 0; r < int(b.NumRows()); r++ {
			row := make([]string, b.NumCols())
			for c := range row {
				row[c] = slt.FormatValue(b.Column(c), r)
			}
			rows = append(rows, row)
		}
	}
	if err := rdr.Err(); err != nil {
		return "", nil, err
	}
	return slt.ColTypes(rdr.Schema()), rows, nil
}

// splitHarness reads each query's endpoints as ADBC partitions, all at
// once (ReadPartition): the driver's own ExecuteQuery reads several
// endpoints on goroutines sharing one grpc.Header option, a data race in
// arrow-adbc v1.12 that -race reports.
type splitHarness struct{ flightHarness }

func (h *splitHarness) Query(sql string) (string, [][]string, error) {
	stmt, err := h.cnxn.NewStatement()
	if err != nil {
		return "", nil, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(sql); err != nil {
		return "", nil, err
	}
	schema, parts, _, err := stmt.ExecutePartitions(context.Background())
	if err != nil {
		return "", nil, err
	}
	rows := make([][][]string, len(parts.PartitionIDs))
	errs := make([]error, len(parts.PartitionIDs))
	var wg sync.WaitGroup
	for i, p := range parts.PartitionIDs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdr, err := h.cnxn.ReadPartition(context.Background(), p)
			if err != nil {
				errs[i] = err
				return
			}
			defer rdr.Release()
			for rdr.Next() {
				b := rdr.RecordBatch()
				for r := 0; r < int(b.NumRows()); r++ {
					row := make([]string, b.NumCols())
					for c := range row {
						row[c] = slt.FormatValue(b.Column(c), r)
					}
					rows[i] = append(rows[i], row)
				}
			}
			errs[i] = rdr.Err()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", nil, err
	}
	// Ordered results are one endpoint: the parts' order is free.
	return slt.ColTypes(schema), slices.Concat(rows...), nil
}

// TestSLTOverFlight runs every sqllogictest file through a real Flight SQL
// client, each file against a fresh server whose executor batch size and
// column cache size are drawn at random (the seed is logged).
func TestSLTOverFlight(t *testing.T) {
	runSLTOverFlight(t, fsql.Limits{}, 1)
}

// TestSLTOverSplitEndpoints runs the corpus in sessions that ask for up to
// 4 endpoints per result, of any size: the ADBC driver reads the endpoints
// of the queries that split concurrently, and every answer must be the
// one-endpoint answer the files hold.
func TestSLTOverSplitEndpoints(t *testing.T) {
	runSLTOverFlight(t, splitLimits, 4)
}

func runSLTOverFlight(t *testing.T, limits fsql.Limits, endpoints int) {
	files, err := filepath.Glob("../testdata/slt/*.slt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .slt files: %v", err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, f := range files {
		batchSize := []int{1, 3, 7, 100, 1024, 4096}[rng.IntN(6)]
		cacheBytes := []int64{0, 8 << 10, 64 << 20}[rng.IntN(3)]
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Logf("executor batch size %d, column cache %d bytes", batchSize, cacheBytes)
			ts := startServerLimits(t, limits, 0, fsql.Options{}, func(c *engine.Config) {
				c.BatchSize = batchSize
				c.CacheBytes = cacheBytes
			})
			cnxn := ts.connect(t, map[string]string{adbcflightsql.OptionCookieMiddleware: adbc.OptionValueEnabled})
			if endpoints > 1 {
				if err := cnxn.(adbc.PostInitOptions).SetOption(adbcflightsql.OptionSessionOptionPrefix+"flightd.max_endpoints", fmt.Sprint(endpoints)); err != nil {
					t.Fatal(err)
				}
			}
			if endpoints > 1 {
				slt.RunFile(t, &splitHarness{flightHarness{cnxn: cnxn}}, f)
				return
			}
			slt.RunFile(t, &flightHarness{cnxn: cnxn}, f)
		})
	}
}
