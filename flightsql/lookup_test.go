package flightsql_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

// lookupKeys is a batch of (k INT, s STRING) keys: k as int32, which the
// server converts to the table's BIGINT. nil parts are NULL.
func lookupKeys(mem memory.Allocator, keys [][2]any) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil))
	defer b.Release()
	for _, k := range keys {
		if k[0] == nil {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int32Builder).Append(k[0].(int32))
		}
		if k[1] == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(k[1].(string))
		}
	}
	return b.NewRecordBatch()
}

type snapshotMeta struct {
	Snapshot int64 `json:"snapshot"`
}

// TestLookupExchange: many batches in flight on one DoExchange while
// another connection upserts and deletes; each answer (hits, misses,
// duplicates, NULL keys) equals a SQL query of the same snapshot, and an
// exchange batch sent after a write returned sees it.
func TestLookupExchange(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	writer := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k BIGINT, s STRING, v BIGINT, PRIMARY KEY (k, s) NOT ENFORCED) WITH ('bucket' = '2')")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20)")
	cl, mem := ts.rawClient(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	writes := make(chan int, 1)
	wg.Add(1)
	go func() { // concurrent upserts and deletes
		defer wg.Done()
		defer close(writes)
		wr := rand.New(rand.NewPCG(seed, 1))
		for i := 0; i < 15 && ctx.Err() == nil; i++ {
			k, s := wr.IntN(20), []string{"a", "b"}[wr.IntN(2)]
			q := fmt.Sprintf("INSERT INTO t VALUES (%d, '%s', %d)", k, s, wr.IntN(1000))
			if wr.IntN(3) == 0 {
				q = fmt.Sprintf("DELETE FROM t WHERE k = %d AND s = '%s'", k, s)
			}
			if _, err := tryExec(writer, q); err != nil {
				t.Errorf("%s: %v", q, err)
				return
			}
		}
	}()

	stream, err := cl.Client.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := json.Marshal(flightsql.LookupCommand{Table: "t", Columns: []string{"v", "k", "s"}})
	const batches = 40
	sent := make(chan [][2]any, batches)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var w *flight.Writer
		for i := range batches {
			var ks [][2]any
			for range 1 + r.IntN(50) {
				switch r.IntN(8) {
				case 0:
					ks = append(ks, [2]any{nil, "a"})
				case 1:
					ks = append(ks, [2]any{int32(100 + r.IntN(10)), "a"}) // never written
				case 2:
					if len(ks) > 0 {
						ks = append(ks, ks[r.IntN(len(ks))])
						continue
					}
					fallthrough
				default:
					ks = append(ks, [2]any{int32(r.IntN(20)), []string{"a", "b"}[r.IntN(2)]})
				}
			}
			b := lookupKeys(mem, ks)
			if w == nil {
				w = flight.NewRecordWriter(stream, ipc.WithSchema(b.Schema()), ipc.WithAllocator(mem))
				w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
			}
			err := w.Write(b)
			b.Release()
			if err != nil {
				t.Errorf("write batch %d: %v", i, err)
				break
			}
			sent <- ks
		}
		close(sent)
		w.Close()
		stream.CloseSend()
	}()
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if got := rdr.Schema().String(); !strings.Contains(got, "found: type=bool") {
		t.Fatalf("schema %s has no found column", got)
	}
	n := 0
	for rdr.Next() {
		ks := <-sent
		out := rdr.RecordBatch()
		var meta snapshotMeta
		if err := json.Unmarshal(rdr.LatestAppMetadata(), &meta); err != nil || meta.Snapshot == 0 {
			t.Fatalf("app metadata %q: %v", rdr.LatestAppMetadata(), err)
		}
		want := map[string]string{}
		for _, row := range query(t, cnxn, fmt.Sprintf("SELECT v, k, s FROM t /*+ OPTIONS('scan.snapshot-id'='%d') */", meta.Snapshot)) {
			want[row[1]+"|"+row[2]] = strings.Join(row, "|") + "|true"
		}
		got := batchRows(out)
		if len(got) != len(ks) {
			t.Fatalf("batch %d: %d rows for %d keys", n, len(got), len(ks))
		}
		for i, k := range ks {
			w := "NULL|NULL|NULL|false"
			if k[0] != nil {
				if row, ok := want[fmt.Sprintf("%d|%s", k[0], k[1])]; ok {
					w = row
				}
			}
			if g := strings.Join(got[i], "|"); g != w {
				t.Fatalf("batch %d at snapshot %d, key %v: got %s, want %s", n, meta.Snapshot, k, g, w)
			}
		}
		n++
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if n != batches {
		t.Fatalf("%d answers for %d batches", n, batches)
	}
	wg.Wait()

	// Read your writes: a ticket after an acknowledged insert sees it.
	for i := range 5 {
		mustExec(t, cnxn, fmt.Sprintf("INSERT INTO t VALUES (%d, 'ryw', %d)", 500+i, i))
		rows := doGetLookup(t, cl.Client, mem, flightsql.LookupTicket{
			LookupCommand: flightsql.LookupCommand{Table: "default.t", Columns: []string{"v"}},
			Keys:          [][]any{{500 + i, "ryw"}, {nil, "ryw"}, {999, "x"}},
		})
		want := fmt.Sprintf("[[%d true] [NULL false] [NULL false]]", i)
		if fmt.Sprint(rows) != want {
			t.Fatalf("after insert %d: got %v, want %s", i, rows, want)
		}
	}
}

func doGetLookup(t *testing.T, cl flight.Client, mem memory.Allocator, tk flightsql.LookupTicket) [][]string {
	t.Helper()
	rows, err := tryDoGetLookup(context.Background(), cl, mem, tk)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func tryDoGetLookup(ctx context.Context, cl flight.Client, mem memory.Allocator, tk flightsql.LookupTicket) ([][]string, error) {
	body, _ := json.Marshal(tk)
	s, err := cl.DoGet(ctx, &flight.Ticket{Ticket: append([]byte(flightsql.LookupTicketPrefix), body...)})
	if err != nil {
		return nil, err
	}
	rdr, err := flight.NewRecordReader(s, ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return readRows(rdr)
}

// TestLookupBadInput: wrong key columns or types, unknown tables, tables
// without a primary key and bad options are refused with the problem named
// and the right code; the connection keeps working.
func TestLookupBadInput(t *testing.T) {
	ts := startServer(t, flightsql.Options{})
	cnxn := ts.connect(t, nil)
	mustExec(t, cnxn, "CREATE TABLE t (k BIGINT, s STRING, v BIGINT, PRIMARY KEY (k, s) NOT ENFORCED)")
	mustExec(t, cnxn, "CREATE TABLE log (k BIGINT, v BIGINT)")
	mustExec(t, cnxn, "INSERT INTO t VALUES (1, 'a', 10)")
	if _, err := tryExec(cnxn, "CREATE TABLE badopt (k BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('lookup.cache' = 'SOMETIMES')"); err == nil || !strings.Contains(err.Error(), "NONE, PARTIAL or FULL") {
		t.Errorf("a bad lookup.cache table option: %v", err)
	}
	mustExec(t, cnxn, "CREATE TABLE full_dim (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('lookup.cache' = 'FULL')")
	mustExec(t, cnxn, "INSERT INTO full_dim VALUES (7, 'seven')")
	cl, mem := ts.rawClient(t)
	rows, err := tryDoGetLookup(context.Background(), cl.Client, mem, flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "full_dim"}, Keys: [][]any{{7}, {8}}})
	if err != nil || fmt.Sprint(rows) != "[[7 seven true] [NULL NULL false]]" {
		t.Errorf("FULL table: %v, %v", rows, err)
	}
	for _, c := range []struct {
		tk   flightsql.LookupTicket
		code codes.Code
		want string
	}{
		{flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "nope"}, Keys: [][]any{{1, "a"}}}, codes.NotFound, "nope"},
		{flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "log"}, Keys: [][]any{{1}}}, codes.InvalidArgument, "has no primary key"},
		{flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "t"}, Keys: [][]any{{1}}}, codes.InvalidArgument, "key 1 has 1 values, the primary key (k, s) has 2"},
		{flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "t"}, Keys: [][]any{{"x", "a"}}}, codes.InvalidArgument, "column k: x cannot be int64"},
		{flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "t", Columns: []string{"zz"}}, Keys: [][]any{{1, "a"}}}, codes.InvalidArgument, `no column "zz"`},
		{flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "t", Options: map[string]string{"lookup.cache": "MAYBE"}}, Keys: [][]any{{1, "a"}}}, codes.InvalidArgument, "NONE, PARTIAL or FULL"},
	} {
		_, err := tryDoGetLookup(context.Background(), cl.Client, mem, c.tk)
		if st, _ := status.FromError(err); st.Code() != c.code || !strings.Contains(st.Message(), c.want) {
			t.Errorf("ticket %+v: got %v, want %s with %q", c.tk, err, c.code, c.want)
		}
	}
	// Exchanges: a wrong column count is refused before any batch, a key
	// type that cannot convert at the batch.
	exchange := func(cmd string, b arrow.RecordBatch) error {
		stream, err := cl.Client.DoExchange(context.Background())
		if err != nil {
			return err
		}
		w := flight.NewRecordWriter(stream, ipc.WithSchema(b.Schema()), ipc.WithAllocator(mem))
		w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(cmd)})
		werr := w.Write(b)
		w.Close()
		stream.CloseSend()
		rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(mem))
		if err != nil {
			return err
		}
		defer rdr.Release()
		for rdr.Next() {
		}
		if rdr.Err() != nil && !errors.Is(rdr.Err(), io.EOF) {
			return rdr.Err()
		}
		return werr
	}
	keys3 := makeRecord(mem, []string{"k", "s", "x"}, []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64})
	defer keys3.Release()
	floatKeys := makeRecord(mem, []string{"k", "s"}, []arrow.DataType{arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String})
	defer floatKeys.Release()
	good := lookupKeys(mem, [][2]any{{int32(1), "a"}})
	defer good.Release()
	for _, c := range []struct {
		cmd  string
		b    arrow.RecordBatch
		code codes.Code
		want string
	}{
		{`{"table": "t"}`, keys3, codes.InvalidArgument, "the keys have 3 columns, the primary key has 2 (k int64, s utf8)"},
		{`{"table": "t"}`, floatKeys, codes.InvalidArgument, "key column 1 (k) is float64, which cannot be a key of type int64"},
		{`{"table": "nope"}`, good, codes.NotFound, "nope"},
		{`{"table": "t", "bogus": 1}`, good, codes.InvalidArgument, "malformed lookup command"},
		{`{"table": "t"}x`, good, codes.InvalidArgument, "malformed lookup command: unexpected data after the JSON value"},
		{`{"table": "log"}`, good, codes.InvalidArgument, "has no primary key"},
	} {
		err := exchange(c.cmd, c.b)
		if st, _ := status.FromError(err); st.Code() != c.code || !strings.Contains(st.Message(), c.want) {
			t.Errorf("exchange %s: got %v, want %s with %q", c.cmd, err, c.code, c.want)
		}
	}
	if err := exchange(`{"table": "t"}`, good); err != nil {
		t.Fatalf("a good exchange after the bad ones: %v", err)
	}
	if got := query(t, cnxn, "SELECT v FROM t"); fmt.Sprint(got) != "[[10]]" {
		t.Fatalf("table changed: %v", got)
	}
}

// makeRecord is a one-row batch of zero values of the given types.
func makeRecord(mem memory.Allocator, names []string, types []arrow.DataType) arrow.RecordBatch {
	fields := make([]arrow.Field, len(names))
	for i := range names {
		fields[i] = arrow.Field{Name: names[i], Type: types[i], Nullable: true}
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for _, f := range b.Fields() {
		f.AppendEmptyValue()
	}
	return b.NewRecordBatch()
}

// TestLookupAuthorization: lookups need the read grant on the table's
// database, asked before the table is resolved (a refused caller does not
// learn whether it exists), through the ticket and the exchange.
func TestLookupAuthorization(t *testing.T) {
	ts := startServer(t, flightsql.Options{
		Users: map[string]string{"root": "r", "reader": "x", "other": "y"},
		Grants: []flightsql.Grant{
			{User: "root", Database: "*", Privilege: engine.Admin},
			{User: "reader", Database: "sales", Privilege: engine.Read},
			{User: "other", Database: "default", Privilege: engine.Read},
		},
	})
	cl := ts.clientFrom(t, "127.0.0.1")
	for _, q := range []string{"CREATE DATABASE sales", "CREATE TABLE sales.d (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)", "INSERT INTO sales.d VALUES (1, 'one')"} {
		if _, err := cl.ExecuteUpdate(basic("root", "r"), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tk := func(table string) flightsql.LookupTicket {
		return flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: table}, Keys: [][]any{{1}}}
	}
	rows, err := tryDoGetLookup(basic("reader", "x"), cl.Client, mem, tk("sales.d"))
	if err != nil || fmt.Sprint(rows) != "[[1 one true]]" {
		t.Fatalf("reader: %v, %v", rows, err)
	}
	for _, table := range []string{"sales.d", "sales.nope"} {
		_, err := tryDoGetLookup(basic("other", "y"), cl.Client, mem, tk(table))
		if st, _ := status.FromError(err); st.Code() != codes.PermissionDenied {
			t.Errorf("other on %s: %v, want PermissionDenied", table, err)
		}
	}
	stream, err := cl.Client.DoExchange(basic("other", "y"))
	if err != nil {
		t.Fatal(err)
	}
	keys := makeRecord(mem, []string{"k"}, []arrow.DataType{arrow.PrimitiveTypes.Int64})
	defer keys.Release()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(keys.Schema()), ipc.WithAllocator(mem))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"table": "sales.d"}`)})
	_ = w.Write(keys) // the server may refuse before reading it
	w.Close()
	stream.CloseSend()
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(mem))
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	if st, _ := status.FromError(err); st.Code() != codes.PermissionDenied {
		t.Errorf("other's exchange: %v, want PermissionDenied", err)
	}
}

// TestLookupCachesShareBudget: a client naming a new option set per
// request opens a new index each, and lookup.cache FULL with a huge
// lookup.partial-cache.max-rows loads the whole table into each one's
// cache. Thirty such DoGets took a server from 255 MB to 3.3 GB before
// the caches shared -lookup-memory; now the heap they leave behind stays
// near that budget, and every answer is still right (rows the caches
// could not keep are read from storage).
func TestLookupCachesShareBudget(t *testing.T) {
	const budget = 16 << 20
	ts := startServer(t, flightsql.Options{}, func(c *engine.Config) { c.LookupMemory = budget })
	cnxn := ts.connect(t, nil)
	const rows = 60000
	mustExec(t, cnxn, "CREATE TABLE dim (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, cnxn, fmt.Sprintf("INSERT INTO dim SELECT x, REPEAT('v', 200) || CAST(x AS STRING) FROM range(%d) AS r(x)", rows))
	cl, mem := ts.rawClient(t)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 20 {
		k := rng.IntN(rows)
		tk := flightsql.LookupTicket{
			LookupCommand: flightsql.LookupCommand{Table: "dim", Options: map[string]string{
				"lookup.cache": "FULL", "lookup.partial-cache.max-rows": fmt.Sprint(1_000_000_000 + i)}},
			Keys: [][]any{{k}, {rows + 1}},
		}
		got, err := tryDoGetLookup(context.Background(), cl.Client, mem, tk)
		want := fmt.Sprintf("[[%d %s%d true] [NULL NULL false]]", k, strings.Repeat("v", 200), k)
		if err != nil || fmt.Sprint(got) != want {
			t.Fatalf("lookup %d of key %d: %v, %v", i, k, got, err)
		}
	}
	grew := int64(heap()) - int64(before)
	t.Logf("heap grew %d MB over 20 full-table caches of a %d-row table, budget %d MB", grew>>20, rows, budget>>20)
	if grew > 3*budget {
		t.Fatalf("the lookup caches left the heap %d MB larger, over three times their %d MB budget", grew>>20, budget>>20)
	}
}

// TestLookupAnswerBounded: a lookup's answer is bounded by the query
// memory before its values are copied, and its column list as a select
// list is. One DoGet of 50,000 keys and 5,000 columns of a 100-byte
// string took a server to 24 GB and ignored its cancel and shutdown; now
// it is ResourceExhausted (53200) and the server answers the next lookup.
func TestLookupAnswerBounded(t *testing.T) {
	ts := startServer(t, flightsql.Options{}, func(c *engine.Config) { c.QueryMemory = 8 << 20 })
	cnxn := ts.connect(t, nil)
	const rows = 20000
	mustExec(t, cnxn, "CREATE TABLE dim (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
	mustExec(t, cnxn, fmt.Sprintf("INSERT INTO dim SELECT x, REPEAT('v', 100) FROM range(%d) AS r(x)", rows))
	cl, mem := ts.rawClient(t)
	keys := make([][]any, rows)
	for i := range keys {
		keys[i] = []any{i}
	}
	wide := make([]string, 10)
	for i := range wide {
		wide[i] = "v"
	}
	for _, c := range []struct {
		name string
		tk   flightsql.LookupTicket
		code codes.Code
		want string
	}{
		{"20,000 keys of 10 string columns (20 MB) under 8 MiB", flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "dim", Columns: wide}, Keys: keys}, codes.ResourceExhausted, "53200"},
		{"10,001 columns", flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "dim", Columns: make([]string, 10001)}, Keys: [][]any{{1}}}, codes.InvalidArgument, "54011"},
	} {
		_, err := tryDoGetLookup(context.Background(), cl.Client, mem, c.tk)
		if st, _ := status.FromError(err); st.Code() != c.code || !strings.Contains(st.Message(), c.want) {
			t.Errorf("%s: got %v, want %s with %q", c.name, err, c.code, c.want)
		}
	}
	got, err := tryDoGetLookup(context.Background(), cl.Client, mem, flightsql.LookupTicket{LookupCommand: flightsql.LookupCommand{Table: "dim", Columns: wide[:2]}, Keys: keys[:3]})
	if err != nil || len(got) != 3 {
		t.Fatalf("a small lookup after: %v, %v", got, err)
	}
}
