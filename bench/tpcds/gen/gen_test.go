package gen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// schemaDir finds the shared TPC-DS schema: $TPCDS_SCHEMA, or the shared/
// directory beside the repository.
func schemaDir(t testing.TB) string {
	if d := os.Getenv("TPCDS_SCHEMA"); d != "" {
		return d
	}
	d, err := filepath.Abs("../../../../shared/bench/tpcds/schema")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("TPC-DS schema not found at %s (set TPCDS_SCHEMA): %v", d, err)
	}
	return d
}

func newGen(t testing.TB, sf float64, seed uint64) *Generator {
	tables, err := LoadSchemaDir(schemaDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 24 {
		t.Fatalf("schema has %d tables, want 24", len(tables))
	}
	g, err := New(tables, Config{Scale: sf, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func checkedMem(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// digest hashes the IPC stream of a whole table read with the given batch
// size and worker count.
func digest(t *testing.T, mem memory.Allocator, g *Generator, table string, batch, workers int) ([32]byte, int64) {
	ctx := context.Background()
	rd, err := g.NewReader(ctx, mem, table, batch, workers)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	h := sha256.New()
	var rows int64
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rows += b.NumRows()
		// Hash value by value, so the digest does not depend on batch
		// boundaries.
		for i := 0; i < int(b.NumRows()); i++ {
			for c := 0; c < int(b.NumCols()); c++ {
				io.WriteString(h, b.Column(c).ValueStr(i))
				h.Write([]byte{0x1f})
			}
		}
		b.Release()
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, rows
}

func TestDeterminism(t *testing.T) {
	mem := checkedMem(t)
	g1, g2 := newGen(t, 0.01, 42), newGen(t, 0.01, 42)
	other := newGen(t, 0.01, 43)
	for _, table := range []string{"store_sales", "store_returns", "item", "customer", "web_sales", "catalog_returns", "date_dim"} {
		a, n := digest(t, mem, g1, table, 4096, 1)
		b, _ := digest(t, mem, g2, table, 777, 3)
		if a != b {
			t.Errorf("%s: different data for the same seed with other batch size/workers", table)
		}
		if c, _ := digest(t, mem, other, table, 4096, 2); c == a && table != "date_dim" {
			t.Errorf("%s: seed 43 gives the same data as seed 42", table)
		}
		if want, _ := g1.RowCount(table); n != want {
			t.Errorf("%s: read %d rows, want %d", table, n, want)
		}
	}
}

// TestSameBytes checks byte-identical IPC output of independently generated
// chunks.
func TestSameBytes(t *testing.T) {
	mem := checkedMem(t)
	g := newGen(t, 0.01, 7)
	ipcBytes := func(start, n int64) []byte {
		b, err := g.Chunk(mem, "catalog_sales", start, n)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(b.Schema()), ipc.WithAllocator(mem))
		if err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	if !bytes.Equal(ipcBytes(5000, 3000), ipcBytes(5000, 3000)) {
		t.Fatal("same chunk, different bytes")
	}
	// A chunk generated alone equals the same rows cut from a larger chunk.
	big, err := g.Chunk(mem, "catalog_sales", 4000, 5000)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Release()
	small, err := g.Chunk(mem, "catalog_sales", 5000, 3000)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Release()
	cut := big.NewSlice(1000, 4000)
	defer cut.Release()
	if !array.RecordEqual(cut, small) {
		t.Fatal("chunk [5000,8000) differs from the same rows of chunk [4000,9000)")
	}
}

func TestRowCounts(t *testing.T) {
	want := map[float64]map[string]int64{
		1: {"store_sales": 2880404, "catalog_sales": 1441548, "web_sales": 719384, "store_returns": 287514,
			"catalog_returns": 144067, "web_returns": 71763, "inventory": 11745000, "customer": 100000,
			"customer_address": 50000, "customer_demographics": 1920800, "date_dim": 73049, "time_dim": 86400,
			"item": 18000, "household_demographics": 7200, "income_band": 20, "promotion": 300, "reason": 75,
			"ship_mode": 20, "store": 12, "warehouse": 5, "web_page": 60, "web_site": 30, "call_center": 6,
			"catalog_page": 11718},
		10: {"store_sales": 28800991, "customer": 500000, "item": 102000, "store": 102, "inventory": 133110000,
			"customer_address": 250000, "web_site": 42, "call_center": 24, "warehouse": 10, "promotion": 500},
		100: {"store_sales": 287997024, "customer": 2000000, "item": 204000, "store": 402, "inventory": 399330000},
		0.01: {"store_sales": 28804, "customer": 1000, "item": 2000, "store": 12, "reason": 75,
			"customer_demographics": 1920800, "inventory": 1306305},
		2: {"store_sales": 2 * 2880404},
	}
	for sf, tables := range want {
		g := newGen(t, sf, 1)
		for table, n := range tables {
			got, err := g.RowCount(table)
			if err != nil {
				t.Fatal(err)
			}
			if got != n {
				t.Errorf("SF%v %s: %d rows, want %d", sf, table, got, n)
			}
		}
	}
}

// TestOrdersCoverExactly checks the line-to-order mapping: orders are
// consecutive, each has between the channel's minimum and maximum lines
// (except the cut last one), and item keys repeat nowhere inside an order.
func TestOrdersCoverExactly(t *testing.T) {
	mem := checkedMem(t)
	g := newGen(t, 0.01, 3)
	for _, tc := range []struct {
		table, order, item string
		lo, hi             int
	}{
		{"store_sales", "ss_ticket_number", "ss_item_sk", 8, 16},
		{"catalog_sales", "cs_order_number", "cs_item_sk", 4, 14},
		{"web_sales", "ws_order_number", "ws_item_sk", 8, 16},
	} {
		n, _ := g.RowCount(tc.table)
		b, err := g.Chunk(mem, tc.table, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		orders := colInts(t, b, tc.order)
		items := colInts(t, b, tc.item)
		b.Release()
		var prev int64 = 1
		lines, seen := 0, map[int64]bool{}
		for i, o := range orders {
			if o != prev {
				if o != prev+1 || lines < tc.lo || lines > tc.hi {
					t.Fatalf("%s row %d: order %d after %d with %d lines", tc.table, i, o, prev, lines)
				}
				prev, lines, seen = o, 0, map[int64]bool{}
			}
			if seen[items[i]] {
				t.Fatalf("%s order %d repeats item %d", tc.table, o, items[i])
			}
			seen[items[i]] = true
			lines++
		}
	}
}

func colInts(t *testing.T, b arrow.RecordBatch, name string) []int64 {
	idx := b.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("no column %s", name)
	}
	a := b.Column(idx[0]).(*array.Int32)
	out := make([]int64, a.Len())
	for i := range out {
		if a.IsNull(i) {
			out[i] = -1
		} else {
			out[i] = int64(a.Value(i))
		}
	}
	return out
}

// TestReferentialIntegrity checks that every non-NULL foreign key of the
// facts points at an existing dimension row and that every return points
// at a sales line with the same item and order.
func TestReferentialIntegrity(t *testing.T) {
	mem := checkedMem(t)
	g := newGen(t, 0.01, 11)
	all := func(table string) arrow.RecordBatch {
		n, _ := g.RowCount(table)
		b, err := g.Chunk(mem, table, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Release)
		return b
	}
	keys := map[string]map[int64]bool{}
	keySet := func(table, col string) map[int64]bool {
		if s, ok := keys[table+"."+col]; ok {
			return s
		}
		s := map[int64]bool{}
		for _, v := range colInts(t, all(table), col) {
			s[v] = true
		}
		keys[table+"."+col] = s
		return s
	}
	dims := map[string][2]string{
		"date": {"date_dim", "d_date_sk"}, "time": {"time_dim", "t_time_sk"}, "item": {"item", "i_item_sk"},
		"customer": {"customer", "c_customer_sk"}, "cdemo": {"customer_demographics", "cd_demo_sk"},
		"hdemo": {"household_demographics", "hd_demo_sk"}, "addr": {"customer_address", "ca_address_sk"},
		"store": {"store", "s_store_sk"}, "promo": {"promotion", "p_promo_sk"}, "reason": {"reason", "r_reason_sk"},
		"call_center": {"call_center", "cc_call_center_sk"}, "catalog_page": {"catalog_page", "cp_catalog_page_sk"},
		"ship_mode": {"ship_mode", "sm_ship_mode_sk"}, "warehouse": {"warehouse", "w_warehouse_sk"},
		"web_page": {"web_page", "wp_web_page_sk"}, "web_site": {"web_site", "web_site_sk"},
		"income_band": {"income_band", "ib_income_band_sk"},
	}
	// The dimension a foreign key column refers to, by its name.
	refOf := func(col string) (string, bool) {
		if !strings.HasSuffix(col, "_sk") {
			return "", false
		}
		switch {
		case strings.Contains(col, "date"):
			return "date", true
		case strings.Contains(col, "time"):
			return "time", true
		case strings.Contains(col, "cdemo"):
			return "cdemo", true
		case strings.Contains(col, "hdemo"):
			return "hdemo", true
		case strings.Contains(col, "addr"):
			return "addr", true
		case strings.Contains(col, "customer"):
			return "customer", true
		case strings.Contains(col, "income_band"):
			return "income_band", true
		}
		for k := range dims {
			if strings.HasSuffix(col, "_"+k+"_sk") {
				return k, true
			}
		}
		return "", false
	}
	for _, fact := range []string{"store_sales", "catalog_sales", "web_sales", "store_returns", "catalog_returns",
		"web_returns", "inventory", "customer", "household_demographics", "promotion", "web_page"} {
		b := all(fact)
		for i, f := range b.Schema().Fields() {
			ref, ok := refOf(f.Name)
			if !ok || i == 0 && fact != "inventory" && !strings.Contains(fact, "sales") && !strings.Contains(fact, "returns") {
				continue // a dimension's own key
			}
			d := dims[ref]
			set := keySet(d[0], d[1])
			checked := 0
			for r, v := range colInts(t, b, f.Name) {
				if v == -1 {
					continue
				}
				if !set[v] {
					t.Fatalf("%s.%s row %d = %d: no such %s.%s", fact, f.Name, r, v, d[0], d[1])
				}
				checked++
			}
			if checked == 0 {
				t.Errorf("%s.%s: no non-NULL values", fact, f.Name)
			}
		}
	}
	// Returns point at a sale of the same item and order.
	for _, p := range [][4]string{
		{"store_sales", "ss_", "store_returns", "sr_"},
		{"catalog_sales", "cs_", "catalog_returns", "cr_"},
		{"web_sales", "ws_", "web_returns", "wr_"},
	} {
		order := "order_number"
		if p[1] == "ss_" {
			order = "ticket_number"
		}
		sales := all(p[0])
		pairs := map[[2]int64]bool{}
		so, si := colInts(t, sales, p[1]+order), colInts(t, sales, p[1]+"item_sk")
		for i := range so {
			pairs[[2]int64{so[i], si[i]}] = true
		}
		rets := all(p[2])
		ro, ri := colInts(t, rets, p[3]+order), colInts(t, rets, p[3]+"item_sk")
		for i := range ro {
			if !pairs[[2]int64{ro[i], ri[i]}] {
				t.Fatalf("%s row %d: (order %d, item %d) was never sold", p[2], i, ro[i], ri[i])
			}
			if i > 0 && ro[i] == ro[i-1] && ri[i] == ri[i-1] {
				t.Fatalf("%s row %d: the same line is returned twice", p[2], i)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	mem := checkedMem(t)
	tables, err := LoadSchemaDir(schemaDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, sf := range []float64{0, -1, 1e9} {
		if _, err := New(tables, Config{Scale: sf}); err == nil {
			t.Errorf("scale %v accepted", sf)
		}
	}
	g := newGen(t, 0.01, 1)
	if _, err := g.Chunk(mem, "nope", 0, 1); !errors.Is(err, ErrUnknownTable) {
		t.Errorf("unknown table: %v", err)
	}
	if _, err := g.Chunk(mem, "store", 10, 100); err == nil {
		t.Error("chunk past the end accepted")
	}
	if _, err := g.NewReader(context.Background(), mem, "store", 0, 1); err == nil {
		t.Error("batch size 0 accepted")
	}
	for _, stmt := range []string{
		"create table t(a integer, b blob);",
		"create table t(a integer, a integer);",
		"select 1;",
		"create table t(a decimal(3,7));",
	} {
		if _, err := ParseCreateTable(stmt); !errors.Is(err, ErrSchema) {
			t.Errorf("%q: err = %v, want ErrSchema", stmt, err)
		}
	}
	bad, err := ParseCreateTable("create table store(s_store_sk integer not null, s_mystery integer);")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New([]*Table{bad}, Config{Scale: 1}); err == nil || !strings.Contains(err.Error(), "s_mystery") {
		t.Errorf("unknown column: %v", err)
	}
}

// TestReaderCancel checks that a cancelled or early-closed reader releases
// everything it generated.
func TestReaderCancel(t *testing.T) {
	mem := checkedMem(t)
	g := newGen(t, 0.01, 5)
	ctx, cancel := context.WithCancel(context.Background())
	rd, err := g.NewReader(ctx, mem, "store_sales", 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rd.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	cancel()
	if _, err := rd.Next(ctx); err == nil {
		t.Error("Next after cancel returned no error")
	}
	rd.Close()
	rd.Close()
}

// TestDomains spot-checks values the queries filter on.
func TestDomains(t *testing.T) {
	mem := checkedMem(t)
	g := newGen(t, 0.01, 9)
	n, _ := g.RowCount("date_dim")
	b, err := g.Chunk(mem, "date_dim", 0, n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	// 2000-01-01 is a Saturday, month_seq 1200, Julian day 2451545.
	sk := colInts(t, b, "d_date_sk")
	i := int(2451545 - sk[0])
	if got := colInts(t, b, "d_month_seq")[i]; got != 1200 {
		t.Errorf("d_month_seq of 2000-01-01 = %d", got)
	}
	if got := colInts(t, b, "d_dow")[i]; got != 6 {
		t.Errorf("d_dow of 2000-01-01 = %d", got)
	}
	day := b.Column(b.Schema().FieldIndices("d_day_name")[0]).(*array.String).Value(i)
	date := b.Column(b.Schema().FieldIndices("d_date")[0]).(*array.Date32).Value(i).ToTime()
	if day != "Saturday" || date.Format("2006-01-02") != "2000-01-01" {
		t.Errorf("row %d: %s %s", i, day, date)
	}
	if len(sk) != 73049 || sk[len(sk)-1] != julian(2100, 1, 1) {
		t.Errorf("date_dim ends at %d", sk[len(sk)-1])
	}
}
