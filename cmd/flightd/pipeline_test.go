package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// pipelineStatements reads docs/examples/pipeline.sql: its statements,
// without comments.
func pipelineStatements(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile("../../docs/examples/pipeline.sql")
	if err != nil {
		t.Fatal(err)
	}
	text = regexp.MustCompile(`(?m)--.*$`).ReplaceAll(text, nil)
	var out []string
	for _, s := range strings.Split(string(text), ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// orderChange is one CDC row of orders_ods.
type orderChange struct {
	kind     string
	id, cust int64
	amount   int32
	ds       string
}

// cdcBatch is a changelog batch of orders_ods as a CDC tool sends it:
// the row kind in _row_kind, then the row.
func cdcBatch(mem memory.Allocator, rows []orderChange) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "_row_kind", Type: arrow.BinaryTypes.String},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cust_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "ds", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.kind)
		b.Field(1).(*array.Int64Builder).Append(r.id)
		b.Field(2).(*array.Int64Builder).Append(r.cust)
		b.Field(3).(*array.Int32Builder).Append(r.amount)
		b.Field(4).(*array.StringBuilder).Append(r.ds)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		panic(err)
	}
	return rdr
}

// TestPipeline runs the example pipeline (docs/examples/pipeline.sql)
// against a real flightd through ADBC: a CDC writer pushes random order
// changes into the ODS table by bulk ingest and changes customers by SQL,
// while the materialized tables above keep up. It records each layer's
// data lag (sys.materialized_tables) during the run, and at the end every
// layer must equal its query over the current data, and the ODS table the
// writer's model.
func TestPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real process")
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	p := start(t, buildFlightd(t), t.TempDir())
	cnxn, closeConn := p.connect(t)
	defer closeConn()
	for _, q := range pipelineStatements(t) {
		if err := execSQL(cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	model := map[int64]orderChange{}
	maxLag := map[string]int64{}
	days := []string{"2026-11-29", "2026-11-30", "2026-12-01"}
	for round, end := 0, time.Now().Add(15*time.Second); time.Now().Before(end); round++ {
		if round%5 == 0 {
			q := fmt.Sprintf("INSERT INTO customers VALUES (%d, 'r%d')", rng.IntN(8), rng.IntN(4))
			if err := execSQL(cnxn, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var rows []orderChange
		for range 1 + rng.IntN(10) {
			id := int64(rng.IntN(200))
			next := orderChange{"+I", id, int64(rng.IntN(10)), int32(rng.IntN(100)), days[rng.IntN(len(days))]}
			old, ok := model[id]
			switch {
			case !ok:
				model[id] = next
				rows = append(rows, next)
			case rng.IntN(3) == 0:
				old.kind = "-D"
				delete(model, id)
				rows = append(rows, old)
			default:
				old.kind, next.kind = "-U", "+U"
				model[id] = next
				rows = append(rows, old, next)
			}
		}
		rdr := cdcBatch(mem, rows)
		err := ingestStream(cnxn, "orders_ods", adbc.OptionValueIngestModeAppend, rdr)
		rdr.Release()
		if err != nil {
			t.Fatalf("CDC ingest: %v", err)
		}
		if round%10 == 0 {
			for _, r := range rowsOf(t, cnxn, "SELECT table_name, data_lag_ms FROM sys.materialized_tables", " ") {
				name, lag, _ := strings.Cut(r, " ")
				if ms, err := strconv.ParseInt(lag, 10, 64); err == nil {
					maxLag[name] = max(maxLag[name], ms)
				}
			}
		}
	}
	t.Logf("largest data lag seen per layer during the run (ms): %v", maxLag)
	// The freshness promise, with room for a loaded machine: a layer lags
	// by at most its freshness plus a refresh (continuous: a commit), which
	// here stays far below a second freshness and 5 s.
	for table, freshness := range map[string]int64{"dwd_orders": 5000, "dws_region_day": 5000, "ads_top_regions": 10000} {
		if lag, ok := maxLag[table]; !ok || lag > 2*freshness+5000 {
			t.Errorf("%s: largest data lag %d ms (seen: %v), freshness %d ms", table, lag, ok, freshness)
		}
	}
	var want []string
	for _, r := range model {
		want = append(want, fmt.Sprintf("%d %d %d %s", r.id, r.cust, r.amount, r.ds))
	}
	slices.Sort(want)
	if got := rowsOf(t, cnxn, "SELECT id, cust_id, amount, ds FROM orders_ods", " "); !slices.Equal(got, want) {
		t.Fatalf("seed %d: orders_ods is not what the CDC writer sent:\n got %v\nwant %v", seed, got, want)
	}
	// Each layer catches up with the quiet sources (the ADS layer at its
	// next scheduled refresh).
	for _, layer := range []struct{ table, query string }{
		{"dwd_orders", "SELECT o.id, o.ds, o.amount, c.region FROM orders_ods AS o JOIN customers AS c ON o.cust_id = c.cust_id"},
		{"dws_region_day", "SELECT ds, region, sum(amount), count(*) FROM orders_ods AS o JOIN customers AS c ON o.cust_id = c.cust_id GROUP BY ds, region"},
		{"ads_top_regions", `SELECT ds, region, total FROM (SELECT ds, region, total, ROW_NUMBER() OVER (PARTITION BY ds ORDER BY total DESC, region) AS rn
			FROM (SELECT ds, region, sum(amount) AS total FROM orders_ods AS o JOIN customers AS c ON o.cust_id = c.cust_id GROUP BY ds, region) AS t) AS r WHERE rn <= 2`},
	} {
		want := rowsOf(t, cnxn, layer.query, " ")
		start := time.Now()
		for {
			got := rowsOf(t, cnxn, "SELECT * FROM "+layer.table, " ")
			if slices.Equal(got, want) {
				break
			}
			if time.Since(start) > 60*time.Second {
				t.Fatalf("seed %d: %s did not catch up in 60 s:\n got %v\nwant %v", seed, layer.table, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("%s caught up %v after the writer stopped (%d rows)", layer.table, time.Since(start).Round(time.Millisecond), len(want))
	}
	for _, r := range rowsOf(t, cnxn, "SELECT table_name, refresh_mode, coalesce(last_error, '') FROM sys.materialized_tables", "|") {
		if f := strings.Split(r, "|"); f[2] != "" {
			t.Errorf("%s (%s): last error %s", f[0], f[1], f[2])
		}
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("flightd did not exit cleanly on SIGTERM: %v", err)
	}
}
