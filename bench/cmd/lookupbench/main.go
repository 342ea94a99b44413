// Command lookupbench measures flightd's batched point lookups (DoExchange
// of key batches, package lookup) next to Redis holding the same rows, read
// with pipelined MGETs of the same keys from Go, in one run: keys/s per
// batch size for hits, misses and half of each, and the latency of a
// single-key lookup. Redis is skipped, with the reason printed, when
// redis-server is not installed. With -prepared (the default), a third
// system, flightd-sql, runs the same keys through a Flight SQL prepared
// statement `SELECT ... WHERE id = ?`, each batch of keys bound as one
// multi-row parameter batch (one batched lookup).
//
//	go run ./cmd/lookupbench -rows 1000000 -out results/lookup.json
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/bench/doget"
	"github.com/flightd/flightd/engine"
)

// depth is the batches each client keeps in flight (flightd's exchange
// looks up 8 at once; Redis gets the same pipeline).
const depth = 8

type result struct {
	System    string  `json:"system"`
	Clients   int     `json:"clients"`
	Batch     int     `json:"batch"`
	Mix       string  `json:"mix"`
	KeysPerS  float64 `json:"keys_per_s"`
	HitsRatio float64 `json:"hit_ratio"`
}

type latency struct {
	System string  `json:"system"`
	P50us  float64 `json:"p50_us"`
	P99us  float64 `json:"p99_us"`
}

func main() {
	rows := flag.Int("rows", 1_000_000, "rows in the table")
	dur := flag.Duration("duration", 2*time.Second, "time per measurement")
	points := flag.Int("points", 2000, "single-key lookups for the latency percentiles")
	clientList := flag.String("clients", "1,16", "concurrent clients to measure with, comma-separated")
	batchList := flag.String("batches", "1,100,1000,10000", "keys per batch to measure, comma-separated")
	cacheOpt := flag.String("cache", "PARTIAL", "lookup.cache of the flightd table: NONE, PARTIAL or FULL")
	cacheBytes := flag.Int64("cache-bytes", 0, "lookup.partial-cache.max-bytes of the flightd table (0: the default, 64 MiB)")
	staleness := flag.Duration("max-staleness", 0, "lookup.max-staleness of the flightd table (0: every lookup asks storage for the latest snapshot)")
	out := flag.String("out", "", "write the results as JSON to this file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	prepared := flag.Bool("prepared", true, "also measure a Flight SQL prepared point query (system flightd-sql)")
	flag.Parse()
	stopProfile, err := doget.ProfileCPU(*cpuprofile)
	if err != nil {
		log.Fatal(err)
	}
	defer stopProfile()
	ctx := context.Background()

	dir, err := os.MkdirTemp("", "lookupbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mem := memory.NewGoAllocator()
	eng, addr, stop, err := doget.StartFlightd(ctx, engine.Config{Mem: mem, Root: dir, CacheBytes: 1 << 30})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	if err := load(ctx, eng, *rows, *cacheOpt, *cacheBytes, *staleness); err != nil {
		log.Fatal(err)
	}
	fc, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer fc.Close()
	systems := []system{&flightdSystem{cl: fc, mem: mem}}
	if *prepared {
		sc, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			log.Fatal(err)
		}
		defer sc.Close()
		systems = append(systems, &preparedSystem{cl: sc, mem: mem})
	}
	rs, why := startRedis(ctx, dir, *rows)
	if rs != nil {
		defer rs.stop()
		systems = append(systems, rs)
	} else {
		fmt.Printf("Redis skipped: %s\n", why)
	}

	var results []result
	var lats []latency
	fmt.Printf("%d rows, lookup.cache %s (max-bytes %d), max-staleness %s, %s per measurement, %d batches in flight\n", *rows, *cacheOpt, *cacheBytes, *staleness, *dur, depth)
	fmt.Printf("%-8s %7s %7s %6s %14s\n", "system", "clients", "batch", "keys", "keys/s")
	batchSizes, err := positiveList(*batchList)
	if err != nil {
		log.Fatalf("-batches: %v", err)
	}
	clientCounts, err := positiveList(*clientList)
	if err != nil {
		log.Fatalf("-clients: %v", err)
	}
	for _, clients := range clientCounts {
		for _, batch := range batchSizes {
			for _, mix := range []string{"hit", "miss", "50/50"} {
				for _, s := range systems {
					r, err := measure(ctx, s, *rows, batch, mix, *dur, clients)
					if err != nil {
						log.Fatalf("%s batch %d %s: %v", s.name(), batch, mix, err)
					}
					results = append(results, r)
					fmt.Printf("%-8s %7d %7d %6s %14.0f\n", r.System, clients, batch, mix, r.KeysPerS)
				}
			}
		}
	}
	for _, s := range systems {
		l, err := singleKey(ctx, s, *rows, *points)
		if err != nil {
			log.Fatalf("%s single key: %v", s.name(), err)
		}
		lats = append(lats, l)
		fmt.Printf("%-8s single-key lookup p50 %.0f us, p99 %.0f us\n", l.System, l.P50us, l.P99us)
	}
	if *out != "" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			log.Fatal(err)
		}
		js, _ := json.MarshalIndent(map[string]any{"rows": *rows, "cache": *cacheOpt, "cache_bytes": *cacheBytes, "max_staleness": staleness.String(), "throughput": results, "single_key": lats}, "", "  ")
		if err := os.WriteFile(*out, js, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// positiveList parses a comma-separated list of positive numbers.
func positiveList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// load creates table lk (id BIGINT key, name STRING, v BIGINT) with rows
// 0..n-1 in one bulk ingest.
func load(ctx context.Context, eng *engine.Engine, n int, cacheOpt string, cacheBytes int64, staleness time.Duration) error {
	sess := eng.NewSession()
	with := fmt.Sprintf("'bucket' = '4', 'lookup.cache' = '%s', 'lookup.max-staleness' = '%s'", cacheOpt, staleness)
	if cacheBytes > 0 {
		with += fmt.Sprintf(", 'lookup.partial-cache.max-bytes' = '%d'", cacheBytes)
	}
	st, err := sess.Prepare(ctx, "CREATE TABLE lk (id BIGINT, name STRING, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ("+with+")", nil)
	if err != nil {
		return err
	}
	if _, err := st.Exec(ctx, nil); err != nil {
		return err
	}
	batches := rowBatches(n)
	rdr, err := array.NewRecordReader(batches[0].Schema(), batches)
	if err != nil {
		return err
	}
	defer rdr.Release()
	_, err = sess.Ingest(ctx, engine.IngestRequest{Table: engine.Ident{Table: "lk"}, Mode: engine.IngestAppend}, rdr)
	return err
}

func rowBatches(n int) []arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	var out []arrow.RecordBatch
	for start := 0; start < n; start += 1 << 16 {
		b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
		for i := start; i < min(n, start+1<<16); i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append("name-" + strconv.Itoa(i))
			b.Field(2).(*array.Int64Builder).Append(int64(i) * 3)
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

// keys returns batch keys: hits are in [0, rows), misses above.
func keys(r *rand.Rand, rows, batch int, mix string) []int64 {
	ks := make([]int64, batch)
	for i := range ks {
		hit := mix == "hit" || (mix == "50/50" && r.IntN(2) == 0)
		if hit {
			ks[i] = int64(r.IntN(rows))
		} else {
			ks[i] = int64(rows + r.IntN(rows))
		}
	}
	return ks
}

type system interface {
	name() string
	// run sends batches from next with depth in flight until next returns
	// nil; it returns the keys answered and found.
	run(ctx context.Context, next func() []int64) (keys, found int64, err error)
	// session opens a connection for single-key lookups, one at a time.
	session(ctx context.Context) (lookup func(key int64) (bool, error), done func(), err error)
}

// measure runs clients concurrent clients, each with its own keys and
// depth batches in flight, for d after a warm-up.
func measure(ctx context.Context, s system, rows, batch int, mix string, d time.Duration, clients int) (result, error) {
	var (
		mu       sync.Mutex
		n, found int64
		firstErr error
	)
	rs := make([]*rand.Rand, clients)
	for c := range rs {
		rs[c] = rand.New(rand.NewPCG(uint64(batch), uint64(c)))
	}
	// each runs every client at once, each sending batches until next
	// says stop.
	each := func(stop func(sent int) bool) {
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sent := 0
				cn, cf, err := s.run(ctx, func() []int64 {
					if stop(sent) {
						return nil
					}
					sent++
					return keys(rs[c], rows, batch, mix)
				})
				mu.Lock()
				defer mu.Unlock()
				n, found, firstErr = n+cn, found+cf, cmp.Or(firstErr, err)
			}()
		}
		wg.Wait()
	}
	each(func(sent int) bool { return sent >= 3*depth }) // warm up (caches)
	n, found = 0, 0
	start := time.Now()
	each(func(int) bool { return time.Since(start) > d })
	el := time.Since(start)
	return result{System: s.name(), Clients: clients, Batch: batch, Mix: mix, KeysPerS: float64(n) / el.Seconds(), HitsRatio: float64(found) / float64(max(n, 1))}, firstErr
}

func singleKey(ctx context.Context, s system, rows, points int) (latency, error) {
	r := rand.New(rand.NewPCG(1, 1))
	lookup, done, err := s.session(ctx)
	if err != nil {
		return latency{}, err
	}
	defer done()
	var lat []time.Duration
	for range points {
		k := keys(r, rows, 1, "hit")
		start := time.Now()
		found, err := lookup(k[0])
		if err != nil {
			return latency{}, err
		}
		if !found {
			return latency{}, fmt.Errorf("key %d not found", k[0])
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return latency{System: s.name(), P50us: us(lat[len(lat)/2]), P99us: us(lat[len(lat)*99/100])}, nil
}

// flightdSystem looks up over one DoExchange per run; all runs share one
// connection (gRPC streams).
type flightdSystem struct {
	mem memory.Allocator
	cl  flight.Client
}

func (f *flightdSystem) name() string { return "flightd" }

var keySchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

func (f *flightdSystem) run(ctx context.Context, next func() []int64) (int64, int64, error) {
	stream, err := f.cl.DoExchange(ctx)
	if err != nil {
		return 0, 0, err
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(keySchema))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"table": "lk"}`)})
	inflight := make(chan struct{}, depth)
	sendErr := make(chan error, 1)
	go func() {
		defer close(inflight)
		b := array.NewInt64Builder(f.mem)
		defer b.Release()
		for ks := next(); ks != nil; ks = next() {
			inflight <- struct{}{}
			b.AppendValues(ks, nil)
			col := b.NewArray()
			rec := array.NewRecordBatch(keySchema, []arrow.Array{col}, int64(len(ks)))
			err := w.Write(rec)
			rec.Release()
			col.Release()
			if err != nil {
				sendErr <- err
				return
			}
		}
		w.Close()
		sendErr <- stream.CloseSend()
	}()
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return 0, 0, err
	}
	defer rdr.Release()
	var n, found int64
	for rdr.Next() {
		b := rdr.RecordBatch()
		n += b.NumRows()
		fc := b.Column(int(b.NumCols()) - 1).(*array.Boolean)
		for i := range fc.Len() {
			if fc.Value(i) {
				found++
			}
		}
		<-inflight
	}
	for range inflight {
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return n, found, err
	}
	return n, found, <-sendErr
}

// session keeps one exchange open and sends one key at a time.
func (f *flightdSystem) session(ctx context.Context) (func(int64) (bool, error), func(), error) {
	stream, err := f.cl.DoExchange(ctx)
	if err != nil {
		return nil, nil, err
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(keySchema))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"table": "lk"}`)})
	var rdr *flight.Reader
	b := array.NewInt64Builder(f.mem)
	lookup := func(key int64) (bool, error) {
		b.Append(key)
		col := b.NewArray()
		rec := array.NewRecordBatch(keySchema, []arrow.Array{col}, 1)
		err := w.Write(rec)
		rec.Release()
		col.Release()
		if err != nil {
			return false, err
		}
		if rdr == nil {
			if rdr, err = flight.NewRecordReader(stream); err != nil {
				return false, err
			}
		}
		if !rdr.Next() {
			return false, fmt.Errorf("no answer: %v", rdr.Err())
		}
		out := rdr.RecordBatch()
		return out.Column(int(out.NumCols()) - 1).(*array.Boolean).Value(0), nil
	}
	done := func() {
		w.Close()
		_ = stream.CloseSend()
		if rdr != nil {
			for rdr.Next() {
			}
			rdr.Release()
		}
		b.Release()
	}
	return lookup, done, nil
}

func (r *redisSystem) session(ctx context.Context) (func(int64) (bool, error), func(), error) {
	return func(key int64) (bool, error) {
		err := r.c.Get(ctx, "lk:"+strconv.FormatInt(key, 10)).Err()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return err == nil, err
	}, func() {}, nil
}

// redisSystem is a redis-server on loopback holding "lk:<id>" ->
// "name|v" for every row.
type redisSystem struct {
	cmd *exec.Cmd
	c   *redis.Client
}

func (r *redisSystem) name() string { return "redis" }

func (r *redisSystem) stop() {
	r.c.Close()
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}

func startRedis(ctx context.Context, dir string, rows int) (*redisSystem, string) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "redis-server is not installed (apt-get install redis-server)"
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err.Error()
	}
	port := lis.Addr().(*net.TCPAddr).Port
	lis.Close()
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return nil, err.Error()
	}
	// No read deadline: 16 clients' pipelines of 8 MGETs of 10,000 keys
	// wait behind each other on the one Redis thread for longer than
	// go-redis's default 3 s on a loaded machine.
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), PoolSize: 32, ReadTimeout: -1, WriteTimeout: -1})
	rs := &redisSystem{cmd: cmd, c: c}
	for start := time.Now(); c.Ping(ctx).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			rs.stop()
			return nil, "redis-server did not answer within 10s"
		}
	}
	for start := 0; start < rows; start += 10000 {
		pairs := make([]any, 0, 20000)
		for i := start; i < min(rows, start+10000); i++ {
			pairs = append(pairs, "lk:"+strconv.Itoa(i), "name-"+strconv.Itoa(i)+"|"+strconv.Itoa(i*3))
		}
		if err := c.MSet(ctx, pairs...).Err(); err != nil {
			rs.stop()
			return nil, "loading Redis: " + err.Error()
		}
	}
	return rs, ""
}

// run sends MGETs, depth of them per pipelined round trip.
func (r *redisSystem) run(ctx context.Context, next func() []int64) (int64, int64, error) {
	var n, found int64
	done := false
	for !done {
		p := r.c.Pipeline()
		var cmds []*redis.SliceCmd
		for range depth {
			ks := next()
			if ks == nil {
				done = true
				break
			}
			args := make([]string, len(ks))
			for i, k := range ks {
				args[i] = "lk:" + strconv.FormatInt(k, 10)
			}
			cmds = append(cmds, p.MGet(ctx, args...))
		}
		if len(cmds) == 0 {
			break
		}
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return n, found, err
		}
		for _, c := range cmds {
			for _, v := range c.Val() {
				n++
				if v != nil {
					found++
				}
			}
		}
	}
	return n, found, nil
}

// preparedSystem runs `SELECT name, v FROM lk WHERE id = ?` prepared once
// per client, each batch of keys bound as one parameter batch and
// executed (GetFlightInfo, then DoGet), one batch at a time.
type preparedSystem struct {
	mem memory.Allocator
	cl  *flightsql.Client
}

func (p *preparedSystem) name() string { return "flightd-sql" }

const pointQuery = "SELECT name, v FROM lk WHERE id = ?"

func (p *preparedSystem) run(ctx context.Context, next func() []int64) (int64, int64, error) {
	lookup, done, err := p.open(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer done()
	var n, found int64
	for ks := next(); ks != nil; ks = next() {
		rows, err := lookup(ks)
		if err != nil {
			return n, found, err
		}
		n, found = n+int64(len(ks)), found+rows
	}
	return n, found, nil
}

// open prepares the point query; lookup binds keys and returns the rows
// found.
func (p *preparedSystem) open(ctx context.Context) (lookup func([]int64) (int64, error), done func(), err error) {
	st, err := p.cl.Prepare(ctx, pointQuery)
	if err != nil {
		return nil, nil, err
	}
	b := array.NewInt64Builder(p.mem)
	lookup = func(ks []int64) (int64, error) {
		b.AppendValues(ks, nil)
		col := b.NewArray()
		rec := array.NewRecordBatch(keySchema, []arrow.Array{col}, int64(len(ks)))
		col.Release()
		st.SetParameters(rec)
		rec.Release()
		info, err := st.Execute(ctx)
		if err != nil {
			return 0, err
		}
		r, err := p.cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return 0, err
		}
		defer r.Release()
		var rows int64
		for r.Next() {
			rows += r.RecordBatch().NumRows()
		}
		if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
			return rows, err
		}
		return rows, nil
	}
	return lookup, func() {
		_ = st.Close(ctx)
		b.Release()
	}, nil
}

func (p *preparedSystem) session(ctx context.Context) (func(int64) (bool, error), func(), error) {
	lookup, done, err := p.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	return func(key int64) (bool, error) {
		rows, err := lookup([]int64{key})
		return rows == 1, err
	}, done, nil
}
